"""The SessionStore protocol, run against both built-in implementations."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

import unified
from unified import SessionStore
from unified.errors import AmbiguousSession, SessionInUse, SessionNotFound
from unified.events import Usage
from unified.sessions import FileSessionStore, MemorySessionStore, SessionInfo, StoredSession, resolve_ref

pytestmark = pytest.mark.anyio

GC = "generate-content"
STORES: dict[str, Callable[[Path], SessionStore]] = {
    "file": lambda root: FileSessionStore(root),
    "memory": lambda root: MemorySessionStore(),
}


@pytest.fixture(params=list(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    return STORES[request.param](tmp_path / "sessions")


def _session(session_id: str | None = None, backend: str = GC, prompt: str = "hi") -> StoredSession:
    session = StoredSession.new(backend, model="m", cwd="/w", first_prompt=prompt)
    if session_id is not None:
        session.session_id = session_id
    return session


def test_both_implement_the_public_protocol(tmp_path: Path) -> None:
    for make in STORES.values():
        assert isinstance(make(tmp_path), SessionStore)
    assert unified.FileSessionStore is FileSessionStore
    assert unified.MemorySessionStore is MemorySessionStore


async def test_save_load_round_trip_is_a_copy(store: SessionStore) -> None:
    session = _session(prompt="hello")
    session.state["contents"] = [{"role": "user", "parts": [{"text": "hello"}]}]
    session.usage = Usage(input_tokens=7, output_tokens=3)
    session.turns = 2
    await store.save(session)
    loaded = await store.load(GC, session.session_id)
    assert (loaded.state, loaded.usage, loaded.turns, loaded.first_prompt) == (
        session.state,
        session.usage,
        2,
        "hello",
    )
    loaded.state["contents"].append("changed")
    assert (await store.load(GC, session.session_id)).state == session.state


async def test_resolve_by_full_short_prefix_any_case(store: SessionStore) -> None:
    for sid in ("abc11111-0000", "abc22222-0000", "fed00000-0000"):
        await store.save(_session(sid))
    assert (await store.resolve(GC, "ABC2")).session_id == "abc22222-0000"
    assert (await store.resolve(GC, "fed00000")).session_id == "fed00000-0000"
    assert (await store.resolve(GC, "abc11111-0000")).session_id == "abc11111-0000"
    with pytest.raises(AmbiguousSession) as ambiguous:
        await store.resolve(GC, "abc")
    assert ambiguous.value.details["candidates"] == ["abc11111-0000", "abc22222-0000"]
    with pytest.raises(SessionNotFound) as missing:
        await store.resolve(GC, "zzz")
    assert "fed00000" in missing.value.message  # a miss lists what there is
    with pytest.raises(SessionNotFound):
        await store.load(GC, "zzz00000-0000")


async def test_one_namespace_per_backend(store: SessionStore) -> None:
    await store.save(_session("aaaa0000-1", backend=GC))
    await store.save(_session("bbbb0000-1", backend="interactions"))
    assert [s.session_id for s in await store.list_sessions(GC)] == ["aaaa0000-1"]
    assert [s.session_id for s in await store.list_sessions("interactions")] == ["bbbb0000-1"]
    with pytest.raises(SessionNotFound):
        await store.resolve(GC, "bbbb")


async def test_list_is_newest_first(store: SessionStore) -> None:
    older, newer = _session(prompt="older"), _session(prompt="newer")
    await store.save(older)
    await store.save(newer)
    await store.save(older)  # saving again makes it the most recent
    assert [s.first_prompt for s in await store.list_sessions(GC)] == ["older", "newer"]


async def test_a_lease_is_exclusive_and_refuses_delete(store: SessionStore) -> None:
    session = _session()
    await store.save(session)
    async with store.lease(GC, session.session_id):
        with pytest.raises(SessionInUse) as caught:
            async with store.lease(GC, session.session_id):
                pass
        assert "in use by another run" in caught.value.message
        assert "wait for it to finish" in caught.value.message
        with pytest.raises(SessionInUse):
            await store.delete(GC, session.session_id)
    async with store.lease(GC, session.session_id):  # released on exit
        pass
    await store.delete(GC, session.session_id)
    assert await store.list_sessions(GC) == []
    with pytest.raises(SessionNotFound):
        await store.delete(GC, session.session_id)


async def test_a_lease_is_released_when_its_run_is_cancelled(store: SessionStore) -> None:
    session = _session()
    await store.save(session)
    entered = anyio.Event()

    async def hold() -> None:
        async with store.lease(GC, session.session_id):
            entered.set()
            await anyio.sleep_forever()

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        await entered.wait()
        tg.cancel_scope.cancel()
    async with store.lease(GC, session.session_id):
        pass


async def test_secrets_are_redacted_before_storing(store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-live-0123456789abcdef"
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    session = _session(prompt=f"key {secret}")
    session.state["contents"] = [{"text": f"GEMINI_API_KEY={secret}"}]
    await store.save(session)
    loaded = await store.load(GC, session.session_id)
    assert secret not in json.dumps(loaded.state)
    assert secret not in str(loaded.first_prompt)
    assert "[REDACTED]" in json.dumps(loaded.state)


async def test_a_third_party_store_is_accepted_by_execute_params() -> None:
    with pytest.raises(ValueError, match="SessionStore"):
        unified.ExecuteParams(prompt="x", session_store=object())
    assert isinstance(unified.ExecuteParams(prompt="x", session_store=MemorySessionStore()).session_store, SessionStore)


@pytest.mark.parametrize("new", [True, False])
async def test_only_a_new_sessions_announced_save_skips_the_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, new: bool
) -> None:
    """A new session's first record is visible at once and made durable by the next save; a resumed
    session's first save replaces a durable record, so it is fsynced like every other save."""
    import os

    from unified._sessions import stores

    store = FileSessionStore(tmp_path)
    session = StoredSession.new("scripted", model=None, cwd=None, first_prompt="hi")
    if not new:
        await store.save(session)
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    await stores.save_announced(store, session, new=new)
    assert bool(synced) is not new
    assert (await store.load("scripted", session.session_id)).first_prompt == "hi"


def test_an_unknown_ref_lists_each_recent_session_on_one_line() -> None:
    """A first prompt of several lines (an image's note under the question, a pasted file) took as many
    lines of the "recent sessions" of `--resume`'s error, each looking like a session of its own."""
    sessions = [
        SessionInfo(
            backend="b", session_id="1a000000-0000", short_id="1a000000", first_prompt="what is this\nimage note"
        ),
        SessionInfo(backend="b", session_id="2b000000-0000", short_id="2b000000", first_prompt="  two\r\n\tlines "),
    ]
    with pytest.raises(SessionNotFound) as caught:
        resolve_ref("zzz", sessions, "b")
    lines = caught.value.message.splitlines()
    assert lines[0] == "no b session matches 'zzz'; recent sessions:"
    assert [line.split() for line in lines[1:]] == [
        ["1a000000", "what", "is", "this", "image", "note"],
        ["2b000000", "two", "lines"],
    ]
