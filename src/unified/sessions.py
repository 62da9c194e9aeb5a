"""Sessions across backends: the store protocol, the listing record, and lookup by short id.

Each backend keeps its sessions its own way: the Gemini CLI in its chat files, the API backends
(generate-content, interactions) in a `SessionStore` (by default the `FileSessionStore` under
the user data dir; pass another through `ExecuteParams.session_store`). Each backend's
`SessionLocator` presents them alike, and the functions at the bottom (`list_sessions`,
`resolve`, `show`, `delete`) search every backend, so a short id from `unified sessions list`
names exactly one session, or gives an error listing what there is. See docs/sessions.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from unified._errors import (
    AmbiguousSession,
    CorruptSession,
    SessionNotFound,
    UnifiedError,
    UnsupportedSessionFormat,
)
from unified.events import Usage

if TYPE_CHECKING:
    from unified._internal.postgres_store import PostgresSessionStore
    from unified._internal.session_store import FileSessionStore, MemorySessionStore, store_from_url

SHORT_ID_LENGTH = 8


def short_id_of(session_id: str) -> str:
    """The first eight characters of a session id, as the Gemini CLI names its files."""
    return session_id[:SHORT_ID_LENGTH]


class SessionProblem(BaseModel):
    """Why a stored session cannot be read. The file stays as it is; nothing rewrites or deletes it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    kind: Literal["corrupt", "newer_format"]
    message: str
    hint: str

    def error(self) -> CorruptSession | UnsupportedSessionFormat:
        """The exception a load or a resume of this session raises."""
        if self.kind == "newer_format":
            return UnsupportedSessionFormat(self.message, hint=self.hint)
        return CorruptSession(self.message, hint=self.hint)


