"""FakeGemini: a scripted Gemini API server on 127.0.0.1 for offline, deterministic tests.

It is a real HTTP server in a background thread (not a transport mock), so the same script can stand
behind google-genai's sync and async clients on any event loop and behind a real ``gemini`` subprocess
(``GOOGLE_GEMINI_BASE_URL``). It speaks the generateContent family (Gemini API and Vertex paths) and the
Interactions API, records every request with secrets redacted, and injects faults on cue.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from unified._exports import publish
from unified.testing import _wire
from unified.testing._scenario import ApiMethod, Fault, InteractionTurn, ModelTurn, RecordedTurn, Script, Turn
from unified.testing._serving import (
    FakeHandler,
    FakeHTTPServer,
    Incoming,
    Route,
    ScriptedFake,
    Slot,
    garbled,
    stream_fault,
)
from unified.testing._wire import JsonObject

__all__ = ["FakeGemini"]

_TERMINAL = frozenset({"completed", "failed", "cancelled", "incomplete", "budget_exceeded"})

_MODEL_PATH = re.compile(
    r"^/(?P<ver>v1[a-z0-9]*)/(?:projects/[^/]+/locations/[^/]+/)?(?:publishers/[^/]+/)?"
    r"models/(?P<model>[^/:]+):(?P<op>\w+)$"
)
_INTERACTIONS_PATH = re.compile(
    r"^/(?P<ver>v1[a-z0-9]*)/(?:projects/[^/]+/locations/[^/]+/)?interactions"
    r"(?:/(?P<id>[^/:]+)(?:[/:](?P<action>cancel))?)?$"
)
_MODEL_OPS: dict[str, ApiMethod] = {
    "streamGenerateContent": "generateContentStream",
    "generateContent": "generateContent",
    "countTokens": "countTokens",
    "embedContent": "embedContent",
}


# --- replies: computed under the lock, written by the handler thread -------------------------------


@dataclass
class _Json:
    status: int
    body: JsonObject
    retry_after: str | None = None
    """A `Retry-After` header to send (`Fault.retry_after`)."""


@dataclass
class _Sse:
    events: list[JsonObject]
    delay: float
    cut_after: int | None = None
    stall_after: int | None = None
    """Send this many events, then nothing more until the server stops (a stalled server)."""
    garbled_at: int | None = None
    done_sentinel: bool = False
    interaction: _Interaction | None = None
    """Set while a created interaction streams: the handler reports progress so a cancel can stop it."""


@dataclass
class _Drop:
    """Close the connection without answering (a non-streaming call hit by ``cut_stream``)."""


@dataclass
class _Hang:
    """Never answer (``no_headers``): the connection stays open until the server stops."""


_Reply = _Json | _Sse | _Drop | _Hang


@dataclass
class _Interaction:
    id: str
    owner: JsonObject
    status: str
    steps: list[JsonObject]
    usage: JsonObject | None
    previous_interaction_id: str | None
    created: str
    events: list[JsonObject] = field(default_factory=list)
    pending_statuses: list[str] = field(default_factory=list)
    legacy: bool = False
    stream_status: str | None = None
    """While its create stream is being sent the interaction is ``in_progress``; this is the status it
    reaches when the stream's last event goes out (or the stream is cut)."""
    stream_sent: int = 0
    """Events of the create stream committed to the wire so far."""
    cancelled_at: int | None = None
    """A cancel during the stream: the index in ``events`` where the cancellation tail starts."""

    def resource(self) -> JsonObject:
        body: JsonObject = {"id": self.id, "status": self.status, **self.owner, "created": self.created}
        body["updated"] = _now()
        if self.status not in ("queued", "in_progress"):
            body["steps"] = self.steps
            texts = [
                c["text"]
                for s in self.steps
                if s["type"] == "model_output"
                for c in s.get("content", [])
                if c.get("type") == "text"
            ]
            if texts:
                body["output_text"] = "".join(texts)
        if self.usage is not None:
            body["usage"] = self.usage
        if self.previous_interaction_id is not None:
            body["previous_interaction_id"] = self.previous_interaction_id
        return body


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error(code: int, status: str, message: str) -> _Json:
    return _Json(code, _wire.error_body(code, status, message))


CLI_MODEL = "gemini-2.5-flash"
"""The model a `gemini` binary pointed at FakeGemini uses when the run names none."""


