"""Text, thinking and tool calls over the real SDK and real HTTP."""

from __future__ import annotations

import pytest
from gc_harness import Harness, result_of

from unified.events import Result, SessionStarted, TextDelta, Thinking, ToolResult, ToolUse
from unified.testing.scenario import FunctionCall, ModelTurn, Thought, Usage

pytestmark = pytest.mark.anyio


async def test_text_turn(harness: Harness) -> None:
    harness.server.add(
        ModelTurn(text="Hello there, friend.", text_chunks=3, usage=Usage(input_tokens=5, output_tokens=4))
    )
    events = await harness.run("say hello")
    assert isinstance(events[0], SessionStarted)
    assert events[0].backend == "generate-content" and events[0].short_id
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, friend."
    result = result_of(events)
    assert result.status == "success" and result.final_text == "Hello there, friend."
    assert result.usage.input_tokens == 5 and result.usage.output_tokens == 4 and not result.usage.estimated
    assert result.turns == 1
    body = harness.bodies()[0]
    assert body["contents"][0]["parts"][0]["text"] == "say hello"
    harness.server.assert_done()
