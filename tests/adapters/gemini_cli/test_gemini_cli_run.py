"""The gemini-cli run logic on the in-process fake ACP agent (`unified.testing._fake_acp`): no Node.

Everything between the agent's stdout and the event stream is the real adapter: the JSON-RPC
connection and its framing, the pool, session setup, the translator, the tool-output hold-back
(the fake writes the chat file where the CLI does), the permission bridge, the outcome mapping
and cancellation. The same behaviours on the real binary are in tests/e2e/gemini_cli/.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.adapters.host_hiding import HIDING_CASES, record_hiding
from tests.hang_guard import HANG_GUARD_S
from unified import ExecuteParams, UserInputRequest, UserInputResponse
from unified._adapters.gemini_cli import AcpPool
from unified._adapters.gemini_cli import _acp as acp_module
from unified._adapters.gemini_cli import _backend as gemini_backend
from unified._adapters.gemini_cli import _hold_back as hold_back
from unified._adapters.gemini_cli import _run as run_module
from unified._adapters.gemini_cli._launch import DEFAULT_MODEL
from unified._adapters.gemini_cli._options import GeminiCliOptions, gemini_cli_options
from unified._binary.framing import MAX_LINE_BYTES
from unified._execute import EventStream
from unified.errors import ConfigurationError
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
    WarningEvent,
)
from unified.testing._fake_acp import (
    Crash,
    ErrorAnswer,
    FakeAcp,
    Finish,
    Hang,
    Permission,
    RawLine,
    Record,
    Update,
    script_from_transcript,
    text,
    thought,
    tool_call,
    tool_done,
)
from unified.types import StdioMcpServer

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[3]
TRANSCRIPTS = sorted(
    [*(REPO / "cassettes" / "gemini-cli").glob("*.jsonl"), *(REPO / "bench/transcripts/acp").glob("*")]
)
USAGE = {"input_tokens": 100, "output_tokens": 5, "thoughts_tokens": 7}
READ = "read_file__read_file_1795991675407_0"
WRITE = "write_file__write_file_1795991675468_1"


async def run(fake: FakeAcp, cwd: Path, prompt: str = "go", **fields: Any) -> list[UnifiedEvent]:
    options = {"start_process": fake, "pool_size": 0, **fields.pop("backend_options", {})}
    params = ExecuteParams(prompt=prompt, backend="gemini-cli", cwd=cwd, backend_options=options, **fields)
    async with EventStream(params, strict=True) as stream:
        return [event async for event in stream]


def result_of(events: Sequence[UnifiedEvent]) -> Result:
    results = [e for e in events if isinstance(e, Result)]
    assert len(results) == 1
    assert events[-1] is results[0]
    return results[0]


def one(events: Sequence[UnifiedEvent], kind: type[Any]) -> Any:
    found = [e for e in events if isinstance(e, kind)]
    assert len(found) == 1, found
    return found[0]


def no_process_left(fake: FakeAcp) -> bool:
    return bool(fake.processes) and all(p.closed for p in fake.processes)


# --- the stream ---------------------------------------------------------------------------------


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    return tmp_path.resolve()


async def test_text_thoughts_and_usage(cwd: Path) -> None:
    fake = FakeAcp([thought("**Planning**\nSay hi."), text("Hello "), text("there."), Finish(token_count=USAGE)])
    events = await run(fake, cwd)
    kinds = [e.type for e in events]
    assert kinds == ["session_started", "thinking", "text_delta", "text_delta", "assistant_message", "result"]
    started = one(events, SessionStarted)
    assert (started.transport, started.resumed, started.cwd) == ("acp", False, str(cwd))
    assert one(events, Thinking).subject == "Planning"
    result = result_of(events)
    assert (result.status, result.final_text, result.turns) == ("success", "Hello there.", 1)
    usage = result.usage
    assert (usage.input_tokens, usage.output_tokens, usage.thinking_tokens, usage.estimated) == (100, 5, 7, False)
    assert fake.methods() == ["initialize", "session/new", "session/set_model", "session/prompt"]
    assert no_process_left(fake)


async def test_zero_output_tokens_are_estimated_from_the_text(tmp_path: Path) -> None:
    fake = FakeAcp([thought("t" * 10), text("x" * 9), Finish(token_count={"input_tokens": 50, "output_tokens": 0})])
    usage = result_of(await run(fake, tmp_path)).usage
    assert (usage.input_tokens, usage.output_tokens, usage.thinking_tokens, usage.estimated) == (50, 3, 3, True)


async def test_tool_use_is_held_until_the_chat_file_gives_its_arguments(tmp_path: Path) -> None:
    """Normal form: tool_use.input is the model's arguments (ACP sends only a title); the result's
    output is the text the model read; the CLI ran it unasked, as unified's read-only rule allows."""
    fake = FakeAcp(
        [
            tool_call(READ, title="notes.txt"),
            tool_done(READ, "alpha\nbeta\n", args={"file_path": "notes.txt"}),
            text("It says alpha."),
            Finish(token_count=USAGE),
        ]
    )
    events = await run(fake, tmp_path)
    use, done = one(events, ToolUse), one(events, ToolResult)
    assert (use.name, use.input) == ("read_file", {"file_path": "notes.txt"})
    assert (done.tool_use_id, done.output, done.is_error) == (READ, "alpha\nbeta\n", False)
    assert done.input is None  # the tool_use already carried the arguments
    decision = one(events, PermissionDecision)
    assert (decision.tool_use_id, decision.decision, decision.decided_by) == (READ, "allow", "policy")
    assert decision.rule == "read-only"  # the CLI ran it unasked because unified's table allows it
    kinds = [e.type for e in events]
    assert kinds.index("tool_use") < kinds.index("permission_decision") < kinds.index("tool_result")
    assert [e.type for e in events].index("tool_result") < [e.type for e in events].index("text_delta")
    assert result_of(events).turns == 2


