"""A streamed chunk whose fields the translator reads have the wrong JSON type (bad input round 8): each is a
typed `backend_error` naming the field, what the API sent and what to do, never Python's own words
("argument of type 'int' is not iterable") or `internal_error`. Served verbatim by FakeGemini over the real
google-genai SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams, execute
from unified.events import ErrorEvent, Result, UnifiedEvent
from unified.testing import FakeGemini, RecordedTurn

pytestmark = pytest.mark.anyio


def _chunk(part: Any = None, **candidate: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"content": {"role": "model", "parts": [part or {"text": "hi"}]}, "finishReason": "STOP"}
    return {"candidates": [{**body, **candidate}]}


def _call(**call: Any) -> dict[str, Any]:
    return _chunk({"functionCall": {"name": "read_file", "args": {"file_path": "a"}, **call}})


BAD = {
    "call_id_number": (_call(id=5), "`candidates[0].content.parts[0].functionCall.id` is a number (5), not a string"),
    "call_id_object": (_call(id={"a": 1}), "functionCall.id` is an object, not a string"),
    "call_name_number": (_call(name=7), "functionCall.name` is a number (7), not a string"),
    "call_args_array": (_call(args=[1]), "functionCall.args` is an array, not an object"),
    "call_partial_args": (_call(partialArgs=5), "functionCall.partialArgs` is a number (5), not an array"),
    "call_not_object": (
        _chunk({"functionCall": "read_file"}),
        "parts[0].functionCall` is a string ('read_file'), not an object",
    ),
    "candidates_object": ({"candidates": {"a": 1}}, "`candidates` is an object, not an array"),
    "candidates_string": ({"candidates": "x"}, "`candidates` is a string ('x'), not an array"),
    "candidate_number": ({"candidates": [5]}, "`candidates[0]` is a number (5), not an object"),
    "content_string": (
        {"candidates": [{"content": "hi"}]},
        "`candidates[0].content` is a string ('hi'), not an object",
    ),
    "parts_object": (
        {"candidates": [{"content": {"parts": {"text": "x"}}}]},
        "content.parts` is an object, not an array",
    ),
    "parts_number": ({"candidates": [{"content": {"parts": 3}}]}, "content.parts` is a number (3), not an array"),
    "part_string": ({"candidates": [{"content": {"parts": ["hi"]}}]}, "parts[0]` is a string ('hi'), not an object"),
    "text_number": (_chunk({"text": 5, "thought": True}), "parts[0].text` is a number (5), not a string"),
    "finish_number": (_chunk(finishReason=3), "`candidates[0].finishReason` is a number (3), not a string"),
    "finish_object": (_chunk(finishReason={"a": 1}), "finishReason` is an object, not a string"),
    "signature_number": (
        _chunk({"text": "t", "thoughtSignature": 9}),
        "thoughtSignature` is a number (9), not a string",
    ),
}


async def _run(fake: FakeGemini, cwd: Path) -> list[UnifiedEvent]:
    options = {"api_key": "test-key", "base_url": fake.base_url, "retry_delay_scale": 0.001}
    params = ExecuteParams(prompt="go", backend="generate-content", cwd=cwd, backend_options=options)
    async with execute(params) as stream:
        return [event async for event in stream]


@pytest.mark.parametrize("case", list(BAD))
async def test_a_chunk_field_of_the_wrong_type_is_a_backend_error_naming_it(tmp_path: Path, case: str) -> None:
    chunk, words = BAD[case]
    turns = [RecordedTurn(method="generateContentStream", response=[chunk])] * 4  # a retry gets the same
    with FakeGemini(turns) as fake:
        events = await _run(fake, tmp_path)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["backend_error"], [(e.code, e.message) for e in errors]
    message = errors[0].message
    assert "the Gemini API sent a response that does not fit its schema" in message
    assert words in message, message
    for python in ("not iterable", "has no attribute", "object is not", "invalid literal", "NoneType"):
        assert python not in message, message
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
