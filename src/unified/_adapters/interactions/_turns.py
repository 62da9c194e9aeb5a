"""The interactions turn client: one model turn is one interaction.

The shared agent loop (`unified._agent_loop`) sends each turn through here. A turn creates
an interaction (streaming) and follows it to its end: `requires_action` hands the function calls to
the loop, whose results become the next interaction's input, chained with `previous_interaction_id`
(or, with `store=false`, by resending the whole conversation); `requires_continuation` continues
with the token; the terminal statuses end the run. A dropped stream reconnects with
`get(id, stream=True, last_event_id=...)`, skipping event ids already seen, so consumers get every
event exactly once. Background agents are created, then streamed or polled; they appear as one
subagent task whose progress events carry the status. Input not yet accepted by the server (the
prompt, a tool round's results) waits in the session's state as `pending`, so a run that fails
before sending it sends it on resume.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

import anyio

from unified._adapters.interactions._client import (
    FailedBeforeOutput,
    InteractionsClient,
    UnreadableStream,
    error_from_exception,
    failure_from_exception,
    is_api_error,
    is_connection_error,
    lost_interaction,
)
from unified._adapters.interactions._conversation import (
    conversation_from_steps,
    model_turn_count,
    steps_from_conversation,
)
from unified._adapters.interactions._options import DEFAULT_MODEL, InteractionsOptions
from unified._adapters.interactions._sessions import BACKEND, append_interaction, chain
from unified._adapters.interactions._translate import (
    TERMINAL_STATUSES,
    FunctionCall,
    InteractionsTranslator,
    Signal,
    StatusChange,
    StreamFailure,
)
from unified._agent_loop import Declarations, Emit, TurnEnd
from unified._internal.api_errors import HTTP_OF_STATUS, error_from_status, retry_delay, timed_out
from unified._internal.api_options import GoogleMapsTool
from unified._internal.images import GEMINI_IMAGE_TYPES, attachment_note, stored_not_taken
from unified._internal.models import plan_level
from unified._internal.retry import Failure
from unified._redaction import clip
from unified.backends import RunOutcome
from unified.conversations import Conversation, ModelTurn
from unified.errors import BackendError, ConfigurationError
from unified.events import SubagentCompleted, SubagentProgress, SubagentStarted, UnifiedEvent, WarningEvent
from unified.sessions import StoredSession
from unified.tools import ToolCall, ToolOutcome
from unified.types import ExecuteParams

__all__ = ["InteractionsTurns", "builtin_tools", "tool_choice"]

_USER_STEPS = frozenset({"user_input", "function_result"})
"""Steps the client sends; a history ending with one has a turn the model has not answered."""
_ENDED = TERMINAL_STATUSES | {"requires_action", "requires_continuation"}
"""Statuses after which the current stream has nothing more to say."""


def _refused_images(steps: list[Any]) -> list[str]:
    """Each `image` item of a user's step in `steps` of a type the Interactions API refuses (a session stored
    before the check holds it, or another tool's: refused on every turn) made the text note a carried history gets
    (`_conversation`), in place; what the warning says of them, or nothing."""
    found: list[str] = []
    for number, step in enumerate(steps):
        content = step.get("content") if isinstance(step, dict) and step.get("type") == "user_input" else None
        if not isinstance(content, list):
            continue
        for index, item in enumerate(content):
            if not isinstance(item, dict) or item.get("type") != "image":
                continue
            mime_type = str(item.get("mime_type") or "image/png")
            if mime_type.lower() not in GEMINI_IMAGE_TYPES:
                size = len(str(item.get("data") or "")) * 3 // 4  # about: it is still base64
                found.append(f"step {number}: {mime_type}")
                content[index] = {"type": "text", "text": attachment_note(mime_type, size, "the Interactions API")}
    return stored_not_taken(found, "image(s)", "the Interactions API")


def _carried_usage(history: Conversation, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The usage of each model turn of a carried conversation, by its number in the new session's steps, so the
    record keeps it (docs/conversations.md: per-turn usage is kept, never counted again); none when the steps
    do not make as many model turns (turns joined in writing them)."""
    carried = [turn.usage for turn in history.turns if isinstance(turn, ModelTurn)]
    if len(carried) != model_turn_count(steps):
        return {}
    return {str(number): usage.model_dump(exclude_defaults=True) for number, usage in enumerate(carried) if usage}


