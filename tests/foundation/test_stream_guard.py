"""The stream guard's invariants, on asyncio and trio: whatever the backend does, the stream is well-formed."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import BackendError, ExecuteParams, UnifiedEvent, UserInputRequest, UserInputResponse
from unified._execute import EventStream
from unified.backends import RunContext, RunOutcome, UnsupportedOption, refusal
from unified.errors import RunStopped, UnifiedError
from unified.events import (
    ERROR_CODES,
    WARNING_CODES,
    AssistantMessage,
    ErrorEvent,
    PermissionDecision,
    Question,
    Result,
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    Usage,
    WarningEvent,
)
from unified.testing._scripted import Ask, EndMessage, Fail, ScriptedBackend, Sleep, Step

pytestmark = pytest.mark.anyio

START = SessionStarted(backend="scripted", session_id="sess-1", short_id="sess-1")
DECIDED = PermissionDecision(tool_use_id="a", tool_name="x", decision="allow", decided_by="policy")


def params(**kw: Any) -> ExecuteParams:
    return ExecuteParams(prompt="p", backend="scripted", **kw)


class Slow(ScriptedBackend):
    """Starts its session, then waits (30 s, far past any test): only a stop ends it. `cleaned` is set by its
    cleanup, `stopped_on` holds the thread that ran it."""

    def __init__(self) -> None:
        super().__init__([])
        self.cleaned = anyio.Event()
        self.stopped_on: list[int] = []

    async def run(self, ctx: RunContext) -> RunOutcome:
        try:
            await ctx.emit(START.model_copy())
            await anyio.sleep(30)
            return RunOutcome()
        finally:
            self.stopped_on.append(threading.get_ident())
            self.cleaned.set()


async def run(
    steps: Sequence[Step], *, outcome: RunOutcome | None = None, strict: bool = False, **kw: Any
) -> tuple[list[UnifiedEvent], ScriptedBackend]:
    backend = ScriptedBackend(list(steps), outcome or RunOutcome())
    out: list[UnifiedEvent] = []
    async with EventStream(params(**kw), backend=backend, strict=strict) as stream:
        async for event in stream:
            out.append(event)
    return out, backend


def assert_well_formed(events: list[UnifiedEvent]) -> Result:
    assert [e.seq for e in events] == list(range(len(events)))
    results = [e for e in events if isinstance(e, Result)]
    assert len(results) == 1
    assert events[-1] is results[0]
    return results[0]


async def test_normal_run_aggregates_messages_usage_and_ids() -> None:
    events, _ = await run(
        [
            START,
            Thinking(text="hmm", replace=True),
            TextDelta(text="Let me "),
            TextDelta(text="look."),
            ToolUse(tool_use_id="c1", name="read_file", input={"path": "a"}),
            ToolResult(tool_use_id="c1", output="A"),
            Usage(input_tokens=100, output_tokens=7, thinking_tokens=2),
            EndMessage(),
            TextDelta(text="Done."),
            Usage(input_tokens=120, output_tokens=2),
            EndMessage(),
        ]
    )
    result = assert_well_formed(events)
    kinds = [e.type for e in events]
    assert kinds == [
        "session_started",
        "thinking",
        "text_delta",
        "text_delta",
        "assistant_message",
        "tool_use",
        "permission_decision",  # the scripted backend's own, one per client-side call (docs/protocol.md)
        "tool_result",
        "text_delta",
        "assistant_message",
        "result",
    ]
    assert [e.text for e in events if isinstance(e, AssistantMessage)] == ["Let me look.", "Done."]
    assert all(e.session_id == "sess-1" for e in events)
    assert {"seq", "session_id"} <= set(events[2].model_dump(exclude_unset=True))  # assigned, not defaulted
    assert result.status == "success"
    assert result.final_text == "Done."
    assert result.turns == 2
    assert result.short_id == "sess-1"
    assert result.usage == Usage(input_tokens=220, output_tokens=9, thinking_tokens=2)


async def test_zero_output_tokens_are_estimated_and_flagged() -> None:
    events, _ = await run(
        [
            START,
            TextDelta(text="x" * 41),
            Thinking(text="t" * 8, replace=True),
            Usage(input_tokens=10, output_tokens=0),
            EndMessage(),
        ]
    )
    usage = assert_well_formed(events).usage
    assert (usage.output_tokens, usage.thinking_tokens, usage.estimated) == (11, 2, True)


async def test_unreported_usage_is_estimated_not_zero() -> None:
    events, _ = await run([START, TextDelta(text="abcdefgh")])
    usage = assert_well_formed(events).usage
    assert (usage.output_tokens, usage.estimated) == (2, True)


async def test_subagent_usage_counts_in_the_total() -> None:
    events, _ = await run(
        [
            START,
            SubagentStarted(task_id="t1", agent_name="generalist"),
            TextDelta(text="inner", subagent_task_id="t1"),
            SubagentCompleted(task_id="t1", usage=Usage(input_tokens=5, output_tokens=5)),
            TextDelta(text="outer"),
            Usage(input_tokens=1, output_tokens=1),
        ]
    )
    result = assert_well_formed(events)
    inner = [e for e in events if isinstance(e, AssistantMessage) and e.subagent_task_id == "t1"]
    assert [m.text for m in inner] == ["inner"]
    assert inner[0].is_subagent
    assert result.final_text == "outer"
    assert result.usage == Usage(input_tokens=6, output_tokens=6)


async def test_typed_failure_gives_error_then_result() -> None:
    events, _ = await run(
        [
            START,
            TextDelta(text="partial"),
            Fail(BackendError("gemini exited with code 41", hint="check GEMINI_API_KEY", code="auth_error")),
        ]
    )
    result = assert_well_formed(events)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1
    assert errors[0].code == "auth_error"
    assert errors[0].fatal
    assert "check GEMINI_API_KEY" in errors[0].message
    assert result.status == "error"
    assert "code 41" in (result.error or "")
    assert result.final_text == "partial"  # what arrived before the crash is not lost


async def test_unexpected_exception_is_reported_as_a_bug_not_a_traceback() -> None:
    events, _ = await run([START, Fail(KeyError("candidates"))])
    result = assert_well_formed(events)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "internal_error"
    assert "KeyError" in error.message
    assert "bug in unified" in error.message
    assert result.status == "error"


async def test_cancel_ends_with_cancelled_result_and_runs_cleanup() -> None:
    slow = Slow()
    cleaned = slow.cleaned

    out: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params(), backend=slow) as stream:
            async for event in stream:
                out.append(event)
                if isinstance(event, SessionStarted):
                    stream.cancel()
    assert cleaned.is_set()
    result = assert_well_formed(out)
    assert result.status == "cancelled"


async def test_interrupt_is_its_own_status() -> None:
    out: list[UnifiedEvent] = []
    async with EventStream(params(), backend=ScriptedBackend([START, Sleep(30)])) as stream:
        async for event in stream:
            out.append(event)
            if isinstance(event, SessionStarted):
                stream.cancel(interrupted=True)
    assert assert_well_formed(out).status == "interrupted"


async def test_idle_timeout() -> None:
    with anyio.fail_after(HANG_GUARD_S):
        events, _ = await run([START, Sleep(30)], idle_timeout_s=0.2)
    result = assert_well_formed(events)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert (error.code, error.retryable, result.status) == ("idle_timeout", True, "error")


async def test_events_that_keep_coming_hold_off_the_idle_timeout_until_they_stop() -> None:
    """The watchdog reads activity off the events' sequence (no clock read per event): a stream that
    talks for well over the limit is not idle, and its silence afterwards is."""
    chatter: list[Step] = [START]
    for _ in range(60):  # 1.2 s of chatter: more than twice the limit
        chatter += [TextDelta(text="."), Sleep(0.02)]
    chatter.append(Sleep(30))
    with anyio.fail_after(HANG_GUARD_S):
        events, _ = await run(chatter, idle_timeout_s=0.5)
    assert sum(isinstance(e, TextDelta) for e in events) == 60
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "idle_timeout"
    assert assert_well_formed(events).status == "error"


async def test_time_inside_a_local_tool_call_is_not_idle_time() -> None:
    """Wide margins (a call of 1.5 s, idle at 1 s): at 0.2 s idle a stall of a loaded machine between two events
    outside the call could time the run out."""
    long_tool: list[Step] = [START, ToolUse(tool_use_id="t1", name="run_shell_command"), Sleep(1.5)]
    long_tool += [ToolResult(tool_use_id="t1", output="built"), TextDelta(text="done")]
    events, _ = await run(long_tool, idle_timeout_s=1.0)
    assert assert_well_formed(events).status == "success"
    assert not any(isinstance(e, ErrorEvent) for e in events)


async def test_a_silent_server_side_tool_is_idle_time() -> None:
    with anyio.fail_after(HANG_GUARD_S):
        events, _ = await run(
            [START, ToolUse(tool_use_id="s1", name="google_search", server_side=True), Sleep(30)], idle_timeout_s=0.2
        )
    assert next(e for e in events if isinstance(e, ErrorEvent)).code == "idle_timeout"


async def test_total_timeout_even_when_events_keep_coming() -> None:
    chatter: list[Step] = [START]
    for _ in range(200):
        chatter += [TextDelta(text="."), Sleep(0.02)]
    with anyio.fail_after(HANG_GUARD_S):
        events, _ = await run(chatter, total_timeout_s=0.3, idle_timeout_s=1)
    result = assert_well_formed(events)
    assert next(e for e in events if isinstance(e, ErrorEvent)).code == "total_timeout"
    assert result.status == "error"
    assert len(events) < 200


def test_the_watchdog_s_look_names_the_deadline_that_passed_and_waits_for_the_nearest() -> None:
    """One look, on a clock the test sets: the total timeout wins when both passed, the idle one alone
    when only it did, and otherwise the wait is the nearest deadline's, within 0.01-0.5 s."""
    from unified._internal.stream import StreamGuard, _Channel

    now = [100.0]

    def look(idle: float | None, total: float | None, at: float) -> tuple[float | None, str | None]:
        now[0] = 100.0
        guard = StreamGuard(
            params(idle_timeout_s=idle, total_timeout_s=total), ScriptedBackend([]), _Channel(), clock=lambda: now[0]
        )
        now[0] = at
        wait = guard._look()
        return (None if wait is None else round(wait, 6)), guard._stop_reason

    assert look(None, None, 100.0) == (0.5, None)
    assert look(1.0, 0.2, 100.1) == (0.1, None)
    assert look(0.3, 5.0, 100.1) == (0.2, None)
    assert look(10.0, 20.0, 100.0) == (0.5, None)
    assert look(1.0, 1.0, 100.995) == (0.01, None)
    assert look(1.0, 1.0, 101.5) == (None, "total_timeout")
    assert look(1.0, 3.0, 101.5) == (None, "idle_timeout")
    assert look(None, 1.0, 101.0) == (None, "total_timeout")


