"""A caller's rule holds for a subagent's own calls on the Gemini CLI, and no such call can hang the run.

Before, in yolo a subagent's call of a tool a user rule denies or asks for was asked (unified's `--policy` file
makes the CLI ask about such tools in every mode); a subagent's question goes to the CLI's internal message bus,
which no ACP client answers, and the subagent's scheduler waited there for ever (its own time limit paused
while it waits), with the delegation counting as a call in progress, so the run's idle timeout never fired.
Now the CLI itself denies such a subagent call (`_launch.subagent_denials`) and, for a tool the policy denies
outright, every call of it (`_launch.outright_denials`). The victim (an MCP server's log, a file) proves whether
the tool ran.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import Run, call, stream_line, text
from tests.e2e.gemini_cli.test_gemini_cli_mcp_policy import _server
from tests.hang_guard import HANG_GUARD_S
from unified._adapters.gemini_cli._user_agents import MAX_BYTES
from unified.events import (
    ErrorEvent,
    PermissionDecision,
    Result,
    SubagentStarted,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
)
from unified.tools import Policy

Responses = Callable[..., Path]

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


def _rule(tool: str, decision: str = "deny", args: str | None = None) -> Policy:
    """A user rule for `tool`, and delegation allowed (the shipped table asks for it outside yolo, where nobody
    answers: the CLI is then told not to offer it at all)."""
    pattern = f'argsPattern = "{args}"\n' if args else ""
    return Policy.default().with_toml(
        f'[[rule]]\nname = "mine"\ntoolName = "{tool}"\n{pattern}decision = "{decision}"\npriority = 500\n\n'
        '[[rule]]\nname = "delegating"\ntoolName = "invoke_agent"\ndecision = "allow"\npriority = 500\n'
    )


def _delegating(responses: Responses, *calls: tuple[str, dict[str, Any]]) -> Path:
    """The model delegates to the generalist, whose subagent makes `calls` (name, arguments) in turn; then both
    finish."""
    return responses(
        stream_line(call("invoke_agent", agent_name="generalist", prompt="do it")),
        *(stream_line(call(name, **args)) for name, args in calls),
        stream_line(call("complete_task", result={"response": "finished"})),
        stream_line(text("done")),
    )


async def _run(run_gemini: Run, fake: Path, mode: str, policy: Policy, **fields: Any) -> list[UnifiedEvent]:
    options = {"policy": policy, "fake_responses_strict": False}
    with anyio.fail_after(HANG_GUARD_S):
        return await run_gemini(fake, approval_mode=mode, backend_options=options, **fields)


def _subagent_call(events: Sequence[UnifiedEvent], name: str) -> tuple[PermissionDecision, ToolResult]:
    [use] = [e for e in events if isinstance(e, ToolUse) and e.name == name and e.subagent_task_id is not None]
    [decision] = [e for e in events if isinstance(e, PermissionDecision) and e.tool_use_id == use.tool_use_id]
    [result] = [e for e in events if isinstance(e, ToolResult) and e.tool_use_id == use.tool_use_id]
    return decision, result


def _assert_refused(events: Sequence[UnifiedEvent], name: str) -> ToolResult:
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success", events[-1].error
    assert any(isinstance(e, SubagentStarted) for e in events)
    decision, result = _subagent_call(events, name)
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "mine")
    assert result.is_error
    return result


DENIED_IN_YOLO = [
    ("mcp__srv__delete_repo", "mcp_srv_delete_repo", {"repo": "prod"}, "srv.log"),
    ("run_shell_command", "run_shell_command", {"command": "touch hit"}, "ws/hit"),
    ("write_file", "write_file", {"file_path": "hit.txt", "content": "x"}, "ws/hit.txt"),
]
"""Tools a user rule denies outright, the call the subagent makes of each, and what the call would leave."""


async def test_in_yolo_a_subagents_call_of_a_denied_tool_is_refused(
    run_gemini: Run, responses: Responses, tmp_path: Path
) -> None:
    """Before: no event after `subagent_started` and the tool did not run, until the hang guard (each case). Now
    the CLI offers a tool denied outright to nobody. One run: the subagent calls each of the three in turn, each
    refused on its own by its rule."""
    server, _log = _server(tmp_path)
    fake = _delegating(responses, *((name, args) for _, name, args, _ in DENIED_IN_YOLO))
    first, *others = [tool for tool, _, _, _ in DENIED_IN_YOLO]
    policy = _rule(first).with_toml(
        "".join(
            f'[[rule]]\nname = "mine"\ntoolName = "{tool}"\ndecision = "deny"\npriority = 500\n\n' for tool in others
        )
    )
    events = await _run(run_gemini, fake, "yolo", policy, mcp_servers=(server,))
    for _, name, _, victim in DENIED_IN_YOLO:
        assert not (tmp_path / victim).exists()
        _assert_refused(events, name)


@pytest.mark.parametrize(("rule", "prompts"), [({"decision": "ask_user"}, 1), ({"decision": "deny", "args": "rm "}, 0)])
async def test_a_subagent_is_refused_what_the_main_agent_is_asked(
    run_gemini: Run, responses: Responses, workspace: Path, rule: dict[str, str], prompts: int
) -> None:
    """A rule that asks, or denies only some calls, still has the CLI ask unified about the main agent's shell
    command (the ask rule puts it to the caller; the other allows `touch`); a subagent cannot be asked, so its every
    shell command is refused (fail closed) with the rule named. Before, the subagent's call hung the run."""
    asked: list[UserInputRequest] = []

    async def allow(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow()

    fake = responses(
        stream_line(call("run_shell_command", command="touch main")),
        stream_line(call("invoke_agent", agent_name="generalist", prompt="do it")),
        stream_line(call("run_shell_command", command="touch sub")),
        stream_line(call("complete_task", result={"response": "finished"})),
        stream_line(text("done")),
    )
    events = await _run(run_gemini, fake, "yolo", _rule("run_shell_command", **rule), on_user_input=allow)
    assert (workspace / "main").exists()
    assert not (workspace / "sub").exists()
    assert len(asked) == prompts
    main = next(e for e in events if isinstance(e, ToolUse) and e.subagent_task_id is None)
    [decision] = [e for e in events if isinstance(e, PermissionDecision) and e.tool_use_id == main.tool_use_id]
    assert (main.name, decision.decision, decision.decided_by) == (
        "run_shell_command",
        "allow",
        "user" if prompts else "approval_mode",
    )
    result = _assert_refused(events, "run_shell_command")
    assert "unified: the policy rule mine does not allow it" in str(result.output)


@pytest.mark.parametrize("where", ["home", "project"])
async def test_a_subagent_of_the_users_own_is_refused_as_the_built_in_ones_are(
    run_gemini: Run, responses: Responses, workspace: Path, gemini_setup: Path, where: str
) -> None:
    """unified names the subagents the user (`<home>/.gemini/agents/`) or the project defines in its rules
    (`_user_agents.own_subagents`): a call of a tool the policy asks about is refused with the rule named. Before,
    it waited on a question nobody can answer until `subagent_silence_s` (900 s by default) ended the run."""
    agents = (gemini_setup if where == "home" else workspace) / ".gemini" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text("---\nname: helper\ndescription: Runs commands.\n---\nYou run commands.\n")
    if where == "project":  # 0.61 runs a project's agent once the user acknowledged it (its file's SHA-256)
        digest = hashlib.sha256((agents / "helper.md").read_bytes()).hexdigest()
        acknowledged = gemini_setup / ".gemini" / "acknowledgments" / "agents.json"
        acknowledged.parent.mkdir(parents=True, exist_ok=True)
        acknowledged.write_text(json.dumps({str(workspace): {"helper": digest}}))
    fake = responses(
        stream_line(call("invoke_agent", agent_name="helper", prompt="do it")),
        stream_line(call("run_shell_command", command="touch sub")),
        stream_line(call("complete_task", result="finished")),  # an agent without an output schema answers text
        stream_line(text("done")),
    )
    events = await _run(run_gemini, fake, "yolo", _rule("run_shell_command", "ask_user"))
    assert [e.agent_name for e in events if isinstance(e, SubagentStarted)] == ["helper"]
    _assert_refused(events, "run_shell_command")
    assert not (workspace / "sub").exists()


async def test_a_subagent_that_waits_unanswered_ends_the_run(
    run_gemini: Run, responses: Responses, workspace: Path, gemini_setup: Path
) -> None:
    """A subagent unified cannot name (its name past the first 64 KiB of its file, which `own_subagents` reads alone,
    behind a long description; a block scalar was this test's way until round 12 taught `own_subagents` to read
    one) is not in unified's rules, so its call of a tool the policy asks about still
    waits on a question nobody can answer: the bound on a subagent's silence (`subagent_silence_s`, 2 s here) ends
    the run with a typed error. Before, the run hung."""
    agents = gemini_setup / ".gemini" / "agents"
    agents.mkdir()
    long = "Runs commands. " * (MAX_BYTES // 15 + 1)
    (agents / "helper.md").write_text(f"---\ndescription: {long}\nname: helper\n---\nYou run commands.\n")
    fake = responses(
        stream_line(call("invoke_agent", agent_name="helper", prompt="do it")),
        stream_line(call("run_shell_command", command="touch sub")),
        stream_line(call("complete_task", result={"response": "finished"})),
        stream_line(text("done")),
    )
    policy = _rule("run_shell_command", "ask_user")
    options = {"policy": policy, "fake_responses_strict": False, "subagent_silence_s": 2}
    with anyio.fail_after(HANG_GUARD_S):
        events = await run_gemini(fake, approval_mode="yolo", backend_options=options)
    started = [e for e in events if isinstance(e, SubagentStarted)]
    assert [e.agent_name for e in started] == ["helper"]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert "subagent helper" in (result.error or "")
    assert any(isinstance(e, ErrorEvent) and e.code == "backend_error" for e in events)
    assert not (workspace / "sub").exists()
