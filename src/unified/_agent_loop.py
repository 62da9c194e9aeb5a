"""The agent loop of every backend whose tools run locally (today generate-content and interactions).

The loop owns what must behave the same on each of them (docs/backends/api-loop.md):

- the session: created and saved, with its first prompt, before `session_started` announces it (a
  process killed right after can be resumed); leased for the run; written after every model turn
  (while its calls run) and after every tool round (while the next request is in flight), each
  write finished before the session changes again, and saved once more before the run returns, so
  it is durable before `result`;
- first output without waiting on durability: the first save runs beside the first request (which
  reads the session and never changes it), and nothing of the request reaches the consumer, nor the
  session changes, before `session_started`; the request waits only for the lease (a store that is
  down, or a session in use, is an error before anything is sent to the model), and everything before
  it (the client, the declarations, the history) is prepared while the lease is taken;
- the tool runtime and its MCP servers: without MCP servers the runtime starts at the first tool
  call (the first request needs only the declarations, the same for the same settings: cached);
- `max_turns`: at most N model requests; when the limit is hit after a turn that asked for tools,
  the tools are not run (each call is answered "not run" in the history) and the run ends `max_turns`;
- protection: the same call with the same arguments `loop_threshold` turns in a row stops the run
  (`runaway_loop`); a malformed turn (the model botched it, or the stream ended empty) is asked
  again up to `max_retries` times;
- retries of a request that failed before showing anything (`unified._internal.retry`);
- per-turn accounting in one call (`RunContext.end_turn`), mirrored into the stored session;
- subagents (`backend_options.subagents`): a `delegate` tool hands a self-contained task to a new
  conversation of the same backend and model, with the same tools and policy (`_Subagent`).

A backend supplies a `TurnClient`: it sends one turn, translates its stream into events, and keeps
in the session's state whatever its next request needs (the whole history, or the chain of
server-side interaction ids).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from unified import _limits as limits
from unified._internal.api_options import ApiOptions
from unified._internal.call_ids import SEPARATOR
from unified._internal.models import ToolFamily
from unified._internal.retry import Failure, retrying
from unified._internal.stream import estimate_tokens
from unified._redaction import clip, run_secrets
from unified._sessions.config import default_store
from unified._sessions.records import unreadable_why
from unified._sessions.stores import save_announced
from unified.backends import RunContext, RunOutcome
from unified.errors import CorruptSession, RunStopped, UnifiedError
from unified.events import (
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    ToolResult,
    UnifiedEvent,
    Usage,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
)
from unified.sessions import SessionStore, StoredSession
from unified.tools import EventForwarder, ToolCall, ToolOutcome, ToolRuntime, tool_family
from unified.tools._runtime import is_excluded, refused_by
from unified.types import ExecuteParams

__all__ = [
    "DELEGATE",
    "DELEGATIONS_PER_TURN",
    "NOT_RUN_NO_TOOLS",
    "AgentLoop",
    "Declarations",
    "Emit",
    "T",
    "TurnClient",
    "TurnEnd",
    "call_key",
    "refused",
]

Emit = Callable[[UnifiedEvent], Awaitable[None]]
T = TypeVar("T")

NOT_RUN_NO_TOOLS = "no local tools are available in this run (backend_options.local_tools is false)"

DELEGATE = "delegate"
"""The tool that hands a task to a subagent (`backend_options.subagents`)."""

_DELEGATE_DECLARATION: dict[str, Any] = {
    "name": DELEGATE,
    "description": (
        "Hands a self-contained task to a subagent: a new conversation with the same model, tools and permissions, "
        "which sees nothing of this one and works until the task is done. Its final answer comes back as this "
        "call's result; its steps do not fill this conversation. Use it for a side task with many steps whose "
        "details you do not need (a search through many files, a summary of a long log)."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "description": "What the subagent must do and answer, with every detail it needs: it sees nothing "
                "of this conversation.",
            },
            "description": {"type": "string", "description": "A few words naming the task, shown to the user."},
        },
        "required": ["task"],
        "additionalProperties": False,
    },
}

DELEGATIONS_PER_TURN = 4
"""`delegate` calls run from one model turn at most (one after the other); the rest are answered "not run":
each may take `SUBAGENT_MAX_TURNS` requests, and a turn of a hundred calls would multiply the run's cost."""

