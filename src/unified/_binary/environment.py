"""The environment an agent binary runs in, and the files handed to it by content.

A CLI child runs tools for a model, and a prompt-injected model's first move is `env`: whatever
the child inherits is one command away from the model, its events, its session files and any
recorded cassette. So a child gets an allowlist, never the host's whole environment: nothing of
unified's own (`UNIFIED_SESSION_STORE_URL` and its password) and no unrelated secret unless its
backend's policy names it.

`child_env` builds a child's variables from three sources, in this order:

1. the parent's (`os.environ`), filtered by the backend's `EnvPolicy`: the basics every program
   needs (PATH, HOME, locale, temp dir, terminal) plus the variables the binary itself reads
   (its credentials and settings). `allow=None` passes every variable: the policy of a backend
   that has no allowlist yet;
2. `extra`: what the caller gave for the child (a backend's `env` option), always passed;
3. `home`: an isolated home, every variable of `home_vars` pointing at it (a throwaway home for a
   version probe; a per-run home for a binary whose state must not touch the user's).

Then settings of ours, whatever the sources said: git uses a bare repository only when told to, and runs no
command a repository's config names as its filesystem monitor or pager (`GIT_SAFETY`), as unified's own shell
has it (`tools._shell.SHELL_SETTINGS`), nor, given the run's `cwd`, the diff, filter and signature commands its
repository's config names (`_git_drivers`).

The backend adds what only it knows (a settings override, a flag in the environment) afterwards.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from unified import _git_drivers
from unified._environ import PerEnvironment, absolute_search_path
from unified._files import write_atomically
from unified.errors import BackendUnavailable, ConfigurationError

__all__ = [
    "BASIC_ENV",
    "GIT_SAFETY",
    "EnvPolicy",
    "FileSignature",
    "cache_file",
    "cache_folder",
    "child_env",
    "file_signature",
    "home_refusal",
    "private_cache_folder",
]

BASIC_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TERM",
        "COLORTERM",
        "NO_COLOR",
        "TMPDIR",
        "TEMP",
        "TMP",
        "TZ",
        "LANG",
        "LANGUAGE",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
        "XDG_STATE_HOME",
        "XDG_RUNTIME_DIR",
        # to reach the network the way this machine does
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
    }
)
"""What any program may need, passed under every policy (with every `LC_*`): where programs and
home are, locale, terminal, temp and XDG dirs, proxies and CA bundles."""
BASIC_PREFIXES = ("LC_",)


@dataclass(frozen=True, slots=True)
class EnvPolicy:
    """Which of the parent's variables a backend's child sees, besides the basics."""

    allow: frozenset[str] | None = None
    """Names the binary reads (its credentials, its settings); None: every variable (only for a
    throwaway probe such as `--version`, never for a run)."""
    allow_prefixes: tuple[str, ...] = ()
    """Prefixes of names it reads (`GEMINI_CLI_`, ...)."""

    def admits(self, name: str) -> bool:
        if self.allow is None or name in BASIC_ENV or name in self.allow:
            return True
        return name.startswith((*BASIC_PREFIXES, *self.allow_prefixes))


GIT_SAFETY = ("GIT_CONFIG_PARAMETERS", "'safe.bareRepository'='explicit' 'core.fsmonitor'='false' 'core.pager'='cat'")
"""A directory holding `HEAD`, `config`, `objects/` and `refs/` is a bare repository to a git command run
inside it, and git obeys its config: `core.fsmonitor = <command>` runs at the next `git grep` or `git status`
there. None of those names is a protected path, so a model that may edit files could write one and have a
command the policy allows (Codex's read-only `git grep`, a user's `git status` rule) run anything. With
`safe.bareRepository=explicit` git uses such a directory only when named (`--git-dir`, which is asked). Given
as command-line configuration (`GIT_CONFIG_PARAMETERS`: the only kind git honours for this setting besides
the user's own files, and a name no CLI's secret filter drops, as Codex's `*KEY*` drops `GIT_CONFIG_KEY_0`).

The workspace's own `.git/config` may be hostile too (a repository unpacked with its `.git`): its
`core.fsmonitor` runs at a `git grep`, `git status` or `git diff` (Codex's read-only `git grep`, unasked in every
mode, plan too; a CLI's own `git status` at its start), and its `core.pager` when git writes to a terminal (Codex's
`exec_command` with `tty`). Command-line configuration outranks the repository's, so both are set here: no
filesystem monitor (only slower on a large repository) and `cat` as the pager."""


def child_env(
    policy: EnvPolicy,
    *,
    extra: Mapping[str, str] | None = None,
    parent: Mapping[str, str] | None = None,
    home: Path | None = None,
    home_vars: Iterable[str] = ("HOME",),
    cwd: Path | None = None,
) -> dict[str, str]:
    """The child's variables: the `parent`'s (default `os.environ`) that `policy` admits, then `extra`,
    then every one of `home_vars` set to `home` when it is given; its `PATH` without relative entries (the commands
    of a model it runs inherit it: `absolute_search_path`). With `cwd` (the run's directory), git also runs none of
    the diff or filter commands the config of the repository enclosing it names (`_git_drivers.overrides`, read
    now, at the run's start)."""
    if parent is None:
        env = dict(_admitted(policy))
    else:
        env = {name: value for name, value in parent.items() if policy.admits(name)}
    env.update(extra or {})
    if home is not None:
        env.update(dict.fromkeys(home_vars, str(home)))
    if "PATH" in env:
        env["PATH"] = absolute_search_path(env["PATH"])
    name, setting = GIT_SAFETY
    if cwd is not None and (drivers := _git_drivers.overrides(cwd)):
        setting = f"{setting} {_git_drivers.parameters(drivers)}"
    given = env.get(name, "").strip()
    env[name] = f"{given} {setting}" if given and setting not in given else given or setting
    return env


_ADMITTED: dict[EnvPolicy, PerEnvironment[dict[str, str]]] = {}
"""Per policy, the variables of `os.environ` it admits, worked out again only when the environment
changed: every run of a backend starts from them, and decoding and testing every variable costs tens
of microseconds."""


def _admitted(policy: EnvPolicy) -> dict[str, str]:
    """The variables of `os.environ` that `policy` admits (the caller copies it before changing it)."""
    admitted = _ADMITTED.get(policy)
    if admitted is None:
        admitted = _ADMITTED[policy] = PerEnvironment(
            lambda: {name: value for name, value in os.environ.items() if policy.admits(name)}
        )
    return admitted()


def cache_file(folder: str, stem: str, suffix: str, text: str) -> Path:
    """A file in unified's cache folder `folder`, named by a digest of its content, written once
    (atomically): what a binary reads per process (a policy file, a settings override)."""
    target = _cache_target(_cache_root(), folder, stem, suffix, text)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, text)
    return target


def cache_folder(folder: str) -> Path:
    """unified's cache folder `folder` (not made here: for a binary that makes and fills its own)."""
    return _cache_root() / folder


def private_cache_folder(folder: str) -> Path:
    """unified's cache folder `folder`, made if missing and readable by its owner alone (0700): where a binary puts
    what only its user may read (its temp files: `TMPDIR`). Made each time it is asked for, as a binary that finds
    it gone (a cache cleaner) fails where it would write. A link in its place is `backend_unavailable` naming it:
    it was followed, its target made 0700 and written to (bad input round 26)."""
    path = cache_folder(folder)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    found = path.lstat()
    if stat.S_ISLNK(found.st_mode):  # its mode was made the target's, 0700, and the binary wrote through it
        raise BackendUnavailable(
            f"unified's cache folder {path} is a symbolic link (to {os.readlink(path)}): what a binary keeps there "
            "(the Gemini CLI's error reports hold whole requests) would go where it points, readable as that folder is",
            hint=f"remove the link (rm {path}); unified makes the folder again, readable by you alone",
            details={"path": str(path)},
        )
    if stat.S_IMODE(found.st_mode) != 0o700:
        path.chmod(0o700)
    return path


_cache_root = PerEnvironment(lambda: Path(platformdirs.user_cache_dir("unified")))
"""unified's cache folder: platformdirs reads the environment and the home folder each time (~20 us),
before every run."""


@functools.lru_cache(maxsize=16)
def _cache_target(root: Path, folder: str, stem: str, suffix: str, text: str) -> Path:
    """Where `text` is kept (its digest names it). Few texts recur (a policy, the settings); a system prompt
    may be large and differ from run to run: the bound keeps what the cache holds small."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    return root / folder / f"{stem}-{digest}{suffix}"


FileSignature = tuple[int, int, int, int]
"""(mode, inode, size, modification time in ns) of a file (`file_signature`)."""


def file_signature(path: Path) -> FileSignature | None:
    """`path` as it is now, in one `stat` (None when it is not there): equal to an earlier signature as
    long as the file was not written, replaced or removed since. What a file read once per process (a
    settings file, a binary's `#!` line, a home's config) is cached on."""
    try:
        found = path.stat()
    except OSError:
        return None
    return signature(found)


def signature(found: os.stat_result) -> FileSignature:
    """The signature of a file whose status is at hand (`write_atomically` returns the one it wrote)."""
    return found.st_mode, found.st_ino, found.st_size, found.st_mtime_ns


def home_refusal(home: Path, planted: Mapping[str, str], backend: str, hint: str) -> ConfigurationError | None:
    """The refusal of a binary's isolated home holding one of `planted` (a path relative to the home: what it is to the
    binary), of any kind (a folder, a file, a link), else None. Each is a file the binary reads as its user's own, which
    decides what runs unasked or what the model is told in every run, and which unified never writes: one there was put
    by something else, such as a command a model ran in an earlier run (Codex's `rules/`, round 38; Claude Code's
    `settings.json` hooks, round 41)."""
    for name, what in planted.items():
        path = home / name
        try:
            os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:  # it cannot be told whether the binary would read it
            return ConfigurationError(f"cannot check {path} in the {backend} backend's home: {exc}", hint=hint)
        said = f"{path} is in the {backend} backend's home: {what}; unified never writes it"
        return ConfigurationError(said, hint=hint)
    return None
