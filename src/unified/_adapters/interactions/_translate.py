"""Interactions API stream → UnifiedEvents, as a pure state machine over wire-shaped dicts.

The translator sees plain JSON (what the SDK's events dump to, or an `UnknownInteractionSSEEvent`'s
`raw`), never SDK objects: it stays testable with synthesized sequences and survives SDK type churn.
It does no I/O; the loop feeds it events and acts on the signals it returns (run these function
calls, report this usage, the interaction ended with this status).

Two dialects arrive on the wire. The current one (`interaction.created`, `interaction.status_update`,
`step.start` / `step.delta` / `step.stop`, `interaction.completed`, `error`) and the deprecated one
(`interaction.start`, `content.start` / `content.delta` / `content.stop`, `interaction.complete`),
which is renamed into the current one first and then handled by the same code.

An image the model generates (an image delta of a model_output step, or an image part of one) is an
`image_output` event with its bytes (or its uri); other media have no event kind: each is said by an
`output_not_shown` warning naming its type and size, as generate-content says it. Either stays on the
server's interaction.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from unified import _limits as limits
from unified._internal.api_errors import UNFIT_ERRORS as _UNFIT
from unified._internal.api_errors import unfit_response
from unified._internal.call_ids import shown_id
from unified._internal.counts import api_usage
from unified._redaction import clip
from unified._text import json_type
from unified.errors import BackendError
from unified.events import (
    ImageOutput,
    JsonValue,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    Usage,
    WarningEvent,
    _event_builder,
    tool_output_text,
)

# The events this module builds per native message, each by a builder written for the fields it is given
# (`_event_builder`).
_text_delta = _event_builder(TextDelta.model_construct, "text")
_thinking = _event_builder(Thinking.model_construct, "text", "replace", "signature")
_tool_use = _event_builder(ToolUse.model_construct, "tool_use_id", "name", "input", "server_side")
_tool_result = _event_builder(ToolResult.model_construct, "tool_use_id", "output", "data", "is_error", "server_side")


__all__ = [
    "TERMINAL_STATUSES",
    "UNPARSED_ARGUMENTS",
    "FunctionCall",
    "InteractionsTranslator",
    "Signal",
    "StatusChange",
    "StreamFailure",
    "server_tool_name",
    "translate",
    "usage_from_wire",
]

_LEGACY_EVENTS = {
    "interaction.start": "interaction.created",
    "interaction.complete": "interaction.completed",
    "content.start": "step.start",
    "content.delta": "step.delta",
    "content.stop": "step.stop",
}
_LEGACY_STEP_TYPES = {"text": "model_output"}
"""Legacy `content.start` names content blocks by their content type; a text block is a model_output step."""

UNPARSED_ARGUMENTS = "_unparsed_arguments"
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "incomplete", "budget_exceeded"})
_CLIENT_STEPS = frozenset({"function_call", "function_result", "user_input", "model_output", "thought"})
_MEDIA_DELTAS = frozenset({"image", "audio", "video", "document"})


def _media(media: Mapping[str, Any]) -> ImageOutput | WarningEvent:
    """Media the model generated: an image is an `image_output` (its bytes, or its uri); anything else, or an
    image whose base64 cannot be read, is said by a warning naming its type and size, or its uri."""
    data = media.get("data")
    if media.get("type") == "image":
        mime_type = str(media.get("mime_type") or "image")
        uri = media.get("uri") if isinstance(media.get("uri"), str) else None
        if isinstance(data, str) and data:
            with contextlib.suppress(ValueError):  # not base64: said by the warning below
                image = base64.b64decode(data)
                return ImageOutput.model_construct(mime_type=mime_type, data=image, size_bytes=len(image))
        elif uri is not None:
            return ImageOutput.model_construct(mime_type=mime_type, uri=uri)
    what = str(media.get("mime_type") or media.get("type") or "media")
    if isinstance(data, str) and data:
        what += f" ({len(data) * 3 // 4 - data[-2:].count('=')} bytes)"  # the size base64 `data` decodes to
    elif isinstance(media.get("uri"), str):
        what += f" at {media['uri']}"
    message = (
        f"the model generated {what}, which no event carries: it is kept in the interaction on the server, not shown"
    )
    return WarningEvent.model_construct(code="output_not_shown", message=message)


_CITATION_TOOLS = {"file_citation": "file_search", "place_citation": "google_maps", "url_citation": "google_search"}
"""The built-in tool whose results a text annotation cites."""


@dataclass(frozen=True)
class FunctionCall:
    """A client-side call the loop must run before the interaction can continue."""

    id: str
    """As the stream shows it (`call_ids.shown_id`)."""
    name: str
    arguments: dict[str, Any]
    server_id: str = field(default="", compare=False)
    """The id the server gave it, which its `function_result` must carry ("": `id`); the same call whatever it is."""


@dataclass(frozen=True)
class StatusChange:
    """The interaction's status moved (from a status update or the completed event)."""

    interaction_id: str | None
    status: str
    continuation_token: str | None = None


