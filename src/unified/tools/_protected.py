"""Protected paths and credential files, from the data in `protected_paths.toml` (read once).

Protected paths are files whose content changes what runs later (VCS configuration and hooks, the
agents' own settings, `.env` files the CLIs load, shell start-up files, ...): a write to one is
always put to the user in every mode but yolo (docs/tools.md, "Protected paths"). This module
says whether a path, a file tool's call or a shell command's parts touch one; the runtime and the
gemini-cli permission bridge decide what to do about it.

Credential files (the file `GOOGLE_APPLICATION_CREDENTIALS` names, gcloud's application default
credentials, the CLIs' OAuth files, ...) are never opened by a file tool: `_safe_io` refuses them by
device and inode, so a link or a hard link to one is refused too.
"""

from __future__ import annotations

import functools
import glob
import os
import posixpath
import re
import stat
import time
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from unified._exports import publish
from unified.tools._shell_syntax import SimpleCommand

__all__ = [
    "CREDENTIAL_CHECK_TTL_S",
    "ProtectedPaths",
    "credential_files",
    "credential_ids",
    "credential_refusal",
    "protected_path",
    "protected_path_patterns",
    "protected_paths",
    "relative_to_roots",
    "shell_protected",
]

_GIT_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool"}
)
_GIT_CONFIG_READ_VERBS = frozenset({"get", "list", "get-color", "get-colorbool"})
_GIT_CONFIG_WRITES = frozenset(
    {"--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section", "--edit", "-e"}
    | {"set", "unset", "rename-section", "remove-section", "edit"}
)
_GIT_WRITING_VERBS = {
    "remote": frozenset({"add", "rename", "remove", "rm", "set-url", "set-head", "set-branches"}),
    "submodule": frozenset({"add", "init", "sync", "set-url", "set-branch", "deinit", "update", "absorbgitdirs"}),
}
_GIT_WRITING_OPTIONS = ("--template", "-c", "--config")
"""`git init --template DIR` installs DIR's hooks; `git clone -c k=v` writes the new repository's config."""


@dataclass(frozen=True)
class ProtectedPaths:
    """The shipped data, compiled."""

    patterns: tuple[str, ...]
    regex: re.Pattern[str]
    shell_writers: frozenset[str]
    shell_directory_changers: frozenset[str]
    credentials: tuple[Mapping[str, Any], ...]
    holders: tuple[str, ...] = ()
    """The directories protected paths live in (`.vscode` for `.vscode/tasks.json`): a shell command
    that names one may work inside it (`cd .vscode && cp x tasks.json`)."""
    holder_regex: re.Pattern[str] | None = None

    def match(self, relative: str) -> str | None:
        """The pattern a `/`-separated relative path matches, at any depth; None if none does."""
        found = self.regex.search(relative.casefold())
        if found is None:
            return None
        return next(p for p, g in zip(self.patterns, found.groups(), strict=True) if g is not None)

    def match_holder(self, relative: str) -> str | None:
        """The protected directory a relative path names (`.vscode`, `.config/git`), if any."""
        found = self.holder_regex.search(relative.casefold()) if self.holder_regex is not None else None
        if found is None:
            return None
        return next(h for h, g in zip(self.holders, found.groups(), strict=True) if g is not None)


def _holders(patterns: Sequence[str]) -> tuple[str, ...]:
    """Every leading part of a pattern with more than one component: `.config` and `.config/git`
    for `.config/git/**`."""
    found: dict[str, None] = {}
    for pattern in patterns:
        parts = pattern.split("/")
        for end in range(1, len(parts)):
            found.setdefault("/".join(parts[:end]))
    return tuple(h for h in found if h not in patterns)


def _alternatives(patterns: Sequence[str]) -> re.Pattern[str]:
    return re.compile("(?:^|/)(?:" + "|".join(f"({_fragment(p.casefold())})" for p in patterns) + ")$")


