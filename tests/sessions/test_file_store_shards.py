"""The file store's fan-out layout, `<backend>/<first two id characters>/<id>.json`, and the flat
layout of older stores, `<backend>/<id>.json`, which it still reads, leases, deletes and moves on save.

Proved here: a resolve lists the backend's directory and one shard, and reads one file; a legacy
session is listed, resolved, loaded, deleted and moved by its next save (a damaged one refused and
left as it is); a session at both paths is one session, the shard's; a lease on a legacy session
excludes another taker of this unified (in this process and in another) and an older unified's
taker of the flat lock, before and after the move; a one-character reference; and hostile entries
in the backend's directory (a symlinked shard, names that are no id, directories named like ids,
lock and temp files), none of them followed, read or listed; a FIFO at a record's path, and a
listed record swapped for a link or a FIFO before its read, refused rather than followed or waited on.
"""

from __future__ import annotations

import fcntl
import os
import socket
import stat
from pathlib import Path

import anyio
import pytest

from tests.harness.lease_holder import lease_held_elsewhere
from tests.harness.not_regular import releasing_readers_of
from tests.sessions.records import BACKEND, stored_session
from unified._sessions import stores
from unified._sessions.stores import FileSessionStore, serialize
from unified.errors import AmbiguousSession, CorruptSession, SessionError, SessionInUse, SessionNotFound
from unified.sessions import StoredSession


def _flat(root: Path, session: StoredSession) -> Path:
    """A record where an older unified wrote it, byte for byte as it wrote it."""
    path = root / BACKEND / f"{session.session_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(serialize(session))
    return path


