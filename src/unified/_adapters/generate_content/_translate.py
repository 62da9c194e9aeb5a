"""GenerateContentResponse chunks → UnifiedEvents, for one model turn. Pure: no I/O, no clock.

The chunks are wire JSON (`json.loads` of each SSE event, camelCase keys: `_stream.py`), read once;
google-genai's model of a chunk is never built on the hot path, only for what is rare (grounding
metadata, the history's `Content` at the end of the turn). A `types.GenerateContentResponse` is
accepted too and read as its wire JSON.

Thinking semantics: in every real recording we have (`unified.testing.recordings()`), each
thought part is a complete summary (`**Subject**\\n\\nbody`), and the next thought part is a new
summary, not a continuation of the previous one. So each thought part becomes one
`thinking(replace=True)` event whose `subject` is the bold heading.

The translator also keeps what the loop needs after the stream: the model's parts as received (to
echo them back with their thought signatures), the function calls, the finish reason and the usage
of the last chunk that carried any.

Function calls are announced once the next part that is not a call arrives (or the stream ends):
- arguments streamed in pieces (Vertex `streamFunctionCallArguments`: a call with `willContinue`,
  then `partialArgs` pieces, then an empty call) are assembled into one call with its full
  arguments, kept in the history as one ordinary call (the Developer API client rejects the pieces);
- a call the server answers itself in the same turn (a `functionResponse` in the model's output:
  server-side MCP) is a server-side tool use, never a local call.
A generated image (`inlineData` of an `image/` type in the output) is an `image_output` event with its
bytes, and stays in the history; other media have no event kind: an `output_not_shown` warning says so
(docs/capabilities.md, image_output).
"""

from __future__ import annotations

import base64
import copy
import enum
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.genai import _common, types
from pydantic import ConfigDict, TypeAdapter

