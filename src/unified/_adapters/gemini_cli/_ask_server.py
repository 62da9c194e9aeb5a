"""unified's `ask_user` tool served to the Gemini CLI as an MCP server, for one ACP run.

gemini 0.61 registers no ask_user tool over ACP, so a run with `on_user_input` offers unified's own
(`unified.tools._ask_user`: the same schema, description and answer formatting as the API backends) as
the one tool of an MCP server on 127.0.0.1, passed in `session/new` / `session/load` `mcpServers`.

The transport is MCP's streamable HTTP in its JSON-response form: a POST carries one JSON-RPC message and
a request is answered with `application/json`; a notification or a response gets 202; GET and DELETE get
405 (no server-to-client stream, no session to end). It runs on anyio's TCP listener and `h11`, so it
works on asyncio and trio alike, inside the run's task group, and its port is closed when the run ends.

Every local process can reach 127.0.0.1 (the model's own shell commands too), so the server is strict:
- each request must carry the run's random bearer token (`Authorization`, given to the CLI in the ACP
  entry's `headers`: never in argv, the environment, events or logs); without it: 401 and nothing else;
- the Host must be this server's own address and an Origin, when sent, the same (DNS rebinding): 403;
- one request per connection (`Connection: close`); the request line and headers at most
  `MAX_HEADER_BYTES` and `MAX_HEADERS` lines, the body at most `MAX_BODY_BYTES` (413); the whole request
  must arrive within `READ_TIMEOUT_S` (a slow sender is dropped); at most `MAX_CONNECTIONS` at once;
- only the ask_user tool (`TOOL_NAME`) is served: `tools/call` of any other name is a JSON-RPC error,
  arguments that break the schema are a tool error the model reads (`isError`), never a crash.

The server's name (`unified-<random>`) makes the tool the CLI's `mcp_<name>_ask_the_user`: unguessable, so the
permission bridge can allow exactly this run's tool (`unified.tools`' own `ask-user` rule) and no server
of the user's or anyone's can be named the same.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import h11
from anyio.abc import SocketAttribute, SocketListener, SocketStream, TaskGroup
from pydantic import ValidationError

from unified._version import __version__
from unified.events import UserInputRequest, UserInputResponse

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_CONNECTIONS",
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "PROTOCOL_VERSIONS",
    "READ_TIMEOUT_S",
    "TOOL_NAME",
    "AskUserServer",
    "serve_ask_user",
]

TOOL_NAME = "ask_the_user"
"""The tool's MCP name: not `ask_user`, which the CLI in ACP mode excludes by its bare name, MCP tools'
included (0.61 `ToolRegistry.isActiveTool` checks an MCP tool's unqualified name against its exclusions)."""
MAX_BODY_BYTES = 64 * 1024
"""A request's body at most: an ask_user call is a few questions (four at most), far below this."""
MAX_HEADER_BYTES = 16 * 1024
"""The request line and headers at most (h11's incomplete-event limit)."""
MAX_HEADERS = 64
"""Header lines at most."""
READ_TIMEOUT_S = 10.0
"""How long a connection may take to send its whole request (a slowloris sender is dropped)."""
MAX_CONNECTIONS = 32
"""Connections served at once; more are closed unanswered."""
CALL_ID_WAIT_S = 2.0
"""How long a call waits for the ACP `tool_call` that names it (the CLI announces it before calling)."""
MAX_NOTED_CALLS = 64
"""Announced calls kept for tying at most."""
PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
"""MCP versions this server speaks, newest first: the client's is answered when it is one of them."""
_JSON = [("content-type", "application/json")]


def server_name() -> str:
    """A new server's name: `unified-` and 96 random bits, unguessable by anyone else's server."""
    return f"unified-{secrets.token_hex(12)}"


class _Reject(Exception):
    def __init__(self, status: int, body: bytes = b"", headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or []


class AskUserServer:
    """The server's state for one run: its name, token and URL, and the ACP calls waiting to be tied."""

    def __init__(
        self,
        ask: Callable[[UserInputRequest], Awaitable[UserInputResponse]],
        request_ids: Callable[[], str],
    ) -> None:
        from unified.tools._ask_user import ask_user_tool

        self.name = server_name()
        """The MCP server's name (no `_`: the CLI splits `mcp_<server>_<tool>` at the first one)."""
        self.token = secrets.token_urlsafe(32)
        self.spec = ask_user_tool(ask, request_ids)
        self.port = 0
        self.closed = False
        self._calls: deque[tuple[str, dict[str, Any]]] = deque()
        self._call_noted = anyio.Event()
        self._connections = 0

    @property
    def cli_tool_name(self) -> str:
        """What the CLI (and the model) calls the tool: its `mcp_<server>_<tool>`."""
        return f"mcp_{self.name}_{TOOL_NAME}"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def acp_entry(self) -> dict[str, Any]:
        """The ACP `mcpServers` entry: the token travels in its headers only."""
        return {
            "type": "http",
            "name": self.name,
            "url": self.url,
            "headers": [{"name": "Authorization", "value": f"Bearer {self.token}"}],
        }

    def note_call(self, call_id: str, arguments: dict[str, Any]) -> None:
        """The CLI announced a call of our tool (ACP `tool_call` / permission request) with `arguments` (empty
        when ACP showed none: the CLI omits an explanation over 500 characters): the `tools/call` with the
        same arguments is that call, so its question names it (`tool_use_id`)."""
        if len(self._calls) >= MAX_NOTED_CALLS:  # calls that never reached us (denied): the oldest go
            self._calls.popleft()
        self._calls.append((call_id, arguments))
        self._call_noted.set()
        self._call_noted = anyio.Event()

    async def _call_id(self, arguments: Any) -> str | None:
        """The announced call this `tools/call` is: the first with its arguments, else the first announced
        without any; None when none comes within `CALL_ID_WAIT_S`."""
        with anyio.move_on_after(CALL_ID_WAIT_S):
            while True:
                for matches in (lambda args: args == arguments, lambda args: not args):
                    for index, (call_id, args) in enumerate(self._calls):
                        if matches(args):
                            del self._calls[index]
                            return call_id
                await self._call_noted.wait()
        return None

    # --- HTTP ------------------------------------------------------------------------------------

    async def handle(self, stream: SocketStream) -> None:
        """One connection: one request, one answer, closed."""
        async with stream:
            if self._connections >= MAX_CONNECTIONS or self.closed:
                return
            self._connections += 1
            try:
                await self._serve(stream)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
                pass
            except Exception:  # whatever a peer sends must not end the run: the peer is dropped
                pass
            finally:
                self._connections -= 1

    async def _serve(self, stream: SocketStream) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEADER_BYTES)
        try:
            try:
                with anyio.fail_after(READ_TIMEOUT_S):  # the request only: not the wait for the person
                    request, body = await self._read(stream, conn)
            except TimeoutError:
                return  # a slow sender gets nothing: the connection is closed
            status, payload, headers = await self._answer(request, body)
        except _Reject as reject:
            status, payload, headers = reject.status, reject.body, reject.headers
        if conn.our_state not in (h11.SEND_RESPONSE, h11.IDLE):
            return
        try:
            response = h11.Response(
                status_code=status,
                headers=[("content-length", str(len(payload))), ("connection", "close"), *headers],
            )
            data = conn.send(response) + (conn.send(h11.Data(data=payload)) if payload else b"")
            data += conn.send(h11.EndOfMessage())
        except h11.LocalProtocolError:
            return
        await stream.send(data)

    async def _read(self, stream: SocketStream, conn: h11.Connection) -> tuple[h11.Request, bytes]:
        request: h11.Request | None = None
        body = bytearray()
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                raise _Reject(exc.error_status_hint) from None
            if event is h11.NEED_DATA:
                data = await stream.receive(65536)
                if not data:
                    raise anyio.EndOfStream
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Request):
                # h11 bounds only a head that arrives in pieces; one that arrives whole is measured here
                size = len(event.target) + sum(len(name) + len(value) + 4 for name, value in event.headers)
                if len(event.headers) > MAX_HEADERS or size > MAX_HEADER_BYTES:
                    raise _Reject(431)
                request = event
                self._check_auth(event)
                length = _header(event, b"content-length")
                if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
                    raise _Reject(413)
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY_BYTES:
                    raise _Reject(413)
            elif isinstance(event, h11.EndOfMessage):
                assert request is not None
                return request, bytes(body)
            elif isinstance(event, h11.ConnectionClosed):
                raise anyio.EndOfStream

    def _check_auth(self, request: h11.Request) -> None:
        """The token first (without it: 401 and nothing else), then Host and Origin (403)."""
        given = _header(request, b"authorization") or ""
        scheme, _, token = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), self.token.encode()):
            raise _Reject(401)
        own = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        if _header(request, b"host") not in own:
            raise _Reject(403)
        origin = _header(request, b"origin")
        if origin is not None and origin not in {f"http://{host}" for host in own}:
            raise _Reject(403)

    async def _answer(self, request: h11.Request, body: bytes) -> tuple[int, bytes, list[tuple[str, str]]]:
        target = request.target.split(b"?", 1)[0]
        if target != b"/mcp":
            return 404, b"", []
        if request.method != b"POST":
            return 405, b"", [("allow", "POST")]
        version = _header(request, b"mcp-protocol-version")
        if version is not None and version not in PROTOCOL_VERSIONS:
            return 400, _dumps(_error(None, -32600, f"unsupported MCP-Protocol-Version {version!r}")), _JSON
        content_type = (_header(request, b"content-type") or "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            return 415, b"", []
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return 400, _dumps(_error(None, -32700, "parse error")), _JSON
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return 400, _dumps(_error(None, -32600, "one JSON-RPC 2.0 message per request")), _JSON
        if "method" not in message or "id" not in message:
            return 202, b"", []  # a notification or a response: nothing to answer
        request_id = message["id"]
        if not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return 400, _dumps(_error(None, -32600, "invalid request id")), _JSON
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        return 200, _dumps(await self._rpc(request_id, str(message["method"]), params)), _JSON

    # --- MCP -------------------------------------------------------------------------------------

    async def _rpc(self, request_id: str | int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            return _result(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "unified", "version": __version__},
                },
            )
        if method == "ping":
            return _result(request_id, {})
        if method == "tools/list":
            return _result(request_id, {"tools": [self._declaration()]})
        if method == "tools/call":
            name = params.get("name")
            if name != TOOL_NAME:
                return _error(request_id, -32602, f"Unknown tool: {str(name)[:100]!r}")
            arguments = params.get("arguments")
            return _result(request_id, await self._call(arguments if arguments is not None else {}))
        return _error(request_id, -32601, f"Method not found: {method[:100]!r}")

    def _declaration(self) -> dict[str, Any]:
        from unified.tools._base import params_schema

        assert self.spec.params is not None
        return {
            "name": TOOL_NAME,
            "description": self.spec.description,
            "inputSchema": json.loads(json.dumps(params_schema(self.spec.params))),
            "annotations": {"title": "Ask the user", "readOnlyHint": True},
        }

    async def _call(self, arguments: Any) -> dict[str, Any]:
        from unified._redaction import redactor
        from unified.tools._ask_user import CURRENT_CALL_ID
        from unified.tools._base import ToolError
        from unified.tools._runtime import model_output

        assert self.spec.params is not None
        try:
            params = self.spec.params.model_validate(arguments)
        except ValidationError as exc:
            reasons = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            return _tool_error(f"Invalid parameters provided to {TOOL_NAME}. Reason: {reasons}")
        call_id = await self._call_id(arguments)
        token = CURRENT_CALL_ID.set(call_id)
        try:
            output = await self.spec.run(params, _no_progress)
            text = model_output(output.output, redactor())
        except ToolError as exc:
            return _tool_error(str(exc))
        except Exception as exc:  # as the tool runtime reports a tool's failure: the model reads it
            return _tool_error(f"Tool {TOOL_NAME} failed unexpectedly: {type(exc).__name__}")
        finally:
            CURRENT_CALL_ID.reset(token)
        shown = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
        return {"content": [{"type": "text", "text": shown}], "isError": False}


