"""The headless transport's translation of what 0.61 prints (`gemini -p --output-format stream-json`), with lines
measured against FakeGemini by the conformance suite (tests/e2e/conformance, column gemini-cli/stream-json)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.gemini_cli.test_gemini_cli_chat_records import READ_ID, SESSION, call, chat_file, line, message
from unified._adapters.gemini_cli import _stream_json
from unified._adapters.gemini_cli._chat_records import ChatRecords
from unified._adapters.gemini_cli._outcome import error_from_result
from unified._adapters.gemini_cli._stream_json import StreamJsonTranslator
from unified._adapters.gemini_cli._translate import TurnBoundary
from unified.events import PermissionDecision, ToolResult, ToolUse


def _call(name: str, n: int, parameters: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "tool_name": name,
        "tool_id": f"{name}__{name}_1796428415411_{n}",
        "parameters": parameters,
    }


def _result(name: str, n: int, status: str, error_type: str | None = None, message: str = "") -> dict[str, Any]:
    line: dict[str, Any] = {"type": "tool_result", "tool_id": f"{name}__{name}_1796428415411_{n}", "status": status}
    if error_type is not None:
        line |= {"output": message, "error": {"type": error_type, "message": message}}
    return line


LINES = [
    {"type": "init", "session_id": "5c71pted-0000-4000-8000-000000000001", "model": "gemini-2.5-flash"},
    _call("read_file", 0, {"file_path": "missing.txt"}),
    _result("read_file", 0, "error", "file_not_found", "File not found: /ws/missing.txt"),
    _call("list_directory", 1, {"dir_path": "."}),
    _result("list_directory", 1, "success"),
    _call("write_file", 2, {"file_path": "new.txt", "content": "written\n"}),
    _result("write_file", 2, "error", "tool_not_registered", 'Tool "write_file" not found.'),
    _call("write_file", 3, {"file_path": "new.txt", "content": "written\n"}),
    _result("write_file", 3, "error", "policy_violation", "Tool execution denied by policy. You are in Plan Mode"),
]


def test_every_call_gets_one_permission_decision_before_its_result() -> None:
    """docs/protocol.md: exactly one `permission_decision` per client-side `tool_use`, after it, before its
    `tool_result`. Headless, the CLI decides alone and tells it only by the call's end: a call it ran (whether it
    then failed, as a missing file) was allowed; one of a tool it did not register, or that its policy refused,
    was denied. Before, no call had a decision."""
    translator = StreamJsonTranslator()
    events = [item for line in LINES for item in translator.event(line)]
    calls = [e for e in events if isinstance(e, ToolUse | PermissionDecision | ToolResult)]
    got = [(type(e).__name__, e.tool_use_id[-1], getattr(e, "decision", None)) for e in calls]
    verdicts = {"0": "allow", "1": "allow", "2": "deny", "3": "deny"}
    assert got == [
        step
        for n, verdict in verdicts.items()
        for step in [("ToolUse", n, None), ("PermissionDecision", n, verdict), ("ToolResult", n, None)]
    ]
    decisions = [e for e in calls if isinstance(e, PermissionDecision)]
    assert {d.decided_by for d in decisions} == {"backend"}
    assert [d.tool_name for d in decisions] == ["read_file", "list_directory", "write_file", "write_file"]
    assert "no tool named 'write_file'" in (decisions[2].reason or "")
    assert "policy denied it" in (decisions[3].reason or "")


def _text(value: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": value, "delta": True}


@pytest.mark.parametrize(
    ("lines", "turns"),
    [
        ([*LINES[:5], _text("done")], 3),  # a request that only called a tool after another did: counted
        ([LINES[0], LINES[1], LINES[3], LINES[2], LINES[4], _text("done")], 2),  # two calls of one request
        ([LINES[0], _text("I will read it."), LINES[1], LINES[2], _text("done")], 2),  # text and a call, one request
        ([LINES[0], LINES[1], _text("reading"), LINES[2], _text("done")], 2),  # text after its call, same request
    ],
    ids=["tool-only-turns", "parallel-calls", "text-then-call", "call-then-text"],
)
def test_each_model_request_is_one_turn(lines: list[dict[str, Any]], turns: int) -> None:
    """Headless, a request's calls are all announced while it streams, before any runs: a `tool_use` after a
    `tool_result` begins the next request. Before, only text after calls began a turn (tool-only turns: 1, not 3)."""
    translator = StreamJsonTranslator()
    items = [item for line in lines for item in translator.event(line)]
    assert len([i for i in items if isinstance(i, TurnBoundary)]) == turns


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_successful_call_s_output_is_what_the_model_read_from_the_chat_file(
    anyio_backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """0.61's stream-json `tool_result` of a read is `output: ""` (its display) while the model read the file:
    the chat file's function response replaces it, as over ACP. With no record (no chat file) the display stays,
    after the grace (shrunk here). Before, every read's output was empty, every listing's and edit's null."""
    monkeypatch.setattr(_stream_json, "RECORD_GRACE_S", 0.01)
    path = chat_file(tmp_path)
    chat = ChatRecords(tmp_path / ".gemini", SESSION)
    chat.start()
    with path.open("ab") as handle:
        handle.write(line(message(call(READ_ID, "success", {"output": "alpha\nbeta\n"}, file_path="notes.txt"))))
    translator = StreamJsonTranslator()
    translator.event({"type": "tool_use", "tool_name": "read_file", "tool_id": READ_ID, "parameters": {}})
    shown = translator.event({"type": "tool_result", "tool_id": READ_ID, "status": "success", "output": ""})[-1]
    assert isinstance(shown, ToolResult)
    read = await _stream_json._as_the_model_read_it(chat, shown)
    assert (read.output, read.is_error) == ("alpha\nbeta\n", False)
    unrecorded = shown.model_copy(update={"tool_use_id": "list_directory__list_directory_1_1", "output": None})
    assert await _stream_json._as_the_model_read_it(chat, unrecorded) == unrecorded
    nowhere = ChatRecords(tmp_path / "elsewhere", SESSION)  # no chat file at all
    nowhere.start()
    assert await _stream_json._as_the_model_read_it(nowhere, shown) == shown