def _files(root: Path) -> list[str]:
    """Every file under the backend's directory, relative to it."""
    return sorted(str(p.relative_to(root / BACKEND)) for p in (root / BACKEND).rglob("*") if not p.is_dir())


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories the store lists (os.scandir), in order."""
    seen: list[str] = []
    real = os.scandir

    def counting(path: str | Path) -> object:
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", counting)
    return seen


@pytest.fixture
def headers_read(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    read: list[Path] = []
    real = FileSessionStore._read_header

    def counting(self: FileSessionStore, path: Path) -> dict[str, object]:
        read.append(path)
        return real(self, path)

    monkeypatch.setattr(FileSessionStore, "_read_header", counting)
    return read


# --- the new layout --------------------------------------------------------------------------------


def test_a_save_goes_to_the_shard_of_its_id_and_resolve_lists_only_that_shard(
    tmp_path: Path, scanned: list[str], headers_read: list[Path]
) -> None:
    store = FileSessionStore(tmp_path)
    sessions = [stored_session(first_prompt=f"p{n}") for n in range(40)]
    for session in sessions:
        anyio.run(store.save, session)
        assert store.path_of(BACKEND, session.session_id) == (
            tmp_path / BACKEND / session.session_id[:2] / f"{session.session_id}.json"
        )
    assert _files(tmp_path) == sorted(f"{s.session_id[:2]}/{s.session_id}.json" for s in sessions)
    listed = anyio.run(store.list_sessions, BACKEND)
    assert sorted(i.session_id for i in listed) == sorted(s.session_id for s in sessions)
    assert len({i.session_id for i in listed}) == len(sessions)

    target = sessions[17]
    scanned.clear()
    headers_read.clear()
    info = anyio.run(store.resolve, BACKEND, target.short_id.upper())
    assert info.session_id == target.session_id
    assert info.path == str(store.path_of(BACKEND, target.session_id))
    assert scanned == [str(tmp_path / BACKEND), str(tmp_path / BACKEND / target.session_id[:2])]
    assert headers_read == [store.path_of(BACKEND, target.session_id)]
    assert anyio.run(store.load, BACKEND, target.session_id).first_prompt == "p17"


def test_a_one_character_reference_looks_in_every_shard_it_can_name(tmp_path: Path, scanned: list[str]) -> None:
    store = FileSessionStore(tmp_path)
    for session_id in ("a", "ab000000-1", "a0000000-2", "b0000000-3"):
        anyio.run(store.save, stored_session(session_id))
    assert (tmp_path / BACKEND / "a" / "a.json").is_file()  # a one-character id has a one-character shard
    scanned.clear()
    assert anyio.run(store.resolve, BACKEND, "a").session_id == "a"  # the exact id wins over the prefixes
    assert sorted(scanned[1:]) == [str(tmp_path / BACKEND / shard) for shard in ("a", "a0", "ab")]
    assert anyio.run(store.resolve, BACKEND, "B").session_id == "b0000000-3"
    assert anyio.run(store.resolve, BACKEND, "ab").session_id == "ab000000-1"
    anyio.run(store.delete, BACKEND, "a")
    with pytest.raises(AmbiguousSession) as caught:
        anyio.run(store.resolve, BACKEND, "a")
    assert caught.value.details["candidates"] == ["a0000000-2", "ab000000-1"]


def test_an_id_with_capitals_lives_in_the_lower_case_shard_and_resolves_in_any_case(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    anyio.run(store.save, stored_session("AbC12345-x"))
    assert (tmp_path / BACKEND / "ab" / "AbC12345-x.json").is_file()
    assert anyio.run(store.resolve, BACKEND, "abc1").session_id == "AbC12345-x"
    assert anyio.run(store.resolve, BACKEND, "ABC12345").session_id == "AbC12345-x"


# --- the legacy flat layout ------------------------------------------------------------------------


def test_a_legacy_session_is_listed_resolved_loaded_and_deleted(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    legacy = stored_session("12345678-legacy", "old layout")
    flat = _flat(tmp_path, legacy)
    current = stored_session("9a000000-current", "new layout")
    anyio.run(store.save, current)
    listed = {i.session_id: i for i in anyio.run(store.list_sessions, BACKEND)}
    assert set(listed) == {legacy.session_id, current.session_id}
    assert listed[legacy.session_id].path == str(flat)
    assert anyio.run(store.resolve, BACKEND, legacy.short_id).path == str(flat)
    assert anyio.run(store.resolve, BACKEND, "12").session_id == legacy.session_id
    assert anyio.run(store.resolve, BACKEND, "1").session_id == legacy.session_id
    assert anyio.run(store.load, BACKEND, legacy.session_id).state == legacy.state
    anyio.run(store.delete, BACKEND, legacy.session_id)
    assert not flat.exists()
    assert [i.session_id for i in anyio.run(store.list_sessions, BACKEND)] == [current.session_id]
    with pytest.raises(SessionNotFound):
        anyio.run(store.load, BACKEND, legacy.session_id)
    with pytest.raises(SessionNotFound):
        anyio.run(store.delete, BACKEND, legacy.session_id)


def test_a_save_under_a_lease_moves_a_legacy_session_to_its_shard(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    legacy = stored_session(first_prompt="old layout")
    flat = _flat(tmp_path, legacy)

    async def resume() -> None:
        async with store.lease(BACKEND, legacy.session_id):
            session = await store.load(BACKEND, legacy.session_id)
            session.state["contents"].append({"role": "model", "parts": [{"text": "answer"}]})
            session.turns = 1
            await store.save(session)
            await store.save(session)  # the second save finds it in the shard

    anyio.run(resume)
    moved = store.path_of(BACKEND, legacy.session_id)
    assert not flat.exists()
    assert _files(tmp_path) == [f"{legacy.session_id[:2]}/{legacy.session_id}.json"]  # no lock or temp file left
    loaded = anyio.run(store.load, BACKEND, legacy.session_id)
    assert (loaded.turns, len(loaded.state["contents"])) == (1, 2)
    (info,) = anyio.run(store.list_sessions, BACKEND)
    assert info.path == str(moved)


def test_a_damaged_legacy_record_is_not_moved_or_replaced(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    legacy = stored_session()
    flat = _flat(tmp_path, legacy)
    damaged = flat.read_bytes()[:-5]
    flat.write_bytes(damaged)
    (info,) = anyio.run(store.list_sessions, BACKEND)
    assert info.problem is not None
    assert info.problem.kind == "corrupt"
    with pytest.raises(CorruptSession):
        anyio.run(store.save, stored_session(legacy.session_id, "overwrite"))
    assert flat.read_bytes() == damaged
    assert not store.path_of(BACKEND, legacy.session_id).exists()


def test_a_record_cut_short_says_truncated_and_one_of_junk_says_it_is_no_record(tmp_path: Path) -> None:
    """What the message tells the user to look for: a record cut short (a crash, a full disk) or a file
    that never was one (another program's bytes in its place)."""
    store = FileSessionStore(tmp_path)
    cut, junk = stored_session(), stored_session()
    anyio.run(store.save, cut)
    anyio.run(store.save, junk)
    whole = store.path_of(BACKEND, cut.session_id).read_bytes()
    store.path_of(BACKEND, cut.session_id).write_bytes(whole[:-5])
    store.path_of(BACKEND, junk.session_id).write_bytes(bytes(range(256)) * 4)
    listed = {info.session_id: info.problem for info in anyio.run(store.list_sessions, BACKEND)}
    cut_problem, junk_problem = listed[cut.session_id], listed[junk.session_id]
    assert cut_problem is not None
    assert junk_problem is not None
    assert "truncated" in cut_problem.message
    assert "no session record unified wrote" in junk_problem.message
    assert "truncated" not in junk_problem.message
    assert store.path_of(BACKEND, junk.session_id).read_bytes() == bytes(range(256)) * 4  # left as it was


def test_a_record_saved_again_without_its_final_newline_is_read_not_called_truncated(tmp_path: Path) -> None:
    """An editor or a JSON tool that writes no final newline (json.dump, an editor set so) saved the record whole:
    it was listed as truncated and refused to every resume and show; a record cut short still is truncated."""
    store = FileSessionStore(tmp_path)
    kept, cut = stored_session(first_prompt="edited by hand"), stored_session()
    anyio.run(store.save, kept)
    anyio.run(store.save, cut)
    path = store.path_of(BACKEND, kept.session_id)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    store.path_of(BACKEND, cut.session_id).write_bytes(store.path_of(BACKEND, cut.session_id).read_bytes()[:-3])
    listed = {info.session_id: info for info in anyio.run(store.list_sessions, BACKEND)}
    assert listed[kept.session_id].problem is None
    assert listed[kept.session_id].first_prompt == "edited by hand"
    problem = listed[cut.session_id].problem
    assert problem is not None
    assert "truncated" in problem.message
    assert anyio.run(store.load, BACKEND, kept.session_id).session_id == kept.session_id


def test_a_session_at_both_paths_is_one_session_and_the_shard_s_copy_wins(tmp_path: Path) -> None:
    """What a crash between the move's write and its unlink leaves."""
    store = FileSessionStore(tmp_path)
    old = stored_session(first_prompt="flat copy")
    flat = _flat(tmp_path, old)
    new = stored_session(old.session_id, "shard copy")
    sharded = store.path_of(BACKEND, old.session_id)
    sharded.parent.mkdir(parents=True)
    sharded.write_text(serialize(new))
    (info,) = anyio.run(store.list_sessions, BACKEND)
    assert (info.first_prompt, info.path) == ("shard copy", str(sharded))
    for ref in (old.short_id, old.session_id, old.session_id[:2], old.session_id[:1]):
        resolved = anyio.run(store.resolve, BACKEND, ref)  # never ambiguous with itself
        assert (resolved.session_id, resolved.path) == (old.session_id, str(sharded))
    assert anyio.run(store.load, BACKEND, old.session_id).first_prompt == "shard copy"
    anyio.run(store.delete, BACKEND, old.session_id)
    assert not flat.exists()
    assert not sharded.exists()
    assert anyio.run(store.list_sessions, BACKEND) == []


def test_a_crash_after_the_move_s_write_leaves_the_session_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path)
    legacy = stored_session(first_prompt="old")
    flat = _flat(tmp_path, legacy)

    def crash(record: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(stores, "_finish_move", crash)
    with pytest.raises(KeyboardInterrupt):
        anyio.run(store.save, stored_session(legacy.session_id, "new"))
    assert flat.exists()
    assert store.path_of(BACKEND, legacy.session_id).exists()
    (info,) = anyio.run(store.list_sessions, BACKEND)
    assert info.first_prompt == "new"
    monkeypatch.undo()
    anyio.run(store.save, stored_session(legacy.session_id, "newer"))  # the next save finds the shard's copy
    assert anyio.run(store.load, BACKEND, legacy.session_id).first_prompt == "newer"


# --- leases across the two layouts ----------------------------------------------------------------


def _old_unified_lock(flat_record: Path) -> int:
    """Take the lease as an older unified does: flock `<id>.lock` beside the flat record."""
    fd = os.open(flat_record.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise
    return fd


def test_two_leases_on_a_legacy_session_exclude_each_other_before_and_after_its_move(tmp_path: Path) -> None:
    legacy = stored_session()
    _flat(tmp_path, legacy)
    first, second = FileSessionStore(tmp_path), FileSessionStore(tmp_path)

    async def scenario() -> None:
        async with first.lease(BACKEND, legacy.session_id):
            with pytest.raises(SessionInUse):
                async with second.lease(BACKEND, legacy.session_id):
                    pass
            await first.save(await first.load(BACKEND, legacy.session_id))  # moves it to its shard
            with pytest.raises(SessionInUse):
                async with second.lease(BACKEND, legacy.session_id):
                    pass
        async with second.lease(BACKEND, legacy.session_id):
            pass

    anyio.run(scenario)
    assert _files(tmp_path) == [f"{legacy.session_id[:2]}/{legacy.session_id}.json"]


def test_a_lease_on_a_legacy_session_excludes_an_older_unified_s_lock_both_ways(tmp_path: Path) -> None:
    legacy = stored_session()
    flat = _flat(tmp_path, legacy)
    store = FileSessionStore(tmp_path)
    old = _old_unified_lock(flat)
    try:
        with pytest.raises(SessionInUse):
            anyio.run(store.delete, BACKEND, legacy.session_id)
        assert not store.path_of(BACKEND, legacy.session_id).with_suffix(".lock").exists()  # the first lock let go
    finally:
        os.close(old)
    with store._hold(BACKEND, legacy.session_id), pytest.raises(BlockingIOError):
        os.close(_old_unified_lock(flat))
    assert flat.exists()


@pytest.mark.e2e  # runs a real subprocess
def test_a_lease_on_a_legacy_session_held_by_another_process_excludes_both_layouts(tmp_path: Path) -> None:
    legacy = stored_session()
    flat = _flat(tmp_path, legacy)
    store = FileSessionStore(tmp_path)
    with lease_held_elsewhere(tmp_path, legacy.session_id) as holder:
        with pytest.raises(SessionInUse) as caught:
            anyio.run(store.delete, BACKEND, legacy.session_id)
        assert f"pid {holder.pid} on host {socket.gethostname()}" in caught.value.message
        with pytest.raises(BlockingIOError):
            os.close(_old_unified_lock(flat))  # an older unified is kept out too
    anyio.run(store.delete, BACKEND, legacy.session_id)  # the kernel let go of both locks
    assert not flat.exists()


# --- hostile entries in the backend's directory -----------------------------------------------------


def test_a_symlinked_shard_is_never_followed(tmp_path: Path, headers_read: list[Path]) -> None:
    root, elsewhere = tmp_path / "sessions", tmp_path / "elsewhere"
    store = FileSessionStore(root)
    mine = stored_session("cd000000-mine")
    anyio.run(store.save, mine)
    foreign = stored_session("ab000000-foreign")
    elsewhere.mkdir()
    (elsewhere / f"{foreign.session_id}.json").write_text(serialize(foreign))
    (root / BACKEND / "ab").symlink_to(elsewhere, target_is_directory=True)
    before = sorted(p.name for p in elsewhere.iterdir())

    assert [i.session_id for i in anyio.run(store.list_sessions, BACKEND)] == [mine.session_id]
    with pytest.raises(SessionNotFound):
        anyio.run(store.resolve, BACKEND, "ab000000")
    assert all(elsewhere not in p.parents and p.parent.name != "ab" for p in headers_read)
    with pytest.raises(SessionError, match="not a directory"):
        anyio.run(store.load, BACKEND, foreign.session_id)
    with pytest.raises(SessionError, match="not a directory"):
        anyio.run(store.save, stored_session("ab000000-new"))
    with pytest.raises(SessionError, match="not a directory"):
        anyio.run(store.delete, BACKEND, foreign.session_id)
    assert sorted(p.name for p in elsewhere.iterdir()) == before  # nothing written, locked or removed there


def test_names_that_are_no_id_links_and_directories_are_not_sessions(tmp_path: Path, headers_read: list[Path]) -> None:
    store = FileSessionStore(tmp_path)
    good = stored_session("ef000000-good")
    anyio.run(store.save, good)
    backend = tmp_path / BACKEND
    outside = tmp_path / "outside.json"
    outside.write_text(serialize(stored_session("0e000000-outside")))
    (backend / "..json").write_text(serialize(stored_session()))  # names that are no id
    (backend / "x y.json").write_text("{}")
    (backend / "..%2fx.json").write_text("{}")
    (backend / "ef" / "..json").write_text("{}")
    (backend / "0e000000-outside.json").symlink_to(outside)  # a link named like an id
    (backend / "ef" / "ef111111-link.json").symlink_to(outside)
    (backend / "ef222222-dir.json").mkdir()  # directories named like ids
    (backend / "ef333333-dir").mkdir()
    (backend / "ef" / "ef444444-dir.json").mkdir()
    elsewhere = serialize(stored_session("ab555555-elsewhere"))
    (backend / "ef" / "ab555555-elsewhere.json").write_text(elsewhere)  # wrong shard
    (backend / "EF").mkdir()  # not a shard name
    (backend / "EF" / "ef666666-upper.json").write_text(serialize(stored_session("ef666666-upper")))
    (backend / "ef" / f"{good.session_id}.lock").write_text("{}")  # lock and temp files
    (backend / "ef" / f".{good.session_id}.json.1.2.tmp").write_text("{}")
    (backend / "ef777777-x.lock").write_text("{}")

    listed = anyio.run(store.list_sessions, BACKEND)
    assert [(i.session_id, i.problem) for i in listed] == [(good.session_id, None)]
    assert headers_read == [store.path_of(BACKEND, good.session_id)]  # nothing else was opened
    assert anyio.run(store.resolve, BACKEND, "ef").session_id == good.session_id
    with pytest.raises(CorruptSession, match="symbolic link"):
        anyio.run(store.load, BACKEND, "0e000000-outside")  # loading it by its full id does not follow it either
    for ref in ("../x", "..", "0e000000", "ab555555", "ef666666"):
        with pytest.raises(SessionNotFound):
            anyio.run(store.resolve, BACKEND, ref)


def test_a_fifo_at_a_record_s_path_is_refused_not_waited_on(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = stored_session("ab000000-fifo")
    fifo = store.path_of(BACKEND, session.session_id)
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    with releasing_readers_of(fifo):
        with pytest.raises(CorruptSession, match="not a regular file"):
            anyio.run(store.load, BACKEND, session.session_id)
        with pytest.raises(CorruptSession, match="not a regular file"):
            anyio.run(store.save, session)  # a record it cannot read is not replaced
        assert anyio.run(store.list_sessions, BACKEND) == []  # a listing does not name it
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize("swapped_in", ["link", "fifo"])
def test_a_listed_record_swapped_before_its_read_is_reported_not_followed(tmp_path: Path, swapped_in: str) -> None:
    """A listing names regular files only, but an attacker can swap one between the listing and the
    read: the read opens without following a link or waiting on a FIFO, and checks what it opened."""
    store = FileSessionStore(tmp_path / "sessions")
    session = stored_session("ab000000-swapped", first_prompt="mine")
    anyio.run(store.save, session)
    path = store.path_of(BACKEND, session.session_id)
    foreign = tmp_path / "foreign.json"  # the same id, so following the link would list it as fine
    foreign.write_text(serialize(stored_session(session.session_id, first_prompt="foreign")))
    real = FileSessionStore._read_header

    def swapping(self: FileSessionStore, listed: Path) -> dict[str, object]:
        listed.unlink()
        if swapped_in == "link":
            listed.symlink_to(foreign)
        else:
            os.mkfifo(listed)
        return real(self, listed)

    with releasing_readers_of(path), pytest.MonkeyPatch.context() as patch:
        patch.setattr(FileSessionStore, "_read_header", swapping)
        [entry] = anyio.run(store.list_sessions, BACKEND)
    assert entry.session_id == session.session_id
    assert entry.first_prompt != "foreign"
    expected = "symbolic link" if swapped_in == "link" else "not a regular file"
    assert entry.problem is not None
    assert entry.problem.kind == "corrupt"
    assert expected in entry.problem.message
