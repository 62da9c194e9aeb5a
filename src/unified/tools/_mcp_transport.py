"""Bounded transports for MCP servers: what a server sends is capped while it arrives.

The `mcp` SDK's stdio transport joins a line's chunks until the newline comes, so a 40 MB answer
is held whole (and then parsed into models: +370-720 MB measured), and a line it cannot parse (too
deep for pydantic, not JSON) is handed to the session as an exception the pending call never hears
of: the call hangs until its timeout. Here:

- `capped_stdio` is a stdio transport of our own: one line at most `MCP_MAX_MESSAGE_BYTES` is held
  (a longer one is dropped as it streams); a line that cannot be used and answered one of our
  requests (its `"id"` read from its first bytes) becomes a JSON-RPC error answer to that request,
  so the call fails at once with a message saying why;
- `capped_http_client` is the httpx client of the HTTP and SSE transports, whose bodies and events
  are metered as the API backends' are (`unified._internal.http`);
- `FaultWatch` is the session's `message_handler`: any other fault of the transport fails the calls
  in flight (`ToolError`) instead of leaving them to their timeout;
- `answers_checked` wraps any of them: an answer under an id none of our requests had fails the requests in
  flight at once (the SDK dropped it, and `initialize` waited out `timeout_s`).

A stdio server's stderr is a pipe of ours, read for as long as it is open (a server never blocks on
a full pipe), and passed on to our stderr through the run's redactor (`SplitGuard`: a key split
across two writes is replaced whole), at most `MCP_STDERR_BYTES` of it; the rest is read and dropped.
A server printing a key of its environment or of the run's options shows `[REDACTED]` in its place.
"""

from __future__ import annotations

import codecs
import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import Transport, TransportStreams
from mcp.client.stdio import get_default_environment
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage

from unified import _limits as limits
from unified._executables import why_cannot_run
from unified._internal.http import EventMeter, EventTooLarge
from unified._internal.json_head import answer_in_head
from unified._pgroup import ProcessGroup
from unified._redaction import Redactor, SplitGuard, clip, redactor
from unified.types import StdioMcpServer

__all__ = [
    "MCP_STDERR_BYTES",
    "CommandCannotRun",
    "FaultWatch",
    "answers_checked",
    "capped_http_client",
    "capped_stdio",
]

_HEAD = 512
_STOP_GRACE_S = 2.0
MCP_STDERR_BYTES = 1024 * 1024
"""How much of a stdio server's stderr is passed on to ours; the rest is read and dropped."""


def _answer_id(head: bytes) -> int | str | None:
    """The id of the JSON-RPC answer a line starts (a request, or an id only inside its result, is none)."""
    return answer_in_head(head.decode("utf-8", "replace"))


def _error_answer(request_id: int | str, message: str) -> SessionMessage:
    error = mcp_types.ErrorData(code=-32603, message=message)
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _parse(line: bytes, name: str) -> SessionMessage | Exception:
    """One line as a message; one that cannot be used as an error answer to what it answered."""
    problem: str
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:
        kind = exc.__class__.__name__
        problem = f"MCP server {name!r} sent a message that is not valid JSON-RPC or nests too deeply ({kind})"
    else:
        dumped = getattr(message, "result", None)
        if dumped is None or not limits.too_deep(dumped):
            return SessionMessage(message)
        problem = f"MCP server {name!r} sent a reply nested deeper than {limits.MAX_JSON_DEPTH} levels"
    request_id = _answer_id(line[:_HEAD])
    return _error_answer(request_id, problem) if request_id is not None else ValueError(problem)


async def _pass_on_stderr(
    stream: anyio.abc.ByteReceiveStream, name: str, clean: Redactor, done: anyio.Event, scope: anyio.CancelScope
) -> None:
    """Read the server's stderr until its end, writing it to ours with `clean`'s secrets replaced
    (at most `MCP_STDERR_BYTES`, then a notice; the rest is read and dropped).

    Inside `scope`, a shielded scope whose deadline the transport sets once the server is stopped: a
    run's end cancels the transport at once, and would otherwise cut what was read but not yet written
    (the server's last words); the deadline still ends a reader that our stderr blocks."""
    guard = SplitGuard(clean, fragments=True)  # a server's output, streamed: no piece of a key form either (round 30)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    left = MCP_STDERR_BYTES

    async def show(text: str) -> None:
        # Written by a worker thread: a host that does not read our stderr (a full pipe) blocks this
        # reader and, through its pipe, the server, never the event loop and the run's other tasks.
        if text:
            await anyio.to_thread.run_sync(_write_stderr, text, abandon_on_cancel=True)

    try:
        with scope:
            try:
                async for chunk in stream:
                    if left <= 0:
                        continue
                    if len(chunk) >= left:
                        chunk = chunk[:left]
                        await show(guard.feed(decoder.decode(chunk, final=True)) + guard.release())
                        note = (
                            f"MCP server {name!r} wrote over {MCP_STDERR_BYTES:,} bytes to stderr; "
                            "the rest is not shown"
                        )
                        await show(f"\n[unified: {note}]\n")
                    else:
                        await show(guard.feed(decoder.decode(chunk)))
                    left -= len(chunk)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass
            if left > 0:  # what the guard held back
                await show(guard.feed(decoder.decode(b"", final=True)) + guard.release())
    finally:
        done.set()


