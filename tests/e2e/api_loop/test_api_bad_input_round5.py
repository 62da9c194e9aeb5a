"""Bad input round 5 for the API backends: a server whose HTTP 200 answer is not the Gemini API's JSON, a stream cut
in the middle of an event (the connection closed after half a `data:` line) or a proxy's HTML page with status 200.
On generate-content it reached google-genai as `UnknownApiResponseError`, a ValueError: the run ended `backend_error`
"google-genai refused to send the request", not retried, its hint blaming the run's history and options. On
Interactions the SSE reader dropped what it could not parse, so the run read an empty stream and asked the model
again as for a botched turn, ending "the interaction stream was empty ... malformed", blaming the model. Now it is
the broken answer it is on both: `stream_interrupted`, retried as a dropped stream is, retryable at the end (on
asyncio and trio: the trio path of Interactions reads the body in worker threads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.raw_http import answering
from unified import execute
from unified.events import ErrorEvent, Result

pytestmark = pytest.mark.anyio

ANSWERS = {
    "half_event": ("text/event-stream", b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "ha'),
    "proxy_page": ("text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
}


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
@pytest.mark.parametrize("kind", list(ANSWERS))
async def test_an_answer_that_is_not_the_api_s_json_is_a_retried_stream_error(
    kind: str, backend: str, tmp_path: Path, isolated_home: Path
) -> None:
    content_type, body = ANSWERS[kind]
    with answering(200, body, content_type) as (url, asked):
        options = {"api_key": "fake-gemini-key", "base_url": url, "max_retries": 1}
        async with execute(prompt="hi", backend=backend, cwd=tmp_path, backend_options=options) as stream:
            events = [event async for event in stream]
    [error] = [event for event in events if isinstance(event, ErrorEvent)]
    assert (error.code, error.retryable, error.fatal) == ("stream_interrupted", True, True), error.message
    assert "is not its JSON" in error.message
    assert "history" not in error.message
    assert "malformed" not in error.message
    assert len(asked) == 2  # retried once, as max_retries says
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
