"""The backend contract: what a backend implements, and how one joins `unified`.

A backend is three small things (docs/backends/README.md walks through adding one):

- a factory `(ExecuteParams) -> Backend`: one `Backend` instance drives one run. Its `run(ctx)`
  pushes `UnifiedEvent`s through `ctx.emit`, ends each model turn with `ctx.end_turn(usage)`,
  bridges questions with `ctx.ask_user`, and returns a `RunOutcome`. It never assigns `seq` and
  never emits `assistant_message` or `result`: the stream guard does that, once, for every backend
  alike. Raising a `UnifiedError` ends the run with a typed `error` event; any other exception is
  reported as a bug in the backend (`internal_error`).
- optionally a session locator factory `(SessionStore | None) -> SessionLocator`, so
  `unified.sessions` and `unified sessions` list, resolve, show and delete its sessions.
- one registration naming both: `register_backend(name, factory, sessions=...)` in code, or a
  `BackendEntry` published as an entry point of the `unified.backends` group. Given as
  "module:attribute" strings, nothing is imported until a run or a session listing needs it, so
  `execute()` never pays for a backend (or its SDK) it does not run.

A backend that drives an agent binary talks to it through an `AgentProcess`; tests substitute
the test kit's `FakeAgentProcess` for the real subprocess.

Stability: the names in `__all__` follow semantic versioning from 1.0 on. Until then a minor
release may change them, and says so in its notes; `RunContext` may gain methods (a backend that
only calls the documented ones keeps working), and `Backend` implementations must tolerate new
optional `ExecuteParams` fields.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from typing import Any, NamedTuple, Protocol, cast

from unified._sessions.records import SessionInfo, SessionStore
from unified._text import choose_one_of
from unified.conversations import Conversation
from unified.errors import BackendUnavailable, ConfigurationError
from unified.events import (
    DecidedBy,
    JsonValue,
    PermissionDecision,
    ResultStatus,
    UnifiedEvent,
    Usage,
    UserInputRequest,
    UserInputResponse,
)
from unified.types import ExecuteParams

__all__ = [
    "ENTRY_POINT_GROUP",
    "AgentProcess",
    "Backend",
    "BackendEntry",
    "BackendFactory",
    "MalformedLine",
    "RunContext",
    "RunOutcome",
    "SessionLocator",
    "SessionLocatorFactory",
    "UnsupportedOption",
    "built_in_backends",
    "known_backends",
    "load_backend_factory",
    "load_session_locator",
    "refusal",
    "register_backend",
    "session_backends",
]


# --- what a backend implements ---------------------------------------------------------------------


class UnsupportedOption(NamedTuple):
    """One set `ExecuteParams` option a backend cannot honour, announced before the run starts."""

    option: str
    """The option's name, as the caller spelled it (`thinking.budget`, `backend_options.foo`)."""
    explanation: str
    """What happens instead, for the `warning` event (or the error's message when `fatal`)."""
    fatal: bool
    """True: ignoring it would change what the run does, so the run ends with a `configuration_error`."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended, as the backend saw it. The guard turns it into the `result` event."""

    status: ResultStatus = "success"
    final_text: str | None = None
    """None: the guard uses the last top-level `assistant_message`."""
    error: str | None = None
    short_id: str | None = None


class RunContext(Protocol):
    """What the stream guard offers a backend during one run."""

    @property
    def params(self) -> ExecuteParams: ...

    @property
    def session_id(self) -> str | None: ...

    turns: int
    """Model turns taken so far; the backend counts them, the guard reports them."""

    async def emit(self, event: UnifiedEvent) -> None:
        """Send one event downstream (may wait while the consumer catches up)."""

    def add_usage(self, usage: Usage) -> None:
        """Add the main conversation's usage for the turn(s) just finished.

        If `usage.output_tokens` is 0 although the turn produced text, the guard replaces it by
        an estimate (`ceil(chars / 4)`) and flags the usage `estimated`.
        """

    async def end_turn(self, usage: Usage) -> Usage:
        """One model request of the main conversation finished: count it, add its usage (estimated
        as `add_usage` does), close its assistant message. Returns the usage as counted."""

    async def end_message(self, subagent_task_id: str | None = None) -> None:
        """Close the current assistant message (of the main agent or of one subagent)."""

    async def ask_user(self, request: UserInputRequest) -> UserInputResponse:
        """Emit `request`, wait for the caller's `on_user_input` answer (or its timeout).

        With no handler, or on timeout or a handler error, the answer is `cancelled=True` and a
        `warning` says why; the backend then applies the approval mode.
        """

    def native(self, raw: JsonValue) -> JsonValue | None:
        """`raw` if the caller asked for native events, else None."""


