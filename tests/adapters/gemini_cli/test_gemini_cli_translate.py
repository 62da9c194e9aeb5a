"""The ACP translator on transcripts recorded from the real 0.61 binary (no Node needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from unified._adapters.gemini_cli._translate import AcpTranslator, Item, TurnBoundary, usage_from_prompt_result
from unified.events import (
    PermissionDecision,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
)

CASSETTES = Path(__file__).resolve().parents[3] / "cassettes" / "gemini-cli"


def replay(name: str) -> tuple[list[Item], list[dict[str, Any]]]:
    """Feed a cassette's agent→client messages to the translator, as the adapter does."""
    lines = (CASSETTES / f"{name}.jsonl").read_text().splitlines()
    meta = json.loads(lines[0])
    assert "0.61.0" in meta["recorded_from"]
    assert "fake-responses" in meta["recorded_from"]
    translator = AcpTranslator()
    items: list[Item] = []
    results = []
    for line in lines[1:]:
        entry = json.loads(line)
        if entry["dir"] != "recv":  # the client's messages and the chat-file records are not translated
            continue
        message = entry["msg"]
        if message.get("method") == "session/update":
            items += translator.update(message["params"]["update"])
        elif message.get("method") == "session/request_permission":
            items += translator.permission_request(message["params"])
        elif isinstance(message.get("result"), dict) and "stopReason" in message["result"]:
            results.append(message["result"])
    return items, results


def events(items: list[Item]) -> list[Any]:
    return [i for i in items if not isinstance(i, TurnBoundary)]


def test_text_and_thoughts() -> None:
    items, results = replay("text-thoughts")
    evs = events(items)
    assert isinstance(items[0], TurnBoundary)
    thinking = next(e for e in evs if isinstance(e, Thinking))
    assert thinking.replace
    assert thinking.subject == "Planning"
    assert "".join(e.text for e in evs if isinstance(e, TextDelta)) == "Hello there."
    usage = usage_from_prompt_result(results[-1])
    assert usage is not None
    assert usage.input_tokens == 100


def test_mode_update_is_not_text() -> None:
    items, _ = replay("plan-denied")
    assert not any(isinstance(e, TextDelta) and "MODE_UPDATE" in e.text for e in items)


def test_policy_denial_synthesizes_use_decision_and_error_result() -> None:
    items, _ = replay("plan-denied")
    evs = events(items)
    use = next(e for e in evs if isinstance(e, ToolUse))
    decision = next(e for e in evs if isinstance(e, PermissionDecision))
    result = next(e for e in evs if isinstance(e, ToolResult))
    assert use.name == "write_file"
    assert (decision.decision, decision.decided_by) == ("deny", "policy")
    assert result.is_error
    assert evs.index(use) < evs.index(decision) < evs.index(result)


def test_permission_request_announces_the_call_once() -> None:
    items, _ = replay("tools-permission")
    uses = [e for e in events(items) if isinstance(e, ToolUse)]
    assert [u.name for u in uses] == ["read_file", "write_file"]
    results = [e for e in events(items) if isinstance(e, ToolResult)]
    assert {r.tool_use_id for r in results} == {u.tool_use_id for u in uses}
    assert not any(r.is_error for r in results)


def test_invoke_agent_brackets_a_subagent() -> None:
    items, _ = replay("subagent")
    evs = events(items)
    started = next(e for e in evs if isinstance(e, SubagentStarted))
    completed = next(e for e in evs if isinstance(e, SubagentCompleted))
    assert started.agent_name == "generalist"
    assert completed.task_id == started.task_id
    assert completed.status == "completed"


def test_usage_missing_is_none() -> None:
    assert usage_from_prompt_result({"stopReason": "end_turn"}) is None
