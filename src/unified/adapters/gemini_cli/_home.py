"""The child's environment, the settings override, and content-addressed files handed to the CLI.

The CLI's session cleanup deletes a conversation when `--resume` left an empty duplicate file of
it (docs/backends/gemini-cli.md, Quirks 7 and 8). We never touch the user's own settings.json:
every child gets `GEMINI_CLI_SYSTEM_SETTINGS_PATH` pointing at a file of ours that is the machine's
system settings (if any) plus `general.sessionRetention.enabled = false`. Caveat (0.61): the CLI skips a system
settings file with a "Security Warning" unless root owns it and every parent directory and none is
writable by group or others, so this helps root only; `ResumeGuard` (sessions.py), which removes
the duplicate right after the load, is the protection that always holds.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import platformdirs

from unified._internal.child_env import allowlisted_environment

SYSTEM_SETTINGS_ENV = "GEMINI_CLI_SYSTEM_SETTINGS_PATH"
_DEFAULT_SYSTEM_SETTINGS = Path("/etc/gemini-cli/settings.json")
_OVERRIDES: dict[str, Any] = {"general": {"sessionRetention": {"enabled": False}, "enableAutoUpdate": False}}

SECRET_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS")
AUTH_ENV = (
    *SECRET_ENV,
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_GENAI_USE_GCA",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL",
    "CODE_ASSIST_ENDPOINT",
)
"""Variables that choose and carry credentials: passed to the child untouched, never logged."""

CLI_ENV_ALLOWLIST = (
    *AUTH_ENV,
    "GEMINI_*",
    "GOOGLE_GENAI_*",
    "GOOGLE_CLOUD_*",
    "CLOUDSDK_CONFIG",
    "NODE_OPTIONS",
)
"""What the `gemini` child takes from the host besides the basics (`child_env.BASE_ALLOWLIST`):
its credentials and settings (`GEMINI_CLI_HOME`, `GEMINI_SYSTEM_MD`, ...), gcloud's configuration
for application default credentials, and node's options."""


def gemini_home(env: Mapping[str, str]) -> Path:
    """`<GEMINI_CLI_HOME or HOME>/.gemini`, as the CLI computes it."""
    base = env.get("GEMINI_CLI_HOME") or env.get("HOME") or str(Path.home())
    return Path(base) / ".gemini"


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = dict(value) if isinstance(value, Mapping) else value
    return merged


def cache_file(stem: str, suffix: str, text: str) -> Path:
    """A file in our cache named by a digest of its content, written once (atomically)."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    directory = Path(platformdirs.user_cache_dir("unified")) / "gemini-cli"
    target = directory / f"{stem}-{digest}{suffix}"
    if not target.exists():
        directory.mkdir(parents=True, exist_ok=True)
        temporary = target.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(text)
        temporary.replace(target)
    return target


def system_settings_file(env: Mapping[str, str]) -> Path:
    """Write (once per content) the machine's system settings plus ours and return its path."""
    source = Path(env.get(SYSTEM_SETTINGS_ENV) or _DEFAULT_SYSTEM_SETTINGS)
    base: dict[str, Any] = {}
    if source.is_file():
        try:
            loaded = json.loads(source.read_text())
        except (OSError, ValueError):
            loaded = {}
        base = loaded if isinstance(loaded, dict) else {}
    return cache_file("system-settings", ".json", json.dumps(_merge(base, _OVERRIDES), indent=2, sort_keys=True))


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's allowlisted environment (`CLI_ENV_ALLOWLIST`, its credentials included) plus
    `extra`, with our settings override, in one node.

    Left alone, `gemini` starts a second node process of itself only to raise its heap limit to half
    the machine's memory, which doubles every cold start (measured 3.2-4.2 s against 1.4-2.2 s). We
    give node that heap limit ourselves and tell the CLI not to relaunch; a caller who sets
    `GEMINI_CLI_NO_RELAUNCH` or a heap limit of their own keeps theirs.
    """
    env = allowlisted_environment(CLI_ENV_ALLOWLIST, extra)
    env[SYSTEM_SETTINGS_ENV] = str(system_settings_file(env))
    if "GEMINI_CLI_NO_RELAUNCH" not in env:
        env["GEMINI_CLI_NO_RELAUNCH"] = "true"
        node_options = env.get("NODE_OPTIONS", "")
        if "--max-old-space-size" not in node_options:
            env["NODE_OPTIONS"] = f"{node_options} --max-old-space-size={_half_memory_mb()}".strip()
    return env


def _half_memory_mb() -> int:
    """Half the machine's memory in MiB: the heap limit the CLI's own relaunch would ask for."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (2 * 1024 * 1024)


def auth_fingerprint(env: Mapping[str, str]) -> str:
    """A digest of the auth variables: pool key material that never holds a secret in clear."""
    material = "\0".join(f"{name}={env.get(name, '')}" for name in AUTH_ENV)
    return hashlib.sha256(material.encode()).hexdigest()[:16]
