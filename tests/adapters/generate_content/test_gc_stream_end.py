"""The end of an answer stream is announced before its connection goes back to the pool.

httpx returns a connection to its pool the moment a body is read to its end (~0.2 ms: the pool looks
at each of its connections), which stood between the end of a turn and the announcement of its calls
(`tool_use` is announced when the stream ends). `stream_chunks` awaits `on_end` first, then releases.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.genai import types

from unified._adapters.generate_content._options import resolve_options
from unified._adapters.generate_content._stream import WIRE_PATH, stream_chunks
from unified._internal.genai_client import GenaiClient
from unified.testing import FakeGemini, ModelTurn
from unified.types import ExecuteParams

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not WIRE_PATH, reason="this google-genai moved the internals: the public path runs"),
]

MODEL = "gemini-2.5-flash"


def _prompt() -> list[types.Content]:
    return [types.Content(role="user", parts=[types.Part(text="go")])]


def _idle(client: GenaiClient) -> list[bool]:
    """Per pooled connection, whether it is back in the pool (idle, reusable)."""
    shared = client._shared
    assert shared is not None
    pool: Any = shared.http._transport._pool  # type: ignore[attr-defined]
    return [connection.is_idle() for connection in pool.connections]


async def _client(fake: FakeGemini, cwd: Path) -> GenaiClient:
    options = {"api_key": "test-key", "base_url": fake.base_url}
    params = ExecuteParams(prompt="go", backend="generate-content", cwd=cwd, backend_options=options)
    return GenaiClient(resolve_options(params))


async def test_the_end_is_announced_before_the_connection_goes_back(tmp_path: Path) -> None:
    with FakeGemini([ModelTurn(text="one two three", text_chunks=3), ModelTurn(text="again")]) as fake:
        async with await _client(fake, tmp_path) as client:
            at_the_end: list[list[bool]] = []

            async def on_end() -> None:
                at_the_end.append(_idle(client))

            chunks = [
                c
                async for c in stream_chunks(client.client, model=MODEL, contents=_prompt(), config=None, on_end=on_end)
            ]
            assert len(chunks) == 3
            assert at_the_end == [[False]]  # announced while the connection is still the stream's
            assert _idle(client) == [True]  # then back in the pool
            answer = types.Content(role="model", parts=[types.Part(text="one two three")])
            again = [*_prompt(), answer, types.Content(role="user", parts=[types.Part(text="more")])]
            assert [c async for c in stream_chunks(client.client, model=MODEL, contents=again, config=None)]
        fake.assert_done()
        assert fake.connections == 1  # the released connection served the next request


async def test_a_stream_left_before_its_end_is_closed_at_once_and_not_announced(tmp_path: Path) -> None:
    with FakeGemini([ModelTurn(text="one two three", text_chunks=3)]) as fake:
        async with await _client(fake, tmp_path) as client:
            ended: list[bool] = []

            async def on_end() -> None:
                ended.append(True)

            stream = stream_chunks(client.client, model=MODEL, contents=_prompt(), config=None, on_end=on_end)
            assert await anext(stream)
            await stream.aclose()  # type: ignore[attr-defined]
            assert ended == []
            assert _idle(client) == []  # a body not read to its end cannot be reused: its connection is closed


async def test_the_public_path_announces_the_end_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When google-genai moves its internals, `generate_content_stream` runs: `on_end` comes after its last chunk."""
    from unified._adapters.generate_content import _stream

    monkeypatch.setattr(_stream, "WIRE_PATH", False)
    with FakeGemini([ModelTurn(text="one two three", text_chunks=3)]) as fake:
        async with await _client(fake, tmp_path) as client:
            seen: list[str] = []

            async def on_end() -> None:
                seen.append("end")

            async for _ in stream_chunks(client.client, model=MODEL, contents=_prompt(), config=None, on_end=on_end):
                seen.append("chunk")
            assert seen == ["chunk", "chunk", "chunk", "end"]
        fake.assert_done()
