"""What every fake model server of the test kit shares: an HTTP server on 127.0.0.1 in a thread,
playing a script.

`FakeGemini`, `FakeAnthropic` and `FakeOpenAI` each speak their provider's wire (their routes, their
bodies, their event streams). How they are started, stopped (plainly, `with`, `async with`) and found
(`port`, `base_url`) is `ThreadedFake`; how they play a script is `ScriptedFake`: the turns queued,
extended and inspected, a fault injected for a request, every request recorded with its secrets
redacted, a turn's own fault applied the first time it is served (an HTTP fault leaves the turn
queued for the retry), and the stream faults cut into an event stream. Written once, so the three
cannot drift apart.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import math
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Generic, Self, TypeVar
from urllib.parse import parse_qsl, urlsplit

import anyio.to_thread

from unified._exports import publish
from unified.testing._scenario import Fault, FaultKind, Script, Turn

__all__ = [
    "REDACTED",
    "FakeHTTPServer",
    "FakeHandler",
    "Incoming",
    "RecordedRequest",
    "Route",
    "ScriptedFake",
    "Slot",
    "StreamCut",
    "ThreadedFake",
    "as_script",
    "garbled",
    "stream_fault",
]

REDACTED = "<redacted>"
"""What a recorded request shows in place of a secret header or query value."""

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it; ``api_method`` names the API call (``generateContentStream``,
    ``interactions.create``, ``messages``, ``responses``, ...), ``error`` the script problem it hit, if any."""

    index: int
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    api_method: str
    model: str | None
    status: int
    fault: FaultKind | None = None
    error: str | None = None


class ThreadedFake:
    """A fake server's lifecycle; a subclass builds its `ThreadingHTTPServer` in `_make_server`."""

    _title: ClassVar[str] = "the fake server"
    """How errors name it (`FakeGemini`)."""

    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def _init_serving(self, port: int = 0) -> None:
        self._port = port
        """The port to listen on (0: any free one)."""
        self._server = None
        self._thread = None
        self.stopping = threading.Event()
        """Set by `stop`: releases every connection a ``stall`` or ``no_headers`` fault holds."""

    def _make_server(self) -> ThreadingHTTPServer:
        raise NotImplementedError

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError(f"{self._title} is already running")
        self.stopping.clear()
        self._server = self._make_server()
        # stop() waits for the serve loop's next poll: at 50 ms, 110 short-lived servers idled 3.7 s.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.005}, name=self._title, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        self.stopping.set()
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # shutdown() waits for the serve loop's next poll: keep that off the event loop.
        await anyio.to_thread.run_sync(self.stop)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{self._title} is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class FakeHTTPServer(ThreadingHTTPServer):
    """The HTTP server of a fake: on 127.0.0.1 at the fake's port, one thread per connection."""

    daemon_threads = True
    request_queue_size = 256  # a burst of concurrent clients (100 runs at once) must not be refused

    def __init__(self, fake: ThreadedFake, handler: type[BaseHTTPRequestHandler]) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", fake._port), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a pooled keep-alive connection closed, a cancelled run) is normal here."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeHandler(BaseHTTPRequestHandler):
    """What every fake's request handler shares: HTTP/1.1, no Nagle delay, no log lines, GET and POST
    answered by the subclass's `_serve` (a fake that answers more methods adds them)."""

    protocol_version = "HTTP/1.1"  # keep-alive and chunked streams, as the SDKs' pooled clients expect
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stalls

    server: Any
    """The fake's `FakeHTTPServer` (`server.fake` is the fake)."""

    def _body(self) -> bytes:
        """The request's body: by its Content-Length or chunked, gunzipped when it says gzip."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
        return gzip.decompress(raw) if self.headers.get("Content-Encoding", "") == "gzip" else raw

    def _serve(self) -> None:
        reply = self.server.fake._dispatch(self.command, self.path, dict(self.headers.items()), self._body())
        try:
            self._write(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self._hung_up(reply)

    def _write(self, reply: Any) -> None:
        raise NotImplementedError

    def _hung_up(self, reply: Any) -> None:
        """The client hung up while `reply` was being written (a cancelled run, a dropped stream)."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the request log is the fake's `requests`."""


def as_script(script: Script | Iterable[Turn] | str | Path | None) -> Script:
    """A fake's `script` argument as a `Script`: none (empty), a path (`Script.from_file`) or a list of turns."""
    if script is None:
        return Script()
    if isinstance(script, str | Path):
        return Script.from_file(script)
    return script if isinstance(script, Script) else Script(turns=list(script))


