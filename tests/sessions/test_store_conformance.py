"""The store conformance suite (`unified.testing._store_conformance`) on the file and memory stores, in one process.

The cases that need several processes run for the file store in tests/e2e/sessions/; the memory
store has no other process to exclude.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from unified._sessions.stores import FileSessionStore, MemorySessionStore
from unified.sessions import SessionStore
from unified.testing._store_conformance import StoreConformance, StoreFactory


class FileStoreHooks:
    """Damage a file store's record the way a disk or a newer unified would."""

    def damage(self, store: SessionStore, backend: str, session_id: str) -> None:
        assert isinstance(store, FileSessionStore)
        store.path_of(backend, session_id).write_bytes(b'{"header": {"format": 1, "id": tru')

    def mark_newer(self, store: SessionStore, backend: str, session_id: str) -> None:
        assert isinstance(store, FileSessionStore)
        path = store.path_of(backend, session_id)
        path.write_bytes(path.read_bytes().replace(b'"format":1,', b'"format":99,', 1))

    def raw(self, store: SessionStore, backend: str, session_id: str) -> object:
        assert isinstance(store, FileSessionStore)
        return store.path_of(backend, session_id).read_bytes()


class TestFileStore(FileStoreHooks, StoreConformance):
    @pytest.fixture
    def store_factory(self, tmp_path: Path) -> StoreFactory:
        return functools.partial(FileSessionStore, tmp_path / "sessions")


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        store = MemorySessionStore()
        return lambda: store

    def damage(self, store: SessionStore, backend: str, session_id: str) -> None:
        assert isinstance(store, MemorySessionStore)
        store._documents[(backend, session_id)] = '{"header": {"format": 1, "id": tru'

    def mark_newer(self, store: SessionStore, backend: str, session_id: str) -> None:
        assert isinstance(store, MemorySessionStore)
        key = (backend, session_id)
        store._documents[key] = store._documents[key].replace('"format":1,', '"format":99,', 1)

    def raw(self, store: SessionStore, backend: str, session_id: str) -> object:
        assert isinstance(store, MemorySessionStore)
        return store._documents[(backend, session_id)]
