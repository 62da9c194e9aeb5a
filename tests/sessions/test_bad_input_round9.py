"""Bad input round 9: each case failed in Python's words, or late, or not at all; now a typed error names what is
wrong where and what to do.

- generate-content: a streamed call's `willContinue` (or a `partialArgs` piece's `willContinue`/`boolValue`) sent
  as the text "false" was read as true; now it is the chunk-shape `backend_error` naming the field.
- a codex rollout whose `function_call.arguments` (or a reasoning `summary`, or a message's `content`) is of a
  type Codex never writes: the export said "(TypeError: the JSON object must be str, bytes or bytearray, not
  int)"; now it names the file, the line and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from unified.errors import CorruptSession

THREAD = "019a0000-0000-7000-8000-000000000001"


def _rollout(tmp_path: Path, *items: dict[str, Any]) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "codex-home" / "sessions" / "2026" / "11" / "29"
    folder.mkdir(parents=True)
    meta = {"type": "session_meta", "payload": {"id": THREAD, "cwd": "/p", "timestamp": "2026-11-29T10:00:00Z"}}
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    lines = [meta, {"type": "response_item", "payload": said}]
    lines += [{"type": "response_item", "payload": item} for item in items]
    path = folder / f"rollout-2026-11-29T10-00-00-{THREAD}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path, {"UNIFIED_CODEX_HOME": str(tmp_path / "codex-home")}


@pytest.mark.parametrize(
    ("item", "words"),
    [
        (
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": 5},
            "function_call 'shell''s arguments is a number, not a string of JSON",
        ),
        (
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": {"cmd": "ls"}},
            "function_call 'shell''s arguments is an object, not a string of JSON",
        ),
        ({"type": "reasoning", "summary": 5}, "a reasoning item's summary is a number, not a list"),
        ({"type": "message", "role": "assistant", "content": True}, "an assistant message's content"),
    ],
)
def test_a_codex_rollout_item_of_a_wrong_type_is_named_by_file_line_and_field(
    tmp_path: Path, item: dict[str, Any], words: str
) -> None:
    from unified._adapters.codex._sessions import CodexSessionLocator

    path, env = _rollout(tmp_path, {"type": "message", "role": "assistant", "content": []}, item)
    before = path.read_bytes()
    with pytest.raises(CorruptSession) as raised:
        anyio.run(CodexSessionLocator(env=env).export, THREAD)
    message = raised.value.message
    assert f"line 4 of {path}" in message, message
    assert words in message, message
    for python in ("TypeError", "JSON object must be", "'int' object", "not iterable"):
        assert python not in message, message
    assert raised.value.hint is not None
    assert "fix or remove that line" in raised.value.hint
    assert raised.value.details["line"] == 4
    assert path.read_bytes() == before


def test_a_codex_call_whose_arguments_are_not_json_is_still_exported_as_the_text_it_holds(tmp_path: Path) -> None:
    from unified._adapters.codex._sessions import CodexSessionLocator
    from unified.conversations import ToolCallPart

    _, env = _rollout(tmp_path, {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{oops"})
    conversation = anyio.run(CodexSessionLocator(env=env).export, THREAD)
    [call] = [p for t in conversation.turns for p in t.parts if isinstance(p, ToolCallPart)]
    assert call.arguments == {"arguments": "{oops"}


# --- generate-content: a streamed call's flag sent as the text "false" ----------------------------------------

_CALL_PATH = "`candidates[0].content.parts[0].functionCall"
FLAGS = {
    "call willContinue 'false'": (
        {"name": "read_file", "args": {"file_path": "a"}, "willContinue": "false"},
        f"{_CALL_PATH}.willContinue` is a string ('false'), not a boolean",
    ),
    "call willContinue 0": (
        {"name": "read_file", "args": {"file_path": "a"}, "willContinue": 0},
        f"{_CALL_PATH}.willContinue` is a number (0), not a boolean",
    ),
    "piece willContinue 'false'": (
        {"name": "plan", "partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": "false"}]},
        f"{_CALL_PATH}.partialArgs[0].willContinue` is a string ('false'), not a boolean",
    ),
    "piece boolValue 'false'": (
        {"name": "plan", "partialArgs": [{"jsonPath": "$.a", "boolValue": "false"}]},
        f"{_CALL_PATH}.partialArgs[0].boolValue` is a string ('false'), not a boolean",
    ),
    "piece that is a number": (
        {"name": "plan", "partialArgs": [5]},
        f"{_CALL_PATH}.partialArgs[0]` is a number (5), not an object",
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("case", list(FLAGS))
async def test_a_streamed_call_flag_of_the_wrong_type_is_a_backend_error_naming_it(tmp_path: Path, case: str) -> None:
    """`"willContinue": "false"` was read as Python reads a non-empty string, true (more pieces to come), and a
    `boolValue` of "false" became a `true` argument: no error, the calls ran until the loop guard stopped the
    run (`runaway_loop`). Now each is the chunk-shape error every other wrong-typed chunk field gives
    (`_shapes`): the API's JSON sends these flags as booleans, so a string is the server's (or a proxy's) fault."""
    from unified import ExecuteParams, execute
    from unified.events import ErrorEvent, Result, ToolUse
    from unified.testing import FakeGemini, RecordedTurn

    call, words = FLAGS[case]
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "finishReason": "STOP"}]}
    turns = [RecordedTurn(method="generateContentStream", response=[chunk])] * 4  # a retry gets the same
    options = {"api_key": "test-key", "retry_delay_scale": 0.001}
    with FakeGemini(turns) as fake:
        params = ExecuteParams(
            prompt="go",
            backend="generate-content",
            cwd=tmp_path,
            backend_options={**options, "base_url": fake.base_url},
        )
        async with execute(params) as stream:
            events = [event async for event in stream]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["backend_error"], [(e.code, e.message) for e in errors]
    assert "does not fit its schema" in errors[0].message
    assert words in errors[0].message, errors[0].message
    assert not [e for e in events if isinstance(e, ToolUse)]
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"


