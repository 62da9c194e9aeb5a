"""Files written whole and atomically: a temporary file beside the target, renamed over it.

What the binaries' homes hold (their session files, a generated config, a login, unified's cached
files) is read by other processes, and by other runs of this one, at any moment: a reader sees the
old file or the new one, never half of either. The temporary file's name is this process's and this
call's: runs going at once in one process each write their own (with the pid alone, one run's
rename took the other's file away, and that run failed with FileNotFoundError). A failed write
removes it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["temporary_beside", "write_atomically"]


def temporary_beside(path: Path) -> Path:
    """A name to write `path` through before the rename: hidden, beside it, this process's and this call's."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def write_atomically(path: Path, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data` (text as UTF-8); `mode`: its permission bits, set before the rename (a
    secret is never readable by others, not even for a moment)."""
    temporary = temporary_beside(path)
    try:
        temporary.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        if mode is not None:
            os.chmod(temporary, mode)
        temporary.replace(path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
