"""Bad input round 6 for the claude-code backend, with the real pinned binary against FakeAnthropic: an MCP server
that answers `initialize` and then goes silent. 2.1.332 does not wait for its MCP servers (the first model request
goes out while they are still `pending`) and says no more of them on its stream; a run cancelled at a permission
prompt; a session file with a byte that is no UTF-8."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tests.e2e.claude_code.claude_code_helpers import run_claude
from tests.e2e.claude_code.test_claude_code_bad_input import session_file
from tests.e2e.gemini_cli.test_gemini_cli_bad_input_round5 import SILENT_AFTER_INITIALIZE
from tests.hang_guard import HANG_GUARD_S
from tests.harness.cancelled_prompts import WHEN, cancelling, check_denied
from unified import sessions
from unified._execute import EventStream
from unified.events import Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn
from unified.testing._wiring import backend_options_for
from unified.types import ExecuteParams, HttpMcpServer, StdioMcpServer

pytestmark = [pytest.mark.anyio]


NO_TOOLS = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    if "id" not in request:
        continue
    result = {"tools": []} if request["method"] == "tools/list" else {}
    if request["method"] == "initialize":
        result = {"protocolVersion": request["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "silent", "version": "1"}}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + "\\n")
    sys.stdout.flush()
"""
"""An MCP server (stdio) that lists no tools: the CLI has it up with none by `init`, as it had the silent one on a
loaded machine (its `tools/list` timed out before `init`)."""


@pytest.mark.parametrize("script", [SILENT_AFTER_INITIALIZE, NO_TOOLS], ids=["silent", "no-tools"])
async def test_an_mcp_server_silent_after_initialize_is_a_warning_naming_it(
    workspace: Path, tmp_path: Path, script: str
) -> None:
    """Was: `init` listed the server `pending` (or, on a loaded machine, up), the CLI later took it as up with no
    tools, and the run said nothing (the model's call of its tool: "No such tool available"). Now the run asks
    the CLI (at once for a server up without tools in `init`, past the CLI's wait for one still starting) and
    warns, naming the server and what to check. The model's Bash command runs until the test has seen the warning
    (or 60 s: the old code's end, with no warning)."""
    path = tmp_path / "server.py"
    path.write_text(script)
    silent = StdioMcpServer(name="silent", command=sys.executable, args=(str(path), str(tmp_path / "pid")), timeout_s=1)
    seen = workspace / "warned"
    wait = f"for i in $(seq 600); do [ -f {seen} ] && break; sleep 0.1; done; echo done"
    call = FunctionCall(name="Bash", args={"command": wait})

    async def on_event(event: UnifiedEvent, stream: EventStream) -> None:
        if isinstance(event, WarningEvent) and event.code == "mcp_unavailable":
            seen.touch()

    async with FakeAnthropic([ModelTurn(function_calls=[call]), ModelTurn(text="ok")]) as server:
        events = await run_claude(
            server, workspace, "hi", mcp_servers=(silent,), approval_mode="yolo", on_event=on_event
        )
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    [warning] = [e for e in events if isinstance(e, WarningEvent) and e.code == "mcp_unavailable"]
    assert "'silent'" in warning.message
    assert "tools/list" in warning.message  # what to check
    assert "no tools" in warning.message  # what the CLI made of it


@pytest.mark.parametrize("when", WHEN)
async def test_a_run_cancelled_at_a_permission_prompt_denies_the_call(workspace: Path, when: str) -> None:
    """Was: no `permission_decision` for the call when the answer never came (docs/protocol.md: one per call),
    and `allow` by the user for an answer that came after the cancel, though the call never ran. Now one `deny`,
    the user's (who stopped the run)."""
    answer, streams = cancelling(when)
    call = FunctionCall(name="Bash", args={"command": f"touch {workspace / 'ran'}"})
    events: list[UnifiedEvent] = []
    async with FakeAnthropic([ModelTurn(function_calls=[call]), ModelTurn(text="never")]) as server:
        params = ExecuteParams(
            prompt="hi",
            backend="claude-code",
            cwd=workspace,
            approval_mode="default",
            on_user_input=answer,
            backend_options=backend_options_for(server, "claude-code"),
        )
        # The stream is handed to the answer as it starts, before the run can ask (as the gemini-cli and codex cases
        # do). Handed over from the consumer's first event, a loaded machine asked first: the answer found no stream,
        # raised, and the call was denied as unanswered (a flaky CI failure).
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params, strict=True) as stream:
                streams.append(stream)
                events.extend([event async for event in stream])
    check_denied(events, (workspace / "ran").exists())


async def test_an_mcp_server_that_fails_is_a_warning_with_the_cli_s_reason(workspace: Path) -> None:
    """Was: "did not start (the claude CLI says 'failed'): its tools are missing", the same for a command that is
    not there and a URL nobody answers (`init` gives no reason). Now the run asks the CLI (`mcp_status`) and the
    warning carries its reason and what to do for that kind of server."""
    servers = (
        StdioMcpServer(name="gone", command="/nonexistent/mcp-server", timeout_s=5),
        HttpMcpServer(name="down", url="http://127.0.0.1:9/mcp", timeout_s=5),
    )
    async with FakeAnthropic([ModelTurn(text="ok")]) as server:
        events = await run_claude(server, workspace, "hi", mcp_servers=servers)
    said = {e.message.split("'")[1]: e.message for e in events if isinstance(e, WarningEvent)}
    assert sorted(said) == ["down", "gone"]
    assert "ENOENT" in said["gone"]
    assert "Run its command alone" in said["gone"]
    assert "ECONNREFUSED" in said["down"]
    assert "Check that its URL answers" in said["down"]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error


async def test_an_answer_with_a_byte_that_is_no_utf8_stays_in_the_export(workspace: Path) -> None:
    """Was: the session file's line of the model's answer, one byte of it no UTF-8, was skipped as unreadable, so
    the exported conversation (and a failover from it) lost the answer, which the CLI itself still reads. Now the
    line is read as the CLI reads it, the byte as U+FFFD."""
    async with FakeAnthropic([ModelTurn(text="First answer here.")]) as server:
        started = next(e for e in await run_claude(server, workspace, "One.") if isinstance(e, SessionStarted))
    assert started.short_id is not None
    path = session_file(started.session_id)
    path.write_bytes(path.read_bytes().replace(b"First answer", b"\xffFirst answer"))
    exported = await sessions.export(started.short_id)
    texts = [[getattr(part, "text", None) for part in turn.parts] for turn in exported.turns]
    assert texts == [["One."], ["\ufffdFirst answer here."]]
