"""Red team, secrets (round 5): the leftovers of round 4, each a leak measured before its fix.

- worked: a stdio MCP server's stderr went straight to unified's stderr (the server inherited it):
  a server printing a key of its environment or of the run's options put it into the host's logs;
- the rest: see each test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from unified._redaction import REDACTED
from unified.tools import ToolCall, ToolRuntime
from unified.types import StdioMcpServer

pytestmark = pytest.mark.anyio

RUN_KEY = "AIzaSyD-leftovers-run-key-0123456789abcdef"
TOKEN = "svc-token-of-the-mcp-server-0123"
OPENAI = "sk-proj-" + "Ab1" * 20


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


# --- 1. an MCP server's stderr --------------------------------------------------------------------

MCP_STDERR_SERVER = """
import os
import sys

from mcp.server.mcpserver import MCPServer

err = sys.stderr
err.write("notice: the server starts\\n")
err.write("token=" + os.environ["SERVICE_TOKEN"] + " openai=" + os.environ["OPENAI_KEY"] + "\\n")
key = os.environ["UPSTREAM"]
err.write("half " + key[:15])  # the key split across two writes, no newline between
err.flush()
err.write(key[15:] + " end\\n")
err.write(("x" * 1000 + "\\n") * int(sys.argv[1]))  # far more than a pipe holds: it must be drained
err.flush()
server = MCPServer("noisy")


@server.tool()
def shout() -> str:
    \"\"\"Prints the key to stderr without a newline, then answers.\"\"\"
    err.write("the key again: " + key)
    err.flush()
    return "done"


server.run()
"""


@pytest.mark.e2e  # runs a real subprocess
async def test_an_mcp_server_s_stderr_reaches_ours_redacted_and_is_drained(
    ws: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "noisy.py"
    script.write_text(MCP_STDERR_SERVER)
    server = StdioMcpServer(
        name="noisy",
        command=sys.executable,
        args=(str(script), "300"),  # 300 KB of stderr before it answers: a pipe holds 64 KB
        env={"SERVICE_TOKEN": TOKEN, "OPENAI_KEY": OPENAI, "UPSTREAM": RUN_KEY},
        timeout_s=60,
    )
    async with ToolRuntime(ws, approval_mode="yolo", secrets=[RUN_KEY]) as rt:
        assert await rt.connect_mcp([server]) == []
        [outcome] = await rt.run_batch([ToolCall("m", "mcp__noisy__shout", {})])
    assert outcome.response == {"output": "done"}
    err = capfd.readouterr().err
    for secret in (RUN_KEY, TOKEN, OPENAI):
        assert secret not in err
        assert secret[4:14] not in err  # no piece of it either
    assert "notice: the server starts" in err  # the server's diagnostics still reach ours
    assert f"token={REDACTED} openai={REDACTED}" in err
    assert f"half {REDACTED} end" in err
    assert f"the key again: {REDACTED}" in err  # an end without a newline, shown when the server ends


@pytest.mark.e2e  # runs a real subprocess
async def test_an_mcp_server_s_stderr_past_its_bound_is_read_and_dropped(
    ws: Path, tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `MCP_STDERR_BYTES` a server's stderr is still read (it never blocks on a full pipe: its
    call is answered), but no longer shown: one notice says so."""
    from unified.tools import _mcp_transport

    monkeypatch.setattr(_mcp_transport, "MCP_STDERR_BYTES", 10_000)
    script = tmp_path / "noisy.py"
    script.write_text(MCP_STDERR_SERVER)
    server = StdioMcpServer(
        name="noisy",
        command=sys.executable,
        args=(str(script), "300"),
        env={"SERVICE_TOKEN": TOKEN, "OPENAI_KEY": OPENAI, "UPSTREAM": RUN_KEY},
        timeout_s=60,
    )
    async with ToolRuntime(ws, approval_mode="yolo", secrets=[RUN_KEY]) as rt:
        assert await rt.connect_mcp([server]) == []
        [outcome] = await rt.run_batch([ToolCall("m", "mcp__noisy__shout", {})])
    assert outcome.response == {"output": "done"}
    err = capfd.readouterr().err
    assert "notice: the server starts" in err
    assert "MCP server 'noisy' wrote over 10,000 bytes to stderr; the rest is not shown" in err
    assert err.count("x") < 11_000
    assert "the key again" not in err
    for secret in (RUN_KEY, TOKEN, OPENAI):
        assert secret not in err
