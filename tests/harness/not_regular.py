"""What a hostile or broken home can put where a file is expected, for the tests that prove it is
refused rather than waited on or read without end: a FIFO, a link to a FIFO, a link to a device.

A FIFO with no writer makes a plain open wait forever, so every such test runs under
`releasing_readers_of`: a regression that opens and reads the FIFO gets an end of file after
`HANG_GUARD_S` and fails on its assertion instead of hanging the suite. The device is /dev/null
(empty, so a regression reads nothing and fails on its assertion; /dev/zero would be read without
end and fill the memory before any guard could act).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.hang_guard import HANG_GUARD_S

__all__ = ["NOT_REGULAR", "not_a_regular_file", "releasing_readers_of", "still_there"]

NOT_REGULAR = ("fifo", "link to a fifo", "link to a device")
"""What `not_a_regular_file` can put at a path (a test parametrizes over them)."""


@contextlib.contextmanager
def releasing_readers_of(fifo: Path | None) -> Iterator[None]:
    """Hang guard: if a regression opens and reads `fifo`, free it (EOF) after HANG_GUARD_S so the test
    ends instead of hanging the suite, and fails it (even when what it read, nothing, passed its
    assertions). Normally nothing waits on it."""
    if fifo is None:
        yield
        return
    done = threading.Event()
    released: list[str] = []

    def release() -> None:
        while not done.wait(HANG_GUARD_S):
            with contextlib.suppress(OSError):  # ENXIO: no reader waits
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                if stat.S_ISFIFO(os.fstat(fd).st_mode):  # not a file written over the FIFO since
                    released.append(f"a reader waited on the FIFO {fifo} (released after {HANG_GUARD_S} s)")
                os.close(fd)

    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
    assert not released, released[0]


@contextlib.contextmanager
def not_a_regular_file(path: Path, kind: str) -> Iterator[Path]:
    """Put `kind` (one of NOT_REGULAR) at `path` (its folder made if needed) and guard the FIFO, if any,
    while the body runs; yields `path`. A link's FIFO is beside it, named so no listing matches it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fifo: Path | None
    if kind == "fifo":
        fifo = path
        os.mkfifo(fifo)
    elif kind == "link to a fifo":
        fifo = path.with_name(f"{path.name}.target")
        os.mkfifo(fifo)
        path.symlink_to(fifo)
    elif kind == "link to a device":
        fifo = None
        path.symlink_to(os.devnull)
    else:
        raise ValueError(f"not one of {NOT_REGULAR}: {kind!r}")
    with releasing_readers_of(fifo):
        yield path


def still_there(path: Path, kind: str) -> bool:
    """`path` is what `not_a_regular_file` put there (nothing removed or replaced it)."""
    mode = path.lstat().st_mode
    return stat.S_ISFIFO(mode) if kind == "fifo" else stat.S_ISLNK(mode)
