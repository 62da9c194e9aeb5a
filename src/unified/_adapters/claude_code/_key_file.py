"""The key file of claude-code's `apiKeyHelper`: there while a process may read it, gone after.

The CLI gets the run's key by running its `apiKeyHelper` (`cat <home>/keys/anthropic-<digest>`,
`_launch.key_helper`), at its start and again later (after a 401, when its cache of the key
expires). The file's name depends only on the key, so every launch of one key and home has the
same command line (a spare started for one run serves the next: `_spares.py`).

Who needs the file holds a lease (`lease`): an open descriptor of it with a shared `flock`, for
as long as its `claude` process may run (taken before the process starts, given back by
`ClaudeConnection.close`/`kill` once the process is gone, a spare's when its pool ends it). The
last to give its lease back removes the file: it takes the lock exclusively without waiting, which
succeeds only when no one else (a run of this process or of another on the same home) holds it.
A process that crashed holds nothing (the kernel drops its locks with its descriptors), so the
file it left is stale: each lease removes the stale files of its folder first (`sweep`).

Safety (`unified._binary.held_files`, shared with gemini-cli's debug log): every step works on the
folder's descriptor opened without following a symlink, opens without following one either, and
removes only regular files of our user named as ours (`anthropic-` and 16 hex digits) that nobody
holds and that are still the file it locked. A FIFO is never waited on (opened non-blocking).
Nothing waits on a lock: a lock held elsewhere for long (a model's command could `flock` the file)
fails the start (`OSError`) instead of hanging the run. On a file system without locks the file is
written and kept, as before leases.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import re
import stat
from pathlib import Path

from unified._binary.held_files import FLAGS, let_go, open_folder, same_file, sweep

__all__ = ["KeyLease", "key_file", "lease"]

_NAME = re.compile(r"anthropic-[0-9a-f]{16}\Z")
_ATTEMPTS = 1000
"""Tries at a lock another lease is taking away (it holds it for one `unlink`): then it is not that."""


def key_file(home: Path, key: str) -> Path:
    """Where the key of `home` lives: `<home>/keys/anthropic-<the first 16 hex digits of its SHA-256>`."""
    return home / "keys" / f"anthropic-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


class KeyLease:
    """A hold on a key file (see the module docstring); `release` gives it back, once."""

    def __init__(self, path: Path, fd: int, *, locked: bool = True) -> None:
        self.path = path
        self._fd: int | None = fd
        self._locked = locked

    def release(self) -> None:
        """Give the hold back, and remove the file when no other lease holds it (kept where the file
        system has no locks: another process's run may need it)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            let_go(fd, self.path, remove=self._locked)

    @property
    def held(self) -> bool:
        return self._fd is not None


def _hold(fd: int, name: str, dir_fd: int, data: bytes) -> bool | None:
    """Whether the just opened `fd` is now a hold on the key file `name` holding `data`; False to try
    again; None when it holds it without a lock (a file system without `flock`: the file is kept)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        # a FIFO, a device or a stranger's file in its place: never read, replaced
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
        return False
    locked: bool | None = True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return False  # the last lease removing it: once it is gone, a new one
        locked = None  # no locks here (ENOLCK, EOPNOTSUPP): held as before leases, never removed
    if not same_file(st, name, dir_fd):
        return False  # removed between our open and our lock
    os.fchmod(fd, 0o600)
    current = os.pread(fd, len(data) + 1, 0)
    if current != data:
        if not data.startswith(current):  # not the key, nor a part of it another lease is writing
            os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    return locked


def lease(home: Path, key: str) -> KeyLease:
    """A hold on the key file of `key` in `home`, written (mode 0600, folder 0700) if it does not hold
    the key; the stale key files of the folder are removed first."""
    path = key_file(home, key)
    data = key.encode()
    dir_fd = open_folder(path.parent)
    try:
        sweep(dir_fd, _NAME, path.name)
        for _ in range(_ATTEMPTS):
            fd = os.open(path.name, os.O_RDWR | os.O_CREAT | FLAGS, 0o600, dir_fd=dir_fd)
            held: bool | None = False
            try:
                held = _hold(fd, path.name, dir_fd, data)
            finally:
                if held is False:
                    os.close(fd)
            if held is not False:
                return KeyLease(path, fd, locked=held is True)
        raise OSError(errno.EWOULDBLOCK, f"the key file {path} is locked by another process")
    finally:
        os.close(dir_fd)