async def test_closing_early_stops_the_backend() -> None:
    cleaned = anyio.Event()

    class Endless(ScriptedBackend):
        async def run(self, ctx: RunContext) -> RunOutcome:
            try:
                await ctx.emit(START.model_copy())
                while True:
                    await ctx.emit(TextDelta(text="x"))
            finally:
                cleaned.set()

    seen = 0
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params(), backend=Endless([])) as stream:
            async for _ in stream:
                seen += 1
                if seen == 10:
                    break
    assert cleaned.is_set()


async def test_a_bare_async_for_left_early_and_dropped_stops_the_run_and_leaves_the_callers_scopes_alone() -> None:
    slow = Slow()
    cleaned = slow.cleaned

    with anyio.fail_after(HANG_GUARD_S):
        with anyio.CancelScope():  # the caller's own scope, left after the break: it must not fail
            stream = EventStream(params(), backend=slow)
            async for event in stream:  # no `async with`, no aclose()
                assert isinstance(event, SessionStarted)
                break
        assert not cleaned.is_set()  # the run goes on while the caller holds the stream
        del stream
        gc.collect()
        await cleaned.wait()  # dropped: the run is stopped, its cleanup ran


async def test_a_stream_dropped_on_another_thread_stops_its_run_on_the_run_s_own_loop() -> None:
    """The finalizer runs where the last reference goes (a worker thread, the garbage collector's): it hands the
    stop to the run's event loop, never touching the run's cancel scope from that thread."""
    slow = Slow()
    cleaned, stopped_on = slow.cleaned, slow.stopped_on

    with anyio.fail_after(HANG_GUARD_S):
        stream = EventStream(params(), backend=slow)
        async for event in stream:
            assert isinstance(event, SessionStarted)
            break
        held = [stream]
        del stream, event
        await anyio.to_thread.run_sync(held.clear)  # the last reference goes in a worker thread
        await cleaned.wait()
    assert stopped_on == [threading.get_ident()]


