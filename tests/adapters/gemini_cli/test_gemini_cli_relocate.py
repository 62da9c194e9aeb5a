"""A gemini-cli session resumed from another directory moves to that directory's project (`_relocate.py`).

Node-free: the runs use `FakeAcp`; the moves are checked file by file. Failures are injected between the
steps of a move (the tests run as root, so an unwritable directory would not stop a write): every file is
then whole under its old name, its new one or both, and the session resumes from either directory.
The real binary's side is tests/e2e/gemini_cli/test_gemini_cli_resume_elsewhere.py.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.gemini_cli.test_gemini_cli_run import one, result_of, run, write_script
from unified import sessions
from unified._adapters.gemini_cli._chat_files import ChatFiles, read_chat, session_files
from unified._adapters.gemini_cli._relocate import gather, session_lease
from unified.errors import CorruptSession, SessionError, SessionInUse
from unified.events import ErrorEvent, SessionStarted, UserInputRequest, UserInputResponse, WarningEvent
from unified.testing._fake_acp import FakeAcp, Finish, text

pytestmark = pytest.mark.anyio

SESSION = "5e55e55e-1111-4222-8333-444455556666"
SHORT = SESSION[:8]


@pytest.fixture
def home(isolated_home: Path) -> Path:
    return isolated_home / ".gemini"


@pytest.fixture
def project_a(tmp_path: Path) -> Path:
    path = tmp_path / "a"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def project_b(tmp_path: Path) -> Path:
    path = tmp_path / "b"
    path.mkdir()
    return path.resolve()


def _lines(*records: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def filed(home: Path, root: Path, *, session_id: str = SESSION, subagents: int = 1, slug: str = "a") -> Path:
    """A session of project `root` as the CLI 0.61 files it (registered, marked), with subagent chats."""
    chats = home / "tmp" / slug / "chats"
    chats.mkdir(parents=True)
    (home / "tmp" / slug / ".project_root").write_text(str(root))
    registry = home / "projects.json"
    projects = json.loads(registry.read_text())["projects"] if registry.exists() else {}
    registry.write_text(json.dumps({"projects": {**projects, str(root): slug}}))
    header = {"sessionId": session_id, "projectHash": hashlib.sha256(str(root).encode()).hexdigest()}
    path = chats / f"session-2026-11-29T10-00-{session_id[:8]}.jsonl"
    path.write_bytes(
        _lines(
            {**header, "startTime": "2026-11-29T10:00:00Z", "lastUpdated": "2026-11-29T10:01:00Z", "kind": "main"},
            {"id": "u1", "type": "user", "content": [{"text": "remember 42"}]},
            {"id": "g1", "type": "gemini", "content": "noted", "model": "gemini-2.5-flash"},
        )
    )
    for number in range(subagents):
        child = chats / session_id / f"agent-{number}.jsonl"
        child.parent.mkdir(exist_ok=True)
        child.write_bytes(_lines({"sessionId": f"agent-{number}", "projectHash": "x", "kind": "subagent"}))
    return path


def tree(directory: Path) -> dict[str, bytes]:
    """Every regular file under `directory` (not following links): relative path -> bytes."""
    found = {}
    for root, _, names in os.walk(directory):
        for name in names:
            path = Path(root) / name
            if path.is_file() and not path.is_symlink():
                found[str(path.relative_to(directory))] = path.read_bytes()
    return found


def session_bytes(home: Path) -> dict[str, bytes]:
    """The session's files by name (wherever they are): what must survive every move byte for byte."""
    return {Path(k).name: v for k, v in tree(home / "tmp").items() if SHORT in k or SESSION in k}


def locate(root: Path) -> tuple[Any, bool]:
    return ChatFiles().locate(SHORT, str(root))


# --- the move itself --------------------------------------------------------------------------------


