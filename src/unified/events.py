"""The UnifiedEvent protocol: one typed stream, whatever backend runs the task.

This module is the contract between `unified` and its consumers. It imports nothing else of
`unified`, so it can be vendored, exported as JSON Schema (`unified schema`) and read by
non-Python consumers. `docs/protocol.md` describes every kind, field and ordering guarantee.

Ordering guarantees (enforced by the stream guard, not by each backend):
- `seq` starts at 0 and rises by one per event; `result` is the last event, exactly once.
- `warning` events about options a backend cannot honour come before `session_started`.
- every `tool_result` answers an earlier `tool_use` with the same `tool_use_id`;
- every subagent event, and every event carrying a `subagent_task_id`, belongs to a task
  announced by an earlier `subagent_started`.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, MutableMapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NoReturn, Self, TypeAlias, TypeVar, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, TypeAdapter, model_validator

PROTOCOL_VERSION = "2.4"
"""Bumped in its minor part for added kinds or optional fields, in its major part for anything else.

1.1: `tool_result.input`.
2.0: `tool_result.output` is text (what the model read) with structured extras in `tool_result.data`;
`warning`/`error` codes come from one registry (`WarningCode`, `ErrorCode`); `permission_decision`
gains `input` and `message`; a permission answer can change the input, carry a message, or stop the run.
2.1: `failover` (the run goes on on another backend, with a new `session_started` after it);
`result.backend`.
2.2: `Usage.cache_creation_tokens` and `Usage.cost_usd`.
2.3: `image_output` (an image the model generated, with its bytes).
2.4: warning code `session_moved` (gemini-cli: a session of another project continues in the run's cwd).
"""

JsonValue: TypeAlias = Any
"""Any value that survives `json.dumps` / `json.loads` unchanged."""

SupportLevel = Literal["full", "partial", "emulated", "none"]
Provider = Literal["google", "anthropic", "openai"]
"""A model provider: who made a model turn (and so who can read its signatures), and the provider behind a
backend (the capability matrix's `provider`). Shared here by `unified.conversations` and `unified.capabilities`."""
ResultStatus = Literal["success", "error", "cancelled", "max_turns", "interrupted"]
UserInputSource = Literal["model-tool", "permission", "mcp-elicitation"]


WarningCode = Literal[
    "unsupported_option",
    "retrying",
    "stream_resumed",
    "incomplete",
    "mcp_unavailable",
    "mcp_server_unavailable",
    "malformed_line",
    "session_repaired",
    "session_not_shared",
    "session_moved",
    "resume_via_stream_json",
    "tool_output_unavailable",
    "user_input_timeout",
    "user_input_handler_failed",
    "permission_answer_unsupported",
    "gemini_warning",
    "codex_warning",
    "image_omitted",
    "finish_max_tokens",
    "finish_other",
    "finish_language",
    "finish_malformed_function_call",
    "finish_unexpected_tool_call",
    "finish_malformed_response",
    "malformed_turn",
    "output_not_shown",
    "cwd_gone",
]
"""Every `warning.code`, each documented once in docs/protocol.md ("Codes")."""

ErrorCode = Literal[
    "unified_error",
    "internal_error",
    "protocol_violation",
    "configuration_error",
    "unsupported_option",
    "backend_unavailable",
    "no_backend",
    "auth_error",
    "rate_limited",
    "backend_error",
    "bad_request",
    "model_not_found",
    "missing_thought_signature",
    "interaction_not_found",
    "stream_interrupted",
    "stream_incomplete",
    "runaway_loop",
    "gemini_error",
    "session_error",
    "session_not_found",
    "ambiguous_session",
    "corrupt_session",
    "unsupported_session_format",
    "session_in_use",
    "session_store_unavailable",
    "idle_timeout",
    "total_timeout",
    "stopped_by_user",
    "finish_safety",
    "finish_recitation",
    "finish_blocklist",
    "finish_prohibited_content",
    "finish_spii",
    "finish_image_safety",
    "finish_image_prohibited_content",
    "finish_image_other",
    "finish_no_image",
    "finish_image_recitation",
    "finish_too_many_tool_calls",
    "finish_missing_thought_signature",
    "finish_model_armor",
    "finish_jailbreak",
    "finish_finish_reason_unspecified",
    "finish_blocked_reason_unspecified",
]
"""Every `error.code` (and `UnifiedError.code`), each documented once in docs/protocol.md ("Codes")."""

WARNING_CODES: frozenset[str] = frozenset(get_args(WarningCode))
ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))


