"""Bad input round 5 for the claude-code backend, with the real pinned binary against FakeAnthropic: an MCP server
slow to start. The CLI waits for its MCP servers before the first model request for one time of its own
(`MCP_TIMEOUT`, 30 s unless set), and drops a server not up by then without a word (`init` lists it `pending`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import run_claude
from unified.events import Result, ToolResult
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn
from unified.types import StdioMcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

SLOW_MCP_SERVER = """
import time
from mcp.server.mcpserver import MCPServer

time.sleep(8)  # a server that takes long to start: past the run's timeout_s, within the CLI's own 30 s
server = MCPServer("slow")


@server.tool()
def lookup(key: str) -> str:
    \"\"\"Look a key up.\"\"\"
    return f"value-of-{key}"


server.run()
"""


async def test_an_mcp_server_s_timeout_s_is_how_long_the_cli_waits_for_it(workspace: Path, tmp_path: Path) -> None:
    """Was: `timeout_s` reached no part of the CLI, so a server given 60 s to start was cut at the CLI's 30 s and
    the model's call of its tool failed, and a stuck one given 2 s still held the run 30 s. Now the run's largest
    `timeout_s` is the CLI's `MCP_TIMEOUT`: a server given 2 s that starts in 8 s is cut at 2 s (with the CLI's
    30 s, as before, it was there at 8 s and the call got its answer), and the run goes on without it.
    (This direction rather than a server given 60 s that starts in 35 s: that case held a test worker 39 s.)"""
    script = tmp_path / "slow_mcp.py"
    script.write_text(SLOW_MCP_SERVER)
    slow = StdioMcpServer(name="slow", command=sys.executable, args=(str(script),), timeout_s=2)
    call = FunctionCall(name="mcp__slow__lookup", args={"key": "alpha"})
    async with FakeAnthropic([ModelTurn(function_calls=[call]), ModelTurn(text="ok")]) as server:
        events = await run_claude(server, workspace, "hi", mcp_servers=(slow,), approval_mode="yolo")
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    [outcome] = [event for event in events if isinstance(event, ToolResult)]
    assert outcome.is_error, outcome.output
    assert "value-of-alpha" not in (outcome.output or "")
