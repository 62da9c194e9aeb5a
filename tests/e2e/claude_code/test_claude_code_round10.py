"""Red team round 10 on the real pinned Claude Code: its subagent tool (`Agent`, `invoke_agent` to the policy) is
decided by unified's policy as every other tool is. The CLI ran it unasked (it was not among the tools it must
ask about), so a caller's rule denying `invoke_agent`, or one that asks for it, was never consulted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import run_claude
from tests.e2e.claude_code.test_claude_code_subagents import agent_call
from unified.events import PermissionDecision, SubagentStarted, ToolResult, UserInputRequest, UserInputResponse
from unified.testing import FakeAnthropic, ModelTurn
from unified.tools import Policy

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def turns() -> list[ModelTurn]:
    return [
        ModelTurn(function_calls=[agent_call("SUBTASK: say hi", background=False, call_id="toolu_agent")]),
        ModelTurn(subagent=True, text="Sub report: hi."),
        ModelTurn(text="Main: done."),
    ]


async def test_a_deny_rule_for_invoke_agent_stops_claude_s_subagent(workspace: Path) -> None:
    policy = Policy.default().with_toml('[[rule]]\ntoolName = "invoke_agent"\ndecision = "deny"\n')
    async with FakeAnthropic(turns()) as server:
        events = await run_claude(server, workspace, options={"policy": policy}, strict=False)
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    decision = next(e for e in events if isinstance(e, PermissionDecision) and e.tool_use_id == "toolu_agent")
    assert (decision.decision, decision.decided_by) == ("deny", "policy")
    answer = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == "toolu_agent")
    assert answer.is_error


async def test_an_ask_rule_for_invoke_agent_asks_the_user(workspace: Path) -> None:
    policy = Policy.default().with_toml('[[rule]]\ntoolName = "invoke_agent"\ndecision = "ask_user"\n')
    asked: list[UserInputRequest] = []

    async def refuse(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny("no subagents")

    async with FakeAnthropic(turns()) as server:
        events = await run_claude(server, workspace, answer=refuse, options={"policy": policy}, strict=False)
    assert [r.tool_use_id for r in asked] == ["toolu_agent"]
    assert not [e for e in events if isinstance(e, SubagentStarted)]
