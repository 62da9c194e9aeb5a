"""A caller's policy (`backend_options.policy`) decides the Gemini CLI's calls as on every backend (red team round 11).

Before, gemini-cli took no user policy: a deny rule for its subagent tool (`invoke_agent`, which the CLI
ran unasked) or any other tool could not be written; only plan mode and `excluded_tools` held. Now the
CLI is made to ask unified about every tool a user rule may deny or ask for, in every mode, and unified's
decision is the user's policy (deny -> denied with the rule named; ask -> `on_user_input`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import Run, call, stream_line, text
from unified.events import (
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

DENY_SUBAGENTS = Policy.default().with_toml(
    '[[rule]]\nname = "no-subagents"\ntoolName = "invoke_agent"\ndecision = "deny"\npriority = 500\n'
)


def _decision(events: Sequence[UnifiedEvent], name: str) -> PermissionDecision:
    use = next(e for e in events if isinstance(e, ToolUse) and e.name == name and e.subagent_task_id is None)
    return next(e for e in events if isinstance(e, PermissionDecision) and e.tool_use_id == use.tool_use_id)


def _delegating(responses: Responses) -> Path:
    """The model delegates to the generalist, whose subagent reads notes.txt and reports back; then "done"."""
    return responses(
        stream_line(call("invoke_agent", agent_name="generalist", prompt="read notes.txt")),
        stream_line(call("read_file", file_path="notes.txt")),
        stream_line(call("complete_task", result={"response": "alpha"})),
        stream_line(text("done")),
    )


@pytest.mark.parametrize("mode", ["default", "yolo", "plan"])
async def test_a_deny_rule_for_the_subagent_tool_holds(warm_gemini: Run, responses: Responses, mode: str) -> None:
    fake = _delegating(responses)
    options = {"policy": DENY_SUBAGENTS, "fake_responses_strict": False}
    events = await warm_gemini(fake, approval_mode=mode, backend_options=options)
    decision = _decision(events, "invoke_agent")
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "no-subagents")
    assert not any(isinstance(e, SubagentStarted) for e in events)
    result = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == decision.tool_use_id)
    assert result.is_error


async def test_an_ask_rule_puts_a_read_to_the_caller(warm_gemini: Run, responses: Responses) -> None:
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "ask-notes"\ntoolName = "read_file"\nargsPattern = "notes"\ndecision = "ask_user"\n'
    )
    asked: list[UserInputRequest] = []

    async def refuse(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny()

    fake = responses(stream_line(call("read_file", file_path="notes.txt")), stream_line(text("ok")))
    events = await warm_gemini(fake, backend_options={"policy": policy}, on_user_input=refuse)
    assert len(asked) == 1
    decision = _decision(events, "read_file")
    assert (decision.decision, decision.decided_by) == ("deny", "user")
    assert isinstance(events[-1], Result)


async def test_without_a_user_rule_reads_still_run_unasked(warm_gemini: Run, responses: Responses) -> None:
    fake = responses(stream_line(call("read_file", file_path="notes.txt")), stream_line(text("ok")))
    events = await warm_gemini(fake, backend_options={"policy": DENY_SUBAGENTS})
    decision = _decision(events, "read_file")
    assert (decision.decision, decision.rule) == ("allow", "read-only")


async def test_stream_json_refuses_a_policy_it_cannot_apply(warm_gemini: Run, responses: Responses) -> None:
    fake = responses(stream_line(text("ok")))
    events = await warm_gemini(fake, backend_options={"policy": DENY_SUBAGENTS, "transport": "stream-json"})
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert "stream-json transport cannot ask unified" in (result.error or "")


async def test_a_policy_without_the_read_only_row_is_asked_about_reads(warm_gemini: Run, responses: Responses) -> None:
    """The CLI ran the read-only tools unasked on the shipped table's word; a caller's policy built without its
    `read-only` row (`Policy().with_toml(...)`) allows no read unasked, so the CLI must ask about them too."""
    asked: list[UserInputRequest] = []

    async def refuse(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny()

    policy = Policy().with_toml('[[rule]]\nname = "shell"\ntoolName = "run_shell_command"\ndecision = "deny"\n')
    fake = responses(stream_line(call("read_file", file_path="notes.txt")), stream_line(text("ok")))
    events = await warm_gemini(fake, backend_options={"policy": policy}, on_user_input=refuse)
    assert len(asked) == 1
    decision = _decision(events, "read_file")
    assert (decision.decision, decision.decided_by) == ("deny", "user")


async def test_a_deny_rule_named_beyond_the_bmp_still_holds(warm_gemini: Run, responses: Responses) -> None:
    """The rule's name went into the CLI's policy file as a JSON surrogate-pair escape, which TOML refuses: the CLI
    dropped the rule and, in yolo, the subagent ran. Now the name is written as the character it is."""
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "no \U0001f916 agents"\ntoolName = "invoke_agent"\ndecision = "deny"\npriority = 500\n'
    )
    fake = _delegating(responses)
    options = {"policy": policy, "fake_responses_strict": False}
    events = await warm_gemini(fake, approval_mode="yolo", backend_options=options)
    assert not any(isinstance(e, SubagentStarted) for e in events)
    decision = _decision(events, "invoke_agent")
    assert (decision.decision, decision.rule) == ("deny", "no \U0001f916 agents")


async def test_a_deny_rule_whose_name_holds_a_del_character_still_holds_in_yolo(
    warm_gemini: Run, responses: Responses, workspace: Path
) -> None:
    """Red team round 14, SUCCEEDED before: the rule's name went into the `--policy` file with its DEL (U+007F)
    raw, which the CLI's TOML parser refuses: it dropped the whole file, unified's rules with it, and in yolo ran
    the shell command the caller's rule denies, unasked."""
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "no\\u007fshell"\ntoolName = "run_shell_command"\ndecision = "deny"\n'
    )
    fake = responses(stream_line(call("run_shell_command", command="touch pwned.txt")), stream_line(text("ok")))
    events = await warm_gemini(fake, approval_mode="yolo", backend_options={"policy": policy})
    decision = _decision(events, "run_shell_command")
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "no\x7fshell")
    assert not (workspace / "pwned.txt").exists()
