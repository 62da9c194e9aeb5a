"""Red team, second round: hostile output of the agent binaries and of the files they write, at the unit level.

Each test here is an attack that got through before its fix (each fails on the code before it, but for
a few that guard what the fix keeps):

- JSON nested deeper than Python's recursion limit (a line of 5,000 `[`, a few kilobytes): `json.loads`
  raises `RecursionError`, which is no `ValueError`, so every reader that took a line it cannot parse
  for "a bad line" let it escape: one such line in one session file of Claude Code, Codex or the Gemini
  CLI broke the whole listing (and `show`, and resume); so in the JSONL follower of the Gemini CLI's
  chat records, in unified's own session store, and, live, in a Gemini CLI error or an MCP tool's
  arguments carrying such JSON as text (inside a message `parse_object` accepts: the nesting is in a string);
- the Gemini CLI's stream-json `result` with token counts that are no numbers (`int("many")`,
  `int(NaN)`): a `ValueError` out of the translator, `internal_error` for the binary's fault; Claude
  Code's `costUSD` as an integer too large for a float (`OverflowError`), NaN or Infinity;
- a secret straddling a cut made before the redaction: `parse_object` quoted the first 200 characters of
  a line that is no JSON object, a process's stderr tail its last 8 KiB (one long line), Claude Code's
  decision of a call the CLI settled quoted 300 characters of its error, a session reference matching
  nothing listed 60 of each recent prompt, `unified sessions list` 80 of each summary, the Gemini CLI's
  listing 500 of a first prompt: the cut went through the key, and every redactor downstream, which
  replaces whole secrets only, let the piece it saw through;
- the Gemini CLI's stream-json naming a call twice, answering it twice, answering a call it never
  announced, a second `init`, output before `init`: each broke the event protocol, which the stream
  guard reports as `protocol_violation`, "a bug in unified";
- a second permission request about a call already decided (the Claude Code, Codex and Gemini CLI
  bridges alike): decided afresh on whatever input it carried, the caller asked again, and a second
  `permission_decision` for one call (`protocol_violation`); now denied unasked, with a warning;
- huge session files: listing kept every line it read as Python objects, to take a few fields (Codex: up
  to 400 lines of 16 MB, 6.4 GB for one rollout; Claude Code: a file up to its 256 MB bound);
- retry delays that are no numbers: Claude Code's `retry_delay_ms` of 401 digits (`OverflowError` in
  `/ 1000`), a Codex provider's "try again in 1.2.3s" (`float("1.2.3")`);
- a command with escape sequences in the permission prompt of `unified run` (rich passes ESC through): an
  `ESC[2K` erased the line the user read, and a harmless command was shown instead of `rm -rf ~`; the
  same in the run's rendering of the model's text and events (an OSC 52 could write the clipboard);
- a Claude Code control request with no string `request_id` (or no request object): dropped without a
  word, while a CLI waiting for its answer stalls the run;
- a line that never ends in a JSONL file followed while the binary writes it (the Gemini CLI's chat
  records): kept whole as the unfinished rest, growing with every poll;
- Claude Code sending one call's `tool_result` twice (or a server tool's result): a second `tool_result`,
  reported by the stream guard as "a bug in unified".
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import math
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from rich.console import Console
from typer.testing import CliRunner

from tests.security.test_permission_type_confusion import (
    Context,
    Wire,
    _claude_handle,
    _codex_handle,
    _gemini_handle,
    _params,
)
from tests.security.test_session_store_hostile import BACKEND as STORE_BACKEND
from tests.security.test_session_store_hostile import _valid
from unified._adapters.claude_code._permissions import _summary
from unified._adapters.claude_code._session_files import SessionFiles, parse_session, project_dir_name, write_lines
from unified._adapters.claude_code._translate import Retry, StreamTranslator, usage_from_model_usage
from unified._adapters.codex._conversation import conversation_from_rollout
from unified._adapters.codex._outcome import error_from_turn_error
from unified._adapters.codex._rollouts import Rollouts, read_rollout, rollout_name
from unified._adapters.codex._translate import AppServerTranslator
from unified._adapters.gemini_cli._chat_files import ChatFiles, read_chat
from unified._adapters.gemini_cli._outcome import error_from_acp
from unified._adapters.gemini_cli._stream_json import StreamJsonTranslator
from unified._adapters.gemini_cli._translate import AcpTranslator, TurnBoundary
from unified._binary.follow import JsonlTail, split_records
from unified._binary.framing import parse_object
from unified._binary.jsonrpc import RpcError
from unified._binary.process import AgentSubprocess, StderrTail
from unified._cli import main as cli
from unified._cli.interactive import ask_in_terminal
from unified._cli.render import Renderer
from unified._internal.stream import _Aggregator, _shape_of
from unified._redaction import SPLIT_HOLD_MIN, redactor
from unified._sessions.records import resolve_ref
from unified._sessions.stores import FileSessionStore
from unified.conversations import ToolCallPart
from unified.errors import CorruptSession, RateLimited, SessionNotFound, UnifiedError
from unified.events import (
    PermissionDecision,
    Question,
    QuestionOption,
    SessionStarted,
    TextDelta,
    ToolResult,
    ToolUse,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
)
from unified.sessions import SessionInfo

MiB = 1024 * 1024
DEPTH = 5_000
"""Far past Python's recursion limit (1,000): `json.loads` of it raises RecursionError."""
DEEP = "[" * DEPTH + "]" * DEPTH
DEEP_OBJECT = '{"a": ' + DEEP + "}"

