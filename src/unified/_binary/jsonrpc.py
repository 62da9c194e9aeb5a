"""A JSON-RPC 2.0 connection over an `AgentProcess`, shared by the sessions (runs) one process hosts.

Decisions:
- Our own small client, not an SDK's: the ACP SDK's connection runs on asyncio streams, while
  `unified` runs on asyncio and trio under anyio; messages stay plain dicts, read defensively.
- No background reader (a task group would tie the process to one loop): the runs sharing a
  process take turns reading it ("leader/follower"). Whoever waits for a message takes the read
  lock, reads one line and files it in the inbox it belongs to; the lock is FIFO, so a waiter whose
  message another reader filed gets the lock next and returns.
- Routing: an answer goes to the inbox of its request (by id); a notification or a request from
  the agent goes to the inbox its route key names. The key comes from the backend's `route`
  (ACP: `params.sessionId`; Codex's app-server: `params.threadId`).
- A request from the agent that no open inbox takes is answered by `on_request` (by default a
  -32601 error), so the agent never waits for an answer nobody will give.
- Messages for nobody (an answer to a forgotten request, a notification of a session no run has
  open, such as a process's own startup session) are kept in `unrouted`, bounded: beyond
  `UNROUTED_LIMIT` the oldest are dropped and counted in `unrouted_dropped`. A pooled connection
  may live for hours; nothing it receives may pile up.
- An answer to an id we never sent (JSON-RPC's id null: the agent could not read a request of ours;
  or an id we never numbered, of another type or out of range: a protocol error of the agent's) warns
  every open session; with one request waiting it is that request's answer, which fails at once
  instead of leaving the run to its timeouts.
- A JSON-RPC batch (an array of messages on one line) is filed message by message.
- A line that is not a JSON object (or that the process could not read) becomes a `LineProblem`
  in every open session inbox (in `unrouted` when none is open): each run warns, none crashes. When
  such a line was a request of the agent's (a line over the cap: a permission request carrying a
  large file), its id and method are read from its start and it is answered with an error at once:
  the agent would otherwise wait for that answer until the run's idle timeout.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from unified._binary.framing import json_line, parse_object
from unified._binary.loops import PerLoopLock
from unified._internal.json_head import answer_in_head, request_in_head
from unified._redaction import clip
from unified._text import json_type
from unified.backends import AgentProcess, MalformedLine

__all__ = [
    "UNROUTED_LIMIT",
    "ConnectionClosed",
    "Ended",
    "Inbox",
    "Incoming",
    "JsonRpcConnection",
    "LineProblem",
    "Message",
    "RpcError",
    "as_dict",
    "as_list",
    "reject_request",
    "stream_ended",
]

UNROUTED_LIMIT = 100
"""Messages for nobody kept at most (the newest); the rest are dropped and counted."""
METHOD_NOT_FOUND = -32601

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class LineProblem:
    """A line from the agent that could not be used, filed where messages go (a warning for the run)."""

    text: str
    head: str = ""
    """The line's first characters, when they could be read: what an adapter tells a line it can do without by."""
    answer: bool = False
    """Whether the line carried the model's answer text (an adapter tells by its head): the answer is lost
    (`framing.answer_over_cap`), and the run must not end `success`."""


Incoming = Message | LineProblem
Direction = Literal["send", "recv"]


class RpcError(Exception):
    """The agent answered a request with a JSON-RPC error."""

    def __init__(self, method: str, error: Mapping[str, Any]) -> None:
        self.method = method
        try:
            self.code = int(error.get("code", 0) or 0)
        except (TypeError, ValueError, OverflowError):  # no number: the agent's error has no code to go by
            self.code = 0
        message = error.get("message")
        if isinstance(message, str) and message.strip():
            self.message = message
        else:  # "refused initialize: " said nothing; a number was shown as if it were the agent's words
            what = "no message" if message is None or message == "" else f"a message that is {json_type(message)}"
            self.message = f"an error with {what} (JSON-RPC error code {self.code})"
        self.data = error.get("data")
        super().__init__(f"{method} failed ({self.code}): {self.message}")


class ConnectionClosed(Exception):
    """The process ended (or closed its stdout, or was closed) while a caller was waiting on it."""


