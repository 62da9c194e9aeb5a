"""How the real `claude` fails, as typed events: 429 / 529 / 401 with unified's retry semantics, a stalled
stream, a cancellation mid-stream and mid-tool (no process left, checked by pid), a crash."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from tests.e2e.claude_code.claude_code_helpers import Processes, alive, claude_home, entry_written, run_claude
from tests.hang_guard import HANG_GUARD_S
from unified._adapters.claude_code import _run as claude_run
from unified._binary import process as process_module
from unified._execute import EventStream
from unified.events import ErrorEvent, Result, SessionStarted, TextDelta, ToolUse, UnifiedEvent, WarningEvent
from unified.testing import FakeAnthropic, Fault, FunctionCall, ModelTurn

pytestmark = pytest.mark.anyio


def errors(events: list[UnifiedEvent]) -> list[ErrorEvent]:
    return [e for e in events if isinstance(e, ErrorEvent)]


async def test_a_429_is_retried_by_the_cli_and_announced(workspace: Path) -> None:
    turns = [ModelTurn(text="After the retry.", fault=Fault(kind="rate_limit", retry_delay="1s"))]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace)
        assert [r.status for r in server.requests_for("messages")] == [429, 200]
    retries = [e for e in events if isinstance(e, WarningEvent) and e.code == "retrying"]
    assert len(retries) == 1
    assert "HTTP 429" in retries[0].message
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert result.final_text == "After the retry."


async def test_a_429_asking_for_an_hour_ends_the_run_at_once_rate_limited(workspace: Path) -> None:
    turns = [ModelTurn(text="Never sent.", fault=Fault(kind="rate_limit", retry_delay="3600s"))]
    processes = Processes()
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, options={"start_process": processes})
        assert len(server.requests_for("messages")) == 1, "no retry: the wait is beyond max_retry_delay_s"
    [error] = errors(events)
    assert (error.code, error.retryable, error.fatal) == ("rate_limited", True, True)
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
    assert not any(alive(pid) for pid in processes.pids)


async def test_a_529_that_stays_is_a_retryable_backend_error_after_the_capped_retries(workspace: Path) -> None:
    overloaded = Fault(kind="overloaded")
    script = [ModelTurn(text="Never sent.", fault=overloaded)]
    async with FakeAnthropic(script) as server:
        for index in range(1, 4):
            server.inject(overloaded, at_request=index)
        events = await run_claude(server, workspace, options={"max_retries": 1})
        assert [r.status for r in server.requests_for("messages")] == [529, 529]
    [error] = errors(events)
    assert (error.code, error.retryable) == ("backend_error", True)
    assert "529" in error.message


async def test_a_401_is_an_auth_error_at_once(workspace: Path) -> None:
    """The key reaches the CLI through its `apiKeyHelper` (docs/backends/claude-code.md, "Keys and the
    model's commands"): after a 401 the CLI asks the helper again and sends once more at once (measured,
    2.1.332), then its retry of the 401 (like a 429's) is cut short: 3 requests in all."""
    turns = [ModelTurn(text="Never sent.")]
    async with FakeAnthropic(turns) as server:
        for index in range(6):
            server.inject(Fault(kind="unauthenticated"), at_request=index)
        events = await run_claude(server, workspace)
        assert [r.status for r in server.requests_for("messages")] == [401, 401, 401], "the retry is cut short"
    [error] = errors(events)
    assert (error.code, error.retryable) == ("auth_error", False)
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"


async def test_a_stalled_stream_is_interrupted_by_the_watchdog(workspace: Path) -> None:
    turns = [ModelTurn(text="Half an answer, then silence.", text_chunks=4, fault=Fault(kind="stall", after=4))]
    processes = Processes()
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, options={"stall_timeout_s": 2.0, "start_process": processes})
    [error] = errors(events)
    assert (error.code, error.retryable) == ("stream_interrupted", True)
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
    assert not any(alive(pid) for pid in processes.pids)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])  # the cancel on both loops
async def test_cancel_mid_stream_leaves_no_process(workspace: Path) -> None:
    turns = [ModelTurn(text="A slow answer that takes its time.", text_chunks=6, chunk_delay=1.0)]
    processes = Processes()

    async def cancel_at_first_text(event: UnifiedEvent, stream: EventStream) -> None:
        if isinstance(event, TextDelta):
            stream.cancel()

    async with FakeAnthropic(turns) as server:
        events = await run_claude(
            server, workspace, options={"start_process": processes}, on_event=cancel_at_first_text
        )
    assert isinstance(events[-1], Result)
    assert events[-1].status == "cancelled"
    assert len([e for e in events if isinstance(e, TextDelta)]) < 6
    assert processes.pids
    assert not any(alive(pid) for pid in processes.pids)