async def test_failed_call_keeps_its_error_and_order(tmp_path: Path) -> None:
    other = "list_directory__list_directory_1_1"
    fake = FakeAcp(
        [
            tool_call(READ),
            tool_call(other, kind="search"),
            tool_done(READ, "File not found", failed=True),
            tool_done(other, "a.txt"),
            text("done"),
        ]
    )
    events = await run(fake, tmp_path)
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.tool_use_id, r.is_error, r.output) for r in results] == [
        (READ, True, "File not found"),
        (other, False, "a.txt"),
    ]


# --- the permission bridge: unified's policy answers what the CLI asks ---------------------------


def write_call(cwd: Path, call_id: str = WRITE, name: str = "new.txt") -> dict[str, Any]:
    """A write's permission request as 0.61 sends it: a title, the diff (absolute path, new content), the location."""
    path = str(cwd / name)
    return {
        "toolCallId": call_id,
        "status": "pending",
        "title": f"Writing to {name}",
        "content": [{"type": "diff", "path": path, "oldText": "", "newText": "x\n", "_meta": {"kind": "add"}}],
        "locations": [{"path": path}],
        "kind": "edit",
    }


def shell_call(call_id: str, command: str) -> dict[str, Any]:
    """A shell command's permission request as 0.61 sends it: the command as title, an explanation naming the
    CLI process's own cwd (not the session's)."""
    note = {"type": "content", "content": {"type": "text", "text": "[current working directory /cache/workdir]"}}
    return {
        "toolCallId": call_id,
        "status": "pending",
        "title": command,
        "content": [note],
        "locations": [],
        "kind": "execute",
    }


def write_script(cwd: Path) -> list[Any]:
    return [
        Permission(write_call(cwd), if_allowed=[tool_done(WRITE, "ok", kind="edit", args=WRITE_ARGS)]),
        text("finished"),
        Finish(token_count=USAGE),
    ]


WRITE_ARGS = {"file_path": "new.txt", "content": "x\n"}


@pytest.mark.parametrize(
    ("answer", "option", "decision", "rule", "failed"),
    [
        (UserInputResponse.allow(), "proceed_once", "allow", "write-asks", False),
        # never proceed_always: the CLI would allow later calls it deems the same; the rule is unified's
        (UserInputResponse.allow(always=True), "proceed_once", "allow", "session:write_file", False),
        (UserInputResponse.deny(), "cancel", "deny", "write-asks", True),
    ],
)
async def test_permission_answered_by_the_user(
    cwd: Path, answer: UserInputResponse, option: str, decision: str, rule: str | None, failed: bool
) -> None:
    asked: list[UserInputRequest] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return answer

    fake = FakeAcp(write_script(cwd))
    events = await run(fake, cwd, on_user_input=on_user_input)
    assert [(r.source, r.tool_name, r.request_id) for r in asked] == [
        ("permission", "write_file", f"permission-{WRITE}")
    ]
    prompt = asked[0]
    assert prompt.questions[0].prompt == "Allow write_file on new.txt?"  # the API backends' wording
    assert prompt.details["args"] == WRITE_ARGS  # the model's arguments, before the callback is called
    assert prompt.details["cwd"] == str(cwd)
    assert prompt.details["diffs"][0]["newText"] == "x\n"
    use = one(events, ToolUse)
    assert use.input == WRITE_ARGS
    assert fake.permission_answers == [{"outcome": "selected", "optionId": option}]
    made = one(events, PermissionDecision)
    assert (made.decision, made.decided_by, made.tool_use_id, made.rule) == (decision, "user", WRITE, rule)
    done = one(events, ToolResult)
    assert done.is_error is failed
    assert done.input is None  # the recorded arguments are those the tool_use showed
    if failed:
        assert done.output == 'Tool "write_file" was canceled by the user.'  # what the model read
    assert result_of(events).status == "success"