from unified import _limits as limits
from unified._adapters.generate_content._shapes import CANDIDATE, CHUNK, misfit
from unified._internal.api_errors import UNFIT_ERRORS as _UNFIT
from unified._internal.api_errors import unfit_response
from unified._internal.call_ids import shown_id
from unified._internal.counts import api_usage
from unified._text import json_type
from unified.errors import BackendError
from unified.events import (
    ERROR_CODES,
    ErrorEvent,
    ImageOutput,
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
_thinking = _event_builder(Thinking.model_construct, "text", "replace", "subject", "signature")
_tool_use = _event_builder(ToolUse.model_construct, "tool_use_id", "name", "input", "server_side")
_tool_result = _event_builder(ToolResult.model_construct, "tool_use_id", "output", "data", "is_error", "server_side")


__all__ = [
    "GenerateContentTranslator",
    "LocalCall",
    "Wire",
    "b64",
    "grounding_sources",
    "server_tool_name",
    "split_subject",
    "usage_from_metadata",
    "wire_bytes",
]

Wire = dict[str, Any]
"""One JSON object as the API sent it (camelCase keys, bytes as base64 text)."""

_SUBJECT = re.compile(r"^\s*\*\*(?P<subject>[^*\n]+)\*\*\s*")

_OK_FINISH = {"STOP", "FINISH_REASON_UNSPECIFIED", "CONTINUATION"}
_WARN_FINISH = {"MAX_TOKENS", "OTHER", "LANGUAGE"}
_RETRY_FINISH = {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "MALFORMED_RESPONSE"}
"""The model botched the turn itself: asking again usually works (the Gemini CLI retries these too)."""
_FINISH_TEXT = {
    "MAX_TOKENS": "the answer was cut off at the output token limit (raise max_output_tokens)",
    "SAFETY": "the answer was blocked by the safety filters",
    "RECITATION": "the answer was blocked for reciting copyrighted material",
    "BLOCKLIST": "the answer contained a blocklisted term",
    "PROHIBITED_CONTENT": "the answer was blocked as prohibited content",
    "SPII": "the answer was blocked for containing sensitive personal information",
    "MALFORMED_FUNCTION_CALL": "the model produced a function call that could not be parsed",
    "UNEXPECTED_TOOL_CALL": "the model called a tool that was not offered",
    "TOO_MANY_TOOL_CALLS": "the model made too many tool calls in one turn",
    "MISSING_THOUGHT_SIGNATURE": "the history sent lacks a thought signature the model requires",
    "LANGUAGE": "the model stopped: unsupported language",
    "OTHER": "the model stopped for an unspecified reason",
}


def b64(data: bytes | None) -> str | None:
    return base64.b64encode(data).decode("ascii") if data else None


_BYTES: TypeAdapter[bytes] = TypeAdapter(bytes, config=ConfigDict(val_json_bytes="base64"))
"""Reads base64 text as google-genai's models do (standard or URL-safe alphabet)."""


def wire_bytes(text: Any) -> bytes | None:
    """A wire bytes field (base64 text) as the bytes google-genai's model would hold."""
    return _BYTES.validate_python(text) if isinstance(text, str) and text else None


def _enum(kind: type[enum.Enum], value: Any) -> str | None:
    """A wire enum value as google-genai's enum reads it (case-insensitive; unknown values kept, without the
    `UserWarning` its `_missing_` prints to the host's stderr for a value newer than the SDK: ours is an event)."""
    if value is None:
        return None
    if value in kind._value2member_map_:
        return str(value)
    if isinstance(value, str):
        found = kind.__members__.get(value.upper()) or kind.__members__.get(value.lower())
        return str(found.value) if found is not None else value
    member = kind(value)
    return str(member.value) if member is not None else str(value)


def usage_from_metadata(meta: types.GenerateContentResponseUsageMetadata | Mapping[str, Any] | None) -> Usage:
    """Our Usage from `usageMetadata` (wire JSON or the SDK's model); missing counts are 0 (the guard
    estimates output, flagged), and one that is no count is 0 with the usage flagged (`api_usage`)."""
    if isinstance(meta, types.GenerateContentResponseUsageMetadata):
        meta = meta.model_dump(mode="json", by_alias=True, exclude_none=True)
    return api_usage(meta, _USAGE_COUNTS)


_USAGE_COUNTS = (
    "promptTokenCount",
    "candidatesTokenCount",
    "thoughtsTokenCount",
    "cachedContentTokenCount",
    "toolUsePromptTokenCount",
)
"""`usageMetadata`'s counts, in `api_usage`'s order."""


def split_subject(text: str) -> tuple[str | None, str]:
    """`**Subject**\\n\\nbody` → ("Subject", text); the text keeps its heading so nothing is lost."""
    match = _SUBJECT.match(text)
    return (match.group("subject").strip(), text) if match else (None, text)


def _json(model: Any) -> Any:
    return model.model_dump(mode="json", exclude_none=True) if model is not None else None


_TOOL_TYPE_NAMES = {"GOOGLE_SEARCH_WEB": "google_search", "GOOGLE_SEARCH_IMAGE": "google_search"}
"""`toolType`s named as the option (and the Interactions API's step) that switches the tool on."""


def server_tool_name(tool_type: types.ToolType | str | None) -> str:
    """A `toolCall`/`toolResponse` part's tool: `GOOGLE_MAPS` → `google_maps`, both searches → `google_search`."""
    value = tool_type.value if isinstance(tool_type, types.ToolType) else _enum(types.ToolType, tool_type)
    if value is None:
        return "server_tool"
    return _TOOL_TYPE_NAMES.get(value, value.lower())


def grounding_sources(grounding: types.GroundingMetadata) -> list[tuple[str, dict[str, Any], Any]]:
    """`groundingMetadata` as (tool, input, output) per source it cites, for a server-side pair each.

    The chunks say the source: `web` (or none, with search queries) → google_search, `maps` →
    google_maps, `retrievedContext` → file_search (input: the stores cited). Each output is the whole
    metadata, so `groundingSupports` indices stay valid.
    """
    meta = _json(grounding)
    if not meta:
        return []
    queries = meta.get("web_search_queries") or []
    chunks = [c for c in meta.get("grounding_chunks") or [] if isinstance(c, dict)]
    stores = sorted({str(c["retrieved_context"]["file_search_store"]) for c in chunks if _store_of(c)})
    found = {
        "google_search": any("web" in c or "image" in c for c in chunks),
        "google_maps": any("maps" in c for c in chunks) or "google_maps_widget_context_token" in meta,
        "file_search": any("retrieved_context" in c for c in chunks),
    }
    if not any(found.values()):
        found["google_search"] = True  # queries or supports alone: the search tool's, as before chunks
    inputs: dict[str, dict[str, Any]] = {
        "google_search": {"queries": queries},
        "google_maps": {"queries": queries},
        "file_search": {"stores": stores} if stores else {},
    }
    return [(name, inputs[name], meta) for name, present in found.items() if present]


def _store_of(chunk: dict[str, Any]) -> bool:
    context = chunk.get("retrieved_context")
    return isinstance(context, dict) and bool(context.get("file_search_store"))


@dataclass(slots=True)
class LocalCall:
    """A function call the loop must run: `tool_use_id` is unique in the run, `call_id` is the model's."""

    tool_use_id: str
    name: str
    args: dict[str, Any]
    call_id: str | None


@dataclass(slots=True)
class _CallInProgress:
    """A function call not yet announced: complete, or still receiving its arguments in pieces."""

    name: str
    call_id: str | None
    signature: str | None
    """The part's `thoughtSignature` as sent (base64 text)."""
    args: dict[str, Any] = field(default_factory=dict)
    open_strings: set[str] = field(default_factory=set)
    """Argument paths whose string value continues in the next piece."""

    def add(self, pieces: list[Wire]) -> None:
        for piece in pieces:
            if _unfit_piece(piece):
                raise TypeError("a partialArgs piece")  # named by the chunk's handler (`misfit`)
            path = piece.get("jsonPath") or ""
            if (text := piece.get("stringValue")) is not None:
                before = _get_path(self.args, path) if path in self.open_strings else None
                _set_path(self.args, path, (before if isinstance(before, str) else "") + str(text))
                if piece.get("willContinue"):
                    self.open_strings.add(path)
                else:
                    self.open_strings.discard(path)
            elif (number := piece.get("numberValue")) is not None:
                number = float(number)
                _set_path(self.args, path, int(number) if number.is_integer() else number)
            elif (flag := piece.get("boolValue")) is not None:
                _set_path(self.args, path, bool(flag))
            elif piece.get("nullValue") is not None:
                _set_path(self.args, path, None)

    def part(self) -> Wire:
        """The call as one ordinary part, as the history must hold it."""
        call: Wire = {"name": self.name, "args": self.args}
        if self.call_id is not None:
            call = {"id": self.call_id, **call}
        part: Wire = {"functionCall": call}
        if self.signature is not None:
            part["thoughtSignature"] = self.signature
        return part


_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


def _steps(path: str) -> list[str | int]:
    """`$.a.b[0]` → ["a", "b", 0]."""
    return [name if name else int(index) for name, index in _PATH_STEP.findall(path.removeprefix("$"))]


def _unfit_piece(piece: Wire) -> bool:
    """Whether a piece of streamed arguments has a field of a type the API never sends (its flags above all:
    `bool("false")` is true); `misfit` names which."""
    if not isinstance(piece, dict):
        return True
    flags = (piece.get("willContinue"), piece.get("boolValue"))
    path, text = piece.get("jsonPath"), piece.get("stringValue")
    return (
        any(flag is not None and not isinstance(flag, bool) for flag in flags)
        or (path is not None and not isinstance(path, str))
        or (text is not None and not isinstance(text, str))
    )


def _get_path(args: dict[str, Any], path: str) -> Any:
    node: Any = args
    for step in _steps(path):
        node = _get(node, step)
    return node


def _set_path(args: dict[str, Any], path: str, value: Any) -> None:
    """Put `value` at `path`, making the objects and lists on the way (a path that does not fit is ignored)."""
    steps = _steps(path)
    if not steps:
        return
    node: Any = args
    for step, following in itertools.pairwise(steps):
        if _get(node, step) is None and not _put(node, step, [] if isinstance(following, int) else {}):
            return
        node = _get(node, step)
    _put(node, steps[-1], value)


def _get(node: Any, step: str | int) -> Any:
    if isinstance(step, int):
        return node[step] if isinstance(node, list) and step < len(node) else None
    return node.get(step) if isinstance(node, dict) else None


def _put(node: Any, step: str | int, value: Any) -> bool:
    if isinstance(step, int) and isinstance(node, list):
        if step >= limits.MAX_PARTS_PER_TURN:
            return False  # `$.a[99999999]` would otherwise allocate that many slots
        node.extend([None] * (step + 1 - len(node)))
    elif not (isinstance(step, str) and isinstance(node, dict)):
        return False
    node[step] = value
    return True


def wire_chunk(chunk: types.GenerateContentResponse | Mapping[str, Any]) -> Mapping[str, Any]:
    """A chunk as wire JSON: as read from the stream, or an SDK model's camelCase dump."""
    if isinstance(chunk, Mapping):
        return chunk
    dumped: Wire = chunk.model_dump(mode="json", by_alias=True, exclude_none=True)
    dumped.pop("sdkHttpResponse", None)
    return dumped


def _sdk_model(kind: type[_common.BaseModel], wire: Mapping[str, Any]) -> Any:
    """google-genai's model of a wire object, read as the SDK reads a response (unknown fields dropped)."""
    return kind._from_response(response=copy.deepcopy(dict(wire)), kwargs={})


class GenerateContentTranslator:
    """Feed it the chunks of one streamed turn; it returns the events to emit for each.

    One is built per model request, and a tool round's request is often one or two chunks: a plain
    class with slots and its own `__init__` builds in 5.3k instructions, where the dataclass of 18
    fields and six factories took 8.7k (about what translating a text chunk takes)."""

    __slots__ = (
        "_chars_seen",
        "_count",
        "_open_server_calls",
        "_parts_seen",
        "_streaming_call",
        "_unannounced",
        "block_reason",
        "calls",
        "emitted",
        "finish_message",
        "finish_reason",
        "grounding",
        "include_native",
        "parts",
        "taken_ids",
        "turn",
        "url_context",
        "usage_metadata",
    )

    def __init__(self, turn: int, taken_ids: set[str] | None = None, include_native: bool = False) -> None:
        self.turn = turn
        self.taken_ids: set[str] = set() if taken_ids is None else taken_ids
        """tool_use ids already used in this run (the guard rejects duplicates)."""
        self.include_native = include_native
        self.parts: list[Wire] = []
        """The model's parts as received (wire JSON), for the history (`content()`)."""
        self.calls: list[LocalCall] = []
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.block_reason: str | None = None
        self.usage_metadata: Mapping[str, Any] | None = None
        """The latest chunk's (only the last chunk's is complete); read as `usage` once the turn ends."""
        self.emitted = 0
        self.grounding: Mapping[str, Any] | None = None
        self.url_context: Mapping[str, Any] | None = None
        self._open_server_calls: list[str] = []
        self._streaming_call: _CallInProgress | None = None
        self._unannounced: list[_CallInProgress] = []
        self._count = 0
        """The last number a made-up id took (`_new_id`)."""
        self._parts_seen = 0
        self._chars_seen = 0

    @property
    def usage(self) -> Usage | None:
        return None if self.usage_metadata is None else usage_from_metadata(self.usage_metadata)

    @property
    def text(self) -> str:
        """The turn's visible text so far (its text parts that are not thoughts)."""
        return "".join(p["text"] for p in self.parts if isinstance(p.get("text"), str) and not p.get("thought"))

    def _new_id(self, prefix: str, wanted: str | None = None) -> str:
        """`wanted` (the model's id), or `prefix`_turn_n, made unique in the run by a number."""
        taken = self.taken_ids
        wanted = shown_id(wanted) if wanted else wanted  # the model's id stays in the history (`call_id`)
        candidate = wanted
        if not candidate:
            self._count += 1
            candidate = f"{prefix}_{self.turn}_{self._count}"
        while candidate in taken:
            self._count += 1
            candidate = f"{wanted or prefix}_{self.turn}_{self._count}"
        taken.add(candidate)
        return candidate

    def feed(self, chunk: Mapping[str, Any] | types.GenerateContentResponse) -> list[UnifiedEvent]:
        """The events of one streamed chunk. The wire JSON is read without the SDK's validation (the
        hot path): a field of the wrong shape is the server's fault, a typed error naming it."""
        wire: Any = chunk  # what the error names, also when it is no object (a JSON array as the chunk)
        try:
            wire = chunk if chunk.__class__ is dict or isinstance(chunk, Mapping) else wire_chunk(chunk)
            events: list[UnifiedEvent] = []
            usage = wire.get("usageMetadata")
            if usage is not None:
                self.usage_metadata = usage
            feedback = wire.get("promptFeedback")
            if feedback is not None and feedback.get("blockReason") is not None:
                self.block_reason = _enum(types.BlockedReason, feedback["blockReason"])
                self.finish_message = feedback.get("blockReasonMessage")
            candidates = wire.get("candidates")
            if candidates:
                candidate = candidates[0]
                content = candidate.get("content")
                if content is not None:
                    parts = content.get("parts") or ()
                    self._parts_seen += len(parts)
                    if self._parts_seen > limits.MAX_PARTS_PER_TURN:
                        raise self._too_large(f"{limits.MAX_PARTS_PER_TURN:,} parts", "MAX_PARTS_PER_TURN")
                    for part in parts:
                        text = part.get("text")
                        if text.__class__ is str:
                            self._chars_seen += len(text)
                            if len(part) == 1 and not self._unannounced:  # the bulk of a stream
                                if text:
                                    self.parts.append(part)
                                    events.append(_text_delta(text=text))
                                continue
                        events.extend(self._part(part))
                    if self._chars_seen > limits.MAX_TURN_TEXT_CHARS:
                        raise self._too_large(
                            f"{limits.MAX_TURN_TEXT_CHARS:,} characters of text", "MAX_TURN_TEXT_CHARS"
                        )
                reason = candidate.get("finishReason")
                if reason is not None:
                    self.finish_reason = _enum(types.FinishReason, reason)
                    self.finish_message = candidate.get("finishMessage")
                if candidate.get("groundingMetadata") is not None:
                    self.grounding = candidate["groundingMetadata"]
                if candidate.get("urlContextMetadata") is not None:
                    self.url_context = candidate["urlContextMetadata"]
            if events and self.include_native:
                events[0].native = copy.deepcopy(dict(wire))
            self.emitted += len(events)
            return events
        except _UNFIT as exc:  # the field that did not fit, named (`misfit`), else what reading it raised
            if not isinstance(wire, Mapping):
                raise unfit_response(f"a chunk is {json_type(wire)}, not an object") from None
            raise unfit_response(misfit(wire, CHUNK, "") or str(exc) or type(exc).__name__) from None

    def _too_large(self, bound: str, limit: str) -> BackendError:
        """The turn brought more than `limits` lets one turn bring (its parts, its characters of text)."""
        return BackendError(
            f"the model's turn {self.turn} has more than {bound}; it was not used",
            hint=f"the server's answer is larger than unified accepts (limits.{limit})",
        )

    def _part(self, part: Wire) -> list[UnifiedEvent]:
        text = part.get("text")
        if text is not None and not text and not part.get("thoughtSignature") and not part.get("thought"):
            return []  # an empty text part carries nothing; echoing it back would be rejected
        signature = part.get("thoughtSignature")
        if signature is not None and signature.__class__ is not str:  # else refused by the history, at the end
            raise TypeError("thoughtSignature")
        call = part.get("functionCall")
        if call is not None:
            self._function_call(call, signature or None)
            return []
        if part.get("functionResponse") is not None:
            return self._server_function_response(part)
        if self._unannounced:
            events = self._announce_calls()
            self.parts.append(part)
            return events + self._content_part(part)
        self.parts.append(part)
        return self._content_part(part)

    def _function_call(self, call: Wire, signature: str | None) -> None:
        """Queue a call (or one piece of a call whose arguments stream) until it can be announced."""
        # Each field read once (a call part is a third of a tool-using turn's parts).
        name, args, call_id = call.get("name"), call.get("args"), call.get("id")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"functionCall.name is {type(name).__name__}, not a string")
        if args is not None and not isinstance(args, dict):
            raise TypeError(f"functionCall.args is {type(args).__name__}, not an object")
        pieces, will_continue = call.get("partialArgs"), call.get("willContinue")
        if (
            (call_id is not None and not isinstance(call_id, str))
            or (pieces is not None and not isinstance(pieces, list))
            or (will_continue is not None and will_continue.__class__ is not bool)
        ):  # read when the call is announced, or its flag read as Python reads "false" (true): named now (`misfit`)
            raise TypeError("functionCall.id, partialArgs or willContinue")
        pending = self._streaming_call
        if pending is None:
            pending = _CallInProgress(name or "", call_id, signature, dict(args or {}))
        else:  # the next piece of the call being streamed
            pending.name = pending.name or name or ""
            pending.call_id = pending.call_id or call_id
            pending.signature = pending.signature or signature
            pending.args.update(args or {})
        if pieces:
            pending.add(list(pieces))
        self._streaming_call = pending if will_continue else None
        if not will_continue:
            self._unannounced.append(pending)

    def _announce_calls(self) -> list[UnifiedEvent]:
        """The queued calls are local calls: announce them, keep them for the loop and the history."""
        events: list[UnifiedEvent] = []
        for pending in self._unannounced:
            if limits.too_deep(pending.args):
                raise BackendError(
                    f"the model called {pending.name!r} with arguments nested deeper than "
                    f"{limits.MAX_JSON_DEPTH} levels; the call was not run",
                    hint="the model's output is malformed; run again",
                )
            tool_use_id = self._new_id("call", pending.call_id)
            self.calls.append(LocalCall(tool_use_id, pending.name, pending.args, pending.call_id))
            self.parts.append(pending.part())
            events.append(_tool_use(tool_use_id=tool_use_id, name=pending.name, input=pending.args))
        self._unannounced = []
        return events

    def _server_function_response(self, part: Wire) -> list[UnifiedEvent]:
        """A `functionResponse` in the model's own output: the server ran that call (server-side MCP)."""
        response: Wire = part["functionResponse"]
        response_id = response.get("id")
        name = response.get("name") or "server_tool"
        match = next(
            (
                c
                for c in self._unannounced
                if (response_id is not None and c.call_id == response_id) or (response_id is None and c.name == name)
            ),
            None,
        )
        events: list[UnifiedEvent] = []
        if match is not None:
            self._unannounced.remove(match)
            self.parts.append(match.part())
            tool_use_id = self._new_id("mcp", match.call_id)
            use = _tool_use(tool_use_id=tool_use_id, name=name, input=match.args, server_side=True)
            events.append(use)
        else:  # a result whose call we never saw: announce the call so the stream stays well-formed
            tool_use_id = self._new_id("mcp", response_id)
            events.append(_tool_use(tool_use_id=tool_use_id, name=name, server_side=True))
        self.parts.append(part)
        output = dict(response.get("response") or {})
        events.append(_result(tool_use_id, output, is_error="error" in output))
        return events

    def _content_part(self, part: Wire) -> list[UnifiedEvent]:
        text = part.get("text")
        if part.get("thought") and text is not None:
            subject, text = split_subject(text)
            signature = b64(wire_bytes(part.get("thoughtSignature")))
            return [_thinking(text=text, replace=True, subject=subject, signature=signature)]
        if text is not None:
            if text.__class__ is not str:  # a text part with more than its text (the bulk of text is checked in `feed`)
                raise TypeError(f"part.text is {type(text).__name__}, not a string")
            return [_text_delta(text=text)] if text else []
        if (code := part.get("executableCode")) is not None:
            tool_use_id = self._new_id("code", code.get("id"))
            self._open_server_calls.append(tool_use_id)
            language = _enum(types.Language, code.get("language"))
            return [
                _tool_use(
                    tool_use_id=tool_use_id,
                    name="code_execution",
                    input={"code": code.get("code") or "", "language": language},
                    server_side=True,
                )
            ]
        if (result := part.get("codeExecutionResult")) is not None:
            outcome = _enum(types.Outcome, result.get("outcome"))
            output = {"outcome": outcome, "output": result.get("output") or ""}
            return self._server_result("code_execution", result.get("id"), output, outcome not in (None, "OUTCOME_OK"))
        if (tool := part.get("toolCall")) is not None:
            tool_use_id = self._new_id("tool", tool.get("id"))
            self._open_server_calls.append(tool_use_id)
            name = server_tool_name(tool.get("toolType"))
            args = dict(tool.get("args") or {})
            return [_tool_use(tool_use_id=tool_use_id, name=name, input=args, server_side=True)]
        if (response := part.get("toolResponse")) is not None:
            name = server_tool_name(response.get("toolType"))
            return self._server_result(name, response.get("id"), dict(response.get("response") or {}), False)
        if (blob := part.get("inlineData")) is not None:
            data = wire_bytes(blob.get("data")) or b""
            size = len(data)
            mime_type = str(blob.get("mimeType") or "")
            if mime_type.startswith("image/"):
                return [ImageOutput.model_construct(mime_type=mime_type, data=data, size_bytes=size)]
            message = (
                f"the model generated {blob.get('mimeType') or 'media'} ({size} bytes), which no event carries: "
                "it is kept in the session's history, not shown"
            )
            return [WarningEvent.model_construct(code="output_not_shown", message=message)]
        return []  # files and other media reach the history unchanged

    def _server_result(self, name: str, wanted: str | None, output: Any, is_error: bool) -> list[UnifiedEvent]:
        events: list[UnifiedEvent] = []
        if wanted is not None and wanted in self._open_server_calls:
            tool_use_id = wanted
            self._open_server_calls.remove(wanted)
        elif wanted is None and self._open_server_calls:
            tool_use_id = self._open_server_calls.pop(0)
        else:  # a result whose call we never saw: announce the call so the stream stays well-formed
            tool_use_id = self._new_id(name, wanted)
            events.append(_tool_use(tool_use_id=tool_use_id, name=name, server_side=True))
        events.append(_result(tool_use_id, output, is_error=is_error))
        return events

    def finish(self) -> list[UnifiedEvent]:
        """Events due once the stream ended: the calls not yet announced, grounding as server-side tool data,
        finish-reason reports."""
        try:
            if self._streaming_call is not None:  # the pieces stopped without the closing part: use what came
                self._unannounced.append(self._streaming_call)
                self._streaming_call = None
            events: list[UnifiedEvent] = self._announce_calls() if self._unannounced else []
            if self.grounding is not None:
                for name, args, meta in grounding_sources(_sdk_model(types.GroundingMetadata, self.grounding)):
                    events.extend(self._server_pair(name, args, meta))
            if self.url_context is not None:
                meta = _json(_sdk_model(types.UrlContextMetadata, self.url_context))
                if meta:
                    urls = [u.get("retrieved_url") for u in meta.get("url_metadata", [])]
                    events.extend(self._server_pair("url_context", {"urls": urls}, meta))
            problem = self.stop_problem()
            if problem is not None and problem[0] not in _RETRY_FINISH:  # a botched turn: the loop says it asks again
                code = f"finish_{problem[0].lower()}"
                if problem[0] in _WARN_FINISH:
                    events.append(WarningEvent(code=code, message=problem[1]))
                elif code in ERROR_CODES:
                    events.append(ErrorEvent(code=code, message=problem[1], fatal=True, details={"reason": problem[0]}))
                else:  # a reason newer than this unified (the API adds some): its code is in no registry
                    message = f"{problem[1]}, a reason this unified does not know (upgrading unified may name it)"
                    events.append(
                        ErrorEvent(code="backend_error", message=message, fatal=True, details={"reason": problem[0]})
                    )
            self.emitted += len(events)
            return events
        except _UNFIT as exc:  # what the stream left for its end (grounding) is of the wrong shape
            kept = {"groundingMetadata": self.grounding, "urlContextMetadata": self.url_context}
            raise unfit_response(misfit(kept, CANDIDATE, "candidates[0]") or str(exc) or type(exc).__name__) from None

    def _server_pair(self, name: str, args: dict[str, Any], output: Any) -> list[UnifiedEvent]:
        tool_use_id = self._new_id(name)
        return [
            _tool_use(tool_use_id=tool_use_id, name=name, input=args, server_side=True),
            _result(tool_use_id, output),
        ]

    def stop_problem(self) -> tuple[str, str] | None:
        """(reason, message) when the turn ended other than normally; None for STOP."""
        if self.block_reason is not None:
            detail = f": {self.finish_message}" if self.finish_message else ""
            return self.block_reason, f"the prompt was blocked ({self.block_reason}){detail}"
        reason = self.finish_reason
        if reason is None or reason in _OK_FINISH:
            return None
        text = _FINISH_TEXT.get(reason, f"the model stopped with finish reason {reason}")
        detail = f" ({self.finish_message})" if self.finish_message else ""
        return reason, f"{text}{detail} [finishReason {reason}]"

    @property
    def fatal(self) -> str | None:
        """The message that ends the run, when the finish reason is more than a warning."""
        problem = self.stop_problem()
        if problem is None or problem[0] in _WARN_FINISH or problem[0] in _RETRY_FINISH:
            return None
        return problem[1]

    @property
    def malformed(self) -> str | None:
        """Why the model must be asked again (nothing of the turn goes into the history), or None.

        A botched turn (a malformed function call, ...), or a stream that ended without a
        finishReason before anything was shown (an empty answer, as the Gemini CLI also retries).
        """
        if self.block_reason is not None:
            return None
        if self.finish_reason in _RETRY_FINISH:
            problem = self.stop_problem()
            return problem[1] if problem else self.finish_reason
        if self.finish_reason is None and self.emitted == 0:
            return "the model's answer was empty (the stream ended without content or a finishReason)"
        return None

    @property
    def truncated(self) -> bool:
        """The stream ended without a finishReason after showing output: the answer may be cut off."""
        return self.block_reason is None and self.finish_reason is None and self.emitted > 0

    def content(self) -> types.Content:
        """The model's turn, parts as received (thought signatures included), as google-genai's model for the
        history: read once per turn, as the SDK reads a response (unknown fields dropped)."""
        try:
            return content_from_wire(self.parts)
        except _UNFIT as exc:  # a part google-genai cannot read (a `thought` that is no bool, ...)
            raise unfit_response(str(exc) or type(exc).__name__) from None