KEY = "sk-ant-api03-Zq8Xw2Lr5Tn7Vb1Mc4Kd9Pf3Hg6Js0Ay-Qo2Wi7Ue5Rt1Yu3Io9Pl8Kj6Hg4Fd2Sa0Zx"
"""An Anthropic-shaped key (`KEY_SHAPES` knows `sk-ant-api03-`); these tests put it in ANTHROPIC_API_KEY,
whose name alone makes it a secret of the environment, the one `redactor()` hides."""


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def _pieces_of_key(text: str, size: int = SPLIT_HOLD_MIN) -> list[str]:
    """Every `size`-character piece of KEY that `text` shows."""
    return sorted({KEY[i : i + size] for i in range(len(KEY) - size + 1) if KEY[i : i + size] in text})


# --- JSON nested too deeply to parse, in session files ------------------------------------------------


CLAUDE_ID = "536f72c5-73b2-43a2-93b4-ea679570dd03"


def _claude_lines(session_id: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": session_id,
            "cwd": "/work/a",
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": "first"},
        },
        {
            "type": "assistant",
            "uuid": "m1",
            "parentUuid": "u1",
            "sessionId": session_id,
            "timestamp": "2026-12-01T10:00:01.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": "ok"}],
            },
        },
    ]


def test_claude_code_a_session_line_nested_too_deeply_is_a_skipped_line_not_a_broken_listing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    path = home / ".claude" / "projects" / project_dir_name("/work/a") / f"{CLAUDE_ID}.jsonl"
    write_lines(path, _claude_lines(CLAUDE_ID))
    with path.open("a") as handle:
        handle.write(DEEP + "\n" + DEEP_OBJECT + "\n")

    parsed = parse_session(path)
    assert parsed.bad_lines == 2
    assert parsed.first_prompt == "first"
    (info,) = SessionFiles(home).list_sessions()
    assert info.session_id == CLAUDE_ID
    assert info.problem is None
    assert info.extra == {"skipped_lines": 2}
    assert SessionFiles(home).show(CLAUDE_ID[:8])["session"]["session_id"] == CLAUDE_ID


CODEX_ID = "01a23248-9d08-7a31-8b3c-0000000aaaa1"


def _rollout_text(thread_id: str, *extra: str) -> str:
    meta = {"type": "session_meta", "payload": {"id": thread_id, "cwd": "/p", "timestamp": "2026-12-01T10:00:00Z"}}
    prompt = {
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
    }
    return "\n".join([json.dumps(meta), json.dumps(prompt), *extra]) + "\n"