@pytest.mark.parametrize(
    ("mode", "decision", "decided_by", "rule", "cli_mode"),
    [
        ("default", "deny", "policy", "write-asks", None),
        ("auto_edit", "allow", "approval_mode", "auto-edit", None),  # the CLI's own autoEdit would not ask
        ("yolo", "allow", "approval_mode", "yolo", "yolo"),
        ("plan", "deny", "approval_mode", "plan-denies", "plan"),
    ],
)
async def test_permission_without_anyone_to_ask_is_the_api_backends_decision(
    cwd: Path, mode: str, decision: str, decided_by: str, rule: str, cli_mode: str | None
) -> None:
    fake = FakeAcp(write_script(cwd))
    events = await run(fake, cwd, approval_mode=mode)
    made = one(events, PermissionDecision)
    assert (made.decision, made.decided_by, made.rule) == (decision, decided_by, rule)
    if mode == "default":
        assert made.reason == "it needs approval and nobody can answer in this non-interactive run"
    assert fake.permission_answers == [
        {"outcome": "selected", "optionId": "proceed_once" if decision == "allow" else "cancel"}
    ]
    assert one(events, ToolResult).is_error is (decision == "deny")
    modes = [m["params"]["modeId"] for m in fake.received if m.get("method") == "session/set_mode"]
    assert modes == ([cli_mode] if cli_mode else [])


async def test_allow_always_allows_that_same_call_again_and_only_it(cwd: Path) -> None:
    """The session rule is unified's, for the same command shape: the CLI asks again, the policy answers."""
    asked: list[str] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        asked.append(str(request.details["args"]["command"]))
        return UserInputResponse.allow(always=True) if len(asked) == 1 else UserInputResponse.deny()

    first, again, other = (f"run_shell_command__run_shell_command_1_{n}" for n in range(3))
    fake = FakeAcp(
        [
            Permission(shell_call(first, "echo hi > out.txt"), if_allowed=[tool_done(first, "", kind="execute")]),
            Permission(shell_call(again, "echo  hi >out.txt"), if_allowed=[tool_done(again, "", kind="execute")]),
            Permission(shell_call(other, "echo bye > other.txt"), if_allowed=[tool_done(other, "", kind="execute")]),
            text("done"),
        ]
    )
    events = await run(fake, cwd, on_user_input=on_user_input)
    assert asked == ["echo hi > out.txt", "echo bye > other.txt"]
    decisions = {e.tool_use_id: (e.decision, e.decided_by, e.rule) for e in events if isinstance(e, PermissionDecision)}
    assert decisions == {
        first: ("allow", "user", "session:run_shell_command:echo hi > out.txt"),
        again: ("allow", "policy", "session:run_shell_command:echo hi > out.txt"),
        other: ("deny", "user", "shell-asks"),
    }
    assert [a["optionId"] for a in fake.permission_answers] == ["proceed_once", "proceed_once", "cancel"]


async def test_a_shell_prompt_carries_the_command_and_the_sessions_cwd(cwd: Path) -> None:
    call_id = "run_shell_command__run_shell_command_1_0"
    asked: list[UserInputRequest] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny()

    fake = FakeAcp([Permission(shell_call(call_id, "echo hi")), text("ok")])
    events = await run(fake, cwd, on_user_input=on_user_input)
    assert one(events, ToolUse).input == {"command": "echo hi"}
    (prompt,) = asked
    assert prompt.questions[0].prompt == "Allow running `echo hi`?"
    assert prompt.details["args"] == {"command": "echo hi"}
    assert prompt.details["cwd"] == str(cwd)
    assert "/cache/workdir" not in str(prompt.details)  # the CLI process's cwd is not where the command runs
    assert one(events, ToolResult).output == 'Tool "run_shell_command" was canceled by the user.'


