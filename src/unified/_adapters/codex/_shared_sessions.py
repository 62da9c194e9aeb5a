"""codex sessions in a shared `SessionStore`, so any worker resumes any of them (docs/sessions.md).

Codex resumes only from rollout files in its CODEX_HOME. With a store configured
(`ExecuteParams.session_store`, or `UNIFIED_SESSION_STORE_URL`) each run's rollout (and those of
the subagents it spawned) is saved there when the run ends, as a `StoredSession` of backend "codex"
whose state holds the files' text; a resume the store knows first writes them into this worker's
home, under the lease, so two workers never continue one thread at once. The store lists sessions by
its own short id (an id's first characters, which Codex's UUIDv7 ids share for a minute), so codex
resolves in it by listing and matching its own short ids (`codex_short_id`).

A stored session is not trusted to name paths: every file name must be a rollout name, the main one
naming the session's own id, and its first line must be that thread's `session_meta`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from unified import _limits as limits
from unified._adapters.codex._options import BACKEND
from unified._adapters.codex._rollouts import ROLLOUT_NAME, Rollouts, codex_short_id, read_rollout, show_rollout
from unified._binary.shared import SharedFiles
from unified._files import read_regular_texts
from unified.errors import CorruptSession
from unified.sessions import SessionInfo, SessionStore, StoredSession, resolve_ref

__all__ = ["ROLLOUTS", "resolve_in_store", "shared_files", "stored_files", "write_stored"]

ROLLOUTS = "rollouts"
"""The state key: rollout file name -> its text (the session's own first, then its subagents')."""


async def resolve_in_store(store: SessionStore, ref: str, *, unreadable: bool = False) -> SessionInfo:
    """The store's codex session `ref` names, by codex's short ids (see the module docstring); `unreadable`: also
    one whose record cannot be read (a delete)."""
    listed = await store.list_sessions(BACKEND)
    keyed = [info.model_copy(update={"short_id": codex_short_id(info.session_id)}) for info in listed]
    return resolve_ref(ref, keyed, BACKEND, unreadable=unreadable)


def stored_files(session: StoredSession) -> dict[str, str]:
    files = session.state.get(ROLLOUTS)
    where = f"codex session {codex_short_id(session.session_id)} in the session store"
    if not isinstance(files, dict) or not files:
        raise CorruptSession(f"{where} holds no rollout", hint="it was left unchanged; start a new session")
    own = False
    for name, text in files.items():
        match = ROLLOUT_NAME.fullmatch(name) if isinstance(name, str) else None
        if match is None or not isinstance(text, str):
            raise CorruptSession(f"{where} holds a file named {name!r}", hint="it was left unchanged")
        try:
            first = json.loads(text.split("\n", 1)[0])
        except (ValueError, RecursionError):
            first = None
        meta = first.get("payload") if isinstance(first, dict) and first.get("type") == "session_meta" else None
        if not isinstance(meta, dict) or meta.get("id") != match["id"]:
            raise CorruptSession(f"{where} holds {name}, whose metadata names another thread", hint="left unchanged")
        own = own or match["id"] == session.session_id
    if not own:
        raise CorruptSession(f"{where} holds no rollout of its own thread", hint="it was left unchanged")
    return dict(files)


def write_stored(session: StoredSession, home: Path) -> None:
    """Put the store's copy of the session's rollouts into `home` (the store's is the newest whole set)."""
    rollouts = Rollouts(home)
    for name, text in stored_files(session).items():
        match = ROLLOUT_NAME.fullmatch(name)
        assert match is not None
        created = datetime.strptime(match["stamp"], "%Y-%m-%dT%H-%M-%S").replace(tzinfo=UTC)
        rollouts.write(match["id"], created, text)


def collect(home: Path, thread_id: str, previous: StoredSession | None) -> StoredSession | None:
    """The thread's rollout and its subagents' as a StoredSession; None if Codex wrote none. Rollouts larger
    together than a store record may be (`MAX_SESSION_RECORD_BYTES`) are `FileTooLarge`, never read whole."""
    rollouts = Rollouts(home)
    path = rollouts.path_of(thread_id)
    if path is None:
        return None
    files = read_regular_texts([path, *rollouts.children(thread_id)], max_bytes=limits.MAX_SESSION_RECORD_BYTES)
    info = rollouts.info(path, thread_id)
    session = previous or StoredSession(backend=BACKEND, session_id=thread_id)
    if info is not None:
        session.first_prompt = session.first_prompt or info.first_prompt
        session.model = info.model or session.model
        session.cwd = info.cwd
    session.updated_at = datetime.now(UTC)
    session.state = {ROLLOUTS: files}
    return session


def stored_show(session: StoredSession, home: Path) -> dict[str, Any]:
    """A stored session's conversation for `unified sessions show` on a worker without its files."""
    files = stored_files(session)
    name = next(n for n in files if (m := ROLLOUT_NAME.fullmatch(n)) is not None and m["id"] == session.session_id)
    with _scratch(files[name], name) as path:
        return show_rollout(read_rollout(path))


class _scratch:
    def __init__(self, text: str, name: str) -> None:
        import tempfile

        self._dir = tempfile.TemporaryDirectory(prefix="unified-codex-")
        self.path = Path(self._dir.name) / name
        self.path.write_text(text, encoding="utf-8")

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self._dir.cleanup()


def shared_files(home: Path) -> SharedFiles:
    """codex's rollouts as `unified._binary.shared` moves them (in the Codex home `home`), found by codex's
    short ids."""
    return SharedFiles(
        BACKEND,
        "the rollout",
        write=lambda session: write_stored(session, home),
        collect=lambda thread_id, previous: collect(home, thread_id, previous),
        short_id=codex_short_id,
        resolve=resolve_in_store,
    )
