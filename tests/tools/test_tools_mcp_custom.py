"""MCP tools from a real stdio server subprocess, and Python callables as tools."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from unified.tools import ToolCall, ToolRuntime
from unified.tools._mcp import tool_name
from unified.types import HttpMcpServer, StdioMcpServer

pytestmark = pytest.mark.anyio

SERVER = '''
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("demo")


@server.tool()
def add(a: int, b: int) -> str:
    """Adds two numbers."""
    return str(a + b)


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("broken on purpose")


@server.tool()
def die() -> str:
    """Ends the server process."""
    os._exit(1)


server.run()
'''


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    path = tmp_path / "demo_server.py"
    path.write_text(SERVER)
    return path


@pytest.mark.e2e  # runs a real subprocess
async def test_stdio_mcp_server_tools_under_policy(ws: Path, server_script: Path) -> None:
    demo = StdioMcpServer(name="demo", command=sys.executable, args=(str(server_script),), timeout_s=20)
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        assert await rt.connect_mcp([demo]) == []
        decls = {d["name"]: d for d in rt.declarations()}
        assert decls["mcp__demo__add"]["description"] == "Adds two numbers."
        assert set(decls["mcp__demo__add"]["parameters"]["properties"]) == {"a", "b", "wait_for_previous"}
        added, failed = await rt.run_batch(
            [ToolCall("1", "mcp__demo__add", {"a": 2, "b": 40}), ToolCall("2", "mcp__demo__fail", {})]
        )
        assert added.response == {"output": "42"}
        assert failed.is_error
        assert failed.response == {"error": "Error executing tool fail"}
        [died] = await rt.run_batch([ToolCall("d", "mcp__demo__die", {})])
        assert died.response == {"error": "MCP server 'demo' failed the call: Connection closed"}
        [after] = await rt.run_batch([ToolCall("4", "mcp__demo__add", {"a": 1, "b": 1})])
        assert after.response == died.response
        # the same tools under a stricter mode: plan denies them
        rt.approval_mode = "plan"
        [denied] = await rt.run_batch([ToolCall("3", "mcp__demo__add", {"a": 1, "b": 1})])
        assert denied.response["error"].startswith("Tool call mcp__demo__add was denied")


async def test_failed_servers_are_reported_not_raised(ws: Path) -> None:
    missing = StdioMcpServer(name="ghost", command="/nonexistent/mcp-server", timeout_s=5)
    unreachable = HttpMcpServer(name="web", url="http://127.0.0.1:9/mcp", timeout_s=5)
    async with ToolRuntime(ws) as rt:
        errors = await rt.connect_mcp([missing, unreachable])
        assert [e.server for e in errors] == ["ghost", "web"]
        assert errors[0].message.startswith("MCP server 'ghost' failed to start: ")
        assert errors[1].message.startswith("MCP server 'web' failed to start: ")
        assert not [n for n in rt.tool_names() if n.startswith("mcp__")]


@pytest.mark.e2e  # runs a real subprocess
async def test_slow_server_times_out(ws: Path, tmp_path: Path) -> None:
    script = tmp_path / "silent.py"
    script.write_text("import time\ntime.sleep(30)\n")
    slow = StdioMcpServer(name="slow", command=sys.executable, args=(str(script),), timeout_s=0.5)
    async with ToolRuntime(ws) as rt:
        [error] = await rt.connect_mcp([slow])
    assert error.message == "MCP server 'slow' failed to start: TimeoutError: no answer within 0.5 s"


def test_tool_names_are_sanitised() -> None:
    assert tool_name("my server", "do/thing") == "mcp__my_server__do_thing"
    assert len(tool_name("s" * 50, "t" * 50)) == 64


class Point(BaseModel):
    x: int
    y: int


async def test_python_callables_as_tools(ws: Path) -> None:
    def move(point: Point, axis: Literal["x", "y"], by: int = 1) -> Point:
        """Moves a point along one axis."""
        return point.model_copy(update={axis: getattr(point, axis) + by})

    async def greet(name: str) -> str:
        return f"hello {name}"

    rt = ToolRuntime(ws, approval_mode="yolo")
    rt.register(move)
    rt.register(greet, name="say_hello", description="Greets someone.")
    decls = {d["name"]: d for d in rt.declarations()}
    params = decls["move"]["parameters"]
    assert decls["move"]["description"] == "Moves a point along one axis."
    assert params["required"] == ["point", "axis"]
    assert params["properties"]["point"]["properties"]["x"] == {"type": "integer"}
    assert params["properties"]["axis"]["enum"] == ["x", "y"]
    moved, hello, bad = await rt.run_batch(
        [
            ToolCall("1", "move", {"point": {"x": 1, "y": 2}, "axis": "y", "by": 5}),
            ToolCall("2", "say_hello", {"name": "ada"}),
            ToolCall("3", "move", {"point": {"x": 1}, "axis": "z"}),
        ]
    )
    assert moved.response == {"output": {"x": 1, "y": 7}}
    assert hello.response == {"output": "hello ada"}
    assert bad.response["error"].startswith("Invalid parameters provided to move. Reason: point.y: Field required")


async def test_custom_tools_ask_in_default_mode(ws: Path) -> None:
    def ping() -> str:
        return "pong"

    rt = ToolRuntime(ws)
    rt.register(ping)
    [out] = await rt.run_batch([ToolCall("1", "ping", {})])
    assert out.is_error
    assert out.decision is not None
    assert out.decision.rule is None


def test_registration_errors(ws: Path) -> None:
    rt = ToolRuntime(ws)

    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    def star(*args: int) -> int:
        return 0

    with pytest.raises(ValueError, match="parameter 'x' needs a type hint"):
        rt.register(untyped)
    with pytest.raises(ValueError, match=r"\*args and \*\*kwargs cannot be described"):
        rt.register(star)
    with pytest.raises(ValueError, match="invalid tool name"):
        rt.register(star, name="has space")
    with pytest.raises(ValueError, match="a tool named 'read_file' is already registered"):
        rt.register(lambda: 0, name="read_file")


def test_an_unusable_mcp_line_fails_only_the_request_its_own_id_names() -> None:
    """A line over the cap (or nested too deep) fails the request it answers, read from its leading fields:
    an `id` inside its result (a server writing `result` first) is not the answer's, and another request
    waiting for its own answer is left alone."""
    from unified.tools._mcp_transport import _answer_id

    assert _answer_id(b'{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"') == 4
    assert _answer_id(b'{"jsonrpc":"2.0","result":{"content":[{"type":"text","id":5,"text":"') is None
    assert _answer_id(b'{"jsonrpc":"2.0","id":6,"method":"sampling/createMessage","params":{') is None


@pytest.mark.e2e  # tries to start real processes
async def test_a_stdio_server_whose_command_cannot_run_is_told_why(ws: Path, tmp_path: Path) -> None:
    """exec said "PermissionError: Permission denied: '/tmp'" of a directory or a file without its `x` bit, and
    "FileNotFoundError" naming a script that is there when its `#!` interpreter is not: now the command's fault."""
    plain = tmp_path / "server.py"
    plain.write_text("print('never runs')\n")
    interpreted = tmp_path / "server.sh"
    interpreted.write_text("#!/nonexistent/sh-r7\necho\n")
    interpreted.chmod(0o755)
    servers = [
        StdioMcpServer(name="dir", command=str(tmp_path)),
        StdioMcpServer(name="plain", command=str(plain)),
        StdioMcpServer(name="interp", command=str(interpreted)),
        StdioMcpServer(name="nowhere", command="no-such-mcp-server-r7"),
        StdioMcpServer(name="cwd", command=sys.executable, cwd=tmp_path / "gone"),
    ]
    async with ToolRuntime(ws) as rt:
        errors = await rt.connect_mcp(servers)
    failed = "failed to start: CommandCannotRun: its"
    assert [e.message for e in errors] == [
        f"MCP server 'dir' {failed} command {str(tmp_path)!r}, which is a directory, not the executable",
        f"MCP server 'plain' {failed} command {str(plain)!r}, which is not executable (mode -rw-r--r--: "
        "`chmod +x` it, or name the executable)",
        f"MCP server 'interp' {failed} command {str(interpreted)!r}, which is a script whose interpreter "
        "'/nonexistent/sh-r7' (its `#!` line) is not there or not executable (install it, or correct the line)",
        f"MCP server 'nowhere' {failed} command 'no-such-mcp-server-r7', which is not a program on the PATH it "
        "gets (install it, or name it by its path)",
        f"MCP server 'cwd' {failed} cwd {str(tmp_path / 'gone')!r} is not a directory (or does not exist)",
    ]


@pytest.mark.e2e  # runs real subprocesses
async def test_a_stdio_server_that_exits_before_it_answers_is_said_to_have_closed(ws: Path, tmp_path: Path) -> None:
    """It was "MCPError: Connection closed", which told neither that the server had gone nor where its words are."""
    script = tmp_path / "not_mcp.py"
    script.write_text("print('Welcome! no JSON here')\nprint('[1, 2]')\n")
    async with ToolRuntime(ws) as rt:
        [error] = await rt.connect_mcp([StdioMcpServer(name="chatty", command=sys.executable, args=(str(script),))])
    assert error.message == (
        "MCP server 'chatty' failed to start: MCPError: Connection closed (it closed its stdout before it answered "
        "initialize: it exited or crashed, or it is no MCP server (a program that prints something else); what it "
        "wrote to stderr is on unified's stderr. Run its command alone to see)"
    )
