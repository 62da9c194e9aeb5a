"""Bad input round 6 for the gemini-cli backend, with the real pinned binary against FakeGemini: a stdio MCP server
whose process ends as the CLI connects (0.61 logs "Connection closed" while listing its tools, and nothing over
ACP); on the stream-json transport, a subagent's result and a call cancelled before its result; a run cancelled at
a permission prompt; a chat file with a byte that is no UTF-8."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.e2e.bad_binaries import the_error
from tests.e2e.gemini_cli.gemini_cli_helpers import Run, call, stream_line, text
from tests.e2e.gemini_cli.test_gemini_cli_bad_input import run as run_once
from tests.e2e.gemini_cli.test_gemini_cli_bad_input_round5 import run
from tests.hang_guard import HANG_GUARD_S
from tests.harness.cancelled_prompts import WHEN, cancelling, check_denied
from tests.harness.warm_cli import WarmCli
from unified import ExecuteParams
from unified._adapters.gemini_cli._chat_files import session_files
from unified._execute import EventStream
from unified.events import (
    PermissionDecision,
    Result,
    SessionStarted,
    SubagentCompleted,
    TextDelta,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    WarningEvent,
)
from unified.testing import FakeGemini, ModelTurn
from unified.types import StdioMcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

EXITS = """
import json, sys
sys.stderr.write("fatal: no database configured\\n")
if sys.argv[1] == "after-initialize":
    request = json.loads(sys.stdin.readline())
    answer = {"protocolVersion": request["params"]["protocolVersion"], "capabilities": {"tools": {}},
              "serverInfo": {"name": "quits", "version": "1"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": answer}) + "\\n")
    sys.stdout.flush()
sys.exit(3)
"""
"""An MCP server (stdio) that exits with status 3, at once or right after it answered `initialize`."""


@pytest.mark.parametrize("when", ["at-start", "after-initialize"])
@pytest.mark.usefixtures("short_opening_slack")
async def test_an_mcp_server_that_exits_as_the_cli_connects_is_said_to_have_ended(
    workspace: Path, tmp_path: Path, when: str
) -> None:
    """0.61 either sees the end ("Connection closed", in 2 of 6 runs measured for a server that exits right after
    `initialize`) or misses it and holds the session's opening as for a server that does not answer. Was: the
    warning "listing its tools failed: MCP error -32000: Connection closed _McpError: MCP error -32000: Connection
    closed" (the same for a server that never answered, which sent the user to its tools), or, for a missed end,
    the opening's error "took the connection and then did not answer", naming no ended process. Now either says
    the server's process ended and to run its command alone."""
    script = tmp_path / "quits.py"
    script.write_text(EXITS)
    quits = StdioMcpServer(name="quits", command=sys.executable, args=(str(script), when), timeout_s=1)
    async with FakeGemini([ModelTurn(text="done without it")]) as server:
        events = await run(server, workspace, None, quits)
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.code == "mcp_unavailable"]
    last = events[-1]
    assert isinstance(last, Result)
    if warnings:  # the CLI saw the end: the run goes on without the server
        [said] = [warning.message for warning in warnings]
        assert last.status == "success"
        assert "process ended" in said
        assert "run its command alone" in said  # what to do
        assert "_McpError" not in said
    else:  # the CLI missed it: the opening is given up
        error = the_error(events)
        assert error.code == "backend_error"
        said = error.message
        assert "process of MCP server 'quits' ended" in said
        assert "run the server's command alone" in said
        assert (error.details or {}).get("ended") == ["quits"]
    assert "'quits'" in said


async def test_stream_json_a_subagent_s_result_is_what_it_returned(
    run_gemini: Run, responses: Callable[..., Path]
) -> None:
    """Was: `subagent_completed.result` None on the stream-json transport (the CLI's display of an `invoke_agent`
    call is empty), while the model read the subagent's answer. Now it is what the chat file recorded, as the
    call's `tool_result` is."""
    fake = responses(
        stream_line(call("invoke_agent", agent_name="generalist", prompt="read notes.txt")),
        stream_line(call("read_file", file_path="notes.txt")),
        stream_line(call("complete_task", result={"response": "alpha and beta"})),
        stream_line(text("The notes say alpha and beta.")),
    )
    events = await run_gemini(fake, approval_mode="yolo", backend_options={"transport": "stream-json"})
    [completed] = [e for e in events if isinstance(e, SubagentCompleted)]
    [outcome] = [e for e in events if isinstance(e, ToolResult) and e.tool_use_id == completed.task_id]
    assert completed.status == "completed"
    assert "alpha and beta" in (completed.result or "")
    assert completed.result == outcome.output


async def test_stream_json_a_call_cancelled_before_its_result_has_its_decision(
    workspace: Path, responses: Callable[..., Path]
) -> None:
    """Was: `tool_use`, then the cancelled `result`, and no `permission_decision` for the call (docs/protocol.md:
    exactly one per client-side call). Now the call the CLI was running when the run was cancelled has one."""
    fake = responses(stream_line(call("run_shell_command", command="sleep 30")), stream_line(text("never")))
    options = {"fake_responses": str(fake), "pool_size": 0, "transport": "stream-json"}
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", cwd=workspace, approval_mode="yolo", backend_options=options
    )
    events: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params, strict=True) as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, ToolUse):
                    stream.cancel()
    [use] = [e for e in events if isinstance(e, ToolUse)]
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.tool_use_id == use.tool_use_id
    assert (decision.decision, decision.decided_by) == ("allow", "backend")
    assert "ended before its result" in (decision.reason or "")
    last = events[-1]
    assert isinstance(last, Result)
    assert last.status == "cancelled"
    assert events.index(decision) < events.index(last)


