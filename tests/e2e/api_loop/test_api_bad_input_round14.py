"""Bad input round 14 for the API backends: a 429 or 503 whose body is an HTML page (a proxy's or load balancer's,
not the API's `google.rpc.Status` JSON). Both SDKs hand the body on as the error's message, and it was quoted whole:
2.8 KB of markup, styles and newlines in each retry warning and in the error. It is named instead, by its title and
size, over real HTTP as a user meets it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.raw_http import answering
from unified import execute
from unified.events import ErrorEvent, WarningEvent

pytestmark = pytest.mark.anyio

PAGE = (
    b"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>429 Too Many Requests</title>\n"
    b"<style>body { font-family: sans-serif }</style></head>\n<body><h1>Too Many Requests</h1>\n"
    + b"<p>The load balancer is limiting you.</p>\n" * 60
    + b"</body></html>"
)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # no trio-only path: both read a whole error body
@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_an_html_error_page_is_named_not_quoted(
    backend: str, status: int, tmp_path: Path, isolated_home: Path
) -> None:
    with answering(status, PAGE, "text/html") as (url, asked):
        options = {"api_key": "fake-gemini-key", "base_url": url, "max_retries": 1, "retry_delay_scale": 0.001}
        async with execute(prompt="hi", backend=backend, cwd=tmp_path, backend_options=options) as stream:
            events = [event async for event in stream]
    [warning] = [event for event in events if isinstance(event, WarningEvent) and event.code == "retrying"]
    [error] = [event for event in events if isinstance(event, ErrorEvent)]
    assert error.code == ("rate_limited" if status == 429 else "backend_error")
    assert len(asked) == 2  # still retried once, as max_retries says
    for said in (warning.message, error.message):
        assert "an HTML page ('429 Too Many Requests', " in said
        assert "bytes) instead of the API's JSON" in said
        assert "<" not in said
        assert "\n" not in said
        assert len(said) < 400, said
