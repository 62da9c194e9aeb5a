"""The gemini-cli session locator: what `unified.sessions` and `unified sessions` see of the CLI's sessions.

The CLI's own chat files (`_chat_files.py`) and, with a shared `SessionStore` (docs/sessions.md),
the sessions saved there (`_shared_sessions.py`): a worker lists, resolves, shows and deletes the
sessions it has never run too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

import anyio

from unified._adapters.gemini_cli._chat_files import BACKEND, ChatFiles
from unified._adapters.gemini_cli._conversation import conversation_from_messages
from unified._adapters.gemini_cli._relocate import SESSION_ID, check_session_id, session_lease
from unified._adapters.gemini_cli._shared_sessions import state_summary
from unified._sessions.config import configured_store
from unified._sessions.locator import resolve_stored
from unified.backends import SessionLocator
from unified.conversations import Conversation, Origin
from unified.errors import CorruptSession, SessionNotFound
from unified.sessions import SessionInfo, SessionProblem, SessionStore

__all__ = ["GeminiSessionLocator", "create_session_locator"]


class GeminiSessionLocator:
    """The `SessionLocator` of gemini-cli for `unified.sessions`: the CLI's chat files (`ChatFiles`, run off
    the event loop) and, with a shared store, the sessions saved there.

    Each call gets a fresh `ChatFiles` (its `problems` are per listing); unreadable
    chat files are listed as entries with `problem` set, named by the id suffix of their file name.
    With a shared `store` (docs/sessions.md), the sessions saved there are listed, resolved, shown
    and deleted too: those this worker has never run have no local files.
    """

    backend = BACKEND

    def __init__(self, env: Mapping[str, str] | None = None, store: SessionStore | None = None) -> None:
        self._env = env
        self._store = store

    async def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        files = ChatFiles(self._env)
        found = await anyio.to_thread.run_sync(files.list_sessions, cwd)
        unreadable = [
            SessionInfo(
                backend=BACKEND,
                session_id=path.stem.rsplit("-", 1)[-1],
                short_id=path.stem.rsplit("-", 1)[-1],
                path=str(path),
                problem=SessionProblem(
                    kind="corrupt",
                    message=why,
                    hint="the Gemini CLI cannot resume it either; it was left unchanged",
                ),
            )
            for path, why in files.problems
        ]
        if self._store is not None:
            local = {info.session_id for info in found}
            shared = await self._store.list_sessions(BACKEND)
            found += [s for s in shared if s.session_id not in local and (cwd is None or s.problem or s.cwd == cwd)]
        return found + unreadable

    async def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """A session of the shared store first (it is resumable from any project), else a local one."""
        return (await self._find(ref, cwd))[0]

    async def _find(self, ref: str, cwd: str | None, *, unreadable: bool = False) -> tuple[SessionInfo, bool]:
        """The session `ref` names, and whether it is the shared store's."""
        stored = await resolve_stored(self._store, BACKEND, ref, unreadable=unreadable)
        if stored is not None:
            return stored, True
        return await anyio.to_thread.run_sync(ChatFiles(self._env).resolve, ref, cwd), False

    async def export(self, ref: str, cwd: str | None = None) -> Conversation:
        shown = await self.show(ref, cwd)
        info = SessionInfo.model_validate(shown["session"])
        origin = Origin(
            backend=BACKEND, session_id=info.session_id, short_id=info.short_id, model=info.model, cwd=info.cwd
        )
        return conversation_from_messages(shown["messages"], origin=origin)

    async def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        info, shared = await self._find(ref, cwd)
        if self._store is None or not shared:
            return await anyio.to_thread.run_sync(ChatFiles(self._env).show, info.session_id, cwd)
        session = await self._store.load(BACKEND, info.session_id)
        return {"session": info.model_dump(mode="json"), **state_summary(session)}

    async def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Delete the session: from the shared store and this worker's chat files, when it is the store's. A chat
        file that cannot be read is deleted too (the user must be able to remove what they cannot read)."""
        try:
            info, shared = await self._find(ref, cwd, unreadable=True)
        except CorruptSession:
            return await self._delete_unreadable(ref, cwd)
        check_session_id(info.session_id, info.path)
        # Refused (`SessionInUse`) while a run holds it, as every run does from before its session_started.
        files = ChatFiles(self._env)
        async with session_lease(files.home, info.session_id):
            if self._store is None or not shared:
                return await anyio.to_thread.run_sync(files.delete, info.session_id, cwd)
            await self._store.delete(BACKEND, info.session_id)
            with contextlib.suppress(SessionNotFound):
                await anyio.to_thread.run_sync(files.delete, info.session_id, None)
            return info

    async def _delete_unreadable(self, ref: str, cwd: str | None) -> SessionInfo:
        """The one unreadable chat file `ref` names, removed: under its session's lease when its header names one
        (a run's file is unreadable for the moment its first prompt is half written)."""
        files = ChatFiles(self._env)
        path, why, session_id = await anyio.to_thread.run_sync(files.unreadable, ref, cwd)
        suffix = path.stem.rsplit("-", 1)[-1]
        async with contextlib.AsyncExitStack() as stack:
            if session_id is not None and SESSION_ID.fullmatch(session_id):
                await stack.enter_async_context(session_lease(files.home, session_id))
            await anyio.to_thread.run_sync(files.delete_unreadable, path)
        return SessionInfo(
            backend=BACKEND,
            session_id=session_id or suffix,
            short_id=suffix,
            path=str(path),
            problem=SessionProblem(kind="corrupt", message=why, hint="it was deleted"),
        )


def create_session_locator(store: SessionStore | None = None) -> SessionLocator:
    """The registry's entry: the CLI's own chat files, plus the sessions in `store` (or the one
    `UNIFIED_SESSION_STORE_URL` names) when one is given."""
    return GeminiSessionLocator(store=store if store is not None else configured_store())
