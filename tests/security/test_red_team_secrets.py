"""Red team, secrets (round 4): an attacker who read the code and wants a credential out of a run.

Each test is one attack, and fails if the leak it tries exists. Those marked "worked" got a secret (or
a piece of one) out before the fix in the same commit; the others are attacks the code already
stopped, kept so it goes on stopping them.

- worked: Anthropic and OpenAI keys (`sk-ant-api03-...`, `sk-proj-...`, legacy `sk-` + 48) had no
  shape in `KEY_SHAPES`: under a variable whose name says nothing (`OPENAI_KEY`, `CLAUDE_KEY`) they
  were no secret at all: passed to the shell tool's environment, printed by `env`, kept in cassettes;
- worked: a key given only in `backend_options` (codex's `api_key`), cut by a quote made before the
  stream guard (a stdout line that is no JSON: `clip` knew the environment's secrets only), reached
  the `malformed_line` warning as a piece the guard, which replaces whole secrets, let through;
- worked: a `Fallback`'s own `backend_options` (`api_key`) were no secret of the run: the guard
  hid the first backend's options only, so the key the fallback backend ran with came out whole;
- worked: secrets given in code under `env` with a name that says nothing (`{"env": {"OPENAI_KEY":
  "sk-proj-..."}}`) or in a URL's password (`base_url="https://u:PASSWORD@proxy"`) were no secret;
- worked: a session of the API backends saved with the option key in it (the model echoed it): the
  session store redacted the environment's secrets only, so `unified sessions show` and `export`
  printed it;
- worked: repr() of options or params with a credential-shaped value under a name that says nothing;
- the rest: see each test.
"""

from __future__ import annotations

import contextvars
import json
import random
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.codex.test_codex_launch_and_run import app_server, finished, notify
from unified import ExecuteParams
from unified._execute import EventStream
from unified._redaction import REDACTED, SPLIT_HOLD_MIN, clip, is_secret, redact_key_shapes, redactor
from unified.events import Result, UnifiedEvent, WarningEvent
from unified.testing import (
    FakeGemini,
    Fault,
    FunctionCall,
    InteractionTurn,
    ModelTurn,
    ScriptedBackend,
    TextStep,
    Thought,
)
from unified.testing._cassettes import scrub_text

pytestmark = pytest.mark.anyio


def _chars(count: int, seed: int, extra: str = "") -> str:
    """`count` made-up key characters (letters, digits, `extra`), the same on every run."""
    alphabet = string.ascii_letters + string.digits + extra
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(count))


# The real formats, made-up characters: Anthropic 108 characters, OpenAI project keys 164, legacy 51.
ANTHROPIC = "sk-ant-api03-" + _chars(93, 1, "-_") + "AA"
ANTHROPIC_ADMIN = "sk-ant-admin01-" + _chars(93, 2, "-_") + "AA"
ANTHROPIC_OAUTH = "sk-ant-oat01-" + _chars(93, 3, "-_") + "AA"
OPENAI_PROJECT = "sk-proj-" + _chars(74, 4, "-_") + "T3BlbkFJ" + _chars(74, 5, "-_")
OPENAI_SERVICE = "sk-svcacct-" + _chars(58, 6, "-_") + "T3BlbkFJ" + _chars(58, 7, "-_")
OPENAI_LEGACY = "sk-" + _chars(20, 8) + "T3BlbkFJ" + _chars(20, 9)
REAL_SHAPES = [ANTHROPIC, ANTHROPIC_ADMIN, ANTHROPIC_OAUTH, OPENAI_PROJECT, OPENAI_SERVICE, OPENAI_LEGACY]


def _pieces(secret: str, text: str, size: int = SPLIT_HOLD_MIN + 4) -> list[str]:
    """Every `size`-character piece of `secret` that `text` shows."""
    return sorted({secret[i : i + size] for i in range(len(secret) - size + 1) if secret[i : i + size] in text})


def _no_file_holds(root: Path, secret: str) -> None:
    """No file under `root` (a test's isolated home: session stores, CLI homes) holds a piece of `secret`."""
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, "something was written under the isolated home"
    for path in files:
        assert _pieces(secret, path.read_text(errors="replace")) == [], path


