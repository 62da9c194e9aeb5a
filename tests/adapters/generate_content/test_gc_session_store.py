"""The shared session store: atomic files, cheap listing, leases across processes, corrupt files kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from unified._errors import AmbiguousSession, CorruptSession, SessionError, SessionNotFound
from unified._internal.session_store import SessionStore, sessions_root
from unified.adapters.generate_content import create_session_locator
from unified.events import Usage


def test_root_is_under_the_user_data_dir(isolated_home: Path) -> None:
    assert sessions_root() == isolated_home / ".local" / "share" / "unified" / "sessions"


def test_save_list_load_round_trip(tmp_path: Path) -> None:
    store = SessionStore("generate-content", tmp_path)
    session = store.new(model="gemini-2.5-flash", cwd="/w", first_prompt="hello")
    session.state["contents"] = [{"role": "user", "parts": [{"text": "hello"}]}]
    session.usage = Usage(input_tokens=3, output_tokens=2)
    path = store.save(session)
    assert path.parent == tmp_path / "generate-content"
    assert json.loads(path.read_text())["header"]["short_id"] == session.short_id
    (info,) = store.list_sessions()
    assert (info.session_id, info.model, info.cwd, info.first_prompt) == (
        session.session_id,
        "gemini-2.5-flash",
        "/w",
        "hello",
    )
    assert info.extra["usage"]["input_tokens"] == 3
    loaded = store.load(session.short_id)
    assert loaded.state == session.state
    assert loaded.usage == session.usage
    assert not list(path.parent.glob("*.tmp"))


def test_resolve_by_prefix_and_ambiguity(tmp_path: Path) -> None:
    store = SessionStore("generate-content", tmp_path)
    for sid in ("abc11111-0000", "abc22222-0000"):
        session = store.new(model=None, cwd=None, first_prompt=sid)
        session.session_id = sid
        store.save(session)
    assert store.resolve("abc2").session_id == "abc22222-0000"
    with pytest.raises(AmbiguousSession):
        store.resolve("abc")
    with pytest.raises(SessionNotFound):
        store.resolve("zzz")


def test_corrupt_file_is_reported_skipped_and_kept(tmp_path: Path) -> None:
    reports: list[str] = []
    store = SessionStore("generate-content", tmp_path, on_corrupt=reports.append)
    good = store.new(model=None, cwd=None, first_prompt="ok")
    store.save(good)
    bad = store.directory / "0bad0000-feed.json"
    bad.write_text("{not json")
    assert [s.session_id for s in store.list_sessions()] == [good.session_id]
    assert len(reports) == 1
    assert str(bad) in reports[0]
    assert bad.exists()
    with pytest.raises(CorruptSession) as caught:
        store._read_document(bad)
    assert str(bad) in caught.value.message


def test_lease_excludes_another_process_and_is_taken_over_when_stale(tmp_path: Path) -> None:
    store = SessionStore("generate-content", tmp_path)
    session = store.new(model=None, cwd=None, first_prompt="x")
    store.save(session)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from unified._internal.session_store import SessionStore\n"
            f"s = SessionStore('generate-content', Path({str(tmp_path)!r}))\n"
            f"with s.lease({session.session_id!r}):\n    print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionError) as caught, store.lease(session.session_id):
            pass
        assert f"process {holder.pid}" in caught.value.message
        with pytest.raises(SessionError):
            store.delete(session.short_id)
    finally:
        holder.kill()
        holder.wait()
    with store.lease(session.session_id):  # the holder died without unlocking: its lease is stale
        pass
    assert store.delete(session.short_id).session_id == session.session_id
    assert store.list_sessions() == []


def test_locator_lists_shows_and_deletes() -> None:
    locator = create_session_locator()
    session = locator.store.new(model="m", cwd="/p", first_prompt="hi")
    session.state["contents"] = [{"role": "user", "parts": [{"text": "hi"}]}]
    locator.store.save(session)
    assert [s.short_id for s in locator.list_sessions(cwd="/p")] == [session.short_id]
    assert locator.list_sessions(cwd="/elsewhere") == []
    shown = locator.show(session.short_id)
    assert shown["contents"] == session.state["contents"]
    locator.delete(session.short_id)
    assert locator.list_sessions() == []


def test_data_dir_override(isolated_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path / "elsewhere"))
    assert sessions_root() == tmp_path / "elsewhere" / "sessions"


def test_resolve_reads_only_files_named_like_the_reference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SessionStore("generate-content", tmp_path)
    sessions = [store.new(model="m", cwd="/w", first_prompt=f"p{n}") for n in range(30)]
    for session in sessions:
        store.save(session)
    read: list[str] = []
    real = SessionStore._read_header

    def counting(self: SessionStore, path: Path) -> dict[str, object]:
        read.append(path.name)
        return real(self, path)

    monkeypatch.setattr(SessionStore, "_read_header", counting)
    target = sessions[7]
    assert store.resolve(target.short_id.upper()).session_id == target.session_id
    assert read == [f"{target.session_id}.json"]
    read.clear()
    assert store.resolve(target.session_id).session_id == target.session_id
    assert len(read) == 1
    with pytest.raises(SessionNotFound):
        store.resolve("zzzz")  # a miss lists everything to say what there is
    with pytest.raises(SessionNotFound):
        store.resolve("../x")