async def test_closing_a_bare_async_for_from_another_task_ends_the_run() -> None:
    slow = Slow()
    cleaned = slow.cleaned

    stream = EventStream(params(), backend=slow)
    with anyio.fail_after(HANG_GUARD_S):
        assert isinstance(await stream.__anext__(), SessionStarted)
        async with anyio.create_task_group() as tg:
            tg.start_soon(stream.aclose)
        assert cleaned.is_set()  # aclose() returns once the run's cleanup ran
        await stream.aclose()  # twice is fine
        assert [e async for e in stream] == []


async def test_a_second_task_reading_the_same_stream_at_once_is_told_so() -> None:
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params(), backend=Slow()) as stream, anyio.create_task_group() as tg:
            assert isinstance(await stream.__anext__(), SessionStarted)
            tg.start_soon(stream.__anext__)  # waits for the next event
            await anyio.wait_all_tasks_blocked()
            with pytest.raises(UnifiedError, match="already being read by another task"):
                await stream.__anext__()
            stream.cancel()


async def test_a_backend_faster_than_its_consumer_waits_with_a_bounded_buffer_and_loses_nothing() -> None:
    """The consumer reads one event and stops reading: the backend runs until the buffer is full and
    waits there (memory stays bounded); read on, every event arrives once, in order."""
    from unified._internal.stream import _BUFFER

    total = 5 * _BUFFER
    emitted = 0

    class Fast(ScriptedBackend):
        async def run(self, ctx: RunContext) -> RunOutcome:
            nonlocal emitted
            await ctx.emit(START.model_copy())
            for n in range(total):
                await ctx.emit(TextDelta(text=f"{n},"))
                emitted += 1
            return RunOutcome()

    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params(), backend=Fast([])) as stream:
            first = await stream.__anext__()
            await anyio.wait_all_tasks_blocked()  # the backend ran as far as it could
            assert emitted < _BUFFER + 2 < total
            rest = [event async for event in stream]
    events = [first, *rest]
    assert_well_formed(events)
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert texts == [f"{n}," for n in range(total)]
    message = next(e for e in events if isinstance(e, AssistantMessage))
    assert message.text == "".join(texts)


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        ([START, ToolResult(tool_use_id="ghost", output="?")], "which no earlier tool_use announced"),
        ([START, ToolUse(tool_use_id="a", name="x"), ToolUse(tool_use_id="a", name="x")], "used twice"),
        (
            [START, ToolUse(tool_use_id="a", name="x"), ToolResult(tool_use_id="a"), ToolResult(tool_use_id="a")],
            "answered twice",
        ),
        ([START, SubagentCompleted(task_id="t9")], "which no subagent_started announced"),
        ([START, TextDelta(text="x", subagent_task_id="t9")], "never started"),
        ([TextDelta(text="too early")], "before session_started"),
        ([START, START], "a second session_started"),
        ([START, AssistantMessage(text="mine")], "must not emit assistant_message"),
        ([START, Result(status="success")], "must not emit result"),
        ([START, DECIDED], "permission_decision for 'a', which no earlier tool_use announced"),
        ([START, ToolUse(tool_use_id="a", name="x"), DECIDED, DECIDED], "got a second permission_decision"),
        ([START, WarningEvent(code="retry_soon", message="m")], "warning code 'retry_soon' is not in the registry"),
        ([START, ErrorEvent(code="oops", message="m")], "error code 'oops' is not in the registry"),
    ],
)
async def test_violations_are_reported_with_the_event(steps: list[Step], problem: str) -> None:
    events, _ = await run(steps)
    assert_well_formed(events)
    report = next(e for e in events if isinstance(e, ErrorEvent) and e.code == "protocol_violation")
    assert problem in report.message
    assert report.details["event"]["type"] == steps[-1].type  # type: ignore[union-attr]


