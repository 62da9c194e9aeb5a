"""A conversation, portable: one typed, versioned record of a session's history, whatever backend made it.

Every backend exports its sessions to a `Conversation` (`unified.sessions.export(ref)`) and
continues from one (`ExecuteParams(history=...)`), so a session started on one backend goes on
on another, and a run fails over without losing a turn. What crosses is the whole structure: user
turns (text, images, tool results), model turns (text, thinking with its signature, tool calls with
ids, names and arguments, server-side tool calls and results, usage), each model turn tagged with
the provider and model that made it.

What cannot cross is handled by rules, the same on every backend (docs/conversations.md):

- A signature (a Gemini `thoughtSignature`, an Anthropic thinking `signature`, an OpenAI reasoning
  `encrypted_content`) only means something to the provider that made it: `signature_for` keeps it
  for that provider and drops it elsewhere; the thought text is kept either way.
- Each provider takes its own order, ids and names: `for_provider` puts every result right after its
  call and gives an id or name the target's API would refuse a stand-in (the same for a call and its
  result), so every writer sends what its provider takes.
- A backend that keeps history on a server (Interactions) exports the turns it sent and received;
  a backend driving an agent binary is given the history the way it resumes its own sessions (its
  session file, written into its isolated home), never as a prompt of prose.

This module imports only the event protocol (and the capability matrix, where `provider_of_backend` reads a
backend's provider): it is data, readable without any backend.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import deque
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, PlainValidator, ValidationError, field_validator
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from unified import _limits as limits
from unified._text import found_json
from unified.events import JsonValue, Provider, Usage

__all__ = [
    "CONTINUE_PROMPT",
    "FORMAT",
    "NO_STORED_RESULT",
    "VERSION",
    "Conversation",
    "ImagePart",
    "ModelPart",
    "ModelTurn",
    "Origin",
    "Provider",
    "ServerToolCallPart",
    "ServerToolResultPart",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolResultPart",
    "Turn",
    "UserPart",
    "UserTurn",
    "is_blank",
    "provider_of_backend",
    "signature_for",
]

FORMAT: Literal["unified.conversation"] = "unified.conversation"
VERSION = 1
"""The record's version: a reader refuses a larger one (it was written by a newer unified)."""


def provider_of_backend(backend: str) -> Provider | None:
    """The model provider behind a backend, as its block of the capability matrix declares it (`provider`;
    None for a backend without one, e.g. `scripted`, and for one the matrix does not know)."""
    from unified import capabilities  # the matrix is read when a run needs it, not when a conversation is

    found = capabilities.MATRIX.backends.get(backend)
    return found.provider if found is not None else None


def _bytes_from_base64(value: object) -> bytes:
    """An image's bytes: as they are, or from base64 text. Text that is no base64 said binascii's words alone
    ("Incorrect padding", "Only base64 data is allowed"): now what the field holds and what to do (round 22)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except ValueError as exc:  # binascii.Error
            raise ValueError(
                f"the image's data is not base64 ({str(exc).rstrip('.')}): an image holds its bytes as base64 "
                "text (A-Z, a-z, 0-9, + and /, padded with =), as `unified sessions export` writes them"
            ) from None
    raise ValueError(f"the image's data is {found_json(value)}, not base64 text")


Base64Bytes = Annotated[
    bytes,
    PlainValidator(_bytes_from_base64),
    PlainSerializer(lambda data: base64.b64encode(data).decode("ascii"), return_type=str, when_used="json"),
]
"""Bytes in Python, base64 text in JSON."""


def _json_text(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, hide_input_in_errors=True)


class TextPart(_Part):
    """Text a person or a model wrote. A model's text can carry a signature (Gemini signs text parts)."""

    type: Literal["text"] = "text"
    text: str
    signature: str | None = None


def is_blank(part: object) -> bool:
    """Whether `part` is a text part that says nothing: no text but whitespace, and no signature (a Gemini model's
    signed empty text carries its signature back). No provider takes one: `with_results_after_calls` leaves it out."""
    return isinstance(part, TextPart) and not part.text.strip() and part.signature is None


