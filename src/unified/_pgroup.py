"""Signal a process group, or a process, without ever reaching a stranger that reuses its number.

A process group's id is its leader's pid. The kernel keeps that number taken while the leader runs or
is an unreaped zombie, or while any member of the group is alive; once the leader has been reaped and
the group is empty, the number is free, and a new process may get it and lead a group of its own
(pid_max is 32768 on many machines: numbers come round quickly). `os.killpg(number, ...)` from then
on signals that stranger's group, and a probe `killpg(number, 0)` says "alive" for it.

So a group is signalled through its leader's pidfd where the kernel can (Linux >= 6.9:
`pidfd_send_signal(..., PIDFD_SIGNAL_PROCESS_GROUP)`): the pidfd names the leader's own `struct pid`,
which a later process with the same number does not share, so only the members of this very group
are reached, before or after the leader was reaped. Elsewhere a group is signalled by number only
while its leader is known to be unreaped (the zombie pins the number): a pidfd says so exactly
(`waitid(P_PIDFD, ..., WNOWAIT)`, Linux >= 5.4); without pidfds (macOS) the caller's own record says
so (it has not reaped the leader: exact when it is the only one to reap it, as with a
`subprocess.Popen` it waits for itself). Once the leader is reaped on such a system the group is
left alone: a caller that must still reach its members finds them another way (the shell tool's
marker; the binary layer's descendants, remembered with their start times).

A single process that is not our child (found in /proc) is signalled through a pidfd opened before
it is checked (`signal_verified`): once the pidfd is open, the process it names cannot change, so a
check that passes is about that process, and a process that ended meanwhile is not signalled at all.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
from collections.abc import Callable

__all__ = [
    "PIDFD_SIGNAL_PROCESS_GROUP",
    "ProcessGroup",
    "child_pidfd",
    "group_signal_supported",
    "pidfd",
    "pidfds",
    "signal_verified",
    "unreaped_child",
]

PIDFD_SIGNAL_PROCESS_GROUP = 4
"""`pidfd_send_signal` flag (linux/pidfd.h, Linux 6.9): signal the process group the pidfd's process leads."""

_group_flag: bool | None = None
"""Whether this kernel takes `PIDFD_SIGNAL_PROCESS_GROUP` (None: not tried yet)."""


def group_signal_supported() -> bool:
    """Whether a group can be signalled through its leader's pidfd here (tries once if not known yet)."""
    if _group_flag is None and pidfds():
        with contextlib.suppress(OSError):
            fd = os.pidfd_open(os.getpid())
            try:
                _send_group(fd, 0)
            finally:
                os.close(fd)
    return bool(_group_flag)


def _send_group(fd: int, sig: int) -> bool:
    """Signal the group `fd`'s process leads: True if sent, False if it has no member left; raises
    NotImplementedError where the kernel has no `PIDFD_SIGNAL_PROCESS_GROUP`."""
    global _group_flag
    if _group_flag is False:
        raise NotImplementedError
    try:
        signal.pidfd_send_signal(fd, sig, None, PIDFD_SIGNAL_PROCESS_GROUP)
    except ProcessLookupError:
        _group_flag = True
        return False
    except PermissionError:
        _group_flag = True
        return False
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        _group_flag = False
        raise NotImplementedError from exc
    _group_flag = True
    return True


_pidfds: bool | None = None


def pidfds() -> bool:
    """Whether this system has pidfds (Linux >= 5.3 with Python >= 3.9); tried once."""
    global _pidfds
    if _pidfds is None:
        _pidfds = False
        if hasattr(os, "pidfd_open"):
            with contextlib.suppress(OSError):
                os.close(os.pidfd_open(os.getpid()))
                _pidfds = True
    return _pidfds


def pidfd(pid: int) -> int | None:
    """A pidfd for the process that has `pid` now; None where there are no pidfds (`pidfds()`). Raises
    ProcessLookupError when there is no such process."""
    if not pidfds():
        return None
    return os.pidfd_open(pid)