def _result(tool_use_id: str, output: Any, *, is_error: bool = False) -> ToolResult:
    """A server-side tool's result: its output as text, the structure in `data` (the normal form)."""
    text, data = tool_output_text(output)
    return _tool_result(tool_use_id=tool_use_id, output=text, data=data, is_error=is_error, server_side=True)


_TEXT_PART = frozenset({"text"})
_set_attribute = object.__setattr__


_NO_PART_FIELDS: dict[str, Any] = dict.fromkeys(types.Part.model_fields)


def _text_part(text: str) -> types.Part:
    """`types.Part(text=text)` as validation would build it, without the SDK's per-model checks (a text
    part has nothing to check; pydantic's own `model_construct` costs more than validating)."""
    part = types.Part.__new__(types.Part)
    fields = _NO_PART_FIELDS.copy()
    fields["text"] = text
    _set_attribute(part, "__dict__", fields)
    _set_attribute(part, "__pydantic_fields_set__", {"text"})
    _set_attribute(part, "__pydantic_extra__", None)
    _set_attribute(part, "__pydantic_private__", None)
    return part


def content_from_wire(parts: list[Wire]) -> types.Content:
    """A model turn's wire parts as one `types.Content`. A part of text alone, the bulk of a long answer,
    is built directly; every other part is read by google-genai."""
    built: list[types.Part] = []
    for part in parts:
        if part.keys() == _TEXT_PART and isinstance(part["text"], str):
            built.append(_text_part(part["text"]))
        else:
            built.append(_sdk_model(types.Part, part))
    return types.Content(role="model", parts=built)
