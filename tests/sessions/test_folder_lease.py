"""`folder_lease`: the file store's lease for a folder that holds leases only (an agent binary's sessions,
`unified._binary.shared.session_lease`), taken without a store of records around it.

Proved here: it takes the very lock file the store's own lease takes, so either excludes the other (both
ways) and neither leaves a lock file behind; it refuses what the store's lease refuses (a symbolic link as the
shard or as the lock file, an id that cannot name a file, a file where its folder goes), with the same errors;
a caller already cancelled takes nothing.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.sessions.records import BACKEND
from unified._sessions.stores import FileSessionStore, folder_lease
from unified.errors import SessionError, SessionInUse, SessionStoreUnavailable

SESSION = "019b2c3d-4e5f-7a8b-9c0d-1e2f3a4b5c6d"


def _lock(root: Path) -> Path:
    return root / BACKEND / SESSION[:2] / f"{SESSION}.lock"


def test_it_and_the_store_s_lease_exclude_each_other_both_ways_and_leave_no_lock_file(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)

    async def scenario() -> None:
        async with folder_lease(tmp_path, BACKEND, SESSION):
            assert _lock(tmp_path).is_file()
            with pytest.raises(SessionInUse):
                async with store.lease(BACKEND, SESSION):
                    pass
            with pytest.raises(SessionInUse):
                async with folder_lease(tmp_path, BACKEND, SESSION):
                    pass
        assert not _lock(tmp_path).exists()
        async with store.lease(BACKEND, SESSION):
            with pytest.raises(SessionInUse):
                async with folder_lease(tmp_path, BACKEND, SESSION):
                    pass
        async with folder_lease(tmp_path, BACKEND, SESSION):
            pass

    anyio.run(scenario)
    assert not _lock(tmp_path).exists()


def test_a_symlinked_shard_or_lock_file_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    root = tmp_path / "leases"
    (root / BACKEND).mkdir(parents=True)
    (root / BACKEND / SESSION[:2]).symlink_to(elsewhere, target_is_directory=True)

    async def take() -> None:
        async with folder_lease(root, BACKEND, SESSION):
            pass

    with pytest.raises(SessionError, match="is not a directory"):
        anyio.run(take)
    assert list(elsewhere.iterdir()) == []

    (root / BACKEND / SESSION[:2]).unlink()
    (root / BACKEND / SESSION[:2]).mkdir()
    target = elsewhere / "target"
    target.write_text("the user's file")
    _lock(root).symlink_to(target)
    with pytest.raises(SessionError, match="symbolic link"):
        anyio.run(take)
    assert target.read_text() == "the user's file"
    assert _lock(root).is_symlink()


def test_an_id_that_cannot_name_a_file_and_a_file_where_the_folder_goes_are_typed_errors(tmp_path: Path) -> None:
    leases = tmp_path / "leases"

    async def take(session_id: str, root: Path = leases) -> None:
        async with folder_lease(root, BACKEND, session_id):
            pass

    with pytest.raises(SessionError, match="cannot name a stored session"):
        anyio.run(take, "../escape")
    assert not leases.exists()

    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / BACKEND).write_text("a file where the backend's folder goes")
    with pytest.raises(SessionStoreUnavailable, match="cannot be written"):
        anyio.run(take, SESSION, blocked)
    assert (blocked / BACKEND).read_text() == "a file where the backend's folder goes"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_caller_already_cancelled_takes_nothing(tmp_path: Path, backend: str) -> None:
    entered = False

    async def scenario() -> None:
        nonlocal entered
        with anyio.CancelScope() as scope:
            scope.cancel()
            async with folder_lease(tmp_path, BACKEND, SESSION):
                entered = True
        async with folder_lease(tmp_path, BACKEND, SESSION):  # nothing was left held
            pass

    anyio.run(scenario, backend=backend)
    assert not entered
    assert not _lock(tmp_path).exists()