async def test_a_subagent_task_is_reported_unstarted_before_completed_twice() -> None:
    started = SubagentStarted(task_id="t1", agent_name="a")
    steps: list[Step] = [START, started, SubagentCompleted(task_id="t1"), SubagentCompleted(task_id="t1")]
    steps += [SubagentCompleted(task_id="t9"), SubagentCompleted(task_id="t9")]
    events, _ = await run(steps)
    reports = [e.message for e in events if isinstance(e, ErrorEvent) and e.code == "protocol_violation"]
    assert len(reports) == 3
    assert "'t1' completed twice" in reports[0]
    assert all("'t9', which no subagent_started announced" in report for report in reports[1:])


async def test_normal_form_output_is_text_plus_data() -> None:
    """A dict output slipped past validation (model_copy) becomes text plus data."""
    use = ToolUse(tool_use_id="a", name="read_file")
    raw = ToolResult(tool_use_id="a").model_copy(update={"output": {"output": "alpha"}})
    server = ToolResult(tool_use_id="b").model_copy(update={"output": {"queries": ["q"]}})
    events, _ = await run([START, use, raw, ToolUse(tool_use_id="b", name="s"), server], strict=True)
    assert_well_formed(events)
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.output, r.data) for r in results] == [("alpha", None), ('{"queries": ["q"]}', {"queries": ["q"]})]