async def test_a_killed_cold_run_leaves_no_live_process_entry_and_its_session_resumes(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancelled run whose CLI does not answer (stopped here: SIGSTOP, so no interrupt's `result` and no
    exit on SIGTERM) is SIGKILLed by its close, and a killed CLI cannot remove its `sessions/<pid>.json`:
    the run removes it once the process is reaped. Two such runs in a row, one CLI start each: a new
    session's, then its `--resume`d one (whose entry names the resumed session too). The session, written up
    to each kill, still resumes."""
    monkeypatch.setattr(claude_run, "CANCEL_SETTLE_S", 0.1)  # a stopped CLI answers nothing: no need to wait
    monkeypatch.setattr(process_module, "TERM_GRACE_S", 0.1)  # nor exits on SIGTERM
    slow = ModelTurn(text="A slow answer that takes its time.", text_chunks=6, chunk_delay=1.0)
    processes = Processes()
    options = {"start_process": processes}

    async with FakeAnthropic([slow, slow, ModelTurn(text="Resumed.")]) as server:

        async def killed_run(resume: str | None) -> SessionStarted:
            entries: list[Path] = []

            async def stop_and_cancel_at_first_text(event: UnifiedEvent, stream: EventStream) -> None:
                if isinstance(event, TextDelta) and not entries:
                    pid = processes.pids[-1]
                    entries.append(await entry_written(pid))
                    os.kill(pid, signal.SIGSTOP)
                    stream.cancel()

            events = await run_claude(
                server, workspace, options=options, on_event=stop_and_cancel_at_first_text, resume=resume
            )
            killed = processes.started[-1]
            [entry] = entries
            assert isinstance(events[-1], Result)
            assert events[-1].status == "cancelled"
            assert killed.returncode == -signal.SIGKILL, "the close ran out of time and killed it"
            assert not alive(killed.pid or 0)
            assert not entry.exists(), "the killed CLI's live-process entry was removed"
            return next(e for e in events if isinstance(e, SessionStarted))

        started = await killed_run(None)  # a new session's CLI
        again = await killed_run(started.short_id)  # a resumed session's CLI: the killed session resumed
        assert again.resumed
        assert again.session_id == started.session_id
        resumed = await run_claude(server, workspace, "Go on.", options=options, resume=started.short_id)
    last = next(e for e in resumed if isinstance(e, SessionStarted))
    assert last.resumed
    assert last.session_id == started.session_id
    assert isinstance(resumed[-1], Result)
    assert resumed[-1].final_text == "Resumed."
    assert list((claude_home() / ".claude" / "sessions").glob("*.json")) == [], "the resumed CLI ended politely"
    assert not any(alive(pid) for pid in processes.pids)


@pytest.mark.parametrize("ending", ["cancel", "sigkill"])
async def test_a_cancelled_or_killed_run_ends_its_shell_command(workspace: Path, tmp_path: Path, ending: str) -> None:
    """The CLI runs each Bash command in a process group of its own: cancelling must end it too, and so must
    the end of a run whose CLI was SIGKILLed (then the command's shell may be gone before anyone lists the
    CLI's descendants: the command carries the marker of the process that started it, and is ended after it)."""
    fifo = tmp_path / "child.pid"
    os.mkfifo(fifo)
    script = f"import os, time; open({str(fifo)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    command = f"{sys.executable} -c {script!r}"
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="Bash", args={"command": command, "description": "wait"})]),
        ModelTurn(text="Never reached."),
    ]
    processes = Processes()
    child: list[int] = []

    async def end_when_the_child_runs(event: UnifiedEvent, stream: EventStream) -> None:
        if isinstance(event, ToolUse):
            with anyio.fail_after(HANG_GUARD_S):  # the child writes its pid once it runs
                child.append(int(await anyio.to_thread.run_sync(fifo.read_text)))
            assert alive(child[0])
            if ending == "cancel":
                stream.cancel()
            else:
                for pid in processes.pids:
                    os.kill(pid, signal.SIGKILL)

    async with FakeAnthropic(turns) as server:
        events = await run_claude(
            server,
            workspace,
            approval_mode="yolo",
            options={"start_process": processes},
            on_event=end_when_the_child_runs,
        )
    assert isinstance(events[-1], Result)
    if ending == "cancel":
        assert events[-1].status == "cancelled"
        assert not alive(child[0]), "the shell command's process outlived the run"
    else:
        assert events[-1].status == "error"
        assert any(isinstance(e, ErrorEvent) for e in events)
        with anyio.fail_after(HANG_GUARD_S):
            while alive(child[0]):  # noqa: ASYNC110 -- polling /proc: no event tells a non-child's end
                await anyio.sleep(0.05)
    assert not any(alive(pid) for pid in processes.pids)


async def test_a_crash_of_the_cli_is_a_typed_error_with_its_stderr(workspace: Path, tmp_path: Path) -> None:
    fake = tmp_path / "claude"
    fake.write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then echo "2.1.332 (Claude Code)"; exit 0; fi\n'
        "echo 'claude: exploded on start' >&2\nexit 3\n"
    )
    fake.chmod(0o755)
    async with FakeAnthropic([]) as server:
        events = await run_claude(server, workspace, options={"claude_binary": fake})
    [error] = errors(events)
    assert error.code == "backend_error"
    assert "exited with code 3" in error.message
    assert "exploded on start" in error.message
    assert error.details["exit_code"] == 3
