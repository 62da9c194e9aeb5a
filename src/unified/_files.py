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
import fnmatch
import io
import os
import secrets
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from unified.errors import BackendUnavailable, ConfigurationError, SessionError

__all__ = [
    "BOM_HINT",
    "FSIZE_FIX",
    "FileTooLarge",
    "NotRegularFile",
    "append_line",
    "current_directory",
    "dangling_link_in_the_way",
    "expand_user",
    "file_in_the_way",
    "folder_entries",
    "make_folder",
    "make_way",
    "not_a_file",
    "open_regular",
    "open_regular_fd",
    "read_regular",
    "read_regular_text",
    "read_regular_texts",
    "starts_with_bom",
    "temporary_beside",
    "unwritable",
    "write_atomically",
]


def expand_user(path: Path | str) -> Path:
    """`path` with `~` and `~user` expanded as a shell expands them, or a ValueError saying whose home is not known:
    pathlib's own is a bare RuntimeError, "Could not determine home directory", which ended `unified` as "a bug in
    unified" (`UNIFIED_DATA_DIR=~nobody/x`, bad input round 26; a `cwd`, round 23)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        head = Path(path).parts[0]
        raise ValueError(f"the home directory of {head!r} is not known here; name the directory without `~`") from None


def _expanded_or_as_is(value: str) -> Path:
    """`value` with `~` expanded, or as it is when its home is not known: what a hint compares, never a failure."""
    try:
        return expand_user(value)
    except ValueError:
        return Path(value)


def current_directory() -> Path:
    """The process's working directory, or a `ConfigurationError` when it no longer exists: a directory deleted (or
    moved away) under a running process makes `os.getcwd()` raise FileNotFoundError, which ended `unified run` as
    "unexpected FileNotFoundError ... (a bug in unified ...)", exit 70, and `ExecuteParams(prompt=...)` with a bare
    FileNotFoundError from deep inside pydantic (bad input round 24)."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        raise ConfigurationError(
            "the current directory no longer exists (it was deleted or moved away while this process was in it)",
            hint="cd into an existing directory and run again, or name the run's directory (cwd, --cwd)",
        ) from None


UNWRITABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM})
"""What a write refused by the machine, not by unified's code, fails with: a full disk or quota, a file size
limit (RLIMIT_FSIZE), a read-only file system, a folder the user may not write."""


FSIZE_FIX = "raise the file size limit this process runs under (`ulimit -f`), or free what made the file so large"
"""What to do about a write refused with EFBIG: the file size limit (RLIMIT_FSIZE) of the process, not its folder."""


class UnmakeableFolder(OSError):
    """A folder no `mkdir` can make: ENOENT once its parents are there (under /proc, as `UNIFIED_DATA_DIR` or
    `XDG_DATA_HOME` at /proc/self/nope makes it; or a parent removed meanwhile). Not a FileNotFoundError, so no
    caller takes it for a file that is simply not there."""

    def __init__(self, folder: Path) -> None:
        super().__init__(errno.ENOENT, "no folder can be made there", str(folder))


def make_folder(folder: Path, mode: int = 0o777) -> None:
    """`folder` and its parents made (kept when there); one that cannot be made raises `UnmakeableFolder`, which
    `unwritable` types: it was the bare FileNotFoundError, which a run of claude-code or codex reported as
    `internal_error`, "a bug in unified"."""
    try:
        folder.mkdir(mode=mode, parents=True, exist_ok=True)
    except FileNotFoundError:
        raise UnmakeableFolder(folder) from None


def _setting_over(folder: Path) -> str | None:
    """The folder setting of the environment (`_FOLDER_SETTINGS`) that `folder` lies under, to name in a hint."""
    for name in _FOLDER_SETTINGS:
        value = os.environ.get(name, "").strip()
        if not value:
            continue
        named = _expanded_or_as_is(value)
        over = (folder, *folder.parents)
        if named.absolute() in over or named.resolve() in over:  # resolved as the folder may be (/proc/self)
            return name
    return None


