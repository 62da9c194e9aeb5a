"""generate-content sessions: the whole conversation (`contents`, signatures included) in the shared store.

The API keeps nothing between calls, so resuming resends the stored history exactly as the model
produced it; the state holds `contents` as the SDK's JSON (thought signatures base64).
"""

from __future__ import annotations

from typing import Any

from unified._internal.session_store import SessionStore
from unified.sessions import SessionInfo

BACKEND = "generate-content"


class GenerateContentSessionLocator:
    """The SessionLocator of this backend (`unified sessions list|show|delete`)."""

    backend = BACKEND

    def __init__(self, store: SessionStore | None = None) -> None:
        self.store = store or SessionStore(BACKEND)

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        return [s for s in self.store.list_sessions() if cwd is None or s.cwd == cwd]

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
            "created_at": session.created_at.isoformat(),
            "updated_at": session.updated_at.isoformat(),
            "turns": session.turns,
            "usage": session.usage.model_dump(),
            "contents": session.state.get("contents", []),
        }

    def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        return self.store.delete(ref)