class _TurnEvents:
    """Where a turn's events go while it is sent (the agent loop's `emit`), for the turns and for their client's
    retries. The client holds this, not the turns: a method of the turns in the client they hold made a
    reference cycle that kept every finished run until the cycle collector came."""

    __slots__ = ("emit", "shown")

    def __init__(self) -> None:
        self.emit: Emit | None = None
        self.shown = 0
        """Events of the turn being sent so far: what the agent loop's retry counts as shown."""

    async def event(self, event: UnifiedEvent) -> None:
        assert self.emit is not None, "events are emitted only while a turn is sent"
        self.shown += 1
        await self.emit(event)

    async def warn(self, code: str, message: str) -> None:
        await self.event(WarningEvent(code=code, message=message))


class InteractionsTurns:
    """The `TurnClient` of the interactions backend."""

    backend = BACKEND

    def __init__(self, params: ExecuteParams, options: InteractionsOptions) -> None:
        self.params = params
        self.options = options
        self.model = options.agent or params.model or DEFAULT_MODEL
        self._events = _TurnEvents()
        self.client = InteractionsClient(options, warn=self._events.warn)
        self.translator = InteractionsTranslator()
        self._server_ids: dict[str, str] = {}
        """The last turn's calls: the server's id of each by the id the stream shows (`call_ids.shown_id`)."""
        self.seen: set[str] = set()
        self.failure: StreamFailure | None = None
        self.task_id: str | None = None
        self.store_mode = options.store
        self.previous: str | None = None
        self.history: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []
        self.continuation: str | None = None
        self.declarations: list[dict[str, Any]] = []
        self.history_notes: list[str] = []

    def choose_model(self, stored: str | None) -> str:
        self.model = self.options.agent or self.params.model or stored or DEFAULT_MODEL
        if not (self.options.agent or self.params.model) and stored is not None:  # checked without a model
            features = self.options.tool_features(functions=self.options.local_tools, invocations=False)
            self.options.check_tools(BACKEND, self.model, features)
        return self.model

    @property
    def connection(self) -> InteractionsClient:
        return self.client

    def for_subagent(self, params: ExecuteParams) -> InteractionsTurns:
        return InteractionsTurns(params, self.options)

    async def emit(self, event: UnifiedEvent) -> None:
        await self._events.event(event)

    async def warn(self, code: str, message: str) -> None:
        await self._events.warn(code, message)

    def classify(self, exc: BaseException) -> Failure | None:
        failure = failure_from_exception(exc, self.model)
        if failure is not None and self.previous is not None:
            return dataclasses.replace(failure, error=lost_interaction(failure.error, self.previous))
        return failure

    async def abandon(self) -> None:
        """A run stopped mid-interaction cancels it server-side (best effort, bounded)."""
        iid, status = self.translator.interaction_id, self.translator.status
        if iid is None or status in _ENDED:
            return
        with anyio.move_on_after(5):
            try:
                await self.client.cancel(iid)
            except Exception as exc:
                if not is_api_error(exc):
                    raise

    # -- the state between turns ----------------------------------------------------------------

    def prepare(self, session: StoredSession) -> None:
        self.store_mode = bool(session.state.setdefault("store", self.options.store))
        ids = chain(session)
        self.previous = ids[-1] if ids and self.store_mode else None
        stored = session.state.get("steps")
        seeded = stored is None and self.params.history is not None  # a new session continuing a conversation
        if seeded:
            assert self.params.history is not None
            stored = steps_from_conversation(self.params.history)
            session.state["usage"] = _carried_usage(self.params.history, stored)
        pending = list(stored or []) if seeded else list(session.state.get("pending") or [])
        if not seeded:  # a carried history was checked as it was written (`steps_from_conversation`)
            self.history_notes = _refused_images(list(stored or []) + pending)
        if stored and not seeded and not self.store_mode:  # every request sends the stored steps
            ordered = conversation_from_steps(stored, model=self.model)
            in_order = ordered.stored_in_order()
            if in_order is not ordered:
                stored = steps_from_conversation(in_order)
        if self.params.retry:
            if not (pending if self.store_mode else stored) or (stored or [{}])[-1].get("type") not in _USER_STEPS:
                raise ConfigurationError(
                    "there is no failed turn to retry: the session's last turn was answered",
                    hint="send a new prompt instead of retrying",
                )
            new: list[dict[str, Any]] = []
        else:
            new = [{"type": "user_input", "content": self._prompt_content()}]
        self.history = [*(stored or []), *new]  # every step, in both modes: what export reads
        session.state["steps"] = self.history
        if self.store_mode:
            self.pending = [*pending, *new]
            session.state["pending"] = self.pending

    def begin(self, session: StoredSession, declarations: Declarations) -> None:
        self.declarations = declarations.parsed()
        if not self.options.agent:
            self.options.check_allowed_names(BACKEND, self.declarations)

    def keep_turn(self, session: StoredSession, turn: TurnEnd) -> None:
        iid = self.translator.interaction_id
        if iid is not None:
            append_interaction(session, iid)
        if self.store_mode:
            self.previous = iid
            self.pending = []  # the server holds it now
            session.state["pending"] = self.pending
        steps = self.translator.model_steps()
        self.history += steps
        if steps:  # per model turn (its number in the session's conversation, carried turns counted), for export
            number = model_turn_count(self.history) - 1
            session.state.setdefault("usage", {})[str(number)] = turn.usage.model_dump(exclude_defaults=True)
        session.state["steps"] = self.history
        self.continuation = self.translator.continuation_token if turn.continues else None

    def keep_tool_round(self, session: StoredSession, calls: list[ToolCall], outcomes: list[ToolOutcome]) -> None:
        results = [
            _function_result(outcome, self._server_ids.get(outcome.call_id, outcome.call_id)) for outcome in outcomes
        ]
        if self.store_mode:
            self.pending = results
            session.state["pending"] = results
        self.history += results
        session.state["steps"] = self.history

    # -- one turn -------------------------------------------------------------------------------

    async def send(self, emit: Emit) -> TurnEnd:
        self._events.emit, self._events.shown = emit, 0
        try:
            body = self._body(self.history if not self.store_mode else self.pending)
            status = await self._interaction(body)
            await self._finish_task(status)
            end = await self._end(status)
        finally:
            self._events.emit = None
        if end.error is not None and end.error.retryable and not self._events.shown:
            # asked again as its HTTP twin is, after the wait its RetryInfo asks for (docs/backends/interactions.md)
            raise FailedBeforeOutput(end.error, retry_delay(self.failure.error) if self.failure is not None else None)
        return end

    async def _end(self, status: str | None) -> TurnEnd:
        iid = self.translator.interaction_id
        end = TurnEnd(usage=self.translator.usage)
        if self.failure is not None:
            status_code = HTTP_OF_STATUS.get(self.failure.code.upper())
            if status_code is not None:  # an API error met in the stream: the same code as its HTTP twin
                end.error = error_from_status(
                    status_code, self.failure.code, self.failure.message, body=self.failure.error, model=self.model
                )
                end.error.details["interaction_id"] = iid
            else:
                end.error = BackendError(
                    f"the interaction failed: {self.failure.message}",
                    code="backend_error",
                    details={"code": self.failure.code, "interaction_id": iid},
                )
        elif status == "requires_continuation":
            end.continues = True
        elif status == "requires_action":
            calls = list(self.translator.calls)
            if calls:
                end.calls = [ToolCall(call.id, call.name, call.arguments) for call in calls]
                self._server_ids = {call.id: call.server_id or call.id for call in calls}
            else:
                end.malformed = "the interaction requires action but asked for no function call"
        elif status == "completed":
            end.outcome = RunOutcome(status="success")
        elif status == "cancelled":
            end.outcome = RunOutcome(status="cancelled")
        elif status == "incomplete":
            await self.warn("incomplete", "the interaction stopped early (e.g. max output tokens)")
            end.outcome = RunOutcome(status="success")
        elif status == "budget_exceeded":
            end.outcome = RunOutcome(status="error", error="the interaction exceeded its budget")
        elif iid is None and status is None:
            end.malformed = "the interaction stream was empty (no event, no completion)"
        else:  # `failed`, or a status no documentation names: said with what to do (it said neither, round 22)
            end.error = BackendError(
                f"the interaction ended with status {status!r}, giving no answer and no reason",
                hint="run it again; if it ends so again, try another model (or the generate-content backend)",
                details={"interaction_id": iid},
            )
        return end

    def _prompt_content(self) -> list[dict[str, Any]]:
        """The prompt's content: its text (none when a prompt of images only has none, as generate-content sends
        it: an empty text was sent), then its images."""
        content: list[dict[str, Any]] = [{"type": "text", "text": self.params.prompt}] if self.params.prompt else []
        for image in self.params.images:
            data = base64.b64encode(image.data).decode("ascii")
            content.append({"type": "image", "data": data, "mime_type": image.mime_type})
        return content

    def _body(self, steps: list[dict[str, Any]]) -> dict[str, Any]:
        options = self.options
        body: dict[str, Any] = {}
        if steps:
            body["input"] = steps
        if options.agent:
            body["agent"] = options.agent
            if options.agent_config:
                body["agent_config"] = options.agent_config
        else:
            body["model"] = self.model
            config = self._generation_config()
            if config:
                body["generation_config"] = config
        tools = builtin_tools(options)
        if not options.agent:
            tools += [{"type": "function", **declaration} for declaration in self.declarations]
        if tools:
            body["tools"] = tools
        if self.previous is not None and self.store_mode:
            body["previous_interaction_id"] = self.previous
        if self.continuation is not None:
            body["continuation_token"] = self.continuation
        if self.params.system_instruction:
            body["system_instruction"] = self.params.system_instruction
        if not self.store_mode:
            body["store"] = False
        if options.background:
            body["background"] = True
        return body

    def _generation_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {}
        choice = tool_choice(self.options)
        if choice is not None:
            config["tool_choice"] = choice
        thinking = self.params.thinking
        if thinking is None:
            return config
        config["thinking_summaries"] = "auto" if thinking.include_thoughts else "none"
        level = plan_level(self.model, thinking.level, thinking.budget)[0]
        if level is not None:
            config["thinking_level"] = level
        return config

    async def _interaction(self, body: dict[str, Any]) -> str | None:
        """Create one interaction and follow it to its end; returns its final status."""
        self.translator.begin_interaction()
        self.failure = None
        if not self.options.background:
            await self._follow(await self.client.create_stream(body))
            return self.translator.status
        created = await self.client.create(body)
        await self._apply(self.translator.feed_interaction(created), created)
        iid = self.translator.interaction_id
        if iid is None:
            raise BackendError("the background interaction came back without an id")
        if self.task_id is None:
            self.task_id = iid
            description = clip(self.params.prompt, 200)
            agent = self.options.agent or self.model
            await self.emit(SubagentStarted(task_id=iid, agent_name=agent, description=description))
            await self._progress(self.translator.status)
        if self.options.stream:
            await self._follow(await self.client.resume_stream(iid, None))
        else:
            while self.translator.status not in _ENDED and self.failure is None:
                await anyio.sleep(self.options.poll_interval_s)
                resource = await self.client.get(iid)
                await self._apply(self.translator.feed_interaction(resource), resource)
        return self.translator.status

    async def _follow(self, events: AsyncGenerator[dict[str, Any], None]) -> None:
        """Consume a stream to its end, reconnecting after a drop from the last event id seen."""
        resumes = received = 0
        last_event_id: str | None = None
        while True:
            dropped: BaseException | None = None
            try:
                async with aclosing(events):
                    async for raw in events:
                        received += 1
                        event_id = raw.get("event_id")
                        if isinstance(event_id, str):
                            if event_id in self.seen:
                                continue  # replayed after a reconnect: already delivered
                            self.seen.add(event_id)
                            last_event_id = event_id
                        await self._apply(self.translator.feed(raw), raw)
                        if self.failure is not None:
                            return
            except Exception as exc:
                unreadable = isinstance(exc, UnreadableStream) and self.translator.interaction_id is not None
                if not (unreadable or is_connection_error(exc)):  # unreadable before any id: the request is asked again
                    if is_api_error(exc):
                        raise error_from_exception(exc, "the interaction stream") from exc
                    raise
                dropped = exc
            if dropped is None and self.translator.status in _ENDED:
                return
            iid = self.translator.interaction_id
            why = "it ended before the interaction did"
            if dropped is not None:
                why = timed_out(dropped, self.options.timeout_s) or f"{type(dropped).__name__}: {dropped}"
            if iid is None and not received and dropped is None:
                return  # nothing at all came: `_end` reports the turn malformed and the loop asks again
            if iid is None or resumes >= self.options.max_stream_resumes:
                raise BackendError(
                    f"the interaction stream dropped ({why}) and could not be resumed",
                    hint="retry the run; with a session, resume it",
                    retryable=True,
                    details={"interaction_id": iid, "resumes": resumes},
                )
            resumes += 1
            await self.warn("stream_resumed", f"the stream dropped ({why}); reconnecting after event {last_event_id}")
            events = await self.client.resume_stream(iid, last_event_id)

    async def _apply(self, signals: list[Signal], raw: dict[str, Any]) -> None:
        native = raw if self.params.include_native else None
        for signal in signals:
            if isinstance(signal, FunctionCall):
                continue  # collected by the translator; run once the interaction asks for action
            if isinstance(signal, StatusChange):
                await self._progress(signal.status)
                continue
            if isinstance(signal, StreamFailure):
                self.failure = signal
                continue
            if native is not None:
                signal.native = native
            await self.emit(signal)

    async def _progress(self, status: str | None) -> None:
        if self.task_id is not None and status is not None and status not in TERMINAL_STATUSES:
            await self.emit(SubagentProgress(task_id=self.task_id, status=status, message=f"interaction {status}"))

    async def _finish_task(self, status: str | None) -> None:
        if self.task_id is None:
            return
        task, self.task_id = self.task_id, None
        ended = {"completed": "completed", "cancelled": "cancelled"}.get(status or "", "failed")
        await self.emit(SubagentCompleted(task_id=task, status=ended, agent_name=self.options.agent))