async def _no_progress(message: str) -> None:
    return None


def _tool_error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def _result(request_id: str | int, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: str | int | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _dumps(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode()


def _header(request: h11.Request, name: bytes) -> str | None:
    """A header's value (h11 lowercases names); None when absent. A repeated one is refused (400)."""
    values = [value for key, value in request.headers if key == name]
    if len(values) > 1:
        raise _Reject(400)
    return values[0].decode("latin-1") if values else None


@asynccontextmanager
async def serve_ask_user(
    ask: Callable[[UserInputRequest], Awaitable[UserInputResponse]], request_ids: Callable[[], str]
) -> AsyncIterator[AskUserServer]:
    """The run's ask_user MCP server, listening on 127.0.0.1 (an ephemeral port) until the block ends.

    At the end the listener is closed first, so the accept loop returns rather than being cancelled: a
    cancelled loop's exception would keep its frames (the server, the run's methods) in a reference cycle
    that only the cycle collector frees. Connections still being served (a question nobody answered) are
    cancelled."""
    server = AskUserServer(ask, request_ids)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = int(listener.extra(SocketAttribute.local_port))
    [socket_listener] = listener.listeners
    assert isinstance(socket_listener, SocketListener)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_accept, socket_listener, server, tg)
            try:
                yield server
            finally:
                server.closed = True
                with anyio.CancelScope(shield=True):
                    await listener.aclose()
                tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # The run's own exception (RunStopped, a dead process, a cancellation), not wrapped by our task group:
        # the connection handlers never raise (`handle`), so it is the only one.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await listener.aclose()


async def _accept(listener: SocketListener, server: AskUserServer, tg: TaskGroup) -> None:
    """Accept connections until the listener is closed, each served in its own task."""
    while True:
        try:
            stream = await listener.accept()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            return
        tg.start_soon(server.handle, stream)
