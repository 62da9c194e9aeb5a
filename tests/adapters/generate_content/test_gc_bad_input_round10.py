"""Bad input round 10, generate-content over real HTTP (google-genai's client, a loopback server sending raw SSE):
each case ended as `internal_error` ("a bug in unified") or `protocol_violation`, or went on with a count no
server means; now a typed error naming what came, or the count read as nothing.

- a finishReason newer than this unified ("SOME_NEW_REASON"): its error code `finish_some_new_reason` is in no
  registry, and the stream guard ended the run as `protocol_violation`; now `backend_error` naming the reason.
- a usage count of 1e400 (infinity to `json.loads`): OverflowError, `internal_error`; then the chunk-shape
  `backend_error` naming `usageMetadata`; since round 18 no count, the answer kept and the usage flagged
  (tests/adapters/generate_content/test_gc_bad_input_round18.py).
- a number of 5,000 digits (Python's int limit is 4,300): a bare ValueError out of the SDK's JSON read; now the
  answer is "not its JSON", asked again, then a typed failure.
- an SSE event whose JSON is an array: UnboundLocalError; now "a chunk is an array, not an object".
- a negative usage count went into the run's usage (-5 input tokens); now 0.
- a 429 whose RetryInfo asks for a delay of 400 digits (and the Gemini CLI's "Suggested retry after" as long):
  "wait infs and run again", a `retry_after_s` of infinity; now no delay is taken from it.
- SSE the SDK's split does not strip (a proxy's ": keep-alive" comment, `event:`/`id:`/`retry:` fields, "data:"
  without its space, a byte order mark, an OpenAI-style gateway's "data: [DONE]"): "not its JSON", the request
  sent again until the run failed as "the model's answer was empty"; now read past as the SSE spec reads them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.harness.raw_http import answering
from tests.security.test_malformed_input import _run, _sse, raw_server
from unified import ExecuteParams
from unified._execute import EventStream
from unified.events import ErrorEvent, Result, TextDelta

pytestmark = pytest.mark.anyio


def _answer(text: str = "hi", finish: str = "STOP", **extra: Any) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": finish}]
    }
    return {**chunk, **extra}


def _raw(usage: str) -> bytes:
    head = json.dumps(_answer())[:-1]
    return f'data: {head}, "usageMetadata": {{"promptTokenCount": {usage}}}}}\r\n\r\n'.encode()


def _failure(events: list[Any]) -> ErrorEvent:
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1, [(e.code, e.message) for e in errors]
    assert errors[0].code not in ("internal_error", "protocol_violation"), errors[0].message
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    return errors[0]


@pytest.mark.filterwarnings("error:SOME_NEW_REASON is not a valid FinishReason")
async def test_a_finish_reason_newer_than_unified_is_a_backend_error_naming_it(tmp_path: Path) -> None:
    """... said in the run's events only: google-genai's enum printed a `UserWarning` on the host's stderr too."""
    with raw_server([[_sse(_answer(finish="SOME_NEW_REASON"))]]) as server:
        events = await _run(server, tmp_path)
    error = _failure(events)
    assert error.code == "backend_error"
    assert "finish reason SOME_NEW_REASON" in error.message
    assert "a reason this unified does not know" in error.message
    assert error.details == {"reason": "SOME_NEW_REASON"}
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hi"


async def test_a_number_too_long_for_python_is_an_answer_that_is_not_json(tmp_path: Path) -> None:
    with raw_server([[_raw("9" * 5000)]] * 5) as server:
        events = await _run(server, tmp_path)
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    assert not [e for e in events if isinstance(e, ErrorEvent) and e.code == "internal_error"]
    said = json.dumps([getattr(e, "message", "") for e in events]) + (final.error or "")
    assert "not its JSON" in said
    assert "4300 digits" in said


async def test_a_chunk_that_is_an_array_is_a_typed_error_saying_so(tmp_path: Path) -> None:
    with raw_server([[b"data: " + json.dumps([_answer()]).encode() + b"\r\n\r\n"]]) as server:
        events = await _run(server, tmp_path)
    error = _failure(events)
    assert error.code == "backend_error"
    assert "a chunk is an array, not an object" in error.message


async def test_a_negative_usage_count_is_read_as_none(tmp_path: Path) -> None:
    with raw_server([[_sse(_answer(usageMetadata={"promptTokenCount": -5, "candidatesTokenCount": 3}))]]) as server:
        events = await _run(server, tmp_path)
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert final.usage.input_tokens >= 0
    assert final.usage.output_tokens == 3


_HI = json.dumps(_answer()).encode()


@pytest.mark.parametrize(
    "body",
    [
        [b": keep-alive\r\n\r\n", _sse(_answer())],
        [b"event: ping\r\ndata: {}\r\n\r\n", _sse(_answer())],
        [b"id: 7\r\n", b"retry: 100\r\n", _sse(_answer())],
        [b"data:" + _HI + b"\r\n\r\n"],
        [b"\xef\xbb\xbf" + _sse(_answer())],
        [_sse(_answer()), b"data: [DONE]\r\n\r\n"],
    ],
    ids=["comment", "event-field", "id-and-retry", "data-without-space", "byte-order-mark", "done-marker"],
)
async def test_sse_the_sdk_does_not_strip_is_read_past(body: list[bytes], tmp_path: Path) -> None:
    with raw_server([body]) as server:
        events = await _run(server, tmp_path)
    final = events[-1]
    assert isinstance(final, Result)
    assert (final.status, final.error) == ("success", None)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "hi"
    assert server.answers == []  # asked once


_NINES = "9" * 400


_RATE_LIMITED = json.dumps(
    {
        "error": {
            "code": 429,
            "message": "slow down",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{_NINES}s"}],
        }
    }
).encode()
"""A 429 whose RetryInfo asks for a delay of 400 digits, the answer to every POST."""


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_retry_delay_of_400_digits_is_no_delay_not_infinity(backend: str, tmp_path: Path) -> None:
    """`float` of 400 digits is infinity: the error said "wait infs and run again" and carried a `retry_after_s`
    of infinity, which no JSON holds (and `auto` would have rested the backend for ever)."""
    with answering(429, _RATE_LIMITED) as (base_url, _):
        params = ExecuteParams(
            prompt="go",
            backend=backend,
            model="gemini-2.5-flash",
            cwd=tmp_path,
            backend_options={"api_key": "test-key-12345", "base_url": base_url, "retry_delay_scale": 0.001},
        )
        async with EventStream(params) as stream:
            events = [event async for event in stream]
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "rate_limited"
    assert "inf" not in error.message, error.message
    assert "retry_after_s" not in error.details
    json.dumps(error.details, allow_nan=False)


def test_a_gemini_cli_retry_after_of_400_digits_is_no_delay() -> None:
    from unified._adapters.gemini_cli._outcome import error_from_result

    error = error_from_result({"message": f"Quota exceeded. Suggested retry after {_NINES}s", "type": "api"}, 1)
    assert error.code == "rate_limited"
    assert "retry_after_s" not in error.details
    assert error.hint == "wait and run again, or check your quota"
