"""Files of ours that live as long as someone holds them: removed by the last holder, swept once stale.

Some files an agent binary needs exist only for the processes that use them (claude-code's key file,
gemini-cli's debug log). Whoever needs one holds an open descriptor of it with an `flock`; the last to
let go removes it, taking the lock exclusively without waiting, which succeeds only when nobody (a run
of this process or of another) holds it. A process that crashed holds nothing (the kernel drops its
locks with its descriptors), so what it left is stale: `sweep` removes such files of a folder.

Safety: every step works on the folder's descriptor, opened without following a symlink; a file is
opened without following one either (and non-blocking: a FIFO in its place is never waited on), and
only a regular file of our user, named as ours, nobody holds, and still the file that was locked is
ever removed. Nothing waits on a lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
from pathlib import Path

from unified._files import make_folder

__all__ = ["FLAGS", "let_go", "open_folder", "remove_if_unheld", "same_file", "sweep"]

FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""How a held file is opened: never through a link, never waiting on a FIFO, never inherited by a child."""


def open_folder(folder: Path) -> int:
    """The descriptor of `folder` (made 0700 if missing, and kept so), opened without following a link."""
    make_folder(folder, 0o700)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    os.fchmod(fd, 0o700)
    return fd


def same_file(st: os.stat_result, name: str, dir_fd: int) -> bool:
    """Whether `name` is still the file `st` describes (not removed, nor replaced, since it was opened)."""
    try:
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def remove_if_unheld(name: str, dir_fd: int) -> bool:
    """Remove `name` if it is a regular file of ours that nobody holds; whether it was removed."""
    try:
        fd = os.open(name, os.O_RDONLY | FLAGS, dir_fd=dir_fd)
    except OSError:
        return False  # gone, a symlink (ELOOP), or not ours to open
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # held: someone needs it
        if not same_file(st, name, dir_fd):
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        return True
    finally:
        os.close(fd)


def sweep(dir_fd: int, pattern: re.Pattern[str], keep: str = "") -> None:
    """Remove the files of the folder named as `pattern` says that nobody holds (left by crashed runs),
    but `keep`."""
    with os.scandir(dir_fd) as entries:
        names = [
            e.name for e in entries if e.name != keep and pattern.match(e.name) and e.is_file(follow_symlinks=False)
        ]
    for name in names:
        remove_if_unheld(name, dir_fd)


def let_go(fd: int, path: Path, *, remove: bool = True) -> None:
    """Close our hold `fd` on `path` (its lock goes with it), then remove the file if nobody else holds it."""
    os.close(fd)
    if not remove:
        return
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        remove_if_unheld(path.name, dir_fd)
    finally:
        os.close(dir_fd)