class ImagePart(_Part):
    """An image: attached by the user, or generated by the model."""

    type: Literal["image"] = "image"
    mime_type: str
    data: Base64Bytes


class ThinkingPart(_Part):
    """A thought summary, with the provider's signature for it when there was one.

    `signature` is opaque: only the provider of its turn can read it back; `signature_for` decides
    whether a target keeps it. A part may hold a signature and no text (a redacted or encrypted
    thought).
    """

    type: Literal["thinking"] = "thinking"
    text: str = ""
    signature: str | None = None


class ToolCallPart(_Part):
    """The model asked for a tool the client runs. `id` is the call's id as the model gave it
    (generated when the model gave none), so its result can name it.

    Gemini attaches a thought signature to function calls: it travels in `signature`, under the
    same rule as a thinking part's."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    signature: str | None = None


class ToolResultPart(_Part):
    """What a client-side tool call returned: its text `output` (what the model read), structured
    `data` when the tool gave some, and whether it failed."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    output: str
    data: JsonValue | None = None
    is_error: bool = False

    @classmethod
    def of(cls, call_id: str, name: str, value: JsonValue, *, is_error: bool = False) -> ToolResultPart:
        """A result from the value a backend recorded: text as it is, anything else as JSON text
        with the value kept as `data`."""
        if isinstance(value, str):
            return cls(call_id=call_id, name=name, output=value, is_error=is_error)
        return cls(call_id=call_id, name=name, output=_json_text(value), data=value, is_error=is_error)

    def value(self) -> JsonValue:
        """What to send back to a model as the call's result: the structured data when there is some
        (and the call did not fail), else the text."""
        return self.data if self.data is not None and not self.is_error else self.output


class ServerToolCallPart(_Part):
    """A tool the provider ran itself (Google Search, code execution, URL context, ...)."""

    type: Literal["server_tool_call"] = "server_tool_call"
    id: str
    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)

    def as_text(self) -> str:
        """How a backend that cannot replay this provider's tool tells the model it ran."""
        return f"[server tool {self.name} was called with {_json_text(self.arguments)}]"


class ServerToolResultPart(_Part):
    """The result of a server-side tool call, as the provider reported it."""

    type: Literal["server_tool_result"] = "server_tool_result"
    call_id: str
    name: str
    output: str = ""
    data: JsonValue | None = None

    def as_text(self) -> str:
        """How a backend that cannot replay this provider's tool tells the model what it returned."""
        return f"[server tool {self.name} returned: {self.output or _json_text(self.data)}]"


UserPart = Annotated[TextPart | ImagePart | ToolResultPart, Field(discriminator="type")]
ModelPart = Annotated[
    TextPart | ImagePart | ThinkingPart | ToolCallPart | ServerToolCallPart | ServerToolResultPart,
    Field(discriminator="type"),
]


class UserTurn(BaseModel):
    """What the user (or the client, returning tool results) sent in one request."""

    model_config = ConfigDict(extra="forbid", defer_build=True, hide_input_in_errors=True)

    role: Literal["user"] = "user"
    parts: list[UserPart]


class ModelTurn(BaseModel):
    """One model response: its parts in order, the provider and model that made it (so who can read
    its signatures), and what it cost."""

    model_config = ConfigDict(extra="forbid", defer_build=True, hide_input_in_errors=True)

    role: Literal["model"] = "model"
    parts: list[ModelPart]
    provider: Provider | None = None
    model: str | None = None
    usage: Usage | None = None


Turn = Annotated[UserTurn | ModelTurn, Field(discriminator="role")]


class Origin(BaseModel):
    """The session a conversation was exported from."""

    model_config = ConfigDict(extra="forbid", defer_build=True, hide_input_in_errors=True)

    backend: str
    session_id: str
    short_id: str | None = None
    model: str | None = None
    cwd: str | None = None


