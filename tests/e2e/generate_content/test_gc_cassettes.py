"""Recorded scenarios replayed offline: the SDK's real requests against cassettes, no server running.

With UNIFIED_RECORD=1 each test starts FakeGemini with its script and re-records its cassette.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.generate_content.gc_harness import FAST, result_of
from unified import execute
from unified.events import ToolResult, UnifiedEvent, WarningEvent
from unified.testing._cassettes import cassette_endpoint, use_cassette
from unified.testing._scenario import Fault, FunctionCall, ModelTurn, Thought, Turn, Usage
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

CASSETTES = Path(__file__).resolve().parents[3] / "cassettes" / "generate-content"


async def replay(
    name: str,
    turns: list[Turn],
    cwd: Path,
    faults: dict[int, Fault] | None = None,
    workspace: dict[str, str] | None = None,
) -> list[UnifiedEvent]:
    """Replay (or record) cassette `name`; `workspace` is written into a recording as the files a replay starts with."""
    events: list[UnifiedEvent] = []
    async with cassette_endpoint(turns, faults) as base_url:
        params = ExecuteParams(
            prompt="what is in a.txt?",
            backend="generate-content",
            model="gemini-3-flash-preview",
            cwd=cwd,
            backend_options={**FAST, "base_url": base_url},
        )
        with use_cassette(CASSETTES, name, metadata={"workspace": workspace} if workspace else None):
            async with execute(params) as stream:
                events = [event async for event in stream]
    return events


async def test_cassette_text(tmp_path: Path) -> None:
    turns: list[Turn] = [ModelTurn(text="Just text.", text_chunks=2, usage=Usage(input_tokens=4, output_tokens=3))]
    result = result_of(await replay("text-turn", turns, tmp_path))
    assert result.status == "success"
    assert result.final_text == "Just text."
    assert result.usage.output_tokens == 3


async def test_cassette_tool_call_with_signatures(tmp_path: Path) -> None:
    workspace = {"a.txt": "alpha\n"}
    (tmp_path / "a.txt").write_text(workspace["a.txt"])
    turns: list[Turn] = [
        ModelTurn(
            thoughts=[Thought(text="**Reading**\n\nread a.txt", signature="sig-thought")],
            function_calls=[FunctionCall(name="read_file", args={"file_path": "a.txt"}, id="c1", signature="sig-call")],
        ),
        ModelTurn(text="It says alpha."),
    ]
    events = await replay("tool-call", turns, tmp_path, workspace=workspace)
    assert any(isinstance(e, ToolResult) and "alpha" in str(e.output) for e in events)
    assert result_of(events).final_text == "It says alpha."


async def test_cassette_rate_limit_retry(tmp_path: Path) -> None:
    turns: list[Turn] = [ModelTurn(text="after the wait")]
    events = await replay("rate-limit-retry", turns, tmp_path, {0: Fault(kind="rate_limit", retry_delay="3s")})
    assert [e.code for e in events if isinstance(e, WarningEvent)] == ["retrying"]
    assert result_of(events).final_text == "after the wait"
