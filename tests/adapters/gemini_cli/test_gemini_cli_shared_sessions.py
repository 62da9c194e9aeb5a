"""gemini-cli sessions through a shared SessionStore (docs/sessions.md, "Across workers"), on FakeAcp.

"Another worker" here is the same process with another HOME/GEMINI_CLI_HOME whose CLI home has
never seen the session; the two-process version on the real binary and the real PostgreSQL
server is tests/e2e/sessions/test_two_workers.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams, sessions
from unified._adapters.gemini_cli._chat_files import gemini_home, read_chat, session_files
from unified._adapters.gemini_cli._shared_sessions import CHAT_FILES, write_chat_files
from unified._execute import EventStream
from unified._sessions.stores import MemorySessionStore
from unified.errors import CorruptSession
from unified.events import ErrorEvent, Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.sessions import SessionStore, StoredSession
from unified.testing._fake_acp import FakeAcp, Finish, text

pytestmark = pytest.mark.anyio
BACKEND = "gemini-cli"


async def run(fake: FakeAcp, cwd: Path, store: SessionStore, prompt: str, **fields: Any) -> list[UnifiedEvent]:
    options = {"start_process": fake, "pool_size": 0}
    params = ExecuteParams(
        prompt=prompt, backend=BACKEND, cwd=cwd, backend_options=options, session_store=store, **fields
    )
    async with EventStream(params, strict=True) as stream:
        return [event async for event in stream]


def ids_of(events: list[UnifiedEvent]) -> tuple[str, str]:
    """The session id and short id a run announced."""
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.session_id
    assert started.short_id
    return started.session_id, started.short_id


def move_to_another_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    home = tmp_path / name
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    return home


def prompts_in(home: Path, session_id: str) -> list[str]:
    [path] = session_files(home / ".gemini", session_id)
    return [str(m["content"][0]["text"]) for m in read_chat(path).messages if m.get("type") == "user"]


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()


async def test_a_session_resumes_by_short_id_on_a_worker_that_never_saw_it(
    tmp_path: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemorySessionStore()
    fake = FakeAcp([text("first answer"), Finish()], [text("second answer"), Finish()])
    session_id, short = ids_of(await run(fake, cwd, store, "remember 42"))
    stored = await store.load(BACKEND, session_id)
    assert list(stored.state[CHAT_FILES]) == [p.name for p in session_files(gemini_home({}), session_id)]
    assert stored.first_prompt == "remember 42"

    worker_b = move_to_another_worker(tmp_path, monkeypatch, "worker-b")
    assert not (worker_b / ".gemini").exists()
    second = await run(fake, cwd, store, "what did I say?", resume=short)
    again = second[0]
    assert isinstance(again, SessionStarted)
    assert (again.session_id, again.resumed) == (session_id, True)
    result = second[-1]
    assert isinstance(result, Result)
    assert result.final_text == "second answer"
    assert prompts_in(worker_b, session_id) == ["remember 42", "what did I say?"]
    saved = (await store.load(BACKEND, session_id)).state[CHAT_FILES]
    assert "what did I say?" in "".join(saved.values())  # B's turn is in the store for the next worker


async def test_the_store_copy_replaces_an_older_local_one(
    tmp_path: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A, then B continues, then A again: A resumes B's version, not its own stale files."""
    store = MemorySessionStore()
    fake = FakeAcp([text("one"), Finish()], [text("two"), Finish()], [text("three"), Finish()])
    worker_a = move_to_another_worker(tmp_path, monkeypatch, "worker-a")
    session_id, short = ids_of(await run(fake, cwd, store, "first"))
    move_to_another_worker(tmp_path, monkeypatch, "worker-b")
    await run(fake, cwd, store, "second", resume=short)
    move_to_another_worker(tmp_path, monkeypatch, "worker-a")
    events = await run(fake, cwd, store, "third", resume=short)
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert prompts_in(worker_a, session_id) == ["first", "second", "third"]


async def test_a_resume_is_refused_while_another_worker_holds_the_session(cwd: Path) -> None:
    store = MemorySessionStore()
    fake = FakeAcp([text("one"), Finish()])
    session_id, short = ids_of(await run(fake, cwd, store, "first"))
    async with store.lease(BACKEND, session_id):
        events = await run(fake, cwd, store, "second", resume=short)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "session_in_use"
    assert len(fake.processes) == 1  # no process was started for the refused run


