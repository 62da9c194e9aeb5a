"""Subagents of the real `claude` (the Agent tool): foreground and background, as `subagent_*` events.

A subagent's requests carry Claude Code's `x-claude-code-agent-id` header; FakeAnthropic routes them
to the turns marked `subagent=True`, so the main agent's and the subagent's turns never mix up.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import run_claude
from unified.events import (
    PermissionDecision,
    Result,
    SubagentCompleted,
    SubagentProgress,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UserInputRequest,
    UserInputResponse,
)
from unified.testing import AGENT_HEADER, FakeAnthropic, FunctionCall, ModelTurn, Thought, Usage

pytestmark = pytest.mark.anyio


def agent_call(prompt: str, *, background: bool, call_id: str) -> FunctionCall:
    args = {
        "description": "Make a file",
        "prompt": prompt,
        "subagent_type": "general-purpose",
        "run_in_background": background,
    }
    return FunctionCall(name="Agent", args=args, id=call_id)


async def test_a_foreground_subagent_tags_every_inner_event_with_its_task(workspace: Path) -> None:
    touch = FunctionCall(name="Bash", args={"command": "touch sub.txt", "description": "create"}, id="toolu_sub_touch")
    turns = [
        ModelTurn(function_calls=[agent_call("SUBTASK: create sub.txt", background=False, call_id="toolu_agent")]),
        ModelTurn(
            subagent=True,
            thoughts=[Thought(text="Sub thinks.", signature="SUBSIG")],
            text="Sub: creating the file.",
            function_calls=[touch],
            usage=Usage(input_tokens=10, output_tokens=5),
        ),
        ModelTurn(subagent=True, text="Sub report: sub.txt created.", usage=Usage(input_tokens=33, output_tokens=11)),
        ModelTurn(text="Main: the subagent finished.", usage=Usage(input_tokens=20, output_tokens=10)),
    ]
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow()

    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, answer=answer)
        agents = [r.headers.get(AGENT_HEADER) for r in server.requests_for("messages")]
        assert not server.problems
    started = next(e for e in events if isinstance(e, SubagentStarted))
    task = started.task_id
    assert agents == [None, task, task, None], "the subagent's requests carry its task id"
    assert started.agent_name == "general-purpose"
    assert started.parent_tool_use_id == "toolu_agent"
    inner = [e for e in events if e.subagent_task_id == task]
    assert {e.type for e in inner} >= {"thinking", "text_delta", "tool_use", "permission_decision", "tool_result"}
    assert [e.text for e in inner if isinstance(e, TextDelta)] == [
        "Sub: creating the file.",
        "Sub report: sub.txt created.",
    ]
    assert [e.signature for e in inner if isinstance(e, Thinking)] == ["SUBSIG"]
    assert next(e for e in inner if isinstance(e, ToolUse)).input == touch.args
    assert [r.subagent_task_id for r in asked] == [task], "the subagent's permission prompt is tagged too"
    decision = next(e for e in inner if isinstance(e, PermissionDecision))
    assert decision.decided_by == "user"
    assert (workspace / "sub.txt").exists()
    assert any(isinstance(e, SubagentProgress) and e.task_id == task for e in events)
    completed = next(e for e in events if isinstance(e, SubagentCompleted))
    assert completed.task_id == task
    assert completed.status == "completed"
    assert completed.result is not None
    assert "sub.txt created" in completed.result
    main_result = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == "toolu_agent")
    assert main_result.subagent_task_id is None
    assert "Sub report" in (main_result.output or "")
    order = [e.type for e in events]
    assert order.index("subagent_started") < order.index("subagent_completed") < len(order) - 1
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10 + 33 + 20 + 10, 5 + 11 + 10 + 5)


async def test_a_background_subagent_ends_in_one_result_once_it_has_reported(workspace: Path) -> None:
    turns = [
        ModelTurn(function_calls=[agent_call("BGTASK: report", background=True, call_id="toolu_bg")]),
        ModelTurn(subagent=False, text="Main: launched it, will report when done."),
        ModelTurn(subagent=True, text="Background report: all good.", chunk_delay=0.3),
        ModelTurn(subagent=False, text="Main: the background agent reported back."),
    ]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace)
        assert not server.problems
        assert not server.unplayed
    results = [e for e in events if isinstance(e, Result)]
    assert len(results) == 1
    assert results[0].status == "success"
    assert results[0].final_text == "Main: the background agent reported back."
    completed = [e for e in events if isinstance(e, SubagentCompleted)]
    assert len(completed) == 1
    assert completed[0].status == "completed"
    order = [e.type for e in events]
    assert order.index("subagent_completed") < len(order) - 1
