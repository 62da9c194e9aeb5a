"""Bad input round 23, MCP servers given to an API backend's run: a tool with a parameter of unified's own name, a
stdio server that prints no JSON and exits, and one whose command does not exist. Each case says what happened
before, or that it is a pin. (Its pin of 10,000 tools all declared is round 24's bound now.)"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import mcp_types
import pytest

from unified.tools import ToolRuntime
from unified.types import SseMcpServer, StdioMcpServer

pytestmark = pytest.mark.anyio


def _serving(monkeypatch: pytest.MonkeyPatch, tools: list[mcp_types.Tool]) -> None:
    """`connect_server` answering with `tools` (no process: what is checked is what the runtime offers)."""
    from unified.tools import _mcp

    async def connect(server: Any, stack: Any, secrets: Any = ()) -> list[Any]:
        return [_mcp._spec(server.name, cast(Any, None), tool, cast(Any, None)) for tool in tools]

    monkeypatch.setattr(_mcp, "connect_server", connect)


async def test_a_tool_with_a_wait_for_previous_parameter_is_left_out_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: declared, with the server's `wait_for_previous` replaced by unified's flag, and a call's value
    of it taken off before the call: the tool never got its parameter, and nothing said so. Now that tool is left
    out with a warning naming it, and the server's other tools stay."""
    schema = {"type": "object", "properties": {"wait_for_previous": {"type": "string"}}}
    _serving(
        monkeypatch,
        [mcp_types.Tool(name="poll", inputSchema=schema), mcp_types.Tool(name="ok", inputSchema={"type": "object"})],
    )
    async with ToolRuntime(tmp_path) as runtime:
        [problem] = await runtime.connect_mcp([StdioMcpServer(name="srv", command="unused")])
        declared = [d["name"] for d in runtime.declarations()]
    assert "mcp__srv__ok" in declared
    assert "mcp__srv__poll" not in declared
    assert "its tool 'mcp__srv__poll' was left out" in problem.message
    assert "a parameter named wait_for_previous, unified's own" in problem.message


@pytest.mark.e2e  # runs a real subprocess
@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        (sys.executable, ["-c", "print('hello, not json'); raise SystemExit(3)"], "failed to start"),
        ("/nonexistent/unified-round23-mcp", [], "failed to start"),
    ],
    ids=["prints-no-json-and-exits", "command-not-found"],
)
async def test_a_stdio_server_that_cannot_serve_is_one_warning_not_a_hang(
    tmp_path: Path, command: str, args: list[str], said: str
) -> None:
    """Pin: a server that prints a line that is no JSON-RPC and exits, or whose command is not there, is a connect
    error naming it, well before its timeout; the run's own tools stay."""
    server = StdioMcpServer(name="broken", command=command, args=args, timeout_s=60)
    async with ToolRuntime(tmp_path) as runtime:
        [problem] = await runtime.connect_mcp([server])
        names = runtime.tool_names()
    assert problem.message.startswith(f"MCP server 'broken' {said}: ")
    assert "read_file" in names
    assert not any(name.startswith("mcp__broken__") for name in names)


class _SignInPage(BaseHTTPRequestHandler):
    """A gateway's sign-in page where an SSE MCP server was expected: 200, text/html (404 at `/gone`)."""

    def do_GET(self) -> None:
        body = b"<html><head><title>Sign in</title></head><body>sign in</body></html>"
        self.send_response(404 if self.path == "/gone" else 200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def sign_in_page() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SignInPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/sse"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def test_an_sse_server_answering_html_is_one_warning_and_one_log_line_without_a_traceback(
    tmp_path: Path, sign_in_page: str, caplog: pytest.LogCaptureFixture
) -> None:
    """FAILED before: besides the typed connect error, the mcp SDK logged "Encountered SSE exception" with its whole
    traceback (`logger.exception`), which Python's last-resort handler writes to the stderr of a caller that set up
    no logging. Now the record says the exception in one line, with no traceback."""
    caplog.set_level(logging.WARNING, logger="mcp.client.sse")
    async with ToolRuntime(tmp_path) as runtime:
        [problem] = await runtime.connect_mcp([SseMcpServer(name="web", url=sign_in_page, timeout_s=60)])
    assert "MCP server 'web' failed to start: SSEError: Expected response with content type" in problem.message
    records = [r for r in caplog.records if r.name == "mcp.client.sse"]
    assert records, "the SDK logged nothing: this case no longer shows what it pins"
    for record in records:
        assert record.exc_info is None
        assert record.exc_text is None
    assert "Encountered SSE exception: SSEError: Expected response with content type 'text/event-stream', got " in (
        records[0].getMessage()
    )


async def test_an_sse_server_answering_404_is_a_warning_on_one_line(tmp_path: Path, sign_in_page: str) -> None:
    """FAILED before: the warning ran on over three lines, as the HTTP client's error does ("Client error '404 Not
    Found' for url '...'\nFor more information check: ..."). Now one line, each of its parts kept."""
    url = sign_in_page.replace("/sse", "/gone")
    async with ToolRuntime(tmp_path) as runtime:
        [problem] = await runtime.connect_mcp([SseMcpServer(name="web", url=url, timeout_s=60)])
    assert "\n" not in problem.message
    assert f"failed to start: HTTPStatusError: Client error '404 Not Found' for url '{url}'; For more information" in (
        problem.message
    )
