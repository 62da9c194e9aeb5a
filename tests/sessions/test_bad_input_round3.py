"""Sessions, stores, resume and conversations under bad input, round 3.

Each case says what happened before the fix it proves:
- a save killed between writing its temporary file and renaming it left `.<id>.json.<pid>.<token>.tmp` in the
  store for good (nothing ever removed one); now `list` and `resolve` remove those untouched for an hour,
  and nothing else (a live writer's, a record, a lock, a link);
- a save whose temporary file (or directory) vanished under it raised an untyped FileNotFoundError (a run's
  `internal_error`); now `SessionStoreUnavailable`, the record kept;
- a short id two sessions share: the error listed that same short id twice, so the user could not tell
  which characters to add; now each candidate's whole id;
- a resumed session whose state the backend cannot read: `internal_error` (pydantic's ValidationError); now
  `corrupt_session`, as `export` said;
- a record (or a CLI's own session file) holding a lone surrogate escaped alone (`\\ud800`): `unified sessions
  list` and `export` exited 70, a resume ended `internal_error`; now read as U+FFFD, as unified reads all text;
- a session's first prompt holding ESC sequences reached the terminal raw from `unified sessions list`;
- a store whose directory is a file: listed as empty ("no sessions yet"); now `SessionStoreUnavailable`;
- a history whose user turn holds an image of a type Anthropic or OpenAI refuse (`application/pdf`,
  `image/svg+xml`) continued on claude-code or codex: written as an image block (HTTP 400 on every turn);
  codex's retry dropped it without a word; now a text note saying what it was, and a warning;
- `file:///srv/my%20store` made a directory named `my%20store`; now it is `/srv/my store`, as RFC 8089 and
  `urllib.request.url2pathname` read it; a query, a fragment, `%00` or non-UTF-8 bytes are refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
import typer
from typer.testing import CliRunner

from tests.sessions.records import ATTACHMENT_DATA, BACKEND, stored_session, with_attachments
from unified import ExecuteParams
from unified._cli import main as cli
from unified._sessions import stores
from unified._sessions.stores import FileSessionStore, MemorySessionStore
from unified.conversations import Conversation, ImagePart, TextPart, UserTurn
from unified.errors import (
    AmbiguousSession,
    ConfigurationError,
    CorruptSession,
    SessionNotFound,
    SessionStoreUnavailable,
)
from unified.sessions import StoredSession


def _dead_save(root: Path, session: StoredSession) -> Path:
    """The temporary file a save of `session` killed before its rename left in the store at `root`, older than a
    live save's could be."""
    dead = root / BACKEND / session.session_id[:2] / f".{session.session_id}.json.7.12345678.tmp"
    dead.write_text("{")
    return _aged(dead, stores.STALE_TEMPORARY_SECONDS + 1)


def _aged(path: Path, seconds: float) -> Path:
    """`path`, its modification time set `seconds` before its own current one (no clock read by the test)."""
    status = os.lstat(path)
    os.utime(path, (status.st_atime - seconds, status.st_mtime - seconds), follow_symlinks=False)
    return path


# --- temporary files of a save that died -----------------------------------------------------------


