"""Confined, non-blocking, bounded, cancellable file access: the one way the file tools touch disk.

Confinement (docs/tools.md, "Paths"): `Workspace.resolve` maps an argument to a real path inside a
root; every open then walks from that root one component at a time with `O_NOFOLLOW`, so the kernel
never follows a symbolic link for us. A link swapped into the path after the check (a shell command
racing the tool) makes the open fail instead of escaping, and a root replaced by a link is caught by
comparing its device and inode with the ones recorded when the runtime started.

Special files: the final component is `lstat`ed before it is opened and refused unless it is a
regular file; it is then opened `O_NONBLOCK` and `fstat`ed again, so a FIFO swapped in between
cannot block the open or a read. A credential file (`_protected.credential_ids`: the file
`GOOGLE_APPLICATION_CREDENTIALS` names, the CLIs' OAuth files, ...) is refused the same way, by
device and inode, so no link or hard link to it is read or written either.

Memory: text is read in `CHUNK`-sized pieces and split into lines that keep only a bounded head.

Cancellation: `in_worker` runs blocking work in a thread it abandons when the awaiting call is
cancelled, and sets a `StopFlag` the work checks between chunks, so the thread ends soon after.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import secrets
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

from unified.tools import _protected
from unified.tools._base import ToolError
from unified.tools._paths import Workspace

__all__ = [
    "CHUNK",
    "BinaryContent",
    "Line",
    "LineStream",
    "StopFlag",
    "T",
    "WorkStopped",
    "check_regular",
    "chunks",
    "entry_mode",
    "in_worker",
    "list_entries",
    "lstat_in",
    "open_child_dir",
    "open_directory",
    "open_file",
    "open_in",
    "open_parent",
    "read_at_most",
    "read_small",
    "replace_file",
    "root_gone",
    "size_at_open",
]

T = TypeVar("T")

CHUNK = 256 * 1024
"""Bytes per read: the most one read holds besides the lines kept."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# --- cancellation --------------------------------------------------------------------------------


class WorkStopped(Exception):
    """Raised inside an abandoned worker when its call was cancelled; nobody awaits it any more."""


class StopFlag:
    """Set when the call that started a worker is cancelled; the worker checks it between chunks."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def check(self) -> None:
        if self._event.is_set():
            raise WorkStopped


async def in_worker(work: Callable[[StopFlag], T]) -> T:
    """`work(stop)` in a worker thread; a cancelled call returns at once and the worker stops soon after."""
    stop = StopFlag()
    try:
        return await anyio.to_thread.run_sync(work, stop, abandon_on_cancel=True)
    finally:
        stop.set()


# --- opening -------------------------------------------------------------------------------------


def _special_kind(mode: int) -> str | None:
    """ "a FIFO", "a socket", ... for a special file's mode; None for files, directories and links."""
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


def _refusal(shown: str, kind: str, verb: str) -> ToolError:
    return ToolError(f"{shown} is {kind}, not a regular file; refusing to {verb} it.")


def _link_appeared(shown: str) -> ToolError:
    return ToolError(
        f"Refusing to follow a symbolic link at {shown}: it appeared after the path was checked, "
        "or it cannot be resolved (a loop). Check the path and try again."
    )


def root_gone(root: Path) -> ToolError:
    """A workspace root deleted (or moved away) during the run: every path under it is missing, and the model
    was told `Path not found: .`, or that a file it wrote had "a file, not a directory" in its path."""
    return ToolError(
        f"The workspace directory {root} is gone: it was deleted, moved or replaced by a file after the session "
        "started, so no tool can read or write in it. Stop and tell the user; do not try to recreate it."
    )


