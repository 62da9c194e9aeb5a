"""FakeOpenAI: a scripted OpenAI Responses API server on 127.0.0.1, for the real `codex` binary offline.

The same `Script` of model turns that `FakeGemini` plays (``ModelTurn``: thoughts, text, function calls,
usage, faults), rendered as the Responses API streams it (``POST {base_url}/responses``, server-sent
events ``response.created`` ... ``response.completed``), so one scenario stands behind every backend.
Like FakeGemini it is a real HTTP server in a background thread, records every request (secrets
redacted) and injects faults on cue. Codex speaks to it through a custom model provider
(``wire_api = "responses"``), which the codex backend generates from ``base_url`` and ``api_key``
(`unified.testing.backend_options_for(server, "codex")`).

The portable calls of the scenario vocabulary become the tools Codex offers (``gpt-5.5``, the model
whose bundled metadata gives the classic tool set: use it with this server):

| scenario call | what the fake model sends |
|---|---|
| ``read_file{file_path}`` | ``exec_command{"cmd": "cat <path>"}`` |
| ``list_directory{dir_path}`` / ``list_dir{path}`` | ``exec_command{"cmd": "ls <path>"}`` |
| ``run_shell_command{command}`` | ``exec_command{"cmd": <command>}`` |
| ``write_file{file_path, content}`` | the freeform ``apply_patch`` tool: ``*** Add File: <path>`` |
| ``invoke_agent{prompt}`` | ``multi_agent_v1.spawn_agent{"message": <prompt>}`` (a subagent) |
| ``complete_task{result}`` | the subagent's final message (its ``result.response`` text) |
| ``ask_user{questions}`` | ``request_user_input{"questions": [...]}`` |
| ``mcp__<server>__<tool>{...}`` | a function call in namespace ``mcp__<server>`` |
| any other name (``exec_command``, ``apply_patch{input}``, ...) | sent as it is |

A ``ModelTurn``'s ``server_tools`` of tool ``google_search`` are OpenAI's hosted web search: a
``web_search_call`` item each (``action {type: search, query}``, the query from ``arguments["query"]``
or the first of ``arguments["queries"]``), before the message, as the provider runs them on its side.
Codex shows them only with its ``web_search`` setting on (``CodexOptions.web_search``). Other tools
have no Responses API counterpart here and are refused.

Subagents: a spawn's child asks with a thread id of its own while the parent goes on, so the turns
after an ``invoke_agent`` up to its ``complete_task`` are the child's (taken by the first new thread
that asks after the spawn), and the parent's next request takes the turn after them. When the child
is done Codex asks the parent's model once more, with a ``<subagent_notification>`` input: that
request gets an empty answer and takes no turn of the script.

Faults (``ModelTurn.fault``, ``Script.request_faults``): ``rate_limit`` 429 ``rate_limit_exceeded``
with ``retry-after``; ``quota_exceeded`` 429 ``insufficient_quota``; ``unauthenticated`` 401
``invalid_api_key``; ``server_error`` 500; ``unavailable`` 503; ``bad_request`` 400;
``permission_denied`` 403; ``not_found`` 404 ``model_not_found`` (HTTP faults leave the turn queued);
``mid_stream_error`` a ``response.failed`` event after ``after`` events; ``cut_stream`` drops the
connection after ``after`` events; ``stall`` sends ``after`` events, then nothing until the server
stops; ``no_headers`` never answers; ``empty_stream`` a 200 with no event; ``no_finish`` the stream
without ``response.completed``.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import re
import shlex
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from unified._exports import publish
from unified.testing._scenario import Fault, FunctionCall, ModelTurn, ResponsesTurn, Script, ServerTool, Turn, Usage
from unified.testing._serving import (
    FakeHandler,
    FakeHTTPServer,
    Incoming,
    RecordedRequest,
    Route,
    ScriptedFake,
    Slot,
    garbled,
    stream_fault,
)

__all__ = ["CODEX_MODEL", "FAKE_OPENAI_KEY", "FakeOpenAI", "codex_call", "responses_events"]

CODEX_MODEL = "gpt-5.5"
"""The model to run Codex with against this server: its bundled metadata gives exec_command, apply_patch,
request_user_input and the deferred multi_agent_v1 namespace (an unknown slug gets other tools)."""
FAKE_OPENAI_KEY = "fake-openai-key"
_RESPONSES_PATH = re.compile(r"^(?:/[^/]+)*/responses/?$")
_MODELS_PATH = re.compile(r"^(?:/[^/]+)*/models/?$")
_HTTP_FAULTS: dict[str, tuple[int, str, str | None, str]] = {
    "rate_limit": (
        429,
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for requests. Please try again in {delay}.",
    ),
    "quota_exceeded": (
        429,
        "insufficient_quota",
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
    ),
    "unauthenticated": (401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    "server_error": (500, "server_error", None, "The server had an error while processing your request."),
    "unavailable": (503, "server_error", None, "The server is overloaded or not ready yet."),
    "bad_request": (400, "invalid_request_error", None, "Invalid request."),
    "permission_denied": (403, "invalid_request_error", None, "You are not allowed to sample from this model."),
    "not_found": (
        404,
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
}


# --- the scenario vocabulary on Codex's tools ---------------------------------------------------------


def _patch_add(path: str, content: str) -> str:
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return "*** Begin Patch\n*** Add File: " + path + "\n" + "".join(f"+{line}\n" for line in lines) + "*** End Patch\n"


def _questions(args: dict[str, Any]) -> list[dict[str, Any]]:
    questions = []
    for number, question in enumerate(args.get("questions") or []):
        if not isinstance(question, dict):
            continue
        options = [
            {"label": str(o.get("label", "")), "description": str(o.get("description", ""))}
            for o in question.get("options") or []
            if isinstance(o, dict)
        ]
        questions.append(
            {
                "id": str(question.get("id") or f"q{number}"),
                "header": str(question.get("header") or ""),
                "question": str(question.get("question") or ""),
                "options": options,
            }
        )
    return questions


def codex_call(call: FunctionCall) -> dict[str, Any]:
    """The Responses output item (without ids) that stands for a scenario call (see the module docstring):
    ``{"type": "function_call", "name", "namespace"?, "arguments": {...}}`` or
    ``{"type": "custom_tool_call", "name": "apply_patch", "input": text}``, or ``{"type": "message"}``
    for a subagent's ``complete_task``."""
    args = dict(call.args)
    name = call.name
    if name == "read_file":
        return {
            "type": "function_call",
            "name": "exec_command",
            "arguments": {"cmd": f"cat {shlex.quote(str(args.get('file_path', '')))}"},
        }
    if name in ("list_directory", "list_dir"):
        where = str(args.get("dir_path") or args.get("path") or ".")
        return {"type": "function_call", "name": "exec_command", "arguments": {"cmd": f"ls {shlex.quote(where)}"}}
    if name in ("run_shell_command", "shell"):
        return {"type": "function_call", "name": "exec_command", "arguments": {"cmd": str(args.get("command", ""))}}
    if name == "write_file":
        patch = _patch_add(str(args.get("file_path", "")), str(args.get("content", "")))
        return {"type": "custom_tool_call", "name": "apply_patch", "input": patch}
    if name == "apply_patch":
        return {"type": "custom_tool_call", "name": "apply_patch", "input": str(args.get("input", ""))}
    if name == "invoke_agent":
        message = str(args.get("prompt") or args.get("message") or "")
        return {
            "type": "function_call",
            "namespace": "multi_agent_v1",
            "name": "spawn_agent",
            "arguments": {"message": message},
        }
    if name == "complete_task":
        result = args.get("result")
        text = result.get("response") if isinstance(result, dict) else result
        return {"type": "message", "text": text if isinstance(text, str) else json.dumps(text)}
    if name == "ask_user":
        return {"type": "function_call", "name": "request_user_input", "arguments": {"questions": _questions(args)}}
    if name.startswith("mcp__") and name.count("__") >= 2:
        _, server, tool = name.split("__", 2)
        return {"type": "function_call", "namespace": f"mcp__{server}", "name": tool, "arguments": args}
    return {"type": "function_call", "name": name, "arguments": args}


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    out, start = [], 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out