@pytest.mark.parametrize(
    ("answer", "warned"),
    [
        (UserInputResponse.allow(updated_input={"file_path": "other.txt", "content": "x"}), True),
        (UserInputResponse.deny("write to staging/ instead"), True),
        (UserInputResponse.deny(), False),
    ],
)
async def test_answers_acp_cannot_carry_are_denials_with_a_warning(
    cwd: Path, answer: UserInputResponse, warned: bool
) -> None:
    """ACP answers with an option id only: a changed input cannot run (denied), a message cannot reach the model."""

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        return answer

    fake = FakeAcp(write_script(cwd))
    events = await run(fake, cwd, on_user_input=on_user_input)
    assert fake.permission_answers == [{"outcome": "selected", "optionId": "cancel"}]
    made = one(events, PermissionDecision)
    assert (made.decision, made.decided_by, made.input) == ("deny", "user", None)
    assert made.message == answer.message
    codes = [e.code for e in events if isinstance(e, WarningEvent)]
    assert codes == (["permission_answer_unsupported"] if warned else [])
    assert one(events, ToolResult).is_error
    assert result_of(events).status == "success"


async def test_stop_answer_rejects_the_call_and_ends_the_run_interrupted(cwd: Path) -> None:
    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.stop_run()

    fake = FakeAcp([Permission(write_call(cwd), if_allowed=[tool_done(WRITE, "ok", kind="edit")]), Hang()])
    events = await run(fake, cwd, on_user_input=on_user_input)
    made = one(events, PermissionDecision)
    assert (made.decision, made.decided_by, made.stops_run) == ("deny", "user", True)
    assert any(m.get("method") == "session/cancel" for m in fake.received)
    assert not [e for e in events if e.type == "error"]
    assert result_of(events).status == "interrupted"


@pytest.mark.parametrize(
    ("mode", "decided_by", "rule"), [("default", "policy", "read-only"), ("yolo", "approval_mode", "yolo")]
)
async def test_every_tool_call_has_exactly_one_decision(cwd: Path, mode: str, decided_by: str, rule: str) -> None:
    """The calls the CLI runs unasked are unified's rule where its table allows them unasked (the API backends'
    decision); the others keep the CLI's own (`backend`)."""
    other = "list_directory__list_directory_1_1"
    todo = "write_todos__write_todos_1_2"

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.allow()

    fake = FakeAcp(
        [
            tool_call(READ),
            tool_done(READ, "alpha", args={"file_path": "notes.txt"}),
            Permission(write_call(cwd), if_allowed=[tool_done(WRITE, "ok", kind="edit", args=WRITE_ARGS)]),
            tool_call(other, kind="search"),
            tool_done(other, "a.txt", args={"dir_path": "."}),
            tool_call(todo, kind="think"),
            tool_done(todo, "ok", args={"todos": []}),
            text("done"),
        ]
    )
    events = await run(fake, cwd, on_user_input=on_user_input, approval_mode=mode)
    uses = [e.tool_use_id for e in events if isinstance(e, ToolUse)]
    decided = [(e.tool_use_id, e.decided_by, e.rule) for e in events if isinstance(e, PermissionDecision)]
    assert uses == [READ, WRITE, other, todo]
    write = (WRITE, "user", "write-asks") if mode == "default" else (WRITE, "approval_mode", "yolo")
    unknown = (todo, "backend", None) if mode == "default" else (todo, "approval_mode", "yolo")
    assert decided == [(READ, decided_by, rule), write, (other, decided_by, rule), unknown]


# --- ends: stop reasons, errors, faults ---------------------------------------------------------


@pytest.mark.parametrize(
    ("stop", "status", "warning"),
    [
        ("end_turn", "success", None),
        ("refusal", "error", None),
        ("cancelled", "cancelled", None),
        ("max_turn_requests", "max_turns", None),
    ],
)
async def test_stop_reasons(tmp_path: Path, stop: str, status: str, warning: str | None) -> None:
    events = await run(FakeAcp([text("partial"), Finish(stop, USAGE)]), tmp_path)
    result = result_of(events)
    assert result.status == status
    assert [e.code for e in events if isinstance(e, WarningEvent)] == ([warning] if warning else [])
    assert result.usage.input_tokens == 100  # counted whatever the ending
    if stop == "refusal":
        assert result.error == "the model refused to answer"


