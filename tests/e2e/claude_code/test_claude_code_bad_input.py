"""Bad input for the claude-code backend, as an outside suite would feed it: a binary that cannot run or
prints garbage, a CLI killed mid-run, a provider that fails in ways the other test files leave out (400, 403,
404, a 500 that stays, an empty answer), a session file that is damaged, a run left early, bad parameters.
Each ends as a typed error (or a clean `cancelled`) saying what happened, with no process left behind and no
session file deleted or rewritten. The real pinned `claude` runs against FakeAnthropic; a shell script stands
in for it only for what it cannot be made to do (tests/e2e/bad_binaries.py)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.bad_binaries import (
    BROKEN,
    GARBAGE_LINES,
    SLOW,
    broken_binary,
    leave_at_first_text,
    script_binary,
    the_error,
)
from tests.e2e.claude_code.claude_code_helpers import Processes, alive, claude_home, run_claude
from unified import execute, execute_sync
from unified._execute import EventStream
from unified.errors import ConfigurationError
from unified.events import Result, SessionStarted, TextDelta, UnifiedEvent, WarningEvent
from unified.testing import FakeAnthropic, Fault, ModelTurn
from unified.testing._wiring import backend_options_for
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

VERSION = "2.1.332 (Claude Code)"


def session_file(session_id: str | None) -> Path:
    assert session_id is not None
    [path] = (claude_home() / ".claude" / "projects").glob(f"*/{session_id}.jsonl")
    return path


@pytest.mark.parametrize("kind", list(BROKEN))
async def test_a_binary_that_cannot_run_is_backend_unavailable_saying_what_is_wrong(
    workspace: Path, tmp_path: Path, kind: str
) -> None:
    """Was broken for a directory and a file without its `x` bit: "could not run ... --version: Permission
    denied", which names neither."""
    binary = broken_binary(tmp_path / "bin", "claude", kind)
    async with FakeAnthropic([ModelTurn(text="never")]) as server:
        events = await run_claude(server, workspace, options={"claude_binary": binary})
        assert server.requests == []
    error = the_error(events)
    assert (error.code, error.fatal) == ("backend_unavailable", True)
    assert str(binary) in error.message
    assert BROKEN[kind] in error.message
    assert "unified install claude-code" in error.message  # what to do


async def test_a_binary_that_prints_garbage_and_exits_0_is_a_backend_error_after_warnings(
    workspace: Path, tmp_path: Path
) -> None:
    binary = script_binary(tmp_path / "bin", "claude", VERSION, GARBAGE_LINES + "exit 0\n")
    async with FakeAnthropic([ModelTurn(text="never")]) as server:
        events = await run_claude(server, workspace, options={"claude_binary": binary})
    malformed = [e for e in events if isinstance(e, WarningEvent) and e.code == "malformed_line"]
    assert len(malformed) == 4  # no JSON, not UTF-8, no object, over the cap; the wrong-shape object is read past
    assert any("over the" in w.message and "cap" in w.message for w in malformed)
    error = the_error(events)
    assert error.code == "backend_error"
    assert "exited with code 0 before it answered initialize" in error.message
    assert "unified doctor" in error.message


async def test_a_binary_that_exits_0_at_once_without_a_result_is_a_backend_error(
    workspace: Path, tmp_path: Path
) -> None:
    binary = script_binary(tmp_path / "bin", "claude", VERSION, "exit 0\n")
    async with FakeAnthropic([ModelTurn(text="never")]) as server:
        events = await run_claude(server, workspace, options={"claude_binary": binary})
    error = the_error(events)
    assert error.code == "backend_error"
    assert "exited with code 0" in error.message


