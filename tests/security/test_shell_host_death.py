"""A shell tool's process groups die with their host, even when the host is killed with SIGKILL.

Real processes throughout: a child Python process hosts a ToolRuntime, starts shell commands that
would run for ten minutes (in the foreground with a `&` child, and in the background), and is
SIGKILLed mid-call; every process of those groups must be gone, and the watchdog with them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from unified.tools import ToolCall, ToolRuntime
from unified.tools._watchdog import OWNER_VARIABLE, group_members, kill_owned_group

pytestmark = pytest.mark.e2e  # runs real subprocesses
HANG_GUARD_S = 60.0
"""Far above the fraction of a second each wait takes: only a hang trips it."""

HOST = """
import sys
from pathlib import Path

import anyio

from unified.tools import ToolCall, ToolRuntime

async def main() -> None:
    ws = Path(sys.argv[1])
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        (ws / "marker").write_text(rt._shell.watch.marker)
        background = {"command": "sleep 600", "is_background": True, "delay_ms": 0}
        [started] = await rt.run_batch([ToolCall("b", "run_shell_command", background)])
        pgid = str(started.response["output"]).split("Process Group PGID: ")[1].split()[0]
        (ws / "watchdog.pid").write_text(str(rt._shell.watch.watchdog_pid))
        (ws / "bg.pgid").write_text(pgid)
        foreground = {"command": "sleep 600 & echo $$ $! > fg.tmp; mv fg.tmp fg.pids; sleep 600"}
        await rt.run_batch([ToolCall("f", "run_shell_command", foreground)])


anyio.run(main, backend=sys.argv[2])
"""


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"hang guard: still waiting for {what} after {HANG_GUARD_S:g} s")
        time.sleep(0.02)


def running(pid: int | None) -> bool:
    """Whether `pid` is a live process (a zombie is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Groups a failed test might leave running: killed at the end whatever happened."""
    groups: list[int] = []
    yield groups
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_killing_the_host_kills_every_group_it_started(ws: Path, backend: str, leftovers: list[int]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    host = subprocess.Popen([sys.executable, "-c", HOST, str(ws), backend], env=env, cwd=ws)
    try:
        wait_for(lambda: (ws / "fg.pids").exists() and (ws / "bg.pgid").exists(), "both shells to start")
        fg_pgid, child = (int(pid) for pid in (ws / "fg.pids").read_text().split())
        groups = [fg_pgid, int((ws / "bg.pgid").read_text())]
        leftovers.extend(groups)
        marker = (ws / "marker").read_text()
        assert {fg_pgid, child} <= set(group_members(fg_pgid))  # the shell and its `&` child
        assert group_members(groups[1])
        watchdog = int((ws / "watchdog.pid").read_text())
        assert running(watchdog)
        named = (Path(f"/proc/{watchdog}/cmdline").read_bytes(), Path(f"/proc/{watchdog}/environ").read_bytes())
        assert all(marker.encode() not in part for part in named)  # nothing names the runtime it serves
    finally:
        host.kill()  # SIGKILL: no finally, no atexit, no finalizer of the host runs
        host.wait()
    for pgid in groups:
        wait_for(lambda pgid=pgid: not group_members(pgid), f"process group {pgid} to die")  # type: ignore[misc]
    wait_for(lambda: not running(watchdog), f"the watchdog {watchdog} to exit")


@pytest.mark.anyio
async def test_closing_the_runtime_ends_the_watchdog_and_the_groups(ws: Path, leftovers: list[int]) -> None:
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        [outcome] = await rt.run_batch([ToolCall("s", "run_shell_command", {"command": "sleep 600 & echo $!"})])
        pgid = int(str(outcome.response["output"]).split("Process Group PGID: ")[1])
        leftovers.append(pgid)
        watchdog = rt._shell.watch.watchdog_pid
        assert running(watchdog)
        assert group_members(pgid)
    assert group_members(pgid) == []
    wait_for(lambda: not running(watchdog), "the watchdog to exit")


@pytest.mark.anyio
async def test_a_killed_watchdog_is_replaced(ws: Path, leftovers: list[int]) -> None:
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        await rt.run_batch([ToolCall("s", "run_shell_command", {"command": "true"})])
        first = rt._shell.watch.watchdog_pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        wait_for(lambda: not running(first), "the watchdog to die")
        [outcome] = await rt.run_batch([ToolCall("s", "run_shell_command", {"command": "sleep 600 & echo $!"})])
        leftovers.append(int(str(outcome.response["output"]).split("Process Group PGID: ")[1]))
        second = rt._shell.watch.watchdog_pid
        assert second != first
        assert running(second)


def test_a_group_that_is_not_the_runtimes_is_never_killed(leftovers: list[int]) -> None:
    """A group number the system gave to someone else since (no marker in its environment) survives."""
    stranger = subprocess.Popen(["sleep", "600"], start_new_session=True)
    ours = subprocess.Popen(["sleep", "600"], start_new_session=True, env={**os.environ, OWNER_VARIABLE: "m1"})
    leftovers.extend([stranger.pid, ours.pid])
    try:
        kill_owned_group(stranger.pid, "m1")
        kill_owned_group(ours.pid, "other-runtime")
        assert stranger.poll() is None
        assert ours.poll() is None
        kill_owned_group(ours.pid, "m1")
        assert ours.wait(timeout=HANG_GUARD_S) == -signal.SIGKILL
    finally:
        stranger.kill()
        ours.kill()
        stranger.wait()
        ours.wait()