def _usage(usage: Usage) -> dict[str, Any]:
    """Responses usage: input includes the cached tokens and the cache writes (`cache_write_tokens`, which Codex
    0.171 reads), output includes the reasoning tokens."""
    output = usage.output_tokens + usage.thinking_tokens
    details = {"cached_tokens": usage.cached_tokens}
    if usage.cache_creation_tokens:
        details["cache_write_tokens"] = usage.cache_creation_tokens
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": details,
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": usage.thinking_tokens},
        "total_tokens": usage.input_tokens + output,
    }


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _web_search_call(tool: ServerTool, item_id: str) -> dict[str, Any]:
    """A `server_tools` entry as the Responses API's hosted web search item."""
    if tool.tool != "google_search":
        raise ValueError(f"FakeOpenAI has no Responses API counterpart for the server tool {tool.tool!r}")
    queries = tool.arguments.get("queries") or [""]
    query = str(tool.arguments.get("query") or queries[0])
    return {"id": item_id, "type": "web_search_call", "action": {"type": "search", "query": query}}


def responses_events(turn: ModelTurn, *, response_id: str, model: str, ids: Iterable[int]) -> list[dict[str, Any]]:
    """A ModelTurn as the Responses API streams it: `response.created`, each output item (reasoning with
    summary deltas, the message with ``text_chunks`` deltas, the calls), `response.completed` with usage.
    A thought's ``signature`` is its reasoning item's ``encrypted_content`` (base64, as signatures travel)."""
    numbers = iter(ids)
    events: list[dict[str, Any]] = []
    response = {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": model,
        "output": [],
    }
    events.append({"type": "response.created", "response": response})
    events.append({"type": "response.in_progress", "response": response})
    done: list[dict[str, Any]] = []

    def add(item: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        index = len(done)
        empty = {"summary": [], "content": [], "arguments": "", "input": ""}
        initial = {key: (empty.get(key, value)) for key, value in item.items()}
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": {**initial, "status": "in_progress"}}
        )
        events.extend({**delta, "output_index": index, "item_id": item["id"]} for delta in deltas)
        final = {**item, "status": "completed"}
        events.append({"type": "response.output_item.done", "output_index": index, "item": final})
        done.append(final)

    for thought in turn.thoughts:
        item_id = f"rs_{next(numbers):06d}"
        deltas = [
            {
                "type": "response.reasoning_summary_part.added",
                "summary_index": 0,
                "part": {"type": "summary_text", "text": ""},
            }
        ]
        deltas += [
            {"type": "response.reasoning_summary_text.delta", "summary_index": 0, "delta": piece}
            for piece in _split(thought.text, 2)
        ]
        deltas.append({"type": "response.reasoning_summary_text.done", "summary_index": 0, "text": thought.text})
        signature = _b64(thought.signature) if thought.signature is not None else _b64(f"enc-{item_id}")
        item = {
            "id": item_id,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": thought.text}],
            "encrypted_content": signature,
        }
        add(item, deltas)
    for tool in turn.server_tools:
        add(_web_search_call(tool, f"ws_{next(numbers):06d}"), [])
    messages: list[str] = [turn.text] if turn.text else []
    calls: list[dict[str, Any]] = []
    for call in turn.function_calls:
        rendered = codex_call(call)
        if rendered["type"] == "message":
            messages.append(rendered["text"])
        else:
            calls.append({**rendered, "call_id": call.id or f"call_{next(numbers):06d}"})
    for text in messages:
        item_id = f"msg_{next(numbers):06d}"
        deltas = [
            {
                "type": "response.content_part.added",
                "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            }
        ]
        deltas += [
            {"type": "response.output_text.delta", "content_index": 0, "delta": piece}
            for piece in _split(text, turn.text_chunks)
        ]
        deltas.append({"type": "response.output_text.done", "content_index": 0, "text": text})
        part = {"type": "output_text", "text": text, "annotations": []}
        add({"id": item_id, "type": "message", "role": "assistant", "content": [part]}, deltas)
    for rendered_call in calls:
        item_id = f"fc_{next(numbers):06d}"
        call_item = rendered_call
        if call_item["type"] == "custom_tool_call":
            item = {
                "id": item_id,
                "type": "custom_tool_call",
                "name": call_item["name"],
                "call_id": call_item["call_id"],
                "input": call_item["input"],
            }
            add(item, [{"type": "response.custom_tool_call_input.delta", "delta": call_item["input"]}])
            continue
        arguments = json.dumps(call_item["arguments"])
        item = {
            "id": item_id,
            "type": "function_call",
            "name": call_item["name"],
            "call_id": call_item["call_id"],
            "arguments": arguments,
        }
        if call_item.get("namespace"):
            item["namespace"] = call_item["namespace"]
        add(item, [{"type": "response.function_call_arguments.delta", "delta": arguments}])
    completed = {**response, "status": "completed", "output": done}
    if turn.usage is not None:
        completed["usage"] = _usage(turn.usage)
    events.append({"type": "response.completed", "response": completed})
    return events


def _tells_of_a_subagent(payload: dict[str, Any]) -> bool:
    """Whether a request's last input is Codex's `<subagent_notification>` (a child thread finished)."""
    items = payload.get("input")
    if not isinstance(items, list) or not items or not isinstance(items[-1], dict):
        return False
    content = items[-1].get("content")
    texts = [p.get("text") for p in content if isinstance(p, dict)] if isinstance(content, list) else []
    return any(isinstance(t, str) and t.lstrip().startswith("<subagent_notification>") for t in texts)


def _error_body(kind: str, fault: Fault) -> tuple[int, dict[str, Any], dict[str, str]]:
    status, error_type, code, message = _HTTP_FAULTS.get(kind, _HTTP_FAULTS["server_error"])
    delay = fault.retry_delay
    text = fault.message or message.format(delay=delay)
    headers: dict[str, str] = {}
    if kind == "rate_limit":
        seconds = delay[:-1] if delay.endswith("s") else delay
        headers["retry-after"] = seconds
    return status, {"error": {"message": text, "type": error_type, "param": None, "code": code}}, headers


def _failed(response_id: str, fault: Fault) -> dict[str, Any]:
    """The `response.failed` event a `mid_stream_error` ends a stream with."""
    _status, error_body, _ = _error_body("server_error", fault)
    failed = {
        "id": response_id,
        "object": "response",
        "status": "failed",
        "error": {"code": "server_error", "message": error_body["error"]["message"]},
    }
    return {"type": "response.failed", "response": failed}


# --- the server --------------------------------------------------------------------------------------


@dataclass
class _Reply:
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    delay: float = 0.0
    cut_after: int | None = None
    stall_after: int | None = None
    garbled_at: int | None = None
    hang: bool = False


class FakeOpenAI(ScriptedFake[_Reply]):
    """A scripted OpenAI Responses server; use as ``with FakeOpenAI(script) as server:`` (or ``async with``).

    ``script`` is a `Script`, a list of turns or a path (`Script.from_file`). Point clients at
    :attr:`base_url` (it ends in ``/v1``, as ``OPENAI_BASE_URL`` does) with any bearer key, or the
    one given as ``api_key`` (another key is refused with a 401, as the API does).
    """

    _title = "FakeOpenAI"
    _secret_headers = frozenset({"authorization", "proxy-authorization", "cookie", "openai-api-key"})

    def __init__(
        self,
        script: Script | Iterable[Turn] | str | Path | None = None,
        *,
        chunk_delay: float = 0.0,
        api_key: str | None = None,
        port: int = 0,
        repeat: bool = False,
    ) -> None:
        self._api_key = api_key
        self._spawns = itertools.count(1)
        self._waiting_children: list[int] = []
        """Spawns whose child has not asked yet (their reservations, oldest first)."""
        self._children: dict[str, int] = {}
        """A child thread's id → its reservation."""
        self._threads: set[str] = set()
        """Every thread that asked (a new one after a spawn is its child)."""
        self._init_script(script, chunk_delay=chunk_delay, port=port, repeat=repeat)

    def _forget(self) -> None:
        self._spawns = itertools.count(1)  # the subagents spawned, and the threads seen, were the last script's
        self._waiting_children.clear()
        self._children.clear()
        self._threads.clear()

    # --- lifecycle ------------------------------------------------------------------------------------

    def _make_server(self) -> ThreadingHTTPServer:
        return _Server(self)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: what ``OPENAI_BASE_URL`` would say."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def env(self) -> dict[str, str]:
        """``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` pointing at this server (as the OpenAI SDKs read them)."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self._api_key or FAKE_OPENAI_KEY}

    # --- inspection -----------------------------------------------------------------------------------

    def model_requests(self) -> list[RecordedRequest]:
        """The `POST .../responses` requests (each a whole model call)."""
        return [r for r in self.requests if r.api_method == "responses"]

    # --- dispatch (handler threads) -------------------------------------------------------------------

    def _status(self, reply: _Reply) -> int:
        return reply.status

    def _route(self, request: Incoming, fault: Fault | None) -> Route[_Reply]:
        method, path, headers, body = request.method, request.path, request.headers, request.body
        if method == "GET" and _MODELS_PATH.match(path):
            return (
                "models",
                None,
                _Reply(body={"object": "list", "data": [{"id": CODEX_MODEL, "object": "model"}]}),
                None,
                None,
            )
        if not (method == "POST" and _RESPONSES_PATH.match(path)):
            reply = _Reply(
                404,
                {
                    "error": {
                        "message": f"FakeOpenAI has no route for {method} {path}",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
            return "unknown", None, reply, None, None
        payload = body if isinstance(body, dict) else {}
        model = payload.get("model") if isinstance(payload.get("model"), str) else None
        refusal = self._refuse(headers)
        if refusal is not None:
            return "responses", model, refusal, None, None
        if fault is not None and fault.is_http:
            return "responses", model, self._http_fault(fault), None, fault
        thread = headers.get("thread-id") or headers.get("session-id") or ""
        if _tells_of_a_subagent(payload):
            # Codex's own turn to tell the parent a child finished: an empty answer, no script turn
            events = responses_events(
                ModelTurn(), response_id=f"resp_{next(self._ids):06d}", model=model or CODEX_MODEL, ids=self._ids
            )
            return "responses", model, _Reply(events=events), None, None
        slot = self._take(thread)
        if slot is None:
            error = f"FakeOpenAI script exhausted: no turn left for POST {path}"
            return (
                "responses",
                model,
                _Reply(500, {"error": {"message": error, "type": "server_error", "param": None, "code": None}}),
                error,
                None,
            )
        fault, taken = self._serve_turn(slot, fault)
        if not taken:
            assert fault is not None
            return "responses", model, self._http_fault(fault), None, fault
        turn = slot.turn
        response_id = f"resp_{next(self._ids):06d}"
        problem: str | None = None
        if isinstance(turn, ResponsesTurn):
            events = [dict(event) for event in turn.events]
        elif isinstance(turn, ModelTurn):
            try:
                events = responses_events(turn, response_id=response_id, model=model or CODEX_MODEL, ids=self._ids)
            except ValueError as exc:  # a server tool the Responses API has no counterpart for
                problem = str(exc)
            else:
                self._reserve_children(turn, slot)
        else:
            problem = f"FakeOpenAI cannot serve a {turn.kind} turn"
        if problem is not None:
            return (
                "responses",
                model,
                _Reply(500, {"error": {"message": problem, "type": "server_error", "param": None, "code": None}}),
                problem,
                None,
            )
        cut = stream_fault(
            events,
            fault,
            without_finish=lambda events: [e for e in events if e["type"] != "response.completed"],
            error_event=lambda fault: _failed(response_id, fault),
        )
        delay = turn.chunk_delay + self._chunk_delay
        reply = _Reply(
            events=cut.events,
            delay=delay,
            cut_after=cut.cut_after,
            stall_after=cut.stall_after,
            garbled_at=cut.garbled_at,
        )
        return "responses", model, reply, None, fault

    def _refuse(self, headers: dict[str, str]) -> _Reply | None:
        auth = headers.get("authorization", "")
        key = auth[7:].strip() if auth.lower().startswith("bearer ") else ""
        if key and (self._api_key is None or key == self._api_key):
            return None
        message = (
            "You didn't provide an API key. You need to provide your API key in an Authorization header using "
            "Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            if not key
            else "Incorrect API key provided."
        )
        return _Reply(
            401,
            {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None if not key else "invalid_api_key",
                }
            },
        )

    def _http_fault(self, fault: Fault) -> _Reply:
        if fault.kind == "no_headers":
            return _Reply(hang=True)
        status, body, headers = _error_body(fault.kind, fault)
        return _Reply(status, body, headers)

    def _take(self, thread: str) -> Slot | None:
        """The slot for a request of `thread`: a child's reservation, or the main thread's next turn."""
        owner = self._children.get(thread)
        if thread and thread not in self._threads and self._waiting_children:
            owner = self._waiting_children.pop(0)  # a thread never seen, after a spawn: the child
            self._children[thread] = owner
        if thread:
            self._threads.add(thread)
        if self._again and not self._slots:
            self._play_again()
        for slot in self._slots:
            if slot.owner == owner:
                return slot
        return None

    def _reserve_children(self, turn: ModelTurn, slot: Slot) -> None:
        """A spawn's child takes the turns after it, up to the one that completes its task."""
        for call in turn.function_calls:
            if call.name != "invoke_agent":
                continue
            number = next(self._spawns)
            self._waiting_children.append(number)
            for later in self._slots:
                if later.owner is not None or later is slot:
                    continue
                later.owner = number
                if isinstance(later.turn, ModelTurn) and any(
                    c.name == "complete_task" for c in later.turn.function_calls
                ):
                    break


class _Server(FakeHTTPServer):
    fake: FakeOpenAI

    def __init__(self, fake: FakeOpenAI) -> None:
        super().__init__(fake, _Handler)


class _Handler(FakeHandler):
    server: _Server

    def _write(self, reply: _Reply) -> None:
        fake = self.server.fake
        if reply.hang:
            fake.stopping.wait()
            self.close_connection = True
            return
        if reply.body is not None:
            payload = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
            return
        # An event stream ends when the connection closes, as the API's does.
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()
        for number, event in enumerate(reply.events):
            if number == reply.stall_after:
                fake.stopping.wait()
                return
            if number == reply.cut_after:
                self.wfile.flush()
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            if reply.delay and fake.stopping.wait(reply.delay):
                return
            data = {**event, "sequence_number": number}
            text = garbled(json.dumps(data), reply.garbled_at, number)
            self.wfile.write(f"event: {event['type']}\ndata: {text}\n\n".encode())
            self.wfile.flush()
        if reply.stall_after is not None and reply.stall_after >= len(reply.events):
            fake.stopping.wait()


publish("unified.testing", ["FakeOpenAI", "codex_call", "responses_events"], globals())