def _dumped(events: list[UnifiedEvent]) -> str:
    return "\n".join(e.model_dump_json() for e in events)


# --- 1. Anthropic and OpenAI key shapes ------------------------------------------------------------------


@pytest.mark.parametrize("key", REAL_SHAPES, ids=["anthropic", "admin", "oauth", "project", "service", "legacy"])
def test_anthropic_and_openai_keys_are_secrets_by_their_shape_whatever_their_variable(key: str) -> None:
    """worked: `CLAUDE_KEY` / `OPENAI_KEY` (no secret-looking name) held a key unified did not know for one."""
    for name in ("CLAUDE_KEY", "OPENAI_KEY", "MY_CONFIG", "X"):
        assert is_secret(name, key)
    assert redact_key_shapes(f"key={key}&x=1") == f"key={REDACTED}&x=1"
    assert redact_key_shapes(f'{{"k": "{key}"}}') == f'{{"k": "{REDACTED}"}}'
    assert _pieces(key, scrub_text(f"Authorization: x {key}\n")) == []  # a cassette: no piece either


@pytest.mark.parametrize(
    "text",
    [
        "sk-learn",
        "sk-proj-alpha",
        "risk-assessment and task-admin-settings-for-the-new-user-interface-page",
        "sk-admin-dashboard-configuration-screen-for-everyone-who-asks",  # lowercase slug: no key
        "disk-" + "a" * 60,  # 48+ letters, but more than 48: not a legacy key
        "sk-ant-api03-short",  # a prefix alone
        "ask-ant-colony",
    ],
)
def test_ordinary_text_that_begins_like_a_key_survives(text: str) -> None:
    assert redact_key_shapes(text) == text
    assert not is_secret("NOTE", text)


@pytest.mark.e2e  # runs a shell
async def test_a_key_shaped_variable_never_reaches_the_shell_tool_nor_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """worked: the caller lets `OPENAI_*` and `CLAUDE_*` into the shell (for `OPENAI_BASE_URL`, say):
    `OPENAI_KEY=sk-proj-...` was no secret, so the shell got it and `env` showed it to the model; a
    file holding it was shown too. `/proc/$PPID/environ` (unified's own process) is read as well."""
    from unified.tools import ToolCall, ToolRuntime

    monkeypatch.setenv("OPENAI_KEY", OPENAI_PROJECT)
    monkeypatch.setenv("CLAUDE_KEY", ANTHROPIC)
    monkeypatch.setenv("OPENAI_BASE_URL_NOTE", "kept")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text(f"openai: {OPENAI_PROJECT}\nclaude: {ANTHROPIC}\n")
    command = "env; cat notes.txt; tr '\\0' '\\n' < /proc/$PPID/environ; tr '\\0' '\\n' < /proc/self/environ"
    async with ToolRuntime(ws, approval_mode="yolo", shell_env_allowlist=("OPENAI_*", "CLAUDE_*")) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
    shown = json.dumps(outcome.response, default=str)
    assert "OPENAI_BASE_URL_NOTE=kept" in shown, "the allowlist works: the command ran and printed env"
    assert "OPENAI_KEY" not in shown, "not in the shell's environment"
    assert f"openai: {REDACTED}" in shown
    for key in (OPENAI_PROJECT, ANTHROPIC):
        assert _pieces(key, shown) == []


# --- 2. secrets given in code reach every redaction point of their run --------------------------------


def test_a_cut_inside_a_run_knows_the_secrets_the_run_was_given() -> None:
    """`clip` (every quote cut before the guard) inside a run's context replaces its option secrets first;
    outside it (another run, the caller's code) it neither knows nor hides them."""
    from unified._redaction import use_run_secrets

    line = "x" * 190 + OPENAI_PROJECT + " tail"

    def inside() -> str:
        use_run_secrets([OPENAI_PROJECT])
        return clip(line, 200)

    shown = contextvars.copy_context().run(inside)
    assert shown == "x" * 190 + REDACTED
    assert clip(line, 200) == line[:200], "another context (another run) is not touched"
    assert OPENAI_PROJECT not in redactor().values


