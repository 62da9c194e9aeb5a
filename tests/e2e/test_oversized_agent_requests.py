"""A request of an agent binary larger than unified reads (a permission request carrying a 9 MB file the model
wrote: only a hostile or fake server makes one, a real model's output stops far below) is answered at once
with an error, so the binary goes on; before, it waited for that answer until the run's idle timeout. Claude
Code's turn result, which repeats a denied call's input, is read from its first fields. On the real `gemini`
(ACP, JSON-RPC) and `claude` (control protocol) binaries against their fake servers; each fails on the old
code (the idle timeout given here ends it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from unified import execute
from unified.events import ErrorEvent, Result, UnifiedEvent, UserInputResponse, WarningEvent
from unified.testing import FakeAnthropic, FakeGemini, FunctionCall, ModelTurn
from unified.testing._wiring import backend_options_for, prepare_cli_home

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

BIG = "x" * 9_000_000


async def allow(request: object) -> UserInputResponse:
    return UserInputResponse.allow()


async def write_big(backend: str, cwd: Path, options: dict[str, Any]) -> list[UnifiedEvent]:
    """The run of the fake server's script (a call writing BIG, then "done"), every permission allowed; its idle timeout
    (30 s) is what ended it before."""
    params = {"backend_options": {**options, "pool_size": 0}, "on_user_input": allow, "idle_timeout_s": 30}
    return [e async for e in execute(prompt="go", backend=backend, cwd=cwd, **params)]


def ended_promptly(events: list[UnifiedEvent], refused: str) -> Result:
    result = events[-1]
    assert isinstance(result, Result), events
    assert [e.code for e in events if isinstance(e, ErrorEvent)] == [], result.error  # no idle timeout
    assert any(refused in e.message for e in events if isinstance(e, WarningEvent)), events
    return result


@pytest.mark.gemini_cli
async def test_gemini_cli_a_permission_request_over_the_cap_is_refused_and_the_run_goes_on(
    tmp_path: Path, isolated_home: Path
) -> None:
    prepare_cli_home(isolated_home)
    target = tmp_path / "big.txt"
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="write_file", args={"file_path": str(target), "content": BIG})])
    ]
    async with FakeGemini([*turns, ModelTurn(text="done")]) as server:
        options = backend_options_for(server, "gemini-cli", cli_home=isolated_home)
        events = await write_big("gemini-cli", tmp_path, options)
    result = ended_promptly(events, "its session/request_permission request was refused unread")
    assert result.status == "success"
    assert result.final_text == "done"
    assert not target.exists()  # refused, not run


@pytest.mark.claude_code
async def test_claude_code_a_permission_request_and_a_result_over_the_cap_end_the_run_promptly(tmp_path: Path) -> None:
    target = tmp_path / "big.txt"
    turns = [ModelTurn(function_calls=[FunctionCall(name="Write", args={"file_path": str(target), "content": BIG})])]
    async with FakeAnthropic([*turns, ModelTurn(text="done")]) as server:
        events = await write_big("claude-code", tmp_path, backend_options_for(server, "claude-code"))
    result = ended_promptly(events, "its control request was refused unread")
    assert any(
        "read as the turn's result from its first fields" in e.message for e in events if isinstance(e, WarningEvent)
    )
    assert result.status == "success"
    assert result.final_text == "done"
    assert not target.exists()
