"""Every real recording in fixtures/gemini-cli-responses, served as SSE, plays into a valid stream."""

from __future__ import annotations

import json

import pytest

from tests.e2e.generate_content.gc_harness import Harness, result_of
from tests.harness.recordings import recordings
from unified.events import Result, SessionStarted, Thinking, ToolResult, ToolUse
from unified.testing._scenario import RecordedTurn

pytestmark = pytest.mark.anyio

FILES = {p.stem: p.read_text() for p in recordings()}


@pytest.mark.parametrize("name", FILES)
async def test_recording_plays_into_a_valid_stream(harness: Harness, name: str) -> None:
    lines = [json.loads(line) for line in FILES[name].splitlines() if line.strip()]
    streams = [line for line in lines if line["method"] == "generateContentStream"]
    harness.server.add(*[RecordedTurn.model_validate(line) for line in streams])
    # plan mode: recorded reads run in the temp workspace, recorded writes and shell commands are refused
    events = await harness.run("replay", approval_mode="plan", max_turns=len(streams))
    assert isinstance(events[0], SessionStarted)
    assert [e.seq for e in events] == list(range(len(events)))
    assert sum(isinstance(e, Result) for e in events) == 1
    uses = {e.tool_use_id for e in events if isinstance(e, ToolUse)}
    assert {e.tool_use_id for e in events if isinstance(e, ToolResult)} <= uses
    result = result_of(events)
    assert result.status in ("success", "max_turns"), result.error
    assert not harness.server.problems
    assert all(t.replace for t in events if isinstance(t, Thinking))
    assert result.turns == len(harness.server.requests_for("generateContentStream"))