def _write_stderr(text: str) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no stderr, or a closed one
        sys.stderr.write(text)
        sys.stderr.flush()


class CommandCannotRun(OSError):
    """A stdio server whose command cannot be started, saying why (exec said only "Permission denied" of a
    directory or of a file without its `x` bit, and named the script when its `#!` interpreter was missing)."""


@asynccontextmanager
async def capped_stdio(
    server: StdioMcpServer,
    clean: Redactor | None = None,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """The server as a subprocess speaking newline-delimited JSON-RPC, its lines capped; its stderr
    passed on to ours with the secrets of `clean` replaced (default: `redactor()`, the environment's
    and the run's)."""
    env = {**get_default_environment(), **server.env}
    clean = clean if clean is not None else redactor()
    try:
        process = await anyio.open_process(
            [server.command, *server.args],
            env=env,
            cwd=server.cwd,
            stderr=subprocess.PIPE,  # read here, never left to fill: see the module docstring
            start_new_session=True,
        )
    except OSError as exc:
        if server.cwd is not None and not await anyio.Path(server.cwd).is_dir():
            raise CommandCannotRun(f"its cwd {str(server.cwd)!r} is not a directory (or does not exist)") from exc
        why = why_cannot_run(server.command, env)
        if why is None:
            raise
        raise CommandCannotRun(f"its command {server.command!r}, {why}") from exc
    group = ProcessGroup(process.pid, lambda: process.returncode is not None)
    """Its group, through a pidfd taken now: on asyncio the loop's child watcher reaps the server the moment
    it exits, and a group ended later by number could be a stranger's by then (see `unified._pgroup`)."""
    stderr_done = anyio.Event()
    stderr_scope = anyio.CancelScope(shield=True)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    cap = limits.MCP_MAX_MESSAGE_BYTES

    async def reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        skipped = 0
        head = b""
        async with read_send:
            try:
                async for chunk in process.stdout:
                    while chunk:
                        newline = chunk.find(b"\n")
                        piece, chunk = (chunk, b"") if newline < 0 else (chunk[:newline], chunk[newline + 1 :])
                        if skipped:
                            skipped += len(piece)
                        elif len(buffer) + len(piece) > cap:
                            head = (bytes(buffer[:_HEAD]) + piece[:_HEAD])[:_HEAD]
                            skipped = len(buffer) + len(piece)
                            buffer.clear()
                        else:
                            buffer += piece
                        if newline < 0:
                            break
                        if skipped:
                            problem = f"MCP server {server.name!r} sent a message over {cap // (1024 * 1024)} MiB"
                            request_id = _answer_id(head)
                            await read_send.send(
                                _error_answer(request_id, problem) if request_id is not None else ValueError(problem)
                            )
                            skipped = 0
                        elif buffer.strip():
                            await read_send.send(_parse(bytes(buffer), server.name))
                        buffer.clear()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_receive:
                async for message in write_receive:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            if process.stderr is not None:
                tg.start_soon(_pass_on_stderr, process.stderr, server.name, clean, stderr_done, stderr_scope)
            else:
                stderr_done.set()
            try:
                yield read_receive, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process, group)
                    # its last words (a child of the server may hold the pipe open, our stderr may be
                    # blocked: the reader's shielded scope gets a deadline, not waited on long)
                    stderr_scope.deadline = anyio.current_time() + _STOP_GRACE_S
                    await stderr_done.wait()
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
        group.close()


