"""The store conformance suite on the real PostgreSQL server (every case), and its multi-process cases
on the file store: concurrent leases from several processes, a holder killed with SIGKILL, a saver
killed mid-save. The server is the session-scoped `postgres_server` of tests/conftest.py."""

from __future__ import annotations

import functools
from pathlib import Path

import psycopg
import pytest

from tests.sessions.test_store_conformance import FileStoreHooks
from unified._sessions.postgres import TABLE, PostgresSessionStore
from unified._sessions.stores import FileSessionStore
from unified.sessions import SessionStore
from unified.testing._store_conformance import StoreConformance, StoreFactory, StoreProcessConformance


class PostgresHooks:
    """Change a row behind the store's back, as a newer unified or a bad hand edit would."""

    url = ""

    def _execute(self, sql: str, *args: object) -> list[tuple[object, ...]]:
        with psycopg.connect(self.url, autocommit=True) as connection:
            cursor = connection.execute(sql, args)
            return cursor.fetchall() if cursor.description else []

    def damage(self, store: SessionStore, backend: str, session_id: str) -> None:
        broken = '{"format": 1, "id": tru'
        self._execute(
            f"UPDATE {TABLE} SET header = %s, document = %s WHERE backend = %s AND session_id = %s",
            broken,
            broken,
            backend,
            session_id,
        )

    def mark_newer(self, store: SessionStore, backend: str, session_id: str) -> None:
        self._execute(
            f"UPDATE {TABLE} SET format = 99, header = replace(header, '\"format\":1,', '\"format\":99,'), "
            "document = replace(document, '\"format\":1,', '\"format\":99,') WHERE backend = %s AND session_id = %s",
            backend,
            session_id,
        )

    def raw(self, store: SessionStore, backend: str, session_id: str) -> object:
        return self._execute(
            f"SELECT format, updated_at, header, document FROM {TABLE} WHERE backend = %s AND session_id = %s",
            backend,
            session_id,
        )


class TestPostgresStore(PostgresHooks, StoreConformance):
    @pytest.fixture
    def store_factory(self, postgres_url: str) -> StoreFactory:
        self.url = postgres_url
        return functools.partial(PostgresSessionStore, postgres_url)


class TestPostgresStoreProcesses(StoreProcessConformance):
    @pytest.fixture
    def store_factory(self, postgres_url: str) -> StoreFactory:
        return functools.partial(PostgresSessionStore, postgres_url)


class TestFileStoreProcesses(FileStoreHooks, StoreProcessConformance):
    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        return functools.partial(FileSessionStore, tmp_path / "sessions")