async def test_a_cli_killed_mid_stream_is_a_backend_error_and_its_session_resumes(workspace: Path) -> None:
    processes = Processes()

    async def kill_at_first_text(event: UnifiedEvent, stream: EventStream) -> None:
        if isinstance(event, TextDelta) and alive(processes.pids[-1]):
            os.kill(processes.pids[-1], signal.SIGKILL)

    async with FakeAnthropic([SLOW, ModelTurn(text="Resumed.")]) as server:
        events = await run_claude(server, workspace, options={"start_process": processes}, on_event=kill_at_first_text)
        error = the_error(events)
        started = next(e for e in events if isinstance(e, SessionStarted))
        again = await run_claude(server, workspace, "Go on.", resume=started.short_id)
    assert error.code == "backend_error"
    assert "killed by signal 9" in error.message
    assert not any(alive(pid) for pid in processes.pids)
    last = again[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Resumed.")


@pytest.mark.parametrize(
    ("fault", "code", "retryable"),
    [
        ("bad_request", "bad_request", False),
        ("permission_denied", "auth_error", False),
        ("not_found", "model_not_found", False),
        ("server_error", "backend_error", True),
    ],
)
async def test_a_provider_error_that_stays_is_typed(workspace: Path, fault: str, code: str, retryable: bool) -> None:
    failing = Fault(kind=fault)
    async with FakeAnthropic([ModelTurn(text="Never sent.")]) as server:
        for index in range(8):
            server.inject(failing, at_request=index)
        events = await run_claude(server, workspace)
    error = the_error(events)
    assert (error.code, error.retryable, error.fatal) == (code, retryable, True), error.message


@pytest.mark.parametrize(
    ("kind", "code", "said"),
    [
        ("cut_stream", "stream_interrupted", "Connection dropped"),
        ("no_finish", "stream_interrupted", "Connection lost mid-response"),
        ("mid_stream_error", "backend_error", "529"),
    ],
)
async def test_a_stream_that_breaks_on_every_attempt_is_a_retryable_typed_error(
    workspace: Path, kind: str, code: str, said: str
) -> None:
    broken = ModelTurn(text="Hello there, my friend.", text_chunks=4, fault=Fault(kind=kind, after=3))
    async with FakeAnthropic([broken] * 8) as server:
        events = await run_claude(server, workspace)
    error = the_error(events)
    assert (error.code, error.retryable, error.fatal) == (code, True, True), error.message
    assert said in error.message


async def test_an_empty_answer_from_the_provider_is_a_retryable_stream_error_saying_so(workspace: Path) -> None:
    """Was `backend_error` (not retryable) "the claude CLI failed: [ede_diagnostic] result_type=assistant
    last_content_type=none stop_reason=null": the CLI's diagnostic, not what happened."""
    empty = ModelTurn(text="never", fault=Fault(kind="empty_stream"))
    async with FakeAnthropic([empty] * 4) as server:
        events = await run_claude(server, workspace)
    error = the_error(events)
    assert (error.code, error.retryable) == ("stream_interrupted", True), error.message
    assert "no content" in error.message
    assert "run again" in error.message  # the hint


async def test_an_unknown_short_id_is_session_not_found_before_any_request(workspace: Path) -> None:
    async with FakeAnthropic([ModelTurn(text="never")]) as server:
        events = await run_claude(server, workspace, resume="deadbeef")
        assert server.requests == []
    error = the_error(events)
    assert error.code == "session_not_found"
    assert "'deadbeef'" in error.message


async def test_a_truncated_session_file_resumes_from_what_is_left_and_keeps_its_bytes(workspace: Path) -> None:
    async with FakeAnthropic([ModelTurn(text="First."), ModelTurn(text="Second.")]) as server:
        started = next(e for e in await run_claude(server, workspace, "One.") if isinstance(e, SessionStarted))
        path = session_file(started.session_id)
        data = path.read_bytes()
        cut = data[: len(data) * 2 // 3]  # inside a line: the file ends without its newline
        assert not cut.endswith(b"\n")
        path.write_bytes(cut)
        events = await run_claude(server, workspace, "Two.", resume=started.short_id)
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Second.")
    assert path.read_bytes().startswith(cut + b"\n"), "the CLI appends after a newline; nothing before is rewritten"


async def test_a_session_file_of_garbage_is_corrupt_session_and_kept_as_it_is(workspace: Path) -> None:
    """The empty file was broken: `session_not_found` "no claude-code session matches ..." (it was hidden as a
    session without a prompt). One session (one CLI start), its file replaced by each garbage in turn."""
    garbage = {"binary": bytes(range(256)) * 40, "zeros": b"\x00" * 4096, "empty": b""}
    async with FakeAnthropic([ModelTurn(text="First."), ModelTurn(text="never")]) as server:
        started = next(e for e in await run_claude(server, workspace, "One.") if isinstance(e, SessionStarted))
        path = session_file(started.session_id)
        for name, content in garbage.items():
            path.write_bytes(content)
            events = await run_claude(server, workspace, "Two.", resume=started.short_id)
            assert len(server.requests_for("messages")) == 1, f"{name}: the resume reached no model"
            error = the_error(events)
            assert error.code == "corrupt_session", (name, error.message)
            assert str(path) in error.message, name
            assert path.read_bytes() == content, name


@pytest.mark.parametrize("how", ["break", "cancel_scope"])
async def test_leaving_a_run_early_leaves_no_process(workspace: Path, how: str) -> None:
    processes = Processes()
    async with FakeAnthropic([SLOW]) as server:
        options = {**backend_options_for(server, "claude-code"), "start_process": processes}
        params = ExecuteParams(prompt="hi", backend="claude-code", cwd=workspace, backend_options=options)
        await leave_at_first_text(params, how)
    assert processes.pids
    assert not any(alive(pid) for pid in processes.pids)


def test_closing_execute_sync_early_leaves_no_process(workspace: Path) -> None:
    """`execute_sync`'s promise: closing its iterator early ends the run's processes before `close()` returns."""
    processes = Processes()
    with FakeAnthropic([SLOW]) as server:
        options = {**backend_options_for(server, "claude-code"), "start_process": processes}
        events = execute_sync(ExecuteParams(prompt="hi", backend="claude-code", cwd=workspace, backend_options=options))
        next(event for event in events if isinstance(event, TextDelta))
        events.close()
    assert processes.pids
    assert not any(alive(pid) for pid in processes.pids)


@pytest.mark.parametrize(
    "options", [{"no_such_option": 1}, {"max_retries": "many"}, {"claude_binary": 5}], ids=["unknown", "type", "path"]
)
async def test_a_bad_backend_option_is_a_configuration_error_naming_it(workspace: Path, options: dict) -> None:  # type: ignore[type-arg]
    async with FakeAnthropic() as server:
        events = await run_claude(server, workspace, options=options)
    error = the_error(events)
    assert error.code == "configuration_error"
    assert next(iter(options)) in error.message


@pytest.mark.parametrize("prompt", ["", "  \n"])
def test_an_empty_prompt_is_refused_before_anything_starts(workspace: Path, prompt: str) -> None:
    with pytest.raises(ConfigurationError, match="the prompt is empty"):
        execute(ExecuteParams(prompt=prompt, backend="claude-code", cwd=workspace))


async def test_mcp_servers_that_do_not_start_are_a_warning_each(workspace: Path) -> None:
    """A stdio command that is not there and an HTTP URL nobody answers: the CLI runs on without their tools
    (its `init` lists both `failed`); the run says so, as on the other backends (`mcp_unavailable`). Before,
    not a word."""
    from unified.types import HttpMcpServer, StdioMcpServer

    servers = (
        StdioMcpServer(name="gone", command="/nonexistent/mcp-server", timeout_s=5),
        HttpMcpServer(name="down", url="http://127.0.0.1:9/mcp", timeout_s=5),
    )
    async with FakeAnthropic([ModelTurn(text="ok")]) as server:
        events = await run_claude(server, workspace, "hi", mcp_servers=servers)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    warned = sorted(e.message for e in events if isinstance(e, WarningEvent) and e.code == "mcp_unavailable")
    assert [m.split(" did not start")[0] for m in warned] == ["MCP server 'down'", "MCP server 'gone'"], warned
