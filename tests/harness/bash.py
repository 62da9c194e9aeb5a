"""The real bash, for the shell policy's differential tests: what a command line really does."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from tests.hang_guard import HANG_GUARD_S

__all__ = ["exited_unreaped", "run_bash"]


def run_bash(command: str, cwd: Path, env: Mapping[str, str] | None = None) -> None:
    """`bash -c command` in `cwd`, in a session of its own, its output dropped; whatever it left
    running in its process group (a `&` job) is killed once it ends, and the whole group if it
    outlives the hang guard (a generated form that loops must neither hang the suite nor leave
    processes behind).

    The group is killed before the shell is reaped, never after: until then the shell (or its zombie)
    holds the group's number, which once it is reaped and its jobs are gone may go to a stranger's
    group (pid_max is 32768 here: the differential tests start thousands of shells)."""
    child = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        exited_unreaped(child, HANG_GUARD_S)  # hang guard: each form ends in milliseconds
    finally:
        if child.returncode is None:  # not reaped: the number is still the shell's
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
        child.wait()


def exited_unreaped(child: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait until `child` has exited, up to `timeout`, without reaping it (its zombie keeps its pid and
    its group's number); whether it exited. A pidfd wakes the wait (Linux); elsewhere `waitid(WNOWAIT)` is
    asked every few ms; without `waitid` it is reaped (`Popen.wait`), and its group then no longer killed."""
    if hasattr(os, "pidfd_open"):
        with contextlib.suppress(OSError):
            fd = os.pidfd_open(child.pid)
            try:
                return bool(select.select([fd], [], [], timeout)[0])
            finally:
                os.close(fd)
    if not hasattr(os, "waitid"):
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout)
        return child.returncode is not None
    deadline = time.monotonic() + timeout
    while os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True