class Conversation(BaseModel):
    """A session's history as data (JSON Schema: `Conversation.model_json_schema()`, docs/conversations.md)."""

    model_config = ConfigDict(extra="forbid", defer_build=True, hide_input_in_errors=True)

    format: Literal["unified.conversation"] = FORMAT
    version: int = Field(default=VERSION, ge=1, le=VERSION)
    origin: Origin | None = None
    system_instruction: str | None = None
    turns: list[Turn] = Field(default_factory=list)

    @field_validator("version", mode="before")
    @classmethod
    def _written_by_this_unified(cls, version: object) -> object:
        """A larger version is a newer unified's record: said so, with what to do (it was pydantic's "Input should
        be less than or equal to 1", which told neither). A version is the integer the format defines and nothing
        that reads as one: `"1"`, `1.0` and `true` were taken for 1 (bad input round 22), so a file another tool
        wrote to a format of its own passed for this one."""
        if version.__class__ is not int or version < 1:
            raise PydanticCustomError(
                "version_type",
                'the conversation\'s version is {found}: a version is the integer {known} (`"version": {known}`, '
                "as `unified sessions export` writes it)",
                {"found": found_json(version), "known": VERSION},
            )
        if version > VERSION:
            raise PydanticCustomError(
                "newer_version",
                "the conversation has version {version}: a newer unified wrote it (this one reads version {known}); "
                "upgrade unified to read it",
                {"version": version, "known": VERSION},
            )
        return version

    def tool_calls(self) -> Iterator[ToolCallPart]:
        """Every client-side tool call, in order."""
        for turn in self.turns:
            if isinstance(turn, ModelTurn):
                yield from (p for p in turn.parts if isinstance(p, ToolCallPart))

    def unanswered_calls(self) -> list[ToolCallPart]:
        """Calls no later tool result answers: a run that stopped between a call and its result."""
        pairs, _ = _pairs(self.turns)
        answered = set(pairs.values())
        return [
            part
            for t, turn in enumerate(self.turns)
            if isinstance(turn, ModelTurn)
            for p, part in enumerate(turn.parts)
            if isinstance(part, ToolCallPart) and (t, p) not in answered
        ]

    def with_unanswered_calls_answered(self, output: str) -> Conversation:
        """This conversation with an error result (`output`) for each call no later result answers, in
        the user turn of results right after the call's (a turn of its own before a prompt, so a retried
        prompt stays the last turn's): every provider's API refuses a
        call left unanswered (Gemini, OpenAI and Anthropic alike answer HTTP 400, and Claude Code drops the
        call from what the model reads). Every result moves to that turn too (`with_results_after_calls`).
        Itself when every call is answered in place."""
        return self.with_results_after_calls(unanswered=output)

    def with_results_after_calls(self, *, unanswered: str | None = None) -> Conversation:
        """This conversation in the order every provider's API takes: each tool result in a user turn of
        results right after the model turn of its call, in the order of the calls (Anthropic wants the
        `tool_result` blocks first in the very next message, Gemini the `functionResponse` parts in the
        turn after the `functionCall`), named as its call names it; a result from further on is moved
        there, and a user turn left empty by the move goes. Calls without an id get one (`gc-<turn>-<part>`,
        which the Gemini writers never send) and their results, matched by order and name, take it. With
        `unanswered`, each call no result answers gets an error result of that text. Consecutive model
        turns of one provider become one (Gemini wants "a function call turn right after a user turn or
        a function response turn"), and a conversation that starts with the model's turn gets a user turn
        before it (no provider reads a model turn first). A text part with no text (`is_blank`) is left out, and a
        turn it leaves empty: the Gemini API refuses "an empty text parameter", the Anthropic API an empty text
        block. No other part is lost. Itself when nothing changes; it assumes `problem()` is None (a result that
        answers no call stays where it is)."""
        turns = list(self.turns)
        pairs, _ = _pairs(turns)
        used = {p.id for p in self.tool_calls() if p.id}
        calls: dict[_Position, ToolCallPart] = {}
        for t, turn in enumerate(turns):
            if not isinstance(turn, ModelTurn):
                continue
            parts: list[ModelPart] = []
            for p, part in enumerate(turn.parts):
                if isinstance(part, ToolCallPart) and not part.id:
                    new_id, counter = f"gc-{t}-{p}", 0
                    while new_id in used:
                        counter += 1
                        new_id = f"gc-{t}-{p}-{counter}"
                    used.add(new_id)
                    part = part.model_copy(update={"id": new_id})
                if isinstance(part, ToolCallPart):
                    calls[(t, p)] = part
                parts.append(part)
            turns[t] = turn.model_copy(update={"parts": parts})
        results: dict[_Position, ToolResultPart] = {}
        for (t, p), call in pairs.items():
            result = turns[t].parts[p]
            assert isinstance(result, ToolResultPart)
            answered = calls[call]
            results[call] = result.model_copy(update={"call_id": answered.id, "name": answered.name})
        out: list[UserTurn | ModelTurn] = []
        for t, turn in enumerate(turns):
            if isinstance(turn, UserTurn):
                kept: list[UserPart] = [p for n, p in enumerate(turn.parts) if (t, n) not in pairs and not is_blank(p)]
                if kept:
                    out.append(turn if len(kept) == len(turn.parts) else turn.model_copy(update={"parts": kept}))
                continue
            said: list[ModelPart] = [p for p in turn.parts if not is_blank(p)]
            previous = out[-1] if out else None
            if not said:  # nothing a provider takes; a turn with a call is never left empty
                pass
            elif (
                isinstance(previous, ModelTurn)
                and previous.provider == turn.provider
                and not any(isinstance(p, ToolCallPart) for p in previous.parts)
            ):
                usage = _sum(previous.usage, turn.usage)
                out[-1] = previous.model_copy(update={"parts": [*previous.parts, *said], "usage": usage})
            else:
                out.append(turn if len(said) == len(turn.parts) else turn.model_copy(update={"parts": said}))
            owed: list[UserPart] = []
            for p, part in enumerate(turn.parts):
                if not isinstance(part, ToolCallPart):
                    continue
                found = results.get((t, p))
                if found is not None:
                    owed.append(found)
                elif unanswered is not None:
                    owed.append(ToolResultPart(call_id=part.id, name=part.name, output=unanswered, is_error=True))
            if owed:
                out.append(UserTurn(parts=owed))
        if out and isinstance(out[0], ModelTurn):
            out.insert(0, UserTurn(parts=[TextPart(text=CONTINUED_PROMPT)]))
        if out == self.turns:
            return self
        return self.model_copy(update={"turns": out})

    def for_provider(self, provider: Provider) -> Conversation:
        """This conversation as `provider`'s API takes it: results right after their calls
        (`with_results_after_calls`), and each call id and tool name the provider's API would refuse
        (another provider's id such as `fc/abc.def` or one of 300 characters, a name with `/` or of 100
        characters) replaced by one it takes, the same for a call and its result: the conforming part
        of it and a hash of the whole, so the mapping is deterministic and two ids never become one.
        Ids and names that conform are kept. Itself when nothing changes."""
        ordered = self.with_results_after_calls()
        id_rule, name_rule = _WIRE_RULES[provider]
        conforming_ids = {p.id for p in ordered.tool_calls() if id_rule.fullmatch(p.id)}
        conforming_names = {p.name for p in ordered.tool_calls() if name_rule.fullmatch(p.name)}
        id_map: dict[str, str] = {}
        name_map: dict[str, str] = {}
        turns: list[UserTurn | ModelTurn] = []
        changed = False
        for turn in ordered.turns:
            parts: list[Any] = []
            for part in turn.parts:
                if isinstance(part, ToolCallPart | ToolResultPart):
                    old_id = part.id if isinstance(part, ToolCallPart) else part.call_id
                    new_id = _conform(old_id, id_rule, id_map, conforming_ids)
                    new_name = _conform(part.name, name_rule, name_map, conforming_names)
                    if (new_id, new_name) != (old_id, part.name):
                        key = "id" if isinstance(part, ToolCallPart) else "call_id"
                        part = part.model_copy(update={key: new_id, "name": new_name})
                        changed = True
                parts.append(part)
            turns.append(turn.model_copy(update={"parts": parts}))
        return ordered.model_copy(update={"turns": turns}) if changed else ordered

    def ends_with_user(self) -> bool:
        """Whether the last turn is the user's: a prompt or tool results the model has not answered yet."""
        return bool(self.turns) and isinstance(self.turns[-1], UserTurn)

    def stored_in_order(self) -> Conversation:
        """A stored session as an API backend sends it again: `with_results_after_calls`, each call no result
        answers given `NO_STORED_RESULT`. A session is the caller's data (a `SessionStore` another tool writes, a
        file edited), and an API answers one out of order with HTTP 400. Itself when it is in order (every session
        unified wrote), and when no provider can continue it (`problem()`: a result that answers no call), for the
        API to say why."""
        if self.problem() is not None:
            return self
        return self.with_results_after_calls(unanswered=NO_STORED_RESULT)

    def ends_with_tool_results(self) -> bool:
        """Whether the last turn is tool results (and nothing else) the model has not answered yet: a run that
        stopped between a tool round and the model's answer to it. A backend that takes only a user's message
        last continues it with `CONTINUE_PROMPT` (`unified.capabilities.tool_results_last`)."""
        last = self.turns[-1] if self.turns else None
        return (
            isinstance(last, UserTurn) and bool(last.parts) and all(isinstance(p, ToolResultPart) for p in last.parts)
        )

    def problem(self, max_bytes: int | None = None, max_depth: int | None = None) -> str | None:
        """Why no backend can continue this conversation, or None: text that is not Unicode (a lone
        surrogate: no session file, no request can hold it), tool arguments or data nested deeper than
        `max_depth`, more than `max_bytes` of JSON, an image whose `mime_type` is not a media type, a
        call id used twice, a tool result answering no call before it, or one answering a call another
        result answered (every provider's API refuses them). A run checks this before it writes anything
        (`ExecuteParams.history`), and a failover before it carries a history to the next backend."""
        for turn in self.turns:  # a part's arguments or data count from 0, not the part holding them
            for part in turn.parts:
                problem = _text_problem(part.model_dump(exclude_none=True), max_depth, start=-1)
                if problem is not None:
                    return problem
        origin = self.origin.model_dump() if self.origin is not None else None
        for field, value in (origin or {}).items():
            if isinstance(value, str) and len(value) > _ORIGIN_MAX_CHARS:
                return (
                    f"its origin's {field} is {len(value)} characters, more than an origin holds ({_ORIGIN_MAX_CHARS})"
                )
        models = [turn.model for turn in self.turns if isinstance(turn, ModelTurn)]
        problem = _text_problem([self.system_instruction, origin, models], None)
        if problem is not None:
            return problem
        try:
            size = len(self.model_dump_json(exclude_none=True))
        except ValueError as exc:  # pydantic's serialization error: nothing above should let one through
            return f"it cannot be written as JSON ({exc})"
        if max_bytes is not None and size > max_bytes:
            return f"it is {limits.conversation_too_large(size, max_bytes)}"
        called: set[str] = set()
        for number, turn in enumerate(self.turns):
            for part in turn.parts:
                if isinstance(part, ImagePart) and not _MEDIA_TYPE.fullmatch(part.mime_type):
                    shown = part.mime_type[:40]
                    return (
                        f"turn {number} holds an image whose mime_type {shown!r} is not a media type (image/png, ...)"
                    )
                if isinstance(part, ToolCallPart):
                    # An empty id is no id (a source that gave its calls none: their results follow by
                    # order and name), so two of them are no repeat.
                    if part.id and part.id in called:
                        return f"turn {number} repeats the tool call id {part.id!r}: each call needs its own"
                    called.add(part.id)
        _, problem = _pairs(self.turns)
        return problem

    def to_json(self) -> str:
        return self.model_dump_json(exclude_none=True)

    @classmethod
    def from_json(cls, text: str | bytes) -> Conversation:
        """The conversation `text` holds; pydantic's `ValidationError` when it holds none, which never
        quotes the input (a conversation may carry a key): not even a `role` or `type` tag, or the name
        of a field no part has (a key pasted where a field name goes), which pydantic's own message
        would. More than `limits.MAX_CONVERSATION_VALUES` values is refused before anything is parsed
        (the same error). A leading byte order mark (Notepad's UTF-8 one, as RFC 8259 lets a reader ignore it) is
        left out: it was "Invalid JSON: expected value at line 1 column 1"."""
        text = text.removeprefix(b"\xef\xbb\xbf") if isinstance(text, bytes) else text.removeprefix("\ufeff")
        values = _values(text)
        if values > limits.MAX_CONVERSATION_VALUES:
            problem = PydanticCustomError(
                "too_many_values",
                "it holds {count} JSON values (objects, arrays and their items), more than a conversation may "
                f"({limits.MAX_CONVERSATION_VALUES:,}); it was not parsed",
                {"count": f"{values:,}"},
            )
            details: list[InitErrorDetails] = [{"type": problem, "loc": (), "input": None}]
            raise ValidationError.from_exception_data(cls.__name__, details, hide_input=True)
        try:  # strict: a count is a JSON integer, a flag true or false (`"5"`, `5.0`, `"true"` were taken as them)
            return cls.model_validate_json(text, strict=True)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            if not any(error["type"] in _REWORDED for error in errors):
                raise
            hidden = [
                {**error, "type": _unknown_tag(error)}
                if error["type"] == "union_tag_invalid"
                else {**error, "loc": (*error["loc"][:-1], "..."), "type": _unknown_field(len(error["loc"]) == 1)}
                if error["type"] == "extra_forbidden"
                else {**error, "type": _wrong_value(error)}
                if error["type"] in _REWORDED
                else {**error, "type": PydanticCustomError(error["type"], "{said}", {"said": error["msg"]})}
                if error["type"] in _OURS
                else error
                for error in errors
            ]
            raise ValidationError.from_exception_data(exc.title, hidden, hide_input=True) from None  # type: ignore[arg-type]

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        return cls.model_json_schema()


