"""An MCP server with one tool, `echo`, for the conformance suite's MCP scenarios: run as a script it
serves stdio; `serving("http")` serves it over streamable HTTP on 127.0.0.1, in this process, and
`serving("sse")` over the older SSE transport."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer

server = MCPServer("echo")
heard: list[str] = []
"""The texts the tool was called with (over HTTP: the stdio server is another process)."""
headers: list[dict[str, str]] = []
"""The headers of every HTTP request the server got (what a client sent: its credentials included)."""


@server.tool()
def echo(text: str) -> str:
    """Returns the text it was given."""
    heard.append(text)
    return f"echo: {text}"


@contextmanager
def serving(transport: Literal["http", "sse"], mcp: MCPServer = server) -> Iterator[str]:
    """The server's endpoint (its URL: streamable HTTP's, or SSE's event stream) while the block runs; `mcp`:
    another server of the tests' to serve so (its requests' headers noted in `headers` too). The socket listens
    before uvicorn starts, so a client that connects early waits in its backlog: nothing to poll for."""
    import uvicorn  # not for the stdio server, a process of its own

    listener = socket.create_server(("127.0.0.1", 0))
    # The app is made in uvicorn's thread, on its event loop (a factory): its session manager's lock would
    # otherwise belong to the loop of the test that starts it, trio's included.
    make = mcp.streamable_http_app if transport == "http" else mcp.sse_app

    def app() -> Any:
        inner = make()

        async def noting_headers(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers.append({k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]})
            await inner(scope, receive, send)

        return noting_headers

    config = uvicorn.Config(app, factory=True, log_level="warning", lifespan="on")
    http = uvicorn.Server(config)
    thread = threading.Thread(target=http.run, kwargs={"sockets": [listener]}, name="mcp-echo-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/{'mcp' if transport == 'http' else 'sse'}"
    finally:
        http.should_exit = True
        thread.join()
        listener.close()


if __name__ == "__main__":
    server.run()