def _open_root(workspace: Workspace, root: Path) -> int:
    # Followed on purpose: what counts is that the directory opened is the one recorded.
    try:
        fd = os.open(root, _DIR_FLAGS & ~os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        raise root_gone(root) from None
    info = os.fstat(fd)
    known = workspace.root_ids.setdefault(root, (info.st_dev, info.st_ino))
    if known != (info.st_dev, info.st_ino):
        os.close(fd)
        raise ToolError(f"The workspace directory {root} was replaced after the session started; refusing to use it.")
    return fd


def _step(fd: int, part: str, shown: str, create: bool) -> int:
    """The subdirectory `part` of an open directory, never through a link; mkdir-ed if `create`."""
    try:
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        # With O_DIRECTORY, Linux reports a link as "not a directory" rather than ELOOP.
        info = lstat_in(fd, part) if exc.errno == errno.ENOTDIR else None
        if exc.errno == errno.ELOOP or (info is not None and stat.S_ISLNK(info.st_mode)):
            raise _link_appeared(shown) from None
        raise


def _walk_to(workspace: Workspace, real: Path, shown: str, *, create: bool) -> int:
    """A directory fd for `real`, reached from its root one component at a time.

    Raises FileNotFoundError / NotADirectoryError as the kernel reports them.
    """
    root = max((r for r in workspace.roots if real == r or real.is_relative_to(r)), key=lambda r: len(r.parts))
    fd = _open_root(workspace, root)
    try:
        for part in real.relative_to(root).parts:
            child = _step(fd, part, shown, create)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_directory(workspace: Workspace, real: Path, shown: str) -> int:
    """A directory fd for a tool's directory argument, with the listing tools' messages."""
    try:
        return _walk_to(workspace, real, shown, create=False)
    except (FileNotFoundError, NotADirectoryError):
        if entry_mode(workspace, real, shown) is None:
            raise ToolError(f"Path not found: {shown}") from None
        raise ToolError(f"Path is not a directory: {shown}") from None


def reopener(workspace: Workspace) -> Callable[[Path], int]:
    """Reopens a directory a walk closed to stay within its descriptor budget (from its root,
    never through a link), for `_ignore.walk_files`."""

    def reopen(real: Path) -> int:
        return _walk_to(workspace, real, workspace.display(real), create=False)

    return reopen


def entry_mode(workspace: Workspace, real: Path, shown: str) -> int | None:
    """The mode of the entry at `real` (a link not followed), or None when nothing is there."""
    if real in workspace.roots:
        try:
            return os.stat(real).st_mode
        except (FileNotFoundError, NotADirectoryError):
            raise root_gone(real) from None
        except OSError:
            return None
    try:
        parent = _walk_to(workspace, real.parent, shown, create=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        info = lstat_in(parent, real.name)
    finally:
        os.close(parent)
    return None if info is None else info.st_mode


def open_parent(workspace: Workspace, real: Path, shown: str, *, create: bool = False) -> int:
    """The fd of the directory holding `real`; a missing parent is "File not found" unless `create`."""
    if real in workspace.roots:
        raise ToolError(f"Path is a directory, not a file: {shown}")
    try:
        return _walk_to(workspace, real.parent, shown, create=create)
    except (FileNotFoundError, NotADirectoryError):
        if create:
            raise ToolError(f"Cannot create {shown}: part of its path is a file, not a directory.") from None
        raise ToolError(f"File not found: {shown}") from None


def lstat_in(dir_fd: int, name: str) -> os.stat_result | None:
    """The entry `name` of the directory, links not followed; None when it does not exist."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def check_regular(info: os.stat_result, shown: str, verb: str) -> None:
    """Refuses anything but a regular file, with the message the model reads."""
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"Path is a directory, not a file: {shown}")
    if stat.S_ISLNK(info.st_mode):
        raise _link_appeared(shown)
    kind = _special_kind(info.st_mode)
    if kind is not None:
        raise _refusal(shown, kind, verb)
    credential = _protected.credential_refusal(info, shown)
    if credential is not None:
        raise ToolError(credential)
    names = _protected.other_names(info) if verb != "write" else None  # a write replaces the name alone
    if names is not None:
        raise ToolError(
            f"{shown} is {names}, so no tool reads it; if it should be read, ask the user to copy it "
            "(`cp`, which makes a file of one name) into the workspace."
        )


def open_in(dir_fd: int, name: str, shown: str, verb: str) -> tuple[int, os.stat_result]:
    """A blocking read fd of the regular file `name` in the directory, and its fstat.

    lstat first (a special file is refused before it is opened), then open non-blocking without
    following a link, then fstat the opened file, since the entry may have been swapped in between.
    """
    info = lstat_in(dir_fd, name)
    if info is None:
        raise ToolError(f"File not found: {shown}")
    check_regular(info, shown, verb)
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise ToolError(f"File not found: {shown}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_appeared(shown) from None
        raise ToolError(f"Could not open {shown}: {exc.strerror}") from None
    try:
        opened = os.fstat(fd)
        check_regular(opened, shown, verb)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, opened


def open_file(workspace: Workspace, real: Path, shown: str, verb: str) -> tuple[int, os.stat_result]:
    """A read fd of the regular file at the real path `real`, reached without following links."""
    parent = open_parent(workspace, real, shown)
    try:
        return open_in(parent, real.name, shown, verb)
    finally:
        os.close(parent)


def open_child_dir(dir_fd: int, name: str) -> int | None:
    """The subdirectory `name` (not a link to one), or None."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None


def list_entries(dir_fd: int) -> list[os.DirEntry[str]]:
    """The entries of an open directory sorted by name; an unreadable directory reads as empty."""
    try:
        with os.scandir(dir_fd) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def read_small(dir_fd: int, name: str, limit: int) -> bytes | None:
    """The first `limit` bytes of a regular file in the directory, or None (missing, special, a link)."""
    try:
        fd, _ = open_in(dir_fd, name, name, "read")
    except (ToolError, OSError):
        return None
    try:
        return os.read(fd, limit)
    finally:
        os.close(fd)


def chunks(fd: int, stop: StopFlag, limit: int | None = None) -> Iterator[bytes]:
    """The rest of the file in `CHUNK`-sized reads, checking `stop` before each; at most `limit`
    bytes when given (`size_at_open`), so a file another process keeps growing ends."""
    left = limit
    while left is None or left > 0:
        stop.check()
        chunk = os.read(fd, CHUNK if left is None else min(CHUNK, left))
        if not chunk:
            return
        if left is not None:
            left -= len(chunk)
        yield chunk


def size_at_open(info: os.stat_result) -> int:
    """What a whole-file read takes of a regular file: its size when opened (a file that grows
    meanwhile, `yes > f` in the background, is read as it was), at least one `CHUNK` (a file system
    that reports no size still shows its beginning)."""
    return max(info.st_size, CHUNK)


def read_at_most(fd: int, limit: int, stop: StopFlag) -> bytes:
    """Up to `limit` bytes from the fd's position, read in chunks."""
    parts: list[bytes] = []
    got = 0
    while got < limit:
        stop.check()
        data = os.read(fd, min(CHUNK, limit - got))
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


# --- writing -------------------------------------------------------------------------------------


def replace_file(dir_fd: int, name: str, data: bytes, mode: int | None) -> None:
    """Writes `name` in the directory atomically: a temporary file beside it, then a rename over it.

    A crash leaves the old file or the new one, never half of one; `mode` (the old file's) is kept.
    The rename replaces a link or a hard link rather than writing through it.
    """
    temp = f".unified-{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dir_fd)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, stat.S_IMODE(mode))
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


# --- lines ---------------------------------------------------------------------------------------


class BinaryContent(Exception):
    """The stream met a NUL byte."""


@dataclass(frozen=True)
class Line:
    """One line of a stream: its body (no `\\n`, no final `\\r`) cut to the stream's `keep` chars."""

    number: int
    text: str
    length: int
    """Characters in the whole body."""
    cr: bool
    """The line ended `\\r\\n` (or `\\r` at the end of the file)."""
    ended: bool
    """The line ended with `\\n` (only the last line of a file may not)."""

    @property
    def cut(self) -> bool:
        return self.length > len(self.text)


class _LongLine:
    """A line spanning chunks: its first `keep + 1` characters and a count of the rest."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._held = 0
        self._chars = 0
        self._last_cr = False
        self.started = False

    def feed(self, data: bytes, final: bool = False) -> None:
        self.started = self.started or bool(data)
        text = self._decoder.decode(data, final)
        if not text:
            return
        self._chars += len(text)
        self._last_cr = text.endswith("\r")
        room = self._keep + 1 - self._held
        if room > 0:
            self._head.append(text[:room])
            self._held += min(room, len(text))

    def finish(self, number: int, ended: bool) -> Line:
        self.feed(b"", final=True)
        length = self._chars - self._last_cr
        return Line(number, "".join(self._head)[: min(self._keep, length)], length, self._last_cr, ended)


class LineStream:
    """The lines of an open file, read in chunks; holds one chunk and one line's head at a time.

    `lines(first, last)` yields lines `first..last` and counts the others without decoding them;
    lowering `last` while iterating ends the window early. Once exhausted, `total` is the file's
    line count (a final line without `\\n` counts). A NUL byte anywhere raises `BinaryContent`.
    `spend` is told the size of each chunk read, before its lines are looked at: a budget it raises
    from holds inside a line too (one line of gigabytes, or one that a writer keeps growing).
    """

    def __init__(
        self, fd: int, stop: StopFlag, keep: int, limit: int | None = None, spend: Callable[[int], None] | None = None
    ) -> None:
        self._fd = fd
        self._stop = stop
        self._keep = keep
        self._limit = limit
        self._spend = spend
        self.last: int | None = None
        self.total = 0

    def _chunks(self) -> Iterator[bytes]:
        for chunk in chunks(self._fd, self._stop, self._limit):
            if self._spend is not None:
                self._spend(len(chunk))
            if b"\0" in chunk:
                raise BinaryContent
            yield chunk

    def _wanted(self, number: int, first: int) -> bool:
        return number >= first and (self.last is None or number <= self.last)

    def _whole(self, number: int, data: bytes) -> Line:
        body = data.decode("utf-8", errors="replace")
        cr = body.endswith("\r")
        if cr:
            body = body[:-1]
        return Line(number, body[: self._keep], len(body), cr, True)

    def lines(self, first: int = 1, last: int | None = None) -> Iterator[Line]:
        self.last = last
        number = 1
        pending = _LongLine(self._keep)
        last_byte = b"\n"
        for chunk in self._chunks():
            last_byte = chunk[-1:]
            pos = 0
            size = len(chunk)
            while pos < size:
                if not self._wanted(number, first):
                    newlines = chunk.count(b"\n", pos)
                    before = first - number
                    if number >= first or newlines < before:
                        number += newlines
                        break
                    for _ in range(before):
                        pos = chunk.index(b"\n", pos) + 1
                    number = first
                    continue
                end = chunk.find(b"\n", pos)
                if end < 0:
                    pending.feed(chunk[pos:])
                    break
                if pending.started:
                    pending.feed(chunk[pos:end])
                    line = pending.finish(number, ended=True)
                    pending = _LongLine(self._keep)
                else:
                    line = self._whole(number, chunk[pos:end])
                pos = end + 1
                number += 1
                yield line
        if pending.started and self._wanted(number, first):
            yield pending.finish(number, ended=False)
        self.total = number - 1 + (last_byte != b"\n")
