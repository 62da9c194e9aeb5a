"""The file session store as generate-content uses it: atomic files, cheap listing, leases, the locator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unified._adapters.generate_content import BACKEND, create_session_locator
from unified._sessions.stores import FileSessionStore, sessions_root
from unified.errors import AmbiguousSession, CorruptSession, SessionInUse, SessionNotFound
from unified.events import Usage
from unified.sessions import StoredSession

pytestmark = pytest.mark.anyio


def _new(first_prompt: str = "x", cwd: str | None = None) -> StoredSession:
    return StoredSession.new(BACKEND, model="gemini-2.5-flash", cwd=cwd, first_prompt=first_prompt)


def test_root_is_under_the_user_data_dir(isolated_home: Path) -> None:
    assert sessions_root() == isolated_home / ".local" / "share" / "unified" / "sessions"


async def test_save_list_load_round_trip(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = _new("hello", "/w")
    session.state["contents"] = [{"role": "user", "parts": [{"text": "hello"}]}]
    session.usage = Usage(input_tokens=3, output_tokens=2)
    await store.save(session)
    path = store.path_of(BACKEND, session.session_id)
    assert path == tmp_path / "generate-content" / session.session_id[:2] / f"{session.session_id}.json"
    assert json.loads(path.read_text())["header"]["short_id"] == session.short_id
    assert path.stat().st_mode & 0o077 == 0  # conversations are private to the user
    (info,) = await store.list_sessions(BACKEND)
    assert (info.session_id, info.model, info.cwd, info.first_prompt) == (
        session.session_id,
        "gemini-2.5-flash",
        "/w",
        "hello",
    )
    assert info.extra["usage"]["input_tokens"] == 3
    loaded = await store.load(BACKEND, (await store.resolve(BACKEND, session.short_id)).session_id)
    assert loaded.state == session.state
    assert loaded.usage == session.usage
    assert not list(path.parent.glob("*.tmp"))


async def test_resolve_by_prefix_and_ambiguity(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    for sid in ("abc11111-0000", "abc22222-0000"):
        session = _new(sid)
        session.session_id = sid
        await store.save(session)
    assert (await store.resolve(BACKEND, "abc2")).session_id == "abc22222-0000"
    with pytest.raises(AmbiguousSession):
        await store.resolve(BACKEND, "abc")
    with pytest.raises(SessionNotFound):
        await store.resolve(BACKEND, "zzz")


async def test_corrupt_file_is_listed_as_such_and_kept(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    good = _new("ok")
    await store.save(good)
    bad = tmp_path / BACKEND / "0bad0000-feed.json"
    bad.write_text("{not json")
    listed = await store.list_sessions(BACKEND)
    assert [s.session_id for s in listed if s.problem is None] == [good.session_id]
    (broken,) = [s for s in listed if s.problem is not None]
    assert broken.problem is not None
    assert broken.problem.kind == "corrupt"
    assert str(bad) in broken.problem.message
    assert bad.read_text() == "{not json"
    with pytest.raises(CorruptSession) as caught:
        await store.load(BACKEND, "0bad0000-feed")
    assert str(bad) in caught.value.message


async def test_a_held_lease_refuses_delete(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = _new()
    await store.save(session)
    async with store.lease(BACKEND, session.session_id):
        with pytest.raises(SessionInUse):
            await store.delete(BACKEND, session.session_id)
    await store.delete(BACKEND, session.session_id)
    assert await store.list_sessions(BACKEND) == []
    assert [p for p in (tmp_path / BACKEND).rglob("*") if not p.is_dir()] == []  # no lock file left behind


async def test_locator_lists_shows_and_deletes() -> None:
    locator = create_session_locator()
    session = _new("hi", "/p")
    session.state["contents"] = [{"role": "user", "parts": [{"text": "hi"}]}]
    await locator.store.save(session)
    assert [s.short_id for s in await locator.list_sessions(cwd="/p")] == [session.short_id]
    assert await locator.list_sessions(cwd="/elsewhere") == []
    shown = await locator.show(session.short_id)
    assert shown["contents"] == session.state["contents"]
    await locator.delete(session.short_id)
    assert await locator.list_sessions() == []


def test_data_dir_override(isolated_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path / "elsewhere"))
    assert sessions_root() == tmp_path / "elsewhere" / "sessions"
    assert FileSessionStore().root == tmp_path / "elsewhere" / "sessions"


def test_the_root_follows_the_environment_it_is_read_from(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The root is worked out once per value of what it depends on: each change is seen at once."""
    default = isolated_home / ".local" / "share" / "unified" / "sessions"
    assert sessions_root() == default
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert sessions_root() == tmp_path / "xdg" / "unified" / "sessions"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert sessions_root() == tmp_path / "home" / ".local" / "share" / "unified" / "sessions"
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path / "data"))
    assert sessions_root() == tmp_path / "data" / "sessions"
    monkeypatch.setenv("HOME", str(isolated_home))
    monkeypatch.delenv("UNIFIED_DATA_DIR")
    assert sessions_root() == default


async def test_resolve_reads_only_files_named_like_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path)
    sessions = [_new(f"p{n}", "/w") for n in range(30)]
    for session in sessions:
        await store.save(session)
    read: list[str] = []
    real = FileSessionStore._read_header

    def counting(self: FileSessionStore, path: Path) -> dict[str, object]:
        read.append(path.name)
        return real(self, path)

    monkeypatch.setattr(FileSessionStore, "_read_header", counting)
    target = sessions[7]
    assert (await store.resolve(BACKEND, target.short_id.upper())).session_id == target.session_id
    assert read == [f"{target.session_id}.json"]
    read.clear()
    assert (await store.resolve(BACKEND, target.session_id)).session_id == target.session_id
    assert len(read) == 1
    with pytest.raises(SessionNotFound):
        await store.resolve(BACKEND, "zzzz")  # a miss lists everything to say what there is
    with pytest.raises(SessionNotFound):
        await store.resolve(BACKEND, "../x")