SUBAGENT_MAX_TURNS = 50
"""A subagent's model requests at most, when the run sets no `max_turns` (which then bounds each subagent too)."""

_IN_TASK: ContextVar[str | None] = ContextVar("unified_subagent_task", default=None)
"""The subagent task whose calls are running (its permission prompts carry its id)."""


@dataclass
class TurnEnd:
    """How one model request ended, as the loop needs to know it."""

    usage: Usage = field(default_factory=Usage)
    calls: list[ToolCall] = field(default_factory=list)
    """Local function calls to run before the next request."""
    outcome: RunOutcome | None = None
    """Set when the run ends with this turn."""
    error: UnifiedError | None = None
    """Raised once the turn is recorded: the backend reported a failure in-band."""
    malformed: str | None = None
    """Why the turn must be asked again (it is not kept in the history)."""
    continues: bool = False
    """The backend asks to be continued with no new input (a continuation token)."""


@dataclass(frozen=True)
class Declarations:
    """The function declarations of a run's requests, as JSON text: what a config cache is keyed by
    and what google-genai's converters parse. The same settings give the very same text (cached per
    process), so a backend that needs only the text never parses and dumps it again in front of the
    first request; `parsed()` gives a list of the run's own."""

    json: str = "[]"

    def parsed(self) -> list[dict[str, Any]]:
        declared: list[dict[str, Any]] = json.loads(self.json)
        return declared

    def __bool__(self) -> bool:
        return self.json != "[]"


class TurnClient(Protocol):
    """One backend's side of the loop. Entered once per run (opening and closing its HTTP clients)."""

    backend: str
    model: str

    @property
    def options(self) -> ApiOptions: ...

    @property
    def connection(self) -> AbstractAsyncContextManager[object]:
        """Entered once per run: opens the HTTP clients, closes them when the run ends."""

    async def abandon(self) -> None:
        """The run is ending on a failure or a cancellation: release server-side work (best effort)."""

    def choose_model(self, stored: str | None) -> str:
        """The model of this run (the caller's, else the resumed session's, else the default); sets `model`."""

    def prepare(self, session: StoredSession) -> None:
        """Read the session's history (a new session's: the `history` it continues) and add the
        prompt to it, in the session's state, before the session's first save: a run killed during
        its first request resumes with its prompt (`retry` answers it again). What it had to change in a
        stored history for the API to take it goes in `history_notes`."""

    @property
    def history_notes(self) -> list[str]:
        """What `prepare` changed in a stored history (an attachment of a type the API refuses, made a text
        note): the run says each in an `unsupported_option` warning, as it says what a `history` cannot carry."""

    def begin(self, session: StoredSession, declarations: Declarations) -> None:
        """Configure the requests (the declarations, the generation settings). Reads the session
        only: its first save may be under way in a worker thread."""

    async def send(self, emit: Emit) -> TurnEnd:
        """Send one request (whatever the state says goes into it) and translate its answer."""

    def classify(self, exc: BaseException) -> Failure | None:
        """What a failure raised by `send` means (None: not a request failure)."""

    def keep_turn(self, session: StoredSession, turn: TurnEnd) -> None:
        """Record a finished (not malformed) turn in the session's state."""

    def keep_tool_round(self, session: StoredSession, calls: list[ToolCall], outcomes: list[ToolOutcome]) -> None:
        """Record the calls' results in the state as the next request's input."""

    def for_subagent(self, params: ExecuteParams) -> TurnClient:
        """A client of the same backend and options for a subagent's own conversation, run with `params`
        (`_subagent_params`): nothing of this one's state."""


@dataclass(frozen=True)
class _RuntimeSettings:
    """Everything a run's tool runtime is built from that its declarations could depend on."""

    cwd: Path
    include_directories: tuple[Path, ...]
    approval_mode: str
    excluded_tools: tuple[str, ...]
    asks_user: bool


async def _no_answer(request: Any) -> Any:  # pragma: no cover - the cached runtime never runs a tool
    raise AssertionError("the runtime that only declares tools ran one")


@functools.lru_cache(maxsize=64)
def _declarations_of(settings: _RuntimeSettings, family: ToolFamily) -> str:
    """The declarations a runtime with these settings offers (as JSON: a run that needs them as a
    list parses its own copy)."""
    runtime = ToolRuntime(
        settings.cwd,
        include_directories=settings.include_directories,
        approval_mode=settings.approval_mode,  # type: ignore[arg-type]
        excluded_tools=settings.excluded_tools,
        user_input=_no_answer if settings.asks_user else None,
    )
    return json.dumps(runtime.declarations(family))


