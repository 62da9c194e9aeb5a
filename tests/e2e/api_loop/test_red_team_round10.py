"""Red team round 10: the `delegate` tool of the shared agent loop under the run's policy, and the bounds on what
delegation multiplies (model requests, subagents), on both API backends against FakeGemini over the real SDK.

A `delegate` call was allowed by a hard-coded decision: a caller's rule denying or asking for it was never
consulted, and a run with `max_turns=N` could make N + 4N(N-1) model requests (each subagent has `max_turns`
of its own, as `max_turns` counts the main agent's turns on every backend): now at most `max_subagents`
subagents start, and `max_requests`, when set, bounds the total."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.api_loop.test_api_loop import collect, params, read_notes, request_bodies, result
from tests.e2e.api_loop.test_subagents import delegate, no_violation
from unified import _limits as limits
from unified.events import (
    PermissionDecision,
    SubagentStarted,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
)
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import FunctionCall, ModelTurn
from unified.tools import Policy

pytestmark = pytest.mark.anyio


def rule(decision: str, modes: str = "") -> Policy:
    return Policy.default().with_toml(f'[[rule]]\ntoolName = "delegate"\ndecision = "{decision}"\n{modes}')


def answer_of(events: list[UnifiedEvent], call_id: str) -> ToolResult:
    return next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == call_id)


async def test_a_deny_rule_for_delegate_stops_the_delegation(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(delegate(), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, backend_options={"policy": rule("deny")}))
    no_violation(events)
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    (decision,) = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.decision, decision.tool_use_id) == ("deny", "d1")
    answer = answer_of(events, "d1")
    assert answer.is_error
    assert "Tool call delegate was denied" in str(answer.output)
    assert len(request_bodies(fake, backend)) == 2  # the parent's two turns: no subagent request
    assert result(events).final_text == "ok"


async def test_a_wildcard_deny_rule_stops_delegate(backend: str, fake: FakeGemini, workspace: Path) -> None:
    policy = Policy.default().with_toml('[[rule]]\ntoolName = "del*"\ndecision = "deny"\n')
    fake.add(delegate(), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, backend_options={"policy": policy}))
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    assert answer_of(events, "d1").is_error


async def test_an_ask_rule_for_delegate_asks_and_a_refusal_stops_it(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    asked: list[UserInputRequest] = []

    async def refuse(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny("no subagents today")

    fake.add(delegate(), ModelTurn(text="ok"))
    p = params(backend, fake, workspace, on_user_input=refuse, backend_options={"policy": rule("ask_user")})
    events = await collect(p)
    assert [r.tool_use_id for r in asked] == ["d1"]
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    answer = answer_of(events, "d1")
    assert answer.is_error
    assert "no subagents today" in str(answer.output)


async def test_an_ask_rule_for_delegate_with_nobody_to_ask_denies(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(delegate(), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, backend_options={"policy": rule("ask_user")}))
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    assert answer_of(events, "d1").is_error


async def test_a_plan_mode_deny_rule_for_delegate_holds_in_plan(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(delegate(), ModelTurn(text="ok"))
    policy = rule("deny", 'modes = ["plan"]')
    events = await collect(params(backend, fake, workspace, approval_mode="plan", backend_options={"policy": policy}))
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    assert answer_of(events, "d1").is_error


async def test_the_user_stopping_at_delegate_ends_the_run(backend: str, fake: FakeGemini, workspace: Path) -> None:
    async def stop(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.stop_run()

    fake.add(delegate())
    p = params(backend, fake, workspace, on_user_input=stop, backend_options={"policy": rule("ask_user")})
    events = await collect(p)
    assert result(events).status == "interrupted"
    assert not [e for e in events if isinstance(e, SubagentStarted)]


async def test_the_user_policy_decides_the_subagent_s_own_calls(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    """The caller's policy reaches the tool runtime: a rule denying read_file holds for the subagent's call."""
    policy = Policy.default().with_toml('[[rule]]\ntoolName = "read_file"\ndecision = "deny"\n')
    fake.add(delegate(), read_notes("c1"), ModelTurn(text="could not read"), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, backend_options={"policy": policy}))
    read = answer_of(events, "task-d1/c1")
    assert read.is_error
    assert "denied" in str(read.output)


async def test_max_requests_bounds_the_run_s_requests(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(delegate(), *[read_notes(f"c{n}") for n in range(8)], ModelTurn(text="never"))
    events = await collect(params(backend, fake, workspace, backend_options={"max_requests": 4}))
    no_violation(events)
    assert len(request_bodies(fake, backend)) == 4
    assert result(events).status == "max_turns"
    assert "max_requests=4" in str(result(events).error)


async def test_max_subagents_bounds_the_run_s_subagents(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """A model delegating turn after turn (another task each time: no runaway loop) starts max_subagents of
    them; the next delegate call is answered "not run"."""
    for n in range(2):
        fake.add(delegate(f"task {n}", call_id=f"d{n}"), ModelTurn(text=f"answer {n}"))
    fake.add(delegate("task 2", call_id="d2"), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, backend_options={"max_subagents": 2}))
    no_violation(events)
    assert [e.task_id for e in events if isinstance(e, SubagentStarted)] == ["task-d0", "task-d1"]
    refused = answer_of(events, "d2")
    assert refused.is_error
    assert "max_subagents=2" in str(refused.output)
    assert result(events).final_text == "ok"


async def test_max_subagents_is_sixteen_by_default(backend: str, fake: FakeGemini, workspace: Path) -> None:
    for n in range(17):
        fake.add(ModelTurn(function_calls=[FunctionCall(name="delegate", args={"task": f"t{n}"}, id=f"d{n}")]))
        if n < 16:  # the 17th is refused: no subagent turn
            fake.add(ModelTurn(text=f"a{n}"))
    fake.add(ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace))
    assert len([e for e in events if isinstance(e, SubagentStarted)]) == 16
    assert "max_subagents=16" in str(answer_of(events, "d16").output)


def tool_use_ids(events: list[UnifiedEvent]) -> list[str]:
    return [e.tool_use_id for e in events if isinstance(e, ToolUse)]


async def test_a_server_id_with_a_slash_is_never_a_subagent_s_id(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    """The server names a call of the run `task-d1/c1`, the id the stream gave subagent d1's call c1: two
    tool_use of one id, each answered twice (three protocol violations). The id is shown escaped; the server
    gets its own id back in the function response."""
    fake.add(delegate(), read_notes("c1"), ModelTurn(text="alpha"), read_notes("task-d1/c1"), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace))
    no_violation(events)
    ids = tool_use_ids(events)
    assert len(ids) == len(set(ids)) == 3
    main = [e for e in events if isinstance(e, ToolUse) and e.name == "read_file" and e.subagent_task_id is None]
    assert [e.tool_use_id for e in main] == ["task-d1%2Fc1"]
    assert answer_of(events, "task-d1%2Fc1").output
    assert '"task-d1/c1"' in json.dumps(request_bodies(fake, backend)[-1])  # the server's own id, answered
    assert result(events).final_text == "ok"


async def test_two_subagents_calls_never_share_an_id(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """Delegations `a` and `a/b`: subagent a's call `b/c` and subagent a/b's call `c` were both `task-a/b/c`."""
    fake.add(
        ModelTurn(
            function_calls=[
                FunctionCall(name="delegate", args={"task": "one"}, id="a"),
                FunctionCall(name="delegate", args={"task": "two"}, id="a/b"),
            ]
        ),
        read_notes("b/c"),
        ModelTurn(text="first"),
        read_notes("c"),
        ModelTurn(text="second"),
        ModelTurn(text="ok"),
    )
    events = await collect(params(backend, fake, workspace))
    no_violation(events)
    ids = tool_use_ids(events)
    assert len(ids) == len(set(ids)) == 4
    assert [e.task_id for e in events if isinstance(e, SubagentStarted)] == ["task-a", "task-a%2Fb"]
    assert result(events).final_text == "ok"


async def test_a_turn_of_many_calls_runs_a_bounded_number(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """A turn may carry 10,000 calls, all run at once (reads need no approval), each output up to 256 Ki
    characters, all held and sent in the next request. The loop runs MAX_CALLS_PER_TURN of them."""
    most = limits.MAX_CALLS_PER_TURN
    calls = [FunctionCall(name="read_file", args={"file_path": "notes.txt"}, id=f"r{n}") for n in range(most + 3)]
    fake.add(ModelTurn(function_calls=calls), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace))
    no_violation(events)
    answers = [e for e in events if isinstance(e, ToolResult)]
    assert [e.tool_use_id for e in answers] == [c.id for c in calls]
    assert not any(e.is_error for e in answers[:most])
    assert all(e.is_error and f"at most {most} calls" in str(e.output) for e in answers[most:])
    assert result(events).final_text == "ok"


@pytest.mark.parametrize("backend", ["interactions"])  # generate-content's translator made the ids unique already
async def test_two_calls_of_one_server_id_are_each_shown(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """The server gives a read and a write the same id: on Interactions the write ran (auto_edit) with no
    `tool_use` of its own, shown as a second decision and result of the read (two protocol violations). Each
    call now has an id of its own in the stream; the server gets its own id back for both."""
    read = FunctionCall(name="read_file", args={"file_path": "notes.txt"}, id="c1")
    write = FunctionCall(name="write_file", args={"file_path": "x.txt", "content": "pwned"}, id="c1")
    fake.add(ModelTurn(function_calls=[read, write]), ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, approval_mode="auto_edit"))
    no_violation(events)
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [u.name for u in uses] == ["read_file", "write_file"]
    assert len({u.tool_use_id for u in uses}) == 2
    shown_write = next(u for u in uses if u.name == "write_file")
    assert shown_write.input == write.args
    assert answer_of(events, shown_write.tool_use_id).is_error is False
    assert json.dumps(request_bodies(fake, backend)[-1]).count('"c1"') >= 2  # both answered by the server's id
