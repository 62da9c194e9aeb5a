"""The codex backend on the real pinned `codex app-server`, against FakeOpenAI: text, reasoning, tools,
approvals, errors, deadlines and cancellation. Every test reads the stream the caller would read."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.e2e.codex.conftest import codex_params, kinds, run_codex
from tests.hang_guard import HANG_GUARD_S
from unified._binary.proctable import alive
from unified._execute import EventStream
from unified.events import (
    ErrorEvent,
    PermissionDecision,
    Result,
    SessionStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
)
from unified.testing import CODEX_MODEL, FakeOpenAI, Fault, FunctionCall, ModelTurn, ServerTool, Thought, Usage
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def shell(command: str, call_id: str | None = None) -> FunctionCall:
    return FunctionCall(name="run_shell_command", args={"command": command}, id=call_id)


def answering(*answers: UserInputResponse) -> tuple[list[UserInputRequest], object]:
    asked: list[UserInputRequest] = []
    queue = list(answers)

    async def handler(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return queue.pop(0) if queue else UserInputResponse.deny()

    return asked, handler


async def collect(params: ExecuteParams) -> list[UnifiedEvent]:
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params, strict=True) as stream:
            return [event async for event in stream]


def decisions(events: list) -> list[PermissionDecision]:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, PermissionDecision)]


def result(events: list) -> Result:  # type: ignore[type-arg]
    last = events[-1]
    assert isinstance(last, Result), kinds(events)
    return last


async def test_text_streams_as_deltas_with_the_reported_usage(workspace: Path) -> None:
    turn = ModelTurn(
        text="Hello from the fake model.", text_chunks=3, usage=Usage(input_tokens=12, output_tokens=6, cached_tokens=4)
    )
    async with FakeOpenAI([turn]) as server:
        events = await run_codex(server, workspace, "Say hello")
        bodies = [r.body for r in server.model_requests()]
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.backend == "codex"
    assert started.transport == "app-server"
    assert started.capabilities, "session_started carries the matrix row"
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 3
    assert "".join(deltas) == "Hello from the fake model."
    final = result(events)
    assert final.status == "success"
    assert final.final_text == "Hello from the fake model."
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.cached_tokens) == (12, 6, 4)
    assert not final.usage.estimated
    assert final.turns == 1
    assert final.short_id == started.short_id == started.session_id[-8:]  # type: ignore[index]
    assert "Say hello" in json.dumps(bodies[0]["input"])
    assert bodies[0]["model"] == "gpt-5.5"


async def test_reasoning_summaries_append_and_reasoning_tokens_are_counted(workspace: Path) -> None:
    turn = ModelTurn(
        thoughts=[Thought(text="The user wants a hello."), Thought(text="Keep it short.")],
        text="Hi.",
        usage=Usage(input_tokens=10, output_tokens=1, thinking_tokens=8),
    )
    async with FakeOpenAI([turn]) as server:
        events = await run_codex(server, workspace)
    thoughts = [e for e in events if isinstance(e, Thinking)]
    assert thoughts
    assert all(not t.replace for t in thoughts)
    assert "".join(t.text for t in thoughts) == "The user wants a hello.Keep it short." or "".join(
        t.text for t in thoughts
    ).startswith("The user wants a hello.")
    usage = result(events).usage
    assert (usage.output_tokens, usage.thinking_tokens) == (1, 8)


async def test_a_read_only_command_runs_by_policy_and_shows_the_models_arguments(workspace: Path) -> None:
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]),
        ModelTurn(text="alpha."),
    ]
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace)
    use = next(e for e in events if isinstance(e, ToolUse))
    assert (use.name, use.input) == ("exec_command", {"cmd": "cat notes.txt"})
    (decision,) = decisions(events)
    assert (decision.decision, decision.decided_by) == ("allow", "policy")
    output = next(e for e in events if isinstance(e, ToolResult))
    assert output.output == "alpha\nbeta\n"
    assert not output.is_error
    assert output.data == {"exit_code": 0, "status": "completed"}


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_command_that_writes_asks_and_runs_when_allowed(workspace: Path) -> None:
    turns = [ModelTurn(function_calls=[shell("echo hi > out.txt")]), ModelTurn(text="Written.")]
    asked, handler = answering(UserInputResponse.allow())
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, on_user_input=handler)
    assert (workspace / "out.txt").read_text() == "hi\n"
    (request,) = asked
    assert request.source == "permission"
    assert request.tool_name == "exec_command"
    assert request.details["command"] == "echo hi > out.txt"
    (decision,) = decisions(events)
    assert (decision.decision, decision.decided_by) == ("allow", "user")
    assert (
        kinds(events).index("user_input_request")
        < kinds(events).index("permission_decision")
        < kinds(events).index("tool_result")
    )


async def test_a_denied_command_never_runs_and_its_message_reaches_the_model(workspace: Path) -> None:
    turns = [ModelTurn(function_calls=[shell("echo hi > out.txt")]), ModelTurn(text="I will not write.")]
    _asked, handler = answering(UserInputResponse.deny("Write to staging.txt instead."))
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, on_user_input=handler)
        bodies = [json.dumps(r.body) for r in server.model_requests()]
    assert not (workspace / "out.txt").exists()
    (decision,) = decisions(events)
    assert (decision.decision, decision.decided_by, decision.message) == (
        "deny",
        "user",
        "Write to staging.txt instead.",
    )
    output = next(e for e in events if isinstance(e, ToolResult))
    assert output.is_error
    assert "Write to staging.txt instead." in bodies[-1]
    assert result(events).status == "success"


async def test_allow_for_the_session_covers_that_same_command_only(workspace: Path) -> None:
    turns = [
        ModelTurn(function_calls=[shell("echo one >> log.txt", "call_1")]),
        ModelTurn(function_calls=[shell("echo one >> log.txt", "call_2")]),
        ModelTurn(function_calls=[shell("echo two >> log.txt", "call_3")]),
        ModelTurn(text="Done."),
    ]
    asked, handler = answering(UserInputResponse.allow(always=True), UserInputResponse.deny())
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, on_user_input=handler)
    assert len(asked) == 2, "the identical command did not ask again; the other one did"
    first, second, third = decisions(events)
    assert (first.decided_by, first.decision) == ("user", "allow")
    assert first.rule
    assert (second.decided_by, second.decision, second.rule) == ("policy", "allow", first.rule)
    assert (third.decided_by, third.decision) == ("user", "deny")
    assert (workspace / "log.txt").read_text() == "one\none\n"


async def test_stop_ends_the_run_interrupted_without_running_the_call(workspace: Path) -> None:
    turns = [ModelTurn(function_calls=[shell("touch stopped.txt")]), ModelTurn(text="never")]
    _asked, handler = answering(UserInputResponse.stop_run())
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, on_user_input=handler)
    assert not (workspace / "stopped.txt").exists()
    (decision,) = decisions(events)
    assert decision.stops_run
    assert decision.decision == "deny"
    assert not any(isinstance(e, ToolResult) for e in events)
    assert not any(isinstance(e, ErrorEvent) for e in events)
    assert result(events).status == "interrupted"


async def test_a_changed_input_is_denied_with_a_warning_never_run_as_it_was(workspace: Path) -> None:
    turns = [ModelTurn(function_calls=[shell("echo original > out.txt")]), ModelTurn(text="ok")]
    _asked, handler = answering(UserInputResponse.allow(updated_input={"cmd": "echo changed > out.txt"}))
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, on_user_input=handler)
    assert not (workspace / "out.txt").exists(), "neither the original nor the changed command ran"
    (decision,) = decisions(events)
    assert decision.decision == "deny"
    assert decision.decided_by == "user"
    assert any(isinstance(e, WarningEvent) and e.code == "permission_answer_unsupported" for e in events)


async def test_without_a_handler_the_default_mode_denies_a_write(workspace: Path) -> None:
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="write_file", args={"file_path": "new.txt", "content": "x\n"})]),
        ModelTurn(text="no"),
    ]
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace)
    (decision,) = decisions(events)
    assert (decision.decision, decision.decided_by) == ("deny", "approval_mode")
    assert not (workspace / "new.txt").exists()


async def test_a_file_change_is_a_tool_call_with_its_changes(workspace: Path) -> None:
    write = FunctionCall(name="write_file", args={"file_path": "new.txt", "content": "written\n"})
    turns = [ModelTurn(function_calls=[write]), ModelTurn(text="Written.")]
    asked, handler = answering(UserInputResponse.allow())
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, on_user_input=handler)
    use = next(e for e in events if isinstance(e, ToolUse))
    assert (use.name, use.input) == (
        "apply_patch",
        {"changes": [{"path": "new.txt", "kind": "add", "diff": "written\n"}]},
    )
    output = next(e for e in events if isinstance(e, ToolResult))
    assert output.output == "Success. Updated the following files:\nA new.txt"
    assert not output.is_error
    assert (workspace / "new.txt").read_text() == "written\n"
    assert asked[0].details["changes"] == use.input["changes"]


async def test_yolo_runs_everything_decided_by_the_mode(workspace: Path) -> None:
    turns = [ModelTurn(function_calls=[shell("echo hi > out.txt")]), ModelTurn(text="ok")]
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, approval_mode="yolo")
    (decision,) = decisions(events)
    assert (decision.decision, decision.decided_by) == ("allow", "approval_mode")
    assert (workspace / "out.txt").exists()


@pytest.mark.parametrize(
    ("fault", "code", "retryable"),
    [
        (Fault(kind="rate_limit", retry_delay="20s"), "rate_limited", True),
        (Fault(kind="quota_exceeded"), "rate_limited", False),
        (Fault(kind="unauthenticated"), "auth_error", False),
        (Fault(kind="server_error"), "backend_error", True),
        (Fault(kind="cut_stream", after=3), "stream_interrupted", True),
    ],
    ids=["429", "insufficient_quota", "401", "500", "cut-stream"],
)
async def test_a_provider_failure_is_a_typed_error(workspace: Path, fault: Fault, code: str, retryable: bool) -> None:
    async with FakeOpenAI([ModelTurn(text="Never seen in full.", text_chunks=4, fault=fault)]) as server:
        events = await run_codex(server, workspace)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert (error.code, error.retryable, error.fatal) == (code, retryable, True), error.message
    assert result(events).status == "error"


async def test_a_prompt_over_codex_s_input_limit_is_a_bad_request_saying_what_to_do(workspace: Path) -> None:
    """Codex refuses a turn's input over 1 MiB of text (its own limit, on `turn/start`): a `bad_request` whose hint
    says to shorten the prompt, not a bare backend_error; the model is never asked."""
    async with FakeOpenAI([ModelTurn(text="never")]) as server:
        events = await run_codex(server, workspace, "x" * (1 << 20 | 1))
        asked = server.model_requests()
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert (error.code, error.retryable) == ("bad_request", False), error.message
    assert "maximum length" in error.message
    assert "shorten the prompt" in error.message  # the hint, in the message
    assert asked == []


async def test_a_stalled_stream_fails_after_codexs_idle_limit(workspace: Path) -> None:
    async with FakeOpenAI([ModelTurn(text="stalls", fault=Fault(kind="stall", after=2))]) as server:
        events = await run_codex(server, workspace, options={"stream_idle_timeout_s": 1.0})
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "stream_interrupted"
    assert "idle timeout" in error.message


async def test_a_provider_that_is_down_does_not_hang_the_run(workspace: Path) -> None:
    with FakeOpenAI() as server:
        base_url = server.base_url
    # nothing listens there any more: Codex would retry forever
    params = ExecuteParams(
        prompt="hello",
        backend="codex",
        model=CODEX_MODEL,
        cwd=workspace,
        backend_options={"base_url": base_url, "api_key": "fake-openai-key", "provider_timeout_s": 2.0},
    )
    events = await collect(params)
    assert any(isinstance(e, WarningEvent) and e.code == "retrying" for e in events)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "backend_unavailable"  # nothing listens: Codex could not connect (before provider_timeout_s)
    assert error.retryable
    assert base_url in error.message
    assert result(events).status == "error"


COMMAND = "sleep 300 & echo $$ $! > pids.txt; wait"
"""A command that runs until it is killed, writing its shell's and its child's pids first."""


async def _run_until_the_command_runs(
    workspace: Path, act: Callable[[EventStream, list[int]], None]
) -> tuple[list[UnifiedEvent], dict[int, str]]:
    """Run COMMAND (yolo: no prompt); once both its processes run, `act` on the stream; returns the events
    and the command's processes (pid → start time)."""
    call = FunctionCall(name="exec_command", args={"cmd": COMMAND, "yield_time_ms": 600000})
    pids_file = workspace / "pids.txt"
    events: list[UnifiedEvent] = []
    started: dict[int, str] = {}
    async with FakeOpenAI([ModelTurn(function_calls=[call]), ModelTurn(text="never")]) as server:
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(codex_params(server, workspace, approval_mode="yolo"), strict=True) as stream:
                async for event in stream:
                    events.append(event)
                    if isinstance(event, PermissionDecision):
                        while not pids_file.exists() or len(pids_file.read_text().split()) < 2:  # noqa: ASYNC110
                            await anyio.sleep(0.02)  # watching a file the command writes, not ordering by time
                        pids = [int(p) for p in pids_file.read_text().split()]
                        started = {pid: start_time(pid) for pid in pids}
                        act(stream, pids)
    return events, started


