"""Bad input round 10, Claude Code's stream-json on a stand-in CLI (`FakeClaude`, which waits for the answer to its
permission request as the CLI does): a control request whose `request_id` is not text was only warned about, and
the run hung while the CLI waited. A number is answered under that id; an id no answer can name ends the run with a
typed error, the process with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.claude_code.test_claude_code_run import init, result, run
from unified.events import ErrorEvent, Result, WarningEvent

pytestmark = pytest.mark.anyio


def ask(request_id: object) -> dict[str, Any]:
    request = {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "t1"}
    message: dict[str, Any] = {"type": "control_request", "request": request}
    if request_id != "missing":
        message["request_id"] = request_id
    return message


@pytest.mark.parametrize("request_id", [7, 7.5])
async def test_a_number_for_a_request_id_is_answered_under_it_and_the_run_goes_on(
    request_id: object, tmp_path: Path
) -> None:
    events, fake = await run(tmp_path, [[init(), ask(request_id), "WAIT", result()]])
    [answer] = [m for m in fake.sent if m.get("type") == "control_response"]
    assert answer["response"]["request_id"] == request_id
    assert answer["response"]["subtype"] == "error"
    assert any(isinstance(e, WarningEvent) and "under that id" in e.message for e in events)
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"


@pytest.mark.parametrize("request_id", ["missing", None, ["r"]])
async def test_a_request_id_no_answer_can_name_ends_the_run_and_its_process(request_id: object, tmp_path: Path) -> None:
    events, fake = await run(tmp_path, [[init(), ask(request_id), "WAIT", result()]])
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_error"
    assert "which no answer can name" in error.message
    assert error.retryable
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    assert fake.process.closed
