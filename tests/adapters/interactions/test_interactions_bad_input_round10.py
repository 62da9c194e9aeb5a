"""Bad input round 10, the Interactions API's event stream (unified splits and parses it itself): an event with a
number of over 4,300 digits (a ValueError that is no JSONDecodeError) or nested too deeply for the parser but under
the bound on containers (RecursionError) ended the run as `internal_error`, "a bug in unified"; an event that is an
array or a number was dropped unsaid, and a stream of them read as empty (`malformed_turn`, the model asked again
for the server's fault), and so did a proxy's page sent as `text/event-stream`. Each is now the unreadable stream
it is (`stream_interrupted`, saying what was wrong). A byte order mark before the first `data:` line lost that
event."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.security.test_malformed_input import raw_server
from unified import ExecuteParams
from unified._adapters.interactions._client import sse_events, sse_events_sync
from unified._execute import EventStream
from unified.events import ErrorEvent, Result, UnifiedEvent

pytestmark = pytest.mark.anyio


async def _run(body: bytes) -> list[UnifiedEvent]:
    with raw_server([[body]] * 5) as server, tempfile.TemporaryDirectory() as folder:
        params = ExecuteParams(
            prompt="go",
            backend="interactions",
            model="gemini-2.5-flash",
            cwd=Path(folder),
            backend_options={"api_key": "test-key-12345", "base_url": server.base_url, "retry_delay_scale": 0.001},
        )
        async with EventStream(params) as stream:
            return [event async for event in stream]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b'{"event_type": "interaction.created", "n": ' + b"9" * 5000 + b"}", "an event Python cannot read"),
        (b"[" * 50_000 + b"]" * 50_000, "an event nested too deeply to parse"),
        (b'[{"event_type": "interaction.created"}]', "an event that is an array, not an object"),
        (b"5", "an event that is a number, not an object"),
        (b"<html><body>Sign in</body></html>\n", "an answer without events, whose line '<html><body>Sign in"),
    ],
    ids=["5000-digits", "50000-deep", "array", "number", "page-as-event-stream"],
)
async def test_an_event_python_cannot_parse_is_an_unreadable_stream_not_a_bug(data: bytes, words: str) -> None:
    events = await _run(data if data.startswith(b"<") else b"data: " + data + b"\r\n\r\n")
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["stream_interrupted"], [(e.code, e.message) for e in errors]
    assert words in errors[0].message
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"


async def _lines(lines: list[str]) -> AsyncIterator[str]:
    for line in lines:
        yield line


async def test_a_byte_order_mark_before_the_first_data_line_keeps_its_event() -> None:
    lines = ['\ufeffdata: {"event_type": "interaction.created"}', "", 'data: {"n": 2}', ""]
    assert [e async for e in sse_events(_lines(lines))] == [{"event_type": "interaction.created"}, {"n": 2}]
    assert list(sse_events_sync(lines)) == [{"event_type": "interaction.created"}, {"n": 2}]


def test_a_body_of_comments_and_fields_alone_is_an_empty_stream_not_an_unreadable_one() -> None:
    lines = [": keep-alive", "", "event: ping", "id: 3", "retry: 10", ""]
    assert list(sse_events_sync(lines)) == []