async def _consumer_turn() -> None:
    """Let the consumer take what was just handed to it, before this task goes on.

    The consumer was woken when the event was handed over: asyncio runs it at the first checkpoint;
    trio may run a batch of woken tasks in reverse order, so the second one is after it there too.
    """
    await anyio.lowlevel.checkpoint()
    await anyio.lowlevel.checkpoint()


def call_key(call: ToolCall) -> str:
    """Identity of a call for runaway-loop detection: name plus canonical arguments."""
    return f"{call.name}:{json.dumps(call.args, sort_keys=True, default=str)}"


def refused(calls: list[ToolCall], message: str) -> list[ToolOutcome]:
    return [ToolOutcome(c.id, c.name, {"error": message}, True) for c in calls]


@functools.lru_cache(maxsize=64)
def _plus_delegate(declared: str) -> str | None:
    """The declarations `declared` (JSON text) with `delegate`, None when a tool of that name is among them.
    Cached as `_declarations_of` is: the same settings give the same text, so a run does not parse and dump
    its declarations again in front of its first request."""
    parsed: list[dict[str, Any]] = json.loads(declared)
    if any(d.get("name") == DELEGATE for d in parsed):
        return None
    return json.dumps([*parsed, _DELEGATE_DECLARATION])


def _subagent_params(params: ExecuteParams, task: str, model: str) -> ExecuteParams:
    """A subagent's parameters: the run's, on its model, with `task` as the prompt and nothing of the run's
    conversation (no history, images, resume or retry)."""
    fresh = {"prompt": task, "images": (), "history": None, "resume": None, "retry": False, "model": model}
    return params.model_copy(update=fresh)


@dataclass
class _Streaks:
    """What the loop counts over consecutive turns (the run's, or a subagent's): malformed turns in a row,
    and the same calls in a row (a runaway loop)."""

    malformed: int = 0
    repeats: int = 0
    last_keys: list[str] = field(default_factory=list)

    def botched(self) -> int:
        """One more malformed turn: how many in a row."""
        self.malformed += 1
        return self.malformed

    def kept(self) -> None:
        """A turn that was not malformed."""
        self.malformed = 0

    def same_calls(self, calls: list[ToolCall]) -> int:
        """A turn that asked for `calls`: how many turns in a row asked for the very same ones."""
        keys = sorted(call_key(c) for c in calls)
        self.repeats = self.repeats + 1 if keys == self.last_keys else 1
        self.last_keys = keys
        return self.repeats


def _too_often_malformed(why: str, count: int) -> str:
    """The run's error once the model's turn was malformed more often in a row than `max_retries` allows: what the
    last one was, how often, and what to do (it said "was malformed 1 times", and nothing to do; round 21)."""
    times = "once" if count == 1 else f"{count} times in a row"
    return (
        f"{why}; the model's turn was malformed {times}, more than backend_options['max_retries'] asks again "
        "(run again, or raise max_retries; a model that keeps failing so may need a simpler prompt or fewer tools)"
    )


