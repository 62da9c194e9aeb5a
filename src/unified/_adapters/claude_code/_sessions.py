"""The claude-code session locator: what `unified.sessions` and `unified sessions` see of the CLI's sessions.

The session files of the backend's home (`_session_files.py`, run off the event loop) and, with a
shared `SessionStore` (docs/sessions.md), the sessions saved there (`_shared_sessions.py`): a
worker lists, resolves, shows, exports and deletes the sessions it has never run too.
"""

from __future__ import annotations

import contextlib
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from unified._adapters.claude_code._conversation import conversation_from_lines
from unified._adapters.claude_code._launch import default_home
from unified._adapters.claude_code._options import BACKEND
from unified._adapters.claude_code._session_files import SessionFiles, parse_session
from unified._adapters.claude_code._shared_sessions import SESSION_FILE, session_lines, state_summary
from unified._binary.shared import session_lease
from unified._sessions.config import configured_store
from unified._sessions.locator import resolve_stored
from unified.backends import SessionLocator
from unified.conversations import Conversation, Origin
from unified.errors import SessionNotFound
from unified.sessions import SessionInfo, SessionStore

__all__ = ["ClaudeSessionLocator", "create_session_locator"]


class ClaudeSessionLocator:
    """The `SessionLocator` of claude-code: the session files of its home, plus a shared store's sessions."""

    backend = BACKEND

    def __init__(self, home: Path | None = None, store: SessionStore | None = None) -> None:
        self._home = home
        self._store = store

    def _files(self) -> SessionFiles:
        return SessionFiles(self._home or default_home())

    async def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        found = await anyio.to_thread.run_sync(self._files().list_sessions, cwd)
        if self._store is not None:
            local = {info.session_id for info in found}
            shared = await self._store.list_sessions(BACKEND)
            found += [s for s in shared if s.session_id not in local and (cwd is None or s.problem or s.cwd == cwd)]
        return found

    async def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        return (await self._find(ref, cwd))[0]

    async def _find(self, ref: str, cwd: str | None, *, unreadable: bool = False) -> tuple[SessionInfo, bool]:
        """The session `ref` names (in every project: it resumes from any directory), and whether it is the store's."""
        stored = await resolve_stored(self._store, BACKEND, ref, unreadable=unreadable)
        if stored is not None:
            return stored, True
        return await anyio.to_thread.run_sync(partial(self._files().resolve, ref, cwd, unreadable=unreadable)), False

    async def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        info, shared = await self._find(ref, cwd)
        if not shared:
            return await anyio.to_thread.run_sync(self._files().show, info.session_id, cwd)
        assert self._store is not None
        session = await self._store.load(BACKEND, info.session_id)
        return {"session": info.model_dump(mode="json"), **state_summary(session)}

    async def export(self, ref: str, cwd: str | None = None) -> Conversation:
        info, shared = await self._find(ref, cwd)
        origin = Origin(
            backend=BACKEND, session_id=info.session_id, short_id=info.short_id, model=info.model, cwd=info.cwd
        )
        if shared:
            assert self._store is not None
            session = await self._store.load(BACKEND, info.session_id)
            state = session.state.get(SESSION_FILE)
            text = state.get("text", "") if isinstance(state, dict) else ""
            return conversation_from_lines(session_lines(str(text)), origin=origin)
        parsed = await anyio.to_thread.run_sync(parse_session, Path(str(info.path)))
        return conversation_from_lines(parsed.lines, origin=origin)

    async def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        info, shared = await self._find(ref, cwd, unreadable=True)
        files = self._files()
        async with session_lease(BACKEND, files.home, info.session_id):  # `SessionInUse` while a run continues it
            if not shared:
                return await anyio.to_thread.run_sync(files.delete, info.session_id, cwd)
            assert self._store is not None
            await self._store.delete(BACKEND, info.session_id)
            with contextlib.suppress(SessionNotFound):
                await anyio.to_thread.run_sync(files.delete, info.session_id, None)
            return info


def create_session_locator(store: SessionStore | None = None) -> SessionLocator:
    """The registry's entry: the CLI's own session files, plus the sessions in `store` (or the one
    `UNIFIED_SESSION_STORE_URL` names)."""
    return ClaudeSessionLocator(store=store if store is not None else configured_store())
