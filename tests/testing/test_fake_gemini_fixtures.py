"""Every real Gemini CLI recording loads and plays through google-genai's own parsing, chunk for chunk."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google import genai
from google.genai import types

from tests.harness.recordings import recordings, recordings_dir
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import RecordedTurn, Script

ClientFactory = Callable[[FakeGemini], genai.Client]

FIXTURES = recordings_dir()
RECORDINGS = recordings()
MODEL = "gemini-2.5-flash"


def test_recordings_are_present() -> None:
    assert len(RECORDINGS) == 16


def _expected_parts(chunk: dict[str, Any]) -> list[tuple[Any, ...]]:
    parts = chunk.get("candidates", [{}])[0].get("content", {}).get("parts", [])
    return [
        (
            p.get("text"),
            bool(p.get("thought")),
            base64.b64decode(p["thoughtSignature"]) if "thoughtSignature" in p else None,
            (p["functionCall"]["name"], p["functionCall"].get("args")) if "functionCall" in p else None,
        )
        for p in parts
    ]


def _parts(response: types.GenerateContentResponse) -> list[tuple[Any, ...]]:
    candidates = response.candidates or []
    content = candidates[0].content if candidates else None
    return [
        (
            p.text,
            bool(p.thought),
            p.thought_signature,
            (p.function_call.name, p.function_call.args) if p.function_call else None,
        )
        for p in (content.parts or [] if content else [])
    ]


def _turns(path: Path) -> list[RecordedTurn]:
    turns = Script.from_fake_responses(path).turns
    assert all(isinstance(t, RecordedTurn) for t in turns)
    return [t for t in turns if isinstance(t, RecordedTurn)]


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_recording_plays_sync(path: Path, client_for: ClientFactory) -> None:
    turns = _turns(path)
    assert len(turns) == sum(1 for line in path.read_text().splitlines() if line.strip())
    with FakeGemini(path) as server:
        client = client_for(server)
        for turn in turns:
            if turn.method == "generateContentStream":
                assert isinstance(turn.response, list)
                chunks = list(client.models.generate_content_stream(model=MODEL, contents="hi"))
                assert len(chunks) == len(turn.response)
                for got, sent in zip(chunks, turn.response, strict=True):
                    assert _parts(got) == _expected_parts(sent)
                    if "usageMetadata" in sent:
                        assert got.usage_metadata is not None
                        assert got.usage_metadata.prompt_token_count == sent["usageMetadata"].get("promptTokenCount")
            elif turn.method == "generateContent":
                assert isinstance(turn.response, dict)
                answer = client.models.generate_content(model=MODEL, contents="hi")
                assert _parts(answer) == _expected_parts(turn.response)
            else:
                assert turn.method == "countTokens"
                assert isinstance(turn.response, dict)
                counted = client.models.count_tokens(model=MODEL, contents="hi")
                assert counted.total_tokens == turn.response["totalTokens"]
        server.assert_done()


@pytest.mark.anyio
@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
async def test_recording_streams_async(path: Path, client_for: ClientFactory) -> None:
    """Only the streams, through the async client: the per-method order skips the other lines."""
    streams = [t for t in _turns(path) if t.method == "generateContentStream"]
    async with FakeGemini(path) as server:
        client = client_for(server)
        for turn in streams:
            assert isinstance(turn.response, list)
            got = [c async for c in await client.aio.models.generate_content_stream(model=MODEL, contents="hi")]
            assert [_parts(c) for c in got] == [_expected_parts(c) for c in turn.response]
        assert server.problems == []
        assert all(t.kind == "recorded" and t.method != "generateContentStream" for t in server.unplayed)


def test_thought_signatures_arrive_as_bytes(client_for: ClientFactory) -> None:
    path = FIXTURES / "json-output.error.responses"
    first = json.loads(path.read_text().splitlines()[0])
    signed = [
        p for chunk in first["response"] for p in chunk["candidates"][0]["content"]["parts"] if "thoughtSignature" in p
    ]
    assert signed, "the recording carries a signature"
    with FakeGemini(path) as server:
        chunks = list(client_for(server).models.generate_content_stream(model=MODEL, contents="hi"))
    signatures = [p[2] for c in chunks for p in _parts(c) if p[2] is not None]
    assert signatures == [base64.b64decode(p["thoughtSignature"]) for p in signed]
