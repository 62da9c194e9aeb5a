"""Ignore rules shared by tree, search and glob (seed 002, "Searching").

`.gitignore` and `.ignore` files at every level (nested, with negations), `.git/info/exclude` of
the enclosing repository, and `.git` itself. The deepest file with an opinion decides, and within
one directory `.ignore` outranks `.gitignore`, as ripgrep does. Blocking: call from a worker thread.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

_IGNORE_FILES = (".gitignore", ".ignore")


@dataclass(frozen=True)
class _Layer:
    base: Path
    spec: pathspec.GitIgnoreSpec


def _read_layer(base: Path, file: Path) -> _Layer | None:
    try:
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _Layer(base, pathspec.GitIgnoreSpec.from_lines(lines))


class IgnoreRules:
    """The ignore layers in force inside one directory; `child()` descends one level."""

    def __init__(self, layers: tuple[_Layer, ...]) -> None:
        self._layers = layers

    @classmethod
    def for_directory(cls, directory: Path, top: Path) -> IgnoreRules:
        """Rules for `directory`, reading ignore files from `top` (the workspace root) down to it."""
        chain = [directory]
        if directory.is_relative_to(top):
            chain = [top, *(top / p for p in _prefixes(directory.relative_to(top)))]
        layers: list[_Layer] = []
        repo = next((d for d in reversed(chain) if (d / ".git").exists()), None)
        if repo is not None:
            exclude = _read_layer(repo, repo / ".git" / "info" / "exclude")
            if exclude:
                layers.append(exclude)
        rules = cls(tuple(layers))
        for d in chain:
            rules = rules.child(d)
        return rules

    def child(self, directory: Path) -> IgnoreRules:
        added = [layer for name in _IGNORE_FILES if (layer := _read_layer(directory, directory / name))]
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


def scan(directory: Path, rules: IgnoreRules | None) -> list[os.DirEntry[str]]:
    """The entries of one directory not ignored, sorted by name; unreadable dirs read as empty."""
    try:
        with os.scandir(directory) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return []
    if rules is None:
        return entries
    return [e for e in entries if not rules.ignored(Path(e.path), _is_dir(e))]


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def walk_files(root: Path, rules: IgnoreRules | None) -> Iterator[Path]:
    """Every file under `root` in path order, pruning ignored directories; symlinked dirs not followed."""
    for entry in scan(root, rules):
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            yield from walk_files(path, rules.child(path) if rules else None)
        elif _is_dir(entry):
            continue
        else:
            yield path