@pytest.mark.parametrize("when", WHEN)
async def test_a_run_cancelled_at_a_permission_prompt_denies_the_call(
    workspace: Path, responses: Callable[..., Path], when: str
) -> None:
    """Was: no `permission_decision` for the call when the answer never came (docs/protocol.md: one per call),
    and `allow` by the user for an answer that came after the cancel, though the call never ran. Now one `deny`,
    the user's (who stopped the run)."""
    answer, streams = cancelling(when)
    fake = responses(
        stream_line(call("run_shell_command", command=f"touch {workspace / 'ran'}")), stream_line(text("x"))
    )
    options = {"fake_responses": str(fake), "pool_size": 0}
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", cwd=workspace, on_user_input=answer, backend_options=options
    )
    events: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params, strict=True) as stream:
            streams.append(stream)
            events.extend([event async for event in stream])
    check_denied(events, (workspace / "ran").exists())


async def test_a_chat_file_with_a_byte_that_is_no_utf8_resumes_without_replaying_into_the_run(
    workspace: Path, warm_cli: WarmCli
) -> None:
    """Was: the record holding the bad byte was dropped by unified's reading (the CLI's, Node's, reads it with
    U+FFFD), so the count of `session/load`'s replay came out short: the old answer came out as this run's text
    ("\\ufffd\\ufffdFirst answer here.") and the new one as a retry of it (`stream_resumed`). Now the file is read
    as the CLI reads it, and the run says only its own answer. (On the module's warm CLI process.)"""
    server = warm_cli.play([ModelTurn(text="First answer here."), ModelTurn(text="Second.")])
    first = await run_once(server, workspace, "One.", pool=warm_cli.pool)
    session = next(e for e in first if isinstance(e, SessionStarted))
    assert session.session_id is not None
    [path] = session_files(warm_cli.home / ".gemini", session.session_id)
    data = path.read_bytes()
    at = data.index(b"First answer")
    path.write_bytes(data[:at] + b"\xff\xfe" + data[at:])
    events = await run_once(server, workspace, "Two.", resume=session.short_id, pool=warm_cli.pool)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Second."]
    assert not [e for e in events if isinstance(e, WarningEvent) and e.code == "stream_resumed"]
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Second.")