class Ended(NamedTuple):
    """How a binary whose stream closed had ended (`stream_ended`): the arguments of an adapter's `error_from_exit`."""

    code: int | None
    """Its exit status; None while it still runs."""
    stderr_tail: str
    what: str
    """"<label> exited <when> (<cause>)", or "<label> closed its stdout <when>, without exiting"."""


async def stream_ended(process: AgentProcess, label: str, when: str, cause: BaseException, grace: float) -> Ended:
    """How `process` ended once its stream closed (`cause`), after up to `grace` seconds for its exit. One wording for
    every binary: one that closed its stdout and ran on was said to have exited while still running (gemini at
    start and mid-run, codex), each adapter in words of its own. The adapter makes its error of it with its own
    `error_from_exit(*ended)`, which keeps what is its own (gemini's exit 41 is `auth_error`; codex's message ends
    with its last stderr line)."""
    code = await process.wait(grace)
    what = f"exited {when} ({cause})" if code is not None else f"closed its stdout {when}, without exiting"
    return Ended(code, process.stderr_tail(), f"{label} {what}")


@dataclass(slots=True)
class Inbox:
    """The messages of one session (its notifications, the agent's requests) or of one request (its answer)."""

    messages: deque[Incoming] = field(default_factory=deque)

    def put(self, message: Incoming) -> None:
        self.messages.append(message)

    def pop(self) -> Incoming | None:
        return self.messages.popleft() if self.messages else None


