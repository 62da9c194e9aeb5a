"""The real `claude` binary behind the one event stream: text, thinking, tool calls, usage, a cut stream.

Each test scripts FakeAnthropic with the shared scenario vocabulary and checks what unified makes
of what the CLI prints. The runs go through `EventStream(strict=True)`: any protocol slip of the
adapter fails the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import model_bodies, run_claude
from unified import capabilities
from unified.events import (
    AssistantMessage,
    Result,
    SessionStarted,
    TextDelta,
    Thinking,
    WarningEvent,
)
from unified.testing import FakeAnthropic, Fault, FunctionCall, ModelTurn, Thought, Usage
from unified.types import ThinkingConfig

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        ("claude-sonnet-4-5", {"type": "enabled", "budget_tokens": 3000}),
        ("claude-haiku-4-5-20251001", {"type": "enabled", "budget_tokens": 3000}),
        ("claude-opus-4-5", {"type": "enabled", "budget_tokens": 3000}),
        ("claude-sonnet-4-6", {"type": "adaptive"}),
        (None, {"type": "adaptive"}),  # the fake's default model, a name the CLI does not know
    ],
)
async def test_a_thinking_budget_is_warned_only_where_the_cli_does_not_send_it(
    workspace: Path, model: str | None, sent: dict[str, object]
) -> None:
    """The `unsupported_option` warning fired for every budget, also for the models the CLI sends it to."""
    async with FakeAnthropic([ModelTurn(text="hi")]) as server:
        events = await run_claude(server, workspace, "hi", thinking=ThinkingConfig(budget=3000), model=model)
        (body,) = server.model_bodies()
    assert {key: body["thinking"][key] for key in sent} == sent
    warnings = [e.message for e in events if isinstance(e, WarningEvent) and e.code == "unsupported_option"]
    assert bool(warnings) == (sent["type"] == "adaptive")
    if warnings:
        assert warnings[0].startswith("thinking.budget: Claude Code passes a thinking budget (--max-thinking-tokens)")


async def test_text_streams_as_deltas_with_the_usage_and_cost_of_the_run(workspace: Path) -> None:
    usage = Usage(input_tokens=120, cached_tokens=50, cache_creation_tokens=30, output_tokens=7)
    async with FakeAnthropic([ModelTurn(text="Hello from the fake model.", text_chunks=3, usage=usage)]) as server:
        events = await run_claude(server, workspace, "Say hello")
        assert not server.problems
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.backend == "claude-code"
    assert started.transport == "stream-json"
    assert not started.resumed
    assert started.capabilities == capabilities.snapshot("claude-code")
    assert started.model == "claude-fake-model"
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 3
    assert "".join(deltas) == "Hello from the fake model."
    assert [e.text for e in events if isinstance(e, AssistantMessage)] == ["Hello from the fake model."]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert result.final_text == "Hello from the fake model."
    assert result.turns == 1
    u = result.usage
    assert (u.input_tokens, u.cached_tokens, u.cache_creation_tokens, u.output_tokens, u.estimated) == (
        120,
        50,
        30,
        7,
        False,
    )
    assert u.cost_usd is not None
    assert u.cost_usd > 0
    assert result.short_id == started.short_id == started.session_id[:8]  # type: ignore[index]


async def test_thinking_appends_and_its_signature_is_kept_and_echoed(workspace: Path) -> None:
    turns = [
        ModelTurn(
            thoughts=[Thought(text="The user wants a listing.", signature="SIG-AAA-111")],
            text="Let me check.",
            function_calls=[FunctionCall(name="Read", args={"file_path": "notes.txt"}, id="toolu_read")],
            usage=Usage(input_tokens=200, output_tokens=30, thinking_tokens=10),
        ),
        ModelTurn(
            thoughts=[Thought(text="It says alpha.", signature="SIG-BBB-222")],
            text="The notes say alpha.",
            usage=Usage(input_tokens=300, output_tokens=6, thinking_tokens=4),
        ),
    ]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, "What do the notes say?")
        bodies = model_bodies(server)
    thoughts = [e for e in events if isinstance(e, Thinking)]
    assert all(not t.replace for t in thoughts)
    assert [t.text for t in thoughts if t.text] == ["The user wants a listing.", "It says alpha."]
    assert [t.signature for t in thoughts if t.signature] == ["SIG-AAA-111", "SIG-BBB-222"]
    assert "SIG-AAA-111" in bodies[1], "the CLI sends the thought back with its signature"
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert result.turns == 2
    assert (result.usage.output_tokens, result.usage.thinking_tokens) == (36, 14)
    assert result.usage.input_tokens == 500
    assert not result.usage.estimated


async def test_a_cut_stream_shows_no_text_twice(workspace: Path) -> None:
    text = "Hello there, friend of mine."
    turns = [
        ModelTurn(
            thoughts=[Thought(text="Greet.", signature="SIG1")],
            text=text,
            text_chunks=4,
            chunk_delay=0.15,
            fault=Fault(kind="cut_stream", after=8),
        ),
        ModelTurn(thoughts=[Thought(text="Greet.", signature="SIG1")], text=text, text_chunks=4),
    ]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, "Greet me")
        assert [r.fault for r in server.requests_for("messages")] == ["cut_stream", None]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == text
    assert "".join(e.text for e in events if isinstance(e, Thinking)) == "Greet."
    assert [e.text for e in events if isinstance(e, AssistantMessage)] == [text]
    assert not [e for e in events if isinstance(e, WarningEvent) and e.code == "stream_resumed"]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert result.final_text == text


async def test_a_retried_answer_that_differs_replaces_the_cut_one_and_says_so(workspace: Path) -> None:
    turns = [
        ModelTurn(text="First try, cut.", text_chunks=5, chunk_delay=0.15, fault=Fault(kind="cut_stream", after=5)),
        ModelTurn(text="Second answer.", text_chunks=2),
    ]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, "Answer")
    warned = [e for e in events if isinstance(e, WarningEvent) and e.code == "stream_resumed"]
    assert len(warned) == 1
    after = events[events.index(warned[0]) :]
    assert "".join(e.text for e in after if isinstance(e, TextDelta)) == "Second answer."
    messages = [e.text for e in events if isinstance(e, AssistantMessage)]
    assert messages[-1] == "Second answer."
    assert len(messages) == 2
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert result.final_text == "Second answer."
    assert json.loads(json.dumps(result.usage.model_dump()))["output_tokens"] >= 0


@pytest.mark.parametrize(
    ("second", "warns"), [("Hello there, friend of mine.", False), ("Another answer.", True)], ids=["same", "differs"]
)
async def test_an_error_mid_stream_is_answered_by_the_cli_s_fallback_request_shown_once(
    workspace: Path, second: str, warns: bool
) -> None:
    """After an `error` event in the middle of a stream the CLI asks again without streaming: the whole answer
    arrives as one `assistant` line. It is matched against what was shown, as a streamed retry is: a repeated
    prefix is not shown twice; an answer that differs closes the cut one and says so. Before, the whole answer
    followed the cut text, and the final text was the two glued ("HelloAnother answer.")."""
    turns = [
        ModelTurn(text="Hello there, friend of mine.", text_chunks=4, fault=Fault(kind="mid_stream_error", after=3)),
        ModelTurn(text=second),
    ]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, "Greet me")
        streamed = [r.body.get("stream") for r in server.requests_for("messages") if isinstance(r.body, dict)]
    assert streamed == [True, False]  # the fallback is a request without streaming
    warned = [e for e in events if isinstance(e, WarningEvent) and e.code == "stream_resumed"]
    assert len(warned) == (1 if warns else 0)
    after = events[events.index(warned[0]) :] if warns else events
    assert "".join(e.text for e in after if isinstance(e, TextDelta)) == second
    assert [e.text for e in events if isinstance(e, AssistantMessage)][-1] == second
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", second)
