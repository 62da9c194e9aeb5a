"""The stream guard: the one place that makes every backend's stream well-formed.

Adapters push events; the guard assigns `seq` and `session_id`, aggregates `text_delta`s into
`assistant_message`s, sums usage (estimating what a backend failed to report, and saying so),
checks the protocol's invariants, enforces idle and total timeouts, replaces secret values in
every event (server error text, tool output and model text may quote a key), and ends every stream
with exactly one `result`, whether the adapter returned, raised, crashed or was cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from types import UnionType
from typing import Any, Literal, NoReturn, Union, get_args, get_origin

import anyio
import sniffio
from anyio.abc import TaskGroup
from anyio.lowlevel import checkpoint_if_cancelled
from pydantic import BaseModel, ValidationError

from unified import _limits as limits
from unified._files import unwritable
from unified._redaction import (
    Redactor,
    SplitGuard,
    key_shapes_hidden,
    redact_key_shapes,
    redactor,
    run_secrets,
    use_run_secrets,
)
from unified.backends import Backend, RunOutcome, UnsupportedOption, refusal
from unified.errors import BackendError, ProtocolViolation, RunStopped, UnifiedError
from unified.events import (
    ERROR_CODES,
    EVENT_TYPES,
    WARNING_CODES,
    AssistantMessage,
    DecidedBy,
    ErrorEvent,
    Failover,
    ImageOutput,
    JsonValue,
    PermissionDecision,
    Result,
    ResultStatus,
    SessionStarted,
    SubagentCompleted,
    SubagentProgress,
    SubagentStarted,
    SupportLevel,
    TextDelta,
    Thinking,
    ToolProgress,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    Usage,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
    _event_builder,
    _normal_tool_output,
    build_validators,
)
from unified.types import ExecuteParams

# The event the guard builds once per model message, by a builder written for the fields it is given
# (`_event_builder`).
_assistant_message = _event_builder(AssistantMessage.model_construct, "text", "subagent_task_id")


__all__ = ["GuardedStream", "StopReason", "StreamGuard", "announce_unsupported_options", "estimate_tokens"]

build_validators()  # deferred by `import unified`; built here, before any run, not on its event loop

_BUFFER = 128
"""Events in flight between adapter and consumer: bounded, so a slow consumer slows the backend
instead of growing memory. Each time the buffer fills, the run waits and the event loop switches
tasks twice (about 10 us): 128 halves those switches against 64 (2.8% less CPU an event on a run of
2,000 text deltas; 256 gained nothing more), and a reply of up to 128 events passes in one fill."""


class _Channel:
    """The events in flight from one run's guard to its one consumer: at most `_BUFFER`, in order.

    What anyio's memory object streams do for any number of senders and receivers, cut to what the
    guard needs: a deque, and an `anyio.Event` made only when a side has to wait (the consumer for an
    event, the guard for room). Every event of every run passes here; a put and a get cost ~0.05 us
    against ~0.25 for a stream's `send_nowait` and `receive_nowait` (and 1 us to make, against 7.5).
    """

    __slots__ = ("_items", "_readable", "_writable", "receiving", "sending")

    def __init__(self) -> None:
        self._items: deque[UnifiedEvent] = deque()
        self._readable: anyio.Event | None = None
        """Set (and dropped) by the next put or close: the consumer waits on it for an event."""
        self._writable: anyio.Event | None = None
        """Set (and dropped) by the next get or close: the guard waits on it for room."""
        self.sending = True
        """The guard may still put events (False once the run is over)."""
        self.receiving = True
        """The consumer still reads (False once it closed the stream)."""

    def put_nowait(self, event: UnifiedEvent) -> bool:
        """Queue `event`; False when the buffer is full. Raises `BrokenResourceError` once the consumer left."""
        if not self.receiving:
            raise anyio.BrokenResourceError
        items = self._items
        if len(items) >= _BUFFER:
            return False
        items.append(event)
        readable = self._readable
        if readable is not None:
            self._readable = None
            readable.set()
        return True

    async def put(self, event: UnifiedEvent) -> None:
        """Queue `event`, waiting for room (the consumer reads slower than the backend writes)."""
        while not self.put_nowait(event):
            writable = self._writable
            if writable is None:
                writable = self._writable = anyio.Event()
            await writable.wait()

    def get_nowait(self) -> UnifiedEvent | None:
        """The next event if one is queued (the consumer's hot path: no trip through the event loop)."""
        items = self._items
        if not items or not self.receiving:
            return None
        writable = self._writable
        if writable is not None:
            self._writable = None
            writable.set()
        return items.popleft()

    async def get(self) -> UnifiedEvent:
        """The next event, waiting for it. Raises `EndOfStream` once the run is over and every event was
        read, `ClosedResourceError` once the consumer closed."""
        while True:
            if not self.receiving:
                raise anyio.ClosedResourceError
            event = self.get_nowait()
            if event is not None:
                return event
            if not self.sending:
                raise anyio.EndOfStream
            readable = self._readable
            if readable is None:
                readable = self._readable = anyio.Event()
            await readable.wait()

    def close_sending(self) -> None:
        """The run is over: the consumer reads what is queued, then the end."""
        self.sending = False
        readable, self._readable = self._readable, None
        if readable is not None:
            readable.set()

    def close_receiving(self) -> None:
        """The consumer left: what is queued is dropped, and the guard's next put fails."""
        self.receiving = False
        self._items.clear()
        writable, self._writable = self._writable, None
        if writable is not None:
            writable.set()


StopReason = Literal["cancelled", "interrupted", "idle_timeout", "total_timeout"]

_PASS_BEFORE_SESSION = frozenset({WarningEvent, ErrorEvent, SessionStarted, Failover})
_STREAMED = frozenset({TextDelta, Thinking})
_TEXT_OR_NONE = frozenset({str, type(None)})
"""A `tool_result` output already in its normal form."""
_KEEPS_MESSAGE_OPEN = frozenset({TextDelta, Thinking, ImageOutput, SessionStarted, WarningEvent})
"""Kinds that come inside a model message without ending it; any other kind first flushes the
`assistant_message` of its scope."""


def _capability_snapshot(backend: str) -> dict[str, SupportLevel]:
    """The matrix's row for `backend`, loaded only once a session starts (keeps `import unified` light)."""
    from unified import capabilities

    try:
        return capabilities.snapshot(backend)
    except KeyError:  # a backend outside the matrix (a consumer's own): nothing to claim
        return {}


def estimate_tokens(chars: int) -> int:
    """About four characters a token: the fallback when a backend reports nothing."""
    return math.ceil(chars / 4)


def _holds_secret(value: object, clean: Redactor, shortest: int) -> bool:
    """Whether any string in `value` (however deep: dicts, keys included, lists, models) holds a secret.
    A walk that allocates nothing, and skips every string shorter than the shortest secret (ids,
    names, codes: most of an event's strings): almost every value holds none."""
    if isinstance(value, str):
        return len(value) >= shortest and clean.found_in(value)
    if isinstance(value, dict):
        for key, item in value.items():
            if _holds_secret(key, clean, shortest) or _holds_secret(item, clean, shortest):
                return True
        return False
    if isinstance(value, (list, tuple)):
        for item in value:  # noqa: SIM110  # a loop, not any(<generator>): twice as fast on this path
            if _holds_secret(item, clean, shortest):
                return True
        return False
    if isinstance(value, BaseModel):
        return _holds_secret(value.__dict__, clean, shortest)
    return False


def _scrub(event: UnifiedEvent, clean: Redactor) -> None:
    """Replace the secrets in `event`'s fields (the event is the guard's to deliver; its values are not).
    Only the fields that can hold text are looked at (`_Shape.text_fields`): never its type, numbers or flags.
    A plain string (most of them) is tested here, without a call."""
    fields = event.__dict__
    shortest = len(clean.values[-1])  # longest first
    cls = event.__class__
    for name in (_SHAPES.get(cls) or _shape_of(cls)).text_fields:
        value = fields[name]
        if value is None:
            continue
        if value.__class__ is str:
            if len(value) >= shortest and clean.found_in(value):
                fields[name] = clean(value)
        elif _holds_secret(value, clean, shortest):
            fields[name] = clean.json(value)  # copies: an adapter may still hold the value


def _diagnostic(fields: dict[str, Any]) -> None:
    """An error's or a warning's `message` and `details` (an event's fields) with every credential-shaped
    string replaced (`KEY_SHAPES`), whoever's: a provider's message may quote a request that held one (a
    prompt, a conversation, a tool's output), and a diagnostic never needs it. Errors are few: the cost
    is not on the stream's hot path."""
    message = fields.get("message")
    if isinstance(message, str):
        fields["message"] = redact_key_shapes(message)
    if fields.get("details"):
        fields["details"] = key_shapes_hidden(fields["details"])


_DIAGNOSTICS = frozenset({ErrorEvent, WarningEvent})


def _quotable(event: UnifiedEvent) -> dict[str, Any]:
    """An event as a protocol violation quotes it: a streamed piece's text by its length only (it
    may hold part of a secret, which only the whole stream shows whole)."""
    dumped = event.model_dump(mode="json")
    if type(event) in _STREAMED:
        dumped["text"] = f"<{len(dumped.get('text') or '')} characters>"
    return dumped


def _can_hold(annotation: Any, *, text: bool) -> bool:
    """Whether a field of this type can hold JSON containers (with `text`: or any string at all)."""
    if annotation is Any or (text and annotation is str):
        return True
    origin = get_origin(annotation)
    if origin in (dict, list, tuple):
        return True
    if origin in (Union, UnionType):
        return any(_can_hold(a, text=text) for a in get_args(annotation))
    if text and isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return any(_can_hold(info.annotation, text=True) for info in annotation.model_fields.values())
    return False


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the guard needs to know of one event class, worked out once from its fields: the slow
    path reads one of these per event instead of asking the event's kind a dozen questions."""

    kind: type[BaseModel]
    """The protocol kind (the class itself, or the protocol class a subclass extends): the rules' key."""
    json_fields: tuple[str, ...]
    """Fields that can hold JSON containers (tool input, data, details), `native` aside: the depth bound's."""
    text_fields: tuple[str, ...]
    """Fields that can hold text (strings, JSON, models with strings): the redaction's. Never the
    event's `type`, numbers, flags, timestamp or usage."""
    rule: Callable[[_Aggregator, Any], str | None] | None
    """The protocol's rule for this kind (`_KIND_RULES`), if it has one."""
    record: Callable[[_Aggregator, Any], None] | None
    """What the aggregator remembers of this kind (`_KIND_RECORDS`), if anything."""
    before_session: bool
    """The kind may come before `session_started`."""
    keeps_message_open: bool
    """The kind comes inside a model message without ending it (`_KEEPS_MESSAGE_OPEN`)."""


_PROTOCOL_KINDS = frozenset(EVENT_TYPES)
_SHAPES: dict[type[BaseModel], _Shape] = {}


def _shape_of(cls: type[BaseModel]) -> _Shape:
    shape = _SHAPES.get(cls)
    if shape is None:
        fields = cls.model_fields.items()
        kind = next(base for base in cls.__mro__ if base in _PROTOCOL_KINDS)
        shape = _SHAPES[cls] = _Shape(
            kind=kind,
            json_fields=tuple(n for n, info in fields if n != "native" and _can_hold(info.annotation, text=False)),
            text_fields=tuple(n for n, info in fields if n != "type" and _can_hold(info.annotation, text=True)),
            rule=_KIND_RULES.get(kind),
            record=_KIND_RECORDS.get(kind),
            before_session=kind in _PASS_BEFORE_SESSION,
            keeps_message_open=kind in _KEEPS_MESSAGE_OPEN,
        )
    return shape


def _too_deep(event: UnifiedEvent, name: str, backend: str) -> BackendError:
    """The error for an event holding data nested deeper than `MAX_JSON_DEPTH` in its field `name` (a
    tool's input or output, native data): past that depth the redaction, the normal form and a
    consumer's JSON encoder would recurse without bound. A typed error naming the field, never a
    RecursionError. The guard looks only at the fields that can hold containers (`_Shape.json_fields`;
    `native` only when it is kept)."""
    return BackendError(
        f"the {backend} backend sent a {event.type} event whose {name} is nested deeper than "
        f"{limits.MAX_JSON_DEPTH} levels; it was refused",
        hint="the backend's output is malformed (or hostile); run again",
    )


def _validated(event: UnifiedEvent) -> None:
    """Strict mode: the event's fields as validation would accept them (events built by `model_construct`
    carry their adapter's promise; the test suites run the guard strict, so a broken promise fails there)."""
    try:
        type(event).model_validate(event.__dict__)
    except ValidationError as exc:
        raise ProtocolViolation(f"a {event.type} event with invalid fields: {exc}") from None


class _ConsumerGone(Exception):
    """The consumer closed the stream; the run unwinds without anyone to tell."""


class _Aggregator:
    """Per-run bookkeeping: open tool calls, subagent tasks, message text, usage."""

    def __init__(self) -> None:
        self.tool_uses: set[str] = set()
        self.answered: set[str] = set()
        self.running_locally: set[str] = set()
        """Local tool calls announced and not answered yet: their time is the tool's, not idle time."""
        self.decided: set[str] = set()
        self.prompted: dict[str, str] = {}
        """Calls a permission prompt asked about (id -> tool name): each still undecided at the run's end gets its
        `permission_decision` then (`StreamGuard._undecided`)."""
        self.tasks: set[str] = set()
        self.finished_tasks: set[str] = set()
        self.buffers: dict[str | None, list[str]] = {}
        self.last_message = ""
        self.usage = Usage.model_construct()
        self.subagent_usage: Usage | None = None
        """The subagents' usage summed, once one reported any (most runs have none: no sum at the end)."""
        self.text_chars = 0
        self.thought_chars = 0
        self.session: SessionStarted | None = None
        self.session_id: str | None = None
        """The session's id, read once (every event is stamped with it; a model's attribute costs a hook)."""
        self.switched = False
        """A `failover` came: the next backend's `session_started` opens a new session (and id space)."""

    def _session_rule(self, event: SessionStarted) -> str | None:
        return "a second session_started" if self.session is not None and not self.switched else None

    def _guard_made(self, event: AssistantMessage | Result) -> str | None:
        return f"adapters must not emit {event.type}: the stream guard makes it"

    # The rules and records read each field of an event once: a field of a pydantic model is read through its
    # class's `__getattr__` hook (~3x a dict's item), and every tool call's events come this way.

    def _tool_use_rule(self, event: ToolUse) -> str | None:
        tool_use_id = event.tool_use_id
        if tool_use_id in self.tool_uses:
            return f"tool_use id {tool_use_id!r} was used twice"
        return None

    def _tool_result_rule(self, event: ToolResult) -> str | None:
        tool_use_id = event.tool_use_id
        if tool_use_id not in self.tool_uses:
            return f"tool_result answers {tool_use_id!r}, which no earlier tool_use announced"
        if tool_use_id in self.answered:
            return f"tool_use {tool_use_id!r} was answered twice"
        return None

    def _decision_rule(self, event: PermissionDecision) -> str | None:
        tool_use_id = event.tool_use_id
        if tool_use_id not in self.tool_uses:
            return f"permission_decision for {tool_use_id!r}, which no earlier tool_use announced"
        if tool_use_id in self.decided:
            return f"tool_use {tool_use_id!r} got a second permission_decision"
        return None

    def _warning_rule(self, event: WarningEvent) -> str | None:
        if event.code not in WARNING_CODES:
            return f"warning code {event.code!r} is not in the registry (unified.events.WarningCode)"
        return None

    def _error_rule(self, event: ErrorEvent) -> str | None:
        if event.code not in ERROR_CODES:
            return f"error code {event.code!r} is not in the registry (unified.events.ErrorCode)"
        return None

    def _task_started_rule(self, event: SubagentStarted) -> str | None:
        if event.task_id in self.tasks:
            return f"subagent task {event.task_id!r} was started twice"
        return None

    def _task_progress_rule(self, event: SubagentProgress | SubagentCompleted) -> str | None:
        if event.task_id not in self.tasks:
            return f"{event.type} for subagent task {event.task_id!r}, which no subagent_started announced"
        return None

    def _task_completed_rule(self, event: SubagentCompleted) -> str | None:
        problem = self._task_progress_rule(event)
        if problem is None and event.task_id in self.finished_tasks:
            return f"subagent task {event.task_id!r} completed twice"
        return problem

    def _text(self, event: TextDelta) -> None:
        self.buffers.setdefault(event.subagent_task_id, []).append(event.text)
        if event.subagent_task_id is None:
            self.text_chars += len(event.text)

    def _thought(self, event: Thinking) -> None:
        if event.subagent_task_id is None:
            self.thought_chars += len(event.text)

    def _tool_use(self, event: ToolUse) -> None:
        fields = event.__dict__
        tool_use_id = fields["tool_use_id"]
        self.tool_uses.add(tool_use_id)
        if not fields["server_side"]:
            self.running_locally.add(tool_use_id)

    def _tool_result(self, event: ToolResult) -> None:
        tool_use_id = event.tool_use_id
        self.answered.add(tool_use_id)
        self.running_locally.discard(tool_use_id)

    def _decision(self, event: PermissionDecision) -> None:
        self.decided.add(event.tool_use_id)

    def _prompt(self, event: UserInputRequest) -> None:
        if event.source == "permission" and event.tool_use_id in self.tool_uses:
            self.prompted[event.tool_use_id] = event.tool_name or ""

    def _session(self, event: SessionStarted) -> None:
        self.session = event
        self.session_id = event.session_id
        self.switched = False

    def _failover(self, event: Failover) -> None:
        self.switched = True  # tool and task ids are per session: the next one starts afresh
        self.tool_uses.clear()
        self.answered.clear()
        self.running_locally.clear()
        self.decided.clear()
        self.prompted.clear()
        self.tasks.clear()
        self.finished_tasks.clear()

    def _task_started(self, event: SubagentStarted) -> None:
        self.tasks.add(event.task_id)

    def _task_completed(self, event: SubagentCompleted) -> None:
        self.finished_tasks.add(event.task_id)
        if event.usage is not None:
            # A sum, never the event's own usage: the consumer holds that one, and may change it.
            self.subagent_usage = (self.subagent_usage or Usage.model_construct()) + event.usage

    def add_usage(self, usage: Usage) -> Usage:
        """Add one report of main-chat usage, estimating zeros the text proves wrong; returns it as added."""
        estimates: dict[str, Any] = {}
        if usage.output_tokens == 0 and self.text_chars:
            estimates["output_tokens"] = estimate_tokens(self.text_chars)
        if usage.thinking_tokens == 0 and self.thought_chars:
            estimates["thinking_tokens"] = estimate_tokens(self.thought_chars)
        if estimates:  # one copy for both (a copy costs about 2 us; most runs with thoughts estimate both)
            usage = usage.model_copy(update={**estimates, "estimated": True})
        self.usage = self.usage + usage
        self.text_chars = 0
        self.thought_chars = 0
        return usage

    def total_usage(self) -> Usage:
        if self.text_chars or self.thought_chars:
            self.add_usage(Usage.model_construct())  # output nobody reported: estimate it, flagged
        return self.usage if self.subagent_usage is None else self.usage + self.subagent_usage


_KIND_RULES: dict[type[BaseModel], Callable[[_Aggregator, Any], str | None]] = {
    SessionStarted: _Aggregator._session_rule,
    AssistantMessage: _Aggregator._guard_made,
    Result: _Aggregator._guard_made,
    ToolUse: _Aggregator._tool_use_rule,
    ToolResult: _Aggregator._tool_result_rule,
    PermissionDecision: _Aggregator._decision_rule,
    WarningEvent: _Aggregator._warning_rule,
    ErrorEvent: _Aggregator._error_rule,
    SubagentStarted: _Aggregator._task_started_rule,
    SubagentProgress: _Aggregator._task_progress_rule,
    SubagentCompleted: _Aggregator._task_completed_rule,
}
"""The protocol's rules for one kind of event (docs/protocol.md, "Ordering guarantees"), looked up once per
event instead of asking every kind in turn."""

_KIND_RECORDS: dict[type[BaseModel], Callable[[_Aggregator, Any], None]] = {
    TextDelta: _Aggregator._text,
    Thinking: _Aggregator._thought,
    ToolUse: _Aggregator._tool_use,
    ToolResult: _Aggregator._tool_result,
    PermissionDecision: _Aggregator._decision,
    UserInputRequest: _Aggregator._prompt,
    SessionStarted: _Aggregator._session,
    Failover: _Aggregator._failover,
    SubagentStarted: _Aggregator._task_started,
    SubagentCompleted: _Aggregator._task_completed,
}
"""What the aggregator remembers of each kind (the kinds absent here leave nothing to remember)."""


class _Context:
    """The RunContext an adapter sees; every emit goes through the guard's checks."""

    def __init__(self, guard: StreamGuard) -> None:
        self._guard = guard
        self.turns = 0
        self.emit: Callable[[UnifiedEvent], Coroutine[Any, Any, None]] = guard.accept
        """The guard's own `accept`, bound here: one coroutine per event, not two."""
        self.end_message = guard.flush_message
        """The guard's own `flush_message`, bound here for the same reason (once per model turn)."""

    @property
    def params(self) -> ExecuteParams:
        return self._guard.params

    @property
    def session_id(self) -> str | None:
        session = self._guard.agg.session
        return session.session_id if session else None

    def add_usage(self, usage: Usage) -> None:
        self._guard.agg.add_usage(usage)

    async def end_turn(self, usage: Usage) -> Usage:
        self.turns += 1
        counted = self._guard.agg.add_usage(usage)
        await self._guard.flush_message(None)
        return counted

    async def ask_user(self, request: UserInputRequest) -> UserInputResponse:
        return await self._guard.ask_user(request)

    def native(self, raw: JsonValue) -> JsonValue | None:
        return raw if self._guard.params.include_native else None


async def announce_unsupported_options(
    backend: Backend,
    params: ExecuteParams,
    emit: Callable[[UnifiedEvent], Awaitable[None]],
    notes: Sequence[UnsupportedOption] = (),
) -> None:
    """A `warning` per option `backend` cannot honour, and per note; a fatal one raises instead (before the run
    starts)."""
    for option, explanation, fatal in [*backend.unsupported_options(params), *notes]:
        if fatal:
            raise UnifiedError(
                f"the {backend.name} backend cannot honour {option}: {explanation}",
                code="unsupported_option",
                hint="drop the option or choose another backend",
            )
        await emit(WarningEvent(code="unsupported_option", message=f"{option}: {explanation}"))


class StreamGuard:
    """Runs one backend and delivers its events, well-formed, to one consumer."""

    def __init__(
        self,
        params: ExecuteParams,
        backend: Backend,
        channel: _Channel,
        *,
        strict: bool = False,
        clock: Callable[[], float] = time.monotonic,
        notes: Sequence[UnsupportedOption] = (),
    ) -> None:
        self.params = params
        self.backend = backend
        self.notes = notes
        """What the run changed of its parameters before it began (a history's empty text parts left out): warned
        of with the backend's own unsupported options."""
        self.agg = _Aggregator()
        self.strict = strict
        self._channel = channel
        self._seq = 0
        self._clock = clock
        self._started = clock()
        self._last_activity = self._started
        self._paused = 0
        self._scope: anyio.CancelScope | None = None
        self._stop_reason: StopReason | None = None
        self._consumer_gone = False
        self._finishing = False
        """The backend is done and the run's end (`_finish`) delivers what is left: its waits are shielded."""
        self._given = run_secrets(params)
        """The secrets given in code (backend options, fallbacks', MCP headers and env): hidden in every
        event, and (`use_run_secrets`) at every redaction point inside the run's task."""
        clean = redactor(extra=self._given)
        self._redactor: Redactor | None = clean if clean else None
        """None when there is no secret to hide: then no event is looked at."""
        self._splits: dict[tuple[str, str | None], SplitGuard] = {}
        """One per text stream (a scope's text, a scope's thinking, a tool's progress)."""
        self._split_holder: tuple[str, str | None] | None = None
        """The stream whose guard holds text back, if one does."""
        self._split_last: SplitGuard | None = None
        """The guard of the text stream that had the last piece: the next stream's piece follows it
        (`SplitGuard.follow`: a key begun in a thought and finished in the text is one key)."""
        self._include_native = params.include_native
        self._ran: anyio.Event | None = None
        """Set once the backend is done (or never ran): the watchdog task's cue to end (made by
        `start_in`, inside the event loop: the guard itself may be built outside one, as
        `execute_sync` does). Only on trio: on asyncio the watchdog is `_timer`."""
        self._seen = 0
        """`_seq` at the watchdog's last look."""
        self._timer: asyncio.TimerHandle | None = None
        """The watchdog on asyncio: the event loop's timer for the next look, cancelled as the run ends."""

    # -- what adapters call -------------------------------------------------------------------

    async def accept(self, event: UnifiedEvent) -> None:
        agg = self.agg
        cls = type(event)
        fields = event.__dict__
        if cls in _STREAMED and fields["subagent_task_id"] is None and agg.session is not None:
            # The bulk of every stream, checked first: no protocol rule, normal form or message flush
            # applies to main-chat text and thoughts once the session started; recorded here, inline.
            # (Classes compared by identity: `isinstance` against a pydantic class that does not match
            # goes through its metaclass, ~0.1 us a class, paid by every other event.)
            if self.strict:
                _validated(event)
            text = fields["text"]
            if cls is TextDelta:
                buffer = agg.buffers.get(None)
                if buffer is None:
                    buffer = agg.buffers[None] = []
                buffer.append(text)
                agg.text_chars += len(text)
            else:
                agg.thought_chars += len(text)
            redactor = self._redactor
            if redactor is not None:  # a secret may be split across pieces (SplitGuard)
                key = self._split_key(event)
                if key is None or not text or (self._split_holder is not None and self._split_holder != key):
                    await self._deliver(event)  # a thought that replaces, an empty piece, another stream
                    return
                if not self._split_piece(event, key, redactor):
                    return  # all of it held back: it is shown with the next piece
            if not self._hand_over(event, fields):
                await self._send_waiting(event)
            return
        if self.strict:
            _validated(event)
        shape = _SHAPES.get(cls) or _shape_of(cls)
        names = shape.json_fields
        if names or self._include_native:
            for name in (*names, "native") if self._include_native else names:
                value = fields[name]
                if value and limits.too_deep(value):
                    raise _too_deep(event, name, self.backend.name)
        kind = shape.kind
        if kind is ToolResult and fields["output"].__class__ not in _TEXT_OR_NONE:
            _normal_tool_output(fields)  # an `output` set without validation (`model_copy`)
        # The protocol's rules (docs/protocol.md, "Ordering guarantees"), written here, not called: every
        # event but main-chat text and thoughts comes this way.
        problem: str | None = None
        if agg.session is None and not shape.before_session:
            problem = f"a {event.type} event came before session_started"
        elif shape.rule is not None:
            problem = shape.rule(agg, event)
        if problem is None:
            task = fields["subagent_task_id"]
            if task is not None and task not in agg.tasks and kind is not SubagentStarted:
                problem = f"event carries subagent_task_id {task!r}, which was never started"
        if problem is not None:
            if self.strict:
                raise ProtocolViolation(f"{problem}: {event.model_dump_json()}")
            await self._deliver(
                ErrorEvent(
                    code="protocol_violation",
                    message=f"{self.backend.name} adapter broke the event protocol: {problem}. "
                    "This is a bug in unified; please report it with this event.",
                    details={"event": _quotable(event)},
                )
            )
            if kind is AssistantMessage or kind is Result:
                return  # the guard owns these kinds; a second one would break the stream's shape
        if kind is SessionStarted and isinstance(event, SessionStarted) and not event.capabilities:
            event.capabilities = _capability_snapshot(event.backend)
        if agg.buffers and not shape.keeps_message_open:
            await self.flush_message(fields["subagent_task_id"])
        if shape.record is not None:
            shape.record(agg, event)
        if self._redactor is not None:
            await self._deliver(event)
            return
        if kind in _DIAGNOSTICS:
            _diagnostic(fields)
        if not self._hand_over(event, fields):
            await self._send_waiting(event)

    async def flush_message(self, subagent_task_id: str | None = None) -> None:
        """The `assistant_message` of a scope's text so far (the main chat's when None), if it has any."""
        if self._split_holder is not None:  # held text comes first, and belongs to its message
            await self._release_split()
        parts = self.agg.buffers.pop(subagent_task_id, None)
        if not parts:
            return
        text = "".join(parts)
        if subagent_task_id is None:
            self.agg.last_message = text
        # Handed over as `_deliver` would: a message is no diagnostic and no piece of a text stream, and
        # the held text was released above (one coroutine less a message: a tool round has one or two).
        message = _assistant_message(text=text, subagent_task_id=subagent_task_id)
        if not self._hand_over(message, message.__dict__):
            await self._send_waiting(message)

    async def ask_user(self, request: UserInputRequest) -> UserInputResponse:
        await self.accept(request)
        handler = self.params.on_user_input
        if handler is None:
            return UserInputResponse(cancelled=True)
        self._paused += 1
        try:
            with anyio.move_on_after(self.params.user_input_timeout_s) as timer:
                answer = handler(request)
                if not inspect.isawaitable(answer):  # a plain function: the run must not crash on `await`
                    await self._warn(
                        "user_input_handler_failed",
                        f"on_user_input returned {type(answer).__name__} instead of an awaitable: it must be an "
                        "async function returning a UserInputResponse; treated as no answer",
                    )
                    return UserInputResponse(cancelled=True)
                reply = await answer
                # A run stopped meanwhile acts on no answer (one that allowed a call came after the cancel, and the
                # call's `permission_decision` said `allow` though it never ran): its end decides (`_undecided`).
                await checkpoint_if_cancelled()
                if isinstance(reply, UserInputResponse):
                    return reply
                # None, a dict, a string...: the backends read a UserInputResponse, so this is no answer
                await self._warn(
                    "user_input_handler_failed",
                    f"on_user_input returned {type(reply).__name__}, not a UserInputResponse (use "
                    "UserInputResponse.allow(), .deny() or UserInputResponse(answers=...)); treated as no answer",
                )
                return UserInputResponse(cancelled=True)
            await self._warn(
                "user_input_timeout",
                f"no answer to {request.request_id} within {self.params.user_input_timeout_s:g}s; treated as no answer",
            )
        except Exception as exc:  # the caller's callback failed: the run goes on without an answer
            await self._warn("user_input_handler_failed", f"on_user_input raised {type(exc).__name__}: {exc}")
        finally:
            self._paused -= 1
            self._last_activity = self._clock()
        del timer
        return UserInputResponse(cancelled=True)

    # -- delivery ------------------------------------------------------------------------------

    def _split_key(self, event: UnifiedEvent) -> tuple[str, str | None] | None:
        """Which text stream `event` continues, when a secret may be split across its pieces."""
        kind = type(event)
        if kind is TextDelta or (kind is Thinking and not event.__dict__["replace"]):
            return (event.type, event.subagent_task_id)
        if kind is ToolProgress and event.__dict__["message"]:
            return (event.type, event.__dict__["tool_use_id"])
        return None

    async def _release_split(self) -> None:
        """Show what a text stream holds back (`SplitGuard`) before anything else comes next."""
        holder = self._split_holder
        if holder is None:
            return
        self._split_holder = None
        text = self._splits[holder].release()
        if not text:
            return
        kind, scope = holder
        event: UnifiedEvent
        if kind == "text_delta":
            event = TextDelta(text=text, subagent_task_id=scope)
            self.agg.buffers.setdefault(scope, []).append(text)  # the message has what its deltas showed
        elif kind == "thinking":
            event = Thinking(text=text, replace=False, subagent_task_id=scope)
        else:
            event = ToolProgress(tool_use_id=scope or "", message=text)
        await self._deliver(event, split_checked=True)

    async def _deliver(self, event: UnifiedEvent, *, split_checked: bool = False) -> None:
        if event.__class__ in _DIAGNOSTICS:
            _diagnostic(event.__dict__)
        redactor = self._redactor
        if redactor is not None and not split_checked:
            key = self._split_key(event)
            if key is not None and not event.__dict__["text" if key[0] != "tool_progress" else "message"]:
                key = None  # an empty piece (a thought's signature) ends the stream's pieces: show them first
            if self._split_holder is not None and self._split_holder != key:
                await self._release_split()
            if key is not None and not self._split_piece(event, key, redactor):
                return  # all of it held back: it is shown with the next piece
        if not self._hand_over(event, event.__dict__):
            await self._send_waiting(event)

    def _split_piece(self, event: UnifiedEvent, key: tuple[str, str | None], redactor: Redactor) -> bool:
        """Pass a piece of the text stream `key` through its `SplitGuard`: the piece keeps what may be
        shown now. False when nothing of it may (and it carries nothing else): it is not delivered."""
        guard = self._splits.get(key)
        if guard is None:
            guard = self._splits[key] = SplitGuard(redactor, fragments=key[0] == "tool_progress")
        if guard is not self._split_last:  # another stream had the last piece
            if self._split_last is not None:
                guard.follow(self._split_last)
            self._split_last = guard
        fields = event.__dict__
        name = "message" if key[0] == "tool_progress" else "text"
        shown = guard.feed(fields[name])
        self._split_holder = key if guard.holding else None
        if name == "text" and key[0] == "text_delta":
            # The message is what its deltas showed, not their raw text: a piece of a key whose other
            # part came in another stream is no whole secret there, and the message would show it.
            buffer = self.agg.buffers.get(key[1])
            if buffer:  # the piece's raw text, appended as it was accepted
                buffer[-1] = shown
        if not shown and not (fields.get("signature") or (name == "message" and fields.get("status"))):
            return False
        fields[name] = shown or None if name == "message" else shown
        return True

    def _hand_over(self, event: UnifiedEvent, fields: dict[str, Any]) -> bool:
        """Stamp `event` (its `fields`: seq, session id, native; secrets replaced) and queue it; False
        when the buffer is full (then `_send_waiting`). A plain call, not a coroutine: the buffer
        usually has room, and a wait that is not needed costs more than translating the event. The
        bounded buffer still makes the adapter yield, and see cancellation, every _BUFFER events."""
        # What pydantic's __setattr__ does for an unvalidated field, without its checks (hot path).
        assigned = event.__pydantic_fields_set__
        fields["seq"] = self._seq
        assigned.add("seq")
        self._seq += 1
        session_id = self.agg.session_id
        if session_id is not None and fields["session_id"] is None:
            fields["session_id"] = session_id
            assigned.add("session_id")
        if fields["native"] is not None and not self._include_native:
            fields["native"] = None
        if self._redactor is not None:  # with no secret to hide, no event is looked at
            _scrub(event, self._redactor)
        try:
            return self._channel.put_nowait(event)  # activity is read off `_seq` by the watchdog: no clock here
        except anyio.BrokenResourceError:
            self._gone()

    async def _send_waiting(self, event: UnifiedEvent) -> None:
        """The buffer is full: wait for the consumer (a slow consumer is not an idle backend).

        Once the backend is done (`_finishing`) the wait is shielded: what the run's end delivers (the last
        message, the `result`) arrives though the run's task is cancelled. This is the only place the run's
        end can wait (every event goes out here or through `_hand_over`, which never waits), so the shield
        is entered only when a wait comes: most runs end with room in the buffer, and a cancel scope for
        the whole end cost about 3 us of every run (a twentieth of an empty one)."""
        self._paused += 1
        try:
            with anyio.CancelScope(shield=True) if self._finishing else contextlib.nullcontext():
                await self._channel.put(event)
        except anyio.BrokenResourceError:
            self._gone()
        finally:
            self._paused -= 1
            self._last_activity = self._clock()

    def _gone(self) -> NoReturn:
        self._consumer_gone = True
        self.stop("cancelled")
        raise _ConsumerGone from None

    async def _warn(self, code: str, message: str) -> None:
        await self._deliver(WarningEvent(code=code, message=message))

    # -- the run -------------------------------------------------------------------------------

    def start_in(self, tg: TaskGroup) -> None:
        """Start the run as a task of `tg`, and its watchdog when there is a timeout to keep.

        On asyncio the watchdog is a timer of the event loop (`_look_later`); on trio, which has no
        timer without a task, a task beside the run (`watch`). A task and its cancel scope cost about
        a sixth of an empty run (96k of 612k instructions): more than a short run's events."""
        tg.start_soon(self.run, name="unified run")  # named: anyio makes no name of the method's qualname each run
        if self.params.idle_timeout_s is None and self.params.total_timeout_s is None:
            return
        if sniffio.current_async_library() == "asyncio":
            self._on_timer()  # the first look now, as the task's would be
        else:
            self._ran = anyio.Event()
            tg.start_soon(self.watch)

    def stop(self, reason: StopReason) -> None:
        """Ask the run to end (from any task); the stream still ends with a `result`."""
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._scope is not None:
            self._scope.cancel()

    async def run(self) -> None:
        """Drive the backend to its end, then emit the one `result`. Never raises."""
        outcome: RunOutcome | None = None
        failure: BaseException | None = None
        ctx = _Context(self)  # held by the run, not by the guard: no cycle, so a run is freed as it ends
        use_run_secrets(self._given)  # this task's context: every cut, error and tail of the run hides them
        try:
            try:
                await self._announce_unsupported_options()
                with anyio.CancelScope() as scope:
                    self._scope = scope
                    if self._stop_reason is not None:
                        scope.cancel()
                    try:
                        outcome = await self.backend.run(ctx)
                    except Exception as exc:  # caught here, inside the scope, to keep its traceback short
                        failure = exc
            except _ConsumerGone:
                return
            except Exception as exc:  # every failure becomes an error event
                failure = exc
            finally:
                self._scope = None  # the backend is done: nothing left for stop() to cancel
                if self._ran is not None:
                    self._ran.set()
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
            if self._consumer_gone or isinstance(failure, _ConsumerGone):
                return
            self._finishing = True  # from here on every wait is shielded (`_send_waiting`)
            await self._finish(outcome, failure, ctx.turns)
        except (_ConsumerGone, anyio.BrokenResourceError):
            return  # the consumer closed the stream: nobody left to tell
        finally:
            self._channel.close_sending()

    async def _announce_unsupported_options(self) -> None:
        await announce_unsupported_options(self.backend, self.params, self._deliver, self.notes)

    async def watch(self) -> None:
        """The watchdog as a task (trio): looks until the run is done or a timeout stopped it; returns
        as soon as the backend is done (woken by an event: cancelling a scope costs more than the
        rest of a short run)."""
        ran = self._ran
        while ran is not None and not ran.is_set():
            wait = self._look()
            if wait is None:
                return
            with anyio.move_on_after(wait):
                await ran.wait()

    def _look_later(self, wait: float) -> None:
        """The watchdog on asyncio: look in `wait` seconds, a timer of the loop, not a task."""
        self._timer = asyncio.get_running_loop().call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        """The timer's look; the run's end cancels the timer, so this never looks at a finished run."""
        self._timer = None
        wait = self._look()
        if wait is not None:
            self._look_later(wait)

    def _look(self) -> float | None:
        """One look at the clock: stop the run at its idle or total timeout (then None), or say how
        long until the next look.

        An event is not timed as it goes out (a clock read per event): a look sees that `_seq` moved
        since the last one, so an idle timeout comes at most one look (0.5 s, or the limit) late."""
        idle = self.params.idle_timeout_s
        total = self.params.total_timeout_s
        now = self._clock()
        if self._seq != self._seen:  # events went out since the last look: the run was active until (about) now
            self._seen = self._seq
            self._last_activity = max(self._last_activity, now)
        # Each deadline's time left, without lists (a look is made as every run starts): the total first.
        wait = 0.5
        if total is not None:
            left = self._started + total - now
            if left <= 0:
                self.stop("total_timeout")
                return None
            wait = min(wait, left)
        if idle is not None and not self._paused and not self.agg.running_locally:
            left = self._last_activity + idle - now
            if left <= 0:
                self.stop("idle_timeout")
                return None
            wait = min(wait, left)
        return max(wait, 0.01)

    async def _finish(self, outcome: RunOutcome | None, failure: BaseException | None, turns: int) -> None:
        for scope in list(self.agg.buffers):
            await self.flush_message(scope)
        if self.agg.session is not None and not self.params.cwd.expanduser().is_dir():
            # A session started, so the backend found the folder: it went during the run (a command the model ran,
            # the user). The binaries' tools then failed in their own words ("Failed to create unified exec
            # process: No such file or directory"), or the run ended as if nothing had happened (round 20).
            await self._warn(
                "cwd_gone",
                f"the run's working directory {self.params.cwd} was deleted, moved or replaced during the run: the "
                "tool calls after that failed, and the session's files there are gone; the session itself is kept "
                "(resume it with an existing cwd)",
            )
        status: ResultStatus
        error: str | None = None
        if isinstance(failure, RunStopped):
            status = "interrupted"  # the caller's permission answer stopped the run: not a failure
        elif failure is not None:
            status, error = "error", await self._report_failure(failure)
        elif outcome is None:
            reason = self._stop_reason or "cancelled"
            if reason in ("idle_timeout", "total_timeout"):
                limit = self.params.idle_timeout_s if reason == "idle_timeout" else self.params.total_timeout_s
                what = "no event" if reason == "idle_timeout" else "the run did not finish"
                error = f"{what} within {limit:g}s ({reason.replace('_', ' ')})"
                await self._deliver(
                    ErrorEvent(code=reason, message=f"{error}; the run was stopped", retryable=True, fatal=True)
                )
                status = "error"
            else:
                status = "interrupted" if reason == "interrupted" else "cancelled"
        else:
            status, error = outcome.status, outcome.error and redact_key_shapes(outcome.error)
        await self._undecided(status)
        session = self.agg.session
        final_text = outcome.final_text if outcome and outcome.final_text is not None else self.agg.last_message
        await self._deliver(
            Result(
                status=status,
                final_text=final_text,
                usage=self.agg.total_usage(),
                duration_ms=round((self._clock() - self._started) * 1000),
                turns=turns,
                short_id=(outcome.short_id if outcome and outcome.short_id else session.short_id if session else None),
                # The backend of the session `short_id` names, so the two resume it together: after a failover whose
                # fallback failed before it began a session, that is the failed backend's session, left as it was (the
                # fallback's name beside it made `resume` answer session_not_found, bad input round 22); `error`
                # names the fallback that failed. Without a session, the backend that ran last.
                backend=session.backend if session is not None else self.backend.name,
                error=error,
            )
        )

    async def _undecided(self, status: ResultStatus) -> None:
        """A `deny` for each call whose permission prompt the run ended without answering (cancelled while the
        caller's `on_user_input` ran, or failed meanwhile): docs/protocol.md promises one decision per call, and
        the call never ran. The caller's stop is the user's decision; any other end is the approval mode's."""
        agg = self.agg
        for call_id, name in list(agg.prompted.items()):
            if call_id in agg.decided:
                continue
            reason = f"the run ended ({status}) before its permission prompt was answered: the call did not run"
            by: DecidedBy = "user" if status in ("cancelled", "interrupted") else "approval_mode"
            await self.accept(refusal(call_id, name, reason, decided_by=by, session_id=agg.session_id))

    async def _report_failure(self, failure: BaseException) -> str:
        """The run's fatal `error` event; its message (as delivered: key shapes hidden) for `result.error`."""
        failure = unwritable(failure, self.backend.name) or failure
        if isinstance(failure, UnifiedError):
            event = ErrorEvent(
                code=failure.code,
                message=f"{failure.message} ({failure.hint})" if failure.hint else failure.message,
                retryable=failure.retryable,
                fatal=True,
                details=failure.details,
            )
        else:
            event = ErrorEvent(
                code="internal_error",
                message=f"{type(failure).__name__}: {failure}. This is a bug in unified's {self.backend.name} "
                "adapter; please report it with the events above.",
                fatal=True,
            )
        await self._deliver(event)  # `_diagnostic` hides the key shapes of its fields there
        return event.message


_HOSTS: set[asyncio.Task[None]] = set()
"""The asyncio tasks hosting runs read by a bare `async for` (the loop holds its tasks only weakly)."""


async def _host(guard: StreamGuard, ended: anyio.Event) -> None:
    """A run read by a bare `async for`: its task group, in a task of its own. It holds the guard, never the
    stream, so a stream its consumer drops is collected, and its finalizer stops the run."""
    try:
        async with anyio.create_task_group() as tg:
            guard.start_in(tg)
    finally:
        ended.set()


def _spawn_host(guard: StreamGuard, ended: anyio.Event) -> Callable[[Callable[[], object]], object]:
    """Start `_host` outside the consumer's task: a task group entered in the consumer's task without an
    `async with` would stay on its cancel-scope stack after a `break`, and the consumer's next exit of a
    cancel scope would fail deep inside anyio (or trio). Returns how to call a function on the run's event loop
    from any thread (the finalizer may run on another one: the garbage collector's)."""
    if sniffio.current_async_library() == "asyncio":
        loop = asyncio.get_running_loop()
        task = loop.create_task(_host(guard, ended), name="unified run")
        _HOSTS.add(task)
        task.add_done_callback(_HOSTS.discard)
        return loop.call_soon_threadsafe
    import contextvars

    import trio

    trio.lowlevel.spawn_system_task(_host, guard, ended, name="unified run", context=contextvars.copy_context())
    return trio.lowlevel.current_trio_token().run_sync_soon


def _abandoned(channel: _Channel, guard: StreamGuard) -> None:
    """A dropped stream's run, stopped on its own event loop: its consumer is gone, its processes are ended by
    the run's own task."""
    channel.close_receiving()
    guard.stop("cancelled")


class GuardedStream:
    """Hosts a StreamGuard's task for one consumer; `unified.EventStream` is its public face.

    Read in an `async with` block, the guard's task group lives in the consumer's task, entered by the block
    and left at its end. Read by a bare `async for`, it lives in a task of its own (`_spawn_host`), started on
    the first event and awaited after the last one; a consumer that stops early without `aclose()` leaves
    it running until it drops the stream: then the finalizer stops the run (its processes are ended by the
    run's own task), or until the event loop ends, which cancels it.
    """

    def __init__(self, guard_factory: Callable[[_Channel], StreamGuard]) -> None:
        self.channel = _Channel()
        """The run's events on their way to the consumer (`EventStream.__anext__` takes a queued one itself)."""
        self.guard = guard_factory(self.channel)
        self._tg: TaskGroup | None = None
        self._ended: anyio.Event | None = None
        """Set when the task hosting a bare `async for`'s run is done."""
        self._on_loop: Callable[[Callable[[], object]], object] | None = None
        """Calls a function on that run's event loop, from any thread (`_spawn_host`)."""
        self._done = False
        self._managed = False
        self._waiting = False
        """A reader waits in `next` (a second one at the same time is refused)."""

    async def start(self, *, managed: bool = False) -> None:
        """Start the run. `managed`: an `async with` block owns the task and will call `close()`."""
        if self._tg is not None or self._ended is not None or self._done:
            return
        self._managed = managed
        if managed:
            self._tg = anyio.create_task_group()
            await self._tg.__aenter__()
            self.guard.start_in(self._tg)
        else:
            self._ended = anyio.Event()
            self._on_loop = _spawn_host(self.guard, self._ended)

    async def next(self) -> UnifiedEvent:
        if self._waiting:  # two readers would each get some of the events, and nobody all of them
            raise UnifiedError(
                "this EventStream is already being read by another task",
                hint="read a stream from one task; hand its events on to others (e.g. an anyio memory object stream)",
            )
        if self._tg is None and self._ended is None:
            await self.start()
        self._waiting = True
        try:
            return await self.channel.get()  # a queued event at once, with no trip through the event loop
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if not self._managed:  # bare `async for`: wait for the run's task to be done
                await self.close()
            raise StopAsyncIteration from None
        finally:
            self._waiting = False

    async def close(self) -> None:
        """End the run if it is still going and release its task; safe to call twice."""
        if self._done:
            return
        self._done = True
        self.channel.close_receiving()
        if self._tg is not None:
            self.guard.stop("cancelled")
            tg, self._tg = self._tg, None
            await tg.__aexit__(None, None, None)
        elif self._ended is not None:
            self.guard.stop("cancelled")
            with anyio.CancelScope(shield=True):  # the run's processes are ended before close() returns
                await self._ended.wait()

    def __del__(self) -> None:
        # A bare `async for` left early and the stream dropped without `aclose()`: stop the run, whose own task
        # ends its processes. (An `async with` block always closes the stream before it can be dropped.)
        on_loop = self._on_loop
        if not self._done and on_loop is not None and self._ended is not None and not self._ended.is_set():
            self._done = True
            with contextlib.suppress(Exception):  # the loop already closed: nothing of the run is left to stop
                on_loop(functools.partial(_abandoned, self.channel, self.guard))