def builtin_tools(options: InteractionsOptions) -> list[dict[str, Any]]:
    """The Google built-in tools switched on, as the Interactions API's tool objects (docs/api-tools.md).

    The API takes the user's location on the `google_maps` tool only.
    """
    tools: list[dict[str, Any]] = []
    for name in options.google_tools:
        tool: dict[str, Any] = {"type": name}
        if name == "google_maps":
            if isinstance(options.google_maps, GoogleMapsTool) and options.google_maps.enable_widget:
                tool["enable_widget"] = True
            if options.user_location is not None:
                tool["latitude"] = options.user_location.latitude
                tool["longitude"] = options.user_location.longitude
        elif name == "file_search" and options.file_search is not None:
            search = options.file_search
            tool["file_search_store_names"] = list(search.store_names)
            if search.metadata_filter is not None:
                tool["metadata_filter"] = search.metadata_filter
            if search.top_k is not None:
                tool["top_k"] = search.top_k
        tools.append(tool)
    return tools


def tool_choice(options: InteractionsOptions) -> str | dict[str, Any] | None:
    """`generation_config.tool_choice`: the mode, or `{allowed_tools: {mode, tools}}` with names."""
    calling = options.function_calling
    if calling is None:
        return None
    if calling.allowed_function_names:
        return {"allowed_tools": {"mode": calling.mode, "tools": list(calling.allowed_function_names)}}
    return calling.mode


def _function_result(outcome: ToolOutcome, call_id: str) -> dict[str, Any]:
    """A tool outcome as a `function_result` input step (`call_id`: the server's id of the call, which the stream
    may show escaped: `call_ids.shown_id`); attached media go beside the JSON response."""
    result: Any = outcome.response
    if outcome.inline_data:
        result = [{"type": "text", "text": json.dumps(outcome.response, ensure_ascii=False)}]
        result += [
            {"type": "image", "data": base64.b64encode(part.data).decode("ascii"), "mime_type": part.mime_type}
            for part in outcome.inline_data
        ]
    item: dict[str, Any] = {
        "type": "function_result",
        "call_id": call_id,
        "name": outcome.name,
        "result": result,
    }
    if outcome.is_error:
        item["is_error"] = True
    return item