_now = functools.partial(datetime.now, UTC)
"""An event's default `timestamp` (a partial, not a function: no Python frame per event)."""


_REQUIRED: Any = type("_Required", (), {"__repr__": lambda self: "<required>"})()
"""Stands in the template for a field with no default, until the caller gives it."""


class _Plan:
    """How `model_construct` builds one model class: every field in order, with its default."""

    __slots__ = ("factories", "normal_output", "required", "size", "subagent", "template", "timestamp")

    def __init__(self, model: type[BaseModel]) -> None:
        fields = model.model_fields
        self.subagent = "subagent_task_id" in fields
        """An event: `is_subagent` follows `subagent_task_id`, as its validator makes it."""
        self.timestamp = "timestamp" in fields
        """An event: a fresh `timestamp` unless one is given (the one factory every event has)."""
        self.normal_output = "output" in fields and "data" in fields
        """A `tool_result`: an `output` that is not text is normalised as its validator does."""
        self.template: dict[str, Any] = {}
        factories: list[tuple[str, Any]] = []
        required: list[str] = []
        for name, info in fields.items():
            if info.default_factory is not None:
                self.template[name] = None
                if name != "timestamp":
                    factories.append((name, info.default_factory))
            elif info.is_required():
                self.template[name] = _REQUIRED
                required.append(name)
            else:
                self.template[name] = info.default
        self.factories = tuple(factories)
        self.required = tuple(required)
        self.size = len(self.template)

    def refuse(self, model: type[BaseModel], values: dict[str, Any]) -> NoReturn:
        missing = [name for name in self.required if name not in values]
        unknown = sorted(values.keys() - self.template.keys())
        raise TypeError(f"{model.__name__}.model_construct: missing fields {missing}, unknown fields {unknown}")

    def ending(self, *, subagent: bool, output: bool) -> list[str]:
        """The written constructors' last lines (`constructor`, `_event_builder`), once `fields` and
        `assigned` hold the caller's values: what validation would add, then the model filled as
        pydantic's `model_construct` fills it (its four slots)."""
        lines: list[str] = []
        if subagent:  # `is_subagent` follows `subagent_task_id`, as its validator makes it
            lines += [
                "    if fields['subagent_task_id'] is not None and not fields['is_subagent']:",
                "        fields['is_subagent'] = True",
                "        assigned.add('is_subagent')",
            ]
        if output:  # a `tool_result`'s `output` that is not text, normalised as its validator does
            lines += ["    if not isinstance(fields['output'], (str, NoneType)):", "        normal_output(fields)"]
        return [
            *lines,
            "    built = new(model)",
            "    set_dict(built, fields)",
            "    set_fields_set(built, assigned)",
            "    set_extra(built, None)",
            "    set_private(built, None)",
            "    return built",
        ]

    def namespace(self, model: type[BaseModel]) -> dict[str, Any]:
        """What the lines of `ending` and a written constructor's defaults refer to."""
        return {
            "TEMPLATE": self.template,
            "model": model,
            "new": model.__new__,
            **_SLOT_SETTERS,
            "NoneType": type(None),
            "normal_output": _normal_tool_output,
            **{f"F{i}": factory for i, (_, factory) in enumerate(self.factories)},
        }

    def constructor(self, model: type[BaseModel]) -> Callable[..., Any]:
        """`model.model_construct` for this class, its checks written out (as `dataclasses` writes an
        `__init__`): no loop over the fields, no flag tests and no second call at run time. A subclass
        that inherits it is sent back to the generic one (`_Constructed.model_construct`), which writes
        that subclass its own."""
        lines = [
            "def model_construct(cls, _fields_set=None, **values):",
            "    if cls is not model:",
            "        return generic(cls, _fields_set, **values)",
            "    fields = {**TEMPLATE, **values}",  # the fields' order, as validation gives it
            "    if len(fields) != SIZE" + "".join(f" or fields[{n!r}] is REQUIRED" for n in self.required) + ":",
            "        refuse(model, values)",
        ]
        if self.timestamp:
            lines.append("    if 'timestamp' not in values: fields['timestamp'] = now()")
        lines += [
            f"    if {name!r} not in values: fields[{name!r}] = F{i}()" for i, (name, _) in enumerate(self.factories)
        ]
        lines.append("    assigned = {*values} if _fields_set is None else set(_fields_set)")
        lines += self.ending(subagent=self.subagent, output=self.normal_output)
        namespace = {
            **self.namespace(model),
            "SIZE": self.size,
            "REQUIRED": _REQUIRED,
            "refuse": self.refuse,
            "now": _now,
            "generic": _generic_construct,
        }
        exec("\n".join(lines), namespace)  # our own text, built from the model's fields
        written: Callable[..., Any] = namespace["model_construct"]
        written.__doc__ = _Constructed.model_construct.__doc__
        written.__qualname__ = f"{model.__qualname__}.model_construct"
        return written


