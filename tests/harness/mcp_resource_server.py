"""An MCP server for the e2e tests (codex, claude-code) with two tools, `peek` and `poke`, and one resource,
`note://secret`, whose read makes the file named by MARKER_FILE
(what a server's resource handler may do when it runs). `as_stdio` names it for a run; served over streamable
HTTP in the test's process (`tests.e2e.conformance.mcp_echo_server.serving("http", server)`), its reads are
noted in `reads`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mcp.server.mcpserver import MCPServer

if TYPE_CHECKING:
    from unified.types import StdioMcpServer

server = MCPServer("res")
reads: list[str] = []
"""The resource reads this process served (over HTTP)."""


def as_stdio(marker: Path) -> StdioMcpServer:
    """This server as a run's stdio MCP server `res`, its resource's reads marked at `marker`."""
    from unified.types import StdioMcpServer  # the test's side only: the server's process needs none of unified

    return StdioMcpServer(
        name="res", command=sys.executable, args=(__file__,), env={"MARKER_FILE": str(marker)}, timeout_s=30
    )


@server.tool()
def peek(text: str) -> str:
    """Echoes the text."""
    return f"peeked: {text}"


@server.tool()
def poke(text: str) -> str:
    """Echoes the text."""
    return f"poked: {text}"


@server.resource("note://secret")
def secret() -> str:
    """A note."""
    reads.append("note://secret")
    if marker := os.environ.get("MARKER_FILE"):
        Path(marker).write_text("read")
    return "the secret note"


if __name__ == "__main__":
    server.run()