async def test_run_stopped_by_the_user_ends_interrupted_without_an_error() -> None:
    events, _ = await run([START, TextDelta(text="so far"), Fail(RunStopped("the user stopped the run"))])
    result = assert_well_formed(events)
    assert result.status == "interrupted"
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert result.final_text == "so far"


def test_every_code_in_the_registry_is_documented_once() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    table = doc.split("## Codes", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in table.splitlines() if line.startswith("| `")]
    documented = [(kind.strip(), code.strip().strip("`")) for code, kind in rows]
    expected = sorted([("warning", c) for c in WARNING_CODES] + [("error", c) for c in ERROR_CODES])
    assert sorted(documented) == expected


def test_every_unified_error_code_is_in_the_registry() -> None:
    from unified.errors import UnifiedError

    found, todo = set(), [UnifiedError]
    while todo:
        cls = todo.pop()
        found.add(cls.code)
        todo.extend(cls.__subclasses__())
    assert found <= ERROR_CODES, found - ERROR_CODES


async def test_strict_mode_fails_the_run_on_a_violation() -> None:
    events, _ = await run([START, ToolResult(tool_use_id="ghost")], strict=True)
    result = assert_well_formed(events)
    assert result.status == "error"
    assert "ghost" in (result.error or "")


class Refusing(ScriptedBackend):
    """Refuses its one call on its own, as a built-in backend refuses one past `max_turns`."""

    async def run(self, ctx: RunContext) -> RunOutcome:
        await ctx.emit(START.model_copy())
        await ctx.emit(ToolUse(tool_use_id="c1", name="shell", input={"command": "ls"}))
        reason = "not run: the run reached max_turns=1"
        await ctx.emit(refusal("c1", "shell", reason, decided_by="policy", rule="max_turns", stops_run=True))
        await ctx.emit(ToolResult(tool_use_id="c1", output=reason, is_error=True))
        return RunOutcome(status="max_turns")


async def test_a_call_refused_with_refusal_is_its_one_deny_in_a_strict_stream() -> None:
    """`unified.backends.refusal` (docs/backends/README.md): the `deny` a backend gives a call it never runs, every
    field it is given kept, and the one decision of its call (a strict stream would fail the run otherwise)."""
    events: list[UnifiedEvent] = []
    async with EventStream(params(), backend=Refusing([]), strict=True) as stream:
        events = [event async for event in stream]
    assert assert_well_formed(events).status == "max_turns"
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.model_dump(include={"decision", "decided_by", "rule", "reason", "stops_run", "tool_name"}) == {
        "decision": "deny",
        "decided_by": "policy",
        "rule": "max_turns",
        "reason": "not run: the run reached max_turns=1",
        "stops_run": True,
        "tool_name": "shell",
    }
    assert (decision.tool_use_id, decision.session_id) == ("c1", "sess-1")


