"""unified's own session store for the API backends (generateContent, Interactions).

One JSON file per session under `<user data dir>/unified/sessions/<backend>/<id>.json`. The file
is a single JSON object whose first line holds the small `header` (id, model, cwd, timestamps,
usage, first prompt) and whose rest holds the backend's opaque `state`, so `list` reads one line
per file instead of whole conversations. Writes go to a temp file in the same directory and are
moved into place with `os.replace`, so a reader never sees half a file. A run that owns a session
holds a lease (an `O_EXCL` lock file naming its pid), so two processes never resume and overwrite
the same conversation; a lease whose process died is taken over. A file that cannot be read is
reported and skipped, never deleted.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import platformdirs

from unified._errors import CorruptSession, SessionError
from unified.events import Usage
from unified.sessions import SessionInfo, resolve_ref, short_id_of

FORMAT_VERSION = 1
_HEADER_PREFIX = '{"header": '


_ID_CHARS = re.compile(r"[0-9a-z_-]+")
"""What our session ids are made of; a reference with anything else cannot name a file."""


def sessions_root() -> Path:
    """`$UNIFIED_DATA_DIR/sessions`, else `<user data dir>/unified/sessions` (XDG_DATA_HOME on Linux)."""
    override = os.environ.get("UNIFIED_DATA_DIR")
    base = Path(override) if override else Path(platformdirs.user_data_dir("unified", appauthor=False))
    return base / "sessions"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class StoredSession:
    """A session as a backend holds it during a run: metadata plus backend-owned `state`."""

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

    @property
    def short_id(self) -> str:
        return short_id_of(self.session_id)

    def header(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "backend": self.backend,
            "id": self.session_id,
            "short_id": self.short_id,
            "model": self.model,
            "cwd": self.cwd,
            "first_prompt": self.first_prompt,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "usage": self.usage.model_dump(),
            "turns": self.turns,
        }

    @classmethod
    def from_document(cls, header: dict[str, Any], state: dict[str, Any]) -> StoredSession:
        return cls(
            backend=header["backend"],
            session_id=header["id"],
            model=header.get("model"),
            cwd=header.get("cwd"),
            first_prompt=header.get("first_prompt"),
            created_at=datetime.fromisoformat(header["created_at"]),
            updated_at=datetime.fromisoformat(header["updated_at"]),
            usage=Usage.model_validate(header.get("usage") or {}),
            turns=int(header.get("turns") or 0),
            state=state,
        )


def _info(header: dict[str, Any], path: Path) -> SessionInfo:
    return SessionInfo(
        backend=header["backend"],
        session_id=header["id"],
        short_id=header.get("short_id") or short_id_of(header["id"]),
        started_at=datetime.fromisoformat(header["created_at"]),
        updated_at=datetime.fromisoformat(header["updated_at"]),
        first_prompt=header.get("first_prompt"),
        cwd=header.get("cwd"),
        model=header.get("model"),
        path=str(path),
        extra={"usage": header.get("usage") or {}, "turns": header.get("turns") or 0},
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class SessionStore:
    """The sessions of one backend. Methods do blocking file I/O: call them via `anyio.to_thread`."""

    def __init__(self, backend: str, root: Path | None = None, *, on_corrupt: Callable[[str], None] | None = None):
        self.backend = backend
        self.directory = (root or sessions_root()) / backend
        self._on_corrupt = on_corrupt
        self.skipped: list[str] = []
        """Why each unreadable file was skipped by the last `list_sessions` (also sent to `on_corrupt`)."""

    # -- paths ------------------------------------------------------------------------------------

    def path_of(self, session_id: str) -> Path:
        return self.directory / f"{session_id}.json"

    def _lock_path(self, session_id: str) -> Path:
        return self.directory / f"{session_id}.lock"

    # -- writing ----------------------------------------------------------------------------------

    def new(self, *, model: str | None, cwd: str | None, first_prompt: str | None) -> StoredSession:
        """A fresh session with a new id (nothing is written until `save`)."""
        return StoredSession(
            backend=self.backend, session_id=str(uuid.uuid4()), model=model, cwd=cwd, first_prompt=first_prompt
        )

    def save(self, session: StoredSession) -> Path:
        """Write atomically: temp file in the same directory, fsync, `os.replace`."""
        self.directory.mkdir(parents=True, exist_ok=True)
        session.updated_at = _now()
        header = json.dumps(session.header(), ensure_ascii=False, separators=(",", ":"))
        body = json.dumps(session.state, ensure_ascii=False, separators=(",", ":"))
        text = f'{_HEADER_PREFIX}{header},\n"state": {body}}}\n'
        target = self.path_of(session.session_id)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            with tmp.open("w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        return target

    @contextlib.contextmanager
    def lease(self, session_id: str) -> Iterator[None]:
        """Own a session for a run: a second process gets a SessionError naming the holder."""
        self.directory.mkdir(parents=True, exist_ok=True)
        lock = self._lock_path(session_id)
        owner = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "since": _now().isoformat()})
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._stale_holder(lock)
                if holder is None:
                    continue  # the stale lock was removed; try once more
                raise SessionError(
                    f"session {short_id_of(session_id)} is in use by {holder}",
                    hint="wait for that run to finish, or start a new session",
                    details={"lock": str(lock)},
                ) from None
            with os.fdopen(fd, "w") as fh:
                fh.write(owner)
            break
        else:
            raise SessionError(f"could not lock session {short_id_of(session_id)}", hint=f"remove {lock} if stale")
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()

    def _stale_holder(self, lock: Path) -> str | None:
        """Who holds `lock`, or None after removing it because its process is gone."""
        try:
            data = json.loads(lock.read_text(encoding="utf-8"))
            pid, host = int(data["pid"]), str(data["host"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError):
            return f"an unreadable lock file {lock}"
        if host == socket.gethostname() and not _pid_alive(pid):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
            return None
        return f"process {pid} on {host}"

    @contextlib.asynccontextmanager
    async def lease_async(self, session_id: str) -> AsyncIterator[None]:
        """`lease` for a run on an event loop: the lock file's I/O happens in a worker thread."""
        lease = self.lease(session_id)
        await anyio.to_thread.run_sync(lease.__enter__)
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(lease.__exit__, None, None, None)

    # -- reading ----------------------------------------------------------------------------------

    def _read_header(self, path: Path) -> dict[str, Any]:
        with path.open(encoding="utf-8") as fh:
            first = fh.readline()
        if first.startswith(_HEADER_PREFIX) and first.rstrip().endswith(","):
            with contextlib.suppress(ValueError):
                header: dict[str, Any] = json.loads(first.rstrip()[len(_HEADER_PREFIX) : -1])
                return header
        return self._read_document(path)[0]  # not written by us in the fast layout: read it all

    def _read_document(self, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            header, state = doc["header"], doc["state"]
            if not isinstance(header, dict) or not isinstance(state, dict) or "id" not in header:
                raise TypeError("header and state must be objects")
        except FileNotFoundError:
            raise
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise CorruptSession(
                f"session file {path} is corrupt ({type(exc).__name__}: {exc})",
                hint="it was left in place; move it away or fix it by hand",
                details={"path": str(path)},
            ) from exc
        return header, state

    def list_sessions(self) -> list[SessionInfo]:
        """Every readable session, newest first; unreadable files are reported and skipped."""
        return self._collect("*.json")

    def _collect(self, pattern: str) -> list[SessionInfo]:
        self.skipped = []
        infos: list[SessionInfo] = []
        if not self.directory.is_dir():
            return infos
        for path in self.directory.glob(pattern):
            try:
                infos.append(_info(self._read_header(path), path))
            except FileNotFoundError:
                continue  # deleted while we listed
            except (CorruptSession, KeyError, ValueError, TypeError) as exc:
                reason = exc.message if isinstance(exc, CorruptSession) else f"session file {path} is corrupt: {exc}"
                self.skipped.append(reason)
                if self._on_corrupt is not None:
                    self._on_corrupt(reason)
        infos.sort(key=lambda s: s.updated_at or datetime.min.replace(tzinfo=UTC), reverse=True)
        return infos

    def resolve(self, ref: str) -> SessionInfo:
        """Reads only the files named after ids that start with `ref`; the whole listing only to explain a miss."""
        key = ref.strip().lower()
        if _ID_CHARS.fullmatch(key):
            found = self._collect(f"{key}*.json")
            if found:
                return resolve_ref(ref, found, self.backend)
        return resolve_ref(ref, self.list_sessions(), self.backend)

    def load(self, ref: str) -> StoredSession:
        """The whole session `ref` names (short id, unique prefix or full id)."""
        info = self.resolve(ref)
        header, state = self._read_document(self.path_of(info.session_id))
        return StoredSession.from_document(header, state)

    def delete(self, ref: str) -> SessionInfo:
        """Remove one session; refused while a run holds it."""
        info = self.resolve(ref)
        with self.lease(info.session_id):
            self.path_of(info.session_id).unlink()
        return info


class StoreSessionLocator:
    """The SessionLocator of an API backend over its SessionStore (`unified sessions list|show|delete`).

    Sessions are not scoped by project: `cwd` only filters `list_sessions`. `show` prints the
    header fields every backend has, then what `show_state` adds from the backend's own state.
    """

    def __init__(self, backend: str, store: SessionStore | None = None) -> None:
        self.backend = backend
        self.store = store or SessionStore(backend)

    def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        return [s for s in self.store.list_sessions() if cwd is None or s.cwd == cwd]

    def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        return self.store.resolve(ref)

    def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        session = self.store.load(ref)
        return {
            "backend": self.backend,
            "session_id": session.session_id,
            "short_id": session.short_id,
            "model": session.model,
            "cwd": session.cwd,
            "first_prompt": session.first_prompt,
            "turns": session.turns,
            "usage": session.usage.model_dump(),
            **self.show_state(session),
        }

    def show_state(self, session: StoredSession) -> dict[str, Any]:
        """The backend-specific part of `show` (the conversation as the backend stores it)."""
        return {}

    def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        """Remove our record of one session (refused while a run holds it)."""
        return self.store.delete(ref)
