"""Bad input round 9 on the binaries' protocols, in process (`FakeAgentProcess` stand-ins, no subprocess):

- Claude Code: a `control_request` whose `request` is no object, with a string `request_id`: unified warned and
  sent no answer, so the CLI waited for one (the run hung until its idle timeout); now it is answered with an
  error naming what was wrong, and the run goes on.
- Codex's app-server (JSON-RPC): an error answer without a message said "refused initialize: " and nothing
  more; one whose message is a number showed the number as the agent's words; an `error` that is a string or a
  number was taken for a success (the run went on as if initialize had worked). A thread or turn id that is no
  string was read as its text ("5"), matched none of the notifications naming it, and the run waited until its
  idle timeout; now a typed `backend_error` at once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.adapters.claude_code.test_claude_code_run import Line, init, result
from tests.adapters.claude_code.test_claude_code_run import run as run_claude
from tests.adapters.codex.test_codex_launch_and_run import THREAD, TURN, finished
from tests.adapters.codex.test_codex_launch_and_run import run as run_codex
from tests.hang_guard import HANG_GUARD_S
from unified.events import ErrorEvent, Result, UnifiedEvent, WarningEvent
from unified.testing import FakeAgentProcess

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("request_body", ["can_use_tool", 5, None, ["can_use_tool"]])
async def test_claude_a_control_request_that_is_no_object_is_answered_with_an_error(
    tmp_path: Path, request_body: object
) -> None:
    request: dict[str, Any] = {"type": "control_request", "request_id": "r1", "request": request_body}
    lines: list[Line] = [init(), request, "WAIT", result()]
    with anyio.fail_after(HANG_GUARD_S):  # it waited for an answer that never came
        events, fake = await run_claude(tmp_path, [lines])
    [answer] = [m for m in fake.sent if m.get("type") == "control_response"]
    assert answer["response"]["subtype"] == "error"
    assert answer["response"]["request_id"] == "r1"
    assert "not an object" in answer["response"]["error"]
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.code == "malformed_line"]
    assert any("answered it with an error" in w.message for w in warnings), [w.message for w in warnings]
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"


def _app_server(answers: dict[str, Callable[[int], list[dict[str, Any]]]]) -> Any:
    """A stand-in app-server whose answer to each method in `answers` is given; the rest as a clean turn."""

    def make(process: FakeAgentProcess) -> Callable[[str], list[str | bytes]]:
        def answer(line: str) -> list[str | bytes]:
            message = json.loads(line)
            method, mid = message.get("method"), message.get("id")
            if method in answers:
                answered: list[str | bytes] = [json.dumps(m) for m in answers[method](mid)]
                return answered + (list(finished()) if method == "turn/start" else [])
            if method == "thread/start":
                return [json.dumps({"id": mid, "result": {"thread": {"id": THREAD, "cwd": "/w"}, "model": "m"}})]
            if method == "turn/start":
                return [json.dumps({"id": mid, "result": {"turn": {"id": TURN}}}), *finished()]
            return [json.dumps({"id": mid, "result": {}})] if mid is not None and method is not None else []

        return answer

    return FakeAgentProcess.starter(make)


def _the_error(events: list[UnifiedEvent]) -> ErrorEvent:
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    return error


@pytest.mark.parametrize(
    ("error", "words"),
    [
        ({"code": -32603}, "refused initialize: an error with no message (JSON-RPC error code -32603)"),
        ({"code": -32603, "message": ""}, "refused initialize: an error with no message (JSON-RPC error code -32603)"),
        ({"code": 1, "message": 5}, "refused initialize: an error with a message that is a number (JSON-RPC error"),
        ("boom", "refused initialize: an error that is a string, not a JSON-RPC error object: 'boom'"),
        (5, "refused initialize: an error that is a number, not a JSON-RPC error object"),
        ([], "refused initialize: an error that is an array, not a JSON-RPC error object"),
    ],
)
async def test_codex_an_error_answer_without_a_message_or_of_the_wrong_type_says_what_it_was(
    tmp_path: Path, error: object, words: str
) -> None:
    starter = _app_server({"initialize": lambda mid: [{"id": mid, "error": error}]})
    with anyio.fail_after(HANG_GUARD_S):
        events = await run_codex(tmp_path, starter)
    found = _the_error(events)
    assert found.code == "backend_unavailable"
    assert words in found.message, found.message
    assert not found.message.rstrip().endswith(":")


async def test_codex_a_turn_error_answer_without_a_message_says_so(tmp_path: Path) -> None:
    starter = _app_server({"turn/start": lambda mid: [{"id": mid, "error": {"code": -32600}}]})
    with anyio.fail_after(HANG_GUARD_S):
        events = await run_codex(tmp_path, starter)
    found = _the_error(events)
    assert "could not start the turn: an error with no message (JSON-RPC error code -32600)" in found.message


@pytest.mark.parametrize(
    ("method", "answer", "words"),
    [
        ("thread/start", {"thread": {"id": 5, "cwd": "/w"}}, "opened a thread whose id is a number, not a string"),
        ("thread/start", {"thread": {"id": ["x"]}}, "opened a thread whose id is an array, not a string"),
        ("turn/start", {"turn": {"id": 5}}, "started a turn whose id is a number, not a string"),
    ],
)
async def test_codex_a_thread_or_turn_id_that_is_no_string_is_a_backend_error_at_once(
    tmp_path: Path, method: str, answer: dict[str, Any], words: str
) -> None:
    starter = _app_server({method: lambda mid: [{"id": mid, "result": answer}]})
    with anyio.fail_after(HANG_GUARD_S):  # it waited for notifications naming "5", which never came
        events = await run_codex(tmp_path, starter)
    found = _the_error(events)
    assert found.code == "backend_error"
    assert f"codex app-server {words}" in found.message, found.message


@pytest.mark.parametrize(
    "reason",
    ["MCP startup failed: timed out awaiting tools/list after 2s", "tools/list pagination timed out after 2s"],
)
def test_codex_an_mcp_server_too_slow_for_tools_list_is_said_with_what_to_do_in_either_wording(reason: str) -> None:
    """Codex words a server that does not answer tools/list in time two ways; the second ("pagination timed out")
    was passed on as it came, with nothing to do (seen in an e2e run of the real binary under load)."""
    from unified._adapters.codex._outcome import mcp_startup_failure

    said = mcp_startup_failure("silent", reason)
    assert said.startswith("MCP server 'silent' did not start: it did not answer tools/list within 2s;"), said
    assert "raise its timeout_s" in said
