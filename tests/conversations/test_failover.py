"""Failover inside one run: the backend gives out, the next one continues the conversation in the same stream.

Faults are injected at each point of a run (before the first event, mid-stream, between tool rounds)
on FakeGemini (no subprocess). What must hold: one `failover` event naming both backends and the
code; every later event from the new backend, after its own `session_started`; a tool call that ran
is never run again and its result reaches the new model; `result` names the last backend and the
short id that resumes the continued conversation; a fallback that also fails gives the last error; the
history carried is checked and put in order as a caller's is (a history no backend can continue ends the run
with one `configuration_error` naming the session left, which stays as it was).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams, execute, sessions
from unified._routing import select_backend_for
from unified.events import ErrorEvent, Failover, Result, SessionStarted, TextDelta, ToolResult, UnifiedEvent
from unified.testing import FakeGemini, Fault, FunctionCall
from unified.testing import ModelTurn as ScriptTurn
from unified.types import Fallback

pytestmark = pytest.mark.anyio

MODEL = "gemini-2.5-flash"
ATTEMPTS = 4
"""The API backends' first try and their three retries: a fault on all of them makes the backend give out."""


@dataclass
class Lab:
    server: FakeGemini
    workspace: Path

    def options(self, **extra: Any) -> dict[str, Any]:
        return {"api_key": "test-key", "base_url": self.server.base_url, "retry_delay_scale": 0.001, **extra}

    def params(self, backend: str, *fallback: str, **fields: Any) -> ExecuteParams:
        fields.setdefault("prompt", "what is the code word?")
        return ExecuteParams(
            backend=backend,
            cwd=self.workspace,
            model=MODEL,
            backend_options=self.options(),
            approval_mode="yolo",
            fallback=tuple(Fallback(backend=b, model=MODEL, backend_options=self.options()) for b in fallback),
            **fields,
        )

    async def run(self, params: ExecuteParams) -> list[UnifiedEvent]:
        async with execute(params) as stream:
            events = [event async for event in stream]
        assert isinstance(events[-1], Result), events[-1]
        return events

    def fail(self, kind: str, first: int, attempts: int = ATTEMPTS, **fault: Any) -> None:
        fault.setdefault("retry_delay", "1s")
        for index in range(first, first + attempts):
            self.server.inject(Fault(kind=kind, **fault), at_request=index)


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[Lab]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("the code word is heron\n", encoding="utf-8")
    async with FakeGemini() as server:
        yield Lab(server, workspace)


def _one(events: list[UnifiedEvent], kind: type[Any]) -> Any:
    found = [e for e in events if isinstance(e, kind)]
    assert len(found) == 1, [e.type for e in events]
    return found[0]


def _after(events: list[UnifiedEvent], event: UnifiedEvent) -> list[UnifiedEvent]:
    return events[events.index(event) + 1 :]


def _tool_round() -> list[ScriptTurn]:
    return [
        ScriptTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]),
        ScriptTurn(text="The code word is heron."),
    ]


PAIRS = [("generate-content", "interactions"), ("interactions", "generate-content")]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
@pytest.mark.parametrize("kind", ["rate_limit", "unauthenticated"])
async def test_between_tool_rounds_the_next_backend_continues_and_no_call_runs_twice(
    lab: Lab, first: str, second: str, kind: str
) -> None:
    lab.server.add(*_tool_round())
    lab.fail(kind, first=1, attempts=ATTEMPTS if kind == "rate_limit" else 1)  # after the tool round
    events = await lab.run(lab.params(first, second))
    switch = _one(events, Failover)
    assert (switch.from_backend, switch.to_backend) == (first, second)
    assert switch.code == ("rate_limited" if kind == "rate_limit" else "auth_error")
    assert len([e for e in events if isinstance(e, ToolResult)]) == 1  # the read ran once, before the switch
    later = _after(events, switch)
    assert isinstance(later[0], SessionStarted)
    assert later[0].backend == second
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert result.backend == second
    assert result.short_id == later[0].short_id
    assert result.final_text == "The code word is heron."
    sent = json.dumps(lab.server.requests[-1].body)
    assert "the code word is heron" in sent  # the tool's output, carried
    assert sent.count("what is the code word?") == 1  # the prompt, carried once (the failed turn is answered again)
    left = await sessions.show(str(switch.left_session))
    assert left["backend"] == first  # the session left behind stays, and resumes on its own backend


