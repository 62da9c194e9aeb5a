"""The `garbled_event` fault (bad input round 15): every fake sends event `after` of its stream with its JSON cut in
half, then the rest as usual, so a client's reading of truncated JSON in a stream can be tested on every wire."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from unified.testing import FAKE_OPENAI_KEY, FakeAnthropic, FakeGemini, FakeOpenAI, Fault, InteractionTurn, ModelTurn
from unified.testing._scenario import TextStep

pytestmark = pytest.mark.anyio

TURN = ModelTurn(text="abcdef", text_chunks=3)


def data_lines(body: str) -> list[str]:
    return [line[len("data: ") :] for line in body.splitlines() if line.startswith("data: ")]


def readable(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True


def garbled_only_at(after: int, spoiled: list[str], whole: list[str]) -> None:
    """`spoiled` is the stream of `whole` with line `after` cut in half (ids and times aside): the same number of
    lines, that one unreadable and half as long, every other one readable."""
    assert len(spoiled) == len(whole)
    assert not readable(spoiled[after])
    assert abs(len(spoiled[after]) - len(whole[after]) // 2) <= 2, (spoiled[after], whole[after])
    assert all(readable(line) for n, line in enumerate(spoiled) if n != after and line != "[DONE]")


def gemini_stream(server: FakeGemini) -> str:
    url = f"{server.base_url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    return httpx.post(url, json={"contents": []}, headers={"x-goog-api-key": "k"}).text


def interactions_stream(server: FakeGemini) -> str:
    body = {"model": "gemini-3-flash-preview", "input": "hi", "stream": True}
    return httpx.post(f"{server.base_url}/v1beta/interactions", json=body, headers={"x-goog-api-key": "k"}).text


def openai_stream(server: FakeOpenAI) -> str:
    headers = {"Authorization": f"Bearer {FAKE_OPENAI_KEY}"}
    return httpx.post(f"{server.base_url}/responses", json={"model": "gpt-5.5", "input": []}, headers=headers).text


@pytest.mark.parametrize("after", [0, 2])
@pytest.mark.parametrize(
    ("fake", "read"), [(FakeGemini, gemini_stream), (FakeOpenAI, openai_stream)], ids=["gemini", "openai"]
)
def test_a_garbled_event_is_cut_in_half_and_the_stream_goes_on(
    fake: Callable[[list[Any]], Any], read: Callable[[Any], str], after: int
) -> None:
    with fake([TURN, TURN.model_copy(update={"fault": Fault(kind="garbled_event", after=after)})]) as server:
        whole, spoiled = data_lines(read(server)), data_lines(read(server))
    garbled_only_at(after, spoiled, whole)


def test_an_interaction_s_garbled_event_is_cut_in_half() -> None:
    turn = InteractionTurn(steps=[TextStep(text="abcdef", chunks=3)])
    with FakeGemini([turn, turn.model_copy(update={"fault": Fault(kind="garbled_event", after=2)})]) as server:
        whole, spoiled = data_lines(interactions_stream(server)), data_lines(interactions_stream(server))
    garbled_only_at(2, spoiled, whole)


async def test_anthropic_s_garbled_event_is_cut_in_half() -> None:
    async with FakeAnthropic([TURN.model_copy(update={"fault": Fault(kind="garbled_event", after=1)})]) as server:
        body = {"model": "claude-fake-model", "max_tokens": 10, "messages": [], "stream": True}
        headers = {"x-api-key": server.cli_env.get("ANTHROPIC_API_KEY", "k"), "anthropic-version": "2023-06-01"}
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{server.base_url}/v1/messages", json=body, headers=headers)
    lines = data_lines(answer.text)
    assert not readable(lines[1])
    assert lines[1].startswith('{"type": "content_block_start"')
    assert all(readable(line) for n, line in enumerate(lines) if n != 1)
