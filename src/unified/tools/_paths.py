"""Workspace confinement: every path a tool touches is resolved and checked here first.

Symlinks are resolved before the check (seed 000), so a link inside the workspace that points
outside it is refused rather than followed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

import anyio.to_thread

from unified.tools._base import ToolError


class Workspace:
    """The workspace root plus any extra roots (`include_directories`) tools may reach."""

    def __init__(self, root: Path, include_directories: Sequence[Path] = ()) -> None:
        self.root = Path(os.path.realpath(root))
        extra = [Path(os.path.realpath(self.root / d)) for d in include_directories]
        self.roots: tuple[Path, ...] = (self.root, *dict.fromkeys(r for r in extra if r != self.root))

    def contains(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.roots)

    def display(self, path: Path) -> str:
        """A path as the model should read it: relative to the root when inside it."""
        if path == self.root:
            return "."
        if path.is_relative_to(self.root):
            return path.relative_to(self.root).as_posix()
        return str(path)

    async def resolve(self, raw: str) -> Path:
        """The real, confined path for a tool argument, or a `ToolError` the model can act on."""
        return await anyio.to_thread.run_sync(self._resolve_sync, raw)

    def _resolve_sync(self, raw: str) -> Path:
        text = raw.replace("\0", "")
        if text.startswith("file://"):
            text = unquote(urlparse(text).path)
        if not text.strip():
            raise ToolError("Path must not be empty.")
        candidate = self.root / text
        if text.startswith("@") and not candidate.exists():
            candidate = self.root / text[1:]
        real = Path(os.path.realpath(candidate))
        if not self.contains(real):
            allowed = ", ".join(str(r) for r in self.roots)
            raise ToolError(
                f'Path not in workspace: "{raw}" resolves to {real}, outside the allowed directories: {allowed}'
            )
        return real