class SessionInfo(BaseModel):
    """One stored session, as listed. Reading it must not need the whole conversation.

    `problem` is set for a session whose record cannot be read (corrupt, or written by a newer
    `unified`): listings report it instead of hiding it, and resolving it raises its error.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    backend: str
    session_id: str
    short_id: str
    started_at: datetime | None = None
    updated_at: datetime | None = None
    summary: str | None = None
    first_prompt: str | None = None
    cwd: str | None = None
    model: str | None = None
    path: str | None = Field(default=None, description="Where the session lives (a file, or the store's key).")
    problem: SessionProblem | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class StoredSession:
    """A session of an API backend as a `SessionStore` holds it: metadata plus the backend's own `state`.

    `state` is JSON-shaped data the backend alone interprets (the whole conversation for
    generate-content, the interaction chain for interactions).
    """

    backend: str
    session_id: str
    model: str | None = None
    cwd: str | None = None
    first_prompt: str | None = None
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    state: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, backend: str, *, model: str | None, cwd: str | None, first_prompt: str | None) -> StoredSession:
        """A fresh session with a new id (nothing is stored until a store's `save`)."""
        return cls(backend=backend, session_id=str(uuid.uuid4()), model=model, cwd=cwd, first_prompt=first_prompt)

    @property
    def short_id(self) -> str:
        return short_id_of(self.session_id)


@runtime_checkable
class SessionStore(Protocol):
    """Where the API backends keep their sessions: one namespace of session ids per backend.

    Every method is a coroutine, so a store over a network database needs no thread; a store
    over local files runs its I/O in a worker thread. Implement these six and pass the store as
    `ExecuteParams.session_store`. `FileSessionStore` (the default) and `MemorySessionStore`
    are the built-in implementations; docs/sessions.md states what each promises.
    """

    async def list_sessions(self, backend: str) -> list[SessionInfo]:
        """Every session of `backend`, newest first; unreadable ones included with `problem` set."""
        ...

    async def resolve(self, backend: str, ref: str) -> SessionInfo:
        """The one session `ref` (full id, short id or unique prefix, any case) names.

        Raises SessionNotFound, AmbiguousSession, or the `problem` error of an unreadable session.
        """
        ...

    async def load(self, backend: str, session_id: str) -> StoredSession:
        """The whole session with this exact id; CorruptSession/UnsupportedSessionFormat if unreadable."""
        ...

    async def save(self, session: StoredSession) -> None:
        """Store `session` whole, replacing its previous version atomically.

        Known secret values are redacted first. Refuses (with the problem's error) to replace a
        stored record it cannot read, so a newer or damaged record is never overwritten.
        """
        ...

    async def delete(self, backend: str, session_id: str) -> None:
        """Remove one session; raises SessionInUse while a run holds its lease."""
        ...

    def lease(self, backend: str, session_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the session for one run. Does not wait: a session already held raises SessionInUse."""
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

    async def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Remove one session (only ever on the caller's explicit request)."""
        ...


def _describe(sessions: Sequence[SessionInfo], limit: int = 5) -> str:
    recent = sorted(sessions, key=_recency, reverse=True)
    lines = [
        f"  {s.short_id}  {(s.updated_at or s.started_at or '')!s:.19}  {(s.summary or s.first_prompt or '')[:60]}"
        for s in recent[:limit]
    ]
    return "\n".join(lines) if lines else "  (no sessions)"


def _recency(info: SessionInfo) -> str:
    return str(info.updated_at or info.started_at or "")


def resolve_ref(ref: str, sessions: Iterable[SessionInfo], backend: str) -> SessionInfo:
    """Pick the session `ref` names: an exact full id, an exact short id, or a unique prefix.

    Matching ignores case. Several matches give `AmbiguousSession` listing them; none gives
    `SessionNotFound` listing the most recent sessions; a match whose record is unreadable
    raises its problem's error (CorruptSession, UnsupportedSessionFormat).
    """
    wanted = ref.strip().lower()
    if not wanted:
        raise SessionNotFound("an empty session reference names no session", hint="pass a short id")
    candidates = list(sessions)
    exact = [s for s in candidates if s.session_id.lower() == wanted]
    matches = exact or [
        s for s in candidates if s.session_id.lower().startswith(wanted) or s.short_id.lower().startswith(wanted)
    ]
    unique = {s.session_id: s for s in matches}
    if len(unique) == 1:
        found = next(iter(unique.values()))
        if found.problem is not None:
            raise found.problem.error()
        return found
    if len(unique) > 1:
        raise AmbiguousSession(
            f"{ref!r} matches {len(unique)} {backend} sessions:\n{_describe(list(unique.values()), 20)}",
            hint="give more characters of the id",
            details={"candidates": sorted(unique)},
        )
    raise SessionNotFound(
        f"no {backend} session matches {ref!r}; recent sessions:\n{_describe(candidates)}",
        hint="run `unified sessions list` to see them all",
        details={"ref": ref},
    )


# --- every backend at once ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionListing:
    """What `list_sessions` found: readable sessions, unreadable ones, and backends it could not ask."""

    sessions: list[SessionInfo]
    unreadable: list[SessionInfo]
    unavailable: dict[str, str]
    """Backend → why its sessions could not be listed (its adapter is not installed, say)."""


def session_backends() -> tuple[str, ...]:
    """The backends that keep sessions, in the order listings search them."""
    from unified.backends import SESSION_LOCATORS

    return tuple(SESSION_LOCATORS)


def locator(backend: str, store: SessionStore | None = None) -> SessionLocator:
    """The SessionLocator of one backend; the API backends' use `store` (default: the file store)."""
    from unified.backends import load_session_locator

    return load_session_locator(backend, store)


def _locators(backend: str | None, store: SessionStore | None) -> tuple[list[SessionLocator], dict[str, str]]:
    found: list[SessionLocator] = []
    unavailable: dict[str, str] = {}
    for name in (backend,) if backend else session_backends():
        try:
            found.append(locator(name, store))
        except UnifiedError as exc:
            if backend:
                raise
            unavailable[name] = str(exc)
    return found, unavailable


async def list_sessions(
    *, backend: str | None = None, cwd: str | None = None, store: SessionStore | None = None
) -> SessionListing:
    """Sessions of every backend (or of `backend`), newest first; `cwd` keeps one project's."""
    locators, unavailable = _locators(backend, store)
    readable: list[SessionInfo] = []
    unreadable: list[SessionInfo] = []
    for each in locators:
        try:
            found = await each.list_sessions(cwd)
        except UnifiedError as exc:
            if backend:
                raise
            unavailable[each.backend] = str(exc)
            continue
        readable += [s for s in found if s.problem is None]
        unreadable += [s for s in found if s.problem is not None]
    readable.sort(key=_recency, reverse=True)
    return SessionListing(readable, unreadable, unavailable)


async def resolve(
    ref: str, *, backend: str | None = None, cwd: str | None = None, store: SessionStore | None = None
) -> SessionInfo:
    """The one session `ref` names, searching every backend unless one is given; `.backend` owns it.

    Raises SessionNotFound (saying which backends were searched and which could not be),
    AmbiguousSession (also when several backends match), or the error of an unreadable record.
    """
    locators, unavailable = _locators(backend, store)
    matches: list[SessionInfo] = []
    misses: list[str] = []
    for each in locators:
        try:
            matches.append(await each.resolve(ref, cwd))
        except SessionNotFound as exc:
            if backend:
                raise
            misses.append(f"{each.backend}: {exc.message}")
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join(f"{m.backend} {m.short_id}" for m in matches)
        raise AmbiguousSession(
            f"{ref!r} names sessions of several backends ({names})",
            hint="pass the backend, or more characters of the id",
            details={"candidates": [m.session_id for m in matches]},
        )
    looked = [*misses, *(f"{name}: not searched ({why})" for name, why in unavailable.items())]
    raise SessionNotFound(
        f"no session matches {ref!r}. Looked in:\n" + "\n".join(looked),
        hint="run `unified sessions list` to see every session",
        details={"ref": ref, "searched": [each.backend for each in locators], "unavailable": sorted(unavailable)},
    )


async def show(
    ref: str, *, backend: str | None = None, cwd: str | None = None, store: SessionStore | None = None
) -> dict[str, Any]:
    """One session's conversation as plain data."""
    info = await resolve(ref, backend=backend, cwd=cwd, store=store)
    return await locator(info.backend, store).show(info.session_id, cwd)


async def delete(
    ref: str, *, backend: str | None = None, cwd: str | None = None, store: SessionStore | None = None
) -> SessionInfo:
    """Delete one session (refused while a run holds it); returns what was deleted."""
    info = await resolve(ref, backend=backend, cwd=cwd, store=store)
    return await locator(info.backend, store).delete(info.session_id, cwd)


_STORES = {"FileSessionStore", "MemorySessionStore", "store_from_url"}
"""Loaded on first use: the implementations need anyio and platformdirs, listing types does not."""


def __getattr__(name: str) -> Any:
    if name in _STORES:
        from unified._internal import session_store

        return getattr(session_store, name)
    if name == "PostgresSessionStore":  # psycopg is imported when a store is created, not here
        from unified._internal import postgres_store

        return postgres_store.PostgresSessionStore
    raise AttributeError(f"module 'unified.sessions' has no attribute {name!r}")


__all__ = [
    "SHORT_ID_LENGTH",
    "FileSessionStore",
    "MemorySessionStore",
    "PostgresSessionStore",
    "SessionInfo",
    "SessionListing",
    "SessionLocator",
    "SessionProblem",
    "SessionStore",
    "StoredSession",
    "delete",
    "list_sessions",
    "locator",
    "resolve",
    "resolve_ref",
    "session_backends",
    "short_id_of",
    "show",
    "store_from_url",
]
