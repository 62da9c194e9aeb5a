"""Bad input round 18, the Gemini API's usage counts over real HTTP (a loopback server sending raw SSE), read
alike by generate-content (`usageMetadata`) and the Interactions API (`usage`): one reader, `api_usage`.

Before, generate-content took a count of 1e29 as 10**29 tokens and the string "12" as 12, and a count of NaN, of
1e400, "many" or [1] ended the run as `backend_error` after its text was delivered (the answer thrown away for a
figure). The Interactions API took the same 1e29 and "12", and raised on NaN (the run lost too). Now a count is a
JSON integer from 0 to 2**31-1 (the API's counts are int32): anything else is no count, read as 0 with the usage
flagged `estimated`, and the run keeps its answer.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_malformed_input import raw_server
from unified import ExecuteParams
from unified._execute import EventStream
from unified.events import ErrorEvent, Result, TextDelta, UnifiedEvent

pytestmark = pytest.mark.anyio

NO_COUNTS = ["1e29", '"12"', "NaN", "1e400", "-5", "true", "2147483648", '"many"', "[1]", '{"n": 1}']
"""JSON texts of a count that is none (each sent raw: `json.dumps` writes no NaN or 1e400 as sent)."""


def _gc_body(count: str) -> bytes:
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    head = json.dumps(answer)[:-1]
    usage = f'{{"promptTokenCount": {count}, "candidatesTokenCount": 3}}'
    return f'data: {head}, "usageMetadata": {usage}}}\r\n\r\n'.encode()


def _interactions_body(count: str) -> bytes:
    events: list[Any] = [
        {"event_type": "interaction.created", "interaction": {"id": "i1", "status": "in_progress"}},
        {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
        {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "hi"}},
        {"event_type": "step.stop", "index": 0},
    ]
    lines = [b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events]
    usage = f'{{"total_input_tokens": {count}, "total_output_tokens": 3}}'
    interaction = f'{{"id": "i1", "status": "completed", "usage": {usage}}}'
    done = f'{{"event_type": "interaction.completed", "interaction": {interaction}}}'
    return b"".join(lines) + b"data: " + done.encode() + b"\r\n\r\n"


async def _run(backend: str, body: bytes) -> list[UnifiedEvent]:
    with raw_server([[body]] * 3) as server, tempfile.TemporaryDirectory() as folder:
        params = ExecuteParams(
            prompt="go",
            backend=backend,
            model="gemini-2.5-flash",
            cwd=Path(folder),
            backend_options={"api_key": "test-key-12345", "base_url": server.base_url, "retry_delay_scale": 0.001},
        )
        async with EventStream(params) as stream:
            return [event async for event in stream]


def _result(events: list[UnifiedEvent]) -> Result:
    errors = [(e.code, e.message) for e in events if isinstance(e, ErrorEvent)]
    assert errors == []
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hi"
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success", final.error
    return final


BODIES = {"generate-content": _gc_body, "interactions": _interactions_body}


@pytest.mark.parametrize("backend", list(BODIES))
@pytest.mark.parametrize("count", NO_COUNTS)
async def test_a_count_that_is_no_integer_is_no_count_and_the_answer_is_kept(backend: str, count: str) -> None:
    final = _result(await _run(backend, BODIES[backend](count)))
    assert final.usage.input_tokens == 0  # not 10**29, not 12, not -5, not 1
    assert final.usage.output_tokens == 3  # the counts that are counts stay
    assert final.usage.estimated  # flagged: 0 is no measurement


@pytest.mark.parametrize("backend", list(BODIES))
async def test_a_count_that_is_an_integer_is_the_measurement(backend: str) -> None:
    final = _result(await _run(backend, BODIES[backend]("2147483647")))
    assert final.usage.input_tokens == 2147483647
    assert not final.usage.estimated


async def test_a_usage_that_is_no_object_keeps_the_answer_and_is_flagged() -> None:
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    body = b"data: " + json.dumps({**answer, "usageMetadata": "many"}).encode() + b"\r\n\r\n"
    final = _result(await _run("generate-content", body))
    assert final.usage.input_tokens == 0
    assert final.usage.estimated
