"""Portable conversations between the API backends, through FakeGemini on 127.0.0.1 (no subprocess).

For every ordered pair (generate-content, interactions): a session made on the first backend, with a
tool round whose output holds a fact only the history knows, continues on the second. Checked on
what the server received: the second backend's first request carries every earlier turn in its own
native form (Gemini `contents`, Interactions steps), the fact included; the continued session
resumes by its own short id and says where it came from. The CLI backends join in
tests/e2e/conversations/test_backend_pairs.py.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams, execute, sessions
from unified.conversations import (
    Conversation,
    ModelTurn,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.events import Result, UnifiedEvent
from unified.events import Usage as RunUsage
from unified.testing import FakeGemini, FunctionCall, Thought, Usage
from unified.testing import ModelTurn as ScriptTurn

pytestmark = pytest.mark.anyio

API = ("generate-content", "interactions")
PAIRS = [(a, b) for a in API for b in API]
FACT = "the code word is heron-7731"
MODEL = "gemini-2.5-flash"


@dataclass
class Lab:
    server: FakeGemini
    workspace: Path

    def params(self, backend: str, prompt: str = "", **fields: Any) -> ExecuteParams:
        options = {"api_key": "test-key", "base_url": self.server.base_url, "retry_delay_scale": 0.001}
        fields.setdefault("model", MODEL)
        return ExecuteParams(
            prompt=prompt, backend=backend, cwd=self.workspace, backend_options=options, approval_mode="yolo", **fields
        )

    async def run(self, params: ExecuteParams) -> list[UnifiedEvent]:
        async with execute(params) as stream:
            events = [event async for event in stream]
        assert isinstance(events[-1], Result), events[-1]
        return events

    def last_history(self) -> str:
        """What the last model request sent as history, as JSON text (either API's shape)."""
        body = self.server.requests[-1].body or {}
        return json.dumps(body.get("contents") or body.get("input"))


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(FACT + "\n", encoding="utf-8")
    async with FakeGemini() as server:
        yield Lab(server, workspace)


def _result(events: list[UnifiedEvent]) -> Result:
    last = events[-1]
    assert isinstance(last, Result)
    return last


async def _first_session(lab: Lab, backend: str) -> Result:
    lab.server.add(
        ScriptTurn(
            thoughts=[Thought(text="look in the notes", signature="sig-google")],
            function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})],
            usage=Usage(input_tokens=11, output_tokens=3),
        ),
        ScriptTurn(text="I read the notes.", usage=Usage(input_tokens=20, output_tokens=4)),
    )
    done = _result(await lab.run(lab.params(backend, "read the notes")))
    assert done.status == "success", done.error
    return done


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
async def test_a_session_continues_on_another_backend(lab: Lab, source: str, target: str) -> None:
    first = await _first_session(lab, source)
    assert first.short_id is not None
    conversation = await sessions.export(first.short_id)
    assert conversation.origin is not None
    assert conversation.origin.backend == source
    assert [t.role for t in conversation.turns] == ["user", "model", "user", "model"]
    carried = Conversation.from_json(conversation.to_json())  # what an orchestrator would store and reload
    assert carried == conversation

    lab.server.add(ScriptTurn(text="The code word is heron-7731."))
    second = _result(await lab.run(lab.params(target, "what is the code word?", history=carried)))
    assert second.status == "success", second.error
    assert second.backend == target
    assert second.short_id not in (None, first.short_id)
    sent = lab.last_history()
    assert FACT in sent  # the tool output reached the target's model
    assert "read the notes" in sent
    assert "what is the code word?" in sent
    if target == "generate-content":
        assert '"functionCall"' in sent
        assert '"functionResponse"' in sent
        assert '"thought": true' in sent
        assert "c2lnLWdvb2dsZQ==" in sent  # a Google signature kept for a Google model
    else:
        assert '"type": "function_call"' in sent
        assert '"type": "function_result"' in sent
        assert '"type": "thought"' in sent

    shown = await sessions.show(str(second.short_id))
    assert shown["continued_from"]["short_id"] == first.short_id

    lab.server.add(ScriptTurn(text="Still heron-7731."))
    third = _result(await lab.run(lab.params(target, "and again?", resume=second.short_id, model=None)))
    assert third.status == "success", third.error
    assert FACT in lab.last_history() or target == "interactions"  # interactions resumes server-side
    if target == "interactions":
        assert lab.server.requests[-1].body["previous_interaction_id"]