def _codex_stand_in(
    after_turn: Sequence[str | bytes], started: list[dict[str, str]], processes: list[Any] | None = None
) -> Any:
    """The stand-in `codex app-server` of the codex adapter's tests, writing `after_turn` once the turn
    started; `started` receives the environment each process was started with, `processes` the processes."""
    starter = app_server(lambda process: after_turn)

    def start(argv: Any, cwd: Path, env: Any) -> Any:
        started.append(dict(env))
        process = starter(argv, cwd, env)
        if processes is not None:
            processes.append(process)
        return process

    return start


async def _codex_run(tmp_path: Path, starter: Any, **options: Any) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="hello",
        backend="codex",
        cwd=tmp_path,
        backend_options={"start_process": starter, "codex_home": tmp_path / "home", **options},
    )
    async with EventStream(params) as stream:
        return [event async for event in stream]


@pytest.mark.parametrize("offset", [150, 185, 196])
async def test_codex_an_option_key_cut_by_the_quote_of_a_line_that_is_no_json(tmp_path: Path, offset: int) -> None:
    """worked: the key only in `api_key`; the app-server prints a line that is no JSON with the key
    across the quote's 200th character: the warning showed its first part."""
    started: list[dict[str, str]] = []
    processes: list[Any] = []
    line = "x" * offset + OPENAI_PROJECT + " and the rest"
    starter = _codex_stand_in([line, *finished()], started, processes)
    events = await _codex_run(tmp_path, starter, api_key=OPENAI_PROJECT)
    [login] = [json.loads(sent) for sent in processes[0].received if "account/login/start" in sent]
    assert login["params"]["apiKey"] == OPENAI_PROJECT, "the child got the key (from the option), by login"
    assert OPENAI_PROJECT not in started[0].values(), "never in its environment"
    [warning] = [e for e in events if isinstance(e, WarningEvent) and e.code == "malformed_line"]
    assert "xxxxxxxx" in warning.message
    assert _pieces(OPENAI_PROJECT, _dumped(events)) == []


# --- 3. generate-content against FakeGemini: fallbacks, the session store, URL passwords ---------------

OPTION_KEY = "AIzaSy" + _chars(33, 10, "-_")
"""A Google key given in `backend_options` only: never in the environment."""
FALLBACK_KEY = "AIzaSy" + _chars(33, 11, "-_")


def _gc_options(server: Any, key: str = OPTION_KEY, **more: Any) -> dict[str, Any]:
    return {"api_key": key, "base_url": server.base_url, "retry_delay_scale": 0.001, **more}


async def _gc_run(params: ExecuteParams) -> list[UnifiedEvent]:
    async with EventStream(params) as stream:
        return [event async for event in stream]


async def test_a_fallback_s_own_api_key_is_a_secret_of_the_run(tmp_path: Path) -> None:
    """worked: the first backend's credentials are refused (401); the run fails over to a `Fallback` with
    its own `api_key`, which the model (or the server's error text) echoes: it came out whole."""
    from unified.types import Fallback

    echo = ModelTurn(text=f"the key I was sent: {FALLBACK_KEY}", thoughts=[Thought(text=f"it is {FALLBACK_KEY}")])
    async with FakeGemini([echo], check_history=False) as server:
        server.inject(Fault(kind="unauthenticated", message=f"API key not valid: {OPTION_KEY}"), at_request=0)
        params = ExecuteParams(
            prompt="hi",
            backend="generate-content",
            model="gemini-2.5-flash",
            cwd=tmp_path,
            backend_options=_gc_options(server),
            fallback=(Fallback(backend="generate-content", backend_options=_gc_options(server, FALLBACK_KEY)),),
        )
        events = await _gc_run(params)
    assert any(e.type == "failover" for e in events), [e.type for e in events]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    shown = _dumped(events)
    assert "the key I was sent: [REDACTED]" in shown
    for key in (OPTION_KEY, FALLBACK_KEY):
        assert _pieces(key, shown) == []
    assert FALLBACK_KEY not in repr(params)