async def test_max_tokens_is_a_request_over_the_context_window_not_a_cut_answer(tmp_path: Path) -> None:
    """0.61's ACP agent ends a turn `max_tokens` only when it counted the next request over the model's context
    window and did not send it (`ContextWindowWillOverflow`); an answer cut at the output limit is `end_turn`.
    It read "the answer was cut at the model's output token limit", a success with no answer."""
    events = await run(FakeAcp([Finish("max_tokens", USAGE)]), tmp_path)
    error = one(events, ErrorEvent)
    assert error.code == "bad_request"
    assert "larger than the model's context window" in error.message
    assert result_of(events).status == "error"


@pytest.mark.parametrize(
    ("code", "message", "error_code"),
    [
        (429, "RESOURCE_EXHAUSTED: quota", "rate_limited"),
        (401, "unauthenticated", "auth_error"),
        (-32603, "No more mock responses for generateContent", "backend_error"),
    ],
)
async def test_error_answer_is_a_typed_error(tmp_path: Path, code: int, message: str, error_code: str) -> None:
    events = await run(FakeAcp([text("trying"), ErrorAnswer(code, message)]), tmp_path)
    error = one(events, ErrorEvent)
    assert error.code == error_code
    assert message in error.message
    assert result_of(events).status == "error"
    assert events[-2] is error


async def test_crash_mid_prompt_is_one_explained_error(tmp_path: Path) -> None:
    fake = FakeAcp([tool_call(READ), Crash(exit_code=-9, stderr="FATAL ERROR: heap out of memory\n")])
    events = await run(fake, tmp_path)
    error = one(events, ErrorEvent)
    assert error.code == "backend_error"
    assert "killed by signal 9" in error.message
    assert "heap out of memory" in error.message
    assert error.details["exit_code"] == -9
    assert result_of(events).status == "error"
    assert no_process_left(fake)


async def test_crash_with_an_auth_exit_code_is_an_auth_error(tmp_path: Path) -> None:
    events = await run(FakeAcp([Crash(exit_code=41)]), tmp_path)
    assert one(events, ErrorEvent).code == "auth_error"


async def test_malformed_line_is_a_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    fake = FakeAcp([RawLine(b"this is not JSON\n"), RawLine(b"[1, 2]\n"), text("still here"), Finish()])
    events = await run(fake, tmp_path)
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["malformed_line", "malformed_line"]
    assert "not JSON" in warnings[0].message
    assert result_of(events).final_text == "still here"


async def test_cancel_mid_prompt_sends_session_cancel_and_leaves_no_process(tmp_path: Path) -> None:
    fake = FakeAcp([text("working"), Hang()])
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", cwd=tmp_path, backend_options={"start_process": fake, "pool_size": 0}
    )
    events: list[UnifiedEvent] = []
    async with EventStream(params, strict=True) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, TextDelta):
                stream.cancel()
    assert result_of(events).status == "cancelled"
    assert fake.methods()[-1] == "session/cancel"
    assert no_process_left(fake)


async def test_cancel_while_a_permission_is_pending(tmp_path: Path) -> None:
    fake = FakeAcp(write_script(tmp_path))
    stream_box: list[EventStream] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        stream_box[0].cancel()
        return UserInputResponse(cancelled=True)

    params = ExecuteParams(
        prompt="go",
        backend="gemini-cli",
        cwd=tmp_path,
        on_user_input=on_user_input,
        backend_options={"start_process": fake, "pool_size": 0},
    )
    async with EventStream(params, strict=True) as stream:
        stream_box.append(stream)
        events = [event async for event in stream]
    assert result_of(events).status == "cancelled"
    assert "session/cancel" in fake.methods()
    assert no_process_left(fake)


async def test_prompt_that_never_answers_a_cancel_retires_its_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_module, "CANCEL_GRACE_S", 0.05)
    fake = FakeAcp([text("working"), Hang(answers_cancel=False)])
    pool = AcpPool(size=1)  # warm: only the retirement can end it
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", cwd=tmp_path, backend_options={"start_process": fake, "pool": pool}
    )
    events: list[UnifiedEvent] = []
    async with EventStream(params, strict=True) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, TextDelta):
                stream.cancel()
    assert result_of(events).status == "cancelled"
    assert no_process_left(fake)
    assert pool.pids() == []


