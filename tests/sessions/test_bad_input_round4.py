"""Sessions, stores and backends under bad input, round 4 (round 3: `test_bad_input_round3.py`).

Each case says what happened before the fix it proves:
- a record that cannot be read (corrupt, or a newer unified's format) could not be deleted: `unified sessions
  delete <id>` (and `unified.sessions.delete`) resolved it first, and resolving an unreadable record raises
  its problem; the user could neither read nor remove it. Now it is deleted, named as strictly as any other
  (a reference that also names a readable session is still ambiguous, and nothing is deleted); a gemini-cli chat
  file that cannot be read too (a regular file named for the reference, under its session's lease when its
  header names one); a claude-code session file and a codex rollout too (a regular file only);
- one gemini-cli session id in the chat files of two projects (two files, not one file under two names) was
  listed once (the larger file's), the other hidden, and its short id resolved to that one silently (a
  delete removed it); now each is listed, and the id without its project is `AmbiguousSession` naming both
  projects (`--cwd` names one);
- a history (a conversation continued, or a stored session resumed) holding an attachment of a type Gemini
  refuses (`image/svg+xml`) was sent to generate-content as `inline_data` (HTTP 400 on every turn), and to
  interactions as an `image` item (a PDF too); now a text note saying what it was, and an `unsupported_option`
  warning on `history` (a stored session keeps the note, so only its next resume warns; interactions' stored
  session: tests/e2e/interactions/test_interactions_e2e.py);
- gemini-cli over ACP said nothing of an HTTP MCP server that is down (the real binary drops it silently): now
  `mcp_unavailable` naming it (tests/e2e/gemini_cli/test_gemini_cli_options.py, on the real binary);
- codex sent the model "image content omitted because it could not be processed" in place of a prompt image
  it cannot decode and told the caller nothing (a plain success); now `image_omitted` naming the image
  (tests/e2e/codex/test_codex_bad_input.py, on the real binary);
- an MCP server's `timeout_s` of NaN or infinity was taken, and a codex run's start raised a bare ValueError
  (`round(nan)`) from its config; 0 or less timed every call out at once: now refused where it is given;
- a conversation of a newer version (`unified run --history`, `Conversation.from_json`) was refused with
  pydantic's "Input should be less than or equal to 1"; now "a newer unified wrote it ...; upgrade unified";
- a backend option taken in whole milliseconds given as infinity (generate-content and interactions `timeout_s`,
  claude-code `request_timeout_s`, codex `stream_idle_timeout_s`) ended a run in `internal_error` or raised a
  bare OverflowError from `execute`; a `temperature` of NaN or infinity went to the API as no JSON: now each is
  refused as a bad option (`configuration_error`); so is a codex `stream_idle_timeout_s` over a day (1e300
  made the app-server panic at start: "exited before it answered initialize") and a claude-code
  `request_timeout_s` over a Node timer's 2**31 - 1 ms (which Node fires at once);
- gemini-cli's stream-json transport dropped the run's MCP servers without a word (they go in ACP
  `session/new` only); now an `unsupported_option` warning naming them;
- an HTTP error of the Interactions API (429, 500, 400) said the SDK's "Error code: 429 - " and the repr of the
  whole body (its `details` list and all) in the error, each `retrying` warning and a failed subagent's tool
  result; now the server's own message (tests/e2e/interactions/test_interactions_e2e.py);
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, ValidationError
from typer.testing import CliRunner

from tests.e2e.generate_content.gc_harness import Harness, harness, result_of
from tests.sessions.records import BACKEND, stored_session, with_attachments
from unified import ExecuteParams, execute, sessions
from unified._adapters.claude_code._options import ClaudeCodeOptions
from unified._adapters.codex._options import CodexOptions
from unified._adapters.generate_content._options import GenerateContentOptions
from unified._adapters.interactions._options import InteractionsOptions
from unified._cli import main as cli
from unified._sessions.stores import FileSessionStore, MemorySessionStore
from unified.conversations import Conversation
from unified.errors import AmbiguousSession, CorruptSession
from unified.events import WarningEvent
from unified.sessions import SessionStore, StoredSession
from unified.testing._scenario import ModelTurn as ScriptedTurn
from unified.types import HttpMcpServer, SseMcpServer, StdioMcpServer

__all__ = ["harness"]  # the generate-content tests' fixture (a FakeGemini in this process)

# --- an unreadable record can be deleted ------------------------------------------------------------------


def _unreadable_store(store: SessionStore, root: Path | None) -> dict[str, str]:
    """Three sessions in `store`: one readable, one corrupt, one of a newer format; kind → id."""
    ids = {"kept": "ab000000-kept", "corrupt": "cd000000-corrupt", "newer": "ef000000-newer"}
    for session_id in ids.values():
        anyio.run(store.save, stored_session(session_id))
    if isinstance(store, FileSessionStore):
        store.path_of(BACKEND, ids["corrupt"]).write_text('{"header": {"format": 1, ')
        newer = store.path_of(BACKEND, ids["newer"])
        newer.write_text(newer.read_text().replace('"format":1', '"format":99', 1))
    else:
        assert isinstance(store, MemorySessionStore)
        documents = store._documents
        documents[(BACKEND, ids["corrupt"])] = '{"header": {"format": 1, '
        key = (BACKEND, ids["newer"])
        documents[key] = documents[key].replace('"format":1', '"format":99', 1)
    return ids


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_an_unreadable_record_is_deleted_by_its_short_id_and_nothing_else(kind: str, tmp_path: Path) -> None:
    store: SessionStore = FileSessionStore(tmp_path) if kind == "file" else MemorySessionStore()
    ids = _unreadable_store(store, tmp_path)
    with pytest.raises(CorruptSession):  # what a resume or a show still says
        anyio.run(lambda: sessions.resolve("cd000000", backend=BACKEND, store=store))

    deleted = anyio.run(lambda: sessions.delete("cd000000", backend=BACKEND, store=store))
    assert deleted.session_id == ids["corrupt"]
    assert deleted.problem is not None
    deleted = anyio.run(lambda: sessions.delete("ef00", store=store))  # every backend searched, a prefix
    assert deleted.session_id == ids["newer"]

    listed = anyio.run(store.list_sessions, BACKEND)
    assert [(i.session_id, i.problem) for i in listed] == [(ids["kept"], None)]


def test_a_reference_naming_an_unreadable_and_a_readable_record_deletes_neither(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    readable, corrupt = "ab000000-0000-4000-8000-000000000001", "ab000000-0000-4000-8000-000000000002"
    for session_id in (readable, corrupt):
        anyio.run(store.save, stored_session(session_id))
    store.path_of(BACKEND, corrupt).write_text("{")
    with pytest.raises(AmbiguousSession):
        anyio.run(lambda: sessions.delete("ab000000", backend=BACKEND, store=store))
    assert sorted(i.session_id for i in anyio.run(store.list_sessions, BACKEND)) == [readable, corrupt]
    anyio.run(lambda: sessions.delete(corrupt, backend=BACKEND, store=store))  # its whole id names it alone
    assert [i.session_id for i in anyio.run(store.list_sessions, BACKEND)] == [readable]


def test_sessions_delete_on_the_cli_removes_an_unreadable_record(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", f"file://{tmp_path}/store")
    store = FileSessionStore(tmp_path / "store")
    ids = _unreadable_store(store, tmp_path / "store")
    for short, kind in (("cd000000", "corrupt"), ("ef000000", "newer")):
        refused = CliRunner().invoke(cli.app, ["sessions", "delete", short])  # not a terminal: asks for --yes
        assert refused.exit_code == 2, refused.output
        assert "unreadable" in refused.stderr
        assert store.path_of(BACKEND, ids[kind]).exists()
        result = CliRunner().invoke(cli.app, ["sessions", "delete", short, "--yes"])
        assert result.exit_code == 0, result.output  # it was 1: "session ... is corrupt ... left unchanged"
        assert f"deleted {BACKEND} session {short}" in result.stdout
        assert not store.path_of(BACKEND, ids[kind]).exists()
    listing = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", BACKEND, "--json"])
    assert [json.loads(line)["session_id"] for line in listing.stdout.splitlines()] == [ids["kept"]]


@pytest.mark.parametrize("backend", ["gemini-cli", "claude-code", "codex"])
def test_an_unreadable_record_of_a_cli_backend_in_a_shared_store_is_deleted(backend: str, tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path / "store")
    ids = ["019a0000-0000-7000-8000-00000000aaaa", "019a0000-0000-7000-8000-00000000bbbb"]
    for session_id in ids:
        anyio.run(store.save, StoredSession(backend=backend, session_id=session_id, state={}))
    store.path_of(backend, ids[0]).write_text("{")
    with pytest.raises(CorruptSession):
        anyio.run(lambda: sessions.resolve(ids[0], backend=backend, store=store))

    deleted = anyio.run(lambda: sessions.delete(ids[0], backend=backend, store=store))

    assert deleted.session_id == ids[0]
    assert [i.session_id for i in anyio.run(store.list_sessions, backend)] == [ids[1]]


# --- one gemini-cli session id in two projects ----------------------------------------------------------

GEMINI_SESSION = "5e55e55e-1111-4222-8333-444455556666"


def _gemini_chat(home: Path, project: Path, slug: str, prompt: str) -> Path:
    """A chat file of `GEMINI_SESSION` in the project `project`, as the CLI 0.61 files one (marked root)."""
    chats = home / ".gemini" / "tmp" / slug / "chats"
    chats.mkdir(parents=True)
    (home / ".gemini" / "tmp" / slug / ".project_root").write_text(str(project))
    records = [
        {"sessionId": GEMINI_SESSION, "projectHash": "h", "kind": "main", "startTime": "2026-11-29T10:00:00Z"},
        {"id": "u1", "type": "user", "content": [{"text": prompt}]},
    ]
    path = chats / f"session-2026-11-29T10-00-{GEMINI_SESSION[:8]}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_one_gemini_session_id_in_two_projects_is_listed_twice_and_resolved_only_with_its_project(
    isolated_home: Path, tmp_path: Path
) -> None:
    from unified._adapters.gemini_cli._chat_files import ChatFiles

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    in_a = _gemini_chat(isolated_home, a.resolve(), "a", "the one in a, the longer of the two")
    in_b = _gemini_chat(isolated_home, b.resolve(), "b", "the one in b")

    listed = ChatFiles().list_sessions()  # it listed a's alone (the larger file), b's hidden
    assert sorted((s.first_prompt, s.path) for s in listed) == [
        ("the one in a, the longer of the two", str(in_a)),
        ("the one in b", str(in_b)),
    ]
    for ref in (GEMINI_SESSION[:8], GEMINI_SESSION, "5e55"):
        with pytest.raises(AmbiguousSession) as caught:  # it resolved to a's silently
            ChatFiles().resolve(ref)
        assert str(a.resolve()) in caught.value.message
        assert str(b.resolve()) in caught.value.message
        assert "--cwd" in str(caught.value.hint)
    assert ChatFiles().resolve(GEMINI_SESSION[:8], str(b)).path == str(in_b)  # its project names it

    with pytest.raises(AmbiguousSession):
        anyio.run(lambda: sessions.delete(GEMINI_SESSION[:8], backend="gemini-cli"))
    assert in_a.exists()
    assert in_b.exists()
    anyio.run(lambda: sessions.delete(GEMINI_SESSION[:8], backend="gemini-cli", cwd=str(b)))
    assert in_a.exists()
    assert not in_b.exists()
    assert ChatFiles().resolve(GEMINI_SESSION[:8]).path == str(in_a)


def test_the_cli_lists_both_copies_and_says_which_projects_hold_them(isolated_home: Path, tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        _gemini_chat(isolated_home, (tmp_path / name).resolve(), name, f"in {name}")
    listing = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", "gemini-cli", "--json"])
    assert listing.exit_code == 0, listing.output
    assert sorted(json.loads(line)["first_prompt"] for line in listing.stdout.splitlines()) == ["in a", "in b"]
    table = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", "gemini-cli"], env={"COLUMNS": "400"})
    assert table.exit_code == 0, table.output
    for name in ("a", "b"):  # the two rows' one short id, each with the project that tells it apart
        assert f"in {name} (in {(tmp_path / name).resolve()}: --cwd)" in table.stdout, table.stdout
    shown = CliRunner().invoke(cli.app, ["sessions", "show", GEMINI_SESSION[:8]])
    assert shown.exit_code == 1, shown.output
    assert "in the chat files of 2 projects" in shown.stderr
    assert str((tmp_path / "b").resolve()) in shown.stderr


# --- an attachment of a type Gemini refuses, carried to generate-content or interactions -------------------


def _with_attachments() -> Conversation:
    return with_attachments(["image/svg+xml", "application/pdf", "image/png"], answered_by="anthropic")


def _mime_of(part: dict[str, object]) -> object:
    blob = part["inlineData"]
    assert isinstance(blob, dict)
    return blob.get("mimeType", blob.get("mime_type"))


def _sent_parts(harness: Harness) -> list[dict[str, object]]:
    parts: list[dict[str, object]] = harness.bodies()[0]["contents"][0]["parts"]
    return parts


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_generate_content_carries_a_history_attachment_gemini_refuses_as_a_note_and_warns(
    harness: Harness,
) -> None:
    harness.server.add(ScriptedTurn(text="ok"))
    events = await harness.run("go on", history=_with_attachments())

    parts = _sent_parts(harness)  # the svg went as inlineData: "Unsupported MIME type" (HTTP 400), every turn
    assert [next(iter(p)) for p in parts] == ["text", "text", "inlineData", "inlineData"]
    assert "image/svg+xml" in str(parts[1]["text"])
    assert [_mime_of(p) for p in parts[2:]] == ["application/pdf", "image/png"]
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.message.startswith("history:")]
    assert len(warnings) == 1
    assert "turn 0: image/svg+xml" in warnings[0].message
    assert "application/pdf" not in warnings[0].message


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_stored_generate_content_session_holding_a_refused_attachment_resumes(
    harness: Harness, tmp_path: Path
) -> None:
    store = FileSessionStore(tmp_path / "store")
    session = StoredSession.new("generate-content", model="gemini-2.5-flash", cwd=str(tmp_path), first_prompt="hi")
    svg = base64.b64encode(b"<svg/>").decode()
    session.state["contents"] = [  # as a session stored before the check holds it
        {"role": "user", "parts": [{"text": "hi"}, {"inline_data": {"mime_type": "image/svg+xml", "data": svg}}]},
        {"role": "model", "parts": [{"text": "an svg"}]},
    ]
    await store.save(session)
    harness.server.add(ScriptedTurn(text="ok"))

    events = await harness.run("go on", resume=session.short_id, session_store=store)

    assert result_of(events).status == "success"
    parts = _sent_parts(harness)
    assert [next(iter(p)) for p in parts] == ["text", "text"]
    assert "image/svg+xml" in str(parts[1]["text"])
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.code == "unsupported_option"]
    assert len(warnings) == 1
    assert "content 0: image/svg+xml" in warnings[0].message
    stored = (await store.load("generate-content", session.session_id)).state["contents"]
    assert "inline_data" not in json.dumps(stored[0])  # kept as the note: the next resume says nothing


def test_interactions_carries_a_history_attachment_it_refuses_as_a_note_and_warns() -> None:
    from unified._adapters.interactions._backend import InteractionsBackend
    from unified._adapters.interactions._conversation import steps_from_conversation

    steps = steps_from_conversation(_with_attachments())
    content = steps[0]["content"]
    assert [c["type"] for c in content] == ["text", "text", "text", "image"]  # svg and pdf were `image` items
    assert "application/pdf" in content[2]["text"]
    params = ExecuteParams(prompt="go on", backend="interactions", history=_with_attachments())
    warned = [p for p in InteractionsBackend(params).unsupported_options(params) if p.option == "history"]
    assert len(warned) == 1
    assert "turn 0: image/svg+xml, turn 0: application/pdf" in warned[0].explanation


# --- an MCP server's timeout that is no positive finite number --------------------------------------------


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), 0.0, -1.0])
@pytest.mark.parametrize("kind", [StdioMcpServer, HttpMcpServer, SseMcpServer])
def test_an_mcp_server_timeout_that_is_no_positive_finite_number_is_refused_where_it_is_given(
    kind: type[StdioMcpServer | HttpMcpServer | SseMcpServer], timeout: float
) -> None:
    """NaN or infinity passed, and a codex run's start raised a bare ValueError/OverflowError from its config
    (`round(server.timeout_s)`); 0 or less timed every call out at once."""
    fields = {"command": "x"} if kind is StdioMcpServer else {"url": "http://127.0.0.1:9/mcp"}
    with pytest.raises(ValidationError, match="timeout_s"):
        kind(name="s", timeout_s=timeout, **fields)


# --- a conversation a newer unified wrote ----------------------------------------------------------------


def test_a_conversation_of_a_newer_version_says_a_newer_unified_wrote_it(isolated_home: Path, tmp_path: Path) -> None:
    text = json.dumps({"format": "unified.conversation", "version": 2, "turns": []})
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(text)
    assert "a newer unified wrote it (this one reads version 1); upgrade unified" in str(caught.value)
    path = tmp_path / "conversation.json"
    path.write_text(text)
    result = CliRunner().invoke(cli.app, ["run", "--backend", "generate-content", "--history", str(path), "hi"])
    assert result.exit_code == 2, result.output  # it was "version: Input should be less than or equal to 1"
    assert "version 2: a newer unified wrote it" in result.stderr
    assert "upgrade unified" in result.stderr
    for version in (0, 1.5, None):  # what is no version at all is still refused as before
        with pytest.raises(ValidationError, match="version"):
            Conversation.from_json(json.dumps({"format": "unified.conversation", "version": version}))


def test_an_unreadable_gemini_chat_file_is_deleted_by_its_short_id_and_nothing_else(
    isolated_home: Path, tmp_path: Path
) -> None:
    from unified._adapters.gemini_cli._chat_files import ChatFiles

    project = tmp_path / "a"
    project.mkdir()
    kept = _gemini_chat(isolated_home, project.resolve(), "a", "kept")
    chats = kept.parent
    cut = chats / "session-2026-11-29T11-00-ab12cd34.jsonl"  # its first prompt cut short
    cut.write_text(json.dumps({"sessionId": "ab12cd34-0000", "kind": "main"}) + '\n{"id": "u1", "type": "us')
    headless = chats / "session-2026-11-29T12-00-ab12ef56.jsonl"
    headless.write_text("not json\n")
    with pytest.raises(CorruptSession):  # what a resume or a show still says
        ChatFiles().resolve("ab12cd34")

    with pytest.raises(AmbiguousSession):  # names both unreadable files: neither goes
        anyio.run(lambda: sessions.delete("ab12", backend="gemini-cli"))
    assert cut.exists()
    assert headless.exists()
    result = CliRunner().invoke(cli.app, ["sessions", "delete", "ab12cd34", "--backend", "gemini-cli", "--yes"])
    assert result.exit_code == 0, result.output  # it was 1: "... cannot be read ... left unchanged"
    assert not cut.exists()
    deleted = anyio.run(lambda: sessions.delete("ab12ef56", backend="gemini-cli"))
    assert deleted.path == str(headless)
    assert not headless.exists()
    assert kept.exists()
    assert [s.path for s in ChatFiles().list_sessions()] == [str(kept)]


# --- a backend option that must be finite (and at least the 1 ms it is sent in) -----------------------------


@pytest.mark.parametrize(
    ("options", "field", "value"),
    [
        (GenerateContentOptions, "timeout_s", float("inf")),  # int(inf * 1000) in the SDK's HttpOptions
        (InteractionsOptions, "timeout_s", float("inf")),
        (ClaudeCodeOptions, "request_timeout_s", float("inf")),  # round(inf * 1000) for API_TIMEOUT_MS
        (CodexOptions, "stream_idle_timeout_s", float("inf")),  # round(inf * 1000) for stream_idle_timeout_ms
        (CodexOptions, "stream_idle_timeout_s", 1e300),  # the app-server panicked at start
        (ClaudeCodeOptions, "request_timeout_s", 3e6),  # over a Node timer's 2**31 - 1 ms: it fires at once
        (GenerateContentOptions, "timeout_s", 0.0004),  # int(0.4): 0 ms, sent by the SDK as no timeout at all
        (InteractionsOptions, "timeout_s", 1e-9),  # its client gave up before connecting: "could not connect"
        (ClaudeCodeOptions, "request_timeout_s", 0.0004),  # API_TIMEOUT_MS=0
        (CodexOptions, "stream_idle_timeout_s", 0.0004),  # stream_idle_timeout_ms=0
        (InteractionsOptions, "retry_delay_scale", float("inf")),  # inf * a RetryInfo of 0s: sleep(nan) raised
        (GenerateContentOptions, "temperature", float("nan")),  # sent as the token NaN: no JSON at all
        (GenerateContentOptions, "temperature", float("inf")),
    ],
)
def test_a_backend_option_that_must_be_finite_is_refused(options: type[BaseModel], field: str, value: float) -> None:
    with pytest.raises(ValidationError, match=field):
        options.model_validate({field: value})


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_generate_content_run_with_an_infinite_timeout_is_a_configuration_error(harness: Harness) -> None:
    harness.server.add(ScriptedTurn(text="never"))
    async with execute(harness.params("hi", backend_options={"timeout_s": float("inf")})) as stream:
        events = [e async for e in stream]
    errors = [e for e in events if e.type == "error"]
    assert [getattr(e, "code", None) for e in errors] == ["configuration_error"], errors  # it was internal_error
    assert "timeout_s" in str(getattr(errors[0], "message", ""))
    assert harness.server.requests == []


def test_mcp_servers_on_gemini_s_stream_json_transport_are_a_warning_naming_them() -> None:
    """The stream-json transport passes the CLI no MCP server (they go in ACP `session/new`): they were dropped
    without a word, and the model just lacked their tools."""
    from unified._adapters.gemini_cli._backend import GeminiCliBackend

    servers = (StdioMcpServer(name="files", command="x"), HttpMcpServer(name="web", url="http://127.0.0.1:9/mcp"))
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", backend_options={"transport": "stream-json"}, mcp_servers=servers
    )
    [warned] = [p for p in GeminiCliBackend(params).unsupported_options(params) if p.option == "mcp_servers"]
    assert not warned.fatal
    assert "'files', 'web' will not be connected" in warned.explanation
    acp = params.model_copy(update={"backend_options": {}})
    assert [p for p in GeminiCliBackend(acp).unsupported_options(acp) if p.option == "mcp_servers"] == []


def test_an_unreadable_claude_session_file_is_deleted_by_its_id_and_nothing_else(tmp_path: Path) -> None:
    from unified._adapters.claude_code._sessions import ClaudeSessionLocator

    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-work-x"
    project.mkdir(parents=True)
    ids = [f"0e7d9c33-0000-4000-8000-00000000000{n}" for n in (1, 2)]
    for session_id in ids:
        (project / f"{session_id}.jsonl").write_bytes(b"\x00\xff garbage\n{not json\n")
    fifo = "0e7d9c34-0000-4000-8000-000000000003"
    os.mkfifo(project / f"{fifo}.jsonl")
    locator = ClaudeSessionLocator(home=home)
    with pytest.raises(CorruptSession):
        anyio.run(locator.resolve, ids[0])
    with pytest.raises(AmbiguousSession):  # names both: neither goes
        anyio.run(locator.delete, "0e7d9c33")

    deleted = anyio.run(locator.delete, ids[0])  # it was CorruptSession: "... it was left unchanged"

    assert deleted.problem is not None
    assert not (project / f"{ids[0]}.jsonl").exists()
    assert (project / f"{ids[1]}.jsonl").exists()
    with pytest.raises(CorruptSession, match="not a regular file"):  # a FIFO is not the CLI's file
        anyio.run(locator.delete, fifo)
    assert (project / f"{fifo}.jsonl").is_fifo()


def test_an_unreadable_codex_rollout_is_deleted_by_its_id_and_nothing_else(tmp_path: Path) -> None:
    from unified._adapters.codex._sessions import CodexSessionLocator

    folder = tmp_path / "codex-home" / "sessions" / "2026" / "11" / "29"
    folder.mkdir(parents=True)
    ids = [f"019a0000-0000-7000-8000-00000000000{n}" for n in (1, 2)]
    for thread_id in ids:
        (folder / f"rollout-2026-11-29T10-00-00-{thread_id}.jsonl").write_bytes(b"\x00\xff not a rollout\n")
    locator = CodexSessionLocator(env={"UNIFIED_CODEX_HOME": str(tmp_path / "codex-home")})
    with pytest.raises(CorruptSession):
        anyio.run(locator.resolve, ids[0])

    deleted = anyio.run(locator.delete, ids[0])  # it was CorruptSession: "... left unchanged"

    assert deleted.problem is not None
    assert sorted(p.name for p in folder.iterdir()) == [f"rollout-2026-11-29T10-00-00-{ids[1]}.jsonl"]