_SLOT_SETTERS = {
    f"set_{name}": BaseModel.__dict__[f"__{slot}__"].__set__
    for name, slot in [
        ("dict", "dict"),
        ("fields_set", "pydantic_fields_set"),
        ("extra", "pydantic_extra"),
        ("private", "pydantic_private"),
    ]
}
"""The setters of a model's four slots, as pydantic's `model_construct` fills them: called directly,
each costs about half of `object.__setattr__`, which first checks the class's whole MRO (every event
is built with four)."""


def _generic_construct(cls: type[_Constructed], _fields_set: set[str] | None, **values: Any) -> Any:
    """Write `cls` its own `model_construct` (`_Plan.constructor`), install it, and build with it.

    Once written, a class's own is found in its `__dict__`: a caller that bound `cls.model_construct`
    before the first call (`build = TextDelta.model_construct`) keeps reaching this function, and
    writing the constructor again (an `exec`, ~45 us) for every such call made it 300 times slower."""
    return _written(cls)(cls, _fields_set, **values)


def _written(cls: type[BaseModel]) -> Callable[..., Any]:
    """`cls`'s own written `model_construct` (the function), written and installed on the first call."""
    own = cls.__dict__.get("model_construct")
    if isinstance(own, classmethod) and getattr(own.__func__, "__written__", False):
        constructor: Callable[..., Any] = own.__func__
    else:
        constructor = _Plan(cls).constructor(cls)
        constructor.__written__ = True  # type: ignore[attr-defined]
        type.__setattr__(cls, "model_construct", classmethod(constructor))
    return constructor


_Construct = TypeVar("_Construct", bound=Callable[..., Any])

_UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "<unset>"})()
"""An event builder's optional field that the caller left out (its default, not in `model_fields_set`)."""


