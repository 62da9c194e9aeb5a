"""A conversation continued on the real Codex keeps each carried turn's usage on that turn (docs/conversations.md), as
generate-content, interactions, gemini-cli and claude-code do; the run's own usage counts only its own responses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from unified import sessions
from unified.conversations import Conversation, ModelTurn, TextPart, ThinkingPart, UserTurn
from unified.events import Result
from unified.events import Usage as RunUsage
from unified.testing import CODEX_MODEL, FakeOpenAI, Usage
from unified.testing import ModelTurn as ScriptTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def _usages(conversation: Conversation) -> list[tuple[int, int, int, int, int] | None]:
    return [
        (u.input_tokens, u.output_tokens, u.thinking_tokens, u.cached_tokens, u.cache_creation_tokens)
        if (u := turn.usage)
        else None
        for turn in conversation.turns
        if isinstance(turn, ModelTurn)
    ]


async def test_a_continued_conversation_keeps_each_carried_turns_usage(workspace: Path) -> None:
    """LOST before: the written rollout held no usage, so the export gave [None, None, (7, 3, ...)]."""
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="remember heron")]),
            ModelTurn(
                provider="anthropic",
                model="claude-x",
                usage=RunUsage(input_tokens=111, output_tokens=22, thinking_tokens=5, cache_creation_tokens=40),
                parts=[ThinkingPart(text="noted", signature="sig-a"), TextPart(text="ok")],
            ),
            UserTurn(parts=[TextPart(text="and ibis")]),
            ModelTurn(provider="google", model="gemini-x", parts=[TextPart(text="fine")]),  # no usage: stays none
            UserTurn(parts=[TextPart(text="and crane")]),
            ModelTurn(
                provider="openai",
                model=CODEX_MODEL,
                usage=RunUsage(input_tokens=300, output_tokens=9, cached_tokens=250),
                parts=[TextPart(text="ok too")],
            ),
        ]
    )
    async with FakeOpenAI([ScriptTurn(text="heron.", usage=Usage(input_tokens=7, output_tokens=3))]) as server:
        events = await run_codex(server, workspace, "which word?", history=history)
        result = events[-1]
        assert isinstance(result, Result)
        assert result.status == "success", result.error
        assert result.usage is not None
        assert (result.usage.input_tokens, result.usage.output_tokens) == (7, 3)  # the carried turns not counted
        assert result.short_id is not None
        exported = await sessions.export(result.short_id)
        assert _usages(exported) == [(111, 22, 5, 0, 40), None, (300, 9, 0, 250, 0), (7, 3, 0, 0, 0)]
        # the thread goes on: a resume counts its own response alone
        server.add(ScriptTurn(text="crane.", usage=Usage(input_tokens=11, output_tokens=2)))
        again = await run_codex(server, workspace, "and the last?", resume=result.short_id)
    resumed = again[-1]
    assert isinstance(resumed, Result)
    assert resumed.status == "success", resumed.error
    assert resumed.usage is not None
    assert (resumed.usage.input_tokens, resumed.usage.output_tokens) == (11, 2)


async def test_live_usage_reports_the_cache_writes_codex_counts(workspace: Path) -> None:
    """Before: the live path did not read the app-server's `cacheWriteInputTokens`, so a run whose provider wrote
    40 tokens to its cache reported 0 there while the rollout (the export) said 40."""
    turn = ScriptTurn(text="ok.", usage=Usage(input_tokens=100, cached_tokens=30, cache_creation_tokens=40))
    async with FakeOpenAI([turn]) as server:
        events = await run_codex(server, workspace, "hello")
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.cached_tokens, result.usage.cache_creation_tokens) == (100, 30, 40)
    assert result.short_id is not None
    exported = await sessions.export(result.short_id)
    assert _usages(exported)[-1] == (100, 0, 0, 30, 40)  # the same count as the rollouts' reader's
