"""Bad input round 24, MCP servers given to an API backend's run: a server answering under an id none of our requests
had (or under none), and a server listing more tools, or larger ones, than a request to the model can carry. Each
case says what happened before, or that it is a pin."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import mcp_types
import pytest

from tests.harness.raw_http import Answer, Answering
from tests.tools.test_mcp_bad_input_round23 import _serving
from unified import _limits as limits
from unified.tools import ToolRuntime
from unified.types import HttpMcpServer, StdioMcpServer

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 30.0
"""The servers' timeout: what the run waited out before (a case that fails says "no answer within 30 s")."""

_INITIALIZED = {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "round24", "version": "1"},
}

# --- an answer under an id none of our requests had -------------------------------------------------------------------


def _every_answer(message: dict[str, Any]) -> Answering:
    """An HTTP MCP server answering each request with `message`, whatever its id was."""
    return Answering([], Answer(200, json.dumps(message).encode()))


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ({"jsonrpc": "2.0", "id": 99, "result": _INITIALIZED}, "the server sent an answer under id 99, which none"),
        ({"jsonrpc": "2.0", "id": "x-1", "result": _INITIALIZED}, "the server sent an answer under id 'x-1', which"),
        (
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "bad session header"}},
            "the server sent an error with no id ('bad session header'), which none",
        ),
    ],
    ids=["number", "string", "error-without-id"],
)
async def test_an_http_server_answering_under_another_id_fails_at_once_saying_so(
    tmp_path: Path, message: dict[str, Any], said: str
) -> None:
    """FAILED before: the SDK dropped each answer as one to a request it gave up on, and the run waited out the
    server's timeout, then said "no answer within 30 s" (the server had answered every request). Now the server's
    connect error says what came and which request waited, as soon as it came."""
    with _every_answer(message) as server:
        async with ToolRuntime(tmp_path) as runtime:
            [problem] = await runtime.connect_mcp(
                [HttpMcpServer(name="web", url=f"{server.base_url}/mcp", timeout_s=_TIMEOUT_S)]
            )
    assert problem.message.startswith("MCP server 'web' failed to start: MCPError: ")
    assert said in problem.message
    assert "initialize request (id " in problem.message
    assert "fix the server (or what stands in front of it), or leave it out of mcp_servers" in problem.message
    assert "no answer within" not in problem.message


@pytest.mark.e2e  # runs a real subprocess
async def test_a_stdio_server_answering_under_another_id_fails_at_once(tmp_path: Path) -> None:
    """FAILED before: as over HTTP, "no answer within 30 s" after 30 s."""
    script = tmp_path / "server.py"
    answer = {"jsonrpc": "2.0", "id": 7777, "result": _INITIALIZED}
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    if '\"id\"' in line:\n"
        f"        print({json.dumps(json.dumps(answer))}, flush=True)\n"
    )
    server = StdioMcpServer(name="counts", command=sys.executable, args=(str(script),), timeout_s=_TIMEOUT_S)
    async with ToolRuntime(tmp_path) as runtime:
        [problem] = await runtime.connect_mcp([server])
    assert "MCP server 'counts' failed to start: MCPError: the server sent an answer under id 7777" in problem.message


# --- more tools than a request carries --------------------------------------------------------------------------------


async def test_ten_thousand_tools_are_bounded_with_one_warning_naming_what_was_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before (round 23 pinned it): all 10,000 were declared, 2.5 MB in every request, which the Gemini API
    refuses (512 declarations at most). Now the run declares `MAX_DECLARED_TOOLS` in all, the server's first tools,
    and one warning names how many of its tools were left out and the first of them."""
    _serving(monkeypatch, [mcp_types.Tool(name=f"t {i}\x00", inputSchema={"type": "object"}) for i in range(10_000)])
    async with ToolRuntime(tmp_path) as runtime:
        own = len(runtime.declarations())
        [problem] = await runtime.connect_mcp([StdioMcpServer(name="srv", command="unused")])
        declared = [d["name"] for d in runtime.declarations()]
    assert len(declared) == limits.MAX_DECLARED_TOOLS
    kept = limits.MAX_DECLARED_TOOLS - own
    assert declared[-1] == f"mcp__srv__t_{kept - 1}_"  # each under a name of its own (round 23)
    assert problem.message.startswith(
        f"MCP server 'srv': {10_000 - kept:,} of its 10,000 tools were left out ('mcp__srv__t_{kept}_', "
    )
    assert "a run declares at most 500 tools" in problem.message
    assert "(excluded_tools)" in problem.message


async def test_tools_past_the_declaration_bytes_are_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAILED before: 20 tools of 100 KB descriptions each were all declared, 2 MB in every request. Now those past
    `MAX_MCP_DECLARATION_BYTES` (512 KiB: five fit) are left out, said in one warning."""
    big = "x" * 100_000
    _serving(monkeypatch, [mcp_types.Tool(name=f"big{i}", description=big, inputSchema={}) for i in range(20)])
    async with ToolRuntime(tmp_path) as runtime:
        [problem] = await runtime.connect_mcp([StdioMcpServer(name="srv", command="unused")])
        declared = [d["name"] for d in runtime.declarations() if d["name"].startswith("mcp__")]
    assert declared == [f"mcp__srv__big{i}" for i in range(5)]
    assert "15 of its 20 tools were left out ('mcp__srv__big5', 'mcp__srv__big6'," in problem.message
    assert "512 KiB of MCP tool declarations" in problem.message


