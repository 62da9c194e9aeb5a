"""Ignore rules shared by tree, search and glob (seed 002, "Searching").

`.gitignore` and `.ignore` files at every level (nested, with negations), `.git/info/exclude` of
the enclosing repository, and `.git` itself. The deepest file with an opinion decides, and within
one directory `.ignore` outranks `.gitignore`, as ripgrep does. Directories are read through open
descriptors (`_safe_io`), never through a link. Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pathspec

from unified import _limits as limits
from unified.tools import _safe_io
from unified.tools._base import ToolError
from unified.tools._paths import Workspace
from unified.tools._regex import matchable

__all__ = [
    "IGNORE_FILE_MAX_BYTES",
    "IGNORE_FILE_MAX_PATTERNS",
    "IGNORE_PATTERN_MAX_CHARS",
    "WALK_VETO",
    "IgnoreRules",
    "Veto",
    "WalkedFile",
    "scan",
    "walk_files",
]

_IGNORE_FILES = (".gitignore", ".ignore")
IGNORE_FILE_MAX_BYTES = 1024 * 1024
"""What is read of one ignore file; the rest of a larger one is not read."""
IGNORE_FILE_MAX_PATTERNS = 10_000
"""Patterns used of one ignore file (compiling one costs about 0.2 ms); later ones are not used."""
IGNORE_PATTERN_MAX_CHARS = 4096
"""Longest pattern used (a path is at most as long); a longer line is passed over. pathspec translates
a pattern in time that grows as its square, in one step no budget can interrupt: one line of 128,000
`*a` took 15 s, a file of one 1 MiB line minutes."""
_PATTERNS_PER_SET = 500
"""Patterns compiled into one RE2 set: a few thousand short ones (`*.ext1` ... `*.ext3000`) already
exceed the set's memory bound, and pathspec then raises from deep inside RE2."""


@dataclass(frozen=True)
class _Layer:
    base: Path
    specs: tuple[pathspec.GitIgnoreSpec, ...]
    """The file's patterns in order, a few hundred to a set: the last set with a verdict holds the
    last pattern that matches, which is the one git obeys."""

    def verdict(self, relative: str) -> bool | None:
        for spec in reversed(self.specs):
            found = spec.check_file(relative).include
            if found is not None:
                return found
        return None


def _compiled(lines: list[str], budget: Budget) -> list[pathspec.GitIgnoreSpec]:
    """`lines` as RE2-backed specs (a hostile ignore file cannot make matching backtrack, see
    `_regex`), split in halves while RE2 refuses a set; a line that cannot be compiled on its own
    (`!`, `\\`, `[z-a]`, one too large for RE2) is passed over, as git passes over a bad pattern.

    Compiling is not free (one file of 10,000 patterns like `*a*a*a...` took 15 s), so each set is
    compiled on the call's `budget`: ignore files met on the way to a directory, or in every
    directory of a walk, cannot hold a call past its time."""
    budget.clock()
    try:
        return [pathspec.GitIgnoreSpec.from_lines(lines, backend="re2")]
    except Exception:  # GitIgnorePatternError, re.error, re2.error ("failed to compile Set")
        if len(lines) <= 1:
            return []
        half = len(lines) // 2
        return _compiled(lines[:half], budget) + _compiled(lines[half:], budget)


def _read_layer(base: Path, dir_fd: int, name: str, budget: Budget) -> _Layer | None:
    data = _safe_io.read_small(dir_fd, name, IGNORE_FILE_MAX_BYTES)
    if data is None:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    patterns = [
        line for line in lines if line.strip() and not line.startswith("#") and len(line) <= IGNORE_PATTERN_MAX_CHARS
    ][:IGNORE_FILE_MAX_PATTERNS]
    chunks = [patterns[at : at + _PATTERNS_PER_SET] for at in range(0, len(patterns), _PATTERNS_PER_SET)]
    return _Layer(base, tuple(spec for chunk in chunks for spec in _compiled(chunk, budget)))


