"""FakeAnthropic: a scripted Anthropic Messages API server on 127.0.0.1, for offline tests of Claude Code.

The same idea as FakeGemini, and the same scenario vocabulary (`Script`, `ModelTurn` with
`thoughts`, `text`, `function_calls`, `usage`, `fault`): a real HTTP server in a background
thread, so the real `claude` binary can stand behind it (`ANTHROPIC_BASE_URL`, see `cli_env`). It
speaks what Claude Code 2.1 sends:

- `POST /v1/messages` streamed (SSE: `message_start`, `content_block_start` / `_delta` / `_stop`,
  `message_delta`, `message_stop`) and not streamed (the CLI's fallback after broken streams);
  `POST /v1/messages/count_tokens`; `HEAD /api/hello`;
- Vertex AI (`.../publishers/anthropic/models/<model>:streamRawPredict` and `:rawPredict`, the
  same SSE) and Bedrock (`GET /inference-profiles`, `POST /model/<model>/invoke-with-response-stream`
  as AWS event-stream frames, `POST /model/<model>/invoke`), so every auth mode runs offline.

A `ModelTurn` renders as one assistant message: a `thinking` block per thought (its signature
verbatim, or a generated one), the text in `text_chunks` deltas, a `tool_use` block per function
call (`id` as given, else `toolu_fake_<n>`), `stop_reason` `tool_use` when it calls tools, else
`end_turn` (`MAX_TOKENS` as the finish reason: `max_tokens`). Usage: `input_tokens` of the script
counts every prompt token, as unified does, so the wire gets `input_tokens - cached_tokens -
cache_creation_tokens` plus `cache_read_input_tokens` and `cache_creation_input_tokens`, and
`output_tokens + thinking_tokens` as `output_tokens` (with `output_tokens_details.thinking_tokens`).

Turns are played in order; a request takes the first unplayed turn that serves it. A subagent's
request (it carries Claude Code's `x-claude-code-agent-id` header) is served only by a turn whose
`subagent` is True or None, a main agent's only by one whose `subagent` is False or None: what a
background subagent needs, whose requests interleave with the main agent's. Turns of another API
(`RecordedTurn`, `InteractionTurn`, a `ModelTurn` pinned to a Gemini `method`) never serve.

Faults, as FakeGemini's: an HTTP fault (`rate_limit` 429 with `retry-after`, `overloaded` 529,
`server_error` 500, `unavailable` 503, `bad_request` 400, `unauthenticated` 401,
`permission_denied` 403, `not_found` 404) answers instead of the turn and leaves it queued;
stream faults consume it after `after` SSE events: `mid_stream_error` (an `error` event),
`cut_stream` (the connection dropped), `stall` (then silence until the server stops),
`empty_stream`, `no_finish` (no `message_delta` / `message_stop`); `no_headers` never answers. A request
that is not streamed gets the whole-answer form of a stream fault: dropped, silence, the error as a
529 (or the fault's `carries`), a message without content or without a `stop_reason`.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import re
import socket
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from unified._exports import publish
from unified.testing._scenario import Fault, ModelTurn, Script, Turn, Usage
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

__all__ = ["AGENT_HEADER", "FakeAnthropic", "message_blocks", "sse_events"]

JsonObject = dict[str, Any]

AGENT_HEADER = "x-claude-code-agent-id"
"""The header Claude Code puts on a subagent's requests (its value is the subagent's task id)."""
CLI_MODEL = "claude-fake-model"
"""The model `cli_env` names, so a run without one does not depend on the CLI's default."""
_HTTP_FAULTS: dict[str, tuple[int, str, str]] = {
    "rate_limit": (429, "rate_limit_error", "This request would exceed your rate limit (fake)."),
    "overloaded": (529, "overloaded_error", "Overloaded (fake)."),
    "server_error": (500, "api_error", "Internal server error (fake)."),
    "unavailable": (503, "api_error", "Service unavailable (fake)."),
    "bad_request": (400, "invalid_request_error", "Bad request (fake)."),
    "unauthenticated": (401, "authentication_error", "invalid x-api-key"),
    "permission_denied": (403, "permission_error", "Your API key does not have permission (fake)."),
    "not_found": (404, "not_found_error", "model: not found (fake)."),
}
_VERTEX_PATH = re.compile(r"/publishers/anthropic/models/(?P<model>[^/:]+):(?P<op>streamRawPredict|rawPredict)$")
_BEDROCK_PATH = re.compile(r"^/model/(?P<model>[^/]+)/(?P<op>invoke-with-response-stream|invoke)$")