def unwritable(exc: BaseException, backend: str) -> BackendUnavailable | None:
    """`exc` as the typed error of a backend that cannot write its files here (`UNWRITABLE`, or a file where one
    of its folders goes), naming the file; None for any other failure. A run's files outside the session store (a
    conversation written into an agent CLI's home, its key and settings files, its debug log, unified's cache)
    failed with the bare OSError, which a run reported as `internal_error`, "a bug in unified";
    `backend_unavailable` lets the run fail over to a backend that can."""
    if not isinstance(exc, OSError):
        return None
    details = {"path": str(exc.filename or ""), "errno": exc.errno}
    if exc.errno in (errno.ENOTDIR, errno.EEXIST) and (blocker := file_in_the_way(exc.filename)) is not None:
        return BackendUnavailable(
            f"the {backend} backend cannot make its folder {exc.filename}: {blocker} is a file, not a folder",
            hint=f"{make_way(blocker)}; or let the run fail over to another backend (ExecuteParams.fallback)",
            details=details,
        )
    if isinstance(exc, UnmakeableFolder):
        setting = _setting_over(Path(exc.filename))
        fix = f"point {setting} at a folder that exists or can be made" if setting else "make its parent folder"
        return BackendUnavailable(
            f"the {backend} backend cannot make its folder {exc.filename}: no folder can be made there",
            hint=f"{fix}; or let the run fail over to another backend (ExecuteParams.fallback)",
            details=details,
        )
    if exc.errno not in UNWRITABLE:
        return None
    where = f" ({exc.filename})" if exc.filename else ""
    return BackendUnavailable(
        f"the {backend} backend cannot write its files here{where}: {_why_unwritable(exc)}",
        hint=f"{_unwritable_fix(exc)}; or let the run fail over to another backend (ExecuteParams.fallback)",
        details=details,
    )


def _why_unwritable(exc: OSError) -> str:
    """The machine's reason, said plainly for a full disk (the system's "No space left on device" alone read as
    if the folder were at fault)."""
    said = exc.strerror or str(exc)
    if exc.errno == errno.ENOSPC:
        return f"the disk is full ({said})"
    if exc.errno == errno.EDQUOT:
        return f"this user's disk quota is used up ({said})"
    return said


def _unwritable_fix(exc: OSError) -> str:
    """What to do for each cause of `UNWRITABLE`: one hint for all said "make that folder writable" of a full disk."""
    folder = os.path.dirname(os.fsdecode(exc.filename)) if exc.filename else ""
    on = f" holding {folder}" if folder else ""
    if exc.errno == errno.ENOSPC:
        return f"free space on the file system{on} (`df -h` shows how full it is; old logs, caches and sessions go)"
    if exc.errno == errno.EDQUOT:
        return f"free space under your quota on the file system{on}, or ask for a larger quota"
    if exc.errno == errno.EFBIG:
        return FSIZE_FIX
    if exc.errno == errno.EROFS:
        return f"the file system{on} is read-only: point the backend's home at a writable one"
    return f"make that folder{' ' + folder if folder else ''} writable by this user"


_FOLDER_SETTINGS = (
    "UNIFIED_DATA_DIR",
    "UNIFIED_CODEX_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "GEMINI_CLI_HOME",
    "HOME",
)
"""The environment variables that name the folders unified writes under (`make_way` points at the one to fix)."""


def file_in_the_way(path: str | os.PathLike[str] | None) -> Path | None:
    """The file (anything but a folder) standing at `path` or at one of its parents, where a folder should be: what
    an ENOTDIR ("Not a directory", naming the path being made, not the file) or a mkdir's EEXIST is about. None
    when the nearest existing one is a folder, or `path` is None."""
    found = _nearest(path, os.stat)
    return None if found is None or stat.S_ISDIR(found[1].st_mode) else found[0]


def dangling_link_in_the_way(path: str | os.PathLike[str] | None) -> Path | None:
    """The symbolic link to nothing at `path` or at the nearest of its parents that is there: a store's root given as
    such a link made `mkdir` fail with "File exists" (or a folder under it with "No such file or directory"), and the
    advice was to make the folder writable. None when the nearest one there is no dangling link, or `path` is None."""
    found = _nearest(path, os.lstat)
    if found is None or not stat.S_ISLNK(found[1].st_mode) or os.path.exists(found[0]):
        return None
    return found[0]


def _nearest(
    path: str | os.PathLike[str] | None, look: Callable[[Path], os.stat_result]
) -> tuple[Path, os.stat_result] | None:
    """The nearest of `path` and its parents that `look` (`os.stat`, following links; `os.lstat`, not) finds, with
    what it found; None when none is found or `path` is None."""
    if path is None:
        return None
    target = Path(os.fsdecode(path))
    for candidate in (target, *target.parents):
        try:
            return candidate, look(candidate)
        except OSError:
            continue
    return None


def make_way(blocker: Path) -> str:
    """What to do about a file where a folder goes: move it, or (when a folder setting of the environment names the
    file itself, as `UNIFIED_DATA_DIR=~/notes.txt` or `UNIFIED_SESSION_STORE_URL=file:///etc/passwd` do) point that
    setting at a folder."""
    for name in _FOLDER_SETTINGS:
        value = os.environ.get(name, "").strip()
        if value and _expanded_or_as_is(value).absolute() == blocker.absolute():
            return f"{name} names that file: point {name} at a folder, or move the file away"
    # A file store's URL naming the file (`file:///etc/passwd`): the advice was to move or remove that file.
    url = os.environ.get("UNIFIED_SESSION_STORE_URL", "").strip().rstrip("/")
    if url.replace("file://localhost/", "file:///", 1) == blocker.absolute().as_uri():
        return "UNIFIED_SESSION_STORE_URL names that file: point UNIFIED_SESSION_STORE_URL at a folder (file:///dir)"
    return "move or remove that file"