async def test_a_session_saved_by_the_api_backends_holds_no_option_key(tmp_path: Path, isolated_home: Path) -> None:
    """worked: the key only in `backend_options`; the model echoes it (text, a thought, a tool call's
    arguments): the session store redacted the environment's secrets only, so the session file held it,
    and `sessions.show`, `export` and `unified sessions show` printed it."""
    from typer.testing import CliRunner

    from unified import sessions
    from unified._cli.main import app

    turns = [
        ModelTurn(
            thoughts=[Thought(text=f"the key is {OPTION_KEY}")],
            function_calls=[FunctionCall(name="read_file", args={"absolute_path": f"/tmp/{OPTION_KEY}"})],
        ),
        ModelTurn(text=f"your key: {OPTION_KEY}"),
    ]
    ws = tmp_path / "ws"
    ws.mkdir()
    async with FakeGemini(turns, check_history=False) as server:
        params = ExecuteParams(
            prompt="hi",
            backend="generate-content",
            model="gemini-2.5-flash",
            cwd=ws,
            approval_mode="yolo",
            backend_options=_gc_options(server),
        )
        events = await _gc_run(params)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert result.short_id is not None
    _no_file_holds(isolated_home, OPTION_KEY)
    shown = json.dumps(await sessions.show(result.short_id), default=str)
    exported = (await sessions.export(result.short_id)).model_dump_json()
    assert "your key: [REDACTED]" in exported
    cli = CliRunner().invoke(app, ["sessions", "show", result.short_id])
    for text in (shown, exported, cli.output):
        assert _pieces(OPTION_KEY, text) == []


# --- 4. cuts made before the redaction (each replaced with `clip`) -------------------------------------

ENV_KEY = "AIzaSy" + _chars(33, 12, "-_")


@pytest.fixture
def env_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("GEMINI_API_KEY", ENV_KEY)
    return ENV_KEY


@pytest.mark.parametrize("before", [170, 185, 195])
async def test_a_search_hit_cut_at_200_characters_shows_no_piece_of_a_key(
    tmp_path: Path, env_key: str, before: int
) -> None:
    """worked: a file's line holds the key across the search hit's 200th character: the hit showed its
    first part (13 characters of it for `before=185`), which the runtime's redactor did not know."""
    from unified.tools import ToolCall, ToolRuntime

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "config.txt").write_text("needle " + "y" * (before - 7) + env_key + " tail\n")
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        [outcome] = await tools.run_batch([ToolCall("s", "search", {"query": "needle"})])
    shown = json.dumps(outcome.response)
    assert "config.txt:1: needle yyy" in shown
    assert _pieces(env_key, shown, SPLIT_HOLD_MIN) == []


def test_a_path_too_long_quotes_no_piece_of_a_key(tmp_path: Path, env_key: str) -> None:
    """worked: the model names a path with the key across its 80th character; the error quoted 79."""
    from unified.tools._base import ToolError
    from unified.tools._paths import Workspace

    raw = "d" * 70 + env_key + "/x" * 3000
    with pytest.raises(ToolError) as caught:
        Workspace(tmp_path)._resolve_sync(raw)
    assert "Path too long" in str(caught.value)
    assert _pieces(env_key, str(caught.value), SPLIT_HOLD_MIN) == []


def test_a_command_s_permission_summary_and_session_rule_show_no_piece_of_a_key(env_key: str) -> None:
    """worked: a command with the key across the 80th (session rule's name) or 120th (a part shown in the
    permission prompt) character: "allow always" named the rule after the first part of the key,
    reported in every later `permission_decision`; the prompt's "It runs:" quoted its first part."""
    from unified.tools._policy import session_rule
    from unified.tools._runtime import _summary

    for lead in (60, 75, 100, 115):
        command = "curl -H 'x-goog-api-key: " + "k" * (lead - 25) + env_key + "' https://example.test && echo done"
        name = session_rule("run_shell_command", {"command": command}, "default").name or ""
        summary = _summary("run_shell_command", {"command": command})
        assert "It runs:" in summary
        for text in (name, summary):
            assert _pieces(env_key, redactor()(text), SPLIT_HOLD_MIN) == [], (lead, text)


