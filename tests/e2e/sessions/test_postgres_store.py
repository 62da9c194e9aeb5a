"""What the conformance suite does not show about PostgresSessionStore: resolve is an index range
scan (not a scan of the table), the URL's password appears nowhere, `UNIFIED_SESSION_STORE_URL`
chooses it, and `import unified` does not load the driver."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import psycopg
import pytest

from unified._sessions.config import default_store, store_from_url
from unified._sessions.postgres import TABLE, PostgresSessionStore
from unified._sessions.stores import FileSessionStore
from unified.errors import ConfigurationError, SessionStoreUnavailable
from unified.sessions import StoredSession


def test_resolve_by_prefix_is_an_index_range_scan(postgres_url: str) -> None:
    store = PostgresSessionStore(postgres_url)

    async def fill() -> None:
        for _ in range(50):
            await store.save(StoredSession.new("generate-content", model=None, cwd=None, first_prompt="x"))

    anyio.run(fill)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("SET enable_seqscan = off")  # the plan then shows whether the index can serve it
        rows = connection.execute(
            f"EXPLAIN (FORMAT JSON) SELECT session_id, format, header FROM {TABLE} WHERE backend = %s "
            "AND lower(session_id) LIKE %s ORDER BY lower(session_id) LIMIT 200",
            ("generate-content", "ab%"),
        ).fetchone()
    assert rows is not None
    plan = json.dumps(rows[0])
    assert f"{TABLE}_id_prefix" in plan
    assert "Seq Scan" not in plan
    store.close()


def test_the_password_of_the_url_appears_in_no_error_and_no_listing(postgres_url: str) -> None:
    hostile = postgres_url.replace("postgres@", "postgres:pa55word-never-shown@").rsplit(":", 1)[0] + ":1/x"
    store = PostgresSessionStore(hostile)
    with pytest.raises(SessionStoreUnavailable) as down:
        anyio.run(store.list_sessions, "generate-content")
    assert "pa55word-never-shown" not in f"{down.value} {down.value.details} {store!r} {store.label}"
    assert "cannot be reached" in down.value.message


def test_the_environment_names_the_store(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", postgres_url)
    assert isinstance(default_store(), PostgresSessionStore)
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", "file:///tmp/unified-sessions")
    assert isinstance(default_store(), FileSessionStore)
    with pytest.raises(ConfigurationError, match="unknown kind of store"):
        store_from_url("redis://127.0.0.1:6379/0")
    with pytest.raises(ConfigurationError, match="not a valid PostgreSQL"):
        PostgresSessionStore("postgresql://x y z")


def test_import_unified_does_not_load_the_driver() -> None:
    code = (
        "import sys, unified, unified.sessions\n"
        "unified.PostgresSessionStore, unified.sessions.PostgresSessionStore\n"
        "print('psycopg' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_row_holding_a_lone_surrogate_reads_it_as_u_fffd(postgres_url: str) -> None:
    """A row another tool wrote with `\\ud800` escaped alone (JSON text takes it; no UTF-8 encoder does):
    the listing's JSON and `unified sessions list` failed with UnicodeEncodeError, exit 70."""
    store = PostgresSessionStore(postgres_url)
    session = StoredSession.new("generate-content", model=None, cwd=None, first_prompt="PROMPT")
    session.state["contents"] = [{"role": "user", "parts": [{"text": "PROMPT"}]}]
    anyio.run(store.save, session)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(
            f"UPDATE {TABLE} SET header = replace(header, 'PROMPT', %s), document = replace(document, 'PROMPT', %s)",
            ("a\\ud800b", "a\\ud800b"),
        )
    [listed] = anyio.run(store.list_sessions, "generate-content")
    assert listed.problem is None
    assert listed.first_prompt == "a\ufffdb"
    loaded = anyio.run(store.load, "generate-content", session.session_id)
    assert loaded.state["contents"][0]["parts"][0]["text"] == "a\ufffdb"
    store.close()
