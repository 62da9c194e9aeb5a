"""A binary backend's session files shared through a `SessionStore`, so any worker resumes any session.

An agent CLI keeps its sessions as files in its home. With a store configured (the caller's, else
`UNIFIED_SESSION_STORE_URL`'s), a resume first writes the store's copy into the home, under the
store's lease, and every run's files go back to the store after it, even after a failure or a
cancellation (what the CLI wrote is kept). A session the store does not have (one only this worker
made) runs as it is. What differs per backend is data: `SharedFiles`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path

import anyio

from unified._binary.environment import cache_folder
from unified._binary.proxy import with_left_out_proxies
from unified._files import FileTooLarge
from unified._sessions.config import configured_store
from unified.backends import RunContext, RunOutcome
from unified.errors import SessionNotFound, UnifiedError
from unified.events import WarningEvent
from unified.sessions import SessionInfo, SessionStore, StoredSession, short_id_of
from unified.types import ExecuteParams

__all__ = ["SharedFiles", "run_binary", "session_lease"]


def shared_store(params: ExecuteParams) -> SessionStore | None:
    """The store the sessions are shared through: the caller's, else the configured one, else None."""
    return params.session_store if params.session_store is not None else configured_store()


@dataclass(frozen=True)
class SharedFiles:
    """How one backend's session files go into its home and back out to the store."""

    backend: str
    what: str
    """How warnings name them: "the chat files", "the session file", "the rollout"."""
    write: Callable[[StoredSession], object]
    """The store's copy into the home (runs in a worker thread)."""
    collect: Callable[[str, StoredSession | None], StoredSession | None]
    """(session id, the store's copy or None) → the session as the run left it; None if the CLI wrote none."""
    short_id: Callable[[str], str] = short_id_of
    resolve: Callable[[SessionStore, str], Awaitable[SessionInfo]] | None = None
    """How a reference is found in the store (default: the store's own short ids)."""


async def run_binary(
    ctx: RunContext,
    run: Callable[[RunContext], Awaitable[RunOutcome]],
    files: Callable[[], SharedFiles],
    env: Mapping[str, str],
) -> RunOutcome:
    """`run(ctx)` as each agent binary's backend runs it: through the shared session store when one is configured
    (`run_shared`, with the session's files `files()` names), and an error of the CLI's reaching its provider naming
    each proxy variable left out of the CLI's environment `env` (`proxy.with_left_out_proxies`: its "fetch failed"
    says nothing of a proxy)."""
    store = shared_store(ctx.params)
    try:
        if store is None:
            return await run(ctx)
        return await run_shared(store, ctx, files(), run)
    except UnifiedError as exc:
        with_left_out_proxies(exc, env)
        raise


async def run_shared(
    store: SessionStore, ctx: RunContext, files: SharedFiles, run: Callable[[RunContext], Awaitable[RunOutcome]]
) -> RunOutcome:
    """`run(ctx)` with the session's files brought in from `store` before it and saved to it after it."""
    ref = ctx.params.resume
    found = None
    if ref:
        try:
            found = await (files.resolve(store, ref) if files.resolve else store.resolve(files.backend, ref))
        except SessionNotFound:
            found = None  # a session only this worker has (made before the store, or by the CLI itself)
    if found is None:
        try:
            return await run(ctx)
        finally:
            await _save(store, ctx, files, ctx.session_id, None)
    async with store.lease(files.backend, found.session_id):
        previous = await store.load(files.backend, found.session_id)
        await anyio.to_thread.run_sync(files.write, previous)
        try:
            return await run(ctx)
        finally:
            await _save(store, ctx, files, found.session_id, previous)


async def _save(
    store: SessionStore, ctx: RunContext, files: SharedFiles, session_id: str | None, previous: StoredSession | None
) -> None:
    """Save the run's files, even after a failure or a cancellation; a store that fails is a warning, and so are
    files that cannot be read for it (too large for a store record, not a regular file, not UTF-8): they are kept
    in the CLI home, and the run's own outcome stands (such a file ended the run as a bare OSError from here,
    `internal_error`, "a bug in unified", after the CLI had written it whole)."""
    if not session_id:
        return
    short = files.short_id(session_id)
    with anyio.CancelScope(shield=True):
        try:
            session = await anyio.to_thread.run_sync(files.collect, session_id, previous)
        except (OSError, ValueError, UnifiedError) as exc:
            await ctx.emit(
                WarningEvent(
                    code="session_not_shared",
                    message=f"{files.what} of {files.backend} session {short} could not be read to save them to the "
                    f"session store: {_unreadable(exc)}; they are kept on this worker only, and another worker "
                    "resuming the session will not see this run",
                    session_id=session_id,
                )
            )
            return
        if session is None:
            return
        try:
            await store.save(session)
        except Exception as exc:
            await ctx.emit(
                WarningEvent(
                    code="session_not_shared",
                    message=f"{files.what} of {files.backend} session {short} could not be "
                    f"saved to the session store ({exc}); another worker resuming it will not see this run",
                    session_id=session_id,
                )
            )


def _unreadable(exc: BaseException) -> str:
    """Why a CLI's session files could not be read for the store, and what to do."""
    if isinstance(exc, FileTooLarge):
        return (
            f"{exc.filename} takes them to {exc.size:,} bytes, more than a session record may hold "
            f"({exc.max_bytes:,}); start a new session to share it again"
        )
    if isinstance(exc, UnicodeDecodeError):
        return f"they are not UTF-8 text ({exc.reason} at byte {exc.start})"
    return str(exc)


def session_lease(backend: str, home: Path, session_id: str) -> AbstractAsyncContextManager[None]:
    """The local lease an agent binary's run holds on its session (`SessionInUse` when another run holds it).

    A `FileSessionStore`'s lease (a `flock` the kernel releases however the holder dies), taken as `folder_lease`
    since the folder holds leases only, in unified's cache, per backend and CLI home: the CLIs' own files carry no
    lock, and two runs continuing one session at once would interleave their turns in its file (and a session
    must not move, or be deleted, while a run writes it).
    """
    from unified._sessions.stores import folder_lease

    return folder_lease(_leases_folder(cache_folder(backend), home), backend, session_id)


@functools.lru_cache(maxsize=16)
def _leases_folder(cache: Path, home: Path) -> str:
    """The folder of one CLI home's leases (its path's digest names it): worked out once per home and cache."""
    return f"{cache}/leases/{hashlib.sha256(str(home).encode()).hexdigest()[:16]}"
