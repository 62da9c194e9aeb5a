"""`PostgresSessionStore`: the sessions of a fleet of workers in one PostgreSQL database.

One table, `unified_sessions`, one row per session: the same redacted document the file store
writes (`document`), its header line alone (`header`, so listing never reads a conversation), the
`format` number and `updated_at`. Why PostgreSQL (docs/sessions.md): a save is one transaction,
so a crash mid-save leaves the previous version whole; a lease is a session-level advisory lock
(`pg_try_advisory_lock`) held by a connection kept open for the run, which the server releases
when that connection ends, however its holder died, with no TTL to tune; and a btree index on
`lower(session_id) text_pattern_ops` turns a resolve by prefix into an index range scan.

The driver is psycopg 3's synchronous API, called in worker threads (`anyio.to_thread`), so the
store runs under asyncio and trio alike. psycopg is imported when a store is created, never by
`import unified` (`pip install 'unified[postgres]'`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

import anyio

from unified._exports import publish
from unified._redaction import MIN_SECRET_LENGTH, clip
from unified._sessions.records import SessionInfo, StoredSession, resolve_ref
from unified._sessions.stores import (
    FORMAT_VERSION,
    BlockingSessionStore,
    checked_header,
    corrupt_error,
    header_text,
    in_use_error,
    info_of_header,
    newest_first,
    parse_document,
    readable_json,
    serialize,
    stamp_updated,
    unreadable_info,
    unsupported_format,
)
from unified.errors import (
    ConfigurationError,
    CorruptSession,
    SessionError,
    SessionNotFound,
    SessionStoreUnavailable,
    UnsupportedSessionFormat,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["TABLE", "PostgresSessionStore", "lock_key"]

TABLE = "unified_sessions"
_SCHEMA_LOCK = 0x756E6966_69656400
"""The advisory lock key that serializes creating the schema (several workers may start at once)."""
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    backend    text        NOT NULL,
    session_id text        NOT NULL,
    format     integer     NOT NULL,
    updated_at timestamptz NOT NULL,
    header     text        NOT NULL,
    document   text        NOT NULL,
    PRIMARY KEY (backend, session_id)
);
CREATE INDEX IF NOT EXISTS {TABLE}_id_prefix ON {TABLE} (backend, lower(session_id) text_pattern_ops);
CREATE INDEX IF NOT EXISTS {TABLE}_recent ON {TABLE} (backend, updated_at DESC);
"""
_MATCH_LIMIT = 200
"""At most this many candidates of an ambiguous prefix are read (the error lists 20 of them)."""
_IDLE_CONNECTIONS = 4
_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3}
"""Client-side TCP keepalives; the server gets the same through `options`, so the lease of a worker
whose machine vanished (no FIN ever sent) is released within about 25 s."""
_SERVER_KEEPALIVES = "-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3"


def _import_psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigurationError(
            f"a PostgreSQL session store needs psycopg, which is not installed ({exc})",
            hint="pip install 'unified[postgres]'",
        ) from exc
    return psycopg


