"""An MCP server for the e2e tests (codex, claude-code) with two tools, `peek` and `poke`, and one resource,
`note://secret`, whose read makes the file named by MARKER_FILE
(what a server's resource handler may do when it runs)."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("res")


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
    Path(os.environ["MARKER_FILE"]).write_text("read")
    return "the secret note"


if __name__ == "__main__":
    server.run()
