"""A process that holds a file store lease: the other side of the lease tests that cross processes (a
holder killed with SIGKILL, a legacy session leased from another process)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["lease_held_elsewhere"]

_HOLDER = """
import sys, anyio
from pathlib import Path
from unified._sessions.stores import FileSessionStore

async def main() -> None:
    async with FileSessionStore(Path(sys.argv[1])).lease("generate-content", sys.argv[2]):
        print("held", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)

anyio.run(main)
"""


@contextlib.contextmanager
def lease_held_elsewhere(root: Path, session_id: str) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the generate-content lease on `session_id` in the store at `root`, from
    the moment it says so until the block ends, when it is killed with SIGKILL (and reaped): the
    kernel, not the holder, lets go of its locks."""
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(root), session_id], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