@pytest.mark.parametrize("pool_size", [0, 1])
async def test_a_cancel_while_the_cli_starts_ends_its_process(tmp_path: Path, pool_size: int) -> None:
    """A CLI that never answers `initialize` (stuck at its start), cancelled meanwhile (Ctrl-C): the run
    ends `cancelled` and the process with it; it was left running, with no parent, once `unified run` exited."""
    fake = FakeAcp([text("never"), Finish()], faults={"initialize": Hang()})
    options = {"start_process": fake, "pool": AcpPool(size=pool_size)}
    params = ExecuteParams(prompt="go", backend="gemini-cli", cwd=tmp_path, backend_options=options)
    events: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params, strict=True) as stream, anyio.create_task_group() as tg:

            async def cancel_once_it_starts() -> None:
                while "initialize" not in fake.methods():  # noqa: ASYNC110 -- sent by the run, in its own task
                    await anyio.sleep(0.01)
                stream.cancel()

            tg.start_soon(cancel_once_it_starts)
            events.extend([event async for event in stream])
    assert result_of(events).status == "cancelled"
    assert fake.methods() == ["initialize"]
    assert no_process_left(fake)


async def test_a_cli_that_never_answers_initialize_fails_the_run_and_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As codex's and claude's runs do: before, it waited for the idle timeout (180 s; for ever with it off)."""
    monkeypatch.setattr(acp_module, "INITIALIZE_TIMEOUT_S", 0.05)
    fake = FakeAcp([text("never"), Finish()], faults={"initialize": Hang()})
    with anyio.fail_after(HANG_GUARD_S):
        events = await run(fake, tmp_path, idle_timeout_s=None)
    error = one(events, ErrorEvent)
    assert (error.code, error.retryable) == ("backend_error", True)
    assert "gemini --acp did not answer initialize within 0.05 s" in error.message
    assert "unified doctor" in error.message
    assert result_of(events).status == "error"
    assert no_process_left(fake)


async def test_oversized_line_is_dropped_with_a_warning(tmp_path: Path) -> None:
    huge = b'{"jsonrpc":"2.0","method":"session/update","params":{"pad":"' + b"x" * MAX_LINE_BYTES + b'"}}\n'
    events = await run(FakeAcp([RawLine(huge), text("after"), Finish()]), tmp_path)
    warning = one(events, WarningEvent)
    assert (warning.code, "byte cap" in warning.message) == ("malformed_line", True)
    assert result_of(events).final_text == "after"


@pytest.mark.parametrize(
    ("method", "fault", "code", "words"),
    [
        (
            "initialize",
            Crash(exit_code=41, stderr="no credentials"),
            "auth_error",
            "exited before it answered initialize",
        ),
        ("initialize", ErrorAnswer(-32603, "internal"), "backend_error", "failed to start"),
        ("session/new", ErrorAnswer(401, "Unauthenticated"), "auth_error", "session/new"),
        ("session/set_model", ErrorAnswer(-32602, "unknown model"), "backend_error", "session/set_model"),
    ],
)
async def test_setup_failures_are_typed_errors(
    tmp_path: Path, method: str, fault: Crash | ErrorAnswer, code: str, words: str
) -> None:
    fake = FakeAcp([text("never"), Finish()], faults={method: fault})
    events = await run(fake, tmp_path, model="gemini-2.5-flash")
    error = one(events, ErrorEvent)
    assert (error.code, words in error.message) == (code, True)
    assert result_of(events).status == "error"
    assert "session/prompt" not in fake.methods()
    assert no_process_left(fake)


async def test_a_result_whose_record_never_comes_goes_out_as_acp_gave_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hold_back, "FLUSH_GRACE_S", 0.05)
    content = [{"type": "content", "content": {"type": "text", "text": "acp says"}}]
    fake = FakeAcp([tool_call(READ), tool_done(READ, "never written", content=content, record=False), text("done")])
    events = await run(fake, tmp_path)
    assert one(events, ToolResult).output == "acp says"
    assert not [e for e in events if isinstance(e, WarningEvent)]  # the chat file exists: no warning


async def test_without_a_chat_file_results_fall_back_with_one_warning(tmp_path: Path) -> None:
    fake = FakeAcp(
        [tool_call(READ), tool_done(READ), tool_call("ls__ls_2"), tool_done("ls__ls_2"), text("ok")], write_chat=False
    )
    events = await run(fake, tmp_path)
    assert [r.output for r in events if isinstance(r, ToolResult)] == [None, None]
    assert one(events, WarningEvent).code == "tool_output_unavailable"


async def test_a_load_the_agent_refuses_is_session_not_found(tmp_path: Path) -> None:
    fake = FakeAcp([text("first"), Finish()], faults={})
    first = one(await run(fake, tmp_path), SessionStarted)
    fake.faults["session/load"] = ErrorAnswer(-32603, "Invalid session identifier")
    events = await run(fake, tmp_path, resume=first.short_id)
    assert one(events, ErrorEvent).code == "session_not_found"
    assert no_process_left(fake)


# --- sessions and processes ---------------------------------------------------------------------


async def test_resume_loads_the_session_and_skips_its_history(tmp_path: Path) -> None:
    fake = FakeAcp(
        [thought("**Reading**\nfirst"), tool_call(READ), tool_done(READ, "alpha"), text("first answer"), Finish()],
        [text("second answer"), Finish(token_count=USAGE)],
    )
    first = one(await run(fake, tmp_path), SessionStarted)
    events = await run(fake, tmp_path, prompt="again", resume=first.short_id)
    started = one(events, SessionStarted)
    assert (started.session_id, started.resumed) == (first.session_id, True)
    assert [e.type for e in events] == ["session_started", "text_delta", "assistant_message", "result"]
    assert result_of(events).final_text == "second answer"
    assert fake.methods().count("session/load") == 1
    assert len(fake.processes) == 2
    assert no_process_left(fake)


async def test_a_session_resumes_on_its_own_model_and_a_first_run_on_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never the CLI's router: a first run without a model gets DEFAULT_MODEL, a resume without one the session's."""
    monkeypatch.delenv("GEMINI_MODEL", raising=False)
    fake = FakeAcp([text("one"), Finish()], [text("two"), Finish()], [text("three"), Finish()])
    plain = one(await run(fake, tmp_path), SessionStarted)
    assert plain.model == DEFAULT_MODEL
    first = one(await run(fake, tmp_path, model="gemini-2.5-pro"), SessionStarted)
    resumed = one(await run(fake, tmp_path, prompt="again", resume=first.short_id), SessionStarted)
    assert (resumed.resumed, resumed.model) == (True, "gemini-2.5-pro")
    models = [m["params"]["modelId"] for m in fake.received if m.get("method") == "session/set_model"]
    assert models == [DEFAULT_MODEL, "gemini-2.5-pro", "gemini-2.5-pro"]


