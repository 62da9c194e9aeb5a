"""Bad input round 23, the file session store: a root that is a symbolic link to nothing, two deletes of one
session (as two processes make them), and a record replaced by a directory. Each case says what happened before,
or that it is a pin."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest

from unified.errors import CorruptSession, SessionNotFound, SessionStoreUnavailable
from unified.sessions import FileSessionStore, StoredSession

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links and POSIX modes")


def _session() -> StoredSession:
    return StoredSession.new("generate-content", model="m", cwd="/w", first_prompt="hi")


def _dangling(tmp_path: Path) -> tuple[Path, Path]:
    """A store root that is a link to a folder that is not there (a data folder on a disk not mounted, moved)."""
    root, target = tmp_path / "sessions", tmp_path / "unmounted" / "sessions"
    root.symlink_to(target)
    return root, target


def test_a_save_into_a_root_that_links_to_nothing_names_the_link(tmp_path: Path) -> None:
    """FAILED before: "cannot be written: File exists (ROOT)", hint "make that directory writable": no permission
    makes a link to nothing a folder. Now the hint names the link and where it points."""
    root, target = _dangling(tmp_path)
    with pytest.raises(SessionStoreUnavailable) as caught:
        anyio.run(FileSessionStore(root).save, _session())
    assert f"{root} is a symbolic link to {target}, which does not exist" in str(caught.value.hint)
    assert "make that folder, point the link at one" in str(caught.value.hint)
    assert "writable" not in str(caught.value.hint)
    assert not target.exists()  # nothing made through the link


def test_a_lease_in_a_root_that_links_to_nothing_names_the_link(tmp_path: Path) -> None:
    """FAILED before: a run's lease (and a delete) said "No such file or directory (ROOT/generate-content)" and to
    point UNIFIED_DATA_DIR at a folder that can be made, not why this one cannot: the link. Now it names the link."""
    root, target = _dangling(tmp_path)
    store = FileSessionStore(root)

    async def lease() -> None:
        async with store.lease("generate-content", _session().session_id):
            raise AssertionError("a lease in a store that links to nothing")

    with pytest.raises(SessionStoreUnavailable) as caught:
        anyio.run(lease)
    assert f"{root} is a symbolic link to {target}, which does not exist" in str(caught.value.hint)


def test_a_listing_of_a_root_that_links_to_nothing_is_empty(tmp_path: Path) -> None:
    """Pin: a store whose root is not there yet lists no session (nothing saved), links or not."""
    root, _ = _dangling(tmp_path)
    assert anyio.run(FileSessionStore(root).list_sessions, "generate-content") == []


def test_the_second_of_two_deletes_of_one_session_says_what_to_do(tmp_path: Path) -> None:
    """FAILED before: two processes deleting one session (each store its own, as two `unified sessions delete` are):
    the second's SessionNotFound had no hint. Now it says the session was deleted already and nothing was deleted;
    the other session is kept."""
    first, second = FileSessionStore(tmp_path), FileSessionStore(tmp_path)
    gone, kept = _session(), _session()
    anyio.run(first.save, gone)
    anyio.run(first.save, kept)
    anyio.run(first.delete, "generate-content", gone.session_id)
    with pytest.raises(SessionNotFound) as caught:
        anyio.run(second.delete, "generate-content", gone.session_id)
    assert "(deleted already, or never saved)" in caught.value.message
    assert "nothing was deleted" in str(caught.value.hint)
    assert [info.session_id for info in anyio.run(second.list_sessions, "generate-content")] == [kept.session_id]


def test_a_record_replaced_by_a_directory_is_corrupt_and_kept(tmp_path: Path) -> None:
    """Pin: a directory where a record goes is a corrupt session on load and on save, and stays as it is (with what
    it holds): never read, removed or written through."""
    store = FileSessionStore(tmp_path)
    session = _session()
    anyio.run(store.save, session)
    record = store.path_of("generate-content", session.session_id)
    record.unlink()
    record.mkdir()
    (record / "inside").write_text("kept")
    for attempt in (
        lambda: anyio.run(store.load, "generate-content", session.session_id),
        lambda: anyio.run(store.save, session),
    ):
        with pytest.raises(CorruptSession) as caught:
            attempt()
        assert "it is not a regular file" in caught.value.message
    assert (record / "inside").read_text() == "kept"


def test_a_delete_of_a_record_replaced_by_a_directory_says_to_move_it(tmp_path: Path) -> None:
    """Pin: the delete is refused as the store's, naming the folder where a record goes; the folder is kept."""
    store = FileSessionStore(tmp_path)
    session = _session()
    anyio.run(store.save, session)
    record = store.path_of("generate-content", session.session_id)
    record.unlink()
    record.mkdir()
    with pytest.raises(SessionStoreUnavailable) as caught:
        anyio.run(store.delete, "generate-content", session.session_id)
    assert f"{record} is a folder where a session record goes: move it away" in str(caught.value.hint)
    assert record.is_dir()
    assert os.listdir(record) == []