_REWORDED = {
    "union_tag_invalid": "",
    "extra_forbidden": "",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true or false",
    "float_type": "a number",
    "string_type": "a string",
    "greater_than_equal": "a number of at least {ge:g}",
    "finite_number": "a finite number",
}
"""The errors `Conversation.from_json` words itself: an unknown tag or field (never named), a value of the wrong JSON
kind or out of range (pydantic said "Input should be a valid integer", not what it found)."""
_OURS = {"version_type", "newer_version", "too_many_values"}
"""The errors of this module's own validators (`PydanticCustomError`s): raised again beside one reworded, each is
made anew, as pydantic knows no such type by its name alone (a string version beside an unknown part's tag raised
KeyError "Invalid error type: 'version_type'")."""


def _wrong_value(error: ErrorDetails) -> PydanticCustomError:
    """A value of the wrong kind or out of range, saying what was found (`unified._text.found_json`) and what the
    format has there."""
    expected = _REWORDED[error["type"]].format(**error.get("ctx", {}))
    return PydanticCustomError(
        "wrong_value",
        "found {found}, where the format has {expected}",
        {"found": found_json(error["input"]), "expected": expected},
    )


def _unknown_tag(error: ErrorDetails) -> PydanticCustomError:
    """A turn's `role` or a part's `type` this format has not, in words that say what to do: pydantic's "Input tag
    '...' found using 'type' does not match any of the expected tags" (its tag hidden) left a reader of a newer
    unified's export, whose parts may be of a new type, guessing (bad input round 24). The tag is not shown."""
    ctx = error.get("ctx", {})
    return PydanticCustomError(
        "union_tag_invalid",
        "a {field} this unified does not read (not shown: it may hold a key); it reads {expected}. A newer unified "
        "may have written it: upgrade unified to read it, or drop that part",
        {"field": str(ctx.get("discriminator", "tag")).strip("'"), "expected": ctx.get("expected_tags", "")},
    )


