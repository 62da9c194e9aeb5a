"""MCP servers (stdio / streamable HTTP / SSE) as tools, through the `mcp` SDK's `Client`.

Each server lives in its own task inside a task group the runtime's exit stack owns, so a
connection is opened and closed by the same task (anyio's rule), a slow server can be timed out
without tearing down the others, and a server dying mid-session cannot cancel the caller's run.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types
from anyio.abc import TaskStatus
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from unified import _limits as limits
from unified._redaction import Redactor, clip, given_secrets, redactor, secret_values
from unified._text import one_line
from unified.tools._base import InlineData, Progress, ToolError, ToolOutput, ToolSpec
from unified.tools._mcp_transport import FaultWatch, answers_checked, capped_http_client, capped_stdio
from unified.tools._policy import function_name
from unified.types import HttpMcpServer, McpServer, SseMcpServer, StdioMcpServer

__all__ = ["connect_server", "schema_problem", "tool_name"]


class _OneLineLog(logging.Filter):
    """The mcp SDK logs a failed SSE connection (a server answering HTML, a 404) with `logger.exception`: with no
    logging set up, Python's last-resort handler wrote "Encountered SSE exception" and the SDK's whole traceback to
    the caller's stderr, beside the typed `McpConnectError` that already says what happened (round 23, measured).
    The record keeps its level and text, its exception said in one line (secrets replaced), without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is not None:
            line = f"{record.getMessage()}: {type(error).__name__}: {clip(one_line(str(error)), 300, more='…')}"
            record.msg, record.args, record.exc_info, record.exc_text = redactor()(line), None, None, None
        return True


for _logger in ("mcp.client.sse", "mcp.client.streamable_http"):  # a filter of "mcp.client" misses its children's
    logging.getLogger(_logger).addFilter(_OneLineLog())


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, reduced to the characters and 64-char length function names allow
    (`_policy.function_name`, which a rule naming the full name is read through too)."""
    return function_name(f"mcp__{server}__{tool}")


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why a server's input schema cannot be a function declaration's parameters, or None. Such a tool is left out
    with a warning (`ToolRuntime.connect_mcp`), as a name already taken is: the declaration adds `wait_for_previous`
    to the schema's `properties`, so `"properties": []` from a hostile server raised a TypeError at the run's start
    (the run failed, whatever the other tools), and a type other than an object is refused by the API at every turn.
    A parameter of the declaration's own name was replaced by it, and a call's value of it never reached the tool."""
    kind = schema.get("type", "object")
    if kind != "object":
        return f"its input schema is of type {clip(json.dumps(kind), 40, more='…')}, not an object"
    if not isinstance(schema.get("properties", {}), dict):
        return "its input schema's properties are not an object"
    if "wait_for_previous" in schema.get("properties", {}):  # the declaration's flag replaced it, the call dropped it
        return "its input schema has a parameter named wait_for_previous, unified's own, which the tool would never get"
    if limits.too_deep(schema):
        return f"its input schema is nested deeper than {limits.MAX_JSON_DEPTH} levels"
    return None


def _client(server: McpServer, faults: FaultWatch, clean: Redactor) -> Client:
    """A client whose transport caps what the server sends (`_mcp_transport`); a stdio server's
    stderr is passed on with the secrets of `clean` replaced."""
    target: Any
    if isinstance(server, StdioMcpServer):
        target = capped_stdio(server, clean)
    elif isinstance(server, HttpMcpServer):
        http = capped_http_client(server.name, dict(server.headers), faults=faults)
        target = streamable_http_client(server.url, http_client=http)
    elif isinstance(server, SseMcpServer):

        def factory(
            headers: dict[str, str] | None = None,
            timeout: httpx2.Timeout | None = None,
            auth: httpx2.Auth | None = None,
        ) -> httpx2.AsyncClient:
            return capped_http_client(server.name, headers, timeout, auth, faults)

        target = sse_client(
            server.url, headers=dict(server.headers), timeout=server.timeout_s, httpx_client_factory=factory
        )
    return Client(answers_checked(target), read_timeout_seconds=server.timeout_s, message_handler=faults)


