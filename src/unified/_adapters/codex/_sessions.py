"""The codex session locator: what `unified.sessions` and `unified sessions` see of Codex's threads.

The rollout files of our CODEX_HOME (`_rollouts.py`, read off the event loop) and, with a shared
`SessionStore` (docs/sessions.md), the sessions saved there (`_shared_sessions.py`): a worker lists,
resolves, shows, exports and deletes threads it never ran too. Short ids are codex's own (the id's
random tail); a thread resolves from any directory, since it keeps its own cwd.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from unified._adapters.codex._conversation import conversation_from_rollout
from unified._adapters.codex._launch import codex_home
from unified._adapters.codex._options import BACKEND, CodexOptions
from unified._adapters.codex._rollouts import Rollout, Rollouts, codex_short_id, show_rollout
from unified._adapters.codex._shared_sessions import _scratch, resolve_in_store, stored_files, stored_show
from unified._binary.shared import session_lease
from unified._sessions.config import configured_store
from unified.backends import SessionLocator
from unified.conversations import Conversation
from unified.errors import SessionNotFound
from unified.sessions import SessionInfo, SessionStore

__all__ = ["CodexSessionLocator", "create_session_locator"]


class CodexSessionLocator:
    """The `SessionLocator` of codex (see the module docstring)."""

    backend = BACKEND

    def __init__(self, env: Mapping[str, str] | None = None, store: SessionStore | None = None) -> None:
        self._env = env
        self._store = store

    @property
    def home(self) -> Path:
        return codex_home(CodexOptions(), dict(os.environ if self._env is None else self._env))

    def _rollouts(self) -> Rollouts:
        return Rollouts(self.home)

    async def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        found = await anyio.to_thread.run_sync(self._rollouts().list_sessions, cwd)
        if self._store is not None:
            local = {info.session_id for info in found}
            shared = await self._store.list_sessions(BACKEND)
            found += [
                s.model_copy(update={"short_id": codex_short_id(s.session_id)})
                for s in shared
                if s.session_id not in local and (cwd is None or s.problem or s.cwd == cwd)
            ]
        return found

    async def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """From any directory: a thread keeps its own cwd. The shared store's first, else a local one."""
        return (await self._find(ref))[0]

    async def _find(self, ref: str, *, unreadable: bool = False) -> tuple[SessionInfo, bool]:
        if self._store is not None:
            try:
                return await resolve_in_store(self._store, ref, unreadable=unreadable), True
            except SessionNotFound:
                pass
        return await anyio.to_thread.run_sync(partial(self._rollouts().resolve, ref, unreadable=unreadable)), False

    async def _rollout(self, ref: str) -> Rollout:
        info, shared = await self._find(ref)
        rollouts = self._rollouts()
        if not shared or rollouts.path_of(info.session_id) is not None:
            return await anyio.to_thread.run_sync(rollouts.read, info.session_id)
        assert self._store is not None
        session = await self._store.load(BACKEND, info.session_id)
        files = stored_files(session)
        name = next(n for n in files if info.session_id in n)

        def read() -> Rollout:
            from unified._adapters.codex._rollouts import read_rollout

            with _scratch(files[name], name) as path:
                return read_rollout(path)

        return await anyio.to_thread.run_sync(read)

    async def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        info, shared = await self._find(ref)
        if shared and self._store is not None and self._rollouts().path_of(info.session_id) is None:
            session = await self._store.load(BACKEND, info.session_id)
            return {"session": info.model_dump(mode="json"), **stored_show(session, self.home)}
        rollout = await anyio.to_thread.run_sync(self._rollouts().read, info.session_id)
        return {"session": info.model_dump(mode="json"), **show_rollout(rollout)}

    async def export(self, ref: str, cwd: str | None = None) -> Conversation:
        return conversation_from_rollout(await self._rollout(ref))

    async def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Delete the thread's rollout (and its subagents'); from the shared store too when it is there."""
        info, shared = await self._find(ref, unreadable=True)
        async with session_lease(BACKEND, self.home, info.session_id):  # `SessionInUse` while a run continues it
            if shared and self._store is not None:
                await self._store.delete(BACKEND, info.session_id)
                with contextlib.suppress(SessionNotFound):
                    await anyio.to_thread.run_sync(self._rollouts().delete, info.session_id)
                return info
            await anyio.to_thread.run_sync(self._rollouts().delete, info.session_id)
            return info


def create_session_locator(store: SessionStore | None = None) -> SessionLocator:
    return CodexSessionLocator(store=store if store is not None else configured_store())