def folder_entries(folder: Path, backend: str, pattern: str | None = None) -> list[Path]:
    """The entries of a folder of `backend`'s session files (those whose name matches `pattern`, an `fnmatch`
    pattern), sorted by name; [] for one that is not there. One that cannot be read (no permission, an I/O error, a
    file in its place) is a `SessionError` naming it, which a listing of every backend reports as that backend not
    searched: it was the bare OSError (`unified sessions list` ended as "a bug in unified"), or, through `glob`,
    which passes over what it cannot read, "no sessions yet". Names are matched and sorted as text before a path is
    made of each: a short id's lookup among 10,000 sessions made and sorted 10,000 paths (36 ms, 7 ms by glob)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError as exc:
        details = {"path": str(folder), "errno": exc.errno}
        blocker = file_in_the_way(folder) if exc.errno == errno.ENOTDIR else None
        if blocker is not None:
            raise SessionError(
                f"the {backend} session folder {folder} cannot be read: {blocker} is a file, not a folder",
                hint=f"{make_way(blocker)}; no session was changed",
                details=details,
            ) from None
        raise SessionError(
            f"the {backend} session folder {folder} cannot be read: {exc.strerror or exc}",
            hint="make it readable by this user (its owner or permissions), or move it away; no session was changed",
            details=details,
        ) from None
    if pattern is not None:
        names = fnmatch.filter(names, pattern)
    return [folder / name for name in sorted(names)]


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


class FileTooLarge(OSError):
    """A file larger than its reader accepts (`max_bytes`): refused unread. An OSError (errno EFBIG) that reads
    as its reason alone, as a listing's problem quotes it."""

    def __init__(self, path: Path | str, size: int, max_bytes: int) -> None:
        super().__init__(errno.EFBIG, f"{size} bytes, more than unified reads ({max_bytes})", str(path))
        self.size, self.max_bytes = size, max_bytes

    def __str__(self) -> str:
        return str(self.strerror)


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


def not_a_file(path: Path) -> str:
    """Why `path`, which `Path.is_file()` said is no regular file, is none, in words that follow it in a message:
    `is_file()` is False for a FIFO, a socket, a link that loops or leads nowhere and a path it cannot reach, which
    a message that said "no such file" of each sent the reader looking for a file that was there."""
    try:
        status = path.stat()
    except FileNotFoundError:
        if not path.is_symlink():
            return "no such file"
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"is a symbolic link to {target!r}, which does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link that loops (it leads back to itself)"
        return f"cannot be reached ({exc.strerror or exc})"
    return f"is {_kind(status.st_mode)}"


def _open_checked(path: Path | str, flags: int, max_bytes: int | None, mode: int = 0o666) -> tuple[int, os.stat_result]:
    """A descriptor of `path` opened with `flags` without blocking, refused (and closed) unless it is a regular
    file of at most `max_bytes`, then made blocking; with its `fstat`. The one check behind every open here."""
    # O_NONBLOCK: a FIFO without a writer does not block the open; O_NOCTTY: a terminal never becomes ours.
    fd = os.open(path, flags | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, mode)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFile(path, _kind(status.st_mode))
        if max_bytes is not None and status.st_size > max_bytes:
            raise FileTooLarge(path, status.st_size, max_bytes)
        os.set_blocking(fd, True)
        return fd, status
    except BaseException:
        os.close(fd)
        raise


def open_regular(path: Path | str, *, follow_links: bool = True, max_bytes: int | None = None) -> BinaryIO:
    """`path` opened for reading in binary mode, refused with `NotRegularFile` unless it is a regular file
    (links followed, their target checked on the open descriptor, so nothing swapped in after the check
    is read). `follow_links=False`: a link at `path` is refused too (OSError ELOOP), for a reader that must
    read only what is in its own folder. With `max_bytes`, a file larger than that is refused (`FileTooLarge`)
    without reading it. Other failures are the OSError the open raised (FileNotFoundError, ...)."""
    fd, _ = _open_checked(path, os.O_RDONLY if follow_links else os.O_RDONLY | os.O_NOFOLLOW, max_bytes)
    return os.fdopen(fd, "rb")


def open_regular_fd(path: Path | str, flags: int, *, mode: int = 0o600) -> int:
    """A descriptor of `path` opened with `flags` (`os.O_WRONLY | os.O_CREAT`, `os.O_NOFOLLOW`, ... as the
    caller needs; `mode` for a file it creates), checked as `open_regular` checks one: a FIFO or a device is
    refused with `NotRegularFile`, never waited on, read or written."""
    fd, _ = _open_checked(path, flags, None, mode)
    return fd