async def _stop(process: anyio.abc.Process, group: ProcessGroup) -> None:
    """Close its stdin, give it a moment to exit, then end its whole process group (what it started and
    left there), through `group`: never by a number the exited server no longer holds."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(_STOP_GRACE_S):
        await process.wait()
    if process.returncode is None:
        group.signal(signal.SIGTERM)
        with anyio.move_on_after(_STOP_GRACE_S):
            await process.wait()
    group.signal(signal.SIGKILL)
    with anyio.move_on_after(_STOP_GRACE_S):
        await process.wait()


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, meter: EventMeter) -> None:
        self._inner = inner
        self._meter = meter

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._meter.feed(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def capped_http_client(
    name: str,
    headers: dict[str, str] | None = None,
    timeout: httpx2.Timeout | None = None,
    auth: Any = None,
    faults: FaultWatch | None = None,
) -> httpx2.AsyncClient:
    """The SDK's MCP HTTP client (httpx2), with every body and SSE event metered (`EventTooLarge`), and each
    answer of an HTTP error status noted in `faults` (`FaultWatch.refusal`)."""
    client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)

    async def meter(response: httpx2.Response) -> None:
        if faults is not None:  # the last answer's: a 404 to a probe the SDK then falls back from is no refusal
            faults.refusal = _refusal(response) if response.status_code >= 400 else None
        if isinstance(response.stream, httpx2.AsyncByteStream):
            counter = EventMeter(f"MCP server {name!r}", limits.MCP_MAX_MESSAGE_BYTES, limits.MAX_JSON_CONTAINERS)
            response.stream = _CappedStream(response.stream, counter)

    client.event_hooks["response"] = [*client.event_hooks.get("response", []), meter]
    return client


def _refusal(response: httpx2.Response) -> str:
    """What an HTTP error status of an MCP server says, and what to do about it."""
    status = response.status_code
    said = f"HTTP {status} {response.reason_phrase}".rstrip()
    if status in (401, 403):
        return f"{said}: it refused the request's credentials; check the server's headers (its token)"
    if status == 429:
        wait = response.headers.get("retry-after", "").strip()
        later = f" (it asks for {clip(wait, 40)} s)" if wait.isdigit() else ""
        return f"{said}: it is rate limiting; start the run again later{later}"
    if status >= 500:
        return f"{said}: the server failed; check that it is up and working"
    return f"{said}: check the server's url"


class FaultWatch:
    """The session's message handler: a fault of the transport fails the calls in flight. `refusal`: the HTTP error
    status of an HTTP or SSE server's last answer, said (`capped_http_client`); None when it was no error. A server
    that fails to start gets it as a note of its error (`connect_server`): the SDK's error of a 401, a 429 or a 503
    was "Server returned an error response" alone (bad input round 24)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._waiters: set[anyio.Event] = set()
        self.fault: str | None = None
        self.refusal: str | None = None

    async def __call__(self, message: Any) -> None:
        if isinstance(message, Exception):
            cause = message
            if isinstance(cause, EventTooLarge):
                self.fault = cause.message
            else:
                self.fault = f"MCP server {self.name!r} sent something that could not be read: {cause}"
            for waiter in self._waiters:
                waiter.set()

    @contextlib.contextmanager
    def watching(self) -> Any:
        """An event set when a fault arrives while the block runs."""
        event = anyio.Event()
        self._waiters.add(event)
        try:
            yield event
        finally:
            self._waiters.discard(event)


@asynccontextmanager
async def answers_checked(transport: Transport) -> AsyncIterator[TransportStreams]:
    """`transport`'s streams, with each answer's id checked against the ids of the requests sent: an answer (or an
    error) under an id no request had, or under none, fails every request in flight at once, saying what came.

    The SDK drops such an answer as one to a request it gave up on, so a server answering `initialize` under the
    wrong id (a proxy of several servers, a server counting ids its own way) or with an error of no id left the run
    waiting out the server's `timeout_s` and then said only "no answer" (bad input round 24). An answer to a request
    we sent and gave up on (a late one) is passed on as before, for the SDK to drop."""
    sent: set[object] = set()
    waiting: dict[object, tuple[mcp_types.RequestId, str]] = {}
    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    session_writes, to_server = anyio.create_memory_object_stream[SessionMessage](0)

    async def outgoing(write: Any) -> None:
        async with write, to_server:
            async for message in to_server:
                request = message.message
                if isinstance(request, mcp_types.JSONRPCRequest):
                    key = coerce_request_id(request.id)
                    sent.add(key)
                    waiting[key] = (request.id, request.method)
                await write.send(message)

    async def incoming(read: Any) -> None:
        async with to_session:
            async for message in read:
                answer = getattr(message, "message", None)
                if isinstance(answer, (mcp_types.JSONRPCResponse, mcp_types.JSONRPCError)):
                    key = None if answer.id is None else coerce_request_id(answer.id)
                    if key is None or key not in sent:
                        for request_id, method in waiting.values():
                            await to_session.send(_error_answer(request_id, _stray(answer, request_id, method)))
                        waiting.clear()
                        continue
                    waiting.pop(key, None)
                await to_session.send(message)

    async with transport as (read, write), anyio.create_task_group() as tg:
        tg.start_soon(outgoing, write)
        tg.start_soon(incoming, read)
        try:
            yield session_reads, session_writes
        finally:
            tg.cancel_scope.cancel()


def _stray(
    answer: mcp_types.JSONRPCResponse | mcp_types.JSONRPCError, request_id: mcp_types.RequestId, method: str
) -> str:
    """What an answer under an id no request had says to the request it left waiting."""
    came = "an answer" if isinstance(answer, mcp_types.JSONRPCResponse) else "an error"
    under = "with no id" if answer.id is None else f"under id {clip(repr(answer.id), 40, more='…')}"
    said = f" ({clip(answer.error.message, 200, more='…')!r})" if isinstance(answer, mcp_types.JSONRPCError) else ""
    return (
        f"the server sent {came} {under}{said}, which none of our requests had, while its {method} request "
        f"(id {request_id!r}) waited: it does not follow JSON-RPC, so its answers cannot be matched to the requests; "
        "fix the server (or what stands in front of it), or leave it out of mcp_servers"
    )