def _seconds(delay: str) -> str:
    """`retry-after` seconds from a Google-style delay (`"15s"`, `"1.5s"`)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)s?\s*", delay)
    return str(max(0, round(float(match[1])))) if match else "1"


def _wire_usage(usage: Usage | None) -> JsonObject:
    u = usage or Usage(input_tokens=10, output_tokens=5)
    fresh = max(0, u.input_tokens - u.cached_tokens - u.cache_creation_tokens)
    return {
        "input_tokens": fresh,
        "cache_read_input_tokens": u.cached_tokens,
        "cache_creation_input_tokens": u.cache_creation_tokens,
        "output_tokens": u.output_tokens + u.thinking_tokens,
        "output_tokens_details": {"thinking_tokens": u.thinking_tokens},
    }


def message_blocks(turn: ModelTurn, next_tool_id: Iterable[str]) -> list[JsonObject]:
    """The content blocks of one assistant message for `turn` (tool ids drawn from `next_tool_id`)."""
    ids = iter(next_tool_id)
    blocks: list[JsonObject] = []
    for number, thought in enumerate(turn.thoughts):
        signature = thought.signature or f"fake-signature-{number}"
        blocks.append({"type": "thinking", "thinking": thought.text, "signature": signature})
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    for call in turn.function_calls:
        blocks.append({"type": "tool_use", "id": call.id or next(ids), "name": call.name, "input": dict(call.args)})
    return blocks


def _stop_reason(turn: ModelTurn, blocks: list[JsonObject]) -> str:
    if any(b["type"] == "tool_use" for b in blocks):
        return "tool_use"
    return {"MAX_TOKENS": "max_tokens", "STOP": "end_turn"}.get(turn.finish_reason, "end_turn")


def _pieces(text: str, count: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse_events(message_id: str, model: str, turn: ModelTurn, blocks: list[JsonObject]) -> list[JsonObject]:
    """The SSE events of one streamed message (each a JSON object with its `type`)."""
    usage = _wire_usage(turn.usage)
    start_usage = {**usage, "output_tokens": 1}
    events: list[JsonObject] = [
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": start_usage,
            },
        }
    ]
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "thinking":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}}
            )
            events += [
                {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}}
                for p in _pieces(block["thinking"], 1) or [""]
            ]
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                }
            )
        elif kind == "text":
            events.append(
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            )
            events += [
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}
                for p in _pieces(block["text"], turn.text_chunks)
            ]
        else:
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}},
                }
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                }
            )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(turn, blocks), "stop_sequence": None},
            "usage": usage,
        }
    )
    events.append({"type": "message_stop"})
    return events


def _error_body(kind: str, message: str) -> JsonObject:
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- replies: computed under the lock, written by the handler thread ---------------------------------


@dataclass
class _Json:
    status: int
    body: JsonObject
    headers: dict[str, str]


@dataclass
class _Sse:
    events: list[JsonObject]
    delay: float
    bedrock: bool = False
    cut_after: int | None = None
    stall_after: int | None = None
    garbled_at: int | None = None


@dataclass
class _Hang:
    """Never answer (``no_headers``, or a non-streamed request hit by ``stall``): until the server stops."""


@dataclass
class _Drop:
    """Close the connection without answering (a non-streamed request hit by ``cut_stream``)."""


_Reply = _Json | _Sse | _Hang | _Drop


class FakeAnthropic(ScriptedFake["_Reply"]):
    """A scripted Anthropic Messages server; use as ``with FakeAnthropic(script) as server:`` (or ``async with``).

    ``script`` is a :class:`Script`, a list of turns, or a path loaded with :meth:`Script.from_file`.
    ``chunk_delay`` slows every stream (seconds between SSE events) on top of each turn's own delay.
    Point the CLI at :attr:`base_url` (:attr:`cli_env` has the variables).
    """

    _title = "FakeAnthropic"
    _secret_headers = frozenset({"x-api-key", "authorization", "proxy-authorization", "cookie"})

    def __init__(
        self,
        script: Script | Iterable[Turn] | str | Path | None = None,
        *,
        chunk_delay: float = 0.0,
        port: int = 0,
        repeat: bool = False,
    ) -> None:
        self._init_script(script, chunk_delay=chunk_delay, port=port, repeat=repeat)

    # --- lifecycle ----------------------------------------------------------------------------------

    def _make_server(self) -> ThreadingHTTPServer:
        return _Server(self)

    @property
    def cli_env(self) -> dict[str, str]:
        """Environment for a real ``claude`` binary: this server as its API, a dummy key, a fixed model.

        ``ANTHROPIC_MODEL`` pins the model a run without one uses; ``ExecuteParams.model`` still wins.
        """
        return {
            "ANTHROPIC_BASE_URL": self.base_url,
            "ANTHROPIC_API_KEY": "fake-anthropic-key",
            "ANTHROPIC_MODEL": CLI_MODEL,
        }

    # --- inspection ---------------------------------------------------------------------------------

    def model_bodies(self) -> list[Any]:
        """The JSON body of every model call, in order."""
        return [r.body for r in self.requests_for("messages")]

    # --- dispatch (handler threads) -----------------------------------------------------------------

    def _status(self, reply: _Reply) -> int:
        return reply.status if isinstance(reply, _Json) else 200

    def _route(self, request: Incoming, fault: Fault | None) -> Route[_Reply]:
        """Model calls (``messages``, streamed or not, on every path), ``count_tokens``, ``hello``,
        ``inference_profiles``."""
        method, path, headers = request.method, request.path, request.headers
        payload = request.body if isinstance(request.body, dict) else {}
        if method == "HEAD":
            return "hello", None, _Json(200, {}, {}), None, None
        if method == "GET" and path.endswith("/inference-profiles"):
            return "inference_profiles", None, _Json(200, {"inferenceProfileSummaries": []}, {}), None, None
        if method == "POST" and path.endswith("/count_tokens"):
            estimate = max(1, len(json.dumps(payload)) // 4)
            return "count_tokens", payload.get("model"), _Json(200, {"input_tokens": estimate}, {}), None, None
        if method == "POST":
            stream = payload.get("stream") is True
            bedrock = False
            model = payload.get("model")
            if path.endswith("/v1/messages"):
                refusal = _refuse_credentials(headers)
                if refusal is not None:
                    return "messages", model, refusal, None, None
            elif match := _VERTEX_PATH.search(path):
                model, stream = match["model"], match["op"] == "streamRawPredict"
            elif match := _BEDROCK_PATH.match(path):
                model, stream, bedrock = match["model"], match["op"] == "invoke-with-response-stream", True
            else:
                return (
                    "unknown",
                    None,
                    _Json(404, _error_body("not_found_error", f"no route for {path}"), {}),
                    None,
                    None,
                )
            reply, error, applied = self._message(str(model or CLI_MODEL), stream, bedrock, headers, fault)
            return "messages", str(model) if model else None, reply, error, applied
        return (
            "unknown",
            None,
            _Json(404, _error_body("not_found_error", f"no route for {method} {path}"), {}),
            None,
            None,
        )

    def _take(self, subagent: bool) -> Slot | str:
        """The slot of the next turn for the main agent or a subagent, or the script problem to answer."""
        if self._again and not any(isinstance(slot.turn, ModelTurn) for slot in self._slots):
            self._play_again()
        for slot in self._slots:
            if not isinstance(slot.turn, ModelTurn) or slot.turn.method is not None:
                if self._order == "global":
                    return "FakeAnthropic script mismatch: the next turn is not an Anthropic model turn"
                continue
            if slot.turn.subagent is None or slot.turn.subagent == subagent:
                return slot
            if self._order == "global":
                who = "a subagent" if subagent else "the main agent"
                return f"FakeAnthropic script mismatch: the next turn is not for {who}"
        who = "a subagent's" if subagent else "a main agent's"
        return f"FakeAnthropic script exhausted: no turn left for {who} request"

    def _message(
        self, model: str, stream: bool, bedrock: bool, headers: dict[str, str], fault: Fault | None
    ) -> tuple[_Reply, str | None, Fault | None]:
        if fault is not None and fault.is_http:
            return _http_fault(fault), None, fault
        slot = self._take(bool(headers.get(AGENT_HEADER)))
        if isinstance(slot, str):
            return _Json(500, _error_body("api_error", slot), {}), slot, fault
        fault, taken = self._serve_turn(slot, fault)
        if not taken:
            assert fault is not None
            return _http_fault(fault), None, fault
        turn = slot.turn
        assert isinstance(turn, ModelTurn)  # `_take` serves model turns only
        message_id = f"msg_fake_{next(self._ids):04d}"
        blocks = message_blocks(turn, (f"toolu_fake_{next(self._ids):04d}" for _ in itertools.count()))
        if not stream:
            if fault is not None and fault.kind in ("cut_stream", "stall", "mid_stream_error"):
                return _unstreamed_fault(fault), None, fault
            empty, unfinished = fault is not None and fault.kind == "empty_stream", fault is not None
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [] if empty else blocks,
                "stop_reason": None if unfinished else _stop_reason(turn, blocks),
                "stop_sequence": None,
                "usage": _wire_usage(turn.usage),
            }
            return _Json(200, message, {}), None, fault
        cut = stream_fault(
            sse_events(message_id, model, turn, blocks),
            fault,
            without_finish=lambda events: [e for e in events if e["type"] not in ("message_delta", "message_stop")],
            error_event=lambda fault: _error_body("overloaded_error", fault.message or "Overloaded (fake)."),
        )
        delay = turn.chunk_delay + self._chunk_delay
        return _Sse(cut.events, delay, bedrock, cut.cut_after, cut.stall_after, cut.garbled_at), None, fault


def _refuse_credentials(headers: dict[str, str]) -> _Json | None:
    """The 401 Anthropic's API gives a request with neither an API key nor a bearer token."""
    token = headers.get("authorization", "")
    if headers.get("x-api-key") or (token.startswith("Bearer ") and len(token) > 7):
        return None
    return _Json(401, _error_body("authentication_error", "x-api-key header is required"), {})