def read_regular(path: Path | str, *, max_bytes: int | None = None) -> bytes:
    """The whole content of the regular file at `path` (`open_regular`, `max_bytes` as there). With `max_bytes`, at
    most one byte more is read: a file that grows past it while it is read (an agent CLI still appending to it) is
    `FileTooLarge` too, never held whole."""
    with open_regular(path, max_bytes=max_bytes) as handle:
        if max_bytes is None:
            return handle.read()
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(path, len(data), max_bytes)
    return data


def read_regular_text(path: Path | str, encoding: str = "utf-8", *, max_bytes: int | None = None) -> str:
    """The regular file at `path` as text, decoded as `Path.read_text` decodes it (universal newlines); `max_bytes`
    as `read_regular` bounds it."""
    if max_bytes is not None:
        return _text_of(read_regular(path, max_bytes=max_bytes), encoding)
    with open_regular(path) as handle, io.TextIOWrapper(handle, encoding=encoding) as text:
        return text.read()


def read_regular_texts(paths: Iterable[Path], *, max_bytes: int) -> dict[str, str]:
    """The texts of `paths` (as `read_regular_text` reads one) by file name, at most `max_bytes` of them together:
    what an agent CLI's session files become in one session record, bounded as the record is. The file that takes
    them over the bound is `FileTooLarge` (its size, with what was read before it), refused unread when it says so
    itself; they were read whole, however large, and a record over the store's bound refused only after that."""
    texts: dict[str, str] = {}
    used = 0
    for path in paths:
        try:
            data = read_regular(path, max_bytes=max_bytes - used)
        except FileTooLarge as exc:
            raise FileTooLarge(path, used + exc.size, max_bytes) from None
        used += len(data)
        texts[path.name] = _text_of(data, "utf-8")
    return texts


def _text_of(data: bytes, encoding: str) -> str:
    """`data` decoded as `read_regular_text` decodes a file (universal newlines); the bytes are not copied."""
    with io.TextIOWrapper(io.BytesIO(data), encoding=encoding) as text:
        return text.read()


BOM_HINT = (
    'it starts with a byte order mark (an editor saved it as UTF-8 "with BOM"), which the agent CLIs do not read '
    "as JSON either: remove those first three bytes (save it as plain UTF-8); it was left unchanged"
)
"""What to do about a session file an editor saved with a byte order mark (`starts_with_bom`)."""


def starts_with_bom(path: Path | str) -> bool:
    """Whether the regular file at `path` starts with a UTF-8 byte order mark: its first line is then no JSON to
    the agent CLIs (nor to unified), and the file reads as having no header, which says nothing of why."""
    try:
        with open_regular(path) as handle:
            return handle.read(3) == b"\xef\xbb\xbf"
    except OSError:
        return False


def temporary_beside(path: Path) -> Path:
    """A name to write `path` through before the rename: hidden, beside it, this process's and this call's."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def write_atomically(
    path: Path, data: str | bytes, *, mode: int | None = None, sync: bool = False, parents: bool = False
) -> os.stat_result:
    """Replace `path` with `data` (text as UTF-8); the written file's status (a rename keeps its inode,
    size and modification time: what it is at `path` until someone else writes there).

    `mode`: its exact permission bits. The temporary file is created with them (the umask may only take
    bits away), so a secret is never readable by others, not even through the temporary before the
    rename; without `mode`, 0666 less the umask, as a plain create. `sync`: fsynced before the rename
    (a power loss leaves the old file or the new one whole). `parents`: the directory is made when it
    is missing (only then: no `mkdir` before every write). The create never follows a link and never
    opens an existing file (`O_EXCL`): whatever waits at the temporary's name is not written through."""
    temporary = temporary_beside(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    create_mode = 0o666 if mode is None else mode & 0o777
    try:
        fd = os.open(temporary, flags, create_mode)
    except FileNotFoundError:
        if not parents:
            raise
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temporary, flags, create_mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
            status = os.fstat(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        raise
    return status


def append_line(path: Path | str, line: bytes) -> None:
    """Append `line` (ending in a newline) to the regular file at `path` on a line of its own: a newline
    first when the file does not end in one. One descriptor, checked as `open_regular` checks it: a FIFO
    or a device swapped in is refused with `NotRegularFile`, never waited on or written to."""
    fd, status = _open_checked(path, os.O_RDWR | os.O_APPEND, None)
    try:
        ends_open = status.st_size > 0 and os.pread(fd, 1, status.st_size - 1) != b"\n"
        data = (b"\n" if ends_open else b"") + line
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)
