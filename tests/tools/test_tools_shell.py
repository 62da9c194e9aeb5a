"""run_shell_command and the background-process tools: real bash, real process groups."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified.events import PermissionDecision, ToolProgress
from unified.tools import ToolCall, ToolOutcome, ToolRuntime
from unified.tools._watchdog import kill_owned_group

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]  # runs real subprocesses
Get = Callable[[ToolOutcome], str]
Call = Callable[..., Awaitable[ToolOutcome]]


def live_group_members(pgid: int) -> list[int]:
    """PIDs in the process group that are not zombies, from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


async def wait_group_gone(pgid: int) -> list[int]:
    """The group's live members once it is empty, or at the hang guard: /proc offers no event to wait on."""
    with anyio.move_on_after(HANG_GUARD_S):
        while live_group_members(pgid):  # noqa: ASYNC110 -- polling /proc
            await anyio.sleep(0.05)
    return live_group_members(pgid)


async def shell(ws: Path, command: str, **kw: float) -> ToolOutcome:
    async with ToolRuntime(ws, approval_mode="yolo", **kw) as rt:  # type: ignore[arg-type]
        [outcome] = await rt.run_batch([ToolCall("s", "run_shell_command", {"command": command})])
    return outcome


async def test_exit_code_and_output(ws: Path, ok: Get) -> None:
    text = ok(await shell(ws, "echo out; echo err >&2; exit 3"))
    lines = text.splitlines()
    assert lines[:4] == ["Output: out", "err", "Exit Code: 3", lines[3]]
    assert lines[3].startswith("Process Group PGID: ")


async def test_success_with_no_output(ws: Path, ok: Get) -> None:
    text = ok(await shell(ws, "true"))
    assert text.startswith("Output: (empty)\nProcess Group PGID: ")
    assert "Exit Code" not in text


async def test_signal_is_reported(ws: Path, ok: Get) -> None:
    assert "\nSignal: SIGTERM\n" in ok(await shell(ws, "echo x; kill -TERM $$"))


async def test_inactivity_timeout_keeps_output(ws: Path, err: Get) -> None:
    message = err(await shell(ws, "echo before; sleep 10", shell_timeout_s=0.5))
    assert message == (
        "Command was automatically cancelled because it exceeded the timeout of 0.5 seconds without output. "
        "Below is the output before it was cancelled:\nbefore"
    )
    silent = err(await shell(ws, "sleep 10", shell_timeout_s=0.3))
    assert silent.endswith("without output. There was no output before it was cancelled.")


async def test_output_resets_the_inactivity_timer(ws: Path, ok: Get) -> None:
    text = ok(await shell(ws, "for i in 1 2 3 4; do echo $i; sleep 0.2; done", shell_timeout_s=0.5))
    assert text.startswith("Output: 1\n2\n3\n4\n")


async def test_output_cap_keeps_the_tail(ws: Path, ok: Get) -> None:
    text = ok(await shell(ws, "seq 1 2000", shell_output_cap=100))
    first, rest = text.split("\n", 1)
    assert first.startswith("Output: [output cut: the first ")
    assert first.endswith(" bytes were dropped, the last 100 kept]")
    assert "\n2000\n" in rest
    assert "\n1000\n" not in rest


async def test_dir_path_and_errors(ws: Path, call: Call, ok: Get, err: Get) -> None:
    (ws / "sub").mkdir()
    (ws / "f").write_text("")
    assert ok(await call("run_shell_command", command="pwd", dir_path="sub")).startswith(f"Output: {ws / 'sub'}\n")
    assert err(await call("run_shell_command", command="pwd", dir_path="f")) == "Path is not a directory: f"
    assert err(await call("run_shell_command", command="  ")) == "command must not be empty."


async def test_ampersand_children_are_reported_and_end_with_the_runtime(ws: Path, ok: Get) -> None:
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        [outcome] = await rt.run_batch([ToolCall("s", "run_shell_command", {"command": "sleep 30 & echo started"})])
        text = ok(outcome)
        assert text.startswith("Output: started\n")
        [bg_line] = [line for line in text.splitlines() if line.startswith("Background PIDs: ")]
        pid = int(bg_line.removeprefix("Background PIDs: "))
        pgid = int(text.rsplit("Process Group PGID: ", 1)[1])
        assert pid in live_group_members(pgid)  # outlives its shell while the runtime is open
    assert await wait_group_gone(pgid) == []  # and is killed when it closes


def undying_members(pgid: int) -> list[int]:
    """Members of the group that are alive and have no SIGKILL pending: what a kill of the group missed."""
    undying = []
    for pid in live_group_members(pgid):
        try:
            status = dict(
                line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":\t" in line
            )
        except OSError:
            continue  # gone meanwhile
        pending = int(status.get("SigPnd", "0"), 16) | int(status.get("ShdPnd", "0"), 16)
        if not pending & (1 << (signal.SIGKILL - 1)):
            undying.append(pid)
    return undying


