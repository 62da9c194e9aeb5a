"""An Interactions answer of status 200 that is not the API's stream of JSON events (an event cut in the middle, a
proxy's HTML page): the SSE reader dropped what it could not parse, so the run read an empty stream and asked the
model again as for a botched turn, ending "the interaction stream was empty (no event, no completion)" four times
over, which blames the model. Now the request is retried as a broken stream is, and the run ends
`stream_interrupted` saying the answer was not the API's JSON. Over real HTTP against a raw server, asyncio and
trio (the trio path reads the body in worker threads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.generate_content.test_gc_bad_input_round5 import ANSWERS
from tests.harness.raw_http import answering
from unified import execute
from unified.events import ErrorEvent, Result

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("kind", list(ANSWERS))
async def test_an_answer_that_is_not_the_api_s_json_is_a_retried_stream_error(
    kind: str, tmp_path: Path, isolated_home: Path
) -> None:
    content_type, body = ANSWERS[kind]
    with answering(200, body, content_type) as (url, asked):
        options = {"api_key": "fake-gemini-key", "base_url": url, "max_retries": 1}
        async with execute(prompt="hi", backend="interactions", cwd=tmp_path, backend_options=options) as stream:
            events = [event async for event in stream]
    [error] = [event for event in events if isinstance(event, ErrorEvent)]
    assert (error.code, error.retryable) == ("stream_interrupted", True), error.message
    assert "is not its JSON" in error.message
    assert "malformed" not in error.message
    assert len(asked) == 2  # retried once, as max_retries says
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