# --- UNIFIED_DATA_DIR naming a regular file -----------------------------------------------------------------


def test_a_data_dir_that_is_a_file_says_so_and_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It said "cannot be written: Not a directory (<file>/sessions/generate-content/0d)" and "make that directory
    writable": of a folder that is no folder, and the fix for another failure. Now it names the file and the
    setting that names it."""
    from tests.sessions.records import stored_session
    from unified._sessions.stores import sessions_root
    from unified.errors import SessionStoreUnavailable
    from unified.sessions import FileSessionStore

    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine")
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(blocker))
    store = FileSessionStore(sessions_root())
    for attempt in (lambda: store.save(stored_session()), lambda: store.list_sessions("generate-content")):
        with pytest.raises(SessionStoreUnavailable) as raised:
            anyio.run(attempt)
        assert f"{blocker} is a file, where the store needs a folder" in raised.value.message, raised.value.message
        assert raised.value.hint is not None
        assert "UNIFIED_DATA_DIR names that file: point UNIFIED_DATA_DIR at a folder" in raised.value.hint
        assert "writable" not in raised.value.hint
    assert blocker.read_text() == "mine"


def test_a_file_in_the_way_of_a_backend_folder_no_setting_names_is_named_with_its_fix(tmp_path: Path) -> None:
    import errno

    from unified._files import unwritable

    blocker = tmp_path / "cache"
    blocker.write_text("")
    exc = NotADirectoryError(errno.ENOTDIR, "Not a directory", str(blocker / "unified" / "gemini-cli"))
    typed = unwritable(exc, "gemini-cli")
    assert typed is not None
    assert typed.code == "backend_unavailable"
    assert f"{blocker} is a file, not a folder" in typed.message
    assert typed.hint is not None
    assert typed.hint.startswith("move or remove that file")


# --- a base URL with whitespace, or a host IDNA refuses -----------------------------------------------------

SECRET = "tok_live_s3cret"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        (" http://127.0.0.1:9", "it starts or ends with whitespace"),
        ("http://127.0.0.1:9\n", "it starts or ends with whitespace"),
        ("\thttp://127.0.0.1:9", "it starts or ends with whitespace"),
        ("http://127.0.0.1:9/v1\tbeta", "it holds a control character"),
        ("http://gw.exa mple", "its user, host or port holds whitespace"),
        ("http://gw.exa\u200bmple", "its host is not a valid internationalized domain name"),
        ("http://\u2488.example", "its host is not a valid internationalized domain name"),
        ("http://xn--zz.example", "its host is not a valid internationalized domain name"),
        ("http://999.1.1.1", "its host looks like an IPv4 address but is not one"),
    ],
)
def test_a_base_url_with_whitespace_or_a_host_idna_refuses_is_caught_by_the_auth_check(url: str, why: str) -> None:
    """Each passed `ApiAuth.problems` and failed at the first request (the host read as empty, `gw.exa%20mple`
    looked up and not found, "InvalidURL: Invalid IDNA hostname: '...'" quoting the host, where a gateway's token
    may stand); now the auth check names the problem, never the URL."""
    from unified._auth import resolve_api_auth

    for variable, vertex in (("GOOGLE_GEMINI_BASE_URL", False), ("GOOGLE_VERTEX_BASE_URL", True)):
        with_secret = url.replace("http://", f"http://{SECRET}@", 1) if url.startswith("http") else url
        auth = resolve_api_auth({"GOOGLE_API_KEY": "k", variable: with_secret}, vertexai=vertex)
        assert not auth.usable
        [problem] = auth.problems
        assert problem.startswith(f"the base URL in {variable} is not one google-genai can send requests to: {why}"), (
            problem
        )
        assert SECRET not in problem
        assert SECRET not in auth.describe()


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9",
        "https://gw.example/a b",
        "http://ex\u00e4mple.com",
        "http://[::1]:9",
        "http://xn--exmple-cua.com",
    ],
)
def test_a_base_url_the_http_client_sends_is_still_taken(url: str) -> None:
    from unified._auth import resolve_api_auth

    assert resolve_api_auth({"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": url}).problems == ()


# --- a claude-code session whose prompt line is damaged --------------------------------------------------------


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ({"message": "hi"}, "a user line's message is a string, not an object"),
        ({"message": {"role": "user", "content": 5}}, "a user line's message content is a number, not text"),
    ],
)
def test_a_claude_session_whose_prompt_line_is_damaged_is_listed_with_a_problem_and_can_be_deleted(
    tmp_path: Path, damage: dict[str, Any], words: str
) -> None:
    """It was hidden as a file that never got a prompt, though a model had answered in it: not listed, `show`
    and `delete` said "no claude-code session matches", so it could be neither seen nor removed. Now it is listed
    with a problem naming the line's fault, and `delete` removes it; `show` is a CorruptSession."""
    from tests.adapters.claude_code.test_claude_code_sessions import A, session_lines
    from unified._adapters.claude_code._session_files import project_dir_name, write_lines
    from unified._adapters.claude_code._sessions import ClaudeSessionLocator

    home = tmp_path / "home"
    lines = session_lines(A, "first", "one", "/work/a")
    lines[1].update(damage)
    path = home / ".claude" / "projects" / project_dir_name("/work/a") / f"{A}.jsonl"
    write_lines(path, lines)
    before = path.read_bytes()
    locator = ClaudeSessionLocator(home=home)
    [listed] = anyio.run(locator.list_sessions)
    assert listed.session_id == A
    assert listed.problem is not None
    assert words in listed.problem.message, listed.problem.message
    assert "delete the session" in listed.problem.hint
    with pytest.raises(CorruptSession, match="has no prompt unified can read"):
        anyio.run(locator.show, A[:8])
    assert path.read_bytes() == before
    anyio.run(locator.delete, A[:8])
    assert not path.exists()


