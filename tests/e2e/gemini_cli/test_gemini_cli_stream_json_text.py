"""The stream-json transport's `streaming_text: full` (the capability matrix), on the pinned binary: the model's
chunks arrive as `text_delta`s as the CLI prints them, in order, and make the run's final text (the conformance
suite compares what the stream says; this test pins that each chunk is a delta of its own)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import call, stream_line, text
from unified.events import AssistantMessage, Result, TextDelta, UnifiedEvent

Run = Callable[..., Awaitable[list[UnifiedEvent]]]
Responses = Callable[..., Path]

pytestmark = pytest.mark.anyio


def _chunks(*pieces: str) -> str:
    """One `generateContentStream` call streaming `pieces`, a chunk each (the last one ends the turn)."""
    chunks: list[dict[str, object]] = []
    for n, piece in enumerate(pieces, 1):
        candidate: dict[str, object] = {"content": {"parts": [text(piece)], "role": "model"}, "index": 0}
        chunk: dict[str, object] = {"candidates": [candidate]}
        if n == len(pieces):
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = {"promptTokenCount": 10, "candidatesTokenCount": 3, "totalTokenCount": 13}
        chunks.append(chunk)
    return json.dumps({"method": "generateContentStream", "response": chunks})


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])  # stream-json's plain run, on both loops
async def test_the_model_s_chunks_arrive_as_text_deltas_in_order(run_gemini: Run, responses: Responses) -> None:
    pieces = ("Paris ", "is the capital ", "of France.")
    events = await run_gemini(responses(_chunks(*pieces)), backend_options={"transport": "stream-json"})
    result = events[-1]
    assert isinstance(result, Result), events
    assert result.status == "success", result.error
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(deltas) == "".join(pieces)
    assert len(deltas) == len(pieces), deltas  # streamed as printed, not one block at the end
    messages = [e.text for e in events if isinstance(e, AssistantMessage)]
    assert messages == ["".join(pieces)]
    assert result.final_text == "".join(pieces)
    assert max(i for i, e in enumerate(events) if isinstance(e, TextDelta)) < events.index(
        next(e for e in events if isinstance(e, AssistantMessage))
    )


async def test_each_model_request_is_a_turn(run_gemini: Run, responses: Responses) -> None:
    """Two requests that only call read_file, then the answer: 3 turns (before: 1, only text after calls counted)."""
    fake = responses(
        stream_line(call("read_file", file_path="notes.txt")),
        stream_line(call("read_file", file_path="notes.txt")),
        stream_line(text("done")),
    )
    events = await run_gemini(fake, backend_options={"transport": "stream-json"})
    result = events[-1]
    assert isinstance(result, Result), events
    assert (result.status, result.turns) == ("success", 3), result.error