@dataclass
class Slot:
    """A scripted turn not played yet."""

    turn: Turn
    fault_pending: bool
    """The turn's own fault is still to be served (once: the retry that follows gets the turn)."""
    owner: int | None = None
    """FakeOpenAI: the subagent spawn that reserved the turn (None: the main thread's)."""


@dataclass(frozen=True)
class Incoming:
    """One request, parsed: what a fake routes on."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    """Names lowercased."""
    body: Any
    """The JSON body, its text when it is not JSON, None when there is none."""


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


Reply = TypeVar("Reply")
Route = tuple[str, str | None, Reply, str | None, Fault | None]
"""What a fake's `_route` answers: (api_method, model, reply, script problem or None, fault applied or None)."""


class ScriptedFake(ThreadedFake, Generic[Reply]):
    """A fake model server that plays a script. A subclass routes a request (`_route`), says the
    HTTP status of its replies (`_status`) and writes them (its handler)."""

    _secret_headers: ClassVar[frozenset[str]] = frozenset({"authorization", "proxy-authorization", "cookie"})
    """Headers recorded as `REDACTED` (lowercase)."""
    _secret_query: ClassVar[frozenset[str]] = frozenset()
    """Query parameters recorded as `REDACTED`."""

    def _init_script(
        self, script: Script | Iterable[Turn] | str | Path | None, *, chunk_delay: float, port: int, repeat: bool
    ) -> None:
        if isinstance(chunk_delay, bool) or not (math.isfinite(chunk_delay) and chunk_delay >= 0):
            # `inf` slept before the first chunk for good: every run against the server hung (bad input round 26)
            raise ValueError(f"chunk_delay {chunk_delay!r} is no number of seconds: give a finite one, 0 or more")
        self._chunk_delay = chunk_delay
        self._repeat = repeat
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._load(script)
        self._init_serving(port)

    def _load(self, script: Script | Iterable[Turn] | str | Path | None) -> None:
        """A script to play from the start, and nothing recorded yet (under the lock once serving)."""
        played = as_script(script)
        self._order = played.order
        self._slots: list[Slot] = [Slot(turn, turn.fault is not None) for turn in played.turns]
        self._again = list(played.turns) if self._repeat else []
        """With `repeat`: the turns to play again once none is left (a server many runs use, `unified serve`)."""
        self._request_faults = dict(played.request_faults)
        self._requests: list[RecordedRequest] = []
        self._credentials: set[str] = set()
        """SHA-256 digests of the credentials requests carried (secret headers and query parameters, a
        bearer token also without its scheme): what `saw_credential` asks, the values themselves kept nowhere."""
        self._problems: list[str] = []

    # --- scripting ----------------------------------------------------------------------------------

    def play(self, script: Script | Iterable[Turn] | str | Path | None) -> None:
        """Play a new script from now on, on the same server: the last one's turns, faults, recorded requests
        and problems are forgotten, what is served (its URL, its connections) stays.

        For runs one after another against one server: a binary wired to it (a warm process unified's pool
        keeps between runs with the same launch) then serves the next run too, instead of a cold start
        against a new server. Call it between runs: a request of an earlier run still in flight would take
        a turn of the new script.
        """
        with self._lock:
            self._load(script)
            self._forget()

    def _forget(self) -> None:
        """What a subclass keeps of the last script's runs, dropped by `play` (under the lock)."""

    def add(self, *turns: Turn) -> None:
        """Append turns to the script (also while running)."""
        with self._lock:
            self._slots.extend(Slot(turn, turn.fault is not None) for turn in turns)

    def inject(self, fault: Fault, *, at_request: int | None = None) -> None:
        """Fail the request with this 0-based index (default: the next request the server receives)."""
        with self._lock:
            self._request_faults[len(self._requests) if at_request is None else at_request] = fault

    def _play_again(self) -> None:
        """`repeat`: queue the whole script once more (under the lock)."""
        self._slots.extend(Slot(turn, turn.fault is not None) for turn in self._again)

    def _serve_turn(self, slot: Slot, fault: Fault | None) -> tuple[Fault | None, bool]:
        """(the fault this request gets, whether it takes the turn), under the lock. An injected fault
        wins; else the turn's own, the first time it is served. An HTTP fault leaves the turn queued,
        so the retry that follows gets it; otherwise the turn is taken off the script."""
        if fault is None and slot.fault_pending:
            slot.fault_pending = False
            fault = slot.turn.fault
        if fault is not None and fault.is_http:
            return fault, False
        self._slots.remove(slot)
        return fault, True

    # --- inspection ---------------------------------------------------------------------------------

    def saw_credential(self, secret: str) -> bool:
        """Whether a request carried `secret` as a credential (a secret header, `Bearer <secret>`, a secret
        query parameter): the binary authenticated with it. The recorded requests show `REDACTED` instead."""
        with self._lock:
            return _digest(secret) in self._credentials

    def _remember_credentials(self, headers: Mapping[str, str], query: Mapping[str, str]) -> None:
        """Under the lock: the digests of a request's credentials."""
        values = [v for k, v in headers.items() if k in self._secret_headers]
        values += [v for k, v in query.items() if k in self._secret_query]
        for value in values:
            self._credentials.add(_digest(value))
            scheme, _, token = value.partition(" ")
            if token and scheme.lower() == "bearer":
                self._credentials.add(_digest(token.strip()))

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in arrival order, secrets redacted."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, api_method: str) -> list[RecordedRequest]:
        """The requests of one kind (`RecordedRequest.api_method`)."""
        return [r for r in self.requests if r.api_method == api_method]

    @property
    def problems(self) -> list[str]:
        """Script errors served so far (an exhausted script, an order mismatch, a refused history)."""
        with self._lock:
            return list(self._problems)

    @property
    def unplayed(self) -> list[Turn]:
        """The turns not played yet."""
        with self._lock:
            return [slot.turn for slot in self._slots]

    def assert_done(self) -> None:
        """Fail if a request hit a script problem or a turn was never played."""
        problems, unplayed = self.problems, self.unplayed
        if problems or unplayed:
            raise AssertionError(f"{self._title}: problems={problems}, unplayed turns={len(unplayed)}")

    # --- dispatch (handler threads) -----------------------------------------------------------------

    def _route(self, request: Incoming, fault: Fault | None) -> Route[Reply]:
        raise NotImplementedError

    def _status(self, reply: Reply) -> int:
        raise NotImplementedError

    def _dispatch(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Reply:
        """Route one request (under the lock: the script is played in arrival order) and record it."""
        url = urlsplit(target)
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            body: Any = json.loads(raw) if raw else None
        except (ValueError, UnicodeDecodeError):
            body = raw.decode("utf-8", "replace")
        with self._lock:
            index = len(self._requests)
            fault = self._request_faults.pop(index, None)
            api_method, model, reply, error, applied = self._route(
                Incoming(method, url.path, query, lowered, body), fault
            )
            self._remember_credentials(lowered, query)
            self._requests.append(
                RecordedRequest(
                    index=index,
                    method=method,
                    path=url.path,
                    query={k: REDACTED if k in self._secret_query else v for k, v in query.items()},
                    headers={k: REDACTED if k in self._secret_headers else v for k, v in lowered.items()},
                    body=body,
                    api_method=api_method,
                    model=model,
                    status=self._status(reply),
                    fault=applied.kind if applied is not None else None,
                    error=error,
                )
            )
            if error is not None:
                self._problems.append(error)
            return reply


@dataclass
class StreamCut:
    """An event stream as a stream fault leaves it: the events to send, and where it stops."""

    events: list[JsonObject]
    cut_after: int | None = None
    """Send this many events, then close the connection without ending the body (a dropped link)."""
    stall_after: int | None = None
    """Send this many events, then nothing more until the server stops (a stalled server)."""
    garbled_at: int | None = None
    """The event sent with its JSON cut in half (`garbled`)."""


def garbled(data: str, at: int | None, number: int) -> str:
    """An event's JSON text as `StreamCut.garbled_at` has it sent: cut in half at that event, else whole."""
    return data[: len(data) // 2] if number == at else data


def stream_fault(
    events: list[JsonObject],
    fault: Fault | None,
    *,
    without_finish: Callable[[list[JsonObject]], list[JsonObject]],
    error_event: Callable[[Fault], JsonObject],
) -> StreamCut:
    """`events` with a stream fault applied after `fault.after` events, as every wire has them:
    `cut_stream`, `stall`, `empty_stream`, `no_finish` (`without_finish`: the stream without what
    ends it), `garbled_event` and `mid_stream_error` (the fault's `error_event` in place of the rest)."""
    if fault is None:
        return StreamCut(list(events))
    after = min(fault.after, max(len(events) - 1, 0))
    if fault.kind == "cut_stream":
        return StreamCut(list(events), cut_after=after)
    if fault.kind == "stall":
        return StreamCut(list(events), stall_after=after)
    if fault.kind == "empty_stream":
        return StreamCut([])
    if fault.kind == "no_finish":
        return StreamCut(without_finish(events))
    if fault.kind == "garbled_event":
        return StreamCut(list(events), garbled_at=after)
    return StreamCut([*events[:after], error_event(fault)])


publish("unified.testing", ["RecordedRequest"], globals())
