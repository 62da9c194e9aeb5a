"""Ignore rules shared by tree, search and glob (seed 002, "Searching").

`.gitignore` and `.ignore` files at every level (nested, with negations), `.git/info/exclude` of
the enclosing repository, and `.git` itself. The deepest file with an opinion decides, and within
one directory `.ignore` outranks `.gitignore`, as ripgrep does. Directories are read through open
descriptors (`_safe_io`), never through a link. Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from unified.tools import _safe_io
from unified.tools._paths import Workspace

__all__ = ["IGNORE_FILE_MAX_BYTES", "IgnoreRules", "WalkedFile", "scan", "walk_files"]

_IGNORE_FILES = (".gitignore", ".ignore")
IGNORE_FILE_MAX_BYTES = 1024 * 1024
"""What is read of one ignore file; the rest of a larger one is not read."""


@dataclass(frozen=True)
class _Layer:
    base: Path
    spec: pathspec.GitIgnoreSpec


def _read_layer(base: Path, dir_fd: int, name: str) -> _Layer | None:
    data = _safe_io.read_small(dir_fd, name, IGNORE_FILE_MAX_BYTES)
    if data is None:
        return None
    return _Layer(base, pathspec.GitIgnoreSpec.from_lines(data.decode("utf-8", errors="replace").splitlines()))


def _repo_exclude(repo: Path, repo_fd: int) -> _Layer | None:
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
        return _read_layer(repo, info, "exclude")
    finally:
        os.close(info)


class IgnoreRules:
    """The ignore layers in force inside one directory; `child()` descends one level."""

    def __init__(self, layers: tuple[_Layer, ...]) -> None:
        self._layers = layers

    @classmethod
    def for_directory(cls, workspace: Workspace, directory: Path) -> IgnoreRules:
        """Rules for `directory`, reading ignore files from the workspace root down to it."""
        top = workspace.root
        chain = [directory]
        if directory.is_relative_to(top):
            chain = [top, *(top / p for p in _prefixes(directory.relative_to(top)))]
        fds: list[int] = []
        try:
            for d in chain:
                fds.append(_safe_io.open_directory(workspace, d, workspace.display(d)))
            layers: list[_Layer] = []
            repo = next((i for i in reversed(range(len(chain))) if _safe_io.lstat_in(fds[i], ".git") is not None), None)
            if repo is not None:
                exclude = _repo_exclude(chain[repo], fds[repo])
                if exclude:
                    layers.append(exclude)
            rules = cls(tuple(layers))
            for d, fd in zip(chain, fds, strict=True):
                rules = rules.child(d, fd)
            return rules
        finally:
            for fd in fds:
                os.close(fd)

    def child(self, directory: Path, dir_fd: int) -> IgnoreRules:
        added = [layer for name in _IGNORE_FILES if (layer := _read_layer(directory, dir_fd, name))]
        return IgnoreRules(self._layers + tuple(added)) if added else self

    def ignored(self, path: Path, is_dir: bool) -> bool:
        if path.name == ".git":
            return True
        for layer in reversed(self._layers):
            if not path.is_relative_to(layer.base):
                continue
            rel = path.relative_to(layer.base).as_posix() + ("/" if is_dir else "")
            verdict = layer.spec.check_file(rel).include
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


@dataclass(frozen=True)
class WalkedFile:
    """A non-directory entry met by `walk_files`; `dir_fd` is open only while the walk is at it."""

    path: Path
    dir_fd: int
    name: str
    is_link: bool


def walk_files(
    dir_fd: int, directory: Path, rules: IgnoreRules | None, stop: _safe_io.StopFlag
) -> Iterator[WalkedFile]:
    """Every non-directory entry under an open directory in path order, pruning ignored directories.

    Subdirectories are opened relative to their parent without following links, so the walk never
    leaves the tree it started in; links are yielded as entries (`is_link`) for the caller to judge.
    """
    stop.check()
    for entry in scan(dir_fd, directory, rules):
        path = directory / entry.name
        if entry.is_dir(follow_symlinks=False):
            child = _safe_io.open_child_dir(dir_fd, entry.name)
            if child is None:
                continue
            try:
                yield from walk_files(child, path, rules.child(path, child) if rules else None, stop)
            finally:
                os.close(child)
        else:
            yield WalkedFile(path, dir_fd, entry.name, entry.is_symlink())