def test_a_dead_save_s_temporary_files_are_swept_and_nothing_else(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    kept = stored_session("ab000000-kept")
    anyio.run(store.save, kept)
    shard = tmp_path / BACKEND / "ab"
    backend = tmp_path / BACKEND
    old = stores.STALE_TEMPORARY_SECONDS + 60
    dead = [  # what a killed save of this unified, and of older ones, left
        shard / f".{kept.session_id}.json.4242.0a1b2c3d.tmp",
        shard / ".ab111111-other.json.17.139872634.tmp",
        backend / ".ab222222-flat.json.99.tmp",
    ]
    for path in dead:
        path.write_text('{"header": ')
        _aged(path, old)
    live = shard / f".{kept.session_id}.json.4243.deadbeef.tmp"  # a save writing now
    live.write_text("{")
    record = _aged(store.path_of(BACKEND, kept.session_id), old)
    lock = shard / f"{kept.session_id}.lock"
    lock.write_text("{}")
    _aged(lock, old)
    link = shard / f".{kept.session_id}.json.1.00000000.tmp"
    link.symlink_to(record)
    _aged(link, old)
    lookalikes = [shard / f".{kept.session_id}.json.tmp.bak", shard / f"{kept.session_id}.json.1.2.tmp"]
    for path in lookalikes:
        path.write_text("mine")
        _aged(path, old)

    listed = anyio.run(store.list_sessions, BACKEND)

    assert [i.session_id for i in listed] == [kept.session_id]
    assert [p for p in dead if os.path.lexists(p)] == []
    assert live.read_text() == "{"
    assert os.path.islink(link)
    assert lock.read_text() == "{}"
    assert all(p.read_text() == "mine" for p in lookalikes)
    assert anyio.run(store.load, BACKEND, kept.session_id).state == kept.state


def test_a_resolve_sweeps_the_shard_it_lists(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    kept = stored_session("cd000000-kept")
    anyio.run(store.save, kept)
    dead = _dead_save(tmp_path, kept)
    assert anyio.run(store.resolve, BACKEND, "cd000000").session_id == kept.session_id
    assert not dead.exists()


def test_a_sweep_on_a_read_only_store_keeps_the_file_and_lists(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileSessionStore(tmp_path)
    kept = stored_session("ef000000-kept")
    anyio.run(store.save, kept)
    dead = _dead_save(tmp_path, kept)

    def read_only(path: object) -> None:
        raise OSError(30, "Read-only file system", str(path))

    monkeypatch.setattr(os, "unlink", read_only)
    assert [i.session_id for i in anyio.run(store.list_sessions, BACKEND)] == [kept.session_id]
    assert dead.exists()


def test_a_save_whose_temporary_file_vanished_is_a_store_failure_and_keeps_the_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path)
    session = stored_session("ab000000-save")
    anyio.run(store.save, session)
    before = store.path_of(BACKEND, session.session_id).read_bytes()
    real = os.replace

    def swept_first(source: str | Path, target: str | Path) -> None:
        os.unlink(source)  # a sweep took it (a save stalled an hour), or the directory went
        real(source, target)

    monkeypatch.setattr(os, "replace", swept_first)
    session.state["contents"].append({"role": "model", "parts": [{"text": "lost?"}]})
    with pytest.raises(SessionStoreUnavailable, match="cannot be written") as caught:
        anyio.run(store.save, session)
    assert caught.value.code == "session_store_unavailable"
    monkeypatch.setattr(os, "replace", real)
    assert store.path_of(BACKEND, session.session_id).read_bytes() == before
    assert [p.name for p in store.path_of(BACKEND, session.session_id).parent.iterdir()] == [
        f"{session.session_id}.json"
    ]


# --- file:// store URLs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelled", "meant"),
    [
        ("my%20store", "my store"),
        ("caf%C3%A9", "café"),
        ("a%2Fb", "a/b"),
        ("100%25", "100%"),
        ("plain", "plain"),
    ],
)
def test_a_file_store_url_is_percent_decoded(spelled: str, meant: str, tmp_path: Path) -> None:
    from unified._sessions.config import store_from_url

    for url in (f"file://{tmp_path}/{spelled}", f"file://localhost{tmp_path}/{spelled}"):
        store = store_from_url(url)
        assert isinstance(store, FileSessionStore)
        assert store.root == tmp_path / meant


def test_a_percent_encoded_file_store_url_saves_where_it_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from unified._sessions.config import default_store

    (tmp_path / "stores").mkdir()
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", f"file://{tmp_path}/stores/my%20store")
    store = default_store()
    anyio.run(store.save, stored_session("ab000000-here"))
    assert sorted(p.name for p in (tmp_path / "stores").iterdir()) == ["my store"]


@pytest.mark.parametrize(
    ("tail", "why"),
    [
        ("/x?y=1", "query or a fragment"),
        ("/x#top", "query or a fragment"),
        ("/x%00y", "NUL byte"),
        ("/x%FF", "not UTF-8"),
        ("other-host/x", "names no absolute directory"),
    ],
)
def test_a_file_store_url_that_names_no_directory_is_refused(tail: str, why: str) -> None:
    from unified._sessions.config import store_from_url

    with pytest.raises(ConfigurationError, match=why) as caught:
        store_from_url(f"file://{tail}")
    assert "file:///absolute/directory" in str(caught.value.hint)


# --- a short id that names two sessions --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_an_ambiguous_short_id_lists_candidates_that_can_be_told_apart(kind: str, tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path) if kind == "file" else MemorySessionStore()
    ids = [f"aaaa1111-0000-4000-8000-00000000000{n}" for n in (1, 2)]
    for session_id in ids:
        anyio.run(store.save, stored_session(session_id))
    with pytest.raises(AmbiguousSession) as caught:
        anyio.run(store.resolve, BACKEND, "aaaa1111")
    message = caught.value.message
    assert all(session_id in message for session_id in ids), message  # the short id alone was listed twice
    assert caught.value.details["candidates"] == ids
    for session_id in ids:  # and what it shows resolves
        assert anyio.run(store.resolve, BACKEND, session_id).session_id == session_id


def test_an_ambiguous_short_id_on_the_cli_names_each_candidate_on_stderr(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", f"file://{tmp_path}/store")
    store = FileSessionStore(tmp_path / "store")
    ids = [f"aaaa1111-0000-4000-8000-00000000000{n}" for n in (1, 2)]
    for session_id in ids:
        anyio.run(store.save, stored_session(session_id))
    for command in ("show", "export", "delete"):
        result = CliRunner().invoke(cli.app, ["sessions", command, "aaaa1111"])
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert "matches 2 generate-content sessions" in result.stderr
        assert all(session_id in result.stderr for session_id in ids), result.stderr
    assert [i.session_id for i in anyio.run(store.list_sessions, BACKEND)] == ids[::-1]


def test_a_listing_of_recent_sessions_says_how_many_it_left_out(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    for n in range(7):
        anyio.run(store.save, stored_session(f"ab00000{n}-x"))
    with pytest.raises(SessionNotFound) as caught:
        anyio.run(store.resolve, BACKEND, "zz")
    assert "(and 2 more)" in caught.value.message


# --- a store that is no directory, a store URL that names none -----------------------------------------


def test_a_store_whose_directory_is_a_file_is_not_listed_as_empty(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    store = FileSessionStore(tmp_path / "file" / "sessions")  # UNIFIED_DATA_DIR set to a file
    for attempt in (lambda: anyio.run(store.list_sessions, BACKEND), lambda: anyio.run(store.resolve, BACKEND, "ab")):
        with pytest.raises(SessionStoreUnavailable, match=r"cannot be listed: .*file is a file, where the store needs"):
            attempt()  # it was [] and SessionNotFound: "no sessions yet", while every save failed
    assert (tmp_path / "file").read_text() == "not a directory"


def test_sessions_list_on_a_store_that_is_a_file_says_so(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path / "file"))
    result = CliRunner().invoke(cli.app, ["sessions", "list"])
    assert "Traceback" not in result.output
    assert "sessions yet" not in result.stdout
    assert "sessions of generate-content, interactions are not available" in result.stderr  # one line for both
    assert "is a file, where the store needs a folder" in result.stderr
    assert "UNIFIED_DATA_DIR names that file" in result.stderr
    result = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", "generate-content"])
    assert result.exit_code == 1
    assert f"cannot be listed: {tmp_path / 'file'} is a file" in result.stderr


@pytest.mark.parametrize("url", ["ftp://x/y", "file:///tmp/%00"])
def test_sessions_list_with_a_store_url_no_backend_can_use_fails_once(
    url: str, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", url)
    result = CliRunner().invoke(cli.app, ["sessions", "list"])
    assert result.exit_code == 1  # it was 0, "no sessions yet: `unified run` starts one"
    assert "sessions yet" not in result.stdout
    lines = [line for line in result.stderr.splitlines() if "not available" in line]
    assert len(lines) == 1, result.stderr  # the same reason was printed once per backend
    assert lines[0].startswith("sessions of gemini-cli, generate-content, interactions")
    assert "no backend's sessions could be listed" in result.stderr


# --- a resumed session whose state the backend cannot read ------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(
    ("backend", "state"),
    [
        ("generate-content", {"contents": "not a list"}),
        ("generate-content", {"contents": [1, None, "x"]}),
        ("generate-content", {"contents": [{"role": "user", "parts": "zz"}]}),
        ("interactions", {"steps": "x", "store": False}),
        ("interactions", {"steps": [1, 2], "store": False}),
        ("interactions", {"steps": [{"type": "user_input", "content": 7}], "store": False}),
        ("interactions", {"steps": [], "store": True, "pending": 5}),
        ("interactions", {"steps": [], "store": True, "interactions": "abc"}),  # resumed from interaction "c"
        ("interactions", {"steps": [], "store": True, "interactions": [1, None]}),  # from "None"
    ],
)
async def test_resuming_a_session_whose_state_is_damaged_is_a_corrupt_session(
    backend: str, state: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified._execute import EventStream
    from unified.events import ErrorEvent

    monkeypatch.setenv("GEMINI_API_KEY", "not-a-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")  # nothing may get that far
    store = FileSessionStore(tmp_path / "store")
    session = StoredSession.new(backend, model="gemini-2.5-flash", cwd=str(tmp_path), first_prompt="hi")
    session.state = dict(state)
    await store.save(session)
    path = store.path_of(backend, session.session_id)
    before = path.read_bytes()

    params = ExecuteParams(prompt="go on", backend=backend, cwd=tmp_path, resume=session.short_id, session_store=store)
    events = [e async for e in EventStream(params)]

    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["corrupt_session"], [e.message for e in errors]  # it was internal_error
    assert f"{backend} session {session.short_id}" in errors[0].message
    assert "cannot read" in errors[0].message
    assert path.read_bytes() == before  # nothing saved over it


# --- a history with images the next provider cannot take -------------------------------------------


def _with_attachments() -> Conversation:
    return with_attachments(["application/pdf", "image/svg+xml", "image/png"], answered_by="google", then="and now?")


def test_claude_code_carries_an_image_type_anthropic_refuses_as_a_note_and_warns() -> None:
    from unified._adapters.claude_code._backend import ClaudeCodeBackend
    from unified._adapters.claude_code._conversation import lines_from_conversation

    lines = lines_from_conversation(_with_attachments(), session_id="s", cwd="/w", model=None)
    blocks = lines[0]["message"]["content"]
    assert [b["type"] for b in blocks] == ["text", "text", "text", "image"]  # pdf and svg were image blocks: HTTP 400
    assert "application/pdf" in blocks[1]["text"]
    assert "image/svg+xml" in blocks[2]["text"]
    assert blocks[3]["source"]["media_type"] == "image/png"
    params = ExecuteParams(prompt="go on", backend="claude-code", history=_with_attachments())
    problems = ClaudeCodeBackend(params).unsupported_options(params)
    warned = [p for p in problems if p.option == "history"]
    assert len(warned) == 1
    assert not warned[0].fatal
    assert "turn 0: application/pdf, turn 0: image/svg+xml" in warned[0].explanation


def test_codex_carries_an_image_type_openai_refuses_as_a_note_and_warns_and_retries_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from unified._adapters.codex._backend import CodexBackend
    from unified._adapters.codex._conversation import _opening_for, rollout_from_conversation

    text = rollout_from_conversation(_with_attachments(), thread_id="t", cwd="/w", provider="openai")
    items = [json.loads(line)["payload"] for line in text.splitlines() if '"response_item"' in line]
    content = items[0]["content"]
    assert [c["type"] for c in content] == ["input_text", "input_text", "input_text", "input_image"]
    assert "application/pdf" in content[1]["text"]
    assert content[3]["image_url"].startswith("data:image/png;base64,")
    retried = _with_attachments().turns[0]
    assert isinstance(retried, UserTurn)
    prompt, images = _opening_for(retried)  # a retry of that turn left the pdf and svg out without a word
    assert "read these" in prompt
    assert "application/pdf" in prompt
    assert "image/svg+xml" in prompt
    assert [i.mime_type for i in images] == ["image/png"]
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-key")
    params = ExecuteParams(prompt="go on", backend="codex", history=_with_attachments())
    warned = [p for p in CodexBackend(params).unsupported_options(params) if p.option == "history"]
    assert len(warned) == 1
    assert "OpenAI" in warned[0].explanation


def test_a_history_of_images_every_provider_takes_warns_nothing() -> None:
    from unified._adapters.claude_code._backend import ClaudeCodeBackend

    history = Conversation(
        turns=[UserTurn(parts=[ImagePart(mime_type="image/png", data=ATTACHMENT_DATA["image/png"])])]
    )
    params = ExecuteParams(prompt="go on", backend="claude-code", history=history)
    assert [p for p in ClaudeCodeBackend(params).unsupported_options(params) if p.option == "history"] == []


# --- text a terminal or an encoder cannot take ----------------------------------------------------


def _with_lone_surrogate(store: FileSessionStore, session_id: str, *, in_header: bool) -> Path:
    """A record whose first prompt (`in_header`) or whose state holds `\\ud800` escaped alone, as a hand or
    another tool may write it (`json.loads` takes it; no UTF-8 encoder does)."""
    session = stored_session(session_id, first_prompt="PROMPT")
    session.state["contents"] = [{"role": "user", "parts": [{"text": "STATE"}]}]
    anyio.run(store.save, session)
    path = store.path_of(BACKEND, session_id)
    text = path.read_text()
    path.write_text(text.replace("PROMPT" if in_header else "STATE", "a\\ud800b").replace("PROMPT", "hi"))
    return path


def test_a_record_holding_a_lone_surrogate_reads_it_as_u_fffd(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    _with_lone_surrogate(store, "ab000000-header", in_header=True)
    _with_lone_surrogate(store, "ab000001-state", in_header=False)
    fine = stored_session("ab000002-pair", first_prompt="\U0001f600 an emoji, escaped as a pair")
    anyio.run(store.save, fine)
    path = store.path_of(BACKEND, fine.session_id)
    path.write_text(path.read_text().replace("\U0001f600", "\\ud83d\\ude00"))

    listed = {i.session_id: i for i in anyio.run(store.list_sessions, BACKEND)}
    assert listed["ab000000-header"].problem is None
    assert listed["ab000000-header"].first_prompt == "a\ufffdb"  # the listing failed with UnicodeEncodeError
    assert listed["ab000002-pair"].first_prompt == "\U0001f600 an emoji, escaped as a pair"
    loaded = anyio.run(store.load, BACKEND, "ab000001-state")
    assert loaded.state["contents"][0]["parts"][0]["text"] == "a\ufffdb"
    anyio.run(store.save, loaded)  # and it saves (it could not be encoded)
    memory = MemorySessionStore()
    memory._documents[(BACKEND, "ab000001-state")] = path.with_name("ab000001-state.json").read_text()
    assert anyio.run(memory.load, BACKEND, "ab000001-state").state == loaded.state


def test_a_lone_surrogate_nested_past_the_walk_is_a_corrupt_record(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    session = stored_session("ab000000-deep")
    session.state["deep"] = "DEEP"
    for _ in range(80):
        session.state["deep"] = [session.state["deep"]]
    anyio.run(store.save, session)
    path = store.path_of(BACKEND, session.session_id)
    before = path.read_text().replace("DEEP", "\\ud800")
    path.write_text(before)
    with pytest.raises(CorruptSession, match="not Unicode"):
        anyio.run(store.load, BACKEND, session.session_id)
    assert path.read_text() == before


def test_the_cli_s_own_session_files_holding_a_lone_surrogate_read_it_as_u_fffd(tmp_path: Path) -> None:
    """A node CLI's `JSON.stringify` escapes half an emoji a `slice` cut as `\\ud83d` alone."""
    from unified._adapters.claude_code._session_files import parse_session
    from unified._adapters.codex._rollouts import _lines
    from unified._adapters.gemini_cli._chat_files import read_chat

    gemini = tmp_path / "session-2026-11-29T10-00-abcdef12.jsonl"
    gemini.write_text(
        '{"sessionId": "abcdef12-0", "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"}\n'
        '{"id": "u1", "type": "user", "content": [{"text": "a\\ud83d"}]}\n'
    )
    claude = tmp_path / "11111111-2222.jsonl"
    claude.write_text('{"type": "user", "message": {"role": "user", "content": "a\\ud83d"}}\n')
    codex = tmp_path / "rollout.jsonl"
    codex.write_text('{"type": "response_item", "payload": {"text": "a\\udc00"}}\n')

    assert read_chat(gemini).messages[0]["content"] == [{"text": "a\ufffd"}]  # "a\ud83d": no encoder took it
    assert parse_session(claude).lines[0]["message"]["content"] == "a\ufffd"
    assert [record["payload"]["text"] for _, record in _lines(codex) if record] == ["a\ufffd"]


def test_the_cli_lists_and_exports_a_record_holding_a_lone_surrogate_without_exit_70(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", f"file://{tmp_path}/store")
    store = FileSessionStore(tmp_path / "store")
    _with_lone_surrogate(store, "ab000000-header", in_header=True)
    _with_lone_surrogate(store, "cd000000-state", in_header=False)
    for args in (["--backend", BACKEND], ["--backend", BACKEND, "--json"]):
        result = CliRunner().invoke(cli.app, ["sessions", "list", *args])
        assert result.exit_code == 0, result.output  # it was 70, UnicodeEncodeError
        assert "cd000000" in result.stdout
    result = CliRunner().invoke(cli.app, ["sessions", "export", "cd000000"])
    assert result.exit_code == 0, result.output  # it was 70, PydanticSerializationError
    assert "a\ufffdb" in result.stdout


def test_the_cli_writes_out_the_control_characters_a_session_holds(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", f"file://{tmp_path}/store")
    store = FileSessionStore(tmp_path / "store")
    for n in (1, 2):  # a first prompt another worker (or a hand) wrote, which clears the screen
        anyio.run(store.save, stored_session(f"aaaa1111-{n}", first_prompt="hi \x1b[2J\x1b]0;owned\x07 \u202egnp.exe"))
    listing = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", BACKEND])
    ambiguous = CliRunner().invoke(cli.app, ["sessions", "show", "aaaa1111"])
    for shown in (listing.stdout, ambiguous.stderr):
        assert "\x1b" not in shown
        assert "\x07" not in shown
        assert "\u202e" not in shown
        assert "\\x1b[2J" in shown


# --- UNIFIED_DATA_DIR as no shell expanded it ----------------------------------------------------------


def test_a_data_dir_with_a_tilde_or_relative_is_the_directory_a_shell_would_name(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified._adapters.codex._launch import codex_home
    from unified._adapters.codex._options import CodexOptions

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("UNIFIED_DATA_DIR", "~/data")  # a systemd unit or `docker run -e` does not expand it
    assert stores.sessions_root() == isolated_home / "data" / "sessions"
    assert codex_home(CodexOptions(), {"UNIFIED_DATA_DIR": "~/data"}) == (isolated_home / "data" / "codex-home")
    anyio.run(FileSessionStore().save, stored_session("ab000000-home"))
    assert list(work.iterdir()) == []  # it made a directory named `~` here
    monkeypatch.setenv("UNIFIED_DATA_DIR", "rel")
    root = stores.sessions_root()
    assert root == work / "rel" / "sessions"
    monkeypatch.chdir(tmp_path)
    assert stores.sessions_root() == root  # a relative one no longer moves with the working directory


# --- a conversation file as an editor or a shell saved it ---------------------------------------------


@pytest.mark.parametrize(
    "encoded",
    [
        lambda text: b"\xef\xbb\xbf" + text.encode("utf-8"),  # Notepad's UTF-8 with its byte order mark
        lambda text: text.encode("utf-16"),  # Windows PowerShell 5's `unified sessions export X > conv.json`
        lambda text: text.encode("utf-16-be").join([b"\xfe\xff", b""]),
    ],
)
def test_a_history_file_with_a_byte_order_mark_is_read(
    encoded: Callable[[str], bytes], isolated_home: Path, tmp_path: Path
) -> None:
    conversation = Conversation(turns=[UserTurn(parts=[TextPart(text="remember wren-5 é")])])
    path = tmp_path / "conv.json"
    path.write_bytes(encoded(conversation.to_json()))
    assert cli._read_history(path) == conversation  # it was exit 2, "Invalid JSON: expected value at line 1 column 1"


def test_a_conversation_s_text_with_a_byte_order_mark_is_read() -> None:
    conversation = Conversation(turns=[UserTurn(parts=[TextPart(text="hi")])])
    assert Conversation.from_json("\ufeff" + conversation.to_json()) == conversation
    assert Conversation.from_json(b"\xef\xbb\xbf" + conversation.to_json().encode()) == conversation


def test_a_history_file_in_broken_utf_16_is_refused_in_one_line(isolated_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "conv.json"
    path.write_bytes(b"\xff\xfe" + "{}".encode("utf-16-le") + b"\x00")  # an odd byte out
    with pytest.raises(typer.Exit) as caught:
        cli._read_history(path)
    assert caught.value.exit_code == 2


# --- a store URL with a short password ---------------------------------------------------------------


def test_a_short_store_password_is_hidden_where_it_stands_not_inside_every_word() -> None:
    from unified._sessions.postgres import PostgresSessionStore

    store = PostgresSessionStore("postgresql://u:p@127.0.0.1:1/db")  # nothing listens on port 1
    with pytest.raises(SessionStoreUnavailable) as caught:
        anyio.run(store.list_sessions, BACKEND)
    message = caught.value.message
    assert "port 1" in message, message  # it read "***ort 1": every "p" of the driver's message hidden
    assert "***" not in message
    assert store._without_password("connection string u:p@host, password=p") == (
        "connection string u:***@host, password=***"
    )
    long = PostgresSessionStore("postgresql://u:longpassword@127.0.0.1:1/db")
    assert long._without_password("xlongpasswordx") == "x***x"
    store.close()
    long.close()


# --- a header number no int holds ---------------------------------------------------------------------


@pytest.mark.parametrize("turns", ["1e400", "-1e400", "NaN", "Infinity"])
def test_a_header_count_that_is_no_integer_is_one_unreadable_entry(
    turns: str, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path / "store")
    kept = stored_session("cd000000-kept")
    anyio.run(store.save, kept)
    bad = stored_session("ab000000-bad")
    anyio.run(store.save, bad)
    path = store.path_of(BACKEND, bad.session_id)
    before = path.read_text().replace('"turns":0', f'"turns":{turns}', 1)
    path.write_text(before)

    listed = {i.session_id: i for i in anyio.run(store.list_sessions, BACKEND)}  # OverflowError: no listing
    problem = listed[bad.session_id].problem
    assert problem is not None
    assert "wrong or missing field" in problem.message
    assert listed[kept.session_id].problem is None
    with pytest.raises(CorruptSession):
        anyio.run(store.load, BACKEND, bad.session_id)
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", f"file://{tmp_path}/store")
    result = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", BACKEND])
    assert result.exit_code == 0, result.output  # it was 70, "unexpected OverflowError"
    assert "1 unreadable session" in result.stdout
    assert path.read_text() == before


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_ids_that_differ_in_case_only_are_each_named_by_their_own_spelling(kind: str, tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path) if kind == "file" else MemorySessionStore()
    ids = ["ab000000-Task", "ab000000-task"]  # another tool's ids; unified's are lower-case uuids
    for session_id in ids:
        anyio.run(store.save, stored_session(session_id))
    for session_id in ids:  # each was AmbiguousSession, whatever was given
        assert anyio.run(store.resolve, BACKEND, session_id).session_id == session_id
    with pytest.raises(AmbiguousSession):
        anyio.run(store.resolve, BACKEND, "AB000000-TASK")  # a spelling of neither: both, as before


# --- a gemini-cli chat file stamped without a time zone, or not at all ---------------------------------


def _chat(home: Path, slug: str, session_id: str, prompt: str, header: dict[str, object]) -> None:
    chats = home / ".gemini" / "tmp" / slug / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    records = [
        {"sessionId": session_id, "projectHash": "h", "kind": "main", **header},
        {"id": "u1", "type": "user", "content": [{"text": prompt}]},
    ]
    (chats / f"session-2026-11-29T10-00-{session_id[:8]}.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n"
    )


def test_gemini_chat_files_stamped_without_a_zone_or_at_all_are_listed_with_the_others(
    isolated_home: Path, tmp_path: Path
) -> None:
    from unified._adapters.gemini_cli._chat_files import ChatFiles

    ws = tmp_path / "ws"
    ws.mkdir()
    (isolated_home / ".gemini").mkdir()
    (isolated_home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(ws): "ws"}}))
    _chat(isolated_home, "ws", "aaaaaaaa-0", "the CLI's own", {"startTime": "2026-11-29T09:00:00Z"})
    _chat(isolated_home, "ws", "bbbbbbbb-0", "no zone", {"startTime": "2026-11-29T10:00:00"})
    _chat(isolated_home, "ws", "cccccccc-0", "no stamp", {})

    listed = ChatFiles().list_sessions(str(ws))  # TypeError: can't compare offset-naive and offset-aware
    assert [s.first_prompt for s in listed] == ["no zone", "the CLI's own", "no stamp"]
    assert ChatFiles().resolve("cccc", str(ws)).first_prompt == "no stamp"
    with pytest.raises(SessionNotFound):  # a miss lists them all to explain itself
        ChatFiles().resolve("dddd", str(ws))
    result = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", "gemini-cli", "--cwd", str(ws)])
    assert result.exit_code == 0, result.output  # it was 70


# --- a generate-content session another tool stored in the REST API's spelling --------------------------


def test_a_session_stored_in_the_rest_api_s_camel_case_exports_whole() -> None:
    from unified._adapters.generate_content._sessions import GenerateContentSessionLocator
    from unified.conversations import ThinkingPart, ToolCallPart, ToolResultPart

    store = MemorySessionStore()
    session = StoredSession.new("generate-content", model="gemini-2.5-flash", cwd="/w", first_prompt="see")
    session.state["contents"] = [
        {"role": "user", "parts": [{"text": "see"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
        {
            "role": "model",
            "parts": [
                {"text": "looking", "thought": True, "thoughtSignature": "c2ln"},
                {"functionCall": {"name": "read_file", "id": "c1", "args": {"filePath": "a"}}},
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "read_file", "id": "c1", "response": {"output": "x"}}}],
        },
    ]
    anyio.run(store.save, session)

    exported = anyio.run(GenerateContentSessionLocator(store).export, session.short_id)

    parts = [part for turn in exported.turns for part in turn.parts]  # the image, thought, call and result were lost
    kinds = ["TextPart", "ImagePart", "ThinkingPart", "ToolCallPart", "ToolResultPart"]
    assert [type(p).__name__ for p in parts] == kinds
    image, thought, call, result = parts[1], parts[2], parts[3], parts[4]
    assert isinstance(image, ImagePart)
    assert image.mime_type == "image/png"
    assert isinstance(thought, ThinkingPart)
    assert thought.signature == "c2ln"
    assert isinstance(call, ToolCallPart)
    assert call.arguments == {"filePath": "a"}  # the model's own argument names are left as they are
    assert isinstance(result, ToolResultPart)
    assert result.call_id == "c1"


def test_deleting_an_unreadable_session_names_its_whole_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileSessionStore(tmp_path / ("a-store-whose-path-is-long-" * 4))
    bad = stored_session("ab000000-bad")
    anyio.run(store.save, bad)
    path = store.path_of(BACKEND, bad.session_id)
    path.write_text('{"broken')
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", f"file://{store.root}")
    result = CliRunner().invoke(cli.app, ["sessions", "delete", "ab000000", "--backend", BACKEND, "--yes"])
    assert result.exit_code == 0, result.output
    assert f"deleted {BACKEND} session ab000000 (unreadable record {path})" in result.output  # it was clipped at 60
    assert not path.exists()