def as_dict(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (protocol fields are never trusted)."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """`value` if it is a JSON array, else an empty one (protocol fields are never trusted)."""
    return value if isinstance(value, list) else []


async def reject_request(connection: JsonRpcConnection, message: Message) -> None:
    """The default `on_request`: a request nobody handles gets "method not found"."""
    await connection.respond_error(message["id"], METHOD_NOT_FOUND, f"{message.get('method')} is not supported")


class JsonRpcConnection:
    """JSON-RPC 2.0 over one agent process (see the module docstring)."""

    def __init__(
        self,
        process: AgentProcess,
        *,
        name: str = "the agent",
        route: Callable[[Message], str | None] = lambda message: None,
        on_request: Callable[[JsonRpcConnection, Message], Awaitable[None]] = reject_request,
        jsonrpc_field: bool = True,
    ) -> None:
        """`name` names the agent in messages; `jsonrpc_field=False` leaves out `"jsonrpc": "2.0"` (Codex's
        app-server neither sends nor needs it)."""
        self.process = process
        self.name = name
        self._route_key = route
        self._on_request = on_request
        self._jsonrpc_field = jsonrpc_field
        self._read_lock = PerLoopLock(fast=True)
        self._next_id = 0
        self._answers: dict[Any, Inbox] = {}
        self._sessions: dict[str, Inbox] = {}
        self._orphans: list[Message] = []
        """Requests from the agent for no open inbox, to be answered by `on_request`."""
        self.unrouted: deque[Incoming] = deque(maxlen=UNROUTED_LIMIT)
        self.unrouted_dropped = 0
        self.closed = False
        self.observer: Callable[[Direction, Message], None] | None = None
        """Called with every message both ways (cassette recording)."""

    @property
    def alive(self) -> bool:
        """Whether the process still runs and the connection is open (it can take another session)."""
        return not self.closed and self.process.returncode is None

    @property
    def pid(self) -> int | None:
        return self.process.pid

    # --- inboxes --------------------------------------------------------------------------------

    def open_inbox(self, key: str) -> Inbox:
        """The inbox of route key `key` (a session), made if needed."""
        return self._sessions.setdefault(key, Inbox())

    def close_inbox(self, key: str) -> None:
        self._sessions.pop(key, None)

    @property
    def open_inboxes(self) -> int:
        """Route keys (sessions) with an inbox now: the runs a shared process serves at once."""
        return len(self._sessions)

    # --- sending --------------------------------------------------------------------------------

    async def _send(self, message: Message) -> None:
        if self.closed:
            raise ConnectionClosed(f"{self.name} has exited")
        if self._jsonrpc_field:
            message = {"jsonrpc": "2.0", **message}
        if self.observer is not None:
            self.observer("send", message)
        try:
            await self.process.send(json_line(message))
        except ConnectionError as exc:
            self.closed = True
            raise ConnectionClosed(str(exc)) from exc

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        await self._send({"method": method, "params": dict(params)})

    async def respond(self, request_id: Any, result: Mapping[str, Any]) -> None:
        await self._send({"id": request_id, "result": dict(result)})

    async def respond_error(self, request_id: Any, code: int, message: str) -> None:
        await self._send({"id": request_id, "error": {"code": code, "message": message}})

    async def start_request(self, method: str, params: Mapping[str, Any], inbox: Inbox | None = None) -> int:
        """Send a request; its answer (`{"id", "result"|"error"}`) arrives in `inbox`. `forget` it when done."""
        self._next_id += 1
        request_id = self._next_id
        self._answers[request_id] = inbox if inbox is not None else Inbox()
        await self._send({"id": request_id, "method": method, "params": dict(params)})
        return request_id

    def forget(self, request_id: int) -> None:
        """Stop waiting for the answer to `request_id` (a late one goes to `unrouted`)."""
        self._answers.pop(request_id, None)

    async def request(
        self, method: str, params: Mapping[str, Any], *, meanwhile: Callable[[], Awaitable[object]] | None = None
    ) -> Message:
        """Send a request and wait for its answer's result; an error answer raises `RpcError`. `meanwhile` is
        awaited once the request is sent, before its answer is awaited: work that need not hold it back."""
        inbox = Inbox()
        request_id = await self.start_request(method, params, inbox)
        try:
            if meanwhile is not None:
                await meanwhile()
            while True:
                answer = await self.receive(inbox)
                if isinstance(answer, dict):
                    break
        finally:
            self.forget(request_id)
        error = answer.get("error")
        if isinstance(error, dict):
            raise RpcError(method, error)
        if error is not None:  # a string or a number where JSON-RPC's error object goes: an error all the same
            said = f": {clip(error, 200)!r}" if isinstance(error, str) else ""
            raise RpcError(
                method, {"message": f"an error that is {json_type(error)}, not a JSON-RPC error object{said}"}
            )
        if "result" not in answer:  # read as an empty result, it passed for a success that said nothing
            raise RpcError(
                method, {"message": "an answer with neither a result nor an error (a JSON-RPC protocol error)"}
            )
        return as_dict(answer.get("result"))

    # --- receiving ------------------------------------------------------------------------------

    async def receive(self, inbox: Inbox) -> Incoming:
        """The next message for `inbox`, reading the process ourselves when nobody else is."""
        while True:
            message = inbox.pop()
            if message is not None:
                return message
            if self.closed:
                raise ConnectionClosed(f"{self.name} has exited")
            async with self._read_lock.get():
                if inbox.messages or self.closed:
                    continue
                try:
                    line = await self.process.receive()
                except MalformedLine as bad:
                    text = f"dropped a {bad.size}-byte line from {self.name}: {bad.reason}"
                    request = request_in_head(bad.head)
                    if request is None:
                        self._refuse(bad.head, text)
                        continue
                    # The agent waits for an answer to it (a permission request carrying a 9 MB file waited until
                    # the run's idle timeout): it is refused now, and the agent goes on without it.
                    request_id, method = request
                    self._broadcast(LineProblem(f"{text}; its {method} request was refused unread", bad.head))
                    with contextlib.suppress(ConnectionError):
                        await self.respond_error(request_id, -32600, f"unified could not read this request: {text}")
                    continue
                if line is None:
                    self.closed = True
                    continue
                self._file(line)
            if self._orphans:  # seldom: no coroutine to make and await for every line
                await self._answer_orphans()

    def _file(self, line: str) -> None:
        message = parse_object(line)
        if isinstance(message, str):
            batch = _batch(line)
            if batch is None:
                self._refuse(line, f"ignored a line from {self.name}: {message}")
                return
            for member in batch:
                self._file_message(member)
            return
        self._file_message(message)

    def _file_message(self, message: Message) -> None:
        if self.observer is not None:
            self.observer("recv", message)
        if "method" not in message:
            request_id = message.get("id")
            # by exact type: `true` is an int to Python (and `True == 1`), so it would answer request 1
            target = self._answers.get(request_id) if type(request_id) in (int, str) else None
            if target is None and ("error" in message or "result" in message) and not self._issued(request_id):
                self._unanswerable(message)
                return
        else:
            key = self._route_key(message)
            target = self._sessions.get(key) if key is not None else None
            if target is None and "id" in message:
                self._orphans.append(message)
                return
        if target is not None:
            target.put(message)
        else:
            self._keep_unrouted(message)

    def _issued(self, request_id: object) -> bool:
        """Whether `request_id` is one this connection sent (answered, forgotten or awaited)."""
        return type(request_id) is int and 0 < request_id <= self._next_id

    def _unanswerable(self, message: Message) -> None:
        """An answer to no request we sent: the agent could not read one of ours (JSON-RPC gives such an error the
        id null), or it slipped (an id of another type, or one we never numbered). Every open session is warned,
        and when exactly one request awaits an answer, that request fails now: its answer will not come under its
        own id, and it waited for its timeout (Codex: 60 s) before a typed error said anything. With several
        waiting, none can be told to be the one meant: they keep waiting, warned."""
        request_id = message.get("id")
        sent = f"unified's requests are numbered 1 to {self._next_id}" if self._next_id else "unified sent none yet"
        if "error" in message:
            error = as_dict(message.get("error"))
            said = clip(str(error.get("message") or error.get("code") or "no message"), 300)
            text = f"{self.name} answered with an error for no request unified sent (id {request_id!r}): {said}"
            code = error.get("code", -32603)
        else:
            text = (
                f"{self.name} answered a request unified never sent (id {request_id!r}; {sent}): a JSON-RPC "
                "protocol error of the agent's"
            )
            code = -32603
        self._broadcast(LineProblem(text))
        if len(self._answers) == 1:
            ((waiting, target),) = self._answers.items()
            if request_id is not None:
                text += (
                    f"; taken as the failure of request {waiting}, the one waiting, whose answer will not come "
                    "under its own id. Retry; if it happens again, update the agent CLI or report it with its version"
                )
            target.put({"id": waiting, "error": {"code": code, "message": text}})
        else:
            self._keep_unrouted(message)

    def _refuse(self, head: str, text: str) -> None:
        """A line that cannot be used: every open session is warned, and when it answered one of our
        requests, that request fails now with `text` instead of waiting for an answer that never comes."""
        self._broadcast(LineProblem(text, head))
        request_id = answer_in_head(head)
        target = self._answers.get(request_id) if type(request_id) is int else None
        if target is not None:
            target.put({"id": request_id, "error": {"code": -32603, "message": text}})

    def _broadcast(self, problem: LineProblem) -> None:
        for inbox in self._sessions.values():
            inbox.put(problem)
        if not self._sessions:
            self._keep_unrouted(problem)

    def _keep_unrouted(self, message: Incoming) -> None:
        if len(self.unrouted) == self.unrouted.maxlen:
            self.unrouted_dropped += 1
        self.unrouted.append(message)

    async def _answer_orphans(self) -> None:
        while self._orphans and not self.closed:
            await self._on_request(self, self._orphans.pop(0))

    # --- the end --------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connection and end the process (awaited)."""
        self.closed = True
        await self.process.close()

    def kill(self) -> None:
        """Close the connection and end the process at once, from any loop or none."""
        self.closed = True
        self.process.kill()


def _batch(line: str) -> list[Message] | None:
    """The messages of a JSON-RPC 2.0 batch (an array of objects on one line), each filed as if it came alone;
    None for any other line. unified sends no batch, but an agent may answer in one: the answer inside was
    refused as "JSON that is not an object", and its request waited for its timeout. Read as the member of an
    object, so `parse_object`'s checks (depth) hold for it."""
    if line.lstrip()[:1] != "[":
        return None
    wrapped = parse_object(f'{{"batch": {line}}}')
    members = wrapped.get("batch") if isinstance(wrapped, dict) else None
    if not isinstance(members, list) or not members or not all(type(m) is dict for m in members):
        return None
    return members
