"""Subagents of the shared agent loop (`backend_options.subagents`): a `delegate` call runs a conversation of its
own, on both API backends, against FakeGemini over the real SDK. FakeGemini serves its turns in order, so a
scenario lists the parent's delegating turn, then the subagent's turns, then the parent's next one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import unified
from tests.e2e.api_loop.test_api_loop import collect, load_stored, params, read_notes, request_bodies, result
from tests.hang_guard import HANG_GUARD_S
from unified._agent_loop import DELEGATIONS_PER_TURN
from unified.events import (
    ErrorEvent,
    PermissionDecision,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
)
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import Fault, FunctionCall, ModelTurn, Usage

pytestmark = pytest.mark.anyio

TASK = "Read notes.txt and say what it holds"


def delegate(task: str = TASK, call_id: str = "d1", **more: Any) -> ModelTurn:
    return ModelTurn(function_calls=[FunctionCall(name="delegate", args={"task": task, **more}, id=call_id)])


def declared(body: Any) -> list[str]:
    """The function names a request declares (either API's shape)."""
    text = json.dumps(body)
    return [name for name in ("delegate", "read_file", "write_file") if f'"name": "{name}"' in text]


def no_violation(events: list[UnifiedEvent]) -> None:
    assert [e for e in events if isinstance(e, ErrorEvent) and e.code == "protocol_violation"] == []


async def test_a_delegated_task_runs_in_a_conversation_of_its_own(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(
        delegate(description="read the notes"),
        read_notes("c1"),  # the subagent's first turn
        ModelTurn(text="The notes hold alpha.", usage=Usage(input_tokens=11, output_tokens=5)),
        ModelTurn(text="Done: alpha.", usage=Usage(input_tokens=30, output_tokens=3)),
    )
    events = await collect(params(backend, fake, workspace, "summarise the notes"))
    no_violation(events)
    kinds = [(type(e).__name__, e.subagent_task_id) for e in events]
    started = next(e for e in events if isinstance(e, SubagentStarted))
    assert (started.task_id, started.agent_name, started.description) == ("task-d1", "delegate", "read the notes")
    assert started.parent_tool_use_id == "d1"
    inner = [e for e in events if e.subagent_task_id == "task-d1"]
    use = next(e for e in inner if isinstance(e, ToolUse))
    assert (use.tool_use_id, use.name, use.is_subagent) == ("task-d1/c1", "read_file", True)
    inner_result = next(e for e in inner if isinstance(e, ToolResult))
    assert inner_result.tool_use_id == "task-d1/c1"
    assert "alpha" in str(inner_result.output)
    assert "".join(e.text for e in inner if isinstance(e, TextDelta)) == "The notes hold alpha."
    done = next(e for e in events if isinstance(e, SubagentCompleted))
    assert (done.task_id, done.status, done.result) == ("task-d1", "completed", "The notes hold alpha.")
    assert done.usage is not None
    assert (done.usage.input_tokens, done.usage.output_tokens) == (11, 5)
    answer = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == "d1")
    assert (answer.output, answer.is_error, answer.subagent_task_id) == ("The notes hold alpha.", False, None)
    order = [kinds.index(k) for k in [("ToolUse", None), ("PermissionDecision", None), ("SubagentStarted", None)]]
    assert order == sorted(order)
    assert events.index(started) < events.index(use) < events.index(done) < events.index(answer)
    decision = next(e for e in events if isinstance(e, PermissionDecision) and e.tool_use_id == "d1")
    assert (decision.decision, decision.rule) == ("allow", "delegate")
    final = result(events)
    assert (final.status, final.final_text, final.turns) == ("success", "Done: alpha.", 2)
    assert final.usage.input_tokens >= 30 + 11  # the subagent's usage is in the run's
    stored = await load_stored(backend, str(final.short_id))
    assert (stored.usage.input_tokens, stored.usage.output_tokens, stored.turns) == (
        final.usage.input_tokens,
        final.usage.output_tokens,
        2,
    )
    bodies = request_bodies(fake, backend)
    assert len(bodies) == 4
    assert declared(bodies[0]) == ["delegate", "read_file", "write_file"]
    child = json.dumps(bodies[1])
    assert TASK in child
    assert "summarise the notes" not in child
    assert declared(bodies[1]) == ["read_file", "write_file"]  # one level: no delegate
    assert "The notes hold alpha." in json.dumps(bodies[3])  # the parent's next request has the answer
    fake.assert_done()


@pytest.mark.parametrize("options", [{"subagents": False}, {"local_tools": False}])
async def test_no_delegate_is_offered_when_subagents_or_local_tools_are_off(
    backend: str, fake: FakeGemini, workspace: Path, options: dict[str, bool]
) -> None:
    fake.add(ModelTurn(text="plain"))
    events = await collect(params(backend, fake, workspace, backend_options=options))
    assert result(events).final_text == "plain"
    assert "delegate" not in declared(request_bodies(fake, backend)[0])


async def test_subagents_are_offered_by_default(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(ModelTurn(text="plain"))
    await collect(params(backend, fake, workspace))
    assert "delegate" in declared(request_bodies(fake, backend)[0])


async def test_excluding_delegate_offers_no_subagents(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(ModelTurn(text="plain"))
    await collect(params(backend, fake, workspace, excluded_tools=["delegate"]))
    assert "delegate" not in declared(request_bodies(fake, backend)[0])


async def test_a_subagent_cannot_delegate_again(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(
        delegate(),
        delegate("and again", call_id="d2"),  # the subagent tries: refused, it is told why
        ModelTurn(text="I cannot delegate."),
        ModelTurn(text="ok"),
    )
    events = await collect(params(backend, fake, workspace))
    no_violation(events)
    assert len([e for e in events if isinstance(e, SubagentStarted)]) == 1
    refused = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == "task-d1/d2")
    assert refused.is_error
    assert "cannot delegate" in str(refused.output)
    assert result(events).final_text == "ok"


async def test_a_failed_subagent_is_an_error_result_and_the_run_goes_on(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(delegate(), ModelTurn(text="recovered"))
    fake.inject(Fault(kind="bad_request", message="the subagent's request is refused"), at_request=1)
    events = await collect(params(backend, fake, workspace))
    no_violation(events)
    done = next(e for e in events if isinstance(e, SubagentCompleted))
    assert done.status == "failed"
    assert "refused" in str(done.result)
    answer = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == "d1")
    assert answer.is_error
    assert "the subagent ended failed" in str(answer.output)
    assert (result(events).status, result(events).final_text) == ("success", "recovered")


async def test_a_delegate_call_without_a_task_is_refused(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(
        ModelTurn(function_calls=[FunctionCall(name="delegate", args={"description": "x"}, id="d1")]),
        ModelTurn(text="ok"),
    )
    events = await collect(params(backend, fake, workspace))
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    answer = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id == "d1")
    assert answer.is_error
    assert "needs `task`" in str(answer.output)


async def test_a_subagent_s_permission_prompt_names_its_task(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(
        delegate("Write x.txt"),
        ModelTurn(
            function_calls=[FunctionCall(name="write_file", args={"file_path": "x.txt", "content": "x"}, id="w")]
        ),
        ModelTurn(text="written"),
        ModelTurn(text="ok"),
    )
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow()

    events = await collect(params(backend, fake, workspace, on_user_input=answer))
    no_violation(events)
    (prompt,) = asked
    assert (prompt.subagent_task_id, prompt.is_subagent, prompt.tool_use_id) == ("task-d1", True, "task-d1/w")
    assert (workspace / "x.txt").read_text() == "x"
    done = next(e for e in events if isinstance(e, SubagentCompleted))
    assert (done.status, done.result) == ("completed", "written")


async def test_cancelling_the_run_during_a_subagent_ends_it(backend: str, fake: FakeGemini, workspace: Path) -> None:
    """The subagent's stream stalls after its first piece (it would hang until the server stops): the consumer
    cancels on that piece, and the run ends `cancelled`; on Interactions the subagent's interaction is cancelled
    server-side too."""
    after = 1 if backend == "generate-content" else 4  # an interaction's first events come before its text
    fake.add(delegate(), ModelTurn(text="one two three", text_chunks=3, fault=Fault(kind="stall", after=after)))
    seen: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with unified.execute(params(backend, fake, workspace)) as stream:
            async for event in stream:
                seen.append(event)
                if isinstance(event, TextDelta) and event.subagent_task_id == "task-d1":
                    stream.cancel()
    assert (result(seen).status, result(seen).final_text) == ("cancelled", "")
    assert not [e for e in seen if isinstance(e, SubagentCompleted)]
    if backend == "interactions":
        started = [r.body for r in fake.requests_for("interactions.create")]
        assert len(started) == 2
        cancelled = [r.path for r in fake.requests_for("interactions.cancel")]
        assert any(path.endswith("/interactions/fake-interaction-2/cancel") for path in cancelled)


async def test_a_subagent_s_request_is_retried(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(delegate(), ModelTurn(text="found it"), ModelTurn(text="ok"))
    fake.inject(Fault(kind="server_error"), at_request=1)
    events = await collect(params(backend, fake, workspace))
    no_violation(events)
    (retry,) = [e for e in events if isinstance(e, WarningEvent) and e.code == "retrying"]
    assert retry.subagent_task_id == "task-d1"
    done = next(e for e in events if isinstance(e, SubagentCompleted))
    assert (done.status, done.result) == ("completed", "found it")
    assert result(events).final_text == "ok"


async def test_a_turn_runs_a_few_delegations_and_refuses_the_rest(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    """A model (or an injected prompt) asking for many subagents at once gets DELEGATIONS_PER_TURN of them; each
    could take 50 requests. Their long descriptions are clipped where the stream shows them."""
    calls = [
        FunctionCall(name="delegate", args={"task": f"task {n}", "description": "d" * 5000}, id=f"d{n}")
        for n in range(DELEGATIONS_PER_TURN + 2)
    ]
    fake.add(ModelTurn(function_calls=calls))
    fake.add(*[ModelTurn(text=f"answer {n}") for n in range(DELEGATIONS_PER_TURN)], ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace))
    no_violation(events)
    started = [e for e in events if isinstance(e, SubagentStarted)]
    assert [e.task_id for e in started] == [f"task-d{n}" for n in range(DELEGATIONS_PER_TURN)]
    assert all(len(e.description or "") <= 200 for e in started)
    refused = [e for e in events if isinstance(e, ToolResult) and e.is_error]
    assert [e.tool_use_id for e in refused] == [f"d{n}" for n in range(DELEGATIONS_PER_TURN, DELEGATIONS_PER_TURN + 2)]
    assert all("at most" in str(e.output) for e in refused)
    assert result(events).final_text == "ok"