@dataclass(frozen=True)
class StreamFailure:
    """An `error` event: the API reports a failure in-band instead of an HTTP status."""

    code: str
    message: str
    error: Mapping[str, Any] | None = field(default=None, compare=False)
    """The event's whole `error` (its `details`: a 429's `google.rpc.RetryInfo`, read as the HTTP body's is)."""


Signal = UnifiedEvent | FunctionCall | StatusChange | StreamFailure


_USAGE_FIELDS = (
    ("input_tokens", "total_input_tokens"),
    ("output_tokens", "total_output_tokens"),
    ("thinking_tokens", "total_thought_tokens"),
    ("cached_tokens", "total_cached_tokens"),
    ("tool_use_tokens", "total_tool_use_tokens"),
)
"""Our Usage field ← the API's `usage` field."""
_USAGE_NAMES = (
    "total_input_tokens",
    "total_output_tokens",
    "total_thought_tokens",
    "total_cached_tokens",
    "total_tool_use_tokens",
)
"""The API's fields of `_USAGE_FIELDS`, in `api_usage`'s order."""


def _kind_of(event: Any) -> str:
    kind = event.get("event_type") or event.get("type") if isinstance(event, Mapping) else None
    return clip(repr(kind), 60) if isinstance(kind, str) else "malformed"


def _why(exc: BaseException) -> str:
    return clip(f"{type(exc).__name__}: {exc}", 300)


_EVENT_FIELDS = {
    "index": int,
    "delta": dict,
    "step": dict,
    "content": dict,
    "interaction": dict,
    "metadata": dict,
    "error": dict,
    "usage": dict,
}
"""The shape of an event's fields (when they are there; a null one is absent, but for `index`)."""


def _misfit(event: Any, exc: BaseException) -> str:
    """What did not fit (the error path only): the first field of the event of the wrong shape, else what the
    reading raised (a field further in)."""
    if isinstance(event, Mapping):
        for key, kind in _EVENT_FIELDS.items():
            value = event.get(key)
            present = key in event and (value is not None or key == "index")
            if present and (not isinstance(value, kind) or isinstance(value, bool)):
                return f"its `{key}` is {json_type(value)}, not {'an integer' if kind is int else 'an object'}"
    return _why(exc)


def usage_from_wire(raw: object) -> Usage:
    """The API's `usage` object → our Usage (input includes cached tokens, as the API counts them)."""
    return api_usage(raw, _USAGE_NAMES)  # one that is no count is 0, the usage flagged: the answer is kept


def server_tool_name(step: Mapping[str, Any]) -> str:
    """`google_search_call` → `google_search`; MCP calls are named `server/tool`."""
    kind = str(step.get("type", ""))
    if kind.startswith("mcp_server_tool"):
        server, name = step.get("server_name"), step.get("name")
        if server and name:
            return f"{server}/{name}"
        return str(name or server or "mcp")
    return kind.removesuffix("_call").removesuffix("_result")


