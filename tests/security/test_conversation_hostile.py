"""A conversation (`ExecuteParams.history`, `unified run --history FILE`) is hostile input: it may come from
another machine, a file an attacker edited, a model's own text echoed back. Attacks tried here, on every backend:

- text no file or request can hold (a lone surrogate), a conversation larger than a run takes, a call id used
  twice, a tool result answering no call: one `ConfigurationError` before anything is written (it was a
  UnicodeEncodeError from deep inside the session writer, or a session file the provider's API refuses);
- what looks like a key, in a field the schema refuses: the validation error does not quote it;
- line separators (`\\u2028`, NEL, CR LF) in texts: each written session file keeps one record a line;
- ids that look like paths (`../`, `/`, NUL, very long) and an origin naming a live session: the session is
  written under a fresh id in the backend's own folder, the live one left byte for byte;
- a result answering a call a second time: a `ConfigurationError` (Anthropic and OpenAI refuse a second result);
- a history whose order or ids no provider takes (it starts with the model, results far from their calls or
  batched for two turns, two model turns in a row, ids of other providers: `fc/abc.def`, 300 characters,
  differing only by case or Unicode normalisation; names with `/`, `:`, 130 characters or none): every
  writer sends it in the order and shapes its provider takes, every message kept;
- `--history` given a FIFO, a link to /dev/zero, a directory, invalid UTF-8, truncated JSON: one line, exit 2
  (a FIFO hung the command, /dev/zero ran it out of memory, invalid UTF-8 was "a bug in unified").
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from tests.hang_guard import HANG_GUARD_S
from unified import ExecuteParams, execute_sync
from unified import _limits as limits
from unified._adapters.claude_code._conversation import lines_from_conversation
from unified._adapters.claude_code._shared_sessions import SESSION_FILE, state_summary
from unified._adapters.codex._conversation import rollout_from_conversation
from unified._adapters.gemini_cli._conversation import chat_records_from_conversation, open_history
from unified.conversations import (
    Conversation,
    ImagePart,
    ModelTurn,
    Origin,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.errors import ConfigurationError, CorruptSession
from unified.sessions import StoredSession

BACKENDS = ("gemini-cli", "generate-content", "interactions", "claude-code", "codex")
KEYS = (
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "sk-ant-api03-" + "A" * 40,
    "sk-proj-" + "Ab3x" * 12,
)


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def _call(call_id: str) -> ModelTurn:
    return ModelTurn(parts=[ToolCallPart(id=call_id, name="read_file", arguments={"path": "a"})], provider="google")


def _deep(depth: int) -> dict[str, Any]:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return {"x": value}


BAD = {
    "lone surrogate": Conversation(turns=[UserTurn(parts=[TextPart(text="hi \ud800 there")])]),
    "surrogate in arguments": Conversation(
        turns=[ModelTurn(parts=[ToolCallPart(id="c1", name="n", arguments={"k\udfff": "v"})])]
    ),
    "result with no call": Conversation(
        turns=[UserTurn(parts=[ToolResultPart(call_id="nope", name="read_file", output="x")])]
    ),
    "result before its call": Conversation(
        turns=[UserTurn(parts=[ToolResultPart(call_id="c1", name="read_file", output="x")]), _call("c1")]
    ),
    "image type that breaks a data URL": Conversation(
        turns=[UserTurn(parts=[ImagePart(mime_type="image/png;base64,AAAA", data=b"\x89PNG")])]
    ),
    "image type with a newline": Conversation(
        turns=[UserTurn(parts=[ImagePart(mime_type="image/png\nX-Evil: 1", data=b"\x89PNG")])]
    ),
    "arguments nested 500 deep": Conversation(
        turns=[ModelTurn(parts=[ToolCallPart(id="c1", name="n", arguments=_deep(500))])]
    ),
    "a surrogate in a model name": Conversation(turns=[ModelTurn(parts=[TextPart(text="x")], model="m\ud800")]),
    "an origin field of 2 MB": Conversation(
        origin=Origin(backend="codex", session_id="s", cwd="c" * 2_000_000),
        turns=[UserTurn(parts=[TextPart(text="hi")])],
    ),
    "duplicate call id": Conversation(
        turns=[_call("c1"), UserTurn(parts=[ToolResultPart(call_id="c1", name="read_file", output="x")]), _call("c1")]
    ),
    "a call answered twice": Conversation(
        turns=[
            _call("c1"),
            UserTurn(parts=[ToolResultPart(call_id="c1", name="read_file", output="x")]),
            UserTurn(parts=[ToolResultPart(call_id="c1", name="read_file", output="y")]),
        ]
    ),
}
PHRASES = {
    "lone surrogate": "not valid Unicode",
    "surrogate in arguments": "not valid Unicode",
    "result with no call": "no earlier turn made",
    "result before its call": "no earlier turn made",
    "duplicate call id": "repeats the tool call id",
    "a call answered twice": "answers tool call 'c1' again",
    "an origin field of 2 MB": "origin's cwd is 2000000 characters",
    "arguments nested 500 deep": "deeper than 64 levels",
    "a surrogate in a model name": "not valid Unicode",
    "image type that breaks a data URL": "not a media type",
    "image type with a newline": "not a media type",
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(BAD))
def test_a_conversation_no_backend_can_continue_is_refused_before_anything_is_written(
    backend: str, case: str, isolated_home: Path, tmp_path: Path
) -> None:
    before = _files(isolated_home)
    params = ExecuteParams(prompt="go on", backend=backend, cwd=tmp_path, history=BAD[case])
    with pytest.raises(ConfigurationError, match=PHRASES[case]) as caught:
        list(execute_sync(params))
    assert caught.value.hint is not None
    assert _files(isolated_home) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_conversation_larger_than_a_run_takes_is_refused(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_CONVERSATION_BYTES", 10_000)
    turns = [UserTurn(parts=[TextPart(text="x" * 100)]) for _ in range(200)]
    params = ExecuteParams(prompt="go on", backend=backend, cwd=tmp_path, history=Conversation(turns=turns))
    with pytest.raises(ConfigurationError, match="more than a run takes"):
        list(execute_sync(params))


def test_calls_without_ids_are_no_repeated_id() -> None:
    """A source that gave its calls no id (an interactions step, a chat record without one) exports them
    with an empty id: two such calls and their results are a conversation to continue, not a repeat."""
    unnamed = Conversation(
        turns=[
            _call(""),
            UserTurn(parts=[ToolResultPart(call_id="", name="read_file", output="x")]),
            _call(""),
            UserTurn(parts=[ToolResultPart(call_id="", name="read_file", output="y")]),
        ]
    )
    assert unnamed.problem() is None


def test_a_valid_conversation_has_no_problem() -> None:
    good = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="read a")]),
            _call("c1"),
            UserTurn(parts=[ToolResultPart(call_id="c1", name="read_file", output="x")]),
            _call("c2"),  # a call with no result yet: a run that stopped between them, continued
        ]
    )
    assert good.problem(limits.MAX_CONVERSATION_BYTES, limits.MAX_JSON_DEPTH) is None
    nested = Conversation(turns=[ModelTurn(parts=[ToolCallPart(id="c", name="n", arguments=_deep(60))])])
    assert nested.problem(limits.MAX_CONVERSATION_BYTES, limits.MAX_JSON_DEPTH) is None


@pytest.mark.parametrize("key", KEYS)
def test_a_key_in_a_refused_field_is_not_quoted_by_the_validation_error(key: str) -> None:
    documents = [
        {"format": key},
        {"turns": [{"role": "user", "parts": [{"type": "text", "text": "hi", "extra": key}]}]},
        {"origin": {"backend": "codex", "session_id": "s", "token": key}},
        {"turns": [{"role": key, "parts": []}]},
        {"turns": [{"role": "user", "parts": [{"type": key}]}, {"role": "model", "parts": []}], "version": "x"},
    ]
    for document in documents:
        with pytest.raises(ValidationError) as caught:
            Conversation.from_json(json.dumps(document))
        assert key not in str(caught.value)
        assert key[:12] not in repr(caught.value.errors(include_input=False))


@pytest.mark.parametrize("key", KEYS)
def test_a_key_in_a_refused_history_is_redacted_in_the_error(key: str, tmp_path: Path) -> None:
    history = Conversation(turns=[UserTurn(parts=[ToolResultPart(call_id=key, name="n", output="x")])])
    with pytest.raises(ConfigurationError) as caught:
        list(execute_sync(ExecuteParams(prompt="go on", backend="gemini-cli", cwd=tmp_path, history=history)))
    assert key not in str(caught.value)


SEPARATORS = "a\u2028b\u2029c\x85d\r\ne\rf\x0bg\x1ch"


def _separated() -> Conversation:
    return Conversation(
        turns=[
            UserTurn(parts=[TextPart(text=SEPARATORS)]),
            ModelTurn(
                parts=[
                    ThinkingPart(text=SEPARATORS),
                    TextPart(text=SEPARATORS),
                    ToolCallPart(id="c\u20281", name="n\u2028", arguments={SEPARATORS: SEPARATORS}),
                ],
                provider="openai",
            ),
            UserTurn(parts=[ToolResultPart(call_id="c\u20281", name="n\u2028", output=SEPARATORS)]),
        ]
    )


def test_line_separators_in_texts_keep_one_record_a_line_in_every_session_file(tmp_path: Path) -> None:
    conversation = _separated()
    claude = lines_from_conversation(conversation, session_id="s", cwd=str(tmp_path), model=None)
    gemini = chat_records_from_conversation(conversation, session_id="s", project_root=tmp_path, model="m")
    for records in (claude, gemini):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
        assert [json.loads(line) for line in text.encode().split(b"\n") if line] == records
    rollout = rollout_from_conversation(conversation, thread_id="t", cwd=str(tmp_path), provider="openai")
    lines = rollout.encode().split(b"\n")[:-1]
    assert all(isinstance(json.loads(line), dict) for line in lines)
    texts = [json.dumps(json.loads(line)) for line in lines]
    assert sum(json.dumps(SEPARATORS) in text for text in texts) >= 4  # nothing dropped or split


PATHLIKE = ("../../../../etc/passwd", "/tmp/evil", "a\x00b", "x" * 5000, "\u2215etc\u2215passwd", "")


@pytest.mark.parametrize("name", PATHLIKE)
def test_ids_that_look_like_paths_never_name_a_file(name: str, isolated_home: Path, tmp_path: Path) -> None:
    live = isolated_home / "live-session.jsonl"
    live.write_text('{"sessionId": "live"}\n', encoding="utf-8")
    conversation = Conversation(
        origin=Origin(backend="gemini-cli", session_id=name or "live", short_id=name, cwd=name),
        turns=[
            UserTurn(parts=[TextPart(text="hi")]),
            ModelTurn(parts=[ToolCallPart(id=name or "c", name=name or "n")], provider="google", model=name),
        ],
    )
    env = {"GEMINI_CLI_HOME": str(isolated_home)}
    opening = open_history(env, tmp_path, conversation, model="m")
    written = [p for p in _files(isolated_home) if p.suffix == ".jsonl" and p != live]
    assert len(written) == 1
    assert written[0].is_relative_to(isolated_home / ".gemini" / "tmp")
    assert opening.load in written[0].read_text(encoding="utf-8")
    assert name not in written[0].name or not name
    assert live.read_text(encoding="utf-8") == '{"sessionId": "live"}\n'


def test_a_conversation_whose_origin_is_a_live_session_never_overwrites_it(isolated_home: Path, tmp_path: Path) -> None:
    env = {"GEMINI_CLI_HOME": str(isolated_home)}
    first = Conversation(turns=[UserTurn(parts=[TextPart(text="one")]), ModelTurn(parts=[TextPart(text="1")])])
    live = open_history(env, tmp_path, first, model="m")
    live_file = next(p for p in _files(isolated_home / ".gemini" / "tmp") if p.suffix == ".jsonl")
    content = live_file.read_bytes()
    clash = Conversation(origin=Origin(backend="gemini-cli", session_id=live.load), turns=first.turns)
    again = open_history(env, tmp_path, clash, model="m")
    assert again.load != live.load
    assert live_file.read_bytes() == content
    claude = lines_from_conversation(clash, session_id="fresh", cwd=str(tmp_path), model=None)
    assert {line["sessionId"] for line in claude} == {"fresh"}
    rollout = rollout_from_conversation(clash, thread_id="fresh", cwd=str(tmp_path), provider="openai")
    assert json.loads(rollout.splitlines()[0])["payload"]["id"] == "fresh"


# --- `unified run --history FILE` with a file that is not one -------------------------------------------------


async def _unified(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    with anyio.fail_after(HANG_GUARD_S):
        done = await anyio.run_process([sys.executable, "-m", "unified._cli", *args], env=env, check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _make(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    elif kind == "invalid-utf8":
        path.write_bytes(b'{"turns": [{"role": "user", "parts": [{"type": "text", "text": "\xff\xfe"}]}]}')
    elif kind == "truncated":
        path.write_text('{"format": "unified.conversation", "turns": [{"role": "us', encoding="utf-8")
    elif kind == "key-in-extra-field":
        path.write_text(json.dumps({"turns": [], "api_key": KEYS[1]}), encoding="utf-8")
    elif kind == "result-with-no-call":
        orphan = UserTurn(parts=[ToolResultPart(call_id=KEYS[1], name="n", output="x")])
        path.write_text(Conversation(turns=[orphan]).to_json(), encoding="utf-8")
    elif kind == "surrogate-escape":
        path.write_text(
            '{"turns": [{"role": "user", "parts": [{"type": "text", "text": "\\ud800"}]}]}', encoding="utf-8"
        )
    elif kind == "key-as-role":
        path.write_text(json.dumps({"turns": [{"role": KEYS[1], "parts": []}]}), encoding="utf-8")
    elif kind == "key-as-field-name":
        path.write_text(json.dumps({"turns": [], KEYS[1]: 1}), encoding="utf-8")


NOT_A_FILE = [
    ("fifo", "not a regular file but a FIFO"),
    ("dev-zero", "not a regular file but a character device"),
]
"""Files the command itself must not open as a file: each is run as a user runs it, in a process of its own (a FIFO
hung the command, /dev/zero ran it out of memory: in the test's own process either would take the worker)."""

NOT_A_CONVERSATION = [
    ("directory", "not a regular file but a directory"),
    ("invalid-utf8", "is not a conversation"),
    ("truncated", "is not a conversation"),
    ("key-in-extra-field", "is not a conversation"),
    ("key-as-role", "is not a conversation"),
    ("result-with-no-call", "no earlier turn made"),
    ("surrogate-escape", "is not a conversation"),
    ("key-as-field-name", "is not a conversation"),
]
"""Files read and refused: the console script's own entry point (`unified._cli.main.main`) in the test's process,
which ends each as the command does (one line, exit 2) without a Python start of its own for each."""


def _one_line_refusal(code: int, err: str, phrase: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    assert phrase in lines[0], lines[0]
    assert KEYS[1][:20] not in err


@pytest.mark.e2e
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(("kind", "phrase"), NOT_A_FILE)
async def test_a_history_file_that_is_not_a_regular_file_ends_the_command_with_one_line(
    kind: str, phrase: str, isolated_home: Path, tmp_path: Path
) -> None:
    path = tmp_path / "conversation.json"
    _make(kind, path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_API", "GOOGLE_", "ANTHROPIC_", "OPENAI_"))}
    env |= {"HOME": str(isolated_home), "UNIFIED_DATA_DIR": str(isolated_home / "data")}
    env.pop("UNIFIED_DEBUG", None)
    code, out, err = await _unified("run", "hi", "--history", str(path), "--backend", "claude-code", env=env)
    assert out == ""
    _one_line_refusal(code, err, phrase)


@pytest.mark.parametrize(("kind", "phrase"), NOT_A_CONVERSATION)
def test_a_history_file_that_is_not_a_conversation_ends_with_one_line(
    kind: str,
    phrase: str,
    isolated_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from unified._cli.main import main

    path = tmp_path / "conversation.json"
    _make(kind, path)
    for name in [*os.environ]:
        if name.startswith(("GEMINI_API", "GOOGLE_", "ANTHROPIC_", "OPENAI_")) or name == "UNIFIED_DEBUG":
            monkeypatch.delenv(name)
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(isolated_home / "data"))
    code = main(["run", "hi", "--history", str(path), "--backend", "claude-code"])
    out, err = capsys.readouterr()
    assert out == ""
    _one_line_refusal(code, err, phrase)


def test_a_history_file_larger_than_a_run_takes_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import typer

    from unified._cli.main import _read_history

    monkeypatch.setattr(limits, "MAX_CONVERSATION_BYTES", 100)
    path = tmp_path / "big.json"
    path.write_text(Conversation(turns=[UserTurn(parts=[TextPart(text="x" * 200)])]).to_json(), encoding="utf-8")
    with pytest.raises(typer.Exit):
        _read_history(path)
    assert "more than a run takes (100," in capsys.readouterr().err


# --- a claude-code session in a shared store: its text is JSON lines, split at "\n" only --------------------


def _stored_claude(session_id: str, lines: list[dict[str, Any]]) -> StoredSession:
    text = "".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n" for line in lines)
    return StoredSession(
        backend="claude-code", session_id=session_id, state={SESSION_FILE: {"project": "-ws", "text": text}}
    )


def test_a_line_separator_in_a_stored_claude_session_loses_no_message() -> None:
    session_id = "11111111-2222-3333-4444-555555555555"
    said = "first\u2028second\u2029third\x85fourth"
    lines = [
        {"type": "user", "sessionId": session_id, "message": {"role": "user", "content": said}},
        {"type": "assistant", "sessionId": session_id, "message": {"role": "assistant", "content": said}},
    ]
    shown = state_summary(_stored_claude(session_id, lines))
    assert [m["message"]["content"] for m in shown["messages"]] == [said, said]


def test_a_stored_claude_session_cannot_hide_another_sessions_line_behind_a_line_separator() -> None:
    session_id = "11111111-2222-3333-4444-555555555555"
    other = {"type": "user", "text": "x\u2028", "sessionId": "99999999-0000-0000-0000-000000000000"}
    with pytest.raises(CorruptSession, match="holds lines of session 99999999"):
        state_summary(_stored_claude(session_id, [other]))


# --- exporting a session whose file an attacker edited ------------------------------------------------------

HOSTILE_GEMINI_MESSAGES: dict[str, dict[str, Any]] = {
    "a thought that is no object": {"type": "gemini", "thoughts": ["x"]},
    "a tool call that is no object": {"type": "gemini", "toolCalls": ["x"]},
    "tool arguments as a list": {"type": "gemini", "toolCalls": [{"id": "a", "name": "n", "args": [1]}]},
    "a result that is a number": {"type": "gemini", "toolCalls": [{"id": "a", "name": "n", "result": 5}]},
    "tokens as a list": {"type": "gemini", "content": "x", "tokens": [1]},
    "an image of bad base64": {"type": "user", "content": [{"inlineData": {"mimeType": "image/png", "data": "!!"}}]},
    "inline data that is text": {"type": "user", "content": [{"inlineData": "x"}]},
    "a function response that is text": {"type": "user", "content": [{"functionResponse": "x"}]},
    "a key as its id, then a bad thought": {"type": "gemini", "thoughts": [1], "id": "edited-message " + KEYS[0]},
}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("case", sorted(HOSTILE_GEMINI_MESSAGES))
async def test_exporting_an_edited_gemini_cli_chat_file_is_a_typed_error(
    case: str, isolated_home: Path, tmp_path: Path
) -> None:
    from unified import sessions

    conversation = Conversation(turns=[UserTurn(parts=[TextPart(text="hi")]), ModelTurn(parts=[TextPart(text="1")])])
    opening = open_history({"GEMINI_CLI_HOME": str(isolated_home)}, tmp_path, conversation, model="m")
    [chat] = [p for p in _files(isolated_home) if p.suffix == ".jsonl"]
    message: dict[str, Any] = {
        "id": "edited-message",
        "timestamp": "2026-01-01T00:00:00.000Z",
    } | HOSTILE_GEMINI_MESSAGES[case]
    with chat.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(message) + "\n")
    content = chat.read_bytes()
    with pytest.raises(CorruptSession, match="edited-message") as caught:
        await sessions.export(opening.load, backend="gemini-cli", cwd=str(tmp_path))
    assert caught.value.hint is not None
    assert KEYS[0] not in str(caught.value)
    assert chat.read_bytes() == content  # nothing changed, nothing lost


HOSTILE_CODEX_ITEMS: dict[str, dict[str, Any]] = {
    "assistant content that is a number": {"type": "message", "role": "assistant", "content": 5},
    "user content that is a number": {"type": "message", "role": "user", "content": 5},
    "a reasoning summary that is a number": {"type": "reasoning", "summary": 5},
    "call arguments that are a number": {"type": "function_call", "call_id": "a", "name": "n", "arguments": 5},
}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("case", sorted(HOSTILE_CODEX_ITEMS))
async def test_exporting_an_edited_codex_rollout_is_a_typed_error(
    case: str, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified import sessions
    from unified._adapters.codex._rollouts import Rollouts

    home = isolated_home / "codex-home"
    conversation = Conversation(turns=[UserTurn(parts=[TextPart(text="hi")]), ModelTurn(parts=[TextPart(text="1")])])
    thread = "019a0000-0000-7000-8000-000000000001"
    text = rollout_from_conversation(conversation, thread_id=thread, cwd=str(tmp_path), provider="openai")
    text += json.dumps(
        {"timestamp": "2026-01-01T00:00:00.000Z", "type": "response_item", "payload": HOSTILE_CODEX_ITEMS[case]}
    )
    Rollouts(home).write(thread, datetime.now(UTC), text + "\n")
    [rollout] = [p for p in _files(home) if p.suffix == ".jsonl"]
    content = rollout.read_bytes()
    monkeypatch.setenv("UNIFIED_CODEX_HOME", str(home))
    with pytest.raises(CorruptSession, match="cannot read") as caught:
        await sessions.export(thread, backend="codex", cwd=str(tmp_path))
    assert caught.value.hint is not None
    assert rollout.read_bytes() == content


HOSTILE_API_STATES: dict[str, dict[str, Any]] = {
    "generate-content: a content that is a number": {"contents": [5]},
    "generate-content: parts that are a number": {"contents": [{"role": "user", "parts": 5}]},
    "generate-content: an image of bad base64": {
        "contents": [{"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "!!"}}]}]
    },
    "generate-content: usage that is no object": {"contents": [], "usage": {"0": 5}},
    "interactions: a step that is a number": {"steps": [5]},
    "interactions: usage keyed by a word": {"steps": [], "usage": {"x": {}}},
}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("case", sorted(HOSTILE_API_STATES))
async def test_exporting_an_edited_api_session_is_a_typed_error(case: str, tmp_path: Path) -> None:
    from unified import sessions
    from unified._sessions.stores import FileSessionStore

    backend = case.split(":")[0]
    store = FileSessionStore(tmp_path / "store")
    session_id = "22222222-3333-4444-5555-666666666666"
    await store.save(StoredSession(backend=backend, session_id=session_id, state=HOSTILE_API_STATES[case]))
    with pytest.raises(CorruptSession, match="cannot read") as caught:
        await sessions.export(session_id, backend=backend, store=store)
    assert caught.value.hint is not None
    assert (await store.load(backend, session_id)).state == HOSTILE_API_STATES[case]


# --- retry: a cut-off tail is kept, never overwritten ------------------------------------------------------


def test_two_codex_retries_in_one_second_keep_both_cut_off_tails(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from unified._adapters.codex._conversation import open_retry
    from unified._adapters.codex._rollouts import Rollouts

    home = isolated_home / "codex-home"
    turns = [UserTurn(parts=[TextPart(text="one")]), ModelTurn(parts=[TextPart(text="1")], provider="openai")]
    turns += [UserTurn(parts=[TextPart(text="two")]), ModelTurn(parts=[TextPart(text="2")], provider="openai")]
    thread = "019a0000-0000-7000-8000-000000000002"
    rollouts = Rollouts(home)
    text = rollout_from_conversation(Conversation(turns=turns), thread_id=thread, cwd=str(tmp_path), provider="openai")
    rollouts.write(thread, datetime.now(UTC), text)
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    first = open_retry(rollouts, thread)
    second = open_retry(rollouts, thread)
    assert (first.prompt, second.prompt) == ("two", "one")
    backups = sorted((home / "unified-retry-backups").iterdir())
    assert len(backups) == 2
    kept = b"".join(p.read_bytes() for p in backups)
    assert b'"two"' in kept
    assert b'"one"' in kept


def test_a_codex_retry_backup_never_follows_a_planted_link(isolated_home: Path, tmp_path: Path) -> None:
    import time

    from unified._adapters.codex._conversation import open_retry
    from unified._adapters.codex._rollouts import Rollouts

    home = isolated_home / "codex-home"
    turns = [UserTurn(parts=[TextPart(text="one")]), ModelTurn(parts=[TextPart(text="1")], provider="openai")]
    thread = "019a0000-0000-7000-8000-000000000003"
    rollouts = Rollouts(home)
    text = rollout_from_conversation(Conversation(turns=turns), thread_id=thread, cwd=str(tmp_path), provider="openai")
    rollouts.write(thread, datetime.now(UTC), text)
    [path] = [p for p in _files(home) if p.suffix == ".jsonl"]
    outside = tmp_path / "outside.txt"
    outside.write_text("precious", encoding="utf-8")
    backups = home / "unified-retry-backups"
    backups.mkdir()
    now = int(time.time())
    for second in range(now - 2, now + 30):
        (backups / f"{path.name}.{second}").symlink_to(outside)
    open_retry(rollouts, thread)
    assert outside.read_text(encoding="utf-8") == "precious"


def test_a_codex_retry_refuses_a_backup_folder_that_is_a_link(isolated_home: Path, tmp_path: Path) -> None:
    from unified._adapters.codex._conversation import open_retry
    from unified._adapters.codex._rollouts import Rollouts

    home = isolated_home / "codex-home"
    turns = [UserTurn(parts=[TextPart(text="one")]), ModelTurn(parts=[TextPart(text="1")], provider="openai")]
    thread = "019a0000-0000-7000-8000-000000000004"
    rollouts = Rollouts(home)
    text = rollout_from_conversation(Conversation(turns=turns), thread_id=thread, cwd=str(tmp_path), provider="openai")
    rollouts.write(thread, datetime.now(UTC), text)
    [path] = [p for p in _files(home) if p.suffix == ".jsonl"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home / "unified-retry-backups").symlink_to(elsewhere)
    with pytest.raises(ConfigurationError, match="cut-off tail"):
        open_retry(rollouts, thread)
    assert list(elsewhere.iterdir()) == []
    assert path.read_text(encoding="utf-8") == text  # the session is not cut


def test_unanswered_calls_get_an_error_result_right_after_their_turn() -> None:
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="go")]),
            ModelTurn(parts=[ToolCallPart(id="a", name="n"), ToolCallPart(id="b", name="n")]),
            UserTurn(parts=[ToolResultPart(call_id="b", name="n", output="ok")]),
            ModelTurn(parts=[ToolCallPart(id="c", name="n")]),
            UserTurn(parts=[TextPart(text="never mind")]),
            ModelTurn(parts=[ToolCallPart(id="d", name="n")]),
        ]
    )
    answered = history.with_unanswered_calls_answered("not run")
    assert answered.unanswered_calls() == []
    assert answered.problem() is None
    shapes = [[(p.type, getattr(p, "call_id", getattr(p, "id", None))) for p in t.parts] for t in answered.turns]
    assert shapes == [
        [("text", None)],
        [("tool_call", "a"), ("tool_call", "b")],
        [("tool_result", "a"), ("tool_result", "b")],
        [("tool_call", "c")],
        [("tool_result", "c")],
        [("text", None)],
        [("tool_call", "d")],
        [("tool_result", "d")],
    ]
    complete = answered.with_unanswered_calls_answered("again")
    assert complete is answered


@pytest.mark.parametrize("key", KEYS)
def test_a_key_in_a_refused_history_given_as_data_is_not_quoted(key: str) -> None:
    for history in ({"format": key}, {"turns": [{"role": "user", "parts": [{"type": "text", "text": key, "x": 1}]}]}):
        with pytest.raises(ValidationError) as caught:
            ExecuteParams(prompt="go on", history=history)
        assert key not in str(caught.value)


def test_a_history_part_longer_than_a_codex_rollout_line_is_refused_before_writing(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollout line longer than the reader takes (16 MiB) was written, and the next export of the session
    left the turn out without a word (an unreadable line)."""
    from unified._adapters.codex import _rollouts
    from unified._adapters.codex._conversation import open_history as open_codex_history
    from unified._adapters.codex._rollouts import Rollouts

    monkeypatch.setattr(_rollouts, "MAX_LINE_BYTES", 1000)
    home = isolated_home / "codex-home"
    history = Conversation(turns=[UserTurn(parts=[TextPart(text="x" * 2000)]), ModelTurn(parts=[TextPart(text="1")])])
    params = ExecuteParams(prompt="go on", backend="codex", cwd=tmp_path, history=history)
    with pytest.raises(ConfigurationError, match="longer than a codex session line"):
        open_codex_history(Rollouts(home), params, "openai")
    assert not home.exists() or _files(home) == set()


def test_a_history_larger_than_a_claude_session_file_may_be_is_refused_before_writing(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session file larger than the reader takes (256 MiB) was written, the CLI ran on it, and the session
    could then be neither resumed nor exported (FileTooLarge): many small turns weigh far more there than in
    the conversation's own JSON."""
    from unified._adapters.claude_code import _session_files
    from unified._adapters.claude_code._backend import ClaudeCodeBackend

    monkeypatch.setattr(_session_files, "MAX_SESSION_BYTES", 20_000)
    turns = [
        UserTurn(parts=[TextPart(text="hi")]) if n % 2 == 0 else ModelTurn(parts=[TextPart(text="ok")])
        for n in range(60)
    ]
    history = Conversation(turns=turns)
    assert len(history.to_json()) < 20_000
    home = isolated_home / "claude-home"
    params = ExecuteParams(
        prompt="go on",
        backend="claude-code",
        cwd=tmp_path,
        history=history,
        backend_options={"home": home, "start_process": lambda *a: None},
    )
    with pytest.raises(ConfigurationError, match="larger than a claude-code session file may be"):
        ClaudeCodeBackend(params)._plan()
    assert not any(p.suffix == ".jsonl" for p in _files(home)) if home.exists() else True


# --- a history whose order, ids and names no provider takes as they are -----------------------------------

_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")
_MARKS = ("M0", "U1", "U2", "M1", "M2", "U3", "R1", "R3", "R4")


def _misordered() -> Conversation:
    nfc, nfd = unicodedata.normalize("NFC", "é"), unicodedata.normalize("NFD", "é")
    return Conversation(
        turns=[
            ModelTurn(provider="openai", parts=[TextPart(text="M0 the model speaks first")]),
            ModelTurn(
                provider="openai",
                parts=[ToolCallPart(id="fc/abc.def", name="fs/read"), ToolCallPart(id="Call_" + nfc, name="api:run")],
            ),
            UserTurn(parts=[TextPart(text="U1 between a call and its result")]),
            UserTurn(parts=[TextPart(text="U2 a second user turn in a row")]),
            ModelTurn(
                provider="anthropic",
                parts=[
                    TextPart(text="M1 answer"),
                    ToolCallPart(id="call_" + nfd, name=""),
                    ToolCallPart(id="x" * 300, name="n" * 130),
                ],
            ),
            ModelTurn(provider="anthropic", parts=[TextPart(text="M2 a second model turn in a row")]),
            UserTurn(
                parts=[
                    ToolResultPart(call_id="x" * 300, name="n" * 130, output="R4"),
                    ToolResultPart(call_id="fc/abc.def", name="fs/read", output="R1"),
                    ToolResultPart(call_id="call_" + nfd, name="", output="R3"),
                ]
            ),
            UserTurn(parts=[TextPart(text="U3 the prompt")]),
        ]
    )


def _joined(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive messages of one role as one, as Anthropic's API reads them."""
    joined: list[dict[str, Any]] = []
    for message in messages:
        if joined and joined[-1]["role"] == message["role"]:
            joined[-1] = {"role": message["role"], "content": joined[-1]["content"] + message["content"]}
        else:
            joined.append({"role": message["role"], "content": list(message["content"])})
    return joined


def _valid_for_anthropic(conversation: Conversation, tmp_path: Path) -> str:
    lines = lines_from_conversation(conversation, session_id="s", cwd=str(tmp_path), model=None)
    messages = _joined([line["message"] for line in lines])
    assert messages[0]["role"] == "user"
    for number, message in enumerate(messages):
        uses = [b for b in message["content"] if b["type"] == "tool_use"]
        if message["role"] != "assistant" or not uses:
            continue
        assert all(_ANTHROPIC_ID.fullmatch(b["id"]) and _TOOL_NAME.fullmatch(b["name"]) for b in uses), uses
        after = messages[number + 1]["content"]
        first = [b.get("tool_use_id") for b in after[: len(uses)]]
        assert sorted(first, key=str) == sorted((b["id"] for b in uses), key=str), "results first, right after"
    return json.dumps(messages, ensure_ascii=False)


def _valid_for_gemini(conversation: Conversation, tmp_path: Path) -> str:
    from unified._adapters.generate_content._conversation import contents_from_conversation

    contents = contents_from_conversation(conversation)
    assert contents[0]["role"] == "user"
    for number, content in enumerate(contents):
        calls = [p["function_call"] for p in content["parts"] if "function_call" in p]
        if not calls:
            continue
        before = contents[number - 1]
        assert before["role"] == "user", "a function call turn follows a user turn or a function response turn"
        assert all(_GEMINI_NAME.fullmatch(c["name"]) for c in calls), calls
        responses = [p["function_response"] for p in contents[number + 1]["parts"] if "function_response" in p]
        assert [r["name"] for r in responses] == [c["name"] for c in calls], "as many responses, in the next turn"
    return json.dumps(contents, ensure_ascii=False)


def _valid_for_interactions(conversation: Conversation, tmp_path: Path) -> str:
    from unified._adapters.interactions._conversation import steps_from_conversation

    steps = steps_from_conversation(conversation)
    assert steps[0]["type"] == "user_input"
    for number, step in enumerate(steps):
        if step["type"] == "function_call" and (
            number + 1 == len(steps) or steps[number + 1]["type"] != "function_call"
        ):
            calls: list[dict[str, Any]] = []
            back = number
            while back >= 0 and steps[back]["type"] == "function_call":
                calls.insert(0, steps[back])
                back -= 1
            results = steps[number + 1 : number + 1 + len(calls)]
            assert [r["call_id"] for r in results] == [c["id"] for c in calls]
            assert all(_GEMINI_NAME.fullmatch(c["name"]) for c in calls)
    return json.dumps(steps, ensure_ascii=False)


def _valid_for_codex(conversation: Conversation, tmp_path: Path) -> str:
    text = rollout_from_conversation(conversation, thread_id="t", cwd=str(tmp_path), provider="openai")
    items = [r["payload"] for r in map(json.loads, text.splitlines()) if r["type"] == "response_item"]
    assert items[0]["role"] == "user"
    for number, item in enumerate(items):
        if item["type"] == "function_call" and (
            number + 1 == len(items) or items[number + 1]["type"] != "function_call"
        ):
            calls: list[dict[str, Any]] = []
            back = number
            while back >= 0 and items[back]["type"] == "function_call":
                calls.insert(0, items[back])
                back -= 1
            outputs = items[number + 1 : number + 1 + len(calls)]
            assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
            assert all(len(c["call_id"]) <= 64 and _TOOL_NAME.fullmatch(c["name"]) for c in calls), calls
    return json.dumps(items, ensure_ascii=False)


def _valid_for_gemini_cli(conversation: Conversation, tmp_path: Path) -> str:
    records = chat_records_from_conversation(conversation, session_id="s", project_root=tmp_path, model="m")[1:]
    assert records[0]["type"] == "user"
    calls = [c for r in records for c in r.get("toolCalls", [])]
    assert all(_GEMINI_NAME.fullmatch(c["name"]) and "result" in c for c in calls), calls
    return json.dumps(records, ensure_ascii=False)


WRITERS = {
    "claude-code": _valid_for_anthropic,
    "generate-content": _valid_for_gemini,
    "interactions": _valid_for_interactions,
    "codex": _valid_for_codex,
    "gemini-cli": _valid_for_gemini_cli,
}


@pytest.mark.parametrize("backend", sorted(WRITERS))
def test_a_history_in_no_providers_order_or_shapes_reaches_each_in_its_own_and_keeps_every_message(
    backend: str, tmp_path: Path
) -> None:
    hostile = _misordered()
    assert hostile.problem(limits.MAX_CONVERSATION_BYTES, limits.MAX_JSON_DEPTH) is None  # continued, not refused
    answered = hostile.with_unanswered_calls_answered("not run")  # as a run gives it to the backend
    sent = WRITERS[backend](answered, tmp_path)
    for mark in _MARKS:
        assert mark in sent, mark  # every message (gemini-cli shows a result twice: the response, the display)
    assert "not run" in sent  # the call no result answers, answered


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_history_of_unanswered_calls_that_grows_past_the_limit_once_answered_is_refused(
    backend: str, isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The error result each unanswered call gets outweighs the call: a history just under the limit of many
    such calls went to the backend several times larger than a run takes."""
    calls = [ToolCallPart(id=f"c{n}", name="n") for n in range(100)]
    history = Conversation(turns=[UserTurn(parts=[TextPart(text="go")]), ModelTurn(parts=list(calls))])
    monkeypatch.setattr(limits, "MAX_CONVERSATION_BYTES", len(history.to_json()) + 100)
    before = _files(isolated_home)
    with pytest.raises(ConfigurationError, match="with an error result for each call") as caught:
        list(execute_sync(ExecuteParams(prompt="go on", backend=backend, cwd=tmp_path, history=history)))
    assert caught.value.hint is not None
    assert _files(isolated_home) == before