QUOTA = "[API Error: Resource has been exhausted (e.g. check quota).\nSuggested retry after 3600s.]"


@pytest.mark.parametrize(
    "message",
    [
        QUOTA + "\nPlease wait and try again later. To increase your limits, request a quota increase through "
        "AI Studio, or switch to another /auth method",
        QUOTA + "\nPlease wait and try again later. To increase your limits, request a quota increase through "
        "Vertex, or switch to another /auth method",
        QUOTA + "\nPossible quota limitations in place or slow response times detected. Switching to the "
        "gemini-2.5-flash model for the rest of this session.",
    ],
    ids=["api key", "vertex", "login"],
)
def test_a_quota_error_in_the_result_is_rate_limited_as_over_acp(message: str) -> None:
    """0.61 ends a headless run on a 429 with `result(status=error)`, error type `unknown`, and the API's text
    followed by its rate-limit note (one per auth type): that is `rate_limited`, as over ACP and on the API
    backends, with the delay the server asked for. It was `backend_error`, which a failover or retry cannot tell
    from a crash."""
    error = error_from_result({"type": "unknown", "message": message}, 1)
    assert (error.code, error.retryable, error.details["retry_after_s"]) == ("rate_limited", True, 3600.0)
    assert "wait 3600s" in (error.hint or "")


def test_any_other_error_in_the_result_stays_a_backend_error() -> None:
    error = error_from_result({"type": "Error", "message": "[API Error: Request contains an invalid argument.]"}, 1)
    assert error.code == "backend_error"
    assert "invalid argument" in error.message


@pytest.mark.parametrize(("max_turns", "capped_at"), [(None, None), (1, 1), (2, 5), (3, None)])
def test_the_first_call_of_request_max_turns_is_past_the_cap(max_turns: int | None, capped_at: int | None) -> None:
    """Two calls in request 1 (lines 1 and 2), one in request 2 (line 5, after their results): the cap stops the run at
    the first call of request `max_turns`, never at a second call of a request let through."""
    lines = [LINES[0], LINES[1], LINES[3], LINES[2], LINES[4], _call("read_file", 5, {"file_path": "a"})]
    translator = StreamJsonTranslator()
    turns, capped = 0, None
    for n, data in enumerate(lines):
        if translator.past_cap(data, turns, max_turns):
            capped = n
            break
        turns += len([i for i in translator.event(data) if isinstance(i, TurnBoundary)])
    assert capped == capped_at
    if capped is not None:
        translator.event(lines[capped])
        refused = translator.not_run("not run: the run reached max_turns=1")
        assert [(type(e).__name__, e.tool_use_id[-1]) for e in refused] == [
            ("PermissionDecision", lines[capped]["tool_id"][-1]),
            ("ToolResult", lines[capped]["tool_id"][-1]),
        ]