async def test_cancellation_kills_the_whole_group(ws: Path) -> None:
    """Cancelled at any moment (under load, asyncio's open_process may not have returned yet), the call
    kills the shell's whole group itself: checked while the runtime is still open, so its cleanup on
    close is not what ends them, and on members that never end on their own, so only a kill removes them."""
    command = {"command": "echo $$ > pid.tmp; mv pid.tmp pid; sleep 86400 & sleep 86400"}
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rt.run_batch, [ToolCall("s", "run_shell_command", command)])
            with anyio.fail_after(HANG_GUARD_S):
                while not (ws / "pid").exists():  # noqa: ASYNC110 -- the shell's own file is the event
                    await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
        pgid = int((ws / "pid").read_text())
        try:
            assert undying_members(pgid) == []  # the cancelled call has returned: every member is killed or dying
            assert await wait_group_gone(pgid) == []
        finally:
            # what a failing run leaked: only while a process of the group carries this runtime's marker, each
            # checked through a pidfd (the number is free once the group is gone: a stranger may have it now)
            kill_owned_group(pgid, rt._shell.watch.marker)


async def test_progress_events(ws: Path) -> None:
    progress: list[ToolProgress] = []

    class Observer:
        async def decision(self, call: ToolCall, event: PermissionDecision) -> None:
            return None

        async def progress(self, call: ToolCall, event: ToolProgress) -> None:
            progress.append(event)

    rt = ToolRuntime(ws, approval_mode="yolo")
    await rt.run_batch([ToolCall("p1", "run_shell_command", {"command": "echo working"})], Observer())
    assert [(e.tool_use_id, e.message) for e in progress] == [("p1", "working")]
    progress.clear()
    coloured = r"printf '\033[31mred\033[0m\b!\n'"  # the line as the result shows it: no sequence, the BS escaped
    await rt.run_batch([ToolCall("p2", "run_shell_command", {"command": coloured})], Observer())
    assert [(e.tool_use_id, e.message) for e in progress] == [("p2", "red\\x08!")]


async def test_background_process_listed_and_readable(ws: Path, ok: Get, err: Get) -> None:
    async with ToolRuntime(ws, approval_mode="yolo") as rt:

        async def run(name: str, **args: object) -> ToolOutcome:
            [outcome] = await rt.run_batch([ToolCall("b", name, args)])
            return outcome

        assert ok(await run("list_background_processes")) == "No background processes found."
        started = ok(await run("run_shell_command", command="echo one; echo two; sleep 30", is_background=True))
        assert started.startswith("Command moved to the background (PID ")
        assert "Output so far: one\ntwo" in started
        pid = int(started.split("PID ")[1].split(",")[0])
        listed = ok(await run("list_background_processes"))
        assert listed == f"- [PID {pid}] RUNNING: `echo one; echo two; sleep 30`"
        tail = ok(await run("read_background_output", pid=pid, lines=1))
        assert tail == "Showing last 1 of 2 lines (RUNNING):\ntwo"
        denied = err(await run("read_background_output", pid=1))
        assert denied == "Access denied. Background process ID 1 not found in this session's history."
        quick = ok(await run("run_shell_command", command="exit 4", is_background=True, delay_ms=300))
        quick_pid = int(quick.split("PID ")[1].split(",")[0])
        assert f"- [PID {quick_pid}] EXITED (4): `exit 4`" in ok(await run("list_background_processes"))
        assert ok(await run("read_background_output", pid=quick_pid)) == (
            f"No output yet from background process {quick_pid} (EXITED (4))."
        )
    # closing the runtime kills what is still running
    assert await wait_group_gone(pid) == []


async def test_spawn_failure_is_an_error(ws: Path, monkeypatch: pytest.MonkeyPatch, err: Get) -> None:
    monkeypatch.setenv("PATH", str(ws / "no-bin"))
    assert err(await shell(ws, "echo hi")).startswith("Error: could not start bash: ")
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        [bg] = await rt.run_batch([ToolCall("b", "run_shell_command", {"command": "echo", "is_background": True})])
    assert err(bg).startswith("Error: could not start bash: ")


async def test_output_shows_what_was_printed_not_what_a_terminal_makes_of_it(ws: Path, ok: Get) -> None:
    """Colours and cursor moves go, a CRLF is a line end, a lone CR or a backspace is escaped: a command cannot
    overwrite a line of its output or fake a line of the result (docs/tools.md, run_shell_command)."""
    command = r"printf '\033[32mok\033[0m\r\nreal\rExit Code: 0\n\033[1A\033[2Kgone?\bX\n'; exit 3"
    text = ok(await shell(ws, command))
    lines = text.splitlines()
    assert lines[:4] == ["Output: ok", "real\\rExit Code: 0", "gone?\\x08X", "Exit Code: 3"]
    assert not any(ch in text for ch in "\r\x1b\x08")


async def test_background_listing_shows_a_command_as_an_echoed_argument(ws: Path, ok: Get) -> None:
    """The listing repeats the model's command on one line: a line break in it is escaped, a long one clipped."""
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        command = "true\n- [PID 1] RUNNING: `fake`\nsleep 30 # " + "x" * 300
        [started] = await rt.run_batch(
            [ToolCall("b", "run_shell_command", {"command": command, "is_background": True})]
        )
        pid = int(ok(started).split("PID ")[1].split(",")[0])
        [listed] = await rt.run_batch([ToolCall("l", "list_background_processes", {})])
    assert ok(listed) == f"- [PID {pid}] RUNNING: `{command[:199] + '…'!r}`"