def test_interactions_cuts_of_an_error_of_unparsed_arguments_and_of_a_prompt_show_no_piece_of_a_key(
    env_key: str,
) -> None:
    """worked: a reading error quoted at 300 characters (`_why`), a function call's arguments that are no
    JSON kept at 1000 (in `tool_use.input`, and read by the model), all with the key across the cut."""
    from unified._adapters.interactions._translate import _Step, _why

    why = _why(ValueError("v" * 270 + env_key + " after"))
    step = _Step({"type": "function_call", "name": "f"}, arguments=["not json " + "a" * 975 + env_key + " more"])
    given = _Step({"type": "function_call", "name": "f", "arguments": ["b" * 985 + env_key]})
    for text in (why, json.dumps(step.call_arguments()), json.dumps(given.call_arguments())):
        assert _pieces(env_key, redactor()(text), SPLIT_HOLD_MIN) == [], text


async def test_interactions_a_background_agent_s_description_shows_no_piece_of_a_key(
    tmp_path: Path,
) -> None:
    """worked: the prompt (which names the key given in `api_key`) cut at 200 for `subagent_started`."""

    async with FakeGemini([InteractionTurn(steps=[TextStep(text="Report: done.")], background_polls=1)]) as server:
        params = ExecuteParams(
            prompt="p" * 170 + f" check that {OPTION_KEY} works",
            backend="interactions",
            cwd=tmp_path,
            backend_options={
                **_gc_options(server),
                "poll_interval_s": 0.01,
                "agent": "deep-research-pro-preview-12-2025",
                "background": True,
                "stream": False,
            },
        )
        events = await _gc_run(params)
    assert [e for e in events if e.type == "subagent_started"]
    assert _pieces(OPTION_KEY, _dumped(events), SPLIT_HOLD_MIN) == []


# --- 5. the stream guard: a key split across two streams ---------------------------------------------


async def _scripted(steps: list[Any], **params: Any) -> list[UnifiedEvent]:
    from unified.events import SessionStarted

    started = SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp")
    backend = ScriptedBackend([started, *steps])
    async with EventStream(ExecuteParams(prompt="p", backend="scripted", **params), backend=backend) as stream:
        return [event async for event in stream]


@pytest.mark.parametrize("cut", [4, 10, 20, 35])
@pytest.mark.parametrize("order", ["thinking-text", "text-thinking", "text-progress", "subagent-main"])
async def test_a_key_split_across_two_streams_is_caught(env_key: str, cut: int, order: str) -> None:
    """worked: a key begun in a thought and finished in the answer's text (or the other way round, or
    across a subagent's text and the main text): each stream's guard saw only its own part; the first
    part was held and replaced, but the rest came out in the next stream."""
    from unified.events import SubagentStarted, TextDelta, Thinking, ToolProgress, ToolUse

    first, second = f"so it is {env_key[:cut]}", f"{env_key[cut:]} and more"
    steps: list[Any] = {
        "thinking-text": [Thinking(text=first, replace=False), TextDelta(text=second)],
        "text-thinking": [TextDelta(text=first), Thinking(text=second, replace=False)],
        "text-progress": [
            ToolUse(tool_use_id="t1", name="run_shell_command", input={}),
            ToolProgress(tool_use_id="t1", message=first),
            TextDelta(text=second),
        ],
        "subagent-main": [
            SubagentStarted(task_id="a1", agent_name="helper"),
            TextDelta(text=first, subagent_task_id="a1"),
            TextDelta(text=second),
        ],
    }[order]
    events = await _scripted(steps)
    pieces = [getattr(e, "text", None) or getattr(e, "message", None) or "" for e in events]
    for piece in pieces:
        assert env_key[SPLIT_HOLD_MIN - 1 :] not in piece
        assert _pieces(env_key, piece, SPLIT_HOLD_MIN + 1) == [], (piece, pieces)
    assert " and more" in "".join(pieces)


# --- 6. reprs: what a log line or a traceback shows of params and options -----------------------------