def _repo_exclude(repo: Path, repo_fd: int, budget: Budget) -> _Layer | None:
    git = _safe_io.open_child_dir(repo_fd, ".git")
    if git is None:
        return None
    try:
        info = _safe_io.open_child_dir(git, "info")
    finally:
        os.close(git)
    if info is None:
        return None
    try:
        return _read_layer(repo, info, "exclude", budget)
    finally:
        os.close(info)


class IgnoreRules:
    """The ignore layers in force inside one directory; `child()` descends one level."""

    def __init__(self, layers: tuple[_Layer, ...]) -> None:
        self._layers = layers

    @classmethod
    def for_directory(cls, workspace: Workspace, directory: Path, budget: Budget) -> IgnoreRules:
        """Rules for `directory`, reading ignore files from the workspace root down to it (one
        directory open at a time, so a directory any number of levels deep costs no more), compiled
        on the call's `budget` (`BudgetSpent` when it runs out)."""
        top = workspace.root
        chain = [directory]
        if directory.is_relative_to(top):
            chain = [top, *(top / p for p in _prefixes(directory.relative_to(top)))]
        levels: list[tuple[_Layer, ...]] = []
        exclude: _Layer | None = None
        fd = _safe_io.open_directory(workspace, chain[0], workspace.display(chain[0]))
        try:
            for index, d in enumerate(chain):
                if index:
                    child = _safe_io.open_child_dir(fd, d.name)
                    if child is None:  # replaced meanwhile: the path the tool opened is checked itself
                        child = _safe_io.open_directory(workspace, d, workspace.display(d))
                    os.close(fd)
                    fd = child
                if _safe_io.lstat_in(fd, ".git") is not None:
                    exclude = _repo_exclude(d, fd, budget)
                levels.append(tuple(layer for name in _IGNORE_FILES if (layer := _read_layer(d, fd, name, budget))))
        finally:
            os.close(fd)
        layers = [exclude] if exclude is not None else []
        return cls((*layers, *(layer for level in levels for layer in level)))

    def child(self, directory: Path, dir_fd: int, budget: Budget) -> IgnoreRules:
        added = [layer for name in _IGNORE_FILES if (layer := _read_layer(directory, dir_fd, name, budget))]
        return IgnoreRules(self._layers + tuple(added)) if added else self

    def ignored(self, path: Path, is_dir: bool) -> bool:
        if path.name == ".git":
            return True
        for layer in reversed(self._layers):
            if not path.is_relative_to(layer.base):
                continue
            rel = path.relative_to(layer.base).as_posix() + ("/" if is_dir else "")
            verdict = layer.verdict(matchable(rel))
            if verdict is not None:
                return verdict
        return False


def _prefixes(rel: Path) -> Iterator[Path]:
    parts = rel.parts
    for i in range(1, len(parts) + 1):
        yield Path(*parts[:i])


def scan(dir_fd: int, directory: Path, rules: IgnoreRules | None) -> list[os.DirEntry[str]]:
    """The entries of an open directory not ignored, sorted by name; unreadable dirs read as empty.

    A symbolic link counts as a file for the ignore rules (as in git), whatever it points to.
    """
    entries = _safe_io.list_entries(dir_fd)
    if rules is None:
        return entries
    return [e for e in entries if not rules.ignored(directory / e.name, e.is_dir(follow_symlinks=False))]


class Veto(Protocol):
    """What leaves an entry out of a walk (`_reach.Veto`, the caller's path rules), and says so after it."""

    def left_out(self, path: Path, is_dir: bool, is_link: bool) -> bool: ...

    def note(self) -> str | None: ...


WALK_VETO: ContextVar[Veto | None] = ContextVar("unified_walk_veto", default=None)
"""The policy's veto on the entries of this call's walk (set around a search, glob or tree call by `ToolRuntime`
when a rule reads paths), read by the tool before its walk starts in a worker thread."""


@dataclass(frozen=True)
class WalkedFile:
    """A non-directory entry met by `walk_files`; `dir_fd` is open only while the walk is at it."""

    path: Path
    dir_fd: int
    name: str
    is_link: bool