async def test_resume_of_an_unknown_id_fails_before_any_process_starts(tmp_path: Path) -> None:
    fake = FakeAcp()
    events = await run(fake, tmp_path, resume="deadbeef")
    assert one(events, ErrorEvent).code == "session_not_found"
    assert fake.processes == []


async def test_a_warm_process_serves_the_next_run(tmp_path: Path) -> None:
    fake = FakeAcp([text("one"), Finish()], [text("two"), Finish()])
    pool = AcpPool(size=1)
    try:
        for expected in ("one", "two"):
            events = await run(fake, tmp_path, backend_options={"pool": pool, "pool_size": None})
            assert result_of(events).final_text == expected
        assert len(fake.processes) == 1
        assert fake.methods().count("initialize") == 1
        assert not fake.processes[0].closed
    finally:
        await pool.aclose()
    assert no_process_left(fake)


async def test_session_setup_sends_model_mcp_servers_and_warns_about_a_missing_command(tmp_path: Path) -> None:
    server = StdioMcpServer(name="notes", command="no-such-command-anywhere", args=("--x",), env={"K": "v"})
    fake = FakeAcp([text("ok"), Finish()])
    events = await run(fake, tmp_path, model="gemini-2.5-pro", mcp_servers=(server,))
    warning = one(events, WarningEvent)
    assert warning.code == "mcp_unavailable"  # the other backends' code for a server that does not start
    assert "'notes'" in warning.message
    new = next(m for m in fake.received if m.get("method") == "session/new")
    assert new["params"]["mcpServers"] == [
        {"name": "notes", "command": "no-such-command-anywhere", "args": ["--x"], "env": [{"name": "K", "value": "v"}]}
    ]
    model = next(m for m in fake.received if m.get("method") == "session/set_model")
    assert model["params"]["modelId"] == "gemini-2.5-pro"
    assert one(events, SessionStarted).model == "gemini-2.5-pro"


async def test_acp_transcript_receives_both_directions(tmp_path: Path) -> None:
    transcript: list[dict[str, Any]] = []
    await run(FakeAcp([text("hi"), Finish()]), tmp_path, backend_options={"acp_transcript": transcript})
    directions = {(entry["dir"], entry["msg"].get("method")) for entry in transcript if entry["dir"] != "chat"}
    assert ("send", "session/prompt") in directions
    assert ("recv", "session/update") in directions


