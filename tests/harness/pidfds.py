"""Processes a test watches or kills that are not its own children (a shell's, a watchdog), held by pidfd.

A pid or a group number read from a file, an answer or /proc names whoever has it *now*: once that
process has ended (and, for a group, once the group is empty) the system may give the number to a
stranger (pid_max is 32768 here: numbers come round in seconds on a busy machine), and a teardown's
`os.killpg(number, SIGKILL)` or a probe `os.kill(number, 0)` then reaches the stranger. A pidfd names one
process for good: `hold` opens it, then checks (after the open, so the check is about that process) that
it is the one meant; a kill goes through it (the group through its leader's, `PIDFD_SIGNAL_PROCESS_GROUP`,
Linux 6.9) and an end is seen on it (readable at the exit) however the number is reused.

Linux only (the tests that use it read /proc anyway): `hold` skips where there are no pidfds.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._pgroup import PIDFD_SIGNAL_PROCESS_GROUP, pidfds
from unified.tools._watchdog import _carries

__all__ = ["Held", "Holder", "carries", "exited", "in_group", "wait_exited"]


def carries(variable: str, value: str) -> Callable[[int], bool]:
    """A check: the process's environment has `variable=value` (what a runtime's shells carry)."""
    needle = f"{variable}={value}".encode()

    def check(pid: int) -> bool:
        deadline = time.monotonic() + HANG_GUARD_S
        # None while the process is inside execve (its environment not laid out yet: `_watchdog._mid_exec`)
        while (found := _carries(pid, needle)) is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return bool(found)

    return check


def in_group(pgid: int) -> Callable[[int], bool]:
    """A check: the process is a live member of group `pgid`."""

    def check(pid: int) -> bool:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return False
        return fields[0] != "Z" and int(fields[2]) == pgid

    return check


@dataclass
class Held:
    """One process, by pidfd: checked to be the one meant when it was opened."""

    pid: int
    fd: int

    def exited(self) -> bool:
        return exited(self.fd)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self.fd, signal.SIGKILL)

    def kill_group(self) -> None:
        """SIGKILL the group this process leads, through its pidfd: only this very group's members, even
        once the leader is gone. Before Linux 6.9, by number only while the leader still runs (it holds the
        number then; what is left is a leader that ends this very moment)."""
        try:
            signal.pidfd_send_signal(self.fd, signal.SIGKILL, None, PIDFD_SIGNAL_PROCESS_GROUP)
        except ProcessLookupError:
            pass
        except OSError:  # EINVAL: a kernel without the flag
            if not self.exited():
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)


@dataclass
class Holder:
    """The processes a test holds; `release` kills what is left of them (groups whole) and closes the fds."""

    processes: list[Held] = field(default_factory=list)
    groups: list[Held] = field(default_factory=list)

    def hold(self, pid: int, *checks: Callable[[int], bool]) -> Held:
        """A pidfd for `pid`, which must pass every check (made after the pidfd was opened)."""
        if not pidfds():
            pytest.skip("no pidfds here")
        fd = os.pidfd_open(pid)
        held = Held(pid, fd)
        self.processes.append(held)
        failed = [check for check in checks if not check(pid)]
        assert not failed, f"process {pid} is not the one meant (it ended, and its pid went to another)"
        return held

    def hold_if(self, pid: int, *checks: Callable[[int], bool]) -> Held | None:
        """`hold`, or None where `pid` is gone or fails a check (a passing process that ended meanwhile)."""
        if not pidfds():
            pytest.skip("no pidfds here")
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return None
        if not all(check(pid) for check in checks):
            os.close(fd)
            return None
        held = Held(pid, fd)
        self.processes.append(held)
        return held

    def hold_group(self, pgid: int, *checks: Callable[[int], bool]) -> Held:
        """`hold` the leader of group `pgid`, whose group `release` kills whole."""
        held = self.hold(pgid, in_group(pgid), *checks)
        self.groups.append(held)
        return held

    def release(self) -> None:
        for held in self.groups:
            held.kill_group()
        for held in self.processes:
            held.kill()
        for held in self.processes:
            os.close(held.fd)
        self.processes.clear()
        self.groups.clear()


def exited(fd: int) -> bool:
    """Whether the pidfd's process has exited (a zombie has)."""
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


def wait_exited(processes: Iterable[Held], what: str) -> None:
    """Until every one of `processes` has exited, woken by their pidfds; the hang guard only turns a hang
    into a failure."""
    pending = [held for held in processes if not held.exited()]
    deadline = time.monotonic() + HANG_GUARD_S
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"hang guard: {what} still running after {HANG_GUARD_S:g} s: {_describe(pending)}")
        select.select([held.fd for held in pending], [], [], left)
        pending = [held for held in pending if not held.exited()]


def _describe(processes: list[Held]) -> str:
    described = []
    for held in processes:
        try:
            stat = Path(f"/proc/{held.pid}/stat").read_text().strip()
            cmdline = Path(f"/proc/{held.pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError as exc:
            stat, cmdline = f"({exc})", ""
        described.append(f"{held.pid}: {stat} [{cmdline}]")
    return "; ".join(described)