@dataclass
class _Step:
    """One step being assembled from its start, deltas and stop."""

    data: dict[str, Any]
    text: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    annotations: list[JsonValue] = field(default_factory=list)
    closed: bool = False

    @property
    def type(self) -> str:
        return str(self.data.get("type", ""))

    def wire(self) -> dict[str, Any]:
        """The finished step as the API would list it (what `store=false` mode resends)."""
        out = dict(self.data)
        if self.type == "model_output":
            content = [dict(part) for part in out.get("content") or []]
            if self.text:
                part: dict[str, Any] = {"type": "text", "text": "".join(self.text)}
                if self.annotations:
                    part["annotations"] = list(self.annotations)
                content.append(part)
            out["content"] = content
        elif self.type == "thought" and self.thoughts:
            summary = list(out.get("summary") or [])
            summary.append({"type": "text", "text": "".join(self.thoughts)})
            out["summary"] = summary
        elif self.type == "function_call":
            out["arguments"] = self.call_arguments()
        return out

    def call_arguments(self) -> dict[str, Any]:
        """Arguments given whole in step.start, merged with any streamed `arguments_delta` JSON."""
        given = self.data.get("arguments")
        merged: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
        if given is not None and not isinstance(given, dict):
            merged[UNPARSED_ARGUMENTS] = clip(json.dumps(given, default=str), 1000)  # an array, a number, ...
        if self.arguments:
            text = "".join(self.arguments)
            try:
                streamed = json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                streamed = {UNPARSED_ARGUMENTS: clip(text, 1000)}  # the tool rejects it and the model reads why
            if isinstance(streamed, dict):
                merged.update(streamed)
            else:  # JSON, but an array, a string, a number: dropped, the call ran with no arguments and no word why
                merged[UNPARSED_ARGUMENTS] = clip(text, 1000)
        return merged


_TEXT_STEPS = ("model_output", "thought")
"""Steps a text delta may continue (a delta of any other step makes it model output). A tuple: the
step's type is the server's JSON, maybe a list, which a set could not even look up."""