# --- recorded transcripts played by the fake ----------------------------------------------------


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
async def test_recorded_transcript_plays_through(tmp_path: Path, path: Path) -> None:
    script = script_from_transcript(path)
    # A transcript recorded over ACP alone (bench/transcripts) holds no chat-file records: the fake writes no
    # chat file then, as a CLI that cannot write one, so its calls go out as ACP gave them at once (with a
    # chat file and no records, each would wait out the hold's grace: a second a test, in real time).
    recorded = any(isinstance(step, Record) for step in script)
    events = await run(FakeAcp(script, write_chat=recorded), tmp_path, approval_mode="yolo")
    result = result_of(events)
    errors = [s for s in script if isinstance(s, ErrorAnswer)]
    assert result.status == ("error" if errors else "success"), result.error
    if errors:  # the server's words, cut at 2,000 characters when longer (`api_errors`: a dump, its size said)
        said = errors[0].message
        assert (said if len(said) <= 2_000 else said[:1_000]) in (result.error or "")
    uses = {e.tool_use_id for e in events if isinstance(e, ToolUse)}
    assert uses == {e.tool_use_id for e in events if isinstance(e, ToolResult)}
    updates = [step.update for step in script if isinstance(step, Update)]
    chunks = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "".join(
        c for c in chunks if not c.startswith("[MODE_UPDATE]")
    )
    calls = {u["toolCallId"] for u in updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")}
    assert uses == calls
    unavailable = [e for e in events if isinstance(e, WarningEvent) and e.code == "tool_output_unavailable"]
    assert len(unavailable) == (1 if calls and not recorded else 0)


# --- options ------------------------------------------------------------------------------------


async def test_misspelt_option_is_an_error_before_any_process_starts(tmp_path: Path) -> None:
    fake = FakeAcp([text("never"), Finish()])
    events = await run(fake, tmp_path, backend_options={"pool_sise": 2})
    error = one(events, ErrorEvent)
    assert error.code == "configuration_error"
    assert "pool_sise" in error.message
    assert "pool_size" in error.message  # the known keys are named
    assert fake.processes == []


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"pool_size": "2"}, "pool_size"),
        ({"pool_size": -1}, "pool_size"),
        ({"pool_size": True}, "pool_size"),
        ({"transport": "grpc"}, "transport"),
        ({"env": {"A": 1}}, "env.A"),
        ({"pool": object()}, "pool"),
        ({"acp_transcript": ()}, "acp_transcript"),
        ({"start_process": "gemini"}, "start_process"),
        ({"fake_responses_strict": "no"}, "fake_responses_strict"),
    ],
)
def test_bad_option_values_name_their_key(raw: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        gemini_cli_options(raw)
    assert f"backend_options.{key}:" in str(caught.value)


def test_options_keep_the_callers_objects() -> None:
    transcript: list[dict[str, Any]] = []
    pool = AcpPool(size=0)
    options = gemini_cli_options({"acp_transcript": transcript, "pool": pool, "gemini_binary": "/opt/gemini"})
    assert options.acp_transcript is transcript
    assert options.pool is pool
    assert options.gemini_binary == Path("/opt/gemini")
    assert gemini_cli_options(options) is options
    assert GeminiCliOptions().transport == "acp"


async def test_start_process_does_not_combine_with_stream_json(tmp_path: Path) -> None:
    fake = FakeAcp()
    events = await run(fake, tmp_path, backend_options={"transport": "stream-json"})
    error = one(events, ErrorEvent)
    assert error.code == "configuration_error"
    assert "start_process" in error.message
    assert fake.processes == []


@HIDING_CASES
async def test_the_host_is_made_undumpable_before_the_cli_starts_unless_opted_out(
    cwd: Path, monkeypatch: pytest.MonkeyPatch, given: dict[str, bool], order: list[str]
) -> None:
    """A command the CLI runs could read unified's keys in `/proc/<unified's pid>/environ` (docs/backends/gemini-cli.md,
    "Keys and the model's commands"): the host is hidden first, unless the caller said no."""
    fake = FakeAcp([text("Hi."), Finish(token_count=USAGE)])
    seen, start = record_hiding(monkeypatch, gemini_backend, fake)
    events = await run(fake, cwd, backend_options={"start_process": start, **given})
    assert result_of(events).status == "success"
    assert seen == order
    assert no_process_left(fake)
