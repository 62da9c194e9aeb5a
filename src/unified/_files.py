"""Files written whole and atomically: a temporary file beside the target, renamed over it.

What the binaries' homes hold (their session files, a generated config, a login, unified's cached
files) is read by other processes, and by other runs of this one, at any moment: a reader sees the
old file or the new one, never half of either. The temporary file's name is this process's and this
call's: runs going at once in one process each write their own (with the pid alone, one run's
rename took the other's file away, and that run failed with FileNotFoundError). A failed write
removes it.

Files read from those homes are opened by `open_regular` (and `read_regular`, `read_regular_text`):
what lies at a session file's path may be a FIFO, a device or a link to one, which a plain open
would wait on forever (a FIFO with no writer) or read without end (`/dev/zero`). The open does not
block, the descriptor must be a regular file (`NotRegularFile` otherwise), and only then is it read.
Symbolic links are followed (a user's real home may hold legitimate ones); their target is checked.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "NotRegularFile",
    "append_line",
    "open_regular",
    "read_regular",
    "read_regular_text",
    "temporary_beside",
    "write_atomically",
]

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
"""Never blocks on a FIFO without a writer, never makes a terminal the controlling one; links followed."""


class NotRegularFile(OSError):
    """What is at a path read as a file is not a regular file (a FIFO, a device, a socket, a directory,
    or a link to one): refused, never waited on or read. An OSError (errno EINVAL, or EISDIR for a
    directory), so every caller that copes with an unreadable file copes with this one the same way."""

    def __init__(self, path: Path | str, kind: str) -> None:
        code = errno.EISDIR if kind == "a directory" else errno.EINVAL
        super().__init__(code, f"not a regular file but {kind}", str(path))
        self.kind = kind
        self.hint = "unified reads only regular files there: move it away or put the real file back"

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}; {self.hint}"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "not a file"


def open_regular(path: Path | str) -> BinaryIO:
    """`path` opened for reading in binary mode, refused with `NotRegularFile` unless it is a regular file
    (links followed, their target checked on the open descriptor, so nothing swapped in after the check
    is read). Other failures are the OSError the open raised (FileNotFoundError, PermissionError, ...)."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, _kind(mode))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path | str, *, max_bytes: int | None = None) -> bytes:
    """The whole content of the regular file at `path` (`open_regular`); with `max_bytes`, a file larger
    than that is refused (OSError EFBIG) without reading it."""
    with open_regular(path) as handle:
        if max_bytes is not None:
            size = os.fstat(handle.fileno()).st_size
            if size > max_bytes:
                raise OSError(errno.EFBIG, f"{size} bytes, more than unified reads ({max_bytes})", str(path))
        return handle.read()


def read_regular_text(path: Path | str, encoding: str = "utf-8") -> str:
    """The regular file at `path` as text, decoded as `Path.read_text` decodes it (universal newlines)."""
    with open_regular(path) as handle, io.TextIOWrapper(handle, encoding=encoding) as text:
        return text.read()


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


def append_line(path: Path | str, line: bytes) -> None:
    """Append `line` (ending in a newline) to the regular file at `path` on a line of its own: a newline
    first when the file does not end in one. One descriptor, checked as `open_regular` checks it: a FIFO
    or a device swapped in is refused with `NotRegularFile`, never waited on or written to."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFile(path, _kind(status.st_mode))
        os.set_blocking(fd, True)
        ends_open = status.st_size > 0 and os.pread(fd, 1, status.st_size - 1) != b"\n"
        data = (b"\n" if ends_open else b"") + line
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)