async def test_before_the_first_event_a_missing_binary_moves_to_the_next(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNIFIED_GEMINI_BIN", str(lab.workspace / "no-such-gemini"))
    lab.server.add(ScriptTurn(text="answered by the API"))
    params = lab.params("gemini-cli", "generate-content").model_copy(update={"model": None, "backend_options": {}})
    events = await lab.run(params)
    switch = _one(events, Failover)
    assert switch.from_backend == "gemini-cli"
    assert switch.code == "backend_unavailable"
    assert switch.left_session is None  # nothing started there
    assert [e.type for e in events[: events.index(switch)]] == []
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert result.backend == "generate-content"
    assert result.final_text == "answered by the API"
    assert json.dumps(lab.server.requests[-1].body).count("what is the code word?") == 1


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
async def test_mid_stream_the_unfinished_turn_is_answered_again(lab: Lab, first: str, second: str) -> None:
    lab.server.add(
        ScriptTurn(text="Partial answer that never finishes", text_chunks=3), ScriptTurn(text="Whole answer.")
    )
    lab.server.inject(Fault(kind="mid_stream_error", after=1, carries="rate_limit"), at_request=0)
    lab.fail("rate_limit", first=1, attempts=ATTEMPTS - 1)  # the retries of the cut turn give out too
    events = await lab.run(lab.params(first, second))
    switch = _one(events, Failover)
    assert switch.code == "rate_limited"
    later = _after(events, switch)
    assert [e.text for e in later if isinstance(e, TextDelta)] == ["Whole answer."]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert result.final_text == "Whole answer."
    assert json.dumps(lab.server.requests[-1].body).count("what is the code word?") == 1


async def test_a_fallback_that_also_fails_gives_the_last_error(lab: Lab) -> None:
    lab.fail("unauthenticated", first=0, attempts=2)
    events = await lab.run(lab.params("generate-content", "interactions"))
    switch = _one(events, Failover)
    assert switch.to_backend == "interactions"
    error = [e for e in events if isinstance(e, ErrorEvent)][-1]
    assert error.code == "auth_error"
    assert events.index(error) > events.index(switch)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert result.backend == "interactions"


async def test_an_error_outside_failover_on_ends_the_run_where_it_is(lab: Lab) -> None:
    lab.fail("bad_request", first=0, attempts=1)
    events = await lab.run(lab.params("generate-content", "interactions"))
    assert not [e for e in events if isinstance(e, Failover)]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert result.backend == "generate-content"


async def test_auto_passes_over_a_backend_that_just_gave_out(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    before = select_backend_for(ExecuteParams(prompt="x")).backend
    lab.server.add(ScriptTurn(text="ok"))
    lab.fail("rate_limit", first=0, retry_delay="100s")  # rests 100 s: a slow run on a loaded machine stays inside
    other = next(b for b in ("generate-content", "interactions") if b != before)
    events = await lab.run(lab.params(before, other))
    assert _one(events, Failover).from_backend == before
    assert select_backend_for(ExecuteParams(prompt="x")).backend != before


def _twice_the_same_id() -> list[ScriptTurn]:
    """A model that gives two of its calls one id: a session of the failed backend no other backend can take."""
    read = FunctionCall(name="read_file", args={"file_path": "notes.txt"}, id="dup")
    return [ScriptTurn(function_calls=[read]), ScriptTurn(function_calls=[read]), ScriptTurn(text="done")]


@pytest.mark.parametrize(("first", "second"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
async def test_a_carried_history_no_backend_can_continue_ends_the_run_typed_and_the_session_stays(
    lab: Lab, first: str, second: str
) -> None:
    """The history a failover carries is checked as a caller's is (`Conversation.problem`): a repeated call id
    ended in a session file or a request the next provider refuses (HTTP 400), now in one typed error that
    names the session left, which stays as it was."""
    lab.server.add(*_twice_the_same_id())
    lab.fail("rate_limit", first=2)  # after both tool rounds
    sent_before = len(lab.server.requests)
    events = await lab.run(lab.params(first, second))
    assert not [e for e in events if isinstance(e, Failover)]
    error = [e for e in events if isinstance(e, ErrorEvent)][-1]
    assert error.code == "configuration_error"
    assert "repeats the tool call id 'dup'" in error.message
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    left = next(e for e in events if isinstance(e, SessionStarted))
    assert f"session {left.short_id} of {first} is left as it was" in error.message
    assert len(lab.server.requests) - sent_before == 2 + ATTEMPTS  # nothing went to the next backend
    kept = await sessions.export(str(left.short_id))
    assert [p.id for p in kept.tool_calls()] == ["dup", "dup"]


async def test_a_carried_history_larger_than_a_run_takes_ends_the_run_typed(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified import _limits as limits

    lab.server.add(*_tool_round())
    lab.fail("rate_limit", first=1)
    monkeypatch.setattr(limits, "MAX_CONVERSATION_BYTES", 200)
    events = await lab.run(lab.params("generate-content", "interactions"))
    error = [e for e in events if isinstance(e, ErrorEvent)][-1]
    assert error.code == "configuration_error"
    assert "more than a run takes (200," in error.message
    assert not [e for e in events if isinstance(e, Failover)]


async def test_a_failover_carries_results_next_to_their_calls_and_answers_every_call(lab: Lab) -> None:
    """A run continuing a history (a result far from its call, a call never answered) that fails over: the
    next backend gets the history in the order every provider takes, each call answered."""
    from unified.conversations import Conversation, ModelTurn, TextPart, ToolCallPart, ToolResultPart, UserTurn

    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="read it")]),
            ModelTurn(
                provider="google",
                parts=[ToolCallPart(id="far", name="read_file"), ToolCallPart(id="never", name="read_file")],
            ),
            UserTurn(parts=[TextPart(text="in between")]),
            ModelTurn(provider="google", parts=[TextPart(text="noted")]),
            UserTurn(parts=[ToolResultPart(call_id="far", name="read_file", output="FAR-OUTPUT")]),
        ]
    )
    lab.server.add(ScriptTurn(text="continued"))
    lab.fail("rate_limit", first=0)
    events = await lab.run(lab.params("generate-content", "interactions", history=history))
    assert _one(events, Failover).to_backend == "interactions"
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    steps = lab.server.requests[-1].body["input"]
    kinds = [(s["type"], s.get("call_id") or s.get("id")) for s in steps if "function" in s["type"]]
    assert kinds == [
        ("function_call", "far"),
        ("function_call", "never"),
        ("function_result", "far"),
        ("function_result", "never"),
    ]
    assert "not run" in json.dumps(steps)


