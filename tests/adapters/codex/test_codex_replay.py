"""The codex adapter on recorded app-server transcripts (cassettes/codex/), in process: no binary, no
subprocess. Each cassette is a real run of the pinned binary against FakeOpenAI; replayed, its stream
is the one the live run gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified.events import (
    PermissionDecision,
    Result,
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UnifiedEvent,
)
from unified.testing import replay_events

pytestmark = pytest.mark.anyio

CASSETTES = Path(__file__).resolve().parents[3] / "cassettes" / "codex"


async def play(name: str) -> list[UnifiedEvent]:
    return [event async for event in replay_events(CASSETTES / f"{name}.jsonl")]


async def test_text_and_reasoning_stream_with_usage() -> None:
    events = await play("text-reasoning")
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.backend == "codex"
    assert started.short_id == (started.session_id or "")[-8:]
    assert "".join(e.text for e in events if isinstance(e, Thinking)) == "The user wants a greeting."
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello from Codex."
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    usage = final.usage
    assert (usage.input_tokens, usage.cached_tokens, usage.output_tokens, usage.thinking_tokens) == (40, 10, 4, 6)
    assert not usage.estimated


async def test_tools_carry_their_calls_and_every_decision() -> None:
    events = await play("tools-permission")
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [(u.name, u.input) for u in uses] == [
        ("exec_command", {"cmd": "cat notes.txt"}),
        ("exec_command", {"cmd": "echo alpha >> log.txt"}),
        ("apply_patch", {"changes": [{"path": "summary.txt", "kind": "add", "diff": "alpha\n"}]}),
    ]
    decisions = [(d.tool_use_id, d.decision, d.decided_by) for d in events if isinstance(d, PermissionDecision)]
    assert decisions == [
        ("call_read", "allow", "policy"),
        ("call_log", "allow", "user"),
        ("call_write", "deny", "user"),
    ]
    results = {r.tool_use_id: r for r in events if isinstance(r, ToolResult)}
    assert results["call_read"].output == "alpha\n"
    assert not results["call_log"].is_error
    assert results["call_write"].is_error


async def test_a_subagent_is_a_task_with_its_own_events() -> None:
    events = await play("subagent")
    started = next(e for e in events if isinstance(e, SubagentStarted))
    assert started.parent_tool_use_id == "call_spawn"
    assert started.description == "Read notes.txt."
    inner = [e for e in events if e.subagent_task_id == started.task_id]
    assert any(isinstance(e, ToolUse) and e.input == {"cmd": "cat notes.txt"} for e in inner)
    done = next(e for e in events if isinstance(e, SubagentCompleted))
    assert done.task_id == started.task_id
    assert done.status == "completed"
    assert done.result == "It says alpha."
    final = events[-1]
    assert isinstance(final, Result)
    assert final.final_text == "The helper says alpha."