# --- another tool's export given as a conversation ---------------------------------------------------------------


def test_another_tool_s_export_given_as_history_says_it_is_not_a_conversation_and_what_one_is(
    tmp_path: Path,
) -> None:
    """`unified run --history chat.json` with an OpenAI-style `{"messages": [...]}` said only "...: Extra inputs are
    not permitted": neither what was wrong nor what a conversation is. The field's name is still not shown (a
    key pasted there would be)."""
    from typer.testing import CliRunner

    from unified._cli import main as cli

    foreign = tmp_path / "chat.json"
    foreign.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}], "sk-live-s3cret": 1}))
    result = CliRunner().invoke(cli.app, ["run", "go on", "--history", str(foreign), "--backend", "generate-content"])
    assert result.exit_code == 2, result.output
    assert "a field no conversation has (its name not shown: it may hold a key)" in result.stderr
    assert "format, version, origin, system_instruction and turns" in result.stderr
    assert "unified sessions export" in result.stderr
    assert "Extra inputs" not in result.stderr
    assert "s3cret" not in result.stderr
    assert "messages" not in result.stderr
    assert result.stderr.count("a field no conversation has") == 1  # two such fields, one line


# --- a session folder that cannot be read ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["claude-code", "codex", "gemini-cli"])
def test_a_session_folder_that_cannot_be_read_is_reported_not_a_crash_or_no_sessions(
    backend: str, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """claude-code's projects folder unreadable ended `unified sessions list` with a bare PermissionError ("a bug in
    unified"); codex's sessions folder (read through `glob`, which passes over what it cannot read) gave "no
    sessions" for sessions it could not see. Now the listing says that backend could not be searched, naming
    the folder and what to do, and lists the others."""
    import errno
    import os

    from unified import _session_service as service
    from unified._adapters.claude_code._sessions import ClaudeSessionLocator
    from unified._adapters.codex._sessions import CodexSessionLocator
    from unified._adapters.gemini_cli._chat_files import ChatFiles

    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path / "data"))
    folders = {
        "claude-code": lambda: ClaudeSessionLocator()._files().projects,
        "codex": lambda: CodexSessionLocator()._rollouts().root,
        "gemini-cli": lambda: ChatFiles().root,
    }
    blocked = folders[backend]()
    blocked.mkdir(parents=True)
    real = os.listdir

    def listdir(path: Any = ".") -> list[Any]:  # root reads what permissions forbid: the refusal is made here
        if Path(path) == blocked:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path)

    monkeypatch.setattr(os, "listdir", listdir)
    listing = anyio.run(lambda: service.list_sessions())
    assert set(listing.unavailable) == {backend}, listing.unavailable
    why = listing.unavailable[backend]
    assert f"the {backend} session folder {blocked} cannot be read: Permission denied" in why
    assert "make it readable by this user" in why


