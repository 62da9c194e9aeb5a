"""Permission prompts of the real `claude`, answered by the caller: allow, deny with a message, a changed
input, allow always, stop; questions (AskUserQuestion); and the policy without a callback.

The CLI is told to ask about every call (its `--settings` ask rules), so the caller's policy and
callback decide each one; the answers travel back over its control protocol.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import Processes, alive, claude_home, kinds, model_bodies, run_claude
from unified.events import (
    PermissionDecision,
    Result,
    ToolResult,
    ToolUse,
    UserInputRequest,
    UserInputResponse,
)
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn

pytestmark = pytest.mark.anyio

DENIAL = "Write to staging.txt instead."


def bash(command: str, call_id: str) -> ModelTurn:
    return ModelTurn(
        function_calls=[FunctionCall(name="Bash", args={"command": command, "description": "d"}, id=call_id)]
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_every_answer_reaches_the_cli(anyio_backend: str, workspace: Path) -> None:
    """One run, one call per answer: allow, deny with a message, a changed input, allow always (then
    the same call again, which the session rule allows without asking, and another one, which asks)."""
    write = FunctionCall(name="Write", args={"file_path": "allowed.txt", "content": "yes\n"}, id="toolu_allow")
    denied = FunctionCall(name="Write", args={"file_path": "denied.txt", "content": "no\n"}, id="toolu_deny")
    changed = FunctionCall(name="Write", args={"file_path": "model.txt", "content": "model\n"}, id="toolu_changed")
    turns = [
        ModelTurn(function_calls=[write]),
        ModelTurn(function_calls=[denied]),
        ModelTurn(function_calls=[changed]),
        bash("touch always.txt", "toolu_always"),
        bash("touch always.txt", "toolu_again"),
        bash("touch other.txt", "toolu_other"),
        ModelTurn(text="All done."),
    ]
    changed_input = {"file_path": "user.txt", "content": "changed by the user\n"}
    answers = {
        "toolu_allow": UserInputResponse.allow(),
        "toolu_deny": UserInputResponse.deny(DENIAL),
        "toolu_changed": UserInputResponse.allow(updated_input=changed_input),
        "toolu_always": UserInputResponse.allow(always=True),
        "toolu_other": UserInputResponse.deny(),
    }
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        assert request.source == "permission"
        assert request.tool_use_id is not None
        return answers[request.tool_use_id]

    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, answer=answer)
        bodies = model_bodies(server)
    assert [r.tool_use_id for r in asked] == [
        "toolu_allow",
        "toolu_deny",
        "toolu_changed",
        "toolu_always",
        "toolu_other",
    ]
    decisions = {e.tool_use_id: e for e in events if isinstance(e, PermissionDecision)}
    results = {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}
    assert (workspace / "allowed.txt").read_text() == "yes\n"
    assert not (workspace / "denied.txt").exists()
    assert decisions["toolu_deny"].message == DENIAL
    assert results["toolu_deny"].is_error
    assert any(DENIAL in body for body in bodies), "the model reads the denial's message"
    assert not (workspace / "model.txt").exists()
    assert (workspace / "user.txt").read_text() == changed_input["content"]
    assert decisions["toolu_changed"].input == changed_input
    assert results["toolu_changed"].input == changed_input
    uses = {e.tool_use_id: e for e in events if isinstance(e, ToolUse)}
    assert uses["toolu_changed"].input == changed.args, "tool_use shows what the model asked for"
    assert decisions["toolu_always"].decided_by == "user"
    assert decisions["toolu_always"].rule
    again = decisions["toolu_again"]
    assert (again.decision, again.decided_by, again.rule) == ("allow", "policy", decisions["toolu_always"].rule)
    assert decisions["toolu_other"].decision == "deny", "allow always covered only the same command"
    assert not (workspace / "other.txt").exists()
    assert not (workspace / ".claude").exists(), "nothing was written into the user's project"
    assert not list(claude_home().rglob("settings*.json")), "nor into the CLI's settings"
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"


async def test_stop_ends_the_run_interrupted_and_leaves_no_process(workspace: Path) -> None:
    turns = [bash("touch never.txt", "toolu_stop"), ModelTurn(text="Never asked for.")]
    processes = Processes()

    async def answer(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.stop_run("not now")

    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, answer=answer, options={"start_process": processes})
        assert len(server.requests_for("messages")) == 1, "the model is not asked again after a stop"
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert decision.stops_run
    assert decision.decision == "deny"
    assert decision.decided_by == "user"
    assert not [e for e in events if isinstance(e, ToolResult)], "a stopped call has no tool_result"
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "interrupted"
    assert not (workspace / "never.txt").exists()
    assert processes.pids
    assert not any(alive(pid) for pid in processes.pids)


async def test_without_a_callback_the_policy_decides_and_denies_what_needs_approval(workspace: Path) -> None:
    """One run without a callback: two reads the policy allows (one of a missing file) and a write it denies,
    each call's decision, arguments and result asserted on its own."""
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="Read", args={"file_path": "notes.txt"}, id="toolu_read")]),
        ModelTurn(function_calls=[FunctionCall(name="Read", args={"file_path": "missing.txt"}, id="toolu_missing")]),
        bash("echo hi > out.txt", "toolu_shell"),
        ModelTurn(text="Could not."),
    ]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace)
        bodies = model_bodies(server)
    decisions = {e.tool_use_id: e for e in events if isinstance(e, PermissionDecision)}
    # the write needs approval: denied, nobody can answer
    shell = decisions["toolu_shell"]
    assert (shell.decision, shell.decided_by) == ("deny", "policy")
    assert "nobody can answer" in (shell.reason or "")
    assert not (workspace / "out.txt").exists()
    assert any("Tool call Bash was denied" in body for body in bodies)
    # the reads are the policy's: the model's arguments are reported, the missing file is an error result
    uses = {e.tool_use_id: e for e in events if isinstance(e, ToolUse)}
    assert uses["toolu_read"].input == {"file_path": "notes.txt"}, "the model's arguments, not the CLI's absolute path"
    assert (decisions["toolu_read"].decision, decisions["toolu_read"].decided_by) == ("allow", "policy")
    assert decisions["toolu_read"].rule == "read-only"
    results = {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}
    assert results["toolu_read"].output is not None
    assert "alpha" in results["toolu_read"].output
    assert not results["toolu_read"].is_error
    assert results["toolu_missing"].is_error
    assert "does not exist" in (results["toolu_missing"].output or "")
    order = kinds(events)
    assert order.index("tool_use") < order.index("permission_decision") < order.index("tool_result")


