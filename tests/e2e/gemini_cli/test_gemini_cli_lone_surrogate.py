"""A lone surrogate on the real binary's path: the model's JSON holds `"\\ud83d"` (half an emoji), node parses it
into a lone UTF-16 unit and its JSON.stringify writes it back escaped on the ACP line. unified's events, its
result and a consumer's `model_dump_json()` carry U+FFFD (`_text.py`); before, every event holding it
failed to serialize. Fails on the code before."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import stream_line, text
from unified.events import Result, UnifiedEvent

Run = Callable[..., Awaitable[list[UnifiedEvent]]]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_half_an_emoji_from_the_model_arrives_as_u_fffd(
    warm_gemini: Run, responses: Callable[..., Path], transport: str
) -> None:
    fake = responses(stream_line(text("half an emoji \ud83d here")))
    events = await warm_gemini(fake, backend_options={"transport": transport})
    result = events[-1]
    assert isinstance(result, Result), events
    assert result.status == "success", result.error
    assert result.final_text == "half an emoji \ufffd here"
    for event in events:
        event.model_dump_json()