def _fragment(pattern: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(pattern):
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        char = pattern[index]
        out.append("[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char))
        index += 1
    return "".join(out)


@functools.cache
def protected_paths() -> ProtectedPaths:
    """The data of `protected_paths.toml`, read and compiled once per process."""
    text = resources.files("unified.tools").joinpath("protected_paths.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    patterns = tuple(str(p) for p in data["protected"]["patterns"])
    writers = frozenset(str(w) for w in data["protected"]["shell_writers"])
    changers = frozenset(str(w) for w in data["protected"]["shell_directory_changers"])
    holders = _holders(patterns)
    return ProtectedPaths(
        patterns,
        _alternatives(patterns),
        writers,
        changers,
        tuple(data.get("credential", [])),
        holders,
        _alternatives(holders) if holders else None,
    )


def protected_path_patterns() -> tuple[str, ...]:
    """The protected-path patterns of the data file (docs/tools.md, "Protected paths")."""
    return protected_paths().patterns


def relative_to_roots(path: Path, roots: Sequence[Path]) -> str:
    """`path` relative to the deepest root holding it (its own text when none does)."""
    holders = [r for r in roots if path == r or path.is_relative_to(r)]
    if not holders:
        return path.as_posix()
    root = max(holders, key=lambda r: len(r.parts))
    return path.relative_to(root).as_posix()


def protected_path(path: Path, roots: Sequence[Path]) -> str | None:
    """The protected-path pattern a real path matches, judged relative to the root holding it."""
    relative = relative_to_roots(path, roots)
    return protected_paths().match(relative) if relative not in ("", ".") else None


def shell_protected(parts: Iterable[SimpleCommand], cwd: Path, roots: Sequence[Path]) -> str | None:
    """Why a shell command may write a protected path (the first reason), or None.

    A redirection target or any argument naming a protected path (lexically and through links), a
    file-writing command (`shell_writers`) with an argument only known at run time, `git config`
    and the git verbs that write `.git/config` all count. So does what may move the command into a
    protected directory, where a plain file name is a protected path: an argument naming such a
    directory (`cd .vscode`, `env -C .gemini`), a directory change (`shell_directory_changers`) to a
    place only known at run time, `CDPATH`, `cdable_vars` and `find -execdir`.
    """
    data = protected_paths()
    for part in parts:
        if part.unknown is not None:
            continue  # an unknown part is never allowed by a rule: it is asked anyway
        moved = _moves_directory(part)
        if moved is not None:
            return moved
        for target in part.writes:
            if target == "?":
                return "a redirection to a file only known at run time may write a protected path"
            hit = _names_protected(target, cwd, roots)
            if hit is not None:
                return f"it writes {target} ({hit})"
        name = part.name
        if name is None:
            continue
        for word in part.words[1:]:
            if word is None:
                if name in data.shell_writers:
                    return f"{name} with an argument only known at run time may write a protected path"
                if name in data.shell_directory_changers:
                    return f"{name} to a directory only known at run time may lead a write into a protected one"
                continue
            for candidate in _path_candidates(word):
                hit = _names_protected(candidate, cwd, roots)
                if hit is not None:
                    return f"{name} names {candidate} ({hit})"
        git = _git_writes_config(part)
        if git is not None:
            return git
    return None


def _moves_directory(part: SimpleCommand) -> str | None:
    """Why `part` may run in (or send later commands to) a directory the check cannot name."""
    if "CDPATH" in part.assigns:
        return "it sets CDPATH, which decides where a later cd goes"
    if part.name == "shopt" and "cdable_vars" in part.words:
        return "shopt cdable_vars makes cd go where a variable says"
    if "find -execdir" in part.via:
        return "find -execdir runs a command inside every directory it visits, protected ones included"
    if part.name in protected_paths().shell_directory_changers:
        if not [w for w in part.words[1:] if w is None or not w.startswith(("-", "+"))]:
            return f"{part.name} to a directory only known at run time may lead a write into a protected one"
        if any(w is not None and w[:1] in "+-" and w[1:].isdigit() for w in part.words[1:]):
            return f"{part.name} to a directory only known at run time may lead a write into a protected one"
    return None


def _path_candidates(word: str) -> list[str]:
    """The paths an argument may name: itself, and the value of `--opt=value` / `of=value`."""
    found = [word]
    if "=" in word:
        found.append(word.split("=", 1)[1])
    return [w for w in found if w and not w.startswith("-")]


def _names_protected(word: str, cwd: Path, roots: Sequence[Path]) -> str | None:
    joined = cwd / word
    lexical = Path(posixpath.normpath(str(joined)))
    hit = _protected_or_holder(lexical, roots)
    if hit is not None:
        return hit
    try:
        # both: `lnk/..` is `.` to the text, but the parent of the link's target to the kernel
        reals = {Path(os.path.realpath(lexical)), Path(os.path.realpath(joined))}
    except (OSError, ValueError):
        return None
    for real in sorted(reals - {lexical}):
        hit = _protected_or_holder(real, roots)
        if hit is not None:
            return f"a link to {relative_to_roots(real, roots)}, {hit}"
    return None


def _protected_or_holder(path: Path, roots: Sequence[Path]) -> str | None:
    hit = protected_path(path, roots)
    if hit is not None:
        return hit
    relative = relative_to_roots(path, roots)
    holder = protected_paths().match_holder(relative) if relative not in ("", ".") else None
    return f"a directory protected paths are in, {holder}" if holder is not None else None


def _git_writes_config(part: SimpleCommand) -> str | None:
    if part.name != "git":
        return None
    words = [w for w in part.words[1:] if w is not None]
    index = 0
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if index >= len(words):
        return None
    verb, rest = words[index], words[index + 1 :]
    if verb == "config":
        if any(w in _GIT_CONFIG_WRITES for w in rest):
            return "git config writes git's configuration (a protected path)"
        reading = any(w in _GIT_CONFIG_READS for w in rest) or bool(rest[:1] and rest[0] in _GIT_CONFIG_READ_VERBS)
        if not reading and len([w for w in rest if not w.startswith("-")]) != 1:
            return "git config writes git's configuration (a protected path)"
        return None
    if verb in _GIT_WRITING_VERBS and rest[:1] and rest[0] in _GIT_WRITING_VERBS[verb]:
        return f"git {verb} {rest[0]} writes .git/config (a protected path)"
    if verb in ("init", "clone") and any(w.split("=", 1)[0] in _GIT_WRITING_OPTIONS for w in rest):
        return f"git {verb} with a template or configuration writes hooks or config (a protected path)"
    return None


# --- credential files ----------------------------------------------------------------------------


def credential_files(env: Mapping[str, str] | None = None) -> list[Path]:
    """The credential files that exist now, as the environment names them (see the data file)."""
    env = os.environ if env is None else env
    found: list[Path] = []
    for entry in protected_paths().credentials:
        variable = entry.get("variable")
        if isinstance(variable, str):
            value = env.get(variable, "")
            found.extend(Path(p).expanduser() for p in value.split(os.pathsep) if p)
            continue
        path = str(entry.get("path", ""))
        for base in entry.get("under", []):
            directory = env.get(str(base))
            if not directory:
                continue
            target = os.path.join(directory, path)
            found.extend(Path(p) for p in (glob.glob(target) if "*" in path else [target]))
    return found


CREDENTIAL_CHECK_TTL_S = 1.0
"""How long the set of credential files is reused before it is looked up again. A link made to one
meanwhile is still refused (it has the file's device and inode); only a credential file created
within that second is seen a second late."""

_credential_cache: tuple[float, tuple[tuple[str, str], ...], dict[tuple[int, int], Path]] | None = None


def credential_ids(env: Mapping[str, str] | None = None) -> dict[tuple[int, int], Path]:
    """(device, inode) of every credential file that exists, to refuse it under any name."""
    global _credential_cache
    if env is None:
        key = tuple((k, v) for k, v in os.environ.items() if k in _credential_variables())
        now = time.monotonic()
        cached = _credential_cache
        if cached is not None and cached[1] == key and now - cached[0] < CREDENTIAL_CHECK_TTL_S:
            return cached[2]
        ids = _credential_ids(os.environ)
        _credential_cache = (now, key, ids)
        return ids
    return _credential_ids(env)


@functools.cache
def _credential_variables() -> frozenset[str]:
    names: set[str] = set()
    for entry in protected_paths().credentials:
        if isinstance(entry.get("variable"), str):
            names.add(entry["variable"])
        names.update(str(v) for v in entry.get("under", []))
    return frozenset(names)


def _credential_ids(env: Mapping[str, str]) -> dict[tuple[int, int], Path]:
    ids: dict[tuple[int, int], Path] = {}
    for path in credential_files(env):
        try:
            info = os.stat(path)
        except (OSError, ValueError):
            continue
        ids.setdefault((info.st_dev, info.st_ino), path)
    return ids


def credential_refusal(info: os.stat_result, shown: str) -> str | None:
    """The refusal for a file a tool is about to open, if it is a credential file."""
    if not stat.S_ISREG(info.st_mode):  # only regular files hold credentials here
        return None
    named = credential_ids().get((info.st_dev, info.st_ino))
    if named is None:
        return None
    return f"{shown} is a credential file ({named}); no tool reads or changes it."


publish("unified.tools", ["protected_path", "protected_path_patterns"], globals())
