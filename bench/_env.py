"""Isolation shared by the benchmarks: every run gets a throw-away HOME, never the user's own.

The Gemini CLI reads and writes `~/.gemini`, and our session store writes under the XDG data
directory; a benchmark that touched either would be both unsafe and unrepeatable.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.harness.recordings import recordings_dir

from unified.testing._wiring import prepare_cli_home

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = recordings_dir()
TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"
MODEL = "gemini-2.5-flash"


def gemini_binary() -> Path | None:
    """The pinned binary (UNIFIED_GEMINI_BIN, else the project-local install), if present."""
    path = Path(os.environ.get("UNIFIED_GEMINI_BIN") or ROOT / ".gemini-cli" / "node_modules" / ".bin" / "gemini")
    return path if path.exists() else None


def recordings() -> list[Path]:
    return sorted(RECORDINGS.glob("*.responses"))


@contextlib.contextmanager
def isolated_home() -> Iterator[Path]:
    """Point HOME, GEMINI_CLI_HOME and the XDG directories at a temp dir (with the CLI's settings)."""
    names = ("HOME", "GEMINI_CLI_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "GEMINI_API_KEY")
    saved = {name: os.environ.get(name) for name in names}
    with tempfile.TemporaryDirectory(prefix="unified-bench-") as tmp:
        home = Path(tmp)
        prepare_cli_home(home)
        os.environ.update(
            HOME=tmp,
            GEMINI_CLI_HOME=tmp,
            XDG_DATA_HOME=str(home / ".local" / "share"),
            XDG_CACHE_HOME=str(home / ".cache"),
            XDG_CONFIG_HOME=str(home / ".config"),
            GEMINI_API_KEY="dummy",
        )
        try:
            yield home
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def workspace(home: Path, name: str = "ws") -> Path:
    """A working directory inside the isolated home, with one small file the tools can read."""
    path = home / name
    path.mkdir(exist_ok=True)
    (path / "notes.txt").write_text("alpha\nbeta\n")
    return path