DB_URL = "postgresql://app:db-password-0123456@db.internal/app"


def test_reprs_of_params_and_options_show_no_credential_whatever_its_name() -> None:
    """worked: `redact_mapping` (reprs of params, options, MCP servers) hid values under secret-looking
    names only: `env={"OPENAI_KEY": "sk-proj-..."}`, a URL with a password, a key-shaped MCP env value
    were shown whole in repr(), hence in any log line or assertion message that printed the params."""
    from unified import ClaudeCodeOptions, CodexOptions, GenerateContentOptions
    from unified.types import Fallback, HttpMcpServer, StdioMcpServer

    env = {"OPENAI_KEY": OPENAI_PROJECT, "DATABASE_URL": DB_URL, "PLAIN": "visible-value"}
    objects: list[object] = [
        ExecuteParams(
            prompt="p",
            backend_options={"env": env, "api_key": OPTION_KEY, "base_url": "https://u:proxy-pass-0123@proxy.test/"},
            mcp_servers=(
                StdioMcpServer(name="s", command="x", env={"CLAUDE": ANTHROPIC}),
                HttpMcpServer(
                    name="h", url="https://h.test/mcp", headers={"X-Custom": OPENAI_LEGACY, "X-Other": "opaque-0123456"}
                ),
            ),
            fallback=(Fallback(backend="codex", backend_options={"env": env}),),
        ),
        CodexOptions(env=env, api_key=OPENAI_SERVICE, base_url="https://u:proxy-pass-0123@proxy.test/v1"),
        ClaudeCodeOptions(env={"CLAUDE_CODE_KEY": ANTHROPIC_OAUTH, **env}),
        GenerateContentOptions(api_key=OPTION_KEY, base_url="https://u:proxy-pass-0123@proxy.test/"),
    ]
    for thing in objects:
        shown = repr(thing) + str(thing)
        for secret in (*REAL_SHAPES, OPTION_KEY, "db-password-0123456", "proxy-pass-0123", "opaque-0123456"):
            assert secret not in shown, (secret, shown)
        assert "visible-value" in shown or "PLAIN" not in shown


# --- 7. codex: secrets given in its options, echoed by the app-server or printed as it crashes ----------


def _codex_secret_options() -> dict[str, Any]:
    return {
        "api_key": OPENAI_PROJECT,
        "env": {"MY_KEY": ANTHROPIC, "DATABASE_URL": DB_URL, "PLAIN": "plain-value"},
        "base_url": "http://u:proxy-pass-0123@127.0.0.1:9/v1",
    }


SECRETS_OF_OPTIONS = (OPENAI_PROJECT, ANTHROPIC, DB_URL, "db-password-0123456", "proxy-pass-0123")


async def test_codex_secrets_of_its_options_echoed_in_a_turn_are_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """worked: the options' `env` entries under names that say nothing (`MY_KEY`, `DATABASE_URL`) and the
    password of `base_url` were no secrets of the run: echoed in the model's text and a command's
    output, they came out whole. The child gets no other provider's key of unified's environment."""
    monkeypatch.setenv("GEMINI_API_KEY", ENV_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_ADMIN)
    started: list[dict[str, str]] = []
    echo = " ".join(SECRETS_OF_OPTIONS)
    after = [
        notify("item/started", item={"type": "commandExecution", "id": "c1", "command": "env", "cwd": "/w"}),
        notify("item/commandExecution/outputDelta", itemId="c1", delta=f"env: {echo}\n"),
        notify(
            "item/completed",
            item={"type": "commandExecution", "id": "c1", "command": "env", "aggregatedOutput": echo, "exitCode": 0},
        ),
        *finished(f"here they are: {echo}"),
    ]
    events = await _codex_run(tmp_path, _codex_stand_in(after, started), **_codex_secret_options())
    assert started[0]["MY_KEY"] == ANTHROPIC, "the child got what the options gave it"
    assert not {"GEMINI_API_KEY", "ANTHROPIC_API_KEY"} & set(started[0]), "and no other provider's key"
    assert not {ENV_KEY, ANTHROPIC_ADMIN} & set(started[0].values())
    shown = _dumped(events)
    assert "here they are: [REDACTED]" in shown
    for secret in SECRETS_OF_OPTIONS:
        assert _pieces(secret, shown) == [], secret