class FakeGemini(ScriptedFake["_Reply"]):
    """A scripted Gemini server; use as ``with FakeGemini(script) as server:`` (or ``async with``).

    ``script`` is a :class:`Script`, a list of turns, or a path loaded with :meth:`Script.from_file`
    (CLI ``.responses`` JSONL, ``.json``, ``.yaml``). ``chunk_delay`` slows every stream (seconds
    between chunks) on top of each turn's own delay. Point clients at :attr:`base_url`. ``port``
    picks the port (default: any free one); with ``repeat`` the script starts over whenever a
    request finds no turn left, for a server that many runs use one after another (`unified serve`).

    Like the real API, it refuses (HTTP 400 ``INVALID_ARGUMENT``, with the API's message) a
    generateContent history whose function calls and responses do not pair up: a call answered
    twice or not at all, a response without its call (``_wire.history_problem``). The refusal is
    one of :attr:`problems`, so ``assert_done()`` fails; ``check_history=False`` turns it off.
    """

    _title = "FakeGemini"
    _secret_headers = frozenset(
        {"x-goog-api-key", "authorization", "proxy-authorization", "cookie", "x-goog-iam-authorization-token"}
    )
    _secret_query = frozenset({"key", "access_token"})

    def __init__(
        self,
        script: Script | Iterable[Turn] | str | Path | None = None,
        *,
        chunk_delay: float = 0.0,
        check_history: bool = True,
        port: int = 0,
        repeat: bool = False,
    ) -> None:
        self._check_history = check_history
        self._connections = 0
        self._interactions: dict[str, _Interaction] = {}
        self._init_script(script, chunk_delay=chunk_delay, port=port, repeat=repeat)

    # --- lifecycle ----------------------------------------------------------------------------------

    def _make_server(self) -> ThreadingHTTPServer:
        return _Server(self)

    @property
    def cli_env(self) -> dict[str, str]:
        """Environment for a real ``gemini`` binary (with ``selectedType=gemini-api-key`` in its settings).

        ``GEMINI_MODEL`` pins the CLI's default model: without a model the CLI's router would first
        make extra ``generateContent`` calls, each consuming a scripted turn (see docs/testing.md).
        The gemini-cli backend always names a model itself (the run's, a resumed session's, this one);
        a bare ``gemini`` wired to FakeGemini needs it.
        """
        return {
            "GOOGLE_GEMINI_BASE_URL": self.base_url,
            "GEMINI_API_KEY": "fake-gemini-key",
            "GEMINI_MODEL": CLI_MODEL,
        }

    def _forget(self) -> None:
        self._interactions.clear()  # a stored interaction belongs to the last script's runs

    # --- inspection ---------------------------------------------------------------------------------

    @property
    def connections(self) -> int:
        """TCP connections accepted so far: a client that pools them opens one for many requests."""
        with self._lock:
            return self._connections

    def interaction(self, interaction_id: str) -> JsonObject | None:
        """The stored interaction resource, as a GET would show it (without advancing a background one)."""
        with self._lock:
            stored = self._interactions.get(interaction_id)
            return None if stored is None else stored.resource()

    # --- dispatch (handler threads) -----------------------------------------------------------------

    def _status(self, reply: _Reply) -> int:
        return reply.status if isinstance(reply, _Json) else 200

    def _route(self, request: Incoming, fault: Fault | None) -> Route[_Reply]:
        method, path, query, body = request.method, request.path, request.query, request.body
        refusal = _refuse_credentials(path, query, request.headers)
        if refusal is not None:
            return "refused", None, refusal, f"refused {path}", None
        if (match := _MODEL_PATH.match(path)) and method == "POST" and match["op"] in _MODEL_OPS:
            api_method = _MODEL_OPS[match["op"]]
            model = match["model"]
            reply, error, fault = self._generate(api_method, model, method, path, body, fault)
            return api_method, model, reply, error, fault
        if match := _INTERACTIONS_PATH.match(path):
            iid, action = match["id"], match["action"]
            if iid is None and method == "POST":
                payload = body if isinstance(body, dict) else {}
                model = payload.get("model") or payload.get("agent")
                reply, error, fault = self._create_interaction(payload, method, path, fault)
                return "interactions.create", model, reply, error, fault
            if iid is not None and action == "cancel" and method == "POST":
                return "interactions.cancel", None, self._cancel(iid), None, None
            if iid is not None and action is None and method == "GET":
                return "interactions.get", None, self._get(iid, query), None, None
            if iid is not None and action is None and method == "DELETE":
                return "interactions.delete", None, self._delete(iid), None, None
        return "unknown", None, _error(404, "NOT_FOUND", f"FakeGemini has no route for {method} {path}"), None, None

    def _take(self, api_method: ApiMethod, method: str, path: str) -> Slot | str:
        """The slot that answers this call, or the script error to answer instead."""
        if not any(slot.turn.serves(api_method) for slot in self._slots) and any(
            turn.serves(api_method) for turn in self._again
        ):
            self._play_again()
        for slot in self._slots:
            if slot.turn.serves(api_method):
                return slot
            if self._order == "global":
                return (
                    f"FakeGemini script mismatch: next turn is a {slot.turn.kind} turn"
                    f" that does not serve {api_method}; got {method} {path}"
                )
        return f"FakeGemini script exhausted: no turn left for {method} {path}"

    def _generate(
        self, api_method: ApiMethod, model: str, method: str, path: str, body: Any, fault: Fault | None
    ) -> tuple[_Reply, str | None, Fault | None]:
        if fault is not None and fault.is_http:
            return _http_fault(fault, model), None, fault
        if self._check_history and api_method in ("generateContent", "generateContentStream"):
            problem = _wire.history_problem(body)
            if problem is not None:
                refused = f"FakeGemini refused the request's history as the Gemini API would (400): {problem}"
                return _error(400, "INVALID_ARGUMENT", problem), refused, fault
        slot = self._take(api_method, method, path)
        if isinstance(slot, str):
            if api_method == "countTokens":
                # Clients count tokens incidentally; an estimate keeps unscripted calls from failing.
                return _Json(200, {"totalTokens": max(1, len(json.dumps(body)) // 4)}), None, fault
            return _error(500, "INTERNAL", slot), slot, fault
        fault, consumed = self._serve_turn(slot, fault)
        if not consumed:
            assert fault is not None
            return _http_fault(fault, model), None, fault
        turn = slot.turn
        chunks: list[JsonObject]
        if isinstance(turn, RecordedTurn):
            chunks = turn.response if isinstance(turn.response, list) else [turn.response]
        else:
            assert isinstance(turn, ModelTurn)
            chunks = _wire.model_chunks(
                turn, model, invocations=_wire.wants_invocations(body), declared=_wire.declared_functions(body)
            )
        if api_method != "generateContentStream":
            if fault is not None:
                reply: _Reply = _Drop() if fault.kind == "cut_stream" else _Json(*_wire.fault_error(fault, model))
                return reply, None, fault
            return _Json(200, chunks[0] if len(chunks) == 1 else _wire.merge_chunks(chunks)), None, None
        return self._stream(chunks, turn.chunk_delay, fault, model), None, fault

    def _stream(self, events: list[JsonObject], delay: float, fault: Fault | None, model: str | None) -> _Sse:
        """SSE reply for a generate stream, with a stream fault applied after ``fault.after`` chunks."""
        cut = stream_fault(
            events,
            fault,
            without_finish=lambda chunks: [_without_finish(chunk) for chunk in chunks],
            error_event=lambda fault: _wire.fault_error(fault, model)[1],
        )
        return _Sse(
            cut.events,
            delay + self._chunk_delay,
            cut_after=cut.cut_after,
            stall_after=cut.stall_after,
            garbled_at=cut.garbled_at,
        )

    # --- Interactions API ---------------------------------------------------------------------------

    def _create_interaction(
        self, payload: JsonObject, method: str, path: str, fault: Fault | None
    ) -> tuple[_Reply, str | None, Fault | None]:
        owner = {"agent": payload["agent"]} if "agent" in payload else {"model": payload.get("model")}
        model = payload.get("model") or payload.get("agent")
        if fault is not None and fault.is_http:
            return _http_fault(fault, model), None, fault
        previous = payload.get("previous_interaction_id")
        if previous is not None and previous not in self._interactions:
            return _error(404, "NOT_FOUND", f"Interaction {previous} not found"), None, fault
        slot = self._take("interactions", method, path)
        if isinstance(slot, str):
            return _error(500, "INTERNAL", slot), slot, fault
        fault, consumed = self._serve_turn(slot, fault)
        if not consumed:
            assert fault is not None
            return _http_fault(fault, model), None, fault
        turn = slot.turn
        if isinstance(turn, ModelTurn):
            turn = _wire.as_interaction_turn(turn)
        assert isinstance(turn, InteractionTurn)
        stored = self._store(turn, owner, previous)
        if fault is not None and fault.kind == "mid_stream_error":
            after = min(fault.after, len(stored.events) - 1)
            _, body = _wire.fault_error(fault, model=None)
            error = body["error"]
            said = {"code": error["status"], "message": error["message"]}
            if "details" in error:  # a 429's QuotaFailure and RetryInfo, as in its HTTP twin's body
                said["details"] = error["details"]
            stored.events = [*stored.events[:after], {"event_type": "error", "error": said}]
            stored.events[-1]["event_id"] = f"{stored.id}.{after}"
            stored.status = "failed"
        if payload.get("stream") is True:
            sse = _Sse(list(stored.events), turn.chunk_delay + self._chunk_delay, done_sentinel=True)
            sse.interaction = stored
            stored.stream_status, stored.status = stored.status, "in_progress"
            if fault is not None and fault.kind == "cut_stream":
                sse.cut_after = min(fault.after, len(stored.events) - 1)
            elif fault is not None and fault.kind == "stall":
                sse.stall_after = min(fault.after, len(stored.events) - 1)
            elif fault is not None and fault.kind == "empty_stream":
                sse.events, sse.interaction = [], None
            elif fault is not None and fault.kind == "no_finish":
                sse.events = [e for e in sse.events if not _ends_interaction(e)]
            elif fault is not None and fault.kind == "garbled_event":
                sse.garbled_at = min(fault.after, len(stored.events) - 1)
            return sse, None, fault
        if fault is not None:
            return (
                (_Drop() if fault.kind == "cut_stream" else _error(500, "INTERNAL", "Interaction failed")),
                None,
                fault,
            )
        if payload.get("background") is True:
            stored.pending_statuses = ["in_progress"] * turn.background_polls + [stored.status]
            stored.status = "queued"
        return _Json(200, stored.resource()), None, None

    def _store(self, turn: InteractionTurn, owner: JsonObject, previous: str | None) -> _Interaction:
        number = next(self._ids)
        iid = turn.id or f"fake-interaction-{number}"
        legacy = turn.dialect == "legacy"
        render = _wire.render_legacy_step if legacy else _wire.render_step
        rendered = [render(step, f"call_{number}_{i}") for i, step in enumerate(turn.steps)]
        usage = _wire.interaction_usage(turn.usage) if turn.usage is not None else None
        stored = _Interaction(
            id=iid,
            owner=owner,
            status=turn.final_status,
            steps=[r.final for r in rendered],
            usage=usage,
            previous_interaction_id=previous,
            created=_now(),
            legacy=legacy,
        )
        names = _wire.INTERACTION_EVENTS[turn.dialect]
        payload_key = "content" if legacy else "step"
        head: JsonObject = {"id": iid, "status": "in_progress", **owner, "created": stored.created}
        events: list[JsonObject] = [{"event_type": names["created"], "interaction": head}]
        if not legacy:  # the deprecated dialect has no status updates
            events.append({"event_type": "interaction.status_update", "interaction_id": iid, "status": "in_progress"})
        for index, step in enumerate(rendered):
            events.append({"event_type": names["start"], "index": index, payload_key: step.start})
            events.extend({"event_type": names["delta"], "index": index, "delta": d} for d in step.deltas)
            stop: JsonObject = {"event_type": names["stop"], "index": index}
            if step.usage is not None:
                stop["usage"] = _wire.interaction_usage(step.usage)
            events.append(stop)
        if stored.status != "completed" and not legacy:
            events.append({"event_type": "interaction.status_update", "interaction_id": iid, "status": stored.status})
        tail: JsonObject = {"id": iid, "status": stored.status, **owner, "created": stored.created}
        if usage is not None:
            tail["usage"] = usage
        events.append({"event_type": names["completed"], "interaction": tail})
        for n, event in enumerate(events):
            event["event_id"] = f"{iid}.{n}"
        stored.events = events
        self._interactions[iid] = stored
        return stored

    def _get(self, iid: str, query: dict[str, str]) -> _Reply:
        stored = self._interactions.get(iid)
        if stored is None:
            return _error(404, "NOT_FOUND", f"Interaction {iid} not found")
        if query.get("stream") == "true":
            events = stored.events
            last = query.get("last_event_id")
            if last is not None:
                ids = [e["event_id"] for e in events]
                if last not in ids:
                    return _error(400, "INVALID_ARGUMENT", f"Unknown last_event_id {last}")
                events = events[ids.index(last) + 1 :]
            return _Sse(list(events), self._chunk_delay, done_sentinel=True)
        if stored.pending_statuses:
            stored.status = stored.pending_statuses.pop(0)
        return _Json(200, stored.resource())

    def _cancel(self, iid: str) -> _Reply:
        stored = self._interactions.get(iid)
        if stored is None:
            return _error(404, "NOT_FOUND", f"Interaction {iid} not found")
        if stored.status in _TERMINAL:
            return _error(400, "FAILED_PRECONDITION", f"Interaction {iid} is already {stored.status}")
        stored.status = "cancelled"
        stored.pending_statuses.clear()
        if stored.stream_status is not None:
            self._cancel_stream(stored)
        return _Json(200, stored.resource())

    def _cancel_stream(self, stored: _Interaction) -> None:
        """A cancel while the create stream is still being sent: what was sent stays, then the stream
        ends as the server would end a cancelled run, ``interaction.status_update`` to ``cancelled``
        (not in the legacy dialect, which has no status updates) and the terminal event with status
        ``cancelled``. Only the steps that had started remain on the interaction."""
        stored.stream_status = None
        sent = stored.events[: stored.stream_sent]
        started = {e["index"] for e in sent if e["event_type"] in ("step.start", "content.start")}
        stored.steps = [step for i, step in enumerate(stored.steps) if i in started]
        tail: list[JsonObject] = []
        if not stored.legacy:
            tail.append({"event_type": "interaction.status_update", "interaction_id": stored.id, "status": "cancelled"})
        final: JsonObject = {"id": stored.id, "status": "cancelled", **stored.owner, "created": stored.created}
        tail.append(
            {"event_type": "interaction.complete" if stored.legacy else "interaction.completed", "interaction": final}
        )
        for n, event in enumerate(tail, start=len(sent)):
            event["event_id"] = f"{stored.id}.{n}"
        stored.events = sent + tail
        stored.cancelled_at = len(sent)

    def _stream_progress(self, sse: _Sse, n: int) -> list[JsonObject] | None:
        """Called by the handler before it sends event ``n`` of a create stream. Returns the events to
        send from ``n`` on when a cancel replaced them, else None; the interaction takes its final
        status just before the stream's last event goes out."""
        stored = sse.interaction
        if stored is None:
            return None
        with self._lock:
            if stored.cancelled_at is not None:
                sse.interaction = None
                return stored.events[stored.cancelled_at :]
            if stored.stream_status is None:
                sse.interaction = None
                return None
            stored.stream_sent = n + 1
            if n >= len(sse.events) - 1:
                stored.status, stored.stream_status = stored.stream_status, None
                sse.interaction = None
            return None

    def _stream_cut(self, sse: _Sse) -> None:
        """A cut stream ends its interaction's foreground run (it stays resumable with ``last_event_id``)."""
        stored = sse.interaction
        if stored is None:
            return
        with self._lock:
            sse.interaction = None
            if stored.stream_status is not None:
                stored.status, stored.stream_status = stored.stream_status, None

    def _delete(self, iid: str) -> _Reply:
        if self._interactions.pop(iid, None) is None:
            return _error(404, "NOT_FOUND", f"Interaction {iid} not found")
        return _Json(200, {})


_UNAUTHENTICATED = (
    "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or "
    "other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
)
_UNREGISTERED = (
    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or "
    "other form of API consumer identity to call this API."
)
_PLACEHOLDERS = frozenset({"None", "null", "undefined", ""})


def _refuse_credentials(path: str, query: dict[str, str], headers: dict[str, str]) -> _Json | None:
    """The error Google's servers give a request that cannot be whose it claims to be, or None to serve it.

    Only API routes are checked (an unknown route stays a 404). A `projects/None` path (a client
    that formatted a missing project) is refused as the real API refuses an unknown project; a
    Vertex AI path needs a bearer token (`projects/P/locations/L/...`, ADC) or an API key (express
    mode, no `projects/`); a Gemini API path needs an API key or a bearer token.
    """
    if not (_MODEL_PATH.match(path) or _INTERACTIONS_PATH.match(path)):
        return None
    segments = path.split("/")
    for name in ("projects", "locations"):
        if name in segments:
            value = segments[segments.index(name) + 1]
            if value in _PLACEHOLDERS:
                kind = "project" if name == "projects" else "location"
                return _error(
                    403, "PERMISSION_DENIED", f"Permission denied on resource {kind} {value} (or it may not exist)."
                )
    has_key = bool(headers.get("x-goog-api-key") or query.get("key"))
    has_token = headers.get("authorization", "").startswith("Bearer ") and len(headers["authorization"]) > 7
    if "projects" in segments:
        return None if has_token or has_key else _error(401, "UNAUTHENTICATED", _UNAUTHENTICATED)
    if "publishers" in segments:  # Vertex AI express mode: the key is the only credential
        return None if has_key else _error(401, "UNAUTHENTICATED", _UNAUTHENTICATED)
    return None if has_key or has_token else _error(403, "PERMISSION_DENIED", _UNREGISTERED)


def _http_fault(fault: Fault, model: str | None) -> _Reply:
    return _Hang() if fault.kind == "no_headers" else _Json(*_wire.fault_error(fault, model), fault.retry_after)


def _without_finish(chunk: JsonObject) -> JsonObject:
    """A generateContent chunk with no ``finishReason`` on any candidate."""
    candidates = [{k: v for k, v in c.items() if k != "finishReason"} for c in chunk.get("candidates") or []]
    return {**chunk, "candidates": candidates} if "candidates" in chunk else chunk


def _ends_interaction(event: JsonObject) -> bool:
    kind = event.get("event_type")
    return kind == "interaction.completed" or (
        kind == "interaction.status_update" and event.get("status") in _TERMINAL | {"requires_action"}
    )


class _Server(FakeHTTPServer):
    fake: FakeGemini

    def __init__(self, fake: FakeGemini) -> None:
        super().__init__(fake, _Handler)

    def get_request(self) -> tuple[Any, Any]:
        accepted = super().get_request()
        with self.fake._lock:
            self.fake._connections += 1
        return accepted


class _Handler(FakeHandler):
    server: _Server

    def do_DELETE(self) -> None:
        self._serve()

    def _hung_up(self, reply: _Reply) -> None:
        if isinstance(reply, _Sse) and reply.interaction is not None:
            self._play_out(reply)

    def _send(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _write(self, reply: _Reply) -> None:
        fake = self.server.fake
        if isinstance(reply, _Hang):
            fake.stopping.wait()
            self.close_connection = True
            return
        if isinstance(reply, _Drop):
            self.close_connection = True
            return
        if isinstance(reply, _Json):
            payload = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(payload)))
            if reply.retry_after is not None:
                self.send_header("Retry-After", reply.retry_after)
            self.end_headers()
            self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = reply.events
        n = 0
        while n < len(events) or n == reply.stall_after:
            if n == reply.stall_after:
                self.wfile.flush()
                fake.stopping.wait()
                self.close_connection = True
                return
            if n == reply.cut_after:
                # No terminating zero-length chunk: clients see an incomplete body, as on a dropped link.
                fake._stream_cut(reply)
                self.close_connection = True
                return
            if reply.delay and fake.stopping.wait(reply.delay):  # the server stops: so does the stream
                self.close_connection = True
                return
            if (tail := fake._stream_progress(reply, n)) is not None:
                events = reply.events = [*events[:n], *tail]
            self._send(b"data: " + garbled(json.dumps(events[n]), reply.garbled_at, n).encode() + b"\n\n")
            n += 1
        if reply.done_sentinel:
            self._send(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _play_out(self, reply: _Sse) -> None:
        """The client hung up mid-stream; the run goes on at the same pace, as on a real server, so the
        interaction stays cancellable until its last event would have been sent."""
        fake = self.server.fake
        progress = reply.interaction
        n = progress.stream_sent if progress is not None else 0
        while reply.interaction is not None and n < len(reply.events) and fake._server is self.server:
            if reply.delay and fake.stopping.wait(reply.delay):
                return
            fake._stream_progress(reply, n)
            n += 1


publish("unified.testing", ["FakeGemini"], globals())
