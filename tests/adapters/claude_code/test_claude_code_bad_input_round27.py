"""Bad input round 27, claude-code (the control protocol played by a fake CLI): `initialize` answered under an id
that is not the one unified sent (mangled, a number, missing). Before its answer `initialize` is the only request of
unified's, so such an answer is it; the run waited the whole `INITIALIZE_TIMEOUT_S` (120 s) for the right id, then
said the CLI "did not answer"."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from unified import EventStream
from unified.events import ErrorEvent, WarningEvent
from unified.testing import FakeAgentProcess
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio


def _answering_under(request_id: object, subtype: str = "success") -> Any:
    def start(argv: Sequence[str], cwd: Path, env: Any) -> FakeAgentProcess:
        def handle(line: str) -> list[str]:
            message = json.loads(line)
            if message.get("type") != "control_request":
                return []
            response: dict[str, Any] = {"subtype": subtype, "response": {}, "error": "no such session"}
            if request_id != "absent":
                response["request_id"] = request_id
            return [json.dumps({"type": "control_response", "response": response})]

        return FakeAgentProcess(handle, argv=argv, env=env)

    return start


@pytest.mark.parametrize(
    ("request_id", "named"),
    [("req_1", "request_id 'req_1'"), (1, "request_id 1"), (None, "no request_id"), ("absent", "no request_id")],
    ids=["mangled", "a-number", "null", "absent"],
)
async def test_initialize_answered_under_another_id_ends_the_run_at_once(
    tmp_path: Path, request_id: object, named: str
) -> None:
    """FAILED before: no error within the 5 s given here (the run waited 120 s for the right id)."""
    start = _answering_under(request_id)
    params = ExecuteParams(prompt="go", backend="claude-code", cwd=tmp_path, backend_options={"start_process": start})
    with anyio.fail_after(5):
        async with EventStream(params, strict=True) as stream:
            events = [event async for event in stream]
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert (error.code, error.retryable) == ("backend_error", True)
    assert f"the claude CLI answered initialize under {named}, not 'req_1_" in error.message
    assert "the only request unified had sent" in error.message
    assert "update the claude CLI (`claude update`)" in error.message  # the hint
    assert events[-1].type == "result"


async def test_an_error_answer_under_another_id_says_what_the_cli_said(tmp_path: Path) -> None:
    """FAILED before, as above; the CLI's words are the reason a user can act on."""
    start = _answering_under("req_9", subtype="error")
    params = ExecuteParams(prompt="go", backend="claude-code", cwd=tmp_path, backend_options={"start_process": start})
    with anyio.fail_after(5):
        async with EventStream(params, strict=True) as stream:
            events = [event async for event in stream]
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert "; it says: no such session;" in error.message


async def test_an_init_naming_another_session_mid_run_is_warned_of(tmp_path: Path) -> None:
    """FAILED before (no warning): the CLI said it went on in session "other", the run reported its own session as if
    nothing had happened, and a resume of it would have gone on without what followed. The same id again is the
    ordinary repeat of later turns: no warning."""
    from tests.adapters.claude_code.test_claude_code_run import init, result, run

    other = {**init(), "session_id": "other"}
    events, _ = await run(tmp_path, [[init(), init(), other, other, result()]])
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["malformed_line"]
    assert "the claude CLI's system/init names session 'other' after it named 'x'" in warnings[0].message
    assert "what follows is saved under 'other'" in warnings[0].message
    assert events[-1].type == "result"


async def test_a_spare_read_up_to_its_initialize_answer_stops_at_one_under_another_id(tmp_path: Path) -> None:
    """FAILED before (no return within 5 s): a spare's wait for its `initialize` answer (`ClaudeSpare.initialized`)
    read past an answer under another id and on for as long as the CLI ran. Now it stops there, and the run that
    takes the spare refuses that answer (above)."""
    from unified._adapters.claude_code._control import ClaudeConnection

    process = _answering_under("req_1")((), tmp_path, {})
    connection = ClaudeConnection(process, "s")
    await connection.initialize(forward_subagent_text=False)
    with anyio.fail_after(5):
        await connection.read_ahead()
    answer = await connection.receive()
    assert isinstance(answer, dict)
    assert answer["response"]["request_id"] == "req_1"
