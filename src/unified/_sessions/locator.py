"""The SessionLocator of the API backends: their sessions as a `SessionStore` holds them."""

from __future__ import annotations

from typing import Any

from unified._sessions.config import default_store
from unified._sessions.records import SessionInfo, SessionStore, StoredSession, resolve_ref, unreadable_why
from unified._sessions.stores import described
from unified.conversations import Conversation, Origin
from unified.errors import CorruptSession, SessionNotFound, UnsupportedSessionFormat

__all__ = ["StoreSessionLocator", "resolve_any", "resolve_stored"]


async def resolve_any(store: SessionStore, backend: str, ref: str) -> SessionInfo:
    """The session `ref` names in `store`, also one whose record cannot be read (corrupt, or a newer
    unified's): a delete must remove what the user cannot read, and `resolve` refuses those. Named as
    strictly as any other (an ambiguous `ref` is still `AmbiguousSession`); the listing is read only then."""
    try:
        return await store.resolve(backend, ref)
    except (CorruptSession, UnsupportedSessionFormat):
        return resolve_ref(ref, await store.list_sessions(backend), backend, unreadable=True)


async def resolve_stored(
    store: SessionStore | None, backend: str, ref: str, *, unreadable: bool = False
) -> SessionInfo | None:
    """The session `ref` names in an agent binary's shared `store` (`unreadable`: also one whose record cannot be
    read, for a delete), or None where there is no store or it has no such session: a binary backend looks there
    first (a stored session resumes from any project), then in the binary's own files."""
    if store is None:
        return None
    try:
        return await resolve_any(store, backend, ref) if unreadable else await store.resolve(backend, ref)
    except SessionNotFound:
        return None


class StoreSessionLocator:
    """The SessionLocator of an API backend over a SessionStore (`unified sessions list|show|delete`).

    Sessions are not scoped by project: `cwd` only filters the listing (unreadable records, whose
    cwd is unknown, are always listed). `show` gives the header fields every backend has, then
    what `show_state` adds from the backend's own state.
    """

    backend: str

    def __init__(self, store: SessionStore | None = None) -> None:
        self.store = store if store is not None else default_store()

    async def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        found = await self.store.list_sessions(self.backend)
        return [s for s in found if cwd is None or s.problem is not None or s.cwd == cwd]

    async def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        return await self.store.resolve(self.backend, ref)

    async def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        info = await self.resolve(ref)
        session = await self.store.load(self.backend, info.session_id)
        return {
            "backend": self.backend,
            "session_id": session.session_id,
            **described(session),
            **({"continued_from": session.state["continued_from"]} if "continued_from" in session.state else {}),
            **self.show_state(session),
        }

    def show_state(self, session: StoredSession) -> dict[str, Any]:
        """The backend-specific part of `show` (the conversation as the backend stores it)."""
        return {}

    async def export(self, ref: str, cwd: str | None = None) -> Conversation:
        info = await self.resolve(ref)
        session = await self.store.load(self.backend, info.session_id)
        origin = Origin(
            backend=self.backend,
            session_id=session.session_id,
            short_id=session.short_id,
            model=session.model,
            cwd=session.cwd,
        )
        try:
            return self.conversation_of(session, origin)
        except (AttributeError, TypeError, ValueError) as exc:  # a store is shared: its state may be anything
            raise CorruptSession(
                f"{self.backend} session {session.short_id} in the session store holds a state unified cannot "
                f"read ({unreadable_why(exc)})",
                hint="it was left unchanged; start a new session (or fix the record)",
            ) from None

    def conversation_of(self, session: StoredSession, origin: Origin) -> Conversation:
        """The backend's stored state as a Conversation."""
        raise NotImplementedError(f"the {self.backend} backend cannot export its sessions")

    async def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Remove our record of one session, readable or not (refused while a run holds it)."""
        info = await resolve_any(self.store, self.backend, ref)
        await self.store.delete(self.backend, info.session_id)
        return info
