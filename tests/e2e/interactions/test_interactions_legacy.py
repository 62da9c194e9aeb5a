"""The deprecated event dialect (interaction.start, content.*, interaction.complete) through the real SDK.

FakeGemini only speaks the current dialect, so these runs answer from an `httpx.MockTransport`
mounted under the httpx clients unified builds: the SDK still parses real SSE bytes and hands the
old events over as `UnknownInteractionSSEEvent(raw=...)`.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from tests.e2e.interactions.interactions_harness import collect, of_type
from unified._internal import http as _http
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

LEGACY_CALL: list[dict[str, Any]] = [
    {"event_type": "interaction.start", "interaction": {"id": "old-1", "status": "in_progress"}},
    {"event_type": "content.start", "index": 0, "content": {"type": "thought"}},
    {"event_type": "content.delta", "index": 0, "delta": {"type": "thought_summary", "content": {"text": "Look."}}},
    {"event_type": "content.stop", "index": 0},
    {"event_type": "content.start", "index": 1, "content": {"type": "function_call"}},
    {
        "event_type": "content.delta",
        "index": 1,
        "delta": {"type": "function_call", "id": "c1", "name": "read_file", "arguments": {"file_path": "notes.txt"}},
    },
    {"event_type": "content.stop", "index": 1},
    {"event_type": "interaction.complete", "interaction": {"id": "old-1", "status": "requires_action"}},
]
LEGACY_TEXT: list[dict[str, Any]] = [
    {"event_type": "interaction.start", "interaction": {"id": "old-2", "status": "in_progress"}},
    {"event_type": "content.start", "index": 0, "content": {"type": "text"}},
    {"event_type": "content.delta", "index": 0, "delta": {"type": "text", "text": "It says "}},
    {"event_type": "content.delta", "index": 0, "delta": {"type": "text", "text": "alpha."}},
    {"event_type": "content.stop", "index": 0},
    {
        "event_type": "interaction.complete",
        "interaction": {
            "id": "old-2",
            "status": "completed",
            "usage": {"total_input_tokens": 9, "total_output_tokens": 3},
        },
    },
]


def sse(events: list[dict[str, Any]]) -> httpx.Response:
    body = "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


async def test_legacy_stream_runs_a_tool_loop(monkeypatch: pytest.MonkeyPatch, workspace: Path) -> None:
    answers = [LEGACY_CALL, LEGACY_TEXT]
    bodies: list[Any] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return sse(answers.pop(0))

    transport = httpx.MockTransport(handler)
    mocked = SimpleNamespace(
        AsyncClient=functools.partial(httpx.AsyncClient, transport=transport),
        Client=functools.partial(httpx.Client, transport=transport),
        Timeout=httpx.Timeout,
        TransportError=httpx.TransportError,
    )
    monkeypatch.setattr(_http, "httpx", mocked)  # only the clients unified builds; the SDK is untouched
    params = ExecuteParams(
        prompt="what is in notes?",
        backend="interactions",
        model="gemini-3-flash-preview",
        cwd=workspace,
        backend_options={"api_key": "test-key", "base_url": "http://legacy.invalid"},
    )
    events = await collect(params)
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
    assert bodies[1]["previous_interaction_id"] == "old-1"
    assert bodies[1]["input"][0]["call_id"] == "c1"
