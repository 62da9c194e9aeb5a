"""`unified._pgroup.ProcessGroup`: a group reached through its leader's pidfd, or by number only while the
leader is unreaped; each fallback (a kernel without PIDFD_SIGNAL_PROCESS_GROUP, a system without pidfds)
refuses to signal by a number its leader no longer holds."""

from __future__ import annotations

import os
import select
import signal
import subprocess

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import _pgroup
from unified._pgroup import ProcessGroup

pytestmark = pytest.mark.e2e  # real child processes

MODES = ["pidfd-group", "pidfd-only", "no-pidfd"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How this system reaches a group: as the kernel allows (Linux >= 6.9), as before 6.9, as on macOS."""
    if request.param == "pidfd-group" and not _pgroup.group_signal_supported():
        pytest.skip("this kernel has no PIDFD_SIGNAL_PROCESS_GROUP")
    if request.param != "no-pidfd" and not _pgroup.pidfds():
        pytest.skip("no pidfds here")
    if request.param == "pidfd-only":
        monkeypatch.setattr(_pgroup, "_group_flag", False)
    if request.param == "no-pidfd":
        monkeypatch.setattr(_pgroup, "_pidfds", False)
    return str(request.param)


def leader_with_a_member() -> tuple[subprocess.Popen[bytes], int]:
    """A shell leading its own group, and the pid of a `sleep` it left in that group; the shell exits at once."""
    read, write = os.pipe()
    script = f"sleep 600 {write}>&- & echo $! >&{write}"  # the member does not hold the pipe: it ends with the shell
    leader = subprocess.Popen(["bash", "-c", script], start_new_session=True, pass_fds=(write,))
    os.close(write)
    with os.fdopen(read) as told:
        member = int(told.read().split()[0])
    return leader, member


def wait_exited(pid_fd: int) -> None:
    assert select.select([pid_fd], [], [], HANG_GUARD_S)[0], "hang guard: the process is still running"


def test_the_group_is_reached_while_the_leader_is_unreaped(mode: str) -> None:
    leader, member = leader_with_a_member()
    group = ProcessGroup(leader.pid, lambda: leader.returncode is not None)
    watch = os.pidfd_open(member)
    try:
        os.waitid(os.P_PID, leader.pid, os.WEXITED | os.WNOWAIT)  # the leader has exited, not reaped
        assert group.alive() is True
        assert group.signal(signal.SIGKILL)
        wait_exited(watch)  # the member left in the group is killed
    finally:
        os.close(watch)
        group.close()
        leader.wait()


def test_once_the_leader_is_reaped_only_a_pidfd_reaches_the_group(mode: str) -> None:
    leader, member = leader_with_a_member()
    group = ProcessGroup(leader.pid, lambda: leader.returncode is not None)
    watch = os.pidfd_open(member)
    try:
        leader.wait()  # reaped: the member still holds the number, but nothing here says how long
        if mode == "pidfd-group":
            assert group.alive() is True
            assert group.signal(signal.SIGKILL)  # only this group's members: the pidfd names its own leader
            wait_exited(watch)
        else:
            assert group.alive() is None  # cannot be told without going by the number
            assert not group.signal(signal.SIGKILL)  # nothing is sent by a number the leader no longer holds
            assert not select.select([watch], [], [], 0)[0]
    finally:
        signal.pidfd_send_signal(watch, signal.SIGKILL)
        os.close(watch)
        group.close()


def test_a_leader_reaped_before_the_group_was_taken_is_never_signalled() -> None:
    """The event loop's child watcher may reap a quick child before its pidfd is opened: the pid may be a
    stranger's then, and `child_pidfd` (a pidfd checked to be our unreaped child) refuses it."""
    if not _pgroup.pidfds():
        pytest.skip("no pidfds here")
    leader = subprocess.Popen(["true"], start_new_session=True)
    leader.wait()
    group = ProcessGroup(leader.pid, lambda: False)  # told, wrongly, that it is not reaped
    assert group.fd is None
    assert not group.signal(signal.SIGKILL)
    assert _pgroup.child_pidfd(os.getppid()) is None  # alive, but not our child