async def test_excluded_tools_make_room_and_a_second_server_is_said_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before as the case above (all 1,200 declared). Excluded tools are not declared, so they take no room:
    the first server's 600 tools but its 100 not excluded fit, with no warning; the second server's tools past the
    bound are said in a warning of its own."""
    _serving(monkeypatch, [mcp_types.Tool(name=f"t{i}", inputSchema={"type": "object"}) for i in range(600)])
    excluded = ("mcp__one__t[1-5]??",)  # 500 of its 600: t100 to t599
    async with ToolRuntime(tmp_path, excluded_tools=excluded) as runtime:
        own = len(runtime.declarations())
        [problem] = await runtime.connect_mcp(
            [StdioMcpServer(name="one", command="unused"), StdioMcpServer(name="two", command="unused")]
        )
        declared = [d["name"] for d in runtime.declarations()]
    assert len(declared) == limits.MAX_DECLARED_TOOLS
    assert "mcp__one__t99" in declared
    kept = limits.MAX_DECLARED_TOOLS - own - 100
    assert problem.message.startswith(
        f"MCP server 'two': {600 - kept} of its 600 tools were left out ('mcp__two__t{kept}'"
    )


# --- an HTTP error status as the server starts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "headers", "said"),
    [
        (
            401,
            {},
            "HTTP 401 Unauthorized: it refused the request's credentials; check the server's headers (its token)",
        ),
        (429, {"Retry-After": "30"}, "HTTP 429 Too Many Requests: it is rate limiting; start the run again later (it "),
        (503, {}, "HTTP 503 Service Unavailable: the server failed; check that it is up and working"),
    ],
    ids=["401", "429", "503"],
)
async def test_an_http_error_status_is_named_with_what_to_do(
    tmp_path: Path, status: int, headers: dict[str, str], said: str
) -> None:
    """FAILED before: each was "MCP server 'web' failed to start: MCPError: Server returned an error response" alone,
    the SDK's words, which named no status and said nothing to do. Now the status follows, with what to do."""
    with Answering([], Answer(status, b"no", "text/plain", headers)) as server:
        async with ToolRuntime(tmp_path) as runtime:
            [problem] = await runtime.connect_mcp(
                [HttpMcpServer(name="web", url=f"{server.base_url}/mcp", timeout_s=_TIMEOUT_S)]
            )
    assert problem.message.startswith(
        f"MCP server 'web' failed to start: MCPError: Server returned an error response ({said}"
    )


# --- a stdio server no program can be started as ----------------------------------------------------------------------

_SECRET = "sk-round24-not-a-real-token-0123456789"

UNSTARTABLE: dict[str, tuple[dict[str, Any], str]] = {
    "empty-command": ({"command": " "}, "MCP server 'srv': its command is empty: name the program to start"),
    "nul-in-args": ({"args": ("a\x00b",)}, "its command or one of its args holds a NUL byte"),
    "nul-in-env-name": ({"env": {"A\x00": "b"}}, "its env has a variable name no environment can hold"),
    "equals-in-env-name": ({"env": {"A=B": "c"}}, "its env has a variable name no environment can hold"),
    "nul-in-env-value": (
        {"env": {"TOKEN": f"{_SECRET}\x00"}},
        "the value of its env variable 'TOKEN' holds a NUL byte, which no environment can",
    ),
    "empty-name": ({"name": ""}, "an MCP server's name is empty: give it a name"),
}


@pytest.mark.parametrize("case", list(UNSTARTABLE))
def test_a_stdio_server_that_cannot_be_started_is_refused_where_it_is_described(case: str) -> None:
    """FAILED before: each was taken, and the run's start said Python's words ("ValueError: embedded null byte",
    "illegal environment variable name", the command '' not on the PATH), naming no field; an empty name offered
    its tools as `mcp____<tool>`. Now a ValidationError naming what is wrong, never an env value."""
    from pydantic import ValidationError

    fields, said = UNSTARTABLE[case]
    with pytest.raises(ValidationError) as caught:
        StdioMcpServer(**{"name": "srv", "command": sys.executable, **fields})
    assert said in str(caught.value)
    assert _SECRET not in str(caught.value)


def test_an_http_server_of_no_name_is_refused_too() -> None:
    """FAILED before: taken (its tools `mcp____<tool>`)."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="an MCP server's name is empty"):
        HttpMcpServer(name=" ", url="http://127.0.0.1:9/mcp")