def lock_key(backend: str, session_id: str) -> int:
    """The 64-bit advisory lock key of one session (a digest: collisions are out of reach)."""
    digest = hashlib.blake2b(f"unified\0{backend}\0{session_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _storable(kind: str, value: str) -> str:
    """`value`, unless PostgreSQL's text cannot hold it: a NUL character, which psycopg refuses before
    the query is sent, read as the store being unreachable (`SessionStoreUnavailable`, whose hint is to
    start the database). No stored session has one."""
    if "\0" in value:
        raise SessionError(
            f"{kind} {clip(value, 80)!r} holds a NUL character: it cannot name a stored session",
            hint="pass the session's id as `unified sessions list` shows it",
        )
    return value


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class PostgresSessionStore(BlockingSessionStore):
    """Sessions in a PostgreSQL database named by `url` (`postgresql://user:password@host:port/db`).

    Guarantees (docs/sessions.md): a save is one transaction (the previous version stays whole if
    the saver dies); a lease is held by at most one connection at a time across every worker, and
    the server releases it when its holder's connection ends; a record it cannot read is
    reported, never replaced. A database that cannot be reached raises `SessionStoreUnavailable`;
    nothing falls back to local files.
    """

    def __init__(self, url: str) -> None:
        self._psycopg = _import_psycopg()
        try:
            parts = self._psycopg.conninfo.conninfo_to_dict(url)
        except self._psycopg.ProgrammingError as exc:
            raise ConfigurationError(
                "the session store URL is not a valid PostgreSQL connection string",
                hint="use postgresql://user:password@host:port/database",
            ) from exc
        self._url = url
        self._secret = str(parts.get("password") or "")
        host = parts.get("host") or "localhost"
        self.label = f"postgresql://{parts.get('user') or ''}{'@' if parts.get('user') else ''}{host}"
        self.label += f":{parts.get('port') or 5432}/{parts.get('dbname') or ''}"
        """Where the store is, without the password: used in messages and `SessionInfo.path`."""
        self._idle: list[psycopg.Connection[Any]] = []
        self._pid = os.getpid()
        self._guard = threading.Lock()
        self._schema_ready = False

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self.label!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its URL (for a worker process); connections never cross a process boundary."""
        return (PostgresSessionStore, (self._url,))

    # -- connections ---------------------------------------------------------------------------------

    def _without_password(self, text: str) -> str:
        """`text` with the URL's password hidden wherever it stands on its own (between characters that are not
        letters or digits: `:p@`, `password=p`), and anywhere at all when it is as long as a secret is
        (`MIN_SECRET_LENGTH`). A short one was hidden inside every word too: with `postgresql://u:p@...`,
        "Servname not supported for ai_socktype" read "Servname not su******orted for ai_sockty***e"."""
        if not self._secret:
            return text
        if len(self._secret) >= MIN_SECRET_LENGTH:
            return text.replace(self._secret, "***")
        return re.sub(rf"(?<![A-Za-z0-9]){re.escape(self._secret)}(?![A-Za-z0-9])", "***", text)

    def _unavailable(self, exc: Exception) -> SessionStoreUnavailable:
        why = self._without_password(str(exc).strip())
        return SessionStoreUnavailable(
            f"the session store {self.label} cannot be reached or refused the request: {why}",
            hint="start the database, fix UNIFIED_SESSION_STORE_URL or the user's rights (it creates and "
            "writes the table unified_sessions); unified does not fall back to local files, which would "
            "fork the session's history",
            details={"store": self.label},
        )

    def _connect(self, application_name: str = "unified") -> psycopg.Connection[Any]:
        try:
            return self._psycopg.connect(  # type: ignore[no-any-return]
                self._url,
                autocommit=True,
                application_name=application_name[:63],
                connect_timeout=10,
                options=_SERVER_KEEPALIVES,
                **_KEEPALIVES,
            )
        except self._psycopg.OperationalError as exc:
            raise self._unavailable(exc) from None

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for one operation; a broken one is dropped, never handed out again."""
        with self._guard:
            if self._pid != os.getpid():  # a forked child must not use its parent's sockets
                self._idle, self._pid = [], os.getpid()
            connection = self._idle.pop() if self._idle else None
        if connection is None or connection.closed:
            connection = self._connect()
        try:
            if not self._schema_ready:
                self._create_schema(connection)
            yield connection
        except self._psycopg.Error as exc:
            connection.close()
            raise self._unavailable(exc) from None
        except BaseException:
            if connection.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE:
                connection.close()
            raise
        with self._guard:
            if len(self._idle) < _IDLE_CONNECTIONS and not connection.closed:
                self._idle.append(connection)
                return
        connection.close()

    def _create_schema(self, connection: psycopg.Connection[Any]) -> None:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            connection.execute(_SCHEMA)
        self._schema_ready = True

    def close(self) -> None:
        """Close the idle connections (a held lease keeps its own until it is released)."""
        with self._guard:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    # -- the protocol --------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def lease(self, backend: str, session_id: str) -> AsyncIterator[None]:
        connection = await anyio.to_thread.run_sync(self._take_lease, backend, session_id)
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._release, connection, lock_key(backend, session_id))

    # -- blocking side -------------------------------------------------------------------------------

    def _where(self, backend: str, session_id: str) -> str:
        return f"{self.label}#{backend}/{session_id}"

    def _entry(self, backend: str, session_id: str, version: int, header: str) -> SessionInfo:
        where = self._where(backend, session_id)
        try:
            if version > FORMAT_VERSION:
                raise unsupported_format(where, version)
            try:
                raw = json.loads(header)
            except (ValueError, RecursionError) as exc:
                raise corrupt_error(where, f"its header is not valid JSON ({exc})") from exc
            info = info_of_header(checked_header(readable_json(header, raw, where), where), where)
            if info.session_id != session_id:
                raise corrupt_error(where, f"it names session {info.session_id!r}")
            return info
        except (CorruptSession, UnsupportedSessionFormat) as exc:
            return unreadable_info(backend, session_id, where, exc)

    def _list(self, backend: str) -> list[SessionInfo]:
        _storable("backend", backend)
        with self._connection() as connection:
            rows = connection.execute(
                f"SELECT session_id, format, header FROM {TABLE} WHERE backend = %s ORDER BY updated_at DESC",
                (backend,),
            ).fetchall()
        return newest_first([self._entry(backend, *row) for row in rows])

    def _resolve(self, backend: str, ref: str) -> SessionInfo:
        """An index range scan over ids starting with `ref`; the five newest sessions only to explain a miss."""
        key = ref.strip().lower()
        _storable("backend", backend)
        with self._connection() as connection:
            rows = []
            if key and "\0" not in key:  # no id holds one: a miss, explained as any other
                rows = connection.execute(
                    f"SELECT session_id, format, header FROM {TABLE} WHERE backend = %s "
                    "AND lower(session_id) LIKE %s ORDER BY lower(session_id) LIMIT %s",
                    (backend, _like_prefix(key), _MATCH_LIMIT),
                ).fetchall()
            if not rows:
                rows = connection.execute(
                    f"SELECT session_id, format, header FROM {TABLE} WHERE backend = %s "
                    "ORDER BY updated_at DESC LIMIT 5",
                    (backend,),
                ).fetchall()
        return resolve_ref(ref, [self._entry(backend, *row) for row in rows], backend)

    def _load(self, backend: str, session_id: str) -> StoredSession:
        _storable("backend", backend)
        _storable("session id", session_id)
        with self._connection() as connection:
            row = connection.execute(
                f"SELECT format, document FROM {TABLE} WHERE backend = %s AND session_id = %s",
                (backend, session_id),
            ).fetchone()
        if row is None:
            raise SessionNotFound(
                f"no {backend} session {clip(session_id, 80)!r} in {self.label}",
                hint="run `unified sessions list` to see the sessions there are",
            )
        return self._readable(backend, session_id, *row)

    def _readable(self, backend: str, session_id: str, version: int, document: str) -> StoredSession:
        where = self._where(backend, session_id)
        if version > FORMAT_VERSION:
            raise unsupported_format(where, version)
        session = parse_document(document, where)
        if session.session_id != session_id or session.backend != backend:
            raise corrupt_error(where, f"it names {session.backend} session {session.session_id!r}")
        return session

    def _save(self, session: StoredSession) -> None:
        backend, session_id = _storable("backend", session.backend), _storable("session id", session.session_id)
        with self._connection() as connection, connection.transaction():
            row = connection.execute(
                f"SELECT format, document FROM {TABLE} WHERE backend = %s AND session_id = %s FOR UPDATE",
                (backend, session_id),
            ).fetchone()
            if row is not None:
                self._readable(backend, session_id, *row)  # a record we cannot read is never replaced
            stamp_updated(session)
            document = serialize(session)
            connection.execute(
                f"INSERT INTO {TABLE} (backend, session_id, format, updated_at, header, document) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (backend, session_id) DO UPDATE SET "
                "format = EXCLUDED.format, updated_at = EXCLUDED.updated_at, header = EXCLUDED.header, "
                "document = EXCLUDED.document",
                (backend, session_id, FORMAT_VERSION, session.updated_at, header_text(document), document),
            )

    def _delete(self, backend: str, session_id: str) -> None:
        _storable("backend", backend)
        _storable("session id", session_id)
        with self._connection() as connection, connection.transaction():
            free = connection.execute("SELECT pg_try_advisory_xact_lock(%s)", (lock_key(backend, session_id),))
            if not _first(free.fetchone()):
                raise in_use_error(session_id, self._holder(connection, backend, session_id))
            gone = connection.execute(
                f"DELETE FROM {TABLE} WHERE backend = %s AND session_id = %s", (backend, session_id)
            )
            if gone.rowcount == 0:
                raise SessionNotFound(f"no {backend} session {clip(session_id, 80)!r} in {self.label}")

    def _take_lease(self, backend: str, session_id: str) -> psycopg.Connection[Any]:
        """A connection of its own holding the session's advisory lock, or SessionInUse at once."""
        holder = f"unified pid {os.getpid()} on host {socket.gethostname()}"
        connection = self._connect(holder)
        try:
            taken = connection.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(backend, session_id),))
            if not _first(taken.fetchone()):
                raise in_use_error(session_id, self._holder(connection, backend, session_id))
        except self._psycopg.Error as exc:
            connection.close()
            raise self._unavailable(exc) from None
        except BaseException:
            connection.close()
            raise
        return connection

    def _release(self, connection: psycopg.Connection[Any], key: int) -> None:
        """Unlock, answered by the server, then close: a close alone returns before the server has
        ended the session, so the next taker could still find the lock held for an instant."""
        try:
            connection.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except self._psycopg.Error:
            pass  # the connection is gone, and with it the lock
        finally:
            connection.close()

    @staticmethod
    def _holder(connection: psycopg.Connection[Any], backend: str, session_id: str) -> str:
        """Who holds the lock, from the server's own lock table (never used to decide anything)."""
        key = lock_key(backend, session_id) & 0xFFFF_FFFF_FFFF_FFFF
        row = connection.execute(
            "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
            "AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid LIMIT 1",
            (key >> 32, key & 0xFFFF_FFFF),
        ).fetchone()
        name = str(row[0]) if row and row[0] else ""
        return name.removeprefix("unified ") if name.startswith("unified ") else "a run on another connection"


def _first(row: tuple[Any, ...] | None) -> Any:
    return row[0] if row else None


publish("unified.sessions", ["PostgresSessionStore"], globals())