async def test_yolo_allows_and_plan_denies_by_the_approval_mode(workspace: Path) -> None:
    turns = [bash("echo yolo > yolo.txt", "toolu_yolo"), ModelTurn(text="Written.")]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, approval_mode="yolo")
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert (decision.decision, decision.decided_by, decision.rule) == ("allow", "approval_mode", "yolo")
    assert (workspace / "yolo.txt").exists()
    write = FunctionCall(name="Write", args={"file_path": "plan.txt", "content": "x"}, id="toolu_plan")
    read = FunctionCall(name="Read", args={"file_path": "notes.txt"}, id="toolu_read")
    async with FakeAnthropic([ModelTurn(function_calls=[read, write]), ModelTurn(text="Planned.")]) as server:
        events = await run_claude(server, workspace, approval_mode="plan")
    decisions = {e.tool_use_id: e for e in events if isinstance(e, PermissionDecision)}
    assert decisions["toolu_read"].decision == "allow"
    assert (decisions["toolu_plan"].decision, decisions["toolu_plan"].decided_by) == ("deny", "approval_mode")
    assert not (workspace / "plan.txt").exists()


async def test_a_question_of_the_model_reaches_on_user_input_and_its_answer_the_model(workspace: Path) -> None:
    question = {
        "questions": [
            {
                "question": "Which colour?",
                "header": "Colour",
                "options": [{"label": "red", "description": "warm"}, {"label": "blue", "description": "cold"}],
                "multiSelect": False,
            }
        ]
    }
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="AskUserQuestion", args=question, id="toolu_ask")]),
        ModelTurn(text="Red it is."),
    ]
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={request.questions[0].id: "red"})

    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, workspace, answer=answer)
        bodies = model_bodies(server)
    assert len(asked) == 1
    assert asked[0].source == "model-tool"
    assert [o.label for o in asked[0].questions[0].options] == ["red", "blue"]
    result = next(e for e in events if isinstance(e, ToolResult))
    assert not result.is_error
    assert "red" in (result.output or "")
    assert any(
        '\\"Which colour?\\"=\\"red\\"' in body or "red" in json.loads(body)["messages"][-1].__str__()
        for body in bodies[1:]
    )