def _unknown_field(top: bool) -> PydanticCustomError:
    """A field the format does not have, in words that say so and what to do: "Extra inputs are not permitted" at a
    location of `...` told a reader who gave another tool's export (`{"messages": [...]}`) neither. Its name is not
    shown (see `Conversation.from_json`)."""
    if top:
        return PydanticCustomError(
            "extra_forbidden",
            "a field no conversation has (its name not shown: it may hold a key); a conversation is a JSON object of "
            "format, version, origin, system_instruction and turns, as `unified sessions export` prints it, not "
            "another tool's export",
        )
    return PydanticCustomError(
        "extra_forbidden", "a field this part of a conversation does not have (its name not shown)"
    )


CONTINUED_PROMPT = "[a conversation continued from here]"
"""The user turn `with_results_after_calls` puts before a conversation that starts with the model's turn."""

NO_STORED_RESULT = "not run: the session holds no result for this call"
"""The error result `Conversation.stored_in_order` gives a stored call that no result answers."""

CONTINUE_PROMPT = "Go on with the task: the results of your tool calls are above."
"""The user's message that continues a conversation ending with tool results (`ends_with_tool_results`) on a
backend that takes only a user's message last (an agent binary: `tool_results_last = "continue_prompt"` in the
capability matrix), when a run retries it or a failover carries it there: the whole tool round is sent, then
this, as the user's turn."""

