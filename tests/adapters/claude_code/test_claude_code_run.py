"""The claude-code adapter in process, on `FakeAgentProcess`: the control protocol, hostile output, crashes.

A stand-in CLI (`FakeClaude`) answers `initialize`, prints a scripted turn for each user message and
records what the adapter sent: what the real binary does in the e2e tier, here in well under a
second and on both event loops, including what the binary never does on cue (a malformed line, a
line over the cap, a crash mid-turn, a request it then withdraws).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.adapters.host_hiding import HIDING_CASES, record_hiding
from unified._adapters.claude_code import _backend as claude_backend
from unified._execute import EventStream
from unified.events import (
    ErrorEvent,
    PermissionDecision,
    Result,
    SessionStarted,
    TextDelta,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
)
from unified.testing import FakeAgentProcess
from unified.types import ExecuteParams, ImageInput

pytestmark = pytest.mark.anyio

Line = dict[str, Any] | bytes | str


def init() -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": "x", "model": "claude-test", "cwd": "/w"}


def text_turn(text: str) -> list[Line]:
    return [
        init(),
        {"type": "stream_event", "event": {"type": "message_start", "message": {"id": "m1"}}},
        {
            "type": "stream_event",
            "event": {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        },
        {
            "type": "stream_event",
            "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        },
        {"type": "stream_event", "event": {"type": "content_block_stop", "index": 0}},
        {
            "type": "stream_event",
            "event": {"type": "message_delta", "usage": {"input_tokens": 3, "output_tokens": 2}},
        },
        {"type": "stream_event", "event": {"type": "message_stop"}},
        result(),
    ]


def result(**extra: Any) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "model_usage_since_last_result": {"claude-test": {"inputTokens": 3, "outputTokens": 2, "costUSD": 0.001}},
        **extra,
    }


class FakeClaude:
    """Answers initialize; for each user message plays the next scripted turn; after a control response
    of ours (a permission answer) plays what the script put after the request."""

    def __init__(self, process: FakeAgentProcess, turns: Sequence[Sequence[Line]]) -> None:
        self.process = process
        self.turns = [list(t) for t in turns]
        self.pending: list[Line] = []
        self.sent: list[dict[str, Any]] = []

    def _out(self, lines: list[Line]) -> list[str | bytes]:
        out: list[str | bytes] = []
        while lines:
            line = lines.pop(0)
            if line == "EXIT":  # what was printed before the crash is on stdout
                self.process.emit(*out)
                self.process.write_stderr("claude: something broke\n")
                self.process.exit(2)
                return []
            if line == "WAIT":  # the rest comes after our next answer
                self.pending = lines
                return out
            out.append(line if isinstance(line, bytes | str) else json.dumps(line))
        return out

    def __call__(self, line: str) -> list[str | bytes]:
        message = json.loads(line)
        self.sent.append(message)
        kind = message.get("type")
        if kind == "control_request" and message["request"]["subtype"] == "initialize":
            return [
                json.dumps(
                    {
                        "type": "control_response",
                        "response": {"subtype": "success", "request_id": message["request_id"], "response": {}},
                    }
                )
            ]
        if kind == "control_request" and message["request"]["subtype"] == "interrupt":
            ack = {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": message["request_id"], "response": {}},
            }
            return [
                json.dumps(ack),
                json.dumps(
                    result(subtype="error_during_execution", terminal_reason="aborted_streaming", is_error=True)
                ),
            ]
        if kind == "user":
            return self._out(self.turns.pop(0) if self.turns else [])
        if kind == "control_response":
            lines, self.pending = self.pending, []
            return self._out(lines)
        return []


def starter(turns: Sequence[Sequence[Line]], keep: list[FakeClaude]) -> Callable[..., FakeAgentProcess]:
    def start(argv: Sequence[str], cwd: Path, env: Any) -> FakeAgentProcess:
        process = FakeAgentProcess(argv=argv, env=env)
        fake = FakeClaude(process, turns)
        process.handler = fake
        keep.append(fake)
        return process

    return start


async def run(
    tmp_path: Path,
    turns: Sequence[Sequence[Line]],
    *,
    answer: Callable[[UserInputRequest], Any] | None = None,
    **options: Any,
) -> tuple[list[UnifiedEvent], FakeClaude]:
    keep: list[FakeClaude] = []
    params = ExecuteParams(
        prompt="go",
        backend="claude-code",
        cwd=tmp_path,
        on_user_input=answer,
        backend_options={"start_process": starter(turns, keep), **options},
    )
    with anyio.fail_after(30):
        async with EventStream(params, strict=True) as stream:
            events = [event async for event in stream]
    return events, keep[0]


async def test_a_turn_runs_over_the_control_protocol_and_the_process_is_ended(tmp_path: Path) -> None:
    events, fake = await run(tmp_path, [text_turn("Hello.")])
    assert [e.type for e in events] == ["session_started", "text_delta", "assistant_message", "result"]
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.model == "claude-test"
    assert fake.sent[0]["request"] == {"subtype": "initialize", "hooks": None, "forwardSubagentText": True}
    assert fake.sent[1]["message"] == {"role": "user", "content": "go"}
    assert fake.process.closed
    argv = fake.process.argv
    assert "--setting-sources" in argv and argv[argv.index("--setting-sources") + 1] == "user"  # noqa: PT018
    settings = json.loads(argv[argv.index("--settings") + 1])
    assert {"Bash", "Write", "Edit", "Read", "WebFetch"} <= set(settings["permissions"]["ask"])
    assert any(a.startswith("--session-id=") for a in argv)
    final = events[-1]
    assert isinstance(final, Result)
    assert final.usage.cost_usd == 0.001


@pytest.mark.parametrize("whose", ["the run's", "another"])
async def test_a_run_removes_the_live_process_entry_its_dead_cli_left_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, whose: str
) -> None:
    """The CLI writes `<CLAUDE_CONFIG_DIR>/sessions/<pid>.json` naming its session, and cannot remove it when
    it is killed or dies (here: mid-turn); the run's end removes it once the process is reaped, and only
    while it names the run's session: a later process given the same pid writes its own session there.
    (A cold run of the real binary, killed: tests/e2e/claude_code/test_claude_code_failures.py.)"""
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    home = tmp_path / "claude-home"
    entry = home / ".claude" / "sessions" / "4321.json"
    keep: list[FakeClaude] = []

    def start(argv: Sequence[str], cwd: Path, env: Any) -> FakeAgentProcess:
        process = FakeAgentProcess(pid=4321, argv=argv, env=env)
        process.handler = FakeClaude(process, [[text_turn("Hel")[0], "EXIT"]])
        keep.append(process.handler)
        [session] = [a.removeprefix("--session-id=") for a in argv if a.startswith("--session-id=")]
        entry.parent.mkdir(parents=True)
        named = session if whose == "the run's" else "0f5c2b3e-another-process-session"
        entry.write_text(json.dumps({"pid": 4321, "sessionId": named}))
        return process

    params = ExecuteParams(
        prompt="go", backend="claude-code", cwd=tmp_path, backend_options={"start_process": start, "home": home}
    )
    with anyio.fail_after(30):
        async with EventStream(params, strict=True) as stream:
            events = [event async for event in stream]
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error", "the CLI died mid-turn"
    [fake] = keep
    assert fake.process.closed
    assert entry.exists() is (whose == "another")


async def test_a_new_text_session_is_planned_on_the_loop_and_one_with_images_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_threads: list[str] = []
    real = anyio.to_thread.run_sync

    async def recording(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        in_threads.append(getattr(func, "__name__", ""))
        return await real(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", recording)
    events, fake = await run(tmp_path, [text_turn("Hello.")])
    assert isinstance(events[-1], Result)
    assert fake.sent[1]["message"] == {"role": "user", "content": "go"}
    assert "_plan" not in in_threads
    keep: list[FakeClaude] = []
    image = ImageInput(mime_type="image/png", data=b"\x89PNG")
    params = ExecuteParams(
        prompt="look",
        images=(image,),
        backend="claude-code",
        cwd=tmp_path,
        backend_options={"start_process": starter([text_turn("A picture.")], keep)},
    )
    with anyio.fail_after(30):
        async with EventStream(params, strict=True) as stream:
            assert isinstance([event async for event in stream][-1], Result)
    assert "_plan" in in_threads
    content = keep[0].sent[1]["message"]["content"]
    assert [part["type"] for part in content] == ["text", "image"]


async def test_a_malformed_and_an_oversized_line_are_warnings_and_the_run_goes_on(tmp_path: Path) -> None:
    turn = text_turn("Still here.")
    turn[1:1] = ["this is not json", json.dumps([1, 2]), b"\xff\xfe not utf-8", "x" * (8 * 1024 * 1024 + 10)]
    events, _ = await run(tmp_path, [turn])
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["malformed_line"] * 4
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert final.final_text == "Still here."


async def test_lines_with_fields_of_the_wrong_type_are_read_past_and_the_run_goes_on(tmp_path: Path) -> None:
    """An `assistant` line whose content is a number and id a list, a `user` line whose `tool_result_meta` is
    a number (the type-confusion fuzz, tests/security): once a TypeError inside the translator, now nothing."""
    turn = text_turn("Still here.")
    turn[1:1] = [
        {"type": "assistant", "message": {"id": [1], "model": "claude-test", "content": 5}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t"}]}, "tool_result_meta": 7},
    ]
    events, _ = await run(tmp_path, [turn])
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert final.final_text == "Still here."


async def test_a_crash_mid_turn_is_a_backend_error_with_the_exit_and_stderr(tmp_path: Path) -> None:
    turn = text_turn("cut")[:4]
    events, _ = await run(tmp_path, [[*turn, "EXIT"]])
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_error"
    assert "exited with code 2" in error.message
    assert "something broke" in error.message
    assert any(isinstance(e, TextDelta) for e in events)
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"


async def test_a_result_before_init_is_the_clis_refusal(tmp_path: Path) -> None:
    refusal = {
        "type": "result",
        "subtype": "error_during_execution",
        "is_error": True,
        "errors": ["No conversation found with session ID: 0000"],
    }
    events, _ = await run(tmp_path, [[refusal]])
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "session_not_found"


async def test_an_api_error_result_maps_to_the_registry(tmp_path: Path) -> None:
    failures = {
        429: "rate_limited",
        529: "backend_error",
        500: "backend_error",
        401: "auth_error",
        400: "bad_request",
        404: "model_not_found",
    }
    for status, code in failures.items():
        line = result(
            is_error=True, api_error_status=status, result=f"API Error: {status}", terminal_reason="api_error"
        )
        events, _ = await run(tmp_path, [[init(), line]])
        [error] = [e for e in events if isinstance(e, ErrorEvent)]
        assert error.code == code, status
        assert error.retryable is (status in (429, 529, 500))


async def test_an_answer_with_no_content_is_a_retryable_stream_error_not_the_clis_diagnostic(tmp_path: Path) -> None:
    """What 2.1.332 ends a turn with when the model's stream (and its non-streaming fallback) had no content block:
    once `backend_error` "the claude CLI failed: [ede_diagnostic] ..." (e2e: test_claude_code_bad_input.py)."""
    line = result(
        subtype="error_during_execution",
        is_error=True,
        terminal_reason="completed",
        errors=["[ede_diagnostic] result_type=assistant last_content_type=none stop_reason=null"],
    )
    events, _ = await run(tmp_path, [[init(), line]])
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert (error.code, error.retryable) == ("stream_interrupted", True)
    assert error.message.startswith("the model's API answered with no content")


async def test_a_withdrawn_permission_request_is_not_answered(tmp_path: Path) -> None:
    call = {
        "type": "assistant",
        "message": {
            "id": "m",
            "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "touch x"}}],
        },
    }
    ask = {
        "type": "control_request",
        "request_id": "cli-1",
        "request": {
            "subtype": "can_use_tool",
            "tool_name": "Bash",
            "input": {"command": "touch x"},
            "tool_use_id": "t1",
        },
    }
    withdraw = {"type": "control_cancel_request", "request_id": "cli-1"}

    async def answer(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.allow()

    # The CLI withdraws the request before the adapter reads it (an interrupt raced it).
    events, fake = await run(tmp_path, [[init(), call, withdraw, ask, result()]], answer=answer)
    assert not [m for m in fake.sent if m.get("type") == "control_response"], "nothing answers a withdrawn request"
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert decision.decision == "allow"


async def test_a_permission_request_for_an_unseen_call_shows_the_call_first(tmp_path: Path) -> None:
    ask = {
        "type": "control_request",
        "request_id": "cli-2",
        "request": {
            "subtype": "can_use_tool",
            "tool_name": "Write",
            "input": {"file_path": "a", "content": "b"},
            "tool_use_id": "t9",
        },
    }
    tool_result = {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "tool_use_id": "t9", "content": "denied", "is_error": True}]},
    }
    events, fake = await run(tmp_path, [[init(), ask, "WAIT", tool_result, result()]])
    kinds = [e.type for e in events]
    assert kinds.index("tool_use") < kinds.index("permission_decision") < kinds.index("tool_result")
    [answer] = [m for m in fake.sent if m.get("type") == "control_response"]
    response = answer["response"]["response"]
    assert response["behavior"] == "deny"
    assert "nobody can answer" in response["message"]


async def test_an_unknown_control_request_gets_an_error_answer(tmp_path: Path) -> None:
    odd = {"type": "control_request", "request_id": "cli-3", "request": {"subtype": "mcp_message"}}
    _, fake = await run(tmp_path, [[init(), odd, *text_turn("ok")[1:]]])
    [answer] = [m for m in fake.sent if m.get("type") == "control_response"]
    assert answer["response"]["subtype"] == "error"


async def test_a_stall_is_interrupted_by_the_watchdog(tmp_path: Path) -> None:
    requesting = {"type": "system", "subtype": "status", "status": "requesting"}
    events, fake = await run(tmp_path, [[init(), requesting, "WAIT"]], stall_timeout_s=0.2)
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "stream_interrupted"
    assert error.retryable
    assert any(m.get("request", {}).get("subtype") == "interrupt" for m in fake.sent)
    assert fake.process.closed


async def test_cancel_interrupts_the_turn_then_ends_the_process(tmp_path: Path) -> None:
    keep: list[FakeClaude] = []
    params = ExecuteParams(
        prompt="go",
        backend="claude-code",
        cwd=tmp_path,
        backend_options={"start_process": starter([[init(), "WAIT"]], keep)},
    )
    seen: list[UnifiedEvent] = []
    with anyio.fail_after(30):
        async with EventStream(params, strict=True) as stream:
            async for event in stream:
                seen.append(event)
                if isinstance(event, SessionStarted):
                    stream.cancel()
    final = seen[-1]
    assert isinstance(final, Result)
    assert final.status == "cancelled"
    fake = keep[0]
    assert any(m.get("request", {}).get("subtype") == "interrupt" for m in fake.sent)
    assert fake.process.closed


async def test_bad_options_fail_before_any_process(tmp_path: Path) -> None:
    params = ExecuteParams(prompt="go", backend="claude-code", cwd=tmp_path, backend_options={"stall_timeout": 3})
    async with EventStream(params) as stream:
        events = [event async for event in stream]
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "configuration_error"
    assert "stall_timeout_s" in error.message


async def test_a_cli_that_never_answers_initialize_is_a_backend_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import unified._adapters.claude_code._run as run_module

    monkeypatch.setattr(run_module, "INITIALIZE_TIMEOUT_S", 0.2)

    def start(argv: Sequence[str], cwd: Path, env: Any) -> FakeAgentProcess:
        return FakeAgentProcess(lambda line: None, argv=argv, env=env)

    params = ExecuteParams(prompt="go", backend="claude-code", cwd=tmp_path, backend_options={"start_process": start})
    async with EventStream(params, strict=True) as stream:
        events = [event async for event in stream]
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_error"
    assert "did not answer initialize" in error.message


async def test_a_cli_that_floods_lines_before_answering_initialize_is_stopped_not_held(tmp_path: Path) -> None:
    """The lines before the initialize answer are kept (to be pumped once it comes): a bounded number."""
    from unified._adapters.claude_code._run import MAX_EARLY_LINES

    def flood(line: str) -> list[str]:
        message = json.loads(line)
        if message.get("type") != "control_request":
            return []
        return [json.dumps({"type": "system", "subtype": "noise", "n": n}) for n in range(MAX_EARLY_LINES + 1)]

    def start(argv: Sequence[str], cwd: Path, env: Any) -> FakeAgentProcess:
        return FakeAgentProcess(flood, argv=argv, env=env)

    params = ExecuteParams(prompt="go", backend="claude-code", cwd=tmp_path, backend_options={"start_process": start})
    async with EventStream(params, strict=True) as stream:
        events = [event async for event in stream]
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_error"
    assert f"more than {MAX_EARLY_LINES} lines before it answered initialize" in error.message


@HIDING_CASES
async def test_the_host_is_made_undumpable_before_the_cli_starts_unless_opted_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: dict[str, bool], order: list[str]
) -> None:
    """A command the CLI runs could read unified's keys in `/proc/<unified's pid>/environ`
    (docs/backends/claude-code.md, "Keys and the model's commands"): the host is hidden first, unless the caller
    said no."""
    keep: list[FakeClaude] = []
    seen, start = record_hiding(monkeypatch, claude_backend, starter([text_turn("Hi.")], keep))
    params = ExecuteParams(
        prompt="go", backend="claude-code", cwd=tmp_path, backend_options={"start_process": start, **given}
    )
    async with EventStream(params, strict=True) as stream:
        events = [event async for event in stream]
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"
    assert seen == order