def _foreign() -> Conversation:
    """A conversation another provider's model made: its signatures mean nothing to Gemini."""
    return Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="list the files")]),
            ModelTurn(
                provider="anthropic",
                model="claude-opus-4",
                parts=[
                    ThinkingPart(text="I should list them", signature="anthropic-signature"),
                    ToolCallPart(id="toolu_01", name="list_directory", arguments={"path": "."}),
                ],
            ),
            UserTurn(parts=[ToolResultPart(call_id="toolu_01", name="list_directory", output="notes.txt")]),
            ModelTurn(provider="anthropic", model="claude-opus-4", parts=[TextPart(text="There is notes.txt.")]),
        ]
    )


@pytest.mark.parametrize("target", API)
async def test_another_providers_signatures_are_dropped_and_their_text_kept(lab: Lab, target: str) -> None:
    lab.server.add(ScriptTurn(text="ok"))
    done = _result(await lab.run(lab.params(target, "go on", history=_foreign())))
    assert done.status == "success", done.error
    sent = lab.last_history()
    assert "anthropic-signature" not in sent
    assert "I should list them" in sent
    assert "notes.txt" in sent
    assert "toolu_01" in sent
    if target == "generate-content":
        assert "skip_thought_signature_validator" in sent  # Gemini 3 takes a call it did not make


async def test_retry_answers_the_failed_turn_without_sending_its_prompt_again(lab: Lab) -> None:
    for index in range(4):  # the first attempt and the three retries
        lab.server.inject(_rate_limit(), at_request=index)
    failed = _result(await lab.run(lab.params("generate-content", "what is in notes.txt?")))
    assert failed.status == "error"
    assert failed.short_id is not None
    lab.server.add(ScriptTurn(text="heron"))
    retried = _result(await lab.run(lab.params("generate-content", resume=failed.short_id, retry=True, model=None)))
    assert retried.status == "success", retried.error
    assert lab.last_history().count("what is in notes.txt?") == 1

    lab.server.add(ScriptTurn(text="again"))
    nothing_left = _result(
        await lab.run(lab.params("generate-content", resume=failed.short_id, retry=True, model=None))
    )
    assert nothing_left.status == "error"
    assert "no failed turn to retry" in (nothing_left.error or "")


def _rate_limit() -> Any:
    from unified.testing import Fault

    return Fault(kind="rate_limit", retry_delay="1s")


@pytest.mark.parametrize("backend", API)
async def test_a_continued_session_keeps_each_turns_usage_on_its_own_turn(lab: Lab, backend: str) -> None:
    """The carried turns' usage stays in the new session's record (docs/conversations.md). It was lost on both;
    interactions also counted its turns from zero, filing the new answer's usage on the carried model turn."""
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="remember heron")]),
            ModelTurn(
                provider="google",
                model=MODEL,
                usage=RunUsage(input_tokens=111, output_tokens=22),
                parts=[TextPart(text="ok")],
            ),
        ]
    )
    lab.server.add(ScriptTurn(text="heron it was.", usage=Usage(input_tokens=7, output_tokens=3)))
    result = _result(await lab.run(lab.params(backend, "which word?", history=history)))
    assert result.status == "success", result.error
    assert result.short_id is not None
    exported = await sessions.export(result.short_id, cwd=str(lab.workspace))
    usages = [
        (turn.usage.input_tokens, turn.usage.output_tokens) if turn.usage else None
        for turn in exported.turns
        if isinstance(turn, ModelTurn)
    ]
    assert usages == [(111, 22), (7, 3)]
