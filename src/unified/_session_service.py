"""The session service: list, resolve, show and delete sessions of every backend at once.

The only part of the session layer that knows the backend registry: each backend's `SessionLocator`
(registered with the backend) presents its sessions alike, and these functions search them all, so a
short id from `unified sessions list` names exactly one session, or gives an error listing what
there is. The public face is `unified.sessions`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from unified import backends as registry
from unified._exports import publish
from unified._redaction import clip, redactor
from unified._sessions.records import SessionInfo, SessionStore, by_recency, refuse_empty, resolve_ref
from unified.backends import SessionLocator
from unified.conversations import Conversation
from unified.errors import (
    AmbiguousSession,
    CorruptSession,
    SessionNotFound,
    UnifiedError,
    UnsupportedSessionFormat,
)

__all__ = ["SessionListing", "delete", "export", "list_sessions", "locator", "resolve", "session_backends", "show"]


@dataclass(frozen=True, slots=True)
class SessionListing:
    """What `list_sessions` found: readable sessions, unreadable ones, and backends it could not ask."""

    sessions: list[SessionInfo]
    unreadable: list[SessionInfo]
    unavailable: dict[str, str]
    """Backend → why its sessions could not be listed (its adapter is not installed, say)."""


def session_backends() -> tuple[str, ...]:
    """The backends that keep sessions, in the order listings search them."""
    return tuple(registry.session_backends())


def locator(backend: str, store: SessionStore | None = None) -> SessionLocator:
    """The SessionLocator of one backend; the API backends' use `store` (default: the file store)."""
    return registry.load_session_locator(backend, store)


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
    readable.sort(key=by_recency, reverse=True)
    return SessionListing(readable, unreadable, unavailable)


async def resolve(
    ref: str,
    *,
    backend: str | None = None,
    cwd: str | None = None,
    store: SessionStore | None = None,
    unreadable: bool = False,
) -> SessionInfo:
    """The one session `ref` names, searching every backend unless one is given; `.backend` owns it.

    Raises SessionNotFound (saying which backends were searched and which could not be),
    AmbiguousSession (also when several backends match), or the error of an unreadable record;
    with `unreadable` (what `delete` needs), an unreadable record is returned, its `problem` set.
    """
    refuse_empty(ref)  # said once, not once for each backend searched
    locators, unavailable = _locators(backend, store)
    matches: list[SessionInfo] = []
    misses: list[str] = []
    for each in locators:
        try:
            matches.append(await each.resolve(ref, cwd))
        except (CorruptSession, UnsupportedSessionFormat):
            if not unreadable:
                raise
            matches.append(resolve_ref(ref, await each.list_sessions(cwd), each.backend, unreadable=True))
        except SessionNotFound as exc:
            if backend:
                raise
            misses.append(f"{each.backend}: {exc.message}")
    if len(matches) == 1:
        return matches[0]
    if matches:
        names = ", ".join(f"{m.backend} {m.short_id}" for m in matches)
        raise AmbiguousSession(
            f"{clip(ref, 80, more='…')!r} names sessions of several backends ({names})",
            hint="pass the backend, or more characters of the id",
            details={"candidates": [m.session_id for m in matches]},
        )
    looked = [*misses, *(f"{name}: not searched ({why})" for name, why in unavailable.items())]
    raise SessionNotFound(
        f"no session matches {clip(ref, 80, more='…')!r}. Looked in:\n" + "\n".join(looked),
        hint="run `unified sessions list` to see every session",
        details={"ref": ref, "searched": [each.backend for each in locators], "unavailable": sorted(unavailable)},
    )


async def show(
    ref: str, *, backend: str | None = None, cwd: str | None = None, store: SessionStore | None = None
) -> dict[str, Any]:
    """One session's conversation as plain data, known secret values replaced (as `export`)."""
    info = await resolve(ref, backend=backend, cwd=cwd, store=store)
    return redactor().json(await locator(info.backend, store).show(info.session_id, cwd))


async def export(
    ref: str, *, backend: str | None = None, cwd: str | None = None, store: SessionStore | None = None
) -> Conversation:
    """One session's history as a portable `Conversation`, to continue on any backend
    (`ExecuteParams(history=...)`) or to keep (`Conversation.to_json()`), known secret values
    replaced (`redactor()`: a CLI's own session file holds whatever a command printed)."""
    info = await resolve(ref, backend=backend, cwd=cwd, store=store)
    return redactor().json(await locator(info.backend, store).export(info.session_id, cwd))


async def delete(
    ref: str, *, backend: str | None = None, cwd: str | None = None, store: SessionStore | None = None
) -> SessionInfo:
    """Delete one session, also one whose record cannot be read (refused while a run holds it); returns
    what was deleted."""
    info = await resolve(ref, backend=backend, cwd=cwd, store=store, unreadable=True)
    return await locator(info.backend, store).delete(info.session_id, cwd)


publish("unified.sessions", __all__, globals())