def _event_builder(construct: _Construct, *names: str) -> _Construct:
    """`construct`, a protocol class's `model_construct` (`_event_builder(TextDelta.model_construct, "text")`),
    written out for a caller that only ever passes the fields `names`, by keyword: what a translator
    builds per native message. The class's required fields must be among `names`; the others may be left
    out. It builds what `model_construct` builds (the same fields, defaults and `model_fields_set`), with
    no `**values` to pack and merge and no check of which fields came: 2-4k instructions less an event
    (a `text_delta` 8.7k against 10.8k, a `tool_use` 9.6k against 13.4k). Typed as `construct` (the
    pydantic plugin's fields); a field not in `names` is a `TypeError` at the call."""
    model = construct.__self__  # type: ignore[attr-defined]
    plan = _Plan(model)
    unknown = [n for n in names if n not in plan.template]
    missing = [n for n in plan.required if n not in names]
    if unknown or missing or len(set(names)) != len(names):
        raise TypeError(f"{model.__name__}: builder fields {list(names)}; unknown {unknown}, missing {missing}")
    given = [n for n in names if n in plan.required]
    optional = [n for n in names if n not in plan.required]
    params = ", ".join([*given, *(f"{n}=UNSET" for n in optional)])
    lines = [f"def build(*, {params}):", "    fields = TEMPLATE.copy()"]
    lines += [f"    fields[{n!r}] = {n}" for n in given]
    lines.append("    assigned = {" + ", ".join(repr(n) for n in given) + "}" if given else "    assigned = set()")
    for n in optional:
        lines += [f"    if {n} is not UNSET:", f"        fields[{n!r}] = {n}", f"        assigned.add({n!r})"]
    if plan.timestamp:
        stamp = "    fields['timestamp'] = now(UTC)"
        lines.append(stamp if "timestamp" not in names else "    if timestamp is UNSET:\n" + "    " + stamp)
    for i, (name, _) in enumerate(plan.factories):
        set_default = f"    fields[{name!r}] = F{i}()"
        lines.append(set_default if name not in names else f"    if {name} is UNSET:\n    {set_default}")
    lines += plan.ending(
        subagent=plan.subagent and "subagent_task_id" in names, output=plan.normal_output and "output" in names
    )
    namespace = {**plan.namespace(model), "UNSET": _UNSET, "now": datetime.now, "UTC": UTC}
    exec("\n".join(lines), namespace)  # our own text, built from the model's fields
    built: _Construct = namespace["build"]
    built.__qualname__ = f"{model.__qualname__}.build({', '.join(names)})"
    return built


class _Constructed(BaseModel):
    """The protocol's models, with a `model_construct` that costs less than validating (pydantic's costs more)."""

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:  # type: ignore[override]  # the pydantic plugin's typed twin
        """A model from fields the caller guarantees valid, built without validation: the adapters' hot path.

        What validation would add is added: every default (a fresh `timestamp`, empty containers), and
        `is_subagent` when `subagent_task_id` is set; a `tool_result`'s `output` that is not text is
        normalised as its validator does. Field types are the caller's promise (pydantic's own
        `model_construct` makes the same one, at several times the cost of validating); an unknown
        field or a missing required one still raises `TypeError`. The stream guard in strict mode
        validates every event, so the test suites catch a broken promise.

        The first call for a class writes and installs that class's own version (`_Plan.constructor`).
        """
        built: Self = _generic_construct(cls, _fields_set, **values)
        return built


_Count = Annotated[int, Field(ge=0)]
"""A token count: none is below 0. A conversation file or a parsed event that says -3 is refused where it is read
(the adapters read the backends' counts defensively, `unified._internal.counts`), not summed into a run's usage."""