async def test_a_resumed_session_in_no_providers_order_fails_over_in_the_order_every_provider_takes(lab: Lab) -> None:
    """A stored session whose result stands far from its call (a file edited, a store written by another tool)
    resumed with a fallback: what the failover carries is put in order as a caller's history is."""
    from unified import MemorySessionStore

    store = MemorySessionStore()
    lab.server.add(ScriptTurn(text="first answer"))
    first = await lab.run(lab.params("generate-content", prompt="first", session_store=store))
    session_id = str(next(e for e in first if isinstance(e, SessionStarted)).session_id)
    stored = await store.load("generate-content", session_id)
    call = {"function_call": {"id": "far", "name": "read_file", "args": {"file_path": "notes.txt"}}}
    stored.state["contents"] += [
        {"role": "model", "parts": [call]},
        {"role": "user", "parts": [{"text": "in between"}]},
        {"role": "model", "parts": [{"text": "noted"}]},
        {
            "role": "user",
            "parts": [{"function_response": {"id": "far", "name": "read_file", "response": {"output": "FAR"}}}],
        },
    ]
    await store.save(stored)
    lab.server.add(ScriptTurn(text="continued"))
    lab.fail("rate_limit", first=1)
    events = await lab.run(
        lab.params("generate-content", "interactions", prompt="go on", resume=session_id[:8], session_store=store)
    )
    assert _one(events, Failover).to_backend == "interactions"
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    steps = lab.server.requests[-1].body["input"]
    kinds = [s["type"] for s in steps]
    at = kinds.index("function_call")
    assert steps[at + 1]["type"] == "function_result"
    assert steps[at + 1]["call_id"] == "far"
    assert "in between" in json.dumps(steps[at + 2 :])
