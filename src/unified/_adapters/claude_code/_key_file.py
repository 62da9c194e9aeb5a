"""The private files of a claude run: there while a process may read them, gone after.

Two of what a run gives the CLI must not be in its command line nor its environment, which its Bash
tool's commands and every local user (`ps`, `/proc/<pid>/cmdline`) can read:
- the run's key, printed by the CLI's `apiKeyHelper` (`cat <home>/keys/anthropic-<digest>`,
  `_launch.key_helper`), which the CLI runs at its start and again later (after a 401, when its cache
  of the key expires);
- the caller's MCP servers (`--mcp-config <home>/keys/mcp-<digest>.json`), whose HTTP headers and
  stdio `env` carry the servers' tokens;
- a Bedrock run's AWS keys, printed by the CLI's `awsCredentialExport` (`cat <home>/keys/aws-<digest>.json`,
  `_launch.take_aws_keys`).
The run's system instruction goes the same way (`--system-prompt-file <home>/keys/system-<digest>.md`):
not a secret of the same kind, but the caller's, and a command line holds no argument over 128 KiB.
A file's name depends only on what it holds, so every launch of one key (or one set of servers) and
home has the same command line (a spare started for one run serves the next: `_spares.py`).

Who needs the files holds a lease (`lease`): an open descriptor of each with a shared `flock`, for
as long as its `claude` process may run (taken before the process starts, given back by
`ClaudeConnection.close`/`kill` once the process is gone, a spare's when its pool ends it). The
last to give its lease back removes a file: it takes the lock exclusively without waiting, which
succeeds only when no one else (a run of this process or of another on the same home) holds it.
A process that crashed holds nothing (the kernel drops its locks with its descriptors), so the
files it left are stale: each lease removes the stale files of its folder first (`sweep`).

Safety (`unified._binary.held_files`, shared with gemini-cli's debug log): every step works on the
folder's descriptor opened without following a symlink, opens without following one either, and
removes only regular files of our user named as ours (`anthropic-`, `mcp-`, `aws-` or `system-` and 16 hex digits,
the last three with their suffix) that nobody holds and that are still the file it locked. A FIFO is never waited on
(opened non-blocking). Nothing waits on a lock: a lock held elsewhere for long (a model's command could
`flock` the file) fails the start (`OSError`) instead of hanging the run. On a file system without locks
the files are written and kept, as before leases.
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

__all__ = ["KeyLease", "aws_file", "key_file", "lease", "mcp_file", "system_file"]

_NAME = re.compile(r"(?:anthropic-[0-9a-f]{16}|(?:mcp|aws)-[0-9a-f]{16}\.json|system-[0-9a-f]{16}\.md)\Z")
_ATTEMPTS = 1000
"""Tries at a lock another lease is taking away (it holds it for one `unlink`): then it is not that."""


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def key_file(home: Path, key: str) -> Path:
    """Where the key of `home` lives: `<home>/keys/anthropic-<the first 16 hex digits of its SHA-256>`."""
    return home / "keys" / f"anthropic-{_digest(key.encode())}"


def mcp_file(home: Path, config: bytes) -> Path:
    """Where the MCP config `config` (the `--mcp-config` JSON) lives: `<home>/keys/mcp-<digest>.json`."""
    return home / "keys" / f"mcp-{_digest(config)}.json"


def aws_file(home: Path, credentials: bytes) -> Path:
    """Where the AWS keys `credentials` (the JSON `awsCredentialExport` prints) live: `<home>/keys/aws-<digest>.json`
    (`_launch.take_aws_keys`)."""
    return home / "keys" / f"aws-{_digest(credentials)}.json"


def system_file(home: Path, text: bytes) -> Path:
    """Where the system instruction `text` lives: `<home>/keys/system-<digest>.md`."""
    return home / "keys" / f"system-{_digest(text)}.md"


class KeyLease:
    """A hold on a run's private files (see the module docstring); `release` gives it back, once."""

    def __init__(self, holds: list[tuple[Path, int, bool]]) -> None:
        self._holds = holds
        """(path, descriptor, locked) of each file held, until `release`."""
        self.paths = [path for path, _, _ in holds]
        """The files, in the order leased (the key's first, when the run has a key)."""

    def release(self) -> None:
        """Give the hold back, and remove each file no other lease holds (kept where the file system has
        no locks: another process's run may need it)."""
        holds, self._holds = self._holds, []
        for path, fd, locked in holds:
            let_go(fd, path, remove=locked)

    @property
    def held(self) -> bool:
        return bool(self._holds)


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


def lease(files: list[tuple[Path, bytes]]) -> KeyLease:
    """A hold on each private file `(path, content)` (all in one folder of the home), written (mode 0600,
    folder 0700) if it does not hold its content; the stale files of the folder are removed first. A
    file that cannot be held gives back the holds already taken."""
    holds: list[tuple[Path, int, bool]] = []
    try:
        for path, data in files:
            holds.append(_lease_one(path, data, sweep_first=not holds))
    except BaseException:
        KeyLease(holds).release()
        raise
    return KeyLease(holds)


def _lease_one(path: Path, data: bytes, *, sweep_first: bool) -> tuple[Path, int, bool]:
    dir_fd = open_folder(path.parent)
    try:
        if sweep_first:
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
                return path, fd, held is True
        raise OSError(errno.EWOULDBLOCK, f"the private file {path} is locked by another process")
    finally:
        os.close(dir_fd)