async def test_a_call_whose_prompt_the_run_ended_unanswered_gets_the_guards_deny() -> None:
    """Pin (right on the old code; the guard builds this deny with `refusal` now): a run stopped while the caller's
    `on_user_input` still weighs a call's permission prompt ends with one `deny` for that call, the user's (the
    caller stopped it), saying the call did not run."""

    async def weighs(request: UserInputRequest) -> UserInputResponse:
        await anyio.sleep_forever()
        raise AssertionError("never answered")

    prompt = _question().model_copy(update={"tool_use_id": "c1", "tool_name": "write_file"})
    steps: list[Step] = [START, ToolUse(tool_use_id="c1", name="write_file"), Ask(prompt)]
    out: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params(on_user_input=weighs), backend=ScriptedBackend(steps)) as stream:
            async for event in stream:
                out.append(event)
                if isinstance(event, UserInputRequest):
                    stream.cancel(interrupted=True)
    assert assert_well_formed(out).status == "interrupted"
    [decision] = [e for e in out if isinstance(e, PermissionDecision)]
    denied_by_the_user = ("c1", "write_file", "deny", "user")
    assert (decision.tool_use_id, decision.tool_name, decision.decision, decision.decided_by) == denied_by_the_user
    assert (
        decision.reason == "the run ended (interrupted) before its permission prompt was answered: the call did not run"
    )
    assert decision.session_id == "sess-1"


def _question() -> UserInputRequest:
    return UserInputRequest(
        request_id="r1", source="permission", questions=[Question(id="permission", prompt="Allow write_file?")]
    )


async def test_user_input_reaches_the_handler_and_back() -> None:
    seen: list[str] = []

    async def handler(request: UserInputRequest) -> UserInputResponse:
        seen.append(request.request_id)
        return UserInputResponse.allow(always=True)

    events, backend = await run([START, Ask(_question())], on_user_input=handler)
    assert_well_formed(events)
    assert seen == ["r1"]
    assert backend.answers[0].permission() == "allow_always"
    assert any(e.type == "user_input_request" for e in events)


async def test_a_model_s_question_reaches_the_handler_and_its_answers_go_back() -> None:
    """The scripted backend's `user_input: full`: a question of the model's own (not a permission) is put
    to the caller, and the backend gets the caller's answers, a multi-select one included."""
    request = UserInputRequest(
        request_id="q1",
        source="model-tool",
        questions=[
            Question(id="colours", prompt="Which colours?", multi_select=True),
            Question(id="name", prompt="Your name?"),
        ],
    )
    asked: list[UserInputRequest] = []

    async def handler(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={"colours": ["red", "green"], "name": "Ada"})

    events, backend = await run([START, Ask(request)], on_user_input=handler)
    assert_well_formed(events)
    assert [q.id for q in asked[0].questions] == ["colours", "name"]
    assert backend.answers[0].answers == {"colours": ["red", "green"], "name": "Ada"}
    assert [e.source for e in events if isinstance(e, UserInputRequest)] == ["model-tool"]


async def test_user_input_without_handler_is_no_answer() -> None:
    events, backend = await run([START, Ask(_question())])
    assert_well_formed(events)
    assert backend.answers[0].cancelled


async def test_user_input_timeout_and_handler_failure_become_warnings() -> None:
    async def slow(request: UserInputRequest) -> UserInputResponse:
        await anyio.sleep(30)
        raise AssertionError("unreachable")

    async def broken(request: UserInputRequest) -> UserInputResponse:
        raise RuntimeError("UI went away")

    events, backend = await run([START, Ask(_question())], on_user_input=slow, user_input_timeout_s=0.1)
    assert backend.answers[0].cancelled
    assert [e.code for e in events if isinstance(e, WarningEvent)] == ["user_input_timeout"]
    assert assert_well_formed(events).status == "success"
    events, backend = await run([START, Ask(_question())], on_user_input=broken)
    assert backend.answers[0].cancelled
    warning = next(e for e in events if isinstance(e, WarningEvent))
    assert "UI went away" in warning.message