def test_a_session_of_another_project_moves_whole_into_the_project_of_cwd(
    home: Path, project_a: Path, project_b: Path
) -> None:
    path = filed(home, project_a, subagents=2)
    before = session_bytes(home)
    info, in_project = locate(project_b)
    assert (info.cwd, in_project) == (str(project_a), False)
    moved = gather(home, info, project_b, in_project=in_project)
    assert moved is not None
    assert moved.main
    chats = home / "tmp" / "b" / "chats"
    assert moved.target == chats
    assert sorted(p.relative_to(chats).as_posix() for p in moved.files) == [
        f"{SESSION}/agent-0.jsonl",
        f"{SESSION}/agent-1.jsonl",
        path.name,
    ]
    assert session_bytes(home) == before  # byte for byte, nothing rewritten
    assert not path.exists()
    assert not (path.parent / SESSION).exists()
    assert [p.parent for p in session_files(home, SESSION)] == [chats]
    # The project of b was claimed as the CLI claims one (projects.json, .project_root).
    assert json.loads((home / "projects.json").read_text())["projects"][str(project_b)] == "b"
    assert (home / "tmp" / "b" / ".project_root").read_text() == str(project_b)
    # Now b's; resolved from a, it is found in b (and would move back).
    assert locate(project_b)[1] is True
    assert (locate(project_a)[0].cwd, locate(project_a)[1]) == (str(project_b), False)
    message = moved.message(project_b)
    assert str(project_a) in message
    assert str(project_b) in message


def test_a_name_taken_in_the_new_project_is_never_replaced(home: Path, project_a: Path, project_b: Path) -> None:
    path = filed(home, project_a)
    other = filed(home, project_b, session_id=SHORT + "-ffff-4fff-8fff-ffffffffffff", subagents=0, slug="b")
    assert other.name == path.name  # same first 8 characters, same minute
    taken = other.read_bytes()
    info, in_project = ChatFiles().locate(SESSION, str(project_b))  # the short id would be ambiguous in b
    assert info.session_id == SESSION
    moved = gather(home, info, project_b, in_project=in_project)
    assert moved is not None
    assert other.read_bytes() == taken
    main = next(p for p in moved.files if p.parent.name == "chats")
    assert main.name == f"session-2026-11-29T09-59-{SHORT}.jsonl"  # the latest earlier free minute
    assert read_chat(main).session_id == SESSION


def test_a_resume_in_its_own_project_moves_nothing(home: Path, project_a: Path) -> None:
    filed(home, project_a)
    before = tree(home)
    info, in_project = locate(project_a)
    assert in_project
    assert gather(home, info, project_a, in_project=True) is None
    assert tree(home) == before


# --- crash safety -------------------------------------------------------------------------------------


def _fail_on(monkeypatch: pytest.MonkeyPatch, name: str, when: Any) -> None:
    """`os.<name>` raises (as a full disk or a crash would stop it) for the calls `when(path)` picks."""
    real = getattr(os, name)

    def failing(*args: Any, **kwargs: Any) -> Any:
        if when(Path(args[0])):
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, failing)  # `_relocate` calls os.link / os.unlink by attribute


