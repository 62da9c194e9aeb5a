"""`max_turns` across the backends that honour it: a model that would call a tool for ever, capped at 2.

The run ends `max_turns` after exactly 2 model requests (counted at the fake server), leaves no process and
its session resumes. Every column honours it (each backend's docs say how).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.claude_code.claude_code_helpers import Processes, alive
from tests.e2e.conformance.conformance_harness import COLUMNS, Column, execute_once
from tests.e2e.conformance.test_conformance import binary_ready
from unified.events import ErrorEvent, Result, SessionStarted, ToolUse, UnifiedEvent
from unified.testing import Fault, FunctionCall, ModelTurn, RecordedTurn, Turn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CAPPED = list(COLUMNS)
MODEL_METHODS = ("generateContentStream", "generateContent", "interactions.create", "messages", "responses")


def _read(column: Column, call_id: str) -> ModelTurn:
    name = column.tools.get("read_file", "read_file")
    return ModelTurn(function_calls=[FunctionCall(name=name, args={"file_path": "notes.txt"}, id=call_id)])


def _result(events: list[UnifiedEvent]) -> Result:
    last = events[-1]
    assert isinstance(last, Result), [e.type for e in events]
    return last


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("column", CAPPED, ids=[c.name for c in CAPPED])
async def test_max_turns_stops_a_model_that_calls_tools_for_ever_after_that_many_requests(
    column: Column, workspace: Path, request: pytest.FixtureRequest
) -> None:
    if column.needs_cli:
        request.getfixturevalue("claude_ready" if column.backend == "claude-code" else "cli_ready")
    binary_ready(column)
    started = Processes()
    options: dict[str, Any] = {"start_process": started, "pool_size": 0} if column.backend == "claude-code" else {}
    # Two scripted calls, then the answer the resume gets: a run the cap did not stop would take it as its third.
    capped_turn: Turn = column.adapt(_read(column, "c2"))
    if column.name == "gemini-cli/stream-json":
        # Headless, the CLI runs a request's calls once its stream has ended and then sends the next request: no gate
        # holds it there, so unified's kill at the first call it announces races the CLI's next request (the
        # `_stream_json` module docstring; 3 of 24 runs lost it, six at once on two cores). Here the capped request's
        # stream stays open after its call, as a model still streaming would: the test pins the cap's own path, not
        # which process the scheduler runs first.
        call = {"functionCall": {"name": "read_file", "args": {"file_path": "notes.txt"}, "id": "c2"}}
        chunks = [
            {"candidates": [{"content": {"role": "model", "parts": [call]}, "index": 0}]},
            {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]},
        ]
        capped_turn = RecordedTurn(method="generateContentStream", response=chunks, fault=Fault(kind="stall", after=1))
    turns = [column.adapt(_read(column, "c1")), capped_turn, ModelTurn(text="Resumed.")]
    async with column.server(turns) as server:
        events = await execute_once(
            column,
            server,
            workspace,
            prompt="Read notes.txt for ever.",
            approval_mode="yolo",
            max_turns=2,
            options=options,
        )
        capped = [r for r in server.requests if r.api_method in MODEL_METHODS]
        result = _result(events)
        assert (result.status, len(capped)) == ("max_turns", 2), [e.type for e in events if isinstance(e, ErrorEvent)]
        assert len([e for e in events if isinstance(e, ToolUse)]) == 2
        assert not [pid for pid in started.pids if alive(pid)]
        session = next(e for e in events if isinstance(e, SessionStarted))
        again = await execute_once(column, server, workspace, prompt="Go on.", resume=session.short_id, options=options)
        assert (_result(again).status, _result(again).final_text) == ("success", "Resumed.")
        assert len([r for r in server.requests if r.api_method in MODEL_METHODS]) == 3
        assert not server.problems
