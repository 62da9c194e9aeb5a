"""Bad input round 6 for the claude-code backend, with the real pinned binary against FakeAnthropic: an MCP server
that answers `initialize` and then goes silent. 2.1.332 does not wait for its MCP servers (the first model request
goes out while they are still `pending`) and says no more of them on its stream."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import run_claude
from tests.e2e.gemini_cli.test_gemini_cli_bad_input_round5 import SILENT_AFTER_INITIALIZE
from unified._execute import EventStream
from unified.events import Result, UnifiedEvent, WarningEvent
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn
from unified.types import StdioMcpServer

pytestmark = [pytest.mark.anyio]


async def test_an_mcp_server_silent_after_initialize_is_a_warning_naming_it(workspace: Path, tmp_path: Path) -> None:
    """Was: `init` listed the server `pending`, the CLI later took it as up with no tools, and the run said
    nothing (the model's call of its tool: "No such tool available"). Now, past the CLI's wait for it, the run
    asks the CLI and warns, naming the server and what to check. The model's Bash command runs until the test
    has seen the warning (or 60 s: the old code's end, with no warning)."""
    script = tmp_path / "silent_mcp.py"
    script.write_text(SILENT_AFTER_INITIALIZE)
    silent = StdioMcpServer(
        name="silent", command=sys.executable, args=(str(script), str(tmp_path / "pid")), timeout_s=1
    )
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