@pytest.mark.e2e  # starts a process
async def test_claude_code_a_binary_that_prints_its_environment_and_dies_shows_none_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `claude` binary prints its whole environment to stderr and exits before it answers: the
    error's message and `details.stderr_tail` quote that stderr. The environment it printed is the one
    it really got: no other provider's key (the Gemini or OpenAI key of unified's own environment).
    worked for `MY_KEY` (an Anthropic key: no shape then, and no secret-looking name)."""
    monkeypatch.setenv("GEMINI_API_KEY", ENV_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_LEGACY)
    fake = tmp_path / "claude"
    fake.write_text(
        '#!/bin/sh\nif [ "$1" = --version ]; then echo "2.1.332 (Claude Code)"; exit 0; fi\n'
        "env >&2\necho 'the CLI died' >&2\nexit 3\n"
    )
    fake.chmod(0o755)
    options = {
        "claude_binary": fake,
        "home": tmp_path / "home",
        "env": {
            "MY_KEY": ANTHROPIC,
            "DATABASE_URL": DB_URL,
            "CLAUDE_CODE_OAUTH_TOKEN": ANTHROPIC_OAUTH,
            "PLAIN": "plain-value",
        },
    }
    params = ExecuteParams(prompt="hello", backend="claude-code", cwd=tmp_path, backend_options=options)
    async with EventStream(params) as stream:
        events = [event async for event in stream]
    shown = _dumped(events)
    assert "PLAIN=plain-value" in shown, "the environment was printed and quoted"
    assert "GEMINI_API_KEY" not in shown, "the claude child never gets the Gemini key"
    assert "OPENAI_API_KEY" not in shown, "nor the OpenAI key"
    for secret in (ANTHROPIC, "db-password-0123456", ANTHROPIC_OAUTH, ENV_KEY, OPENAI_LEGACY):
        assert _pieces(secret, shown) == [], secret


# --- 8. a CLI's own session file, shown, exported, carried to another provider ------------------------


CLAUDE_SESSION = "536f72c5-73b2-43a2-93b4-ea679570dd03"


def _claude_session_that_printed(cwd: str) -> None:
    """A Claude Code session file (as the CLI writes it, unredacted) whose Bash call printed `env`,
    with ANTHROPIC_API_KEY in it, and whose answer quotes the key."""
    from unified._adapters.claude_code._launch import default_home
    from unified._adapters.claude_code._session_files import project_dir_name, write_lines

    session = CLAUDE_SESSION
    printed = f"PATH=/usr/bin\nANTHROPIC_API_KEY={ANTHROPIC}\n"
    lines: list[dict[str, Any]] = [
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": session,
            "cwd": cwd,
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": "print the environment"},
        },
        {
            "type": "assistant",
            "uuid": "m1",
            "parentUuid": "u1",
            "sessionId": session,
            "timestamp": "2026-12-01T10:00:01.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "env"}}],
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "m1",
            "sessionId": session,
            "cwd": cwd,
            "timestamp": "2026-12-01T10:00:02.000Z",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": printed}],
            },
        },
        {
            "type": "assistant",
            "uuid": "m2",
            "parentUuid": "u2",
            "sessionId": session,
            "timestamp": "2026-12-01T10:00:03.000Z",
            "message": {
                "id": "msg_2",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": f"Your key is {ANTHROPIC}."}],
            },
        },
    ]
    write_lines(default_home() / ".claude" / "projects" / project_dir_name(cwd) / f"{session}.jsonl", lines)


async def test_a_claude_code_session_file_holding_a_key_is_shown_and_exported_without_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """worked: Claude Code writes its session file itself, unredacted: a Bash command printed `env`
    (its ANTHROPIC_API_KEY is in it) or a file with the key. `sessions.show` and `sessions.export`
    (what a failover carries to the next provider as history) returned it whole; only the CLI's
    printing redacted it."""
    from unified import sessions

    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC)
    cwd = "/work/a"
    _claude_session_that_printed(cwd)
    session = CLAUDE_SESSION
    shown = json.dumps(await sessions.show(session[:8], backend="claude-code", cwd=cwd), default=str)
    exported = (await sessions.export(session[:8], backend="claude-code", cwd=cwd)).model_dump_json()
    assert "Your key is [REDACTED]." in exported
    assert "ANTHROPIC_API_KEY=[REDACTED]" in shown
    for text in (shown, exported):
        assert _pieces(ANTHROPIC, text) == []


async def test_a_failover_carries_no_key_of_the_failed_backend_s_session_to_the_next_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """worked: resuming that Claude Code session when the claude binary is missing fails over to
    generate-content, which continues the exported history: the Anthropic key went to Google."""
    from unified.types import Fallback

    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC)
    ws = tmp_path / "ws"
    ws.mkdir()
    _claude_session_that_printed(str(ws))
    async with FakeGemini([ModelTurn(text="continued")], check_history=False) as server:
        params = ExecuteParams(
            prompt="go on",
            backend="claude-code",
            cwd=ws,
            resume=CLAUDE_SESSION,
            backend_options={"claude_binary": tmp_path / "no-such-claude"},
            fallback=(Fallback(backend="generate-content", backend_options=_gc_options(server)),),
        )
        events = await _gc_run(params)
        sent = "\n".join(json.dumps(r.body, default=str) for r in server.requests)
    assert any(e.type == "failover" for e in events), [e.type for e in events]
    assert "ANTHROPIC_API_KEY=[REDACTED]" in sent, "the history was carried"
    assert _pieces(ANTHROPIC, sent) == []
    assert _pieces(ANTHROPIC, _dumped(events)) == []


async def test_a_search_hit_cut_through_a_key_given_only_in_the_options_shows_no_piece_of_it(tmp_path: Path) -> None:
    """The search runs in a worker thread: the run's secrets (a context variable) reach its cut there too.
    worked before 338cd05 (the cut knew the environment's secrets only)."""

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "config.txt").write_text("needle " + "y" * 180 + OPTION_KEY + " tail\n")
    turns = [ModelTurn(function_calls=[FunctionCall(name="search", args={"query": "needle"})]), ModelTurn(text="ok")]
    async with FakeGemini(turns, check_history=False) as server:
        params = ExecuteParams(
            prompt="find the needle",
            backend="generate-content",
            model="gemini-2.5-flash",
            cwd=ws,
            approval_mode="yolo",
            backend_options=_gc_options(server),
        )
        events = await _gc_run(params)
        sent = "\n".join(json.dumps(r.body, default=str) for r in server.requests)
    results = [e for e in events if e.type == "tool_result"]
    assert results, [e.type for e in events]
    assert "needle yyy" in sent, "the model got the hit"
    for text in (_dumped(events), sent):
        assert _pieces(OPTION_KEY, text, SPLIT_HOLD_MIN) == []


async def test_native_events_tool_inputs_and_user_input_requests_hide_a_key(env_key: str) -> None:
    """The raw backend event (`include_native`), a tool call's input (a key as a dict key, deep in a
    list), a permission request's details, a result's error: every field the guard delivers."""
    from unified.events import ToolResult, ToolUse, permission_request

    steps: list[Any] = [
        ToolUse(
            tool_use_id="t1",
            name="run_shell_command",
            input={"command": f"curl -H 'x-goog-api-key: {env_key}'", env_key: [{"deep": (env_key,)}]},
            native={"raw": {"args": f"...{env_key}..."}},
        ),
        permission_request(
            "r1",
            f"Allow running `curl -H 'x-goog-api-key: {env_key}'`?",
            tool_use_id="t1",
            tool_name="run_shell_command",
            details={"args": {"command": env_key}},
        ),
        ToolResult(tool_use_id="t1", output=f"echoed {env_key}", is_error=True, data={"k": env_key}),
    ]
    events = await _scripted(steps, include_native=True)
    assert any(e.native for e in events if isinstance(e, ToolUse))
    assert _pieces(env_key, _dumped(events)) == []
