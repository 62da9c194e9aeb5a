"""Interactions sessions: our short id → the chain of interaction ids the server holds.

The server keeps the conversation (unless `store=false`); we keep only the chain, so resuming
continues from its last interaction with `previous_interaction_id`. In `store=false` mode the
server keeps nothing, so the state also holds the whole conversation as steps, resent each turn.
Files live in the shared session store (`<user data dir>/unified/sessions/interactions/`).
"""

from __future__ import annotations

from typing import Any

from unified._internal.session_store import SessionStore, StoredSession
from unified.sessions import SessionInfo

BACKEND = "interactions"


def chain(session: StoredSession) -> list[str]:
    """The interaction ids of a session, oldest first."""
    ids = session.state.get("interactions") or []
    return [str(i) for i in ids]


def append_interaction(session: StoredSession, interaction_id: str) -> None:
    ids = session.state.setdefault("interactions", [])
    if not ids or ids[-1] != interaction_id:
        ids.append(interaction_id)


class InteractionsSessionLocator:
    """The SessionLocator of the interactions backend, over the shared store."""

    backend = BACKEND

    def __init__(self, store: SessionStore | None = None) -> None:
        self.store = store or SessionStore(BACKEND)

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        sessions = self.store.list_sessions()
        return [s for s in sessions if cwd is None or s.cwd == cwd]

    def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        return self.store.resolve(ref)

    def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        session = self.store.load(ref)
        return {
            "backend": BACKEND,
            "session_id": session.session_id,
            "short_id": session.short_id,
            "model": session.model,
            "cwd": session.cwd,
            "first_prompt": session.first_prompt,
            "turns": session.turns,
            "usage": session.usage.model_dump(),
            "interactions": chain(session),
            "store": session.state.get("store", True),
            "steps": session.state.get("steps", []),
        }

    def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Deletes our record only: the server's interactions expire on their own."""
        return self.store.delete(ref)
