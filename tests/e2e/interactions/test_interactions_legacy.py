"""The deprecated event dialect (interaction.start, content.*, interaction.complete) through the real SDK.

FakeGemini streams the turns with `dialect="legacy"` over real HTTP: the SDK parses the SSE bytes and
hands the old events over as `UnknownInteractionSSEEvent(raw=...)`; nothing is monkeypatched.
"""

from __future__ import annotations

import pytest

from tests.e2e.interactions.interactions_harness import Params, collect, of_type
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import FunctionCallStep, InteractionTurn, TextStep, ThoughtStep, Usage

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

LEGACY_CALL = InteractionTurn(
    id="old-1",
    dialect="legacy",
    steps=[
        ThoughtStep(summary=["Look."]),
        FunctionCallStep(name="read_file", arguments={"file_path": "notes.txt"}, id="c1"),
    ],
)
LEGACY_TEXT = InteractionTurn(
    id="old-2",
    dialect="legacy",
    steps=[TextStep(text="It says alpha.", chunks=2)],
    usage=Usage(input_tokens=9, output_tokens=3),
)


async def test_legacy_stream_runs_a_tool_loop(fake: FakeGemini, params: Params) -> None:
    fake.add(LEGACY_CALL, LEGACY_TEXT)
    events = await collect(params("what is in notes?"))
    assert [e.type for e in events if e.type not in ("assistant_message", "permission_decision")] == [
        "session_started",
        "thinking",
        "tool_use",
        "tool_result",
        "text_delta",
        "text_delta",
        "result",
    ]
    assert of_type(events, "tool_use")[0].input == {"file_path": "notes.txt"}
    assert "alpha" in str(of_type(events, "tool_result")[0].output)
    result = events[-1]
    assert result.status == "success"
    assert result.final_text == "It says alpha."
    assert result.usage.input_tokens == 9
    bodies = [r.body for r in fake.requests_for("interactions.create")]
    assert bodies[1]["previous_interaction_id"] == "old-1"
    assert bodies[1]["input"][0]["call_id"] == "c1"
    fake.assert_done()