def test_codex_a_rollout_line_nested_too_deeply_is_a_bad_line_not_a_broken_listing(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    rollouts = Rollouts(tmp_path)
    path = rollouts.write(CODEX_ID, datetime(2026, 12, 1, tzinfo=UTC), _rollout_text(CODEX_ID, DEEP, DEEP_OBJECT))
    assert path.name == rollout_name(CODEX_ID, datetime(2026, 12, 1, tzinfo=UTC))

    rollout = read_rollout(path)
    assert rollout.bad_lines == 2
    (info,) = rollouts.list_sessions()
    assert info.problem is None
    assert info.session_id == CODEX_ID
    assert rollouts.read(CODEX_ID).bad_lines == 2


def test_codex_call_arguments_nested_too_deeply_are_kept_as_text_on_export(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    call = {
        "type": "response_item",
        "payload": {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": DEEP_OBJECT},
    }
    path = Rollouts(tmp_path).write(
        CODEX_ID, datetime(2026, 12, 1, tzinfo=UTC), _rollout_text(CODEX_ID, json.dumps(call))
    )
    conversation = conversation_from_rollout(read_rollout(path))
    (part,) = [p for turn in conversation.turns for p in turn.parts if isinstance(p, ToolCallPart)]
    assert part.arguments == {"arguments": DEEP_OBJECT}


def test_gemini_cli_a_chat_line_nested_too_deeply_is_a_bad_line_not_a_broken_listing(isolated_home: Path) -> None:
    chats = isolated_home / ".gemini" / "tmp" / "ws" / "chats"
    chats.mkdir(parents=True)
    path = chats / "session-2026-11-29T10-00-abcdef12.jsonl"
    records = [
        {"sessionId": "abcdef12-0000", "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": "first prompt"}]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n" + DEEP + "\n" + DEEP_OBJECT + "\n")

    chat = read_chat(path)
    assert chat.bad_lines == 2
    assert [m["id"] for m in chat.messages] == ["u1"]
    (info,) = ChatFiles().list_sessions()
    assert info.first_prompt == "first prompt"
    assert ChatFiles().resolve("abcdef12").session_id == "abcdef12-0000"


def test_the_jsonl_follower_skips_a_record_nested_too_deeply_and_reads_the_next() -> None:
    records, rest = split_records(b"", (DEEP_OBJECT + '\n{"n": 1}\n{"n": 2').encode())
    assert records == [{"n": 1}]
    assert rest == b'{"n": 2'


def test_a_stored_session_nested_too_deeply_is_corrupt_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session, path = _valid(root)
    healthy, _ = _valid(root)
    path.write_text('{"header": ' + DEEP + "}\n")
    store = FileSessionStore(root)
    with pytest.raises(CorruptSession) as loaded:
        anyio.run(store.load, STORE_BACKEND, session.session_id)
    assert str(path) in loaded.value.message
    listed = anyio.run(store.list_sessions, STORE_BACKEND)
    assert [s.session_id for s in listed if s.problem is None] == [healthy.session_id]
    assert [s.session_id for s in listed if s.problem is not None] == [session.session_id]


# --- the same, live: inside a message that parses (the nesting is in a string) --------------------------


def test_gemini_cli_an_error_whose_message_is_json_nested_too_deeply_is_a_typed_error() -> None:
    error = error_from_acp(RpcError("session/prompt", {"code": 500, "message": '{"error": ' + DEEP + "}"}))
    assert isinstance(error, UnifiedError)
    assert error.code != "internal_error"


def test_gemini_cli_an_mcp_permission_request_with_arguments_nested_too_deeply_is_announced() -> None:
    call = {
        "toolCallId": "mcp_server_tool-1",
        "title": "tool (server MCP Server)",
        "kind": "other",
        "content": [{"type": "content", "content": {"type": "text", "text": DEEP_OBJECT}}],
    }
    line = json.dumps({"sessionId": "s", "toolCall": call, "options": []})
    params = parse_object(line)
    assert isinstance(params, dict)  # the nesting is inside a string: the message itself is accepted
    items = AcpTranslator().permission_request(params, "/ws")
    (use,) = [i for i in items if isinstance(i, ToolUse)]
    assert use.tool_use_id == "mcp_server_tool-1"


# --- numbers that are no counts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "count", ['"many"', '{"n": 1}', "[1]", "NaN", "Infinity", "-Infinity", "1e400", "-7", "true", "null"]
)
def test_gemini_cli_stream_json_token_counts_that_are_no_numbers_count_nothing(count: str) -> None:
    stats = f'{{"input_tokens": {count}, "output_tokens": 3, "cached": {count}}}'
    line = f'{{"type": "result", "status": "success", "stats": {stats}}}'
    message = parse_object(line)
    assert isinstance(message, dict)
    translator = StreamJsonTranslator()
    assert translator.event(message) == []
    assert translator.usage is not None
    assert (translator.usage.input_tokens, translator.usage.output_tokens, translator.usage.cached_tokens) == (0, 3, 0)


@pytest.mark.parametrize("cost", ["1" + "0" * 400, "NaN", "Infinity", "-Infinity", "1e400", "-0.5"])
def test_claude_code_a_cost_that_is_no_amount_is_no_cost(cost: str) -> None:
    result = parse_object(f'{{"claude-x": {{"inputTokens": 5, "outputTokens": 2, "costUSD": {cost}}}}}')
    assert isinstance(result, dict)
    usage = usage_from_model_usage(result)
    assert usage.input_tokens == 5
    assert usage.cost_usd is None
    json.loads(usage.model_dump_json())  # and it serializes to plain JSON


def test_claude_code_a_real_cost_is_kept() -> None:
    usage = usage_from_model_usage({"claude-x": {"costUSD": 0.25}, "claude-y": {"costUSD": 1}})
    assert usage.cost_usd is not None
    assert math.isclose(usage.cost_usd, 1.25)


# --- a secret cut in two by a quote ---------------------------------------------------------------------


@pytest.mark.parametrize("offset", [150, 170, 190, 196, 199])
def test_a_line_that_is_no_json_quotes_no_piece_of_a_secret_the_cut_went_through(secret_env: None, offset: int) -> None:
    """The warning's text goes through the run's redactor (whole secrets only) on its way to the consumer."""
    line = "x" * offset + KEY + " and more output that is not JSON"
    why = parse_object(line)
    assert isinstance(why, str)
    shown = redactor()(why)
    assert _pieces_of_key(shown) == []
    assert "xxxxxxxx" in shown  # the quote is still there to diagnose with


def test_a_line_that_is_no_json_object_quotes_no_piece_of_a_secret_either(secret_env: None) -> None:
    why = parse_object('["' + "y" * 180 + KEY + '"]')
    assert isinstance(why, str)
    assert why.startswith("JSON that is not an object")
    assert _pieces_of_key(redactor()(why)) == []


def _stderr_tail_of(stderr: bytes, limit: int) -> str:
    """What `AgentSubprocess.stderr_tail()` (error messages, `details["stderr_tail"]`) gives for a process
    that wrote `stderr` (the unit tier starts no process: the tail is the one a real one keeps)."""
    process = object.__new__(AgentSubprocess)
    process._tail = StderrTail(limit)
    process._tail.add(stderr)
    process._redact = redactor()  # the child's environment is the process environment here
    process._stderr_open = False  # all of it read already
    process._forwarder = None  # no proxy forwarder: the child was given no proxy password
    process._proxy_problems = []
    return process.stderr_tail()


@pytest.mark.parametrize("inside", [SPLIT_HOLD_MIN, 20, len(KEY) // 2, len(KEY) - 1])
def test_a_stderr_tail_cut_inside_a_secret_of_one_long_line_shows_no_piece_of_it(secret_env: None, inside: int) -> None:
    """The CLI prints one long line (no line break) whose end holds the key: the 8 KiB tail begins
    `inside` characters into the key."""
    limit = 8192
    rest = "z" * (limit - (len(KEY) - inside))
    text = _stderr_tail_of(("w" * 5000 + KEY + rest).encode(), limit)
    assert _pieces_of_key(text) == []
    assert text.endswith("zzzz")


def test_a_stderr_tail_keeps_whole_lines_and_redacts_a_whole_secret(secret_env: None) -> None:
    assert _stderr_tail_of(b"b" * 300 + b"\nrefused " + KEY.encode() + b"\n", 200) == "refused [REDACTED]\n"
    assert _stderr_tail_of(b"short, refused " + KEY.encode(), 200) == "short, refused [REDACTED]"


# --- other cuts made before the redaction ---------------------------------------------------------------


def test_claude_code_the_decision_of_a_call_that_failed_quotes_no_piece_of_a_secret(secret_env: None) -> None:
    """A call the CLI settled itself (no decision recorded) and that failed: the decision's reason quotes the
    first 300 characters of its error, which holds the key across that cut."""
    translator = StreamTranslator(include_thoughts=True)
    use = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "env"}}
    translator.line({"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [use]}})
    error = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "e" * 280 + KEY + " more", "is_error": True}
    items = translator.line({"type": "user", "message": {"role": "user", "content": [error]}})
    (decision,) = [i for i in items if isinstance(i, PermissionDecision)]
    assert decision.reason is not None
    assert _pieces_of_key(redactor()(decision.reason)) == []


def test_a_session_reference_that_matches_nothing_lists_no_piece_of_a_secret(secret_env: None) -> None:
    sessions = [
        SessionInfo(
            backend="b",
            session_id=f"{n}0000000-0000-4000-8000-000000000000",
            short_id=f"{n}0000000",
            first_prompt="p" * (40 + n) + KEY,
        )
        for n in range(5)
    ]
    with pytest.raises(SessionNotFound) as raised:
        resolve_ref("zzz", sessions, "b")
    assert _pieces_of_key(raised.value.message) == []


def test_the_session_listing_shows_no_piece_of_a_secret_in_a_summary(
    secret_env: None, isolated_home: Path, tmp_path: Path
) -> None:
    """`unified sessions list` shows the first 80 characters of a session's summary (here a Gemini CLI chat's,
    which the CLI wrote): the key crosses them."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (isolated_home / ".gemini").mkdir()
    (isolated_home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(ws): "ws"}}))
    chats = isolated_home / ".gemini" / "tmp" / "ws" / "chats"
    chats.mkdir(parents=True)
    records = [
        {"sessionId": "abcdef12-0000", "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": "first prompt"}]},
        {"$set": {"lastUpdated": "2026-11-29T11:00:00Z", "summary": "q" * 60 + KEY}},
    ]
    (chats / "session-2026-11-29T10-00-abcdef12.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    result = CliRunner().invoke(
        cli.app, ["sessions", "list", "--backend", "gemini-cli", "--cwd", str(ws)], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    assert "abcdef12" in result.output
    assert _pieces_of_key(result.output.replace("\n", "")) == []


def test_gemini_cli_a_listed_first_prompt_cut_at_500_characters_holds_no_piece_of_a_secret(
    secret_env: None, isolated_home: Path
) -> None:
    chats = isolated_home / ".gemini" / "tmp" / "ws" / "chats"
    chats.mkdir(parents=True)
    records = [
        {"sessionId": "abcdef12-0000", "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": "p" * 470 + KEY}]},
    ]
    (chats / "session-2026-11-29T10-00-abcdef12.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    (info,) = ChatFiles().list_sessions()
    assert info.first_prompt is not None
    assert info.first_prompt.startswith("p" * 470)
    assert _pieces_of_key(redactor()(info.first_prompt)) == []


# --- a stream that breaks the event protocol: the binary's fault, not unified's ---------------------------


def _protocol_problems(events: list[Any]) -> list[str]:
    """What the stream guard would report as `protocol_violation` ("a bug in unified") for these events,
    by the guard's own rules (`unified._internal.stream`)."""
    agg = _Aggregator()
    problems = []
    for event in events:
        if isinstance(event, TurnBoundary):
            continue
        shape = _shape_of(type(event))
        problem = None
        if agg.session is None and not shape.before_session:
            problem = f"a {event.type} event came before session_started"
        elif shape.rule is not None:
            problem = shape.rule(agg, event)
        if problem is not None:
            problems.append(problem)
        if shape.record is not None:
            shape.record(agg, event)
    return problems


def _stream_json(*messages: dict[str, Any]) -> list[Any]:
    translator = StreamJsonTranslator(cwd="/ws")
    return [item for message in messages for item in translator.event(message)]


INIT = {"type": "init", "session_id": "0f3c9a52-1111-2222-3333-444455556666", "model": "gemini-x"}
USE = {"type": "tool_use", "tool_name": "read_file", "tool_id": "c1", "parameters": {"path": "a"}}
RESULT = {"type": "tool_result", "tool_id": "c1", "status": "success", "output": "ok"}
AGENT = {"type": "tool_use", "tool_name": "invoke_agent", "tool_id": "a1", "parameters": {"agent_name": "x"}}
ANSWER = {"type": "message", "role": "assistant", "content": "done"}


@pytest.mark.parametrize(
    ("case", "messages"),
    [
        ("a result for a call never announced", [INIT, RESULT, ANSWER]),
        ("a result of another id", [INIT, USE, {**RESULT, "tool_id": "zz"}]),
        ("a call announced twice", [INIT, USE, USE, RESULT]),
        ("a call answered twice", [INIT, USE, RESULT, RESULT]),
        ("a subagent announced twice", [INIT, AGENT, AGENT, {**RESULT, "tool_id": "a1"}]),
        ("a subagent answered twice", [INIT, AGENT, {**RESULT, "tool_id": "a1"}, {**RESULT, "tool_id": "a1"}]),
        ("a second init", [INIT, ANSWER, INIT, ANSWER]),
        ("output before init", [ANSWER, USE, INIT, RESULT]),
    ],
)
def test_gemini_cli_stream_json_that_breaks_the_event_protocol_is_not_reported_as_a_bug_in_unified(
    case: str, messages: list[dict[str, Any]]
) -> None:
    events = _stream_json(*messages)
    assert _protocol_problems(events) == []
    assert sum(isinstance(e, SessionStarted) for e in events) == 1


def test_gemini_cli_stream_json_keeps_the_session_id_of_an_init_after_output() -> None:
    translator = StreamJsonTranslator(cwd="/ws")
    translator.event(ANSWER)
    translator.event(INIT)
    assert translator.session_id == INIT["session_id"]


# --- a second permission request about a call already decided --------------------------------------------


def _allow(request: UserInputRequest) -> UserInputResponse:
    return UserInputResponse.allow()


def _asked(ctx: Context) -> int:
    return sum(isinstance(e, UserInputRequest) for e in ctx.events)


def _start() -> SessionStarted:
    return SessionStarted(backend="x", session_id="sess-1", transport="t")


@pytest.mark.anyio
async def test_claude_code_a_second_request_for_a_decided_call_is_denied_unasked(tmp_path: Path) -> None:
    """The user allowed `ls` once; the CLI asks again about the same call with another command."""
    ctx, wire = Context(_params(_allow, tmp_path), _allow), Wire()
    translator = StreamTranslator(include_thoughts=True)
    first: dict[str, Any] = {
        "type": "control_request",
        "request_id": "r1",
        "request": {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "ls"}, "tool_use_id": "t1"},
    }
    second = copy.deepcopy(first)
    second["request_id"] = "r2"
    second["request"]["input"] = {"command": "rm -rf ~"}
    await _claude_handle(translator, first, ctx, wire)
    await _claude_handle(translator, second, ctx, wire)
    assert [(a[1], a[2]["behavior"]) for a in wire.answers()] == [("r1", "allow"), ("r2", "deny")]
    assert _asked(ctx) == 1
    assert _protocol_problems([_start(), *ctx.events]) == []
    assert any(isinstance(e, WarningEvent) and "decided already" in e.message for e in ctx.events)


@pytest.mark.anyio
async def test_codex_a_second_approval_for_a_decided_call_is_declined_unasked(tmp_path: Path) -> None:
    ctx, wire = Context(_params(_allow, tmp_path), _allow), Wire()
    translator = AppServerTranslator("T")
    params = {"threadId": "T", "turnId": "U", "itemId": "call_1", "command": "ls", "cwd": str(tmp_path)}
    await _codex_handle(
        translator, {"id": 5, "method": "item/commandExecution/requestApproval", "params": params}, ctx, wire
    )
    again = {**params, "command": "rm -rf ~"}
    await _codex_handle(
        translator, {"id": 6, "method": "item/commandExecution/requestApproval", "params": again}, ctx, wire
    )
    question = {"threadId": "T", "turnId": "U", "itemId": "call_1", "questions": [{"id": "q", "question": "?"}]}
    await _codex_handle(translator, {"id": 7, "method": "item/tool/requestUserInput", "params": question}, ctx, wire)
    assert [(a[1], a[2]) for a in wire.answers()] == [
        (5, {"decision": "accept"}),
        (6, {"decision": "decline"}),
        (7, {"answers": {}}),
    ]
    assert _asked(ctx) == 1
    assert _protocol_problems([_start(), *ctx.events]) == []


@pytest.mark.anyio
async def test_gemini_cli_a_second_permission_request_for_a_decided_call_is_rejected_unasked(tmp_path: Path) -> None:
    ctx, wire = Context(_params(_allow, tmp_path), _allow), Wire()
    translator = AcpTranslator()
    options = [
        {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
    ]
    call: dict[str, Any] = {"toolCallId": "run_shell_command-1", "title": "ls", "kind": "execute", "status": "pending"}
    request: dict[str, Any] = {"sessionId": "sess-1", "toolCall": call, "options": options}
    await _gemini_handle(translator, {"id": 3, "method": "session/request_permission", "params": request}, ctx, wire)
    again = {**request, "toolCall": {**call, "title": "rm -rf ~"}}
    await _gemini_handle(translator, {"id": 4, "method": "session/request_permission", "params": again}, ctx, wire)
    assert [(a[1], a[2]["outcome"].get("optionId")) for a in wire.answers()] == [(3, "proceed_once"), (4, "cancel")]
    assert _asked(ctx) == 1
    assert _protocol_problems([_start(), *ctx.events]) == []


# --- huge session files ------------------------------------------------------------------------------------


def test_codex_listing_a_rollout_of_huge_lines_holds_one_line_at_a_time(tmp_path: Path) -> None:
    """Listing read up to 400 lines of a rollout (16 MB each at most) and kept them all to find a first prompt
    and a model: 6.4 GB for one file. A rollout of 40 outputs of 1 MB before its prompt."""
    from datetime import UTC, datetime

    output = {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c", "output": "o" * MiB}}
    context = {"type": "turn_context", "payload": {"model": "gpt-x", "cwd": "/p"}}
    big = [json.dumps(output)] * 40
    text = _rollout_text(CODEX_ID, *big, json.dumps(context))
    Rollouts(tmp_path).write(CODEX_ID, datetime(2026, 12, 1, tzinfo=UTC), text)
    del big, text
    tracemalloc.start()
    try:
        (info,) = Rollouts(tmp_path).list_sessions()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (info.first_prompt, info.model) == ("hello", "gpt-x")
    assert peak < 12 * MiB, f"listing one rollout held {peak / MiB:.0f} MiB"


def test_claude_code_listing_a_session_of_huge_lines_holds_one_line_at_a_time(tmp_path: Path) -> None:
    """Listing kept every line of a session file (up to its 256 MB bound) as Python objects to read a few
    fields. A session of 40 answers of 1 MB each."""
    home = tmp_path / "home"
    path = home / ".claude" / "projects" / project_dir_name("/work/a") / f"{CLAUDE_ID}.jsonl"
    answer = _claude_lines(CLAUDE_ID)[1]
    answer["message"]["content"] = [{"type": "text", "text": "a" * MiB}]
    write_lines(path, [_claude_lines(CLAUDE_ID)[0], *[answer] * 40])
    del answer
    tracemalloc.start()
    try:
        (info,) = SessionFiles(home).list_sessions()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (info.first_prompt, info.model) == ("first", "claude-x")
    assert peak < 12 * MiB, f"listing one session held {peak / MiB:.0f} MiB"


# --- retry delays that are no numbers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delay", "seconds"),
    [("1" + "0" * 400, math.inf), ("NaN", 0.0), ("-5000", 0.0), ("Infinity", math.inf), ("2500", 2.5)],
)
def test_claude_code_a_retry_delay_too_large_for_a_float_is_infinite_not_a_crash(delay: str, seconds: float) -> None:
    """`retry_delay_ms / 1000` of a 401-digit integer raised OverflowError out of the translator."""
    line = f'{{"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 3, "retry_delay_ms": {delay}}}'
    message = parse_object(line)
    assert isinstance(message, dict)
    (retry,) = StreamTranslator(include_thoughts=True).line(message)
    assert isinstance(retry, Retry)
    assert retry.delay_s == seconds


@pytest.mark.parametrize("wait", ["1.2.3s", ".s", "1" + "0" * 400 + "s"])
def test_codex_a_retry_hint_that_is_no_number_is_a_rate_limit_without_a_delay(wait: str) -> None:
    """`float("1.2.3")` (the pattern took any run of digits and dots) raised ValueError out of the error's making."""
    error = error_from_turn_error(
        {"message": f"Rate limit reached. Please try again in {wait}.", "codexErrorInfo": "usageLimitExceeded"},
        where="openai",
    )
    assert isinstance(error, RateLimited)
    assert "retry_after_s" not in error.details


def test_codex_a_retry_hint_that_is_a_number_is_kept() -> None:
    error = error_from_turn_error({"message": "try again in 20ms", "codexErrorInfo": "rateLimitExceeded"}, where="x")
    assert error.details["retry_after_s"] == 0.02


# --- a permission prompt that rewrites the terminal -----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf ~ #\x1b[2K\x1b[1G? Allow running `ls`?",  # erase the line, back to its start, a harmless prompt
        "ls\x1b[8m; rm -rf ~\x1b[0m",  # concealed text
        "ls #\u202e ~ fr- mr ;",  # a right-to-left override
    ],
)
def test_the_terminal_prompt_shows_a_command_s_control_characters_instead_of_obeying_them(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The model's command reaches the permission prompt of `unified run` as it is: an escape sequence in
    it rewrote the line the user read before answering."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=300)
    monkeypatch.setattr(console, "input", lambda prompt="": "1")
    question = Question(
        id="permission",
        prompt=_summary("Bash", {"command": command}),
        options=[QuestionOption(id="allow_once", label="allow once"), QuestionOption(id="deny", label="deny")],
    )
    answer = ask_in_terminal(UserInputRequest(request_id="r", source="permission", questions=[question]), console)
    assert answer.answers == {"permission": "allow_once"}
    shown = out.getvalue()
    assert "\x1b" not in shown
    assert "\u202e" not in shown
    assert "rm -rf ~" in shown or "fr- mr" in shown


@pytest.mark.parametrize(
    "event",
    [
        TextDelta(text="done.\x1b[2K\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"),  # erase the line, write the clipboard
        ToolUse(tool_use_id="t", name="Bash", input={"command": "ls"}).model_copy(update={"name": "Bash\x1b[8m"}),
        WarningEvent(code="malformed_line", message="bad line \u202e gnp.exe"),
    ],
)
def test_the_event_rendering_shows_control_characters_instead_of_obeying_them(event: Any) -> None:
    text = Renderer().render(event)
    assert text is not None
    assert "\x1b" not in text.plain
    assert "\x07" not in text.plain
    assert "\u202e" not in text.plain


# --- a control request nobody can answer -------------------------------------------------------------------


@pytest.mark.anyio
async def test_claude_code_a_control_request_with_a_number_for_its_id_is_answered_under_that_id(tmp_path: Path) -> None:
    """It was dropped without a word, then (round 9) only warned about: a CLI waiting for its answer stalled the
    run. A number is an id the CLI can match: the request is refused under it (bad input round 10)."""
    message = {"type": "control_request", "request_id": 7, "request": {"subtype": "can_use_tool", "tool_name": "Bash"}}
    ctx, wire = Context(_params(_allow, tmp_path), _allow), Wire()
    await _claude_handle(StreamTranslator(include_thoughts=True), message, ctx, wire)
    [(kind, request_id, _)] = wire.answers()
    assert (kind, request_id) == ("error", 7)
    (warning,) = [e for e in ctx.events if isinstance(e, WarningEvent)]
    assert warning.code == "malformed_line"
    assert "answered it with an error under that id" in warning.message


@pytest.mark.anyio
@pytest.mark.parametrize("request_id", ["missing", None, [1], {"id": "r1"}])
async def test_claude_code_a_control_request_no_answer_can_name_ends_the_run(
    request_id: object, tmp_path: Path
) -> None:
    """No id, null, a list or an object: no answer can name it, and the CLI waits for one; the run ends with a
    typed error saying so (it was a warning, and the run hung until its idle timeout)."""
    message: dict[str, Any] = {"type": "control_request", "request": {"subtype": "can_use_tool", "tool_name": "Bash"}}
    if request_id != "missing":
        message["request_id"] = request_id
    ctx, wire = Context(_params(_allow, tmp_path), _allow), Wire()
    with pytest.raises(UnifiedError) as ended:
        await _claude_handle(StreamTranslator(include_thoughts=True), message, ctx, wire)
    assert ended.value.code == "backend_error"
    assert "control_request (can_use_tool)" in ended.value.message
    assert "which no answer can name" in ended.value.message
    assert ended.value.hint is not None
    assert "claude update" in ended.value.hint
    assert wire.answers() == []


# --- a followed line that never ends ---------------------------------------------------------------------


def test_a_followed_line_that_never_ends_is_skipped_not_held(tmp_path: Path) -> None:
    """The Gemini CLI's chat records are followed while it writes them: a line that does not end was kept
    whole as the unfinished rest, growing with every poll for as long as the binary wrote it."""
    path = tmp_path / "session.jsonl"
    path.write_bytes(b'{"n": 0}\n')
    tail = JsonlTail(path)
    with contextlib.suppress(AttributeError):  # the JsonlTail before had no limit: it kept the line whole
        tail.limit = MiB  # the default is 64 MiB
    assert tail.read() == [{"n": 0}]
    with path.open("ab") as handle:
        for _ in range(8):
            handle.write(b"x" * MiB)
    tracemalloc.start()
    try:
        records = tail.read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert records == []
    assert len(tail.partial) <= MiB
    assert peak < 6 * MiB, f"one poll held {peak / MiB:.0f} MiB"  # the old code: 16 MiB
    with path.open("ab") as handle:
        handle.write(b"x" * 100 + b'\n{"n": 1}\n{"n": 2}')
    assert tail.read() == [{"n": 1}]
    with path.open("ab") as handle:
        handle.write(b"\n")
    assert tail.read() == [{"n": 2}]


# --- Claude Code answering a call twice ----------------------------------------------------------------


def test_claude_code_a_second_result_of_one_call_is_not_shown() -> None:
    """A `tool_result` (or a server tool's result) the CLI sends twice for one call: the second one went out
    as a second `tool_result`, which the stream guard reports as `protocol_violation`, "a bug in unified"."""
    translator = StreamTranslator(include_thoughts=True)
    use = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}
    search = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}}
    found = {"type": "web_search_tool_result", "tool_use_id": "s1", "content": []}
    assistant = {"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [use, search, found]}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "x"}
    user = {"type": "user", "message": {"role": "user", "content": [result, result]}}
    events = [e for m in (assistant, assistant, user, user) for e in translator.line(m) if isinstance(e, BaseModel)]
    assert _protocol_problems([_start(), *events]) == []
    assert sum(isinstance(e, ToolResult) for e in events) == 2


def test_gemini_cli_stream_json_a_warning_before_init_does_not_start_the_session() -> None:
    """A warning may come before the session (the guard lets it): the session is still the `init`'s."""
    warning = {"type": "error", "severity": "warning", "message": "w"}
    events = _stream_json(warning, INIT, ANSWER)
    assert _protocol_problems(events) == []
    (started,) = [e for e in events if isinstance(e, SessionStarted)]
    assert started.session_id == INIT["session_id"]
    assert started.model == "gemini-x"


def test_a_command_s_later_lines_are_marked_as_its_own_never_a_prompt_of_ours(monkeypatch: pytest.MonkeyPatch) -> None:
    """A multi-line command is legitimate, so its line breaks stay; but a line of it that reads like a
    prompt (`? Allow running ls?`) is shown as a continuation of the command, not as a question."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system=None, width=300)
    monkeypatch.setattr(console, "input", lambda prompt="": "2")
    command = "rm -rf ~\n? Allow running `ls`?\r\n  1. allow once"
    question = Question(
        id="permission",
        prompt=_summary("Bash", {"command": command}),
        options=[QuestionOption(id="allow_once", label="allow once"), QuestionOption(id="deny", label="deny")],
    )
    ask_in_terminal(UserInputRequest(request_id="r", source="permission", questions=[question]), console)
    lines = out.getvalue().splitlines()
    assert [line for line in lines if line.startswith("? ")] == [lines[0]]  # one question line: ours
    assert "  ┆ ? Allow running `ls`?" in lines
    assert "  ┆   1. allow once`?" in lines  # the summary's closing quote: still the command's line