async def _serve(
    server: McpServer,
    faults: FaultWatch,
    clean: Redactor,
    *,
    task_status: TaskStatus[tuple[Client, list[mcp_types.Tool]]] = anyio.TASK_STATUS_IGNORED,
) -> None:
    started = False
    try:
        async with _client(server, faults, clean) as client:
            tools = (await client.list_tools()).tools
            task_status.started((client, tools))
            started = True
            await anyio.sleep_forever()
    except Exception:
        if not started:
            raise
        # A server that dies later answers its calls with errors; the run goes on.


def _output(result: mcp_types.CallToolResult) -> ToolOutput:
    texts: list[str] = []
    media: list[InlineData] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            try:
                data = base64.b64decode(block.data)
            except binascii.Error as exc:
                raise ToolError(f"The MCP tool sent an image whose data is not valid base64 ({exc}).") from None
            media.append(InlineData(block.mime_type, data))
        else:
            texts.append(block.model_dump_json(exclude_none=True))
    if not texts and result.structured_content is not None:
        if limits.too_deep(result.structured_content):
            raise ToolError(f"The MCP tool's structured result is nested deeper than {limits.MAX_JSON_DEPTH} levels.")
        texts.append(json.dumps(result.structured_content))
    text = "\n".join(texts)
    if result.is_error:
        raise ToolError(text or "The MCP tool reported an error without a message.")
    return ToolOutput(text, tuple(media))


def _spec(server: str, client: Client, tool: mcp_types.Tool, faults: FaultWatch) -> ToolSpec:
    async def run(args: dict[str, Any], progress: Progress) -> ToolOutput:
        result: mcp_types.CallToolResult | None = None

        async def call(scope: anyio.CancelScope) -> None:
            nonlocal result
            try:
                result = await client.call_tool(tool.name, args)
            finally:
                scope.cancel()

        with faults.watching() as fault:
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call, tg.cancel_scope)
                    await fault.wait()
                    tg.cancel_scope.cancel()
            except MCPError as exc:
                raise ToolError(f"MCP server {server!r} failed the call: {exc}") from exc
            except BaseExceptionGroup as group:
                failed = next((e for e in group.exceptions if isinstance(e, MCPError)), None)
                if failed is None:
                    raise
                raise ToolError(f"MCP server {server!r} failed the call: {failed}") from failed
        if result is None:
            raise ToolError(faults.fault or f"MCP server {server!r} did not answer the call.")
        return _output(result)

    schema = dict(tool.input_schema) if tool.input_schema else {"type": "object", "properties": {}}
    return ToolSpec(
        name=tool_name(server, tool.name),
        kind="other",
        params=None,
        run=run,
        description=tool.description or f"The {tool.name} tool of the {server} MCP server.",
        schema=schema,
    )


def server_secrets(server: McpServer) -> list[str]:
    """The secrets of a server's own settings: a stdio server's `env` values that are secrets by name or shape, an
    HTTP or SSE server's headers and its URL's password and query credentials (`?token=`: an HTTP client's error
    quotes the URL whole, `Client error '401 Unauthorized' for url '...'`)."""
    if isinstance(server, StdioMcpServer):
        return secret_values(server.env)
    return given_secrets((), [server])


async def connect_server(server: McpServer, stack: AsyncExitStack, secrets: Sequence[str] = ()) -> list[ToolSpec]:
    """Starts `server`, lists its tools, and keeps it connected until `stack` closes. What a stdio
    server writes to stderr reaches ours without the secrets of the environment, of the run
    (`secrets`, `use_run_secrets`) and of the server's own `env` (by name or shape, `is_secret`)."""
    tg = await stack.enter_async_context(anyio.create_task_group())
    stack.callback(tg.cancel_scope.cancel)
    faults = FaultWatch(server.name)
    clean = redactor(extra=(*secrets, *server_secrets(server)))
    try:
        with anyio.fail_after(server.timeout_s):
            client, tools = await tg.start(_serve, server, faults, clean)
    except TimeoutError:
        raise TimeoutError(f"no answer within {server.timeout_s:g} s") from None
    except Exception as exc:
        if faults.refusal is not None:  # said after the error: "... (HTTP 429 Too Many Requests: it is rate ...)"
            exc.add_note(faults.refusal)
        raise
    return [_spec(server.name, client, tool, faults) for tool in tools]