def unreaped_child(fd: int) -> bool:
    """Whether the pidfd's process is a child of ours not reaped yet (running, or a zombie)."""
    try:
        os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except OSError:  # ECHILD: reaped, or not our child; EINVAL: a kernel without P_PIDFD
        return False
    return True


def child_pidfd(pid: int) -> int | None:
    """A pidfd for our child `pid` while it is not reaped, None otherwise (or where there are no pidfds).

    Checked after it is opened: if the child was reaped before (by an event loop's child watcher) and its
    number went to someone else, that pidfd names the stranger, who is not our unreaped child."""
    try:
        fd = pidfd(pid)
    except ProcessLookupError:
        return None
    if fd is not None and not unreaped_child(fd):
        os.close(fd)
        return None
    return fd


def signal_verified(pid: int, sig: int, check: Callable[[int], bool], *, group: bool = False) -> bool:
    """Signal process `pid` only if `check(pid)` holds of it, checked after a pidfd for it was opened (so the
    check and the signal are about one process, and one that ended meanwhile is not signalled); with `group`,
    the whole group when it leads one. Whether it was sent.

    Where there are no pidfds: check, then `os.kill`/`os.killpg`. And a group is reached through the pidfd
    only on Linux >= 6.9; before, by number once the leader was seen alive after the check (it pins the
    number while it lives). What is left there is a process that ends between the check and the signal and
    whose number goes round to a stranger in that moment."""
    try:
        fd = pidfd(pid)
    except ProcessLookupError:
        return False
    try:
        if not check(pid):
            return False
        leads = group and os.getpgid(pid) == pid
        if fd is not None and leads:
            with contextlib.suppress(NotImplementedError):
                return _send_group(fd, sig)
        if fd is not None and not leads:
            signal.pidfd_send_signal(fd, sig)
        elif leads:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        if fd is not None:
            os.close(fd)
    return True


class ProcessGroup:
    """The process group our child `leader` leads (started with `start_new_session=True`), signalled so that
    a later group with the same number is never reached (see the module docstring).

    `reaped` tells whether the leader has been reaped (a `Popen`'s `returncode is not None`): where there
    are no pidfds, the group is signalled by number only while it says not. Open right after the start: the
    pidfd is taken then, while the leader cannot have been reaped by anyone (`child_pidfd` checks it)."""

    def __init__(self, leader: int, reaped: Callable[[], bool]) -> None:
        self.leader = leader
        self._reaped = reaped
        self._fd = child_pidfd(leader)

    @property
    def fd(self) -> int | None:
        """The leader's pidfd (None where there are none, or once closed)."""
        return self._fd

    def reaches_by_fd(self) -> bool:
        """Whether the group is signalled through the pidfd (exact even once the leader is reaped)."""
        return self._fd is not None and group_signal_supported()

    def pinned(self) -> bool:
        """Whether the group's number is still the leader's: it is not reaped (a zombie holds its number)."""
        if self._fd is not None:
            return unreaped_child(self._fd) and not self._reaped()
        return not pidfds() and not self._reaped()

    def signal(self, sig: int) -> bool:
        """Send `sig` to every member of this group; whether any was reached. Where this kernel cannot reach a
        group through a pidfd and the leader has been reaped, nothing is sent (False): the number may be
        someone else's."""
        if self._fd is not None:
            with contextlib.suppress(NotImplementedError):
                return _send_group(self._fd, sig)
        if not self.pinned():
            return False
        try:
            os.killpg(self.leader, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def alive(self) -> bool | None:
        """Whether the group has a member left (a zombie counts); None when that cannot be told (the
        leader was reaped and this kernel cannot probe a group through a pidfd)."""
        if self._fd is not None:
            with contextlib.suppress(NotImplementedError):
                return _send_group(self._fd, 0)
        if not self.pinned():
            return None
        return True  # the leader itself is running or a zombie

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()