class Backend(Protocol):
    """One backend instance drives one run."""

    name: str

    async def run(self, ctx: RunContext) -> RunOutcome: ...

    def unsupported_options(self, params: ExecuteParams) -> Sequence[UnsupportedOption]:
        """Each set option this backend cannot honour (empty when it honours them all)."""
        ...


class SessionLocator(Protocol):
    """One backend's sessions, as `unified.sessions` and `unified sessions` see them."""

    backend: str

    async def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        """Every session (of the project at `cwd` when given); unreadable ones with `problem` set."""
        ...

    async def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """The one session `ref` names; raises SessionNotFound or AmbiguousSession."""
        ...

    async def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        """The session's conversation as plain data, for `unified sessions show`."""
        ...

    async def export(self, ref: str, cwd: str | None = None) -> Conversation:
        """The session's history as a portable `Conversation` (its `origin` naming the session)."""
        ...

    async def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Remove one session (only ever on the caller's explicit request)."""
        ...


def refusal(
    tool_use_id: str,
    tool_name: str,
    reason: str,
    *,
    decided_by: DecidedBy,
    rule: str | None = None,
    stops_run: bool = False,
    session_id: str | None = None,
    subagent_task_id: str | None = None,
) -> PermissionDecision:
    """The `permission_decision` of a call that is refused and never runs: `deny`, by `decided_by`, for
    `reason` (why, in words the caller reads).

    Backends that run tools refuse some calls on their own (a policy rule, the run's `max_turns`, a question
    nobody can answer, a run that stopped before the call's result): one builder, so each says it alike.
    """
    return PermissionDecision(
        tool_use_id=tool_use_id,
        tool_name=tool_name,
        decision="deny",
        decided_by=decided_by,
        rule=rule,
        reason=reason,
        stops_run=stops_run,
        session_id=session_id,
        subagent_task_id=subagent_task_id,
    )


class MalformedLine(Exception):
    """A line of an agent's stdout that cannot be read: longer than the line limit, or not UTF-8.

    Raised by `AgentProcess.receive` for that one line (which is dropped); the stream goes on, so
    the next `receive` returns the line after it. A backend reports it as a warning, never a crash.
    """

    def __init__(self, reason: str, size: int, head: str = "") -> None:
        super().__init__(f"{reason} ({size} bytes)")
        self.reason = reason
        """What is wrong with it, in words (for a warning)."""
        self.size = size
        """Its length in bytes (without the newline)."""
        self.head = head
        """Its first few hundred characters, when they could be read: enough to tell, for one, which
        request it answered (so that request fails at once instead of waiting for an answer)."""


class AgentProcess(ABC):
    """One running agent binary, as a backend that drives it sees it: lines in, lines out.

    The seam between such a backend and the operating system. The real implementation starts the
    binary in its own process group with an isolated environment and non-blocking pipes; the test
    kit's `FakeAgentProcess` is an in-process stand-in (one handler from the lines it receives to
    the lines it writes back), so a backend's protocol, translation, permission bridge and error
    mapping are tested without the binary. Lines are text without their newline: JSON Lines for
    every binary driven today (JSON-RPC, stream-json, a control protocol).

    An implementation is not tied to the event loop that started it: a warm process outlives the
    run that started it and serves later runs, on whichever loop (asyncio or trio) they use; `kill`
    works from no loop at all. One task at a time calls `receive`; `send` may be called by several
    (lines are never interleaved).

    Stability: provisional until 1.0, like the rest of this module; a member may be added only with
    a default implementation.
    """

    @property
    @abstractmethod
    def pid(self) -> int | None:
        """The process id (None for an in-process fake)."""

    @property
    @abstractmethod
    def returncode(self) -> int | None:
        """The exit status once the process has ended (negative: killed by that signal), else None."""

    @abstractmethod
    async def send(self, line: str) -> None:
        """Write one line (its newline is added) to the process's stdin; `ConnectionError` once it is gone."""

    @abstractmethod
    async def receive(self) -> str | None:
        """The next line of stdout, or None at its end (the process closed it or died).

        Raises `MalformedLine` for a line that cannot be read; the next call goes on after it.
        """

    async def end_input(self) -> None:  # noqa: B027 -- optional: a default, so older implementations keep working
        """Close the process's stdin: an agent that reads its input to the end (Claude Code) then
        finishes its work and exits by itself. The default does nothing (`close` still ends it)."""

    @abstractmethod
    def stderr_tail(self) -> str:
        """The last lines the process wrote to stderr (bounded, secrets redacted): for error messages."""

    @abstractmethod
    async def wait(self, grace: float) -> int | None:
        """The exit status once the process has ended, or None if it still runs after `grace` seconds."""

    @abstractmethod
    async def close(self) -> None:
        """End the process and every process it started (politely first); returns once the process has
        exited. Idempotent."""

    @abstractmethod
    def kill(self) -> None:
        """End the process and every process it started at once, without awaiting: from any thread, under
        any event loop or none (a warm process whose loop has finished; interpreter exit). Idempotent."""


# --- how a backend joins ---------------------------------------------------------------------------

BackendFactory = Callable[[ExecuteParams], Backend]
SessionLocatorFactory = Callable[[SessionStore | None], SessionLocator]

ENTRY_POINT_GROUP = "unified.backends"
"""Entry points in this group name a `BackendEntry` ("module:attribute"): how an installed package
adds a backend without anyone importing it first."""


@dataclass(frozen=True, slots=True)
class BackendEntry:
    """A backend as the registry knows it: import paths, so nothing loads before it is used."""

    name: str
    backend: str | BackendFactory
    """Its `BackendFactory`, or the "module:attribute" path of one (imported on first use)."""
    sessions: str | SessionLocatorFactory | None = None
    """Its `SessionLocatorFactory` (or a path of one); None for a backend that keeps no sessions."""


_BUILT_IN: dict[str, BackendEntry] = {
    entry.name: entry
    for entry in (
        BackendEntry(
            "gemini-cli",
            "unified._adapters.gemini_cli:create_backend",
            "unified._adapters.gemini_cli:create_session_locator",
        ),
        BackendEntry(
            "generate-content",
            "unified._adapters.generate_content:create_backend",
            "unified._adapters.generate_content:create_session_locator",
        ),
        BackendEntry(
            "interactions",
            "unified._adapters.interactions:create_backend",
            "unified._adapters.interactions:create_session_locator",
        ),
        BackendEntry(
            "claude-code",
            "unified._adapters.claude_code:create_backend",
            "unified._adapters.claude_code:create_session_locator",
        ),
        BackendEntry(
            "codex",
            "unified._adapters.codex:create_backend",
            "unified._adapters.codex:create_session_locator",
        ),
    )
}
_registered: dict[str, BackendEntry] = {}


def register_backend(
    name: str, backend: str | BackendFactory, *, sessions: str | SessionLocatorFactory | None = None
) -> None:
    """Make `name` runnable by `execute(backend=name)` and, given `sessions`, its sessions listable.

    `backend` is a `BackendFactory` and `sessions` a `SessionLocatorFactory`, each given itself or
    as a "module:attribute" path imported on first use. A built-in backend's name cannot be taken over.
    """
    entry = BackendEntry(name, backend, sessions)
    if name in _BUILT_IN and _BUILT_IN[name] != entry:
        raise ConfigurationError(f"backend {name!r} is built in", hint="register the backend under another name")
    _registered[name] = entry


def built_in_backends() -> Mapping[str, BackendEntry]:
    """The backends that ship with `unified`, in the order listings show them."""
    return _BUILT_IN


@cache
def _entry_point_backends() -> dict[str, BackendEntry]:
    found: dict[str, BackendEntry] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            entry = point.load()
        except Exception:
            continue
        if isinstance(entry, BackendEntry) and entry.name == point.name:
            found[point.name] = entry
    return found


def known_backends() -> dict[str, BackendEntry]:
    """Every loadable backend: the built-in ones (which no other can replace), then registered ones,
    then entry points."""
    others = {**_entry_point_backends(), **_registered}
    return {**_BUILT_IN, **{name: entry for name, entry in others.items() if name not in _BUILT_IN}}


def _entry(name: str) -> BackendEntry:
    table = _BUILT_IN if name in _BUILT_IN else known_backends()
    try:
        return table[name]
    except KeyError:
        raise ConfigurationError(
            f"unknown backend {name!r}", hint=choose_one_of(name, sorted(known_backends()))
        ) from None


def _load(target: object, name: str, what: str) -> object:
    if not isinstance(target, str):
        return target
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BackendUnavailable(
            f"the {name} backend cannot load its {what}: {exc}",
            hint="reinstall unified with its dependencies (pip install unified)",
        ) from exc
    return getattr(module, attribute)


def load_backend_factory(name: str) -> BackendFactory:
    """The factory of backend `name`; ConfigurationError when no backend has that name."""
    return cast("BackendFactory", _load(_entry(name).backend, name, "adapter"))


def session_backends() -> tuple[str, ...]:
    """The backends that keep sessions, in the order listings search them."""
    return tuple(name for name, entry in known_backends().items() if entry.sessions is not None)


def load_session_locator(name: str, store: SessionStore | None = None) -> SessionLocator:
    """The SessionLocator of backend `name`; the API backends' read `store` (None: the default store)."""
    entry = _entry(name)
    if entry.sessions is None:
        raise ConfigurationError(f"the {name} backend keeps no sessions", hint="resume on a backend that keeps them")
    factory = cast("SessionLocatorFactory", _load(entry.sessions, name, "session locator"))
    return factory(store)
