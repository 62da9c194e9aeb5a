"""The environment of an agent CLI `unified` starts (the `gemini` binary today; Claude Code and
Codex next): an allowlist, never the host's whole environment.

A CLI child runs tools for a model, and a prompt-injected model's first move is `env`: everything
the child inherits is one command away from the model, its events, its session files and any
recorded cassette. So a child gets only the basics every program needs (`BASE_ALLOWLIST`: where
programs and home are, locale, terminal, temp dirs, proxies and CA bundles to reach the network),
the variables its backend names (its own credentials and settings, passed as the CLI needs them),
and what the caller passes on purpose (`extra`, as given). Nothing of `unified`'s own
(`UNIFIED_SESSION_STORE_URL` and its password, `UNIFIED_*`) and no unrelated secret is passed
unless a backend's allowlist names it.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence

BASE_ALLOWLIST: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    # Windows: what a process cannot start without
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
)
"""What every agent CLI child gets from the host (`*` and `?` wildcards)."""


def allowlisted_environment(
    allowlist: Sequence[str], extra: Mapping[str, str] | None = None, *, host: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The host's variables named by `BASE_ALLOWLIST` or by the backend's `allowlist` (names with
    `*`/`?` wildcards), then `extra` (the caller's own, set as given). `host` defaults to the
    process environment."""
    patterns = (*BASE_ALLOWLIST, *allowlist)
    source = os.environ if host is None else host
    env = {name: value for name, value in source.items() if any(fnmatch.fnmatchcase(name, p) for p in patterns)}
    env.update(extra or {})
    return env
