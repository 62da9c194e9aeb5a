"""Text no UTF-8 can carry, from the model or from the workspace, never ends a run (`_text.py`).

A model's JSON may hold a lone surrogate (`"\\ud83d"`: half an emoji, escaped; on purpose from a hostile
server), and a file name that is not UTF-8 reads as surrogate escapes. Either failed the run where it was
encoded next: the session file (`internal_error`, the session unsaved), the next request, a consumer's
`model_dump_json()`. Each is U+FFFD now, where it comes in. FakeGemini over real HTTP, google-genai's own
request path; every test fails on the code before."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from unified import execute
from unified.events import ErrorEvent, Result, ToolResult, UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.testing._wiring import backend_options_for

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.e2e,
    pytest.mark.parametrize("backend", ["generate-content", "interactions"]),
]


async def run(backend: str, workspace: Path, turns: list[ModelTurn], **fields: object) -> list[UnifiedEvent]:
    async with FakeGemini(turns) as server:
        options = backend_options_for(server, backend)
        return [
            e async for e in execute(prompt="go", backend=backend, cwd=workspace, backend_options=options, **fields)
        ]


def succeeded(events: list[UnifiedEvent]) -> Result:
    result = events[-1]
    assert isinstance(result, Result), events
    assert result.status == "success", [e for e in events if isinstance(e, ErrorEvent)]
    for event in events:
        event.model_dump_json()  # every event can be written as JSON
    return result


async def test_a_lone_surrogate_in_the_model_s_text_is_replaced_and_the_session_kept(
    backend: str, tmp_path: Path
) -> None:
    events = await run(backend, tmp_path, [ModelTurn(text="half an emoji \ud83d here")])
    result = succeeded(events)
    assert result.final_text == "half an emoji \ufffd here"
    assert result.short_id is not None  # saved: the session can be resumed
    if backend == "interactions":
        return  # its history is the server's (this FakeGemini's), not for another server to continue
    async with FakeGemini([ModelTurn(text="again")]) as server:
        options = backend_options_for(server, backend)
        resumed = [
            e async for e in execute(prompt="and?", backend=backend, resume=result.short_id, backend_options=options)
        ]
        sent = json.dumps([request.body for request in server.requests], ensure_ascii=False, default=str)
    assert succeeded(resumed).final_text == "again"
    assert "half an emoji \ufffd here" in sent  # the history goes with every request


async def test_a_file_name_that_is_not_utf8_in_a_tool_s_output_reaches_the_model_as_u_fffd(
    backend: str, tmp_path: Path
) -> None:
    os.close(os.open(os.fsencode(tmp_path) + b"/bad-\xff-name.txt", os.O_CREAT | os.O_WRONLY, 0o644))
    turns = [ModelTurn(function_calls=[FunctionCall(name="glob", args={"pattern": "*"})]), ModelTurn(text="done")]
    events = await run(backend, tmp_path, turns, approval_mode="yolo")
    assert succeeded(events).final_text == "done"
    [output] = [e.output or "" for e in events if isinstance(e, ToolResult)]
    assert "bad-\ufffd-name.txt" in output, output