class BudgetSpent(Exception):
    """A walk or a search used up its budget; the message says which part of it."""


class Budget:
    """How long a walk (and the search over it) may run, how many entries it may visit and how
    many bytes it may read (`limits`); spending past one raises `BudgetSpent`."""

    def __init__(self) -> None:
        self.seconds = limits.SEARCH_TIME_BUDGET_S
        self.deadline = time.monotonic() + self.seconds
        self.max_entries = limits.WALK_MAX_ENTRIES
        self.max_bytes = limits.SEARCH_MAX_BYTES
        self.entries = 0
        self.read = 0

    def entry(self) -> None:
        self.entries += 1
        if self.entries > self.max_entries:
            raise BudgetSpent(f"it visited {self.max_entries:,} directory entries")
        if self.entries % 64 == 1:
            self.clock()

    def bytes(self, count: int) -> None:
        self.read += count
        if self.read > self.max_bytes:
            raise BudgetSpent(f"it read {self.max_bytes // (1024 * 1024):,} MiB")
        self.clock()

    def clock(self) -> None:
        if time.monotonic() > self.deadline:
            raise BudgetSpent(f"it ran for {self.seconds:g} s")


@dataclass
class _Frame:
    path: Path
    rules: IgnoreRules | None
    entries: Iterator[os.DirEntry[str]]
    fd: int | None
    owned: bool


def walk_files(
    dir_fd: int,
    directory: Path,
    rules: IgnoreRules | None,
    stop: _safe_io.StopFlag,
    *,
    budget: Budget,
    reopen: Callable[[Path], int] | None = None,
    veto: Veto | None = None,
) -> Iterator[WalkedFile]:
    """Every non-directory entry under an open directory in path order, pruning ignored directories.

    Subdirectories are opened relative to their parent without following links, so the walk never
    leaves the tree it started in; links are yielded as entries (`is_link`) for the caller to judge.
    The walk keeps a stack, not a recursion, so any depth is walked; at most
    `limits.WALK_OPEN_DIRS` directories stay open, the others are reopened (`reopen`, from the root,
    without following links) only if the walk comes back to them with entries left. An entry `veto` refuses
    (the policy would not let the call name it: `_reach.Veto`) is neither yielded nor entered.
    """
    frames = [_Frame(directory, rules, iter(scan(dir_fd, directory, rules)), dir_fd, owned=False)]
    open_count = 0
    try:
        while frames:
            stop.check()
            frame = frames[-1]
            entry = next(frame.entries, None)
            if entry is None:
                frames.pop()
                if frame.owned and frame.fd is not None:
                    os.close(frame.fd)
                    open_count -= 1
                continue
            budget.entry()
            if frame.fd is None:
                try:
                    frame.fd = reopen(frame.path) if reopen is not None else None
                except (OSError, ToolError):
                    frame.fd = None
                if frame.fd is None:
                    frames.pop()
                    continue
                open_count += 1
            path = frame.path / entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if veto is not None and veto.left_out(path, is_dir, not is_dir and entry.is_symlink()):
                continue
            if not is_dir:
                yield WalkedFile(path, frame.fd, entry.name, entry.is_symlink())
                continue
            child = _safe_io.open_child_dir(frame.fd, entry.name)
            if child is None:
                continue
            try:
                child_rules = frame.rules.child(path, child, budget) if frame.rules else None
                entries = scan(child, path, child_rules)
            except BaseException:
                os.close(child)
                raise
            frames.append(_Frame(path, child_rules, iter(entries), child, owned=True))
            open_count += 1
            if open_count > limits.WALK_OPEN_DIRS and reopen is not None:
                oldest = next(f for f in frames if f.owned and f.fd is not None)
                assert oldest.fd is not None
                os.close(oldest.fd)
                oldest.fd = None
                open_count -= 1
    finally:
        for frame in frames:
            if frame.owned and frame.fd is not None:
                os.close(frame.fd)