def test_a_failed_link_of_the_main_file_leaves_the_session_whole_where_it_was(
    home: Path, project_a: Path, project_b: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The subagent chats moved, then the main file could not: the session is still a's, whole; the next
    resume (from a) brings the subagent chats back, one from b finishes the move."""
    path = filed(home, project_a)
    before = session_bytes(home)
    with monkeypatch.context() as patch:
        _fail_on(patch, "link", lambda p: p.name.startswith("session-"))
        info, in_project = locate(project_b)
        with pytest.raises(SessionError, match="nothing was lost") as caught:
            gather(home, info, project_b, in_project=in_project)
    assert type(caught.value) is SessionError
    assert session_bytes(home) == before
    assert read_chat(path).messages[0]["id"] == "u1"
    assert (home / "tmp" / "b" / "chats" / SESSION / "agent-0.jsonl").exists()  # it had moved
    info, in_project = locate(project_a)  # still a's
    assert in_project
    again = gather(home, info, project_a, in_project=True)
    assert again is not None
    assert not again.main
    assert (path.parent / SESSION / "agent-0.jsonl").exists()
    assert not (home / "tmp" / "b" / "chats" / SESSION).exists()
    assert session_bytes(home) == before


def test_a_crash_between_link_and_unlink_leaves_one_session_under_two_names(
    home: Path, project_a: Path, project_b: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = filed(home, project_a, subagents=0)
    content = path.read_bytes()
    with monkeypatch.context() as patch:
        _fail_on(patch, "unlink", lambda p: p == path)
        info, in_project = locate(project_b)
        with pytest.raises(SessionError):
            gather(home, info, project_b, in_project=in_project)
    [new] = [p for p in session_files(home, SESSION) if p != path]
    assert path.read_bytes() == new.read_bytes() == content
    assert os.path.samefile(path, new)
    # One session meanwhile, resolvable from both directories.
    assert [s.short_id for s in ChatFiles().list_sessions()] == [SHORT]
    assert locate(project_a)[0].path == str(path)
    assert locate(project_b)[0].path == str(new)
    # The next resume (from b) removes the old name only: the same file stays, whole.
    info, in_project = locate(project_b)
    assert in_project
    gather(home, info, project_b, in_project=True)
    assert session_files(home, SESSION) == [new]
    assert new.read_bytes() == content


def test_the_old_name_left_by_a_crash_goes_when_it_resumes_from_the_old_project_too(
    home: Path, project_a: Path, project_b: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = filed(home, project_a, subagents=0)
    with monkeypatch.context() as patch:
        _fail_on(patch, "unlink", lambda p: p == path)
        info, in_project = locate(project_b)
        with pytest.raises(SessionError):
            gather(home, info, project_b, in_project=in_project)
    info, in_project = locate(project_a)
    gather(home, info, project_a, in_project=in_project)
    assert session_files(home, SESSION) == [path]  # a's again, under one name: no stale copy in b


# --- runs (FakeAcp) ---------------------------------------------------------------------------------


async def test_resume_from_another_directory_continues_there_and_says_so(
    home: Path, project_a: Path, project_b: Path
) -> None:
    fake = FakeAcp([text("first"), Finish()], [text("second"), Finish()], [text("third"), Finish()])
    first = one(await run(fake, project_a, prompt="remember 42"), SessionStarted)
    assert first.short_id is not None
    events = await run(fake, project_b, prompt="what was it?", resume=first.short_id)
    assert result_of(events).status == "success", result_of(events).error
    started = one(events, SessionStarted)
    assert (started.session_id, started.resumed, started.cwd) == (first.session_id, True, str(project_b))
    warning = one(events, WarningEvent)
    assert warning.code == "session_moved"
    # FakeAcp files a session as older CLIs did (tmp/<sha256 of the root>/), which names no root: the warning
    # names the directory the session came from (with the 0.61 binary, the root: the e2e test).
    assert str(home / "tmp" / hashlib.sha256(str(project_a).encode()).hexdigest() / "chats") in warning.message
    assert str(project_b) in warning.message
    assert events.index(warning) < events.index(started)
    load = next(m for m in fake.received if m.get("method") == "session/load")
    assert load["params"]["cwd"] == str(project_b)
    listing = await sessions.list_sessions(backend="gemini-cli")
    assert [(s.short_id, s.cwd) for s in listing.sessions] == [(first.short_id, str(project_b))]
    # From b again: it is b's now, no move, no warning.
    again = await run(fake, project_b, prompt="sure?", resume=first.short_id)
    assert result_of(again).final_text == "third"
    assert not [e for e in again if isinstance(e, WarningEvent)]
    [path] = session_files(home, str(first.session_id))
    assert ChatFiles().locate(first.short_id, str(project_b)) == (ChatFiles().resolve(first.short_id), True)
    assert path.parent.parent.name == "b"


async def test_a_session_held_by_a_run_is_not_moved(home: Path, project_a: Path, project_b: Path) -> None:
    path = filed(home, project_a)
    before = tree(home / "tmp")
    fake = FakeAcp([text("never"), Finish()])
    async with session_lease(home, SESSION):  # what a run continuing it in a holds
        events = await run(fake, project_b, prompt="again", resume=SHORT)
    error = one(events, ErrorEvent)
    assert error.code == "session_in_use"
    assert tree(home / "tmp") == before
    assert path.exists()
    assert fake.processes == []


async def test_a_new_session_is_held_while_its_run_lasts(project_a: Path, project_b: Path) -> None:
    """A resume from elsewhere while the first run still writes the session gets session_in_use."""
    seen: list[list[Any]] = []

    async def resume_meanwhile(request: UserInputRequest) -> UserInputResponse:
        assert request.session_id is not None
        seen.append(await run(FakeAcp([text("x"), Finish()]), project_b, prompt="b", resume=request.session_id))
        return UserInputResponse.deny()

    events = await run(FakeAcp(write_script(project_a)), project_a, prompt="a", on_user_input=resume_meanwhile)
    assert result_of(events).status == "success"
    assert one(seen[0], ErrorEvent).code == "session_in_use"


async def test_a_session_held_by_a_run_is_not_deleted(home: Path, project_a: Path) -> None:
    """`unified sessions delete` is refused while a run holds the session (as on every backend), then works."""
    path = filed(home, project_a)
    async with session_lease(home, SESSION):  # what a run continuing it holds
        with pytest.raises(SessionInUse):
            await sessions.delete(SHORT)
        assert path.exists()
    await sessions.delete(SHORT)
    assert not path.exists()


# --- hostile input ---------------------------------------------------------------------------------


async def _resume_from_b(project_b: Path) -> ErrorEvent:
    fake = FakeAcp([text("never"), Finish()])
    events = await run(fake, project_b, prompt="again", resume=SHORT)
    assert fake.processes == []
    error: ErrorEvent = one(events, ErrorEvent)
    return error


async def test_a_header_whose_session_id_is_a_path_is_refused(home: Path, project_a: Path, project_b: Path) -> None:
    path = filed(home, project_a, subagents=0)
    lying = path.read_bytes().replace(SESSION.encode(), f"{SHORT}/../../../escape".encode(), 1)
    path.write_bytes(lying)
    error = await _resume_from_b(project_b)
    assert error.code == "corrupt_session"
    assert path.read_bytes() == lying
    assert not (home / "tmp" / "b").exists()
    assert not list(home.parent.rglob("escape*"))


async def test_a_lying_project_hash_changes_nothing(home: Path, project_a: Path, project_b: Path) -> None:
    """The header's projectHash is not what places a session (the CLI does not check it either)."""
    path = filed(home, project_a, subagents=0)
    lying = path.read_bytes().replace(
        hashlib.sha256(str(project_a).encode()).hexdigest().encode(), b"../../../../tmp/x", 1
    )
    path.write_bytes(lying)
    events = await run(FakeAcp([text("ok"), Finish()]), project_b, prompt="again", resume=SHORT)
    assert result_of(events).status == "success"
    [moved] = session_files(home, SESSION)
    assert moved.parent == home / "tmp" / "b" / "chats"
    assert moved.read_bytes().startswith(lying)


@pytest.mark.parametrize("link", ["chats", "file", "subagents"])
async def test_a_linked_chats_dir_or_file_is_not_followed(
    home: Path, project_a: Path, project_b: Path, tmp_path: Path, link: str
) -> None:
    path = filed(home, project_a)
    outside = tmp_path / "outside"
    outside.mkdir()
    if link == "chats":
        (path.parent).rename(outside / "chats")
        path.parent.symlink_to(outside / "chats")
    elif link == "file":
        path.rename(outside / path.name)
        path.symlink_to(outside / path.name)
    else:
        (path.parent / SESSION).rename(outside / SESSION)
        (path.parent / SESSION).symlink_to(outside / SESSION)
    before_outside, before_home = tree(outside), tree(home / "tmp")
    error = await _resume_from_b(project_b)
    assert error.code == "corrupt_session"
    assert "symbolic link" in error.message
    assert tree(outside) == before_outside
    assert tree(home / "tmp") == before_home
    linked = {"chats": path.parent, "file": path, "subagents": path.parent / SESSION}[link]
    assert linked.is_symlink()


@pytest.mark.parametrize("how", ["registered slug", "linked project dir"])
async def test_the_new_project_cannot_lead_outside_the_home(
    home: Path, project_a: Path, project_b: Path, tmp_path: Path, how: str
) -> None:
    path = filed(home, project_a)
    outside = tmp_path / "outside"
    outside.mkdir()
    registry = home / "projects.json"
    projects = json.loads(registry.read_text())["projects"]
    if how == "registered slug":
        projects[str(project_b)] = "../../../outside"
    else:
        projects[str(project_b)] = "b"
        (home / "tmp" / "b").symlink_to(outside)
    registry.write_text(json.dumps({"projects": projects}))
    error = await _resume_from_b(project_b)
    assert error.code == "corrupt_session"
    assert tree(outside) == {}
    assert path.exists()
    assert (path.parent / SESSION / "agent-0.jsonl").exists()


async def test_a_chat_file_with_damaged_lines_moves_byte_for_byte(home: Path, project_a: Path, project_b: Path) -> None:
    path = filed(home, project_a, subagents=0)
    damaged = path.read_bytes() + b'{not json\n{"id": "cut", "type\n'
    path.write_bytes(damaged)
    events = await run(FakeAcp([text("ok"), Finish()]), project_b, prompt="again", resume=SHORT)
    assert result_of(events).status == "success", result_of(events).error
    [moved] = session_files(home, SESSION)
    assert moved.read_bytes().startswith(damaged)


def test_a_move_refused_for_a_link_changes_nothing(home: Path, project_a: Path, project_b: Path) -> None:
    path = filed(home, project_a)
    (path.parent / SESSION / "agent-0.jsonl").unlink()
    (path.parent / SESSION / "agent-0.jsonl").symlink_to("/etc/hostname")
    before = tree(home)
    info, in_project = locate(project_b)
    with pytest.raises(CorruptSession, match="symbolic link"):
        gather(home, info, project_b, in_project=in_project)
    assert tree(home) == before
    assert not (home / "tmp" / "b").exists()


async def test_a_session_moved_by_the_run_that_held_it_is_found_again_once_leased(
    home: Path, project_a: Path, project_b: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the look-up and the lease another run (from c) held the session and moved it: the resume from b
    looks again under the lease and moves it from c, not from where it first saw it."""
    filed(home, project_a, subagents=0)
    project_c = (tmp_path / "c").resolve()
    project_c.mkdir()
    real_lease = session_lease

    def lease_after_a_move_elsewhere(gemini: Path, session_id: str) -> Any:
        info, in_project = ChatFiles().locate(session_id, str(project_c))
        gather(gemini, info, project_c, in_project=in_project)  # what the other run did before releasing it
        return real_lease(gemini, session_id)

    monkeypatch.setattr("unified._adapters.gemini_cli._backend.session_lease", lease_after_a_move_elsewhere)
    events = await run(FakeAcp([text("ok"), Finish()]), project_b, prompt="again", resume=SHORT)
    assert result_of(events).status == "success", result_of(events).error
    assert str(project_c) in one(events, WarningEvent).message
    [path] = session_files(home, SESSION)
    assert path.parent.parent.name == "b"


async def test_an_unreadable_chat_file_named_for_the_id_is_corrupt_session_and_kept(
    home: Path, project_a: Path, project_b: Path
) -> None:
    path = filed(home, project_a, subagents=0)
    damaged = b"{this is no header\n" + path.read_bytes()
    path.write_bytes(damaged)
    before = tree(home)
    error = await _resume_from_b(project_b)
    assert error.code == "corrupt_session"
    assert str(path) in error.message
    assert tree(home) == before
