"""Recorded interactions scenarios replayed offline: the SDK's real requests against cassettes, no server.

With UNIFIED_RECORD=1 each test starts FakeGemini with its script and re-records its cassette; the
cassette's header says it was recorded against FakeGemini, not Google.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.interactions.interactions_harness import MODEL, collect, of_type
from unified.testing._cassettes import cassette_endpoint, use_cassette
from unified.testing._scenario import (
    CodeExecutionCall,
    CodeExecutionResult,
    Fault,
    FunctionCallStep,
    InteractionTurn,
    TextStep,
    ThoughtStep,
    Turn,
    Usage,
)
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

CASSETTES = Path(__file__).resolve().parents[3] / "cassettes" / "interactions"


async def replay(
    name: str,
    turns: list[Turn],
    cwd: Path,
    faults: dict[int, Fault] | None = None,
    workspace: dict[str, str] | None = None,
    **options: Any,
) -> list[Any]:
    """Replay (or record) cassette `name`; `workspace` is written into a recording as the files a replay starts with."""
    async with cassette_endpoint(turns, faults) as base_url:
        params = ExecuteParams(
            prompt="what is in notes.txt?",
            backend="interactions",
            model=MODEL,
            cwd=cwd,
            backend_options={"api_key": "test-key", "base_url": base_url, "retry_delay_scale": 0.01, **options},
        )
        with use_cassette(CASSETTES, name, metadata={"workspace": workspace} if workspace else None):
            return await collect(params)


async def test_cassette_text_with_thinking(workspace: Path) -> None:
    turns: list[Turn] = [
        InteractionTurn(
            steps=[ThoughtStep(summary=["Plan."], signature="sig"), TextStep(text="Just text.", chunks=2)],
            usage=Usage(input_tokens=4, output_tokens=3, thinking_tokens=2),
        )
    ]
    events = await replay("text-turn", turns, workspace)
    assert [t.text for t in of_type(events, "thinking")] == ["Plan.", ""]
    result = events[-1]
    assert result.final_text == "Just text."
    assert result.usage.thinking_tokens == 2


async def test_cassette_tool_call(workspace: Path) -> None:
    turns: list[Turn] = [
        InteractionTurn(
            steps=[
                FunctionCallStep(name="read_file", arguments={"file_path": "notes.txt"}, id="c1", arguments_delta=True)
            ]
        ),
        InteractionTurn(steps=[TextStep(text="It says alpha.")]),
    ]
    events = await replay("tool-call", turns, workspace, workspace={"notes.txt": (workspace / "notes.txt").read_text()})
    assert "alpha" in str(of_type(events, "tool_result")[0].output)
    assert events[-1].final_text == "It says alpha."


async def test_cassette_rate_limit_retry(workspace: Path) -> None:
    turns: list[Turn] = [InteractionTurn(steps=[TextStep(text="after the wait")])]
    events = await replay("rate-limit-retry", turns, workspace, {0: Fault(kind="rate_limit", retry_delay="3s")})
    assert [w.code for w in of_type(events, "warning")] == ["retrying"]  # the registry's one retry code
    assert events[-1].final_text == "after the wait"


async def test_cassette_server_tools(workspace: Path) -> None:
    turns: list[Turn] = [
        InteractionTurn(
            steps=[
                CodeExecutionCall(id="x1", code="print(6*7)"),
                CodeExecutionResult(call_id="x1", result="42\n"),
                TextStep(text="42."),
            ]
        )
    ]
    events = await replay("server-tools", turns, workspace, code_execution=True)
    assert [(u.name, u.server_side) for u in of_type(events, "tool_use")] == [("code_execution", True)]
    assert of_type(events, "tool_result")[0].output == "42\n"
