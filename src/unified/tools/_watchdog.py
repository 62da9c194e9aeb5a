"""Kill a tool runtime's shell process groups when its host process dies, even by `kill -9`.

`PR_SET_PDEATHSIG` reaches only a direct child, not the process group a shell command leads (and
not `cmd &` children that outlive their shell), so a small helper does it instead. The host starts
one per tool runtime, lazily on its first shell call, and keeps the write end of a pipe to it. The
host writes `+ <pgid>` when it starts a shell and `- <pgid>` once the group is gone; when the pipe
reaches end of file (the host died, or the runtime closed) the helper SIGKILLs every group it still
knows and exits. It detaches from the host at once, so the host never has to reap it.

A group is killed only if one of its processes carries the runtime's marker (`OWNER_VARIABLE` in its
environment): a group whose number the system handed to someone else since is left alone. A
process that leaves its group (`setsid`) or replaces its environment escapes; the shell is not a
sandbox.

This file runs as a script (`python -I -S _watchdog.py <marker>`), so it imports only the standard
library.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

__all__ = ["OWNER_VARIABLE", "group_members", "kill_owned_group", "main", "owned_by"]

OWNER_VARIABLE = "UNIFIED_SHELL_OWNER"
"""Set in every shell a runtime starts; its value names the runtime (a random token)."""


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid`, from /proc (empty where there is no /proc)."""
    members: list[int] = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                stat = Path(entry.path, "stat").read_bytes()
            except OSError:
                continue
            fields = stat.rsplit(b")", 1)[1].split()
            if fields[0] != b"Z" and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def owned_by(pgid: int, marker: str) -> bool:
    """Whether a process of group `pgid` was started by the runtime `marker` names.

    Without /proc (not Linux) nothing can be checked, and the group is taken to be the runtime's.
    """
    if not os.path.isdir("/proc/self"):
        return True
    needle = f"{OWNER_VARIABLE}={marker}".encode()
    for pid in group_members(pgid):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            return True
    return False


def kill_owned_group(pgid: int, marker: str) -> None:
    """SIGKILL process group `pgid` if it is still the runtime's."""
    if owned_by(pgid, marker):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


def main(marker: str) -> None:
    if os.fork() > 0:
        os._exit(0)  # the host reaps this parent at once; the helper below is never its zombie
    os.chdir("/")  # hold no directory of the host's busy
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        op, _, pgid = line.decode("ascii", "replace").strip().partition(" ")
        if not pgid.isdigit():
            continue
        if op == "+":
            groups.add(int(pgid))
        elif op == "-":
            groups.discard(int(pgid))
    for pgid in groups:
        kill_owned_group(pgid, marker)


if __name__ == "__main__":
    main(sys.argv[1])