class AgentLoop:
    """One run of an API backend: the session, the tools and the turns, around a `TurnClient`."""

    def __init__(self, ctx: RunContext, client: TurnClient) -> None:
        self.ctx = ctx
        self.params = ctx.params
        self.client = client
        self.options = client.options
        self.store: SessionStore = ctx.params.session_store or default_store()
        """The only place the API backends touch the session store."""
        self._delegated = Usage()
        """The usage of the subagents of the tool round under way (the session's, once the round is kept)."""
        self._child_declarations: Declarations | None = None
        """What a subagent's requests declare (the run's, without `delegate`); None: the run offers no `delegate`."""
        self._requests = 0
        """Model requests of the run so far, its subagents' included (`max_requests`)."""
        self._request_limit = self.options.max_requests
        """The run's model requests at most, its subagents' included; None: no bound on the total (the run's own
        requests are `max_turns`', each subagent's its own `max_turns`, and `max_subagents` bounds how many)."""
        self._subagents = 0
        """Subagents the run has started (`max_subagents`)."""

    async def run(self) -> RunOutcome:
        params = self.params
        backend = self.client.backend
        if params.resume:
            found = await self.store.resolve(backend, params.resume)
            session = await self.store.load(backend, found.session_id)
        else:
            session = StoredSession.new(backend, model=None, cwd=str(params.cwd), first_prompt=params.prompt or None)
            if params.history is not None:  # the new session's record says where it came from
                session.state["continued_from"] = (
                    params.history.origin.model_dump(mode="json") if params.history.origin is not None else None
                )
        session.model = self.client.choose_model(session.model)
        try:
            self.client.prepare(session)
        except (AttributeError, LookupError, TypeError, ValueError) as exc:  # pydantic's ValidationError too
            if not params.resume:
                raise
            raise _unreadable_state(backend, session, exc) from None
        self._leased = anyio.Event()
        self._started = anyio.Event()
        self._finished = anyio.Event()
        self._emit: Callable[[UnifiedEvent], Awaitable[None]] = self._emit_when_started
        outcome: list[RunOutcome] = []
        work_failed: list[Exception] = []
        durable_failed: list[Exception] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._work, session, outcome, work_failed)
            try:
                await self._durable(session)
            except Exception as exc:  # raised after the group, not as an ExceptionGroup
                durable_failed.append(exc)
                tg.cancel_scope.cancel()
        if durable_failed:
            raise durable_failed[0]
        if work_failed:
            raise work_failed[0]
        return outcome[0]

    async def _durable(self, session: StoredSession) -> None:
        """The session's side: leased, saved before `session_started`, saved again once the work ended."""
        params = self.params
        async with self.store.lease(self.client.backend, session.session_id):
            self._leased.set()
            try:
                # before session_started: the short id it announces is resumable
                await save_announced(self.store, session, new=params.resume is None)
                await self.ctx.emit(
                    SessionStarted.model_construct(
                        session_id=session.session_id,
                        backend=self.client.backend,
                        model=self.client.model,
                        short_id=session.short_id,
                        resumed=params.resume is not None,
                        cwd=str(params.cwd),
                        transport="http",
                    )
                )
                self._emit = self.ctx.emit
                self._started.set()
                await self._finished.wait()
            finally:
                if self._started.is_set():  # else the session never changed: the first save stands (or failed)
                    with anyio.CancelScope(shield=True):
                        await self._save(session)

    async def _work(self, session: StoredSession, outcome: list[RunOutcome], failed: list[Exception]) -> None:
        """The model's side: the connection, the tools and the turns, from the first request on."""
        try:
            async with self.client.connection:
                try:
                    outcome.append(await self._with_tools(session))
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await self.client.abandon()
                    raise
        except Exception as exc:
            failed.append(exc)
        finally:
            self._finished.set()

    async def _emit_when_started(self, event: UnifiedEvent) -> None:
        """What the work emits before `session_started` waits for it (then `_emit` is the guard's own)."""
        await self._started.wait()
        await self.ctx.emit(event)

    async def _with_tools(self, session: StoredSession) -> RunOutcome:
        params = self.params
        async with AsyncExitStack() as stack:
            self._stack = stack
            self._tools: ToolRuntime | None = None
            declarations = Declarations()
            if self.options.local_tools:
                family = tool_family(self.client.model)
                if params.mcp_servers:  # their tools are known once connected: the runtime starts now
                    tools = await self._runtime()
                    for problem in await tools.connect_mcp(params.mcp_servers):
                        await self._warn("mcp_unavailable", problem.message)
                    declarations = Declarations(json.dumps(tools.declarations(family)))
                else:
                    declarations = Declarations(_declarations_of(self._runtime_settings(), family))
            if self.options.local_tools and self.options.subagents and not is_excluded(DELEGATE, params.excluded_tools):
                declarations = await self._with_delegate(declarations)
            for note in self.client.history_notes:
                await self._warn("unsupported_option", f"history: {note}")
            self.client.begin(session, declarations)
            await self._leased.wait()  # no request before the store answered: it may be down, or the session in use
            return await self._turns(session)

    async def _with_delegate(self, declarations: Declarations) -> Declarations:
        """The run's declarations with `delegate` (a subagent's are the run's as they were)."""
        offered = _plus_delegate(declarations.json)
        if offered is None:  # an MCP tool of that name
            await self._warn(
                "unsupported_option",
                f"subagents: a tool named {DELEGATE!r} is declared already, so this run offers no subagents",
            )
            return declarations
        self._child_declarations = declarations
        return Declarations(offered)

    def _runtime_settings(self) -> _RuntimeSettings:
        params = self.params
        return _RuntimeSettings(
            params.cwd,
            tuple(params.include_directories),
            params.approval_mode,
            tuple(params.excluded_tools),
            params.on_user_input is not None,
        )

    async def _runtime(self) -> ToolRuntime:
        """The run's tool runtime, started on first use and closed with the run."""
        if self._tools is None:
            params = self.params
            self._tools = await self._stack.enter_async_context(
                ToolRuntime(
                    params.cwd,
                    include_directories=params.include_directories,
                    approval_mode=params.approval_mode,
                    excluded_tools=params.excluded_tools,
                    user_input=self._ask_user if params.on_user_input is not None else None,
                    secrets=run_secrets(params),
                    policy=self.options.policy,
                    hide_host_environment=self.options.hide_host_environment,
                )
            )
        return self._tools

    async def _ask_user(self, request: UserInputRequest) -> UserInputResponse:
        """A tool's permission prompt, marked with the subagent task whose call asks (if one does)."""
        task = _IN_TASK.get()
        if task is not None:
            _into_task(request, task)
        return await self.ctx.ask_user(request)

    async def _save(self, session: StoredSession) -> None:
        await self.store.save(session)

    async def _while_saving(self, session: StoredSession | None, step: Callable[[], Awaitable[T]]) -> T:
        """`step()` while `session` is written in the background; returns when both are done.

        The save (an fsync, ~2 ms on a local disk) is off the critical path, not skipped: the step
        must not change the session (the store may read it from a worker thread), and the write is
        finished before the caller changes it again. A failure of the save is raised first.
        """
        if session is None:
            return await step()
        failures: list[Exception] = []
        result: list[T] = []

        async def write() -> None:
            try:
                await self._save(session)
            except Exception as exc:
                failures.insert(0, exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(write)
            try:
                result.append(await step())
            except Exception as exc:  # raised after the write has finished, not as an ExceptionGroup
                failures.append(exc)
        if failures:
            raise failures[0]
        return result[0]

    async def _warn(self, code: str, message: str) -> None:
        await self._emit(WarningEvent(code=code, message=message))

    async def _turns(self, session: StoredSession) -> RunOutcome:
        max_turns = self.params.max_turns
        streaks = _Streaks()
        unsaved: StoredSession | None = None
        """The session, when its last change is to be written while the next request is in flight."""
        while True:
            if max_turns is not None and self.ctx.turns >= max_turns:
                return RunOutcome(status="max_turns", error=f"stopped after max_turns={max_turns} model requests")
            if self._spent():
                return RunOutcome(status="max_turns", error=self._spent_message())
            turn = await self._while_saving(unsaved, self._request)
            self._requests += 1
            unsaved = None
            # The turn's last events (a tool turn's calls, announced when its stream ends) are in the
            # consumer's buffer: let it have them before the turn is saved and the tools start (the
            # runtime's start alone kept a first tool_use from the consumer for ~3 ms).
            await _consumer_turn()
            if not self._started.is_set():  # the session changes only once its first save is done
                await self._started.wait()
            counted = await self.ctx.end_turn(turn.usage)
            session.usage = session.usage + counted
            session.turns += 1
            if turn.malformed is not None:
                malformed = streaks.botched()
                if malformed > self.options.max_retries:
                    return RunOutcome(status="error", error=_too_often_malformed(turn.malformed, malformed))
                await self._warn("malformed_turn", f"{turn.malformed}; asking the model again")
                continue
            streaks.kept()
            self.client.keep_turn(session, turn)
            if turn.error is not None:
                raise turn.error  # `run` saves the session on the way out
            if turn.outcome is not None:
                return turn.outcome
            if turn.continues or not turn.calls:
                unsaved = session
                continue
            repeats = streaks.same_calls(turn.calls)
            if repeats >= self.options.loop_threshold:
                await self._refuse(session, turn.calls, "not run: the same call was repeated too often (runaway loop)")
                raise UnifiedError(
                    f"runaway loop: the model made the same call ({turn.calls[0].name} with the same arguments) "
                    f"{repeats} turns in a row, so the run was stopped",
                    code="runaway_loop",
                    hint="rephrase the task, or raise backend_options.loop_threshold if the repetition is intended",
                )
            if max_turns is not None and self.ctx.turns >= max_turns:
                await self._refuse(session, turn.calls, f"not run: the run reached max_turns={max_turns}")
                return RunOutcome(
                    status="max_turns",
                    error=f"stopped after max_turns={max_turns} model requests; the last turn's calls were not run",
                )
            if self._spent():
                await self._refuse(session, turn.calls, f"not run: {self._spent_message()}")
                return RunOutcome(
                    status="max_turns", error=f"{self._spent_message()}; the last turn's calls were not run"
                )
            outcomes = await self._while_saving(session, functools.partial(self._run_calls, turn.calls))
            self.client.keep_tool_round(session, turn.calls, outcomes)
            session.usage = session.usage + self._delegated  # the session's usage is the run's, as `result` says
            self._delegated = Usage()
            unsaved = session  # the round is written while the next request is in flight

    def _spent(self) -> bool:
        """Whether the run has made all the model requests it may (`max_requests`), its subagents' included."""
        return self._request_limit is not None and self._requests >= self._request_limit

    def _spent_message(self) -> str:
        return f"the run reached max_requests={self._request_limit} model requests, its subagents' included"

    async def _request(self) -> TurnEnd:
        """One model request, asked again while nothing of it has been shown."""
        shown = 0

        async def emit(event: UnifiedEvent) -> None:
            nonlocal shown
            shown += 1
            await self._emit(event)
            if shown == 1:
                # The guard hands events over without yielding, so the chunks already read behind
                # the first one (up to the buffer's 128 events) would all be translated before the
                # consumer saw it: the turn's first output goes now.
                await _consumer_turn()

        async def attempt() -> TurnEnd:
            nonlocal shown
            shown = 0
            return await self.client.send(emit)

        return await retrying(
            attempt, classify=self.client.classify, options=self.options, warn=self._warn, shown=lambda: shown > 0
        )

    async def _run_calls(self, calls: list[ToolCall], emit: Emit | None = None) -> list[ToolOutcome]:
        """Run one round's calls and show their results; `emit` is a subagent's (its calls may not delegate)."""
        show = emit or self.ctx.emit
        most = limits.MAX_CALLS_PER_TURN
        dropped = refused(calls[most:], f"not run: a turn runs at most {most} calls; ask again for the rest")
        delegated = {c.id for c in calls[:most] if c.name == DELEGATE and self._child_declarations is not None}
        local = [c for c in calls[:most] if c.id not in delegated]
        if not local:
            ran: list[ToolOutcome] = []
        elif not self.options.local_tools:
            ran = refused(local, NOT_RUN_NO_TOOLS)
        else:
            tools = await self._runtime()
            ran = await tools.run_batch(local, EventForwarder(show))
        by_id = {outcome.call_id: outcome for outcome in [*ran, *dropped]}
        for n, call in enumerate(c for c in calls[:most] if c.id in delegated):
            if emit is not None:
                by_id[call.id] = _not_delegated(call, "a subagent cannot delegate (one level only)")
            elif n >= DELEGATIONS_PER_TURN:
                by_id[call.id] = _not_delegated(call, f"at most {DELEGATIONS_PER_TURN} delegations a turn")
            elif self._subagents >= self.options.max_subagents:
                limit = self.options.max_subagents
                by_id[call.id] = _not_delegated(call, f"the run has started max_subagents={limit} subagents already")
            elif self._spent():
                by_id[call.id] = _not_delegated(call, self._spent_message())
            else:
                by_id[call.id] = await self._delegate(call)
        outcomes = [by_id[c.id] for c in calls]
        for outcome in outcomes:
            shown = outcome.response.get("error" if outcome.is_error else "output", outcome.response)
            ran_with = outcome.decision.input if outcome.decision is not None else None  # the user changed it
            await show(ToolResult(tool_use_id=outcome.call_id, output=shown, is_error=outcome.is_error, input=ran_with))
        return outcomes

    async def _delegate(self, call: ToolCall) -> ToolOutcome:
        """Run a `delegate` call: a subagent works on its task in a conversation of its own, its events marked
        with the task's id, between `subagent_started` and `subagent_completed`; its final answer is the call's
        output. The delegation is decided by the run's policy as any call is (the shipped `delegate` rule allows it
        in every mode: the subagent's own calls are each put to the policy, in the run's approval mode), so a
        caller's deny or ask rule for `delegate` stops or asks it."""
        task, description = call.args.get("task"), call.args.get("description")
        if not isinstance(task, str) or not task.strip():
            return ToolOutcome(
                call.id, call.name, {"error": f"{DELEGATE} needs `task`: what the subagent must do"}, True
            )
        decision = await (await self._runtime()).decide(call)
        await self.ctx.emit(decision)
        refusal = refused_by(call, decision)
        if refusal is not None:
            return refusal
        if decision.input is not None:  # the user changed the task
            task, description = decision.input.get("task"), decision.input.get("description")
            if not isinstance(task, str) or not task.strip():
                denied = {"error": f"Tool call {DELEGATE} was denied: the input the user gave has no `task`"}
                return ToolOutcome(call.id, call.name, denied, True, decision=decision)
        self._subagents += 1
        task_id = f"task-{call.id}"
        await self.ctx.emit(
            SubagentStarted(
                task_id=task_id,
                agent_name=DELEGATE,
                description=clip(description, 200) if isinstance(description, str) and description else None,
                parent_tool_use_id=call.id,
            )
        )
        client = self.client.for_subagent(_subagent_params(self.params, task, self.client.model))
        subagent = _Subagent(self, client, task_id)
        token = _IN_TASK.set(task_id)
        try:
            status, answer = await subagent.run()
        except RunStopped:
            raise
        except UnifiedError as exc:  # the subagent's request failed for good: the parent's model is told
            status, answer = "failed", exc.message
        finally:
            _IN_TASK.reset(token)
        usage = subagent.usage
        if usage.output_tokens == 0 and subagent.text_chars:
            usage = usage.model_copy(update={"output_tokens": estimate_tokens(subagent.text_chars), "estimated": True})
        self._delegated = self._delegated + usage
        await self.ctx.emit(
            SubagentCompleted(task_id=task_id, agent_name=DELEGATE, status=status, result=answer, usage=usage)
        )
        if status == "completed":
            return ToolOutcome(call.id, call.name, {"output": answer}, False, decision=decision)
        return ToolOutcome(
            call.id, call.name, {"error": f"the subagent ended {status}: {answer}"}, True, decision=decision
        )

    async def _refuse(self, session: StoredSession, calls: list[ToolCall], message: str) -> None:
        """Answer calls that will not run, in the stream and in the history (so a resume is valid).

        The run ends right after, and `run` saves the session on the way out."""
        for call in calls:
            await self._emit(ToolResult(tool_use_id=call.id, output=message, is_error=True))
        self.client.keep_tool_round(session, calls, refused(calls, message))


def _into_task(event: UnifiedEvent, task_id: str) -> None:
    """Mark `event` as the subagent task's; its tool call id gets the task's prefix, so the ids the subagent's
    conversation uses (the server's, or the translator's own count) never meet the run's. A prompt's
    `request_id` gets it too: the runtime names a permission prompt after its call (`permission-call_1_1`), and
    the subagent's first call has the same id as the run's first, so a caller keeping answers by request id
    would have taken the subagent's prompt for the run's (round 9). The translators show no id with the
    separator in it (`call_ids.shown_id`), so no id of the run, nor of another subagent, reads as one of this
    subagent's (round 10)."""
    event.subagent_task_id = task_id
    event.is_subagent = True
    tool_use_id = getattr(event, "tool_use_id", None)
    if isinstance(tool_use_id, str):
        event.tool_use_id = f"{task_id}{SEPARATOR}{tool_use_id}"  # type: ignore[union-attr]
    if type(event) is UserInputRequest:
        event.request_id = f"{task_id}{SEPARATOR}{event.request_id}"


_Ending = tuple[Literal["completed", "failed", "max_turns"], str]
"""How a subagent's conversation ended (its `subagent_completed` status) and its answer, or why there is none."""


def _not_delegated(call: ToolCall, why: str) -> ToolOutcome:
    return ToolOutcome(call.id, call.name, {"error": f"not run: {why}"}, True)


class _Subagent:
    """One `delegate` call's conversation: the main loop's turns (retries, malformed turns, runaway calls,
    tool rounds through the run's runtime) on a `TurnClient` of its own, never saved (the parent's history
    keeps the call and its answer), its usage reported in `subagent_completed` instead of the turn's."""

    def __init__(self, loop: AgentLoop, client: TurnClient, task_id: str) -> None:
        self.loop = loop
        self.client = client
        self.task_id = task_id
        self.usage = Usage()
        self.text_chars = 0
        self._answer: list[str] = []
        """The text of the subagent's latest model turn: its answer once it stops."""
        self._shown = 0
        """Events of the request being tried."""

    async def _attempt(self) -> TurnEnd:
        """One try of a model request (`retrying` asks again while nothing of it was shown)."""
        self._answer = []
        self._shown = 0
        return await self.client.send(self.emit)

    async def emit(self, event: UnifiedEvent) -> None:
        self._shown += 1
        _into_task(event, self.task_id)
        if type(event) is TextDelta:
            self._answer.append(event.text)
            self.text_chars += len(event.text)
        await self.loop.ctx.emit(event)

    async def _warn(self, code: str, message: str) -> None:
        """A warning of the subagent's (a retry, a malformed turn): its own, but no output of a request."""
        warning = WarningEvent(code=code, message=message)
        _into_task(warning, self.task_id)
        await self.loop.ctx.emit(warning)

    async def run(self) -> _Ending:
        """(status, the final answer or why there is none)."""
        loop, client = self.loop, self.client
        params = loop.params
        session = StoredSession.new(client.backend, model=None, cwd=str(params.cwd), first_prompt=None)
        session.model = client.choose_model(loop.client.model)
        client.prepare(session)
        assert loop._child_declarations is not None
        client.begin(session, loop._child_declarations)
        limit = params.max_turns if params.max_turns is not None else SUBAGENT_MAX_TURNS
        async with client.connection:
            try:
                return await self._turns(session, limit)
            except BaseException:
                with anyio.CancelScope(shield=True):
                    await client.abandon()
                raise

    async def _turns(self, session: StoredSession, limit: int) -> _Ending:
        turns = 0
        streaks = _Streaks()
        while True:
            if turns >= limit:
                return "max_turns", f"stopped after {limit} model requests"
            if self.loop._spent():
                return "max_turns", f"stopped after {turns} model requests: {self.loop._spent_message()}"
            turn = await retrying(
                self._attempt,
                classify=self.client.classify,
                options=self.loop.options,
                warn=self._warn,
                shown=lambda: self._shown > 0,
            )
            turns += 1
            self.loop._requests += 1
            self.usage = self.usage + turn.usage
            if turn.malformed is not None:
                malformed = streaks.botched()
                if malformed > self.loop.options.max_retries:
                    return "failed", _too_often_malformed(turn.malformed, malformed)
                await self._warn("malformed_turn", f"{turn.malformed}; asking the model again")
                continue
            streaks.kept()
            self.client.keep_turn(session, turn)
            if turn.error is not None:
                return "failed", turn.error.message
            if turn.outcome is not None:
                answer = "".join(self._answer)
                if turn.outcome.status == "success":
                    return "completed", answer
                return "failed", turn.outcome.error or f"the subagent's conversation ended {turn.outcome.status}"
            if turn.continues or not turn.calls:
                continue
            repeats = streaks.same_calls(turn.calls)
            if repeats >= self.loop.options.loop_threshold:
                return "failed", f"runaway loop: the same call ({turn.calls[0].name}) {repeats} turns in a row"
            outcomes = await self.loop._run_calls(turn.calls, self.emit)
            self.client.keep_tool_round(session, turn.calls, outcomes)


def _unreadable_state(backend: str, session: StoredSession, exc: Exception) -> CorruptSession:
    """The error of a resumed session whose stored state the backend cannot read (`contents` that is no list
    of contents, steps that are no steps): a store is shared, so its state may be anything another tool or a
    hand wrote. It was the parse's own exception (pydantic's ValidationError), reported as `internal_error`,
    "a bug in unified"; `export` of the same record already said `corrupt_session`. Nothing was saved."""
    return CorruptSession(
        f"{backend} session {session.short_id} in the session store holds a state unified cannot read "
        f"({unreadable_why(exc)})",
        hint="it was left unchanged; start a new session (or fix the record), or continue what it holds elsewhere",
        details={"session_id": session.session_id},
    )
