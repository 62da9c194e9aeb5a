"""A stdio MCP server with one tool, `echo`, for the conformance suite's MCP scenario."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")


@server.tool()
def echo(text: str) -> str:
    """Returns the text it was given."""
    return f"echo: {text}"


if __name__ == "__main__":
    server.run()