_Position = tuple[int, int]
"""A part of a conversation: its turn's number, its own number in that turn."""


def _pairs(turns: list[UserTurn | ModelTurn]) -> tuple[dict[_Position, _Position], str | None]:
    """Which call each tool result answers (the result's position -> the call's), and why a result answers
    none when one does not: it names no call before it, or a call another result already answered. A
    result without a call id answers the first open call without one of its name (else the first open one):
    a source that gave its calls no id (Gemini 2.5) pairs them by order and name."""
    calls: dict[str, _Position] = {}
    unnamed: list[_Position] = []  # calls without an id, in order; `first` is the earliest that may be open
    first = 0
    by_name: dict[str, deque[_Position]] = {}
    pairs: dict[_Position, _Position] = {}
    answered: set[_Position] = set()
    for t, turn in enumerate(turns):
        for p, part in enumerate(turn.parts):
            if isinstance(part, ToolCallPart):
                if part.id:
                    calls.setdefault(part.id, (t, p))
                else:
                    unnamed.append((t, p))
                    by_name.setdefault(part.name, deque()).append((t, p))
            elif isinstance(part, ToolResultPart):
                if part.call_id:
                    call = calls.get(part.call_id)
                    if call is None:
                        return (
                            pairs,
                            f"turn {t} holds a result for tool call {part.call_id!r}, which no earlier turn made",
                        )
                    if call in answered:
                        return pairs, f"turn {t} answers tool call {part.call_id!r} again: a call has one result"
                else:
                    same = by_name.get(part.name, deque())
                    while same and same[0] in answered:
                        same.popleft()
                    while first < len(unnamed) and unnamed[first] in answered:
                        first += 1
                    if not same and first == len(unnamed):
                        return pairs, f"turn {t} holds a result with no call id, which no earlier call awaits"
                    call = same.popleft() if same else unnamed[first]
                answered.add(call)
                pairs[(t, p)] = call
    return pairs, None