class InteractionsTranslator:
    """Feeds on one conversation's events (several interactions) and returns what they mean.

    Stateful only as far as a stream is: open steps by index, ids already announced as `tool_use`,
    the latest usage. Resuming a dropped stream feeds the same translator, so a step cut in the middle
    continues where it stopped.
    """

    def __init__(self) -> None:
        self.interaction_id: str | None = None
        self.status: str | None = None
        self.continuation_token: str | None = None
        self.usage = Usage()
        self.steps: dict[int, _Step] = {}
        self.announced: set[str] = set()
        self.answered: set[str] = set()
        self.calls: list[FunctionCall] = []
        self.legacy = False
        self.chars_seen = 0

    # -- per interaction -------------------------------------------------------------------------

    def begin_interaction(self) -> None:
        """Forget the previous interaction's steps, calls and usage; keep the announced tool ids."""
        self.interaction_id = None
        self.status = None
        self.continuation_token = None
        self.usage = Usage()
        self.steps = {}
        self.calls = []
        self.chars_seen = 0

    def _spend(self, chars: int) -> None:
        """Bound the text one interaction may bring (answer, thoughts and streamed arguments)."""
        self.chars_seen += chars
        if self.chars_seen > limits.MAX_TURN_TEXT_CHARS:
            raise BackendError(
                f"the interaction sent more than {limits.MAX_TURN_TEXT_CHARS:,} characters of text; it was not used",
                hint="the server's answer is larger than unified accepts (limits.MAX_TURN_TEXT_CHARS)",
            )

    def _count_step(self) -> None:
        """Bound the steps one interaction may bring (checked as each one starts)."""
        if len(self.steps) > limits.MAX_PARTS_PER_TURN:
            raise BackendError(
                f"the interaction sent more than {limits.MAX_PARTS_PER_TURN:,} steps; it was not used",
                hint="the server's answer is larger than unified accepts (limits.MAX_PARTS_PER_TURN)",
            )

    def model_steps(self) -> list[dict[str, Any]]:
        """This interaction's finished steps in order (thoughts keep their signatures)."""
        try:
            return [self.steps[i].wire() for i in sorted(self.steps)]
        except _UNFIT as exc:  # a step's `content` or `summary` that is no list of objects
            raise unfit_response(f"a step: {_why(exc)}") from exc

    # -- events ----------------------------------------------------------------------------------

    def feed(self, event: Mapping[str, Any]) -> list[Signal]:
        """The signals of one streamed event. The event's JSON is read without validation (the hot path): a
        field of the wrong shape is the server's fault, a typed error (`unfit_response`) naming the event and
        what did not fit, never an exception of this module's own."""
        try:
            kind = event.get("event_type") or event.get("type") or ""
            if kind == "step.delta":  # the bulk of every stream, first
                metadata = event.get("metadata")
                if metadata:
                    self._track_usage(metadata.get("total_usage"))
                return self._delta(int(event.get("index", 0)), event.get("delta") or {})
            if kind.__class__ is not str:
                kind = str(kind)
            if kind in _LEGACY_EVENTS:
                self.legacy = True
                kind = _LEGACY_EVENTS[kind]
            if kind == "interaction.created":
                return self._interaction(event.get("interaction") or {}, final=False)
            if kind == "interaction.status_update":
                return self._status(event.get("interaction_id"), event.get("status"), event.get("continuation_token"))
            if kind == "step.start":
                return self._start(int(event.get("index", 0)), event.get("step") or event.get("content") or {})
            if kind == "step.delta":
                self._track_usage((event.get("metadata") or {}).get("total_usage"))
                return self._delta(int(event.get("index", 0)), event.get("delta") or {})
            if kind == "step.stop":
                self._track_usage(event.get("usage"))
                return self._stop(int(event.get("index", 0)))
            if kind == "interaction.completed":
                return self._interaction(event.get("interaction") or {}, final=True)
            if kind == "error" or (not kind and isinstance(event.get("error"), Mapping)):
                # No kind but an `error`: a google.rpc.Status envelope, as a Google front end sends in a stream that
                # fails after its headers. It was skipped as an unknown kind: the run ended "the interaction stream
                # dropped", the server's words and code (a 429's quota) lost. Its `status` names the code.
                error = event.get("error") or {}
                code = error.get("status") if isinstance(error.get("status"), str) and not kind else error.get("code")
                return [StreamFailure(str(code or "error"), str(error.get("message") or "unknown error"), error)]
            return []  # unknown kinds (future additions) are skipped: never fatal
        except _UNFIT as exc:
            raise unfit_response(f"the {_kind_of(event)} event: {_misfit(event, exc)}") from exc

    def feed_interaction(self, resource: Mapping[str, Any]) -> list[Signal]:
        """A whole Interaction (a polled background run, a non-streamed create) as if it had streamed."""
        try:
            final = resource.get("status") in TERMINAL_STATUSES or resource.get("status") == "requires_action"
            head = {k: v for k, v in resource.items() if k != "steps" and not (final and k == "status")}
            out: list[Signal] = self._interaction(head, final=False)
            for index, step in enumerate(resource.get("steps") or []):
                if index in self.steps:
                    continue  # already seen on an earlier poll
                out += self._start(index, step)
                out += self._stop(index)
            if final:
                out += self._interaction(resource, final=True)
            return out
        except _UNFIT as exc:
            raise unfit_response(f"an interaction: {_why(exc)}") from exc

    # -- internals -------------------------------------------------------------------------------

    def _interaction(self, interaction: Mapping[str, Any], *, final: bool) -> list[Signal]:
        if interaction.get("id"):
            self.interaction_id = str(interaction["id"])
        if final:
            out: list[Signal] = []
            for index in sorted(self.steps):
                out += self._stop(index)  # a stream that never closed a step still ends it
            if interaction.get("usage"):
                self.usage = usage_from_wire(interaction["usage"])  # the interaction's own total wins
            status = interaction.get("status")
            if status:
                out += self._status(self.interaction_id, status, interaction.get("continuation_token"))
            return out
        status = interaction.get("status")
        return self._status(self.interaction_id, status, None) if status else []

    def _status(self, interaction_id: Any, status: Any, token: Any) -> list[Signal]:
        if interaction_id:
            self.interaction_id = str(interaction_id)
        if token:
            self.continuation_token = str(token)
        if not status or status == self.status:
            return []
        self.status = str(status)
        return [StatusChange(self.interaction_id, self.status, self.continuation_token)]

    def _track_usage(self, raw: Any) -> None:
        """Step usage is the interaction's running total: keep the largest figure of each field."""
        if raw.__class__ is not dict and not isinstance(raw, Mapping):
            return
        current = self.usage.__dict__
        seen = usage_from_wire(raw)
        figures = seen.__dict__
        if not seen.estimated and all(figures[ours] <= current[ours] for ours, _ in _USAGE_FIELDS):
            return  # no figure grew: the usage kept is still the largest
        self.usage = Usage.model_construct(
            input_tokens=max(self.usage.input_tokens, seen.input_tokens),
            output_tokens=max(self.usage.output_tokens, seen.output_tokens),
            thinking_tokens=max(self.usage.thinking_tokens, seen.thinking_tokens),
            cached_tokens=max(self.usage.cached_tokens, seen.cached_tokens),
            tool_use_tokens=max(self.usage.tool_use_tokens, seen.tool_use_tokens),
            estimated=self.usage.estimated or seen.estimated,
        )

    def _start(self, index: int, step: Mapping[str, Any]) -> list[Signal]:
        data = dict(step)
        data["type"] = _LEGACY_STEP_TYPES.get(str(data.get("type", "")), data.get("type", ""))
        current = _Step(data)
        self.steps[index] = current
        self._count_step()
        out: list[Signal] = []
        kind = current.type
        if kind == "model_output":
            for part in data.get("content") or []:
                if isinstance(part, Mapping) and part.get("type") == "text" and part.get("text"):
                    out.append(_text_delta(text=str(part["text"])))
                elif isinstance(part, Mapping) and part.get("type") in _MEDIA_DELTAS:
                    out.append(_media(part))
        elif kind == "thought":
            for part in data.get("summary") or []:
                if isinstance(part, Mapping) and part.get("text"):
                    out.append(_thinking(text=str(part["text"]), replace=False))
        elif kind == "text" and data.get("text"):  # a legacy text block may start with its text
            out.append(_text_delta(text=str(data["text"])))
        return out

    def _delta(self, index: int, delta: Mapping[str, Any]) -> list[Signal]:
        current = self.steps.get(index)
        if current is None:  # a delta without a start (legacy streams may skip content.start)
            current = self.steps[index] = _Step({"type": _delta_step_type(delta)})
            self._count_step()
        kind = delta.get("type", "")
        if kind == "text":  # the bulk of every stream: _spend inline
            if current.data.get("type") not in _TEXT_STEPS:
                current.data["type"] = "model_output"
            text = delta.get("text") or ""
            if text.__class__ is not str:
                text = str(text)
            self.chars_seen += len(text)
            if self.chars_seen > limits.MAX_TURN_TEXT_CHARS:
                self._spend(0)
            current.text.append(text)
            return [_text_delta(text=text)] if text else []
        kind = str(kind)
        if kind == "thought_summary":
            content = delta.get("content") or {}
            text = str(content.get("text") or "") if isinstance(content, Mapping) else ""
            self._spend(len(text))
            current.thoughts.append(text)
            return [_thinking(text=text, replace=False)] if text else []
        if kind == "thought_signature":
            if delta.get("signature"):
                current.data["signature"] = delta["signature"]
            return []
        if kind == "arguments_delta":
            piece = str(delta.get("arguments") or delta.get("partial_arguments") or "")
            self._spend(len(piece))
            current.arguments.append(piece)
            return []
        if kind == "text_annotation_delta":
            current.annotations.extend(delta.get("annotations") or [])
            return []
        if kind in _MEDIA_DELTAS:
            current.data.setdefault("media", []).append(dict(delta))
            return [_media(delta)]
        _merge(current.data, delta)
        return []

    def _stop(self, index: int) -> list[Signal]:
        current = self.steps.get(index)
        if current is None or current.closed:
            return []
        current.closed = True
        data, kind = current.data, current.type
        if kind == "thought" and data.get("signature"):
            return [_thinking(text="", replace=False, signature=str(data["signature"]))]
        if kind == "function_call":
            server_id = str(data.get("id") or f"call_{self.interaction_id}_{index}")
            call = FunctionCall(
                id=self._unique(shown_id(server_id)),
                name=str(data.get("name") or ""),
                arguments=current.call_arguments(),
                server_id=server_id,
            )
            self.calls.append(call)
            return [*self._announce(call.id, call.name, call.arguments, server_side=False), call]
        if kind == "model_output" and current.annotations:
            return self._citations(index, current.annotations)
        if kind in _CLIENT_STEPS:
            return []
        if kind.endswith("_call"):
            call_id = shown_id(str(data.get("id") or f"{kind}_{self.interaction_id}_{index}"))
            return self._announce(call_id, server_tool_name(data), _server_input(data), server_side=True)
        if kind.endswith("_result"):
            call_id = shown_id(str(data.get("call_id") or data.get("id") or f"{kind}_{self.interaction_id}_{index}"))
            if call_id in self.answered:
                return []
            out: list[Signal] = []
            if call_id not in self.announced:  # a result whose call the stream never showed
                out += self._announce(call_id, server_tool_name(data), {}, server_side=True)
            self.answered.add(call_id)
            output = data.get("result", {k: v for k, v in data.items() if k not in ("type", "call_id", "signature")})
            out.append(_result(call_id, output, is_error=bool(data.get("is_error"))))
            return out
        return []

    def _citations(self, index: int, annotations: list[JsonValue]) -> list[Signal]:
        """A model output's citations, as generateContent's grounding metadata is shown: one server-side
        pair per tool cited (`file_citation` → file_search, `place_citation` → google_maps,
        `url_citation` → google_search), the annotations in the result's data."""
        cited: dict[str, list[JsonValue]] = {}
        for annotation in annotations:
            tool = _CITATION_TOOLS.get(str(annotation.get("type"))) if isinstance(annotation, Mapping) else None
            if tool is not None:
                cited.setdefault(tool, []).append(annotation)
        out: list[Signal] = []
        for tool, found in cited.items():
            call_id = f"{tool}_citations_{self.interaction_id}_{index}"
            out += self._announce(call_id, tool, {}, server_side=True)
            self.answered.add(call_id)
            out.append(_result(call_id, {"annotations": found}))
        return out

    def _unique(self, call_id: str) -> str:
        """`call_id`, or when a call of that id was shown already (the server gave two calls one id) `<id>_<n>`:
        the second call ran with no `tool_use` of its own (a write shown as the read before it, round 10)."""
        if call_id not in self.announced:
            return call_id
        n = 2
        while f"{call_id}_{n}" in self.announced:
            n += 1
        return f"{call_id}_{n}"

    def _announce(self, call_id: str, name: str, arguments: dict[str, Any], *, server_side: bool) -> list[Signal]:
        if call_id in self.announced:
            return []
        if limits.too_deep(arguments):
            raise BackendError(
                f"the model called {name!r} with arguments nested deeper than {limits.MAX_JSON_DEPTH} levels; "
                "the call was not run",
                hint="the model's output is malformed; run again",
            )
        self.announced.add(call_id)
        return [_tool_use(tool_use_id=call_id, name=name, input=arguments, server_side=server_side)]