def start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def app_server_of(pid: int) -> int:
    """The `codex app-server` above a command's process."""
    while pid > 1:
        if b"app-server" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise AssertionError("no app-server above the command")


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_cancelling_mid_command_leaves_no_process(workspace: Path) -> None:
    events, started = await _run_until_the_command_runs(workspace, lambda stream, pids: stream.cancel())
    assert result(events).status == "cancelled"
    assert started
    assert not [pid for pid, start in started.items() if alive((pid, start))]


async def test_a_killed_app_server_leaves_no_command_behind(workspace: Path) -> None:
    """SIGKILL of the app-server orphans its commands (each runs in a session of its own): the backend kills them."""

    def kill_app_server(stream: EventStream, pids: list[int]) -> None:
        os.kill(app_server_of(pids[0]), signal.SIGKILL)

    events, started = await _run_until_the_command_runs(workspace, kill_app_server)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "backend_error"
    assert "exited" in error.message
    assert started
    assert not [pid for pid, start in started.items() if alive((pid, start))]


MCP_ECHO = Path(__file__).resolve().parents[1] / "conformance" / "mcp_echo_server.py"


async def test_an_mcp_call_asks_through_codexs_elicitation(workspace: Path) -> None:
    """One run, two calls of the MCP tool: the first allowed (it runs), the second denied (an error result)."""
    from unified.types import StdioMcpServer

    calls = [FunctionCall(name="mcp__echo__echo", args={"text": text}, id=f"call_mcp_{text}") for text in ("hi", "no")]
    server_spec = StdioMcpServer(name="echo", command=sys.executable, args=(str(MCP_ECHO),), timeout_s=30)
    asked, handler = answering(UserInputResponse.allow(), UserInputResponse.deny())
    turns = [ModelTurn(function_calls=[call]) for call in calls]
    async with FakeOpenAI([*turns, ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, on_user_input=handler, mcp_servers=(server_spec,))
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [(use.name, use.input) for use in uses] == [
        ("mcp__echo__echo", {"text": "hi"}),
        ("mcp__echo__echo", {"text": "no"}),
    ]
    assert [(request.tool_use_id, request.details["server"]) for request in asked] == [
        ("call_mcp_hi", "echo"),
        ("call_mcp_no", "echo"),
    ]
    assert [(d.decision, d.decided_by) for d in decisions(events)] == [("allow", "user"), ("deny", "user")]
    allowed, denied = [e for e in events if isinstance(e, ToolResult)]
    assert (allowed.tool_use_id, allowed.is_error, allowed.output) == ("call_mcp_hi", False, "echo: hi")
    assert (denied.tool_use_id, denied.is_error) == ("call_mcp_no", True)


ASK = FunctionCall(
    name="ask_user",
    args={"questions": [{"question": "Which colour?", "header": "Colour", "options": [{"label": "red"}]}]},
)


async def test_in_plan_mode_the_models_question_reaches_the_caller_and_the_answer_the_model(workspace: Path) -> None:
    """Codex offers its question tool in its plan collaboration mode only, which a plan run turns on."""
    asked, handler = answering(UserInputResponse(answers={"q0": "red"}))
    async with FakeOpenAI([ModelTurn(function_calls=[ASK]), ModelTurn(text="Red it is.")]) as server:
        events = await run_codex(server, workspace, approval_mode="plan", on_user_input=handler)
        outputs = [i for i in server.model_requests()[-1].body["input"] if i.get("type") == "function_call_output"]
    (request,) = asked
    assert (request.source, request.tool_name) == ("model-tool", "request_user_input")
    assert [(q.id, q.prompt, [o.label for o in q.options]) for q in request.questions] == [
        ("q0", "Which colour?", ["red"])
    ]
    assert json.loads(outputs[-1]["output"]) == {"answers": {"q0": {"answers": ["red"]}}}
    assert next(e for e in events if isinstance(e, ToolResult)).output == '{"q0": ["red"]}'
    assert result(events).status == "success"


async def test_a_plan_thread_resumed_outside_plan_mode_is_back_in_codexs_default_mode(workspace: Path) -> None:
    """The collaboration mode is the thread's and outlasts its turn: a later run that is not a plan run
    puts it back, so Codex refuses the model's question there as in any default-mode thread (it tells the
    model only) instead of asking a caller who did not run in plan mode."""
    asked, handler = answering(UserInputResponse(answers={"q0": "red"}))
    turns = [ModelTurn(text="Planned."), ModelTurn(function_calls=[ASK]), ModelTurn(text="Then red.")]
    async with FakeOpenAI(turns) as server:
        first = await run_codex(server, workspace, "plan it", approval_mode="plan")
        started = next(e for e in first if isinstance(e, SessionStarted))
        again = await run_codex(server, workspace, "now do it", resume=started.short_id, on_user_input=handler)
        outputs = [i for i in server.model_requests()[-1].body["input"] if i.get("type") == "function_call_output"]
    assert asked == []
    assert "user_input_request" not in kinds(again)
    assert "Default mode" in outputs[-1]["output"]  # Codex's own refusal, read by the model
    assert result(again).status == "success"


async def test_hosted_web_search_is_off_unless_asked_and_each_search_is_a_server_side_pair(workspace: Path) -> None:
    """OpenAI runs its web search on its side, with no approval: Codex offers it to the model only when the
    run asks (`web_search`); each search the model ran is a server-side tool_use / tool_result pair."""
    search = ServerTool(tool="google_search", id="s1", arguments={"query": "unified library"})
    turns = [ModelTurn(text="No search."), ModelTurn(server_tools=[search], text="Found it.")]
    async with FakeOpenAI(turns) as server:
        await run_codex(server, workspace)
        events = await run_codex(server, workspace, options={"web_search": "live"})
        offered = [{t.get("type") for t in r.body.get("tools", [])} for r in server.model_requests()]
    assert ["web_search" in tools for tools in offered] == [False, True]
    use = next(e for e in events if isinstance(e, ToolUse))
    assert (use.name, use.input, use.server_side) == ("web_search", {"query": "unified library"}, True)
    done = next(e for e in events if isinstance(e, ToolResult))
    assert (done.tool_use_id, done.server_side, done.is_error) == (use.tool_use_id, True, False)
    assert kinds(events).index("tool_result") < kinds(events).index("text_delta")
    assert result(events).status == "success"