async def test_an_unreachable_store_fails_the_resume_without_a_local_fallback(
    cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemorySessionStore()
    fake = FakeAcp([text("one"), Finish()])
    session_id, short = ids_of(await run(fake, cwd, store, "first"))
    assert session_files(gemini_home({}), session_id)  # the local copy exists...
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", "postgresql://nobody@127.0.0.1:1/none")
    options = {"start_process": fake, "pool_size": 0}
    params = ExecuteParams(prompt="x", backend=BACKEND, cwd=cwd, backend_options=options, resume=short)
    async with EventStream(params, strict=True) as stream:
        events = [event async for event in stream]
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "session_store_unavailable"  # ...but the configured store decides
    assert "127.0.0.1:1" in error.message
    assert len(fake.processes) == 1


async def test_unified_sessions_lists_shows_and_deletes_a_session_only_the_store_has(
    tmp_path: Path, cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = MemorySessionStore()
    _session_id, short = ids_of(await run(FakeAcp([text("an answer"), Finish()]), cwd, store, "a question"))
    move_to_another_worker(tmp_path, monkeypatch, "worker-b")
    listing = await sessions.list_sessions(backend=BACKEND, store=store)
    assert [(s.short_id, s.first_prompt) for s in listing.sessions] == [(short, "a question")]
    shown = await sessions.show(short, backend=BACKEND, store=store)
    assert [m["type"] for m in shown["messages"]] == ["user", "gemini"]
    await sessions.delete(short, backend=BACKEND, store=store)
    assert await store.list_sessions(BACKEND) == []


def test_chat_files_from_the_store_cannot_name_a_path_outside_the_project(tmp_path: Path) -> None:
    home, cwd = tmp_path / "worker-b" / ".gemini", tmp_path / "project"
    session = StoredSession(backend=BACKEND, session_id="0123abcd-0000-4000-8000-000000000000")
    header = '{"sessionId": "0123abcd-0000-4000-8000-000000000000", "kind": "main"}\n'
    hostile = {
        "../../escape-0123abcd.jsonl": header,
        "session-2026-01-01T00-00-0123abcd.jsonl/../../x": header,
        "session-2026-01-01T00-00-ffffffff.jsonl": header,
    }
    for name, content in hostile.items():
        session.state = {CHAT_FILES: {name: content}}
        with pytest.raises(CorruptSession):
            write_chat_files(session, home, cwd)
    other = '{"sessionId": "0123abcd-9999-4000-8000-000000000000", "kind": "main"}\n'
    session.state = {CHAT_FILES: {"session-2026-01-01T00-00-0123abcd.jsonl": other}}
    with pytest.raises(CorruptSession):
        write_chat_files(session, home, cwd)
    assert not home.exists()
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("how", ["registered slug", "linked project dir"])
def test_the_store_copy_is_never_written_outside_the_cli_home(tmp_path: Path, how: str) -> None:
    """A projects.json entry that is a path, or a project directory that is a link, is refused, not followed."""
    home, cwd, outside = tmp_path / "worker-b" / ".gemini", tmp_path / "project", tmp_path / "outside"
    outside.mkdir()
    (home / "tmp").mkdir(parents=True)
    if how == "registered slug":
        slug = "../../../outside"
    else:
        slug = "project"
        (home / "tmp" / slug).symlink_to(outside)
    (home / "projects.json").write_text(json.dumps({"projects": {str(cwd): slug}}))
    session_id = "0123abcd-0000-4000-8000-000000000000"
    header = json.dumps({"sessionId": session_id, "kind": "main"}) + "\n"
    session = StoredSession(backend=BACKEND, session_id=session_id)
    session.state = {CHAT_FILES: {"session-2026-01-01T00-00-0123abcd.jsonl": header}}
    with pytest.raises(CorruptSession):
        write_chat_files(session, home, cwd)
    assert list(outside.rglob("*")) == []


async def test_a_store_that_refuses_the_save_gives_a_warning_not_a_lost_run(cwd: Path) -> None:
    class Refusing(MemorySessionStore):
        async def save(self, session: StoredSession) -> None:
            raise CorruptSession("the store refused it", hint="test")

    events = await run(FakeAcp([text("kept"), Finish()]), cwd, Refusing(), "first")
    warning = next(e for e in events if isinstance(e, WarningEvent))
    assert warning.code == "session_not_shared"
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "kept")
