"""A caller's policy (`backend_options.policy`) decides Codex's calls as on every backend (red team round 11).

Before, the codex backend took no user policy: a caller could not deny, or force asking for, Codex's subagents
(`spawn_agent`, which it runs without asking anyone) or any command by rule. Now the user rules decide before
the approval bridge's own table, and a policy that may refuse a subagent turns Codex's subagent tools off.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from unified.events import (
    PermissionDecision,
    Result,
    SubagentStarted,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
)
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn
from unified.tools import Policy

pytestmark = pytest.mark.anyio


def _policy(rule: str) -> Policy:
    return Policy.default().with_toml(f'[[rule]]\nname = "mine"\n{rule}\npriority = 500\n')


def _decisions(events: Sequence[UnifiedEvent]) -> dict[str, PermissionDecision]:
    names = {e.tool_use_id: e.name for e in events if isinstance(e, ToolUse)}
    return {names[e.tool_use_id]: e for e in events if isinstance(e, PermissionDecision)}


def _delegating_turns() -> list[ModelTurn]:
    """The model spawns a subagent that reads notes.txt and reports back; the parent then says done."""
    spawn = FunctionCall(name="invoke_agent", args={"agent_name": "helper", "prompt": "Read notes.txt."})
    return [
        ModelTurn(function_calls=[spawn]),
        ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]),
        ModelTurn(function_calls=[FunctionCall(name="complete_task", args={"result": {"response": "alpha"}})]),
        ModelTurn(text="done"),
    ]


async def test_a_deny_rule_for_subagents_turns_codexs_spawn_off(workspace: Path) -> None:
    turns = _delegating_turns()
    options = {"policy": _policy('toolName = "invoke_agent"\ndecision = "deny"')}
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, approval_mode="yolo", options=options, strict=False)
        offered = [{t.get("name") or t.get("type") for t in r.body.get("tools", [])} for r in server.model_requests()]
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"
    assert not any(isinstance(e, SubagentStarted) for e in events)
    assert not any(isinstance(e, ToolUse) and e.name == "spawn_agent" for e in events)
    assert all("tool_search" not in tools for tools in offered)  # the deferred multi-agent tools are gone


async def test_without_a_rule_against_them_subagents_still_run(workspace: Path) -> None:
    turns = _delegating_turns()
    options = {"policy": _policy('toolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"')}
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, approval_mode="yolo", options=options, strict=False)
    assert any(isinstance(e, SubagentStarted) for e in events)


@pytest.mark.parametrize("mode", ["yolo", "default"])
async def test_a_deny_rule_refuses_a_command_codex_would_run_naming_the_rule(workspace: Path, mode: str) -> None:
    calls = [FunctionCall(name="exec_command", args={"cmd": "cat notes.txt"})]
    options = {"policy": _policy('toolName = "run_shell_command"\ncommandPrefix = "cat"\ndecision = "deny"')}
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, approval_mode=mode, options=options)
    decision = _decisions(events)["exec_command"]
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "mine")


async def test_an_ask_rule_puts_a_read_only_command_to_the_caller(workspace: Path) -> None:
    asked: list[UserInputRequest] = []

    async def refuse(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny()

    calls = [FunctionCall(name="exec_command", args={"cmd": "cat notes.txt"})]
    options = {"policy": _policy('toolName = "run_shell_command"\nargsPattern = "notes"\ndecision = "ask_user"')}
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, options=options, on_user_input=refuse)
    assert len(asked) == 1
    assert (_decisions(events)["exec_command"].decision, _decisions(events)["exec_command"].decided_by) == (
        "deny",
        "user",
    )


async def test_an_ask_rule_with_nobody_to_answer_is_a_denial_even_in_yolo(workspace: Path) -> None:
    calls = [FunctionCall(name="write_file", args={"file_path": "out.txt", "content": "x"})]
    options = {"policy": _policy('toolName = "write_file"\ndecision = "ask_user"')}
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, approval_mode="yolo", options=options)
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "mine")
    assert not (workspace / "out.txt").exists()


async def test_a_user_allow_rule_does_not_widen_what_codex_asks(workspace: Path) -> None:
    """The policy and the bridge's own table must both allow: an allow rule for rm leaves it asked (denied here)."""
    calls = [FunctionCall(name="exec_command", args={"cmd": "rm notes.txt"})]
    options = {"policy": _policy('toolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "allow"')}
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, options=options)
    assert _decisions(events)["exec_command"].decision == "deny"
    assert (workspace / "notes.txt").exists()
    assert isinstance(events[-1], Result)


async def test_a_policy_without_the_shipped_table_lets_no_read_run_unasked(workspace: Path) -> None:
    """The bridge's table runs read-only commands unasked on the shipped table's word; a caller's policy built
    without it (`Policy().with_toml(...)`) covers no `cat`: asked, and denied with nobody to answer, even in yolo."""
    calls = [FunctionCall(name="exec_command", args={"cmd": "cat notes.txt"})]
    policy = Policy().with_toml(
        '[[rule]]\nname = "no-rm"\ntoolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"\n'
    )
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, approval_mode="yolo", options={"policy": policy})
    decision = _decisions(events)["exec_command"]
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "none (no rule covers it)")