async def test_waiting_on_the_user_is_not_idleness() -> None:
    """A run whose user takes longer to answer than the idle timeout is not idle meanwhile. The margins are wide (an
    answer after 1.5 s, idle at 1 s): at 0.05 s idle, a stall of 50 ms anywhere in the run on a loaded machine timed
    it out (a flaky unit test)."""

    async def unhurried(request: UserInputRequest) -> UserInputResponse:
        await anyio.sleep(1.5)
        return UserInputResponse.allow()

    events, backend = await run([START, Ask(_question())], on_user_input=unhurried, idle_timeout_s=1.0)
    assert not backend.answers[0].cancelled
    assert not [e for e in events if isinstance(e, WarningEvent)]
    assert assert_well_formed(events).status == "success"


async def _returns_none(request: UserInputRequest) -> Any:
    return None


async def _returns_dict(request: UserInputRequest) -> Any:
    return {"permission": "allow_once"}


async def _returns_text(request: UserInputRequest) -> Any:
    return "allow_once"


def _not_async(request: UserInputRequest) -> Any:
    return UserInputResponse.allow()


@pytest.mark.parametrize(
    ("handler", "said"),
    [
        (_returns_none, "returned NoneType, not a UserInputResponse"),
        (_returns_dict, "returned dict, not a UserInputResponse"),
        (_returns_text, "returned str, not a UserInputResponse"),
        (_not_async, "returned UserInputResponse instead of an awaitable: it must be an async function"),
    ],
)
async def test_a_handler_answering_with_the_wrong_type_is_no_answer_with_a_warning(handler: Any, said: str) -> None:
    events, backend = await run([START, Ask(_question())], on_user_input=handler)
    assert backend.answers[0] == UserInputResponse(cancelled=True)  # never the handler's object, which backends misread
    warning = next(e for e in events if isinstance(e, WarningEvent))
    assert warning.code == "user_input_handler_failed"
    assert said in warning.message
    assert assert_well_formed(events).status == "success"


async def test_unsupported_options_warn_before_session_started() -> None:
    backend = ScriptedBackend([START], unsupported=[UnsupportedOption("thinking", "this backend cannot think", False)])
    out = [e async for e in EventStream(params(), backend=backend)]
    assert [e.type for e in out] == ["warning", "session_started", "result"]
    fatal = ScriptedBackend([START], unsupported=[UnsupportedOption("images", "no image input", True)])
    out = [e async for e in EventStream(params(), backend=fatal)]
    assert [e.type for e in out] == ["error", "result"]
    assert out[-1].status == "error"  # type: ignore[union-attr]


async def test_native_is_dropped_unless_asked() -> None:
    raw = {"sessionUpdate": "agent_message_chunk"}
    events, _ = await run([START, TextDelta(text="a", native=raw)])
    assert all(e.native is None for e in events)
    events, _ = await run([START, TextDelta(text="a", native=raw)], include_native=True)
    assert next(e for e in events if isinstance(e, TextDelta)).native == raw


async def test_max_turns_outcome_passes_through() -> None:
    events, _ = await run(
        [START, TextDelta(text="still going")], outcome=RunOutcome(status="max_turns", error="stopped after 3 turns")
    )
    result = assert_well_formed(events)
    assert (result.status, result.error, result.final_text) == ("max_turns", "stopped after 3 turns", "still going")


async def test_a_deadline_inside_the_async_with_block_is_fine() -> None:
    async with EventStream(params(), backend=ScriptedBackend([START, TextDelta(text="a")])) as stream:
        with anyio.fail_after(HANG_GUARD_S):
            events = [e async for e in stream]
    assert assert_well_formed(events).final_text == "a"


async def test_a_finished_run_is_freed_at_once_not_left_to_the_cycle_collector() -> None:
    """An orchestrator runs thousands: a run that ended holds no reference cycle, so its guard, its
    bookkeeping and its backend go as the stream does (the collector never has to find them)."""
    gc.disable()
    try:
        backend = ScriptedBackend([START, TextDelta(text="hi"), EndMessage()], RunOutcome())
        stream = EventStream(params(), backend=backend)
        async with stream:
            events = [event async for event in stream]
        assert_well_formed(events)
        guard = weakref.ref(stream._stream.guard)
        gone = weakref.ref(backend)
        del stream, backend
        assert guard() is None
        assert gone() is None
    finally:
        gc.enable()