# --- a gemini-cli chat message with a field of the wrong type -------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("tokens", "many", "its `tokens` is a string, not an object"),
        ("thoughts", 5, "its `thoughts` is a number, not a list"),
        ("thoughts", ["x"], "its `thoughts[0]` is a string, not an object"),
        ("toolCalls", 5, "its `toolCalls` is a number, not a list"),
        ("toolCalls", [{"id": "c1", "name": "read_file", "args": "x"}], "its `toolCalls[0].args` is a string"),
        ("toolCalls", [{"id": "c1", "name": "read_file", "result": 5}], "its `toolCalls[0].result` is a number"),
    ],
)
def test_exporting_a_gemini_chat_message_of_a_wrong_type_names_the_message_and_field(
    isolated_home: Path, field: str, value: object, words: str
) -> None:
    """The export said "holds a message unified cannot read (id 'g1', AttributeError)": Python's word for the
    fault, no field named. Now the message and the field, and the file is left as it was."""
    from tests.adapters.gemini_cli.test_gemini_cli_session_files_not_regular import GOOD, chat_path
    from unified._adapters.gemini_cli._sessions import GeminiSessionLocator

    records: list[dict[str, Any]] = [
        {"sessionId": GOOD, "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": "hello"}]},
        {"id": "g1", "type": "gemini", "content": "ok", field: value},
    ]
    path = chat_path(isolated_home, GOOD)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    before = path.read_bytes()
    with pytest.raises(CorruptSession) as raised:
        anyio.run(GeminiSessionLocator().export, GOOD[:8])
    message = raised.value.message
    assert "holds a message unified cannot read: message 'g1': " in message, message
    assert words in message, message
    for python in ("AttributeError", "TypeError", "ValueError"):
        assert python not in message
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (5, "a user message's content is a number, not text or a list"),
        ([5], "a user message's content[0] is a number, not text or an object"),
        ([{"text": 5}], "a user message's content[0].text is a number, not text"),
    ],
)
def test_a_gemini_chat_whose_prompt_is_damaged_is_listed_with_a_problem_and_can_be_deleted(
    isolated_home: Path, content: object, words: str
) -> None:
    """It was hidden as a session with no prompt yet, though the model had answered in it: not listed, and `show`
    and `delete` said "no gemini-cli session matches". Now it is listed with a problem naming the fault, and
    `delete` removes it."""
    from tests.adapters.gemini_cli.test_gemini_cli_session_files_not_regular import GOOD, chat_path
    from unified._adapters.gemini_cli._sessions import GeminiSessionLocator

    records: list[dict[str, Any]] = [
        {"sessionId": GOOD, "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": content},
        {"id": "g1", "type": "gemini", "content": "ok", "tokens": {"input": 3, "output": 1}},
    ]
    path = chat_path(isolated_home, GOOD)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    locator = GeminiSessionLocator()
    [listed] = anyio.run(locator.list_sessions)
    assert listed.problem is not None
    assert words in listed.problem.message, listed.problem.message
    assert path.exists()
    anyio.run(locator.delete, GOOD[:8])
    assert not path.exists()


def test_folder_entries_matches_and_sorts_names_before_making_paths(tmp_path: Path) -> None:
    """A short id's lookup names a pattern: only the matching entries become paths (the bench's gemini-cli resolve
    among 10,000 sessions went 7 -> 36 ms when every entry was made a path and sorted), in name order."""
    from unified._files import folder_entries

    tmp_path = tmp_path / "chats"
    tmp_path.mkdir()
    for name in ("session-b-2.jsonl", "session-a-1.jsonl", "other.json", ".session-c-3.jsonl.tmp"):
        (tmp_path / name).write_text("{}\n")
    assert folder_entries(tmp_path, "gemini-cli", "session-*.jsonl") == [
        tmp_path / "session-a-1.jsonl",
        tmp_path / "session-b-2.jsonl",
    ]
    assert [path.name for path in folder_entries(tmp_path, "gemini-cli")] == sorted(
        ["session-b-2.jsonl", "session-a-1.jsonl", "other.json", ".session-c-3.jsonl.tmp"]
    )
    assert folder_entries(tmp_path / "missing", "gemini-cli", "*") == []