def _unstreamed_fault(fault: Fault) -> _Reply:
    """What a stream fault does to a request that is not streamed (Claude Code's fallback after a broken
    stream is one): the connection dropped (`cut_stream`), silence (`stall`), or the error the stream
    would have carried, as the whole answer (`mid_stream_error`: 529 `overloaded_error`, or its `carries`).
    `empty_stream` and `no_finish` are answered as a message without content or without a `stop_reason`.
    Before, every one but `cut_stream` hung, and the CLI's fallback waited for an answer that never came."""
    if fault.kind == "cut_stream":
        return _Drop()
    if fault.kind == "stall":
        return _Hang()
    return _http_fault(fault.model_copy(update={"kind": fault.carries or "overloaded"}))


def _http_fault(fault: Fault) -> _Reply:
    if fault.kind == "no_headers":
        return _Hang()
    status, kind, message = _HTTP_FAULTS.get(fault.kind, _HTTP_FAULTS["server_error"])
    headers = {"retry-after": _seconds(fault.retry_delay)} if fault.kind == "rate_limit" else {}
    return _Json(status, _error_body(kind, fault.message or message), headers)


def _eventstream_frame(payload: bytes) -> bytes:
    """One AWS event-stream message of Bedrock's invoke-with-response-stream (a `chunk` event)."""
    headers = b""
    for name, value in ((":event-type", "chunk"), (":content-type", "application/json"), (":message-type", "event")):
        key, text = name.encode(), value.encode()
        headers += struct.pack(">B", len(key)) + key + b"\x07" + struct.pack(">H", len(text)) + text
    total = 12 + len(headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + headers + payload
    return message + struct.pack(">I", zlib.crc32(message) & 0xFFFFFFFF)


def _encode(event: JsonObject, bedrock: bool, number: int, garbled_at: int | None) -> bytes:
    """Event `number` of a stream on the wire (Bedrock's event-stream frame, else SSE), cut at `garbled_at`."""
    data = garbled(json.dumps(event), garbled_at, number)
    if bedrock:
        return _eventstream_frame(json.dumps({"bytes": base64.b64encode(data.encode()).decode()}).encode())
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


class _Server(FakeHTTPServer):
    fake: FakeAnthropic

    def __init__(self, fake: FakeAnthropic) -> None:
        super().__init__(fake, _Handler)


class _Handler(FakeHandler):
    server: _Server

    def do_HEAD(self) -> None:
        self._serve()

    def _drop(self) -> None:
        self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _write(self, reply: _Reply) -> None:
        fake = self.server.fake
        if isinstance(reply, _Hang):
            fake.stopping.wait()
            self.close_connection = True
            return
        if isinstance(reply, _Drop):
            self._drop()
            return
        if isinstance(reply, _Json):
            payload = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", f"req_fake_{id(reply) & 0xFFFFFF:06x}")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.amazon.eventstream" if reply.bedrock else "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, event in enumerate(reply.events):
            if n == reply.stall_after:
                self.wfile.flush()
                fake.stopping.wait()
                self.close_connection = True
                return
            if n == reply.cut_after:
                self._drop()  # no terminating chunk: the client sees a broken body
                return
            if reply.delay and fake.stopping.wait(reply.delay):  # the server stops: so does the stream
                self.close_connection = True
                return
            data = _encode(event, reply.bedrock, n, reply.garbled_at)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        if reply.stall_after is not None and reply.stall_after >= len(reply.events):
            fake.stopping.wait()
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")


publish("unified.testing", ["FakeAnthropic"], globals())