def _sum(first: Usage | None, second: Usage | None) -> Usage | None:
    if first is None or second is None:
        return first or second
    return first + second


_WIRE_RULES: dict[Provider, tuple[re.Pattern[str], re.Pattern[str]]] = {
    # Anthropic: `tool_use.id` must match ^[a-zA-Z0-9_-]+$ (HTTP 400 otherwise); ids of its own are ~30
    # characters, and unified keeps them to 64. Names: the tool-name shape, up to 128.
    "anthropic": (re.compile(r"[A-Za-z0-9_-]{1,64}"), re.compile(r"[A-Za-z0-9_-]{1,128}")),
    # OpenAI Responses: `call_id` at most 64 characters (string_above_max_length); names as its tools'.
    "openai": (re.compile(r"[^\x00-\x1f\x7f]{1,64}"), re.compile(r"[A-Za-z0-9_-]{1,64}")),
    # Gemini: function names ^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$; a function call's id has no documented rule,
    # so only what no id of any provider holds gets a stand-in: control characters, more than 256 characters.
    "google": (re.compile(r"[^\x00-\x1f\x7f]{1,256}"), re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")),
}
"""What each provider's API takes as a client tool call's id and name (`Conversation.for_provider`)."""


def _conform(value: str, rule: re.Pattern[str], mapped: dict[str, str], taken: set[str]) -> str:
    """`value` if `rule` takes it, else its stand-in: its characters `rule` may take, then a hash of the whole
    value (so it is the same for a call and its result, and on every run), never one in `taken` (the values
    that conform, the stand-ins given so far: it gets this one)."""
    if rule.fullmatch(value):
        return value
    if value in mapped:
        return mapped[value]
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    base = re.sub(r"[^A-Za-z0-9_]", "_", value[:24].encode("ascii", "replace").decode("ascii")).strip("_")
    for length in (12, 20, 32, 64):
        candidate = f"t_{base}_{digest[:length]}" if base else f"t_{digest[:length]}"
        if rule.fullmatch(candidate) and candidate not in taken:
            mapped[value] = candidate
            taken.add(candidate)
            return candidate
    raise ValueError("no stand-in for a tool call's id or name")  # unreachable: sha256 has no such collisions


_JSON_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"')
"""A JSON string literal, escapes included (`_values` leaves them out: a text's brackets and commas are no values).
Possessive (Python 3.11): no backtracking state is kept, so a string of any length is matched in constant memory,
which is what RE2 was used for; RE2's bindings make a Python call per match, and 10**6 tiny turns (53 MB) took 77 s
to be refused (bad input round 22)."""
_VALUE_MARKS = (b"{", b"[", b",")


def _values(text: str | bytes, bound: int | None = None) -> int:
    """About how many values a JSON text holds: its `{`, `[` and `,` outside strings (an array of n items
    has n - 1 commas and a bracket; an object of n members, n - 1 commas and a brace). Counted on the raw
    text first (one pass in C per character, no copy), and when that count is over the bound (prose holds a
    comma every 60 characters or so) less those inside each string, counted in place: the text without its
    strings (`re2.sub`) was a copy, and a list of a piece between every two strings, of several times the
    text's size for one of many small strings. `bound`: `limits.MAX_CONVERSATION_VALUES` unless given (a session
    record's is `limits.MAX_SESSION_VALUES`)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    count = sum(data.count(mark) for mark in _VALUE_MARKS)
    if count <= (limits.MAX_CONVERSATION_VALUES if bound is None else bound):
        return count
    for string in _JSON_STRING.finditer(data):
        start, end = string.span()
        if end - start > 2:  # `""` holds none
            count -= data.count(b"{", start, end) + data.count(b"[", start, end) + data.count(b",", start, end)
    return count


_ORIGIN_MAX_CHARS = 4096
"""Longest field of an `Origin` (a path is at most this long): the origin is written into the head of
every continued session's file, where a listing reads it (a 2 MB one left a gemini-cli session unfindable)."""

_MEDIA_TYPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}")
"""An image's `mime_type` as RFC 6838 shapes one, nothing more: it becomes a data URL (`data:<type>;base64,`),
a header-like field, a JSON string of every session file; `;`, spaces and newlines have no place in it."""

_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_problem(value: object, max_depth: int | None, *, start: int = 0) -> str | None:
    """Why the strings and nesting of `value` (dicts, lists, keys included) cannot be written: a lone
    surrogate, which UTF-8 cannot encode (pydantic's JSON writes one in a key as garbage), or nesting
    deeper than `max_depth` (`value` itself at depth `start`). Iterative: any depth, no recursion."""
    stack: list[tuple[object, int]] = [(value, start)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and _SURROGATE.search(item):
                return "it holds text that is not valid Unicode (a lone surrogate such as '\\ud800')"
        elif isinstance(item, dict | list | tuple):
            if max_depth is not None and depth > max_depth:
                return f"it nests objects and arrays deeper than {max_depth} levels (tool arguments or data)"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return None


def signature_for(
    turn: ModelTurn, part: TextPart | ThinkingPart | ToolCallPart, provider: Provider | None
) -> str | None:
    """The signature of `part` (of `turn`) if a model of `provider` can read it, else None.

    Signatures never cross providers. Within Google they are bound to the model family that made
    them, but the API ignores (never rejects) one from another Gemini model, so they are kept there.
    """
    if part.signature is None or turn.provider is None or provider is None:
        return None
    return part.signature if turn.provider == provider else None
