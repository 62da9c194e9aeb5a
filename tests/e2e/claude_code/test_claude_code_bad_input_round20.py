"""Bad input round 20, claude-code: a stand-in binary (tests/e2e/bad_binaries.py) that breaks the stream-json
protocol in ways the real CLI cannot be made to. Each ends as a typed error saying what happened, and no process
is left running.

- one that closed its stdout and ran on was said to have "closed its output", read as an exit; now "without
  exiting (it was stopped)", as `jsonrpc.stream_ended` words it for gemini and codex;
- a prompt of 10 MB (over the model's context window: the CLI counts it and sends nothing) was `backend_error`
  "the claude CLI failed: Prompt is too long"; now `bad_request` saying what to do;
- pins: an event cut in the middle and an exit 0; an event with bytes that are no UTF-8 in the middle of a line,
  then silence (a `malformed_line` warning, then the initialize deadline, no hang).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bad_binaries import Started, script_binary, the_error
from tests.e2e.claude_code.claude_code_helpers import run_claude
from unified._adapters.claude_code import _run as claude_run
from unified._adapters.claude_code._launch import start_claude
from unified.events import UnifiedEvent, WarningEvent
from unified.testing import FakeAnthropic, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

VERSION = "2.1.332 (Claude Code)"


async def _run(workspace: Path, tmp_path: Path, body: str) -> tuple[list[UnifiedEvent], Started]:
    started = Started(start_claude, script_binary(tmp_path / "bin", "claude", VERSION, body))
    async with FakeAnthropic([ModelTurn(text="never")]) as server:
        events = await run_claude(server, workspace, options={"start_process": started})
        assert server.requests == []
    return events, started


async def test_a_cli_that_closes_its_stdout_and_runs_on_is_not_said_to_have_exited(
    workspace: Path, tmp_path: Path
) -> None:
    """FAILED before: "the claude CLI closed its output before it answered initialize"."""
    events, started = await _run(workspace, tmp_path, "exec >&-\nexec sleep 600\n")
    error = the_error(events)
    assert error.code == "backend_error"
    assert error.message.startswith(
        "the claude CLI closed its output without exiting (it was stopped) before it answered initialize"
    ), error.message
    assert "unified doctor" in error.message  # what to do
    assert started.still_running() == []


async def test_a_cli_that_cuts_its_first_event_and_exits_0_is_a_backend_error(workspace: Path, tmp_path: Path) -> None:
    """Pin: a typed error naming the exit, no hang, no process left."""
    events, started = await _run(
        workspace, tmp_path, 'printf \'{"type": "system", "subtype": "init", "sess\'\nexit 0\n'
    )
    error = the_error(events)
    assert error.code == "backend_error"
    assert "the claude CLI exited with code 0" in error.message, error.message
    assert started.still_running() == []


async def test_invalid_utf8_in_the_middle_of_an_event_then_silence_is_a_warning_then_the_deadline(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pin: the line is a `malformed_line` warning saying where the bad byte is, the silence after it ends at the
    initialize deadline (set short here) as a typed error, and the CLI is stopped."""
    monkeypatch.setattr(claude_run, "INITIALIZE_TIMEOUT_S", 1.0)
    body = 'printf \'{"type": "system", "x": "\\377\\376"}\\n\'\nexec sleep 600\n'
    events, started = await _run(workspace, tmp_path, body)
    [warning] = [e for e in events if isinstance(e, WarningEvent) and e.code == "malformed_line"]
    assert "not UTF-8 (invalid start byte at byte 25)" in warning.message
    error = the_error(events)
    assert error.code == "backend_error"
    assert "did not answer initialize within 1 s" in error.message
    assert started.still_running() == []


async def test_a_prompt_of_10_mb_is_a_bad_request_saying_what_to_do(workspace: Path) -> None:
    """FAILED before: `backend_error` "the claude CLI failed: Prompt is too long" (no hint; a caller may retry it)."""
    prompt = ("ten megabytes of words " * 500_000)[: 10 << 20]
    async with FakeAnthropic([ModelTurn(text="never")]) as server:
        events = await run_claude(server, workspace, prompt)
        assert server.requests == []  # the CLI counted it: nothing was sent
    error = the_error(events)
    assert (error.code, error.retryable) == ("bad_request", False)
    assert "larger than the model's context window (the claude CLI says 'Prompt is too long')" in error.message
    assert "send a shorter prompt" in error.message