class Usage(_Constructed):
    """Token counts for a run, a turn or a subagent.

    `input_tokens` includes `cached_tokens` (as the Gemini API counts them); `output_tokens`
    excludes `thinking_tokens`. `estimated` is true when any figure was not reported by the
    backend but estimated (about 4 characters a token), so a consumer never mistakes a guess
    for a measurement.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    input_tokens: _Count = 0
    output_tokens: _Count = 0
    thinking_tokens: _Count = 0
    cached_tokens: _Count = 0
    tool_use_tokens: _Count = 0
    estimated: bool = False
    cache_creation_tokens: _Count = 0
    """Prompt tokens written to the provider's prompt cache (Anthropic's `cache_creation_input_tokens`);
    part of `input_tokens`, like `cached_tokens` (the tokens read from it)."""
    cost_usd: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    """What the backend says these tokens cost, in US dollars (Claude Code's list-price figure);
    None when it says nothing. Never estimated by unified."""

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.thinking_tokens + self.tool_use_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None if self.cost_usd is None and other.cost_usd is None else (self.cost_usd or 0) + (other.cost_usd or 0)
        )
        # Sums of valid counts are valid: built without validation (every run adds several), by a builder
        # written for all eight fields (1.0 us a sum against 1.5 for `model_construct`'s `**values`).
        return _usage_sum(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            thinking_tokens=self.thinking_tokens + other.thinking_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            tool_use_tokens=self.tool_use_tokens + other.tool_use_tokens,
            estimated=self.estimated or other.estimated,
            cache_creation_tokens=self.cache_creation_tokens + other.cache_creation_tokens,
            cost_usd=cost,
        )

    def is_empty(self) -> bool:
        return self.total_tokens == 0 and self.cached_tokens == 0


class _EventBase(_Constructed):
    """Fields every event carries. `seq` and `timestamp` are assigned by the stream guard."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    seq: int = -1
    timestamp: datetime = Field(default_factory=_now)
    session_id: str | None = None
    subagent_task_id: str | None = None
    is_subagent: bool = False
    native: JsonValue | None = Field(
        default=None, description="The raw backend event, only when the caller asked for it (debugging)."
    )

    @model_validator(mode="after")
    def _subagent_flag(self) -> _EventBase:
        if self.subagent_task_id is not None:
            self.is_subagent = True
        return self


class SessionStarted(_EventBase):
    """The backend has a session: from here on `session_id` is set on every event."""

    type: Literal["session_started"] = "session_started"
    protocol_version: str = PROTOCOL_VERSION
    backend: str
    model: str | None = None
    short_id: str | None = None
    resumed: bool = False
    cwd: str | None = None
    transport: str | None = Field(default=None, description="e.g. 'acp', 'stream-json', 'http'.")
    capabilities: dict[str, SupportLevel] = Field(default_factory=dict)


class TextDelta(_EventBase):
    """A piece of the assistant's visible answer; append it."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class AssistantMessage(_EventBase):
    """The whole visible text of one model turn, aggregated from its `text_delta`s."""

    type: Literal["assistant_message"] = "assistant_message"
    text: str


class Thinking(_EventBase):
    """A thought summary.

    `replace=True`: this text supersedes the previous thought as the current one (overwrite).
    `replace=False`: this text continues the current thought (append).
    """

    type: Literal["thinking"] = "thinking"
    text: str
    replace: bool
    subject: str | None = None
    signature: str | None = Field(default=None, description="Opaque thought signature (base64), if any.")


def _base64_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _bytes_of_base64(value: object) -> object:
    return base64.b64decode(value, validate=True) if isinstance(value, str) else value


Base64Bytes = Annotated[
    bytes,
    BeforeValidator(_bytes_of_base64),
    PlainSerializer(_base64_text, return_type=str, when_used="json"),
    Field(
        description="Bytes; in JSON, standard base64 text (RFC 4648, with padding).",
        json_schema_extra={"contentEncoding": "base64"},
    ),
]
"""Bytes in Python, standard base64 text in JSON (pydantic's own `base64` mode writes the URL-safe alphabet)."""


class ImageOutput(_EventBase):
    """An image the model generated: its bytes (`data`, base64 in JSON), or a `uri` where the backend keeps
    it when it sends no bytes. It comes inside a model message, as `thinking` does: the text around it
    stays one `assistant_message`. `size_bytes` is the image's size (None when only a uri is known)."""

    type: Literal["image_output"] = "image_output"
    mime_type: str
    data: Base64Bytes | None = None
    uri: str | None = None
    size_bytes: int | None = None


class ToolUse(_EventBase):
    """The model asked for a tool call. `server_side` calls run on Google's side (search, code)."""

    type: Literal["tool_use"] = "tool_use"
    tool_use_id: str
    name: str
    input: dict[str, JsonValue] = Field(default_factory=dict)
    server_side: bool = False


class ToolProgress(_EventBase):
    """Interim news from a running tool call (status, partial output)."""

    type: Literal["tool_progress"] = "tool_progress"
    tool_use_id: str
    status: str | None = None
    message: str | None = None


DecidedBy = Literal["policy", "user", "approval_mode", "backend", "timeout"]


class PermissionDecision(_EventBase):
    """Whether a tool call may run, and who decided; exactly one per client-side `tool_use`.

    `decided_by`: `policy` (a rule), `approval_mode` (the mode's shipped default), `user` (the
    caller's `on_user_input`), `backend` (the backend's own policy, e.g. the Gemini CLI allowing a
    read-only call without asking), `timeout` (nobody answered in time).
    """

    type: Literal["permission_decision"] = "permission_decision"
    tool_use_id: str
    tool_name: str
    decision: Literal["allow", "deny"]
    decided_by: DecidedBy
    rule: str | None = None
    reason: str | None = None
    input: dict[str, JsonValue] | None = Field(
        default=None, description="The input the call runs with when the user changed it (else null: the tool_use's)."
    )
    message: str | None = Field(default=None, description="The user's message the model receives with a denial.")
    stops_run: bool = Field(default=False, description="The user stopped the run here (result: interrupted).")


def tool_output_text(output: JsonValue) -> tuple[str | None, dict[str, JsonValue] | None]:
    """(text, structured extras) of a tool's output in any shape a backend reports it.

    A function response `{"output": text}` or `{"error": text}` is that text (what the model read);
    any other structure is its JSON text, with the structure itself as the extras.
    """
    if output is None or isinstance(output, str):
        return output, None
    if isinstance(output, dict):
        keys = set(output)
        if keys in ({"output"}, {"error"}) and isinstance(output.get("output", output.get("error")), str):
            return str(output.get("output", output.get("error"))), None
        return json.dumps(output, ensure_ascii=False, default=str), output
    return json.dumps(output, ensure_ascii=False, default=str), {"value": output}


def _normal_tool_output(fields: MutableMapping[str, Any]) -> None:
    """A `tool_result`'s fields in their normal form, in place: an `output` that is not text becomes text,
    its structured extras `data` unless `data` is given. The one place for it: validation, the written-out
    `model_construct` and the stream guard (for an `output` set without either) all call it."""
    output = fields.get("output")
    if output is not None and not isinstance(output, str):
        fields["output"], extras = tool_output_text(output)
        if extras is not None and fields.get("data") is None:
            fields["data"] = extras


class ToolResult(_EventBase):
    """The outcome of an earlier `tool_use` with the same id.

    `output` is text: what the model read (for an error, the error text). Structured extras (a
    server-side tool's payload, a structured MCP result) are in `data`. A backend may hand over
    any JSON value: it is normalised on construction (`tool_output_text`).
    """

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    output: str | None = None
    data: dict[str, JsonValue] | None = Field(
        default=None, description="Structured extras of the output (server-side tool payloads, structured results)."
    )
    is_error: bool = False
    server_side: bool = False
    input: dict[str, JsonValue] | None = Field(
        default=None,
        description="The arguments the call ran with, when they differ from its tool_use's input (changed by "
        "the user's permission answer) or that tool_use could not carry them; else null.",
    )

    @model_validator(mode="before")
    @classmethod
    def _normal_output(cls, values: Any) -> Any:
        if isinstance(values, dict) and "output" in values and not isinstance(values["output"], str | None):
            values = dict(values)  # the caller's dict stays as it was
            _normal_tool_output(values)
        return values


class SubagentStarted(_EventBase):
    """A subagent (a delegated task with its own conversation) began; `task_id` keys its events."""

    type: Literal["subagent_started"] = "subagent_started"
    task_id: str
    agent_name: str
    description: str | None = None
    parent_tool_use_id: str | None = None


class SubagentProgress(_EventBase):
    """Interim news of a subagent announced by `subagent_started` (same `task_id`)."""

    type: Literal["subagent_progress"] = "subagent_progress"
    task_id: str
    agent_name: str | None = None
    status: str | None = None
    message: str | None = None


class SubagentCompleted(_EventBase):
    """A subagent's task ended: how (`status`), its final answer (`result`) and what it used (`usage`)."""

    type: Literal["subagent_completed"] = "subagent_completed"
    task_id: str
    agent_name: str | None = None
    status: Literal["completed", "failed", "cancelled", "timeout", "max_turns"] = "completed"
    result: str | None = None
    usage: Usage | None = None


class QuestionOption(BaseModel):
    """One choice of a `Question`: answer with its `id`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str
    label: str
    description: str | None = None


class Question(BaseModel):
    """One question of a `user_input_request`. An empty `options` list means free text."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    id: str
    prompt: str
    header: str | None = None
    options: list[QuestionOption] = Field(default_factory=list)
    multi_select: bool = False


PERMISSION_QUESTION_ID = "permission"
ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
DENY = "deny"


class UserInputRequest(_EventBase):
    """The run waits for an answer from the caller's `on_user_input` callback.

    Permission prompts (`source="permission"`) have one question with id `permission` and the
    options `allow_once`, `allow_always`, `deny`.
    """

    type: Literal["user_input_request"] = "user_input_request"
    request_id: str
    source: UserInputSource
    questions: list[Question]
    tool_use_id: str | None = None
    tool_name: str | None = None
    details: dict[str, JsonValue] = Field(default_factory=dict)


def permission_request(
    request_id: str,
    prompt: str,
    *,
    tool_use_id: str | None,
    tool_name: str | None,
    details: dict[str, JsonValue] | None = None,
    session_id: str | None = None,
) -> UserInputRequest:
    """The one shape of a permission prompt: question `permission`, options allow once / always / deny."""
    options = [
        QuestionOption(id=ALLOW_ONCE, label="Allow once"),
        QuestionOption(id=ALLOW_ALWAYS, label="Allow for this session"),
        QuestionOption(id=DENY, label="Deny"),
    ]
    return UserInputRequest(
        request_id=request_id,
        source="permission",
        questions=[Question(id=PERMISSION_QUESTION_ID, prompt=prompt, options=options)],
        tool_use_id=tool_use_id,
        tool_name=tool_name,
        details=details or {},
        session_id=session_id,
    )


class UserInputResponse(BaseModel):
    """The caller's answer: question id → chosen option id(s) or free text. `cancelled` = no answer.

    For a permission prompt also: `updated_input` (allow, and run the call with this input instead),
    `message` (with a denial: the text the model receives), `stop` (deny and end the run; its
    `result.status` is `interrupted`). Use the constructors `allow`, `deny`, `stop_run`.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    answers: dict[str, str | list[str]] = Field(default_factory=dict)
    cancelled: bool = False
    updated_input: dict[str, JsonValue] | None = None
    message: str | None = None
    stop: bool = False

    @classmethod
    def allow(cls, *, always: bool = False, updated_input: dict[str, JsonValue] | None = None) -> UserInputResponse:
        answer = ALLOW_ALWAYS if always else ALLOW_ONCE
        return cls(answers={PERMISSION_QUESTION_ID: answer}, updated_input=updated_input)

    @classmethod
    def deny(cls, message: str | None = None) -> UserInputResponse:
        return cls(answers={PERMISSION_QUESTION_ID: DENY}, message=message)

    @classmethod
    def stop_run(cls, message: str | None = None) -> UserInputResponse:
        """Deny the call and end the run (`result.status` `interrupted`)."""
        return cls(answers={PERMISSION_QUESTION_ID: DENY}, message=message, stop=True)

    def permission(self) -> Literal["allow_once", "allow_always", "deny"]:
        """Read this answer as a permission decision; anything unclear is a denial."""
        answer = self.answers.get(PERMISSION_QUESTION_ID)
        if self.cancelled or self.stop or answer not in (ALLOW_ONCE, ALLOW_ALWAYS):
            return "deny"
        return "allow_always" if answer == ALLOW_ALWAYS else "allow_once"


class WarningEvent(_EventBase):
    """Something the caller should know that does not stop the run."""

    type: Literal["warning"] = "warning"
    code: str = Field(description="One of `WarningCode` (docs/protocol.md, Codes); the stream guard checks it.")
    message: str


class ErrorEvent(_EventBase):
    """Something failed. `fatal` errors are followed by `result(status="error")`."""

    type: Literal["error"] = "error"
    code: str = Field(description="One of `ErrorCode` (docs/protocol.md, Codes); the stream guard checks it.")
    message: str
    retryable: bool = False
    fatal: bool = False
    details: dict[str, JsonValue] = Field(default_factory=dict)


class Failover(_EventBase):
    """The backend gave out (`code`, after its own retries) and the run goes on on `to_backend`,
    with the conversation so far: a `session_started` of the new backend follows, and every later
    event is that backend's. `left_session` is the short id of the session left behind (it still
    resumes on its own backend). A turn the failed backend had begun and not finished is answered
    again by the new one; a tool call that ran is never run again."""

    type: Literal["failover"] = "failover"
    from_backend: str
    to_backend: str
    code: str
    message: str
    left_session: str | None = None


class Result(_EventBase):
    """The last event of every stream, exactly once."""

    type: Literal["result"] = "result"
    status: ResultStatus
    final_text: str = ""
    usage: Usage = Field(default_factory=Usage)
    duration_ms: int = 0
    turns: int = 0
    short_id: str | None = None
    """The session that resumes this conversation (after a failover, the continued one's; when the fallback failed
    before it began a session, the session left as it was)."""
    backend: str | None = None
    """The backend of `short_id`'s session, so `resume=short_id` on it continues the conversation (after a failover,
    the last one that began a session; `error` names a fallback that failed first); without a session, the backend
    that ran last."""
    error: str | None = None


UnifiedEvent = Annotated[
    SessionStarted
    | TextDelta
    | AssistantMessage
    | Thinking
    | ImageOutput
    | ToolUse
    | ToolProgress
    | PermissionDecision
    | ToolResult
    | SubagentStarted
    | SubagentProgress
    | SubagentCompleted
    | UserInputRequest
    | WarningEvent
    | ErrorEvent
    | Failover
    | Result,
    Field(discriminator="type"),
]

EVENT_TYPES: tuple[type[_EventBase], ...] = (
    SessionStarted,
    TextDelta,
    AssistantMessage,
    Thinking,
    ImageOutput,
    ToolUse,
    ToolProgress,
    PermissionDecision,
    ToolResult,
    SubagentStarted,
    SubagentProgress,
    SubagentCompleted,
    UserInputRequest,
    WarningEvent,
    ErrorEvent,
    Failover,
    Result,
)


_usage_sum = _event_builder(Usage.model_construct, *Usage.model_fields)
"""`Usage.model_construct` written for a caller that gives every field (`Usage.__add__`)."""


def build_validators() -> None:
    """Build every event model's validator now.

    The models defer it (`defer_build`) so that importing the protocol stays cheap for those who
    only read types; the stream guard calls this when it loads, so no run builds one on its
    event loop.
    """
    models: tuple[type[BaseModel], ...] = (*EVENT_TYPES, Usage, QuestionOption, Question, UserInputResponse)
    for model in models:
        model.model_rebuild()


@functools.cache
def _adapter() -> TypeAdapter[UnifiedEvent]:
    """The validator of the whole union, built on first use: most importers never parse an event."""
    return TypeAdapter(UnifiedEvent)


def parse_event(data: str | bytes | dict[str, Any]) -> UnifiedEvent:
    """Read one event from its JSON text or its dict form."""
    if isinstance(data, dict):
        return _adapter().validate_python(data)
    return _adapter().validate_json(data)


def event_json_schema() -> dict[str, Any]:
    """JSON Schema of `UnifiedEvent`, for consumers in other languages."""
    schema = _adapter().json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "UnifiedEvent"
    schema["description"] = f"unified event protocol {PROTOCOL_VERSION}"
    return schema


def dump_event(event: _EventBase) -> str:
    """One event as a JSON line (no `native` unless it was captured)."""
    return event.model_dump_json(exclude_none=False)


__all__ = [
    "ALLOW_ALWAYS",
    "ALLOW_ONCE",
    "DENY",
    "ERROR_CODES",
    "EVENT_TYPES",
    "PERMISSION_QUESTION_ID",
    "PROTOCOL_VERSION",
    "WARNING_CODES",
    "AssistantMessage",
    "DecidedBy",
    "ErrorCode",
    "ErrorEvent",
    "Failover",
    "ImageOutput",
    "PermissionDecision",
    "Provider",
    "Question",
    "QuestionOption",
    "Result",
    "ResultStatus",
    "SessionStarted",
    "SubagentCompleted",
    "SubagentProgress",
    "SubagentStarted",
    "SupportLevel",
    "TextDelta",
    "Thinking",
    "ToolProgress",
    "ToolResult",
    "ToolUse",
    "UnifiedEvent",
    "Usage",
    "UserInputRequest",
    "UserInputResponse",
    "UserInputSource",
    "WarningCode",
    "WarningEvent",
    "build_validators",
    "dump_event",
    "event_json_schema",
    "parse_event",
    "permission_request",
    "tool_output_text",
]
