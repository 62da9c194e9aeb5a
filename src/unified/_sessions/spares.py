"""Spare lock files: how a folder lease (`stores.folder_lease`) takes a lock file without creating one.

A lease's lock file `<shard>/<id>.lock` must be at that path and flocked while the lease is held: that is
what every taker locks, this unified's and an older one's. Creating a file for it and unlinking it while
still open cost an inode's allocation, its orphan record and its freeing (about 0.1 ms of CPU a lease on a
busy ext4, ten times the rest of the lease), and every new codex thread takes one. Instead a process keeps a
spare: a file of its own, `<folder>/.spare-<pid>-<token>`, open, that it flocks first and only then links
at the lock's path (`link`, which never replaces a file there), and unlinks from it at release while still
holding it, before unlocking it for the next lease. The spare keeps its own name, so its inode is never
freed, and a taker that opens the lock's path finds the spare's inode already locked: it cannot get in
between. One holder stays true across processes and layouts:
- a taker that opened the path before a release and locks the inode after it (the race every lock file
  has) is still told apart by its check of the inode at the path, and holds the spare for an instant: the
  next lease's `flock` of that spare then fails, and the spare is dropped for a new one;
- a link that finds a file at the path (another holder, a crashed holder's file, an older unified's) is
  undone by nothing (it made nothing): the lease takes that file the usual way (`stores._take_lock`);
- anything else that fails (a spare's name gone, a file system without links) leaves the lock's path as it
  was, drops the spare, and takes the usual way too.
Since the spare's inode keeps a link after the lock's path is gone, a taker must check the path itself
(`stat`), not the inode's link count.

Bounds: a process has one spare per folder per lease it holds at once (one for a warm codex client), removed
when the process exits; a process that dies leaves its spares, which any process's next new spare removes
once untouched for `STALE_SPARE_SECONDS` (a live process's spare is written at each lease; one removed while
still wanted is replaced, its holder's lease untouched: the lock's path names the inode, not the spare).
A forked child never uses its parent's spares: it shares their open files, so their flocks.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import secrets
import stat
import time

__all__ = ["STALE_SPARE_SECONDS", "Spare", "linked_spare", "put_back"]

STALE_SPARE_SECONDS = 3600.0
"""How long a spare lies untouched before another process's new spare removes it as a dead process's."""

_PREFIX = ".spare-"
"""A spare's name starts so; no session id has a dot (`stores._NAME_CHARS`), so no lock file does either."""


class Spare:
    """One spare lock file: its open descriptor (close-on-exec), its path, and the size of what it holds."""

    __slots__ = ("fd", "path", "size")

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path
        self.size = 0
        """The length of the holder record last written in it (a shorter one truncates the rest)."""


_idle: dict[str, list[Spare]] = {}
"""Per folder, this process's spares that no lease holds. Lists are popped and appended, which the GIL
makes atomic: event loops in several threads share them."""


def linked_spare(folder: str, lock: str) -> Spare | None:
    """A spare of `folder`, flocked and linked at `lock`: held from the moment the path exists. None, with `lock`
    left as it was, when it cannot be: the caller takes `lock` the usual way, which says why, if anything."""
    spare: Spare | None
    try:
        spare = _idle[folder].pop()
    except (KeyError, IndexError):
        spare = _new(folder)
        if spare is None:
            return None
    try:
        fcntl.flock(spare.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # a taker of a path it linked before holds it for an instant (or no flock here)
        _drop(spare)
        return None
    try:
        _link(spare, lock)
    except OSError as exc:
        fcntl.flock(spare.fd, fcntl.LOCK_UN)
        if isinstance(exc, FileExistsError):
            _idle.setdefault(folder, []).append(spare)  # a file at the path: taken the usual way
        else:
            _drop(spare)
        return None
    if not _links_own(spare, lock):
        # The spare's name was swept and something else put there (a file, a link): that is what got linked, an
        # inode nobody holds, so a taker would lock it beside this lease. The path made here is removed.
        with contextlib.suppress(OSError):
            os.unlink(lock)
        _drop(spare)
        return None
    return spare


def _links_own(spare: Spare, lock: str) -> bool:
    """Whether `lock` names the spare's own inode (not a link, not another file put at the spare's name)."""
    try:
        found = os.stat(lock, follow_symlinks=False)
    except OSError:
        return False
    own = os.fstat(spare.fd)
    return (found.st_ino, found.st_dev) == (own.st_ino, own.st_dev)


def _link(spare: Spare, lock: str) -> None:
    """Link the spare at `lock` (never over a file there), making the lock's folder first if it is missing and the
    spare still has its name (else the spare's name is what is missing: another process swept it)."""
    try:
        os.link(spare.path, lock, follow_symlinks=False)
    except FileNotFoundError:
        if not _named(spare):
            raise
        os.makedirs(os.path.dirname(lock), exist_ok=True)
        os.link(spare.path, lock, follow_symlinks=False)


def put_back(folder: str, lock: str, spare: Spare) -> None:
    """Release the lease `spare` holds at `lock`: unlink the path while still holding it, then unlock the spare for
    the next lease. A path that cannot be unlinked (its folder turned read-only) is left, the lease's file from now
    on: the spare is closed (which releases the flock), as a released lock file is, and not used again."""
    try:
        os.unlink(lock)
    except OSError:
        _drop(spare)
        return
    fcntl.flock(spare.fd, fcntl.LOCK_UN)
    _idle.setdefault(folder, []).append(spare)


def _new(folder: str) -> Spare | None:
    """A new spare in `folder` (None if it cannot be made there), after removing the dead processes' spares."""
    path = f"{folder}/{_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(path, flags, 0o600)
    except OSError:
        return None
    _sweep(folder, path)
    return Spare(fd, path)


def _named(spare: Spare) -> bool:
    """Whether the spare's name still names its inode (another process may have swept it)."""
    try:
        found = os.stat(spare.path, follow_symlinks=False)
    except OSError:
        return False
    own = os.fstat(spare.fd)
    return (found.st_ino, found.st_dev) == (own.st_ino, own.st_dev)


def _drop(spare: Spare) -> None:
    """Close a spare for good and remove its name if it is still its own (a swept one may be anything now)."""
    if _named(spare):
        with contextlib.suppress(OSError):
            os.unlink(spare.path)
    os.close(spare.fd)


def _sweep(folder: str, own: str) -> None:
    """Remove the spares in `folder` untouched for `STALE_SPARE_SECONDS`, but `own`: regular files only, never a
    link; a removal that fails is left for a later sweep. A live spare removed here is only a name: its owner's
    next lease finds it gone and makes another."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.startswith(_PREFIX) or entry.path == own:
                continue
            with contextlib.suppress(OSError):
                found = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(found.st_mode) and now - found.st_mtime > STALE_SPARE_SECONDS:
                    os.unlink(entry.path)


def _forget_in_child() -> None:
    """A forked child shares its parent's spares' open files, so their flocks: it makes its own. Their
    descriptors are left open (closing one never releases the parent's lock, but neither is it needed)."""
    _idle.clear()


def _remove_at_exit() -> None:
    """Remove this process's idle spares as it exits (one that dies leaves them to `_sweep`)."""
    for spares in _idle.values():
        while spares:
            _drop(spares.pop())


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(_remove_at_exit)
