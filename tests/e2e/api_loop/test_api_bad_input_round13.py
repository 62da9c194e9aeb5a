"""Bad input round 13 for the API backends: an answer whose body does not decode as its `Content-Encoding` says
(gzip declared, plain text sent: a proxy's or a server's fault). httpx raises `DecodingError`, which is no
`TransportError`, so neither backend classified it: the run ended `internal_error` "This is a bug in unified's
... adapter", not retried. It is now the broken answer it is: `stream_interrupted`, retried, retryable at the end
(on asyncio and trio: the trio path of Interactions reads the body in worker threads).

And a base URL that answers with a redirect (http:// where the server is https://), which neither SDK follows: it
was `bad_request` "fix the request (model options, tools, thinking settings)" on generate-content, and on
Interactions an answer that is not the API's JSON, asked again; it is the base URL's fault, `configuration_error`
saying so, asked once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.raw_http import answering
from unified import execute
from unified.events import ErrorEvent, Result

pytestmark = pytest.mark.anyio

CHUNK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_body_that_does_not_decode_as_declared_is_a_retried_stream_error(
    backend: str, tmp_path: Path, isolated_home: Path
) -> None:
    body = f"data: {json.dumps(CHUNK)}\r\n\r\n".encode()
    with answering(200, body, "text/event-stream", {"Content-Encoding": "gzip"}) as (url, asked):
        options = {"api_key": "fake-gemini-key", "base_url": url, "max_retries": 1, "retry_delay_scale": 0.001}
        async with execute(prompt="hi", backend=backend, cwd=tmp_path, backend_options=options) as stream:
            events = [event async for event in stream]
    [error] = [event for event in events if isinstance(event, ErrorEvent)]
    assert (error.code, error.retryable, error.fatal) == ("stream_interrupted", True, True), error.message
    assert "does not decode as its Content-Encoding says" in error.message
    assert len(asked) == 2  # retried once, as max_retries says
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_base_url_that_redirects_is_a_configuration_error_asked_once(
    backend: str, tmp_path: Path, isolated_home: Path
) -> None:
    moved = {"Location": "https://127.0.0.1:1/v1beta"}
    with answering(301, b"<html>Moved</html>", "text/html", moved) as (url, asked):
        options = {"api_key": "fake-gemini-key", "base_url": url, "max_retries": 1, "retry_delay_scale": 0.001}
        async with execute(prompt="hi", backend=backend, cwd=tmp_path, backend_options=options) as stream:
            events = [event async for event in stream]
    [error] = [event for event in events if isinstance(event, ErrorEvent)]
    assert (error.code, error.retryable) == ("configuration_error", False), error.message
    assert "redirect (301 Moved Permanently)" in error.message
    assert "set base_url (backend_options) or GOOGLE_GEMINI_BASE_URL" in error.message  # the hint, appended
    assert len(asked) == 1