def _result(tool_use_id: str, output: Any, *, is_error: bool = False) -> ToolResult:
    """A server-side tool's result: its output as text, the structure in `data` (the normal form)."""
    text, data = tool_output_text(output)
    return _tool_result(tool_use_id=tool_use_id, output=text, data=data, is_error=is_error, server_side=True)


def _server_input(step: Mapping[str, Any]) -> dict[str, Any]:
    arguments = step.get("arguments")
    out: dict[str, Any] = dict(arguments) if isinstance(arguments, Mapping) else {}
    for key in ("search_type", "server_name"):
        if step.get(key):
            out.setdefault(key, step[key])
    return out


def _delta_step_type(delta: Mapping[str, Any]) -> str:
    kind = str(delta.get("type", ""))
    if kind in ("text", "text_annotation_delta"):
        return "model_output"
    if kind in ("thought_summary", "thought_signature"):
        return "thought"
    if kind == "arguments_delta":
        return "function_call"
    return kind


def _merge(data: dict[str, Any], delta: Mapping[str, Any]) -> None:
    """Fold a typed delta (a server tool's call or result, a legacy function_call) into its step."""
    for key, value in delta.items():
        if key == "type":
            if not data.get("type"):
                data["type"] = value
            continue
        old = data.get(key)
        if isinstance(old, dict) and isinstance(value, Mapping):
            old.update(value)
        elif isinstance(old, list) and isinstance(value, list):
            old.extend(value)
        elif key == "result" and isinstance(old, str) and isinstance(value, str):
            data[key] = old + value
        else:
            data[key] = value


def translate(events: Iterable[Mapping[str, Any]]) -> list[Signal]:
    """Translate a whole recorded stream at once (tests, cassettes, replays)."""
    translator = InteractionsTranslator()
    return [signal for event in events for signal in translator.feed(event)]
