"""Secrets, round 2 (issue 24, "Secrets"): every output type, redaction before any cut, secrets
split across pieces of a stream, credential files, the CLI child's environment, cassettes.

The attacker is the model: it returns secrets in structures a string-only redactor skips, places
a key where a size cap cuts, prints it in two pieces, reads the credential file the environment
names (in plan mode, where reads are allowed), runs `env` in the CLI child, and waits for a
recorded cassette to carry what the run was given in code.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams
from unified import _limits as limits
from unified._adapters.gemini_cli._launch import gemini_env
from unified._execute import EventStream
from unified._redaction import REDACTED, SPLIT_HOLD_MIN, SplitGuard, redactor
from unified.events import SessionStarted, TextDelta, Thinking, ToolProgress, ToolResult, ToolUse, UnifiedEvent
from unified.testing._fake_acp import FakeAcp, Finish, text
from unified.testing._fake_gemini import FakeGemini
from unified.testing._record import record_run
from unified.testing._scenario import ModelTurn
from unified.testing._scripted import ScriptedBackend, Step
from unified.tools import ToolCall, ToolRuntime
from unified.types import StdioMcpServer

pytestmark = pytest.mark.anyio

KEY = "AIzaSyD-round-two-secret-key-0123456789ab"
TOKEN = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
STORE = "postgresql://unified:store-password-1234@db.internal/sessions"


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", STORE)
    monkeypatch.setenv("DEPLOY_TOKEN", TOKEN)


def _clean(value: Any) -> None:
    text = json.dumps(value, default=str)
    for secret in (KEY, TOKEN, "store-password-1234"):
        assert secret not in text
        for size in (12, 20):  # no long fragment either
            assert all(secret[i : i + size] not in text for i in range(len(secret) - size + 1))


# --- every output type ----------------------------------------------------------------------------


async def test_structured_outputs_of_a_custom_tool_are_redacted_keys_included(ws: Path, secret_env: None) -> None:
    def leak_dict() -> dict[str, Any]:
        """Returns the key everywhere a structure can hold it."""
        return {"key": KEY, KEY: "as a key", "nested": [{"deep": [KEY, (TOKEN,)]}], "n": 1}

    def leak_list() -> list[Any]:
        return [KEY, {"t": TOKEN}, [[[KEY]]]]

    def leak_tuple() -> tuple[str, ...]:
        return (f"prefix{KEY}suffix", TOKEN)

    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        for fn in (leak_dict, leak_list, leak_tuple):
            tools.register(fn)
        outcomes = await tools.run_batch([ToolCall(f, f, {}) for f in ("leak_dict", "leak_list", "leak_tuple")])
    for outcome in outcomes:
        assert not outcome.is_error
        _clean(outcome.response)
        assert REDACTED in json.dumps(outcome.response)


async def test_secrets_given_in_code_are_redacted_from_tool_outputs(ws: Path) -> None:
    """No environment: the runtime is told the run's secrets (backend_options, MCP env)."""

    def leak() -> dict[str, str]:
        """Returns a secret the environment does not hold."""
        return {"api_key": KEY}

    async with ToolRuntime(ws, approval_mode="yolo", secrets=[KEY]) as tools:
        tools.register(leak)
        [outcome] = await tools.run_batch([ToolCall("1", "leak", {})])
    _clean(outcome.response)


@pytest.mark.parametrize("offset", [-len(KEY) - 1, -30, -20, -12, -3, -1, 0, 1, 5])
async def test_redaction_comes_before_the_cut(ws: Path, secret_env: None, offset: int) -> None:
    """The key placed across the 256 Ki character cap, at every offset: no piece of it survives."""
    cap = limits.MAX_TOOL_OUTPUT_CHARS
    payload = "x" * (cap + offset) + KEY + "y" * 50

    def big() -> str:
        """Returns a long text with the key near the cap."""
        return payload

    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        tools.register(big)
        [outcome] = await tools.run_batch([ToolCall("1", "big", {})])
    output = outcome.response["output"]
    _clean(output)
    assert "[output cut at 262,144 characters" in output
    assert len(output) < cap + 200


async def test_structured_output_over_the_cap_is_cut_after_redaction(ws: Path, secret_env: None) -> None:
    def many() -> list[str]:
        """Returns many keys."""
        return [KEY] * 20_000

    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        tools.register(many)
        [outcome] = await tools.run_batch([ToolCall("1", "many", {})])
    _clean(outcome.response)
    assert isinstance(outcome.response["output"], str)
    assert "[output cut at" in outcome.response["output"]


async def test_output_nested_too_deeply_is_refused_not_crashed(ws: Path) -> None:
    def deep() -> dict[str, Any]:
        """Returns data nested 900 levels."""
        value: dict[str, Any] = {}
        for _ in range(900):
            value = {"a": value}
        return value

    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        tools.register(deep)
        [outcome] = await tools.run_batch([ToolCall("1", "deep", {})])
    assert outcome.is_error
    assert "nested deeper than 64 levels" in outcome.response["error"]


# --- split across pieces of a stream -------------------------------------------------------------


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@pytest.mark.parametrize("seed", range(40))
def test_split_guard_never_shows_more_than_the_stated_bound(seed: int) -> None:
    """Random splits of text holding the key (once or twice, glued to words): what is shown never
    holds a piece of the key longer than SPLIT_HOLD_MIN - 1 characters (its first ones)."""
    rng = random.Random(seed)
    clean = redactor(env={"GEMINI_API_KEY": KEY})
    text = f"see {KEY} and again:{KEY}. AIz is not it; end" if seed % 2 else f"x{KEY}"
    cuts = rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 12)))
    guard = SplitGuard(clean)
    shown = [guard.feed(piece) for piece in _pieces(text, cuts)] + [guard.release()]
    assert KEY not in "".join(shown)
    for piece in shown:
        for size in range(SPLIT_HOLD_MIN, len(KEY) + 1):
            assert all(KEY[i : i + size] not in piece for i in range(len(KEY) - size + 1))
    assert ("and again" in "".join(shown)) is bool(seed % 2)


def test_an_empty_piece_after_a_release_shows_nothing_and_holds_nothing() -> None:
    """A release shows what was held; the stream's end it leaves behind begins the key, so the next
    piece, empty, must neither show that end again nor hold it (nothing of it is new)."""
    clean = redactor(env={"GEMINI_API_KEY": KEY})
    guard = SplitGuard(clean)
    assert guard.feed("look: " + KEY[:6]) == "look: "
    assert guard.holding
    assert guard.release() == KEY[:6]
    assert guard.feed("") == ""
    assert not guard.holding
    assert guard.feed(KEY[6:] + " done") == "[REDACTED] done"


async def _scripted(steps: list[Step], **params: Any) -> list[UnifiedEvent]:
    started = SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp")
    backend = ScriptedBackend([started, *steps])
    async with EventStream(ExecuteParams(prompt="p", backend="scripted", **params), backend=backend) as stream:
        return [event async for event in stream]


@pytest.mark.parametrize("cut", [1, 3, 4, 10, 20, 39])
async def test_a_key_split_across_text_deltas_is_caught(secret_env: None, cut: int) -> None:
    events = await _scripted([TextDelta(text=f"the key is {KEY[:cut]}"), TextDelta(text=f"{KEY[cut:]} ok")])
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    for delta in deltas:
        assert KEY[SPLIT_HOLD_MIN - 1 :] not in delta
        assert KEY[cut:] not in delta
    assert REDACTED in "".join(deltas)
    _clean([e.model_dump(mode="json") for e in events])


async def test_a_key_split_across_thinking_and_progress_is_caught(secret_env: None) -> None:
    steps: list[Step] = [
        Thinking(text=f"think {KEY[:15]}", replace=False),
        Thinking(text=f"{KEY[15:]} done", replace=False),
        ToolUse(tool_use_id="t1", name="run_shell_command", input={}),
        ToolProgress(tool_use_id="t1", message=f"printing {KEY[:22]}"),
        ToolProgress(tool_use_id="t1", message=f"{KEY[22:]}\n"),
        ToolResult(tool_use_id="t1", output="done"),
        TextDelta(text=KEY[:5]),
        TextDelta(text=KEY[5:25]),
        TextDelta(text=KEY[25:]),
    ]
    events = await _scripted(steps)
    _clean([e.model_dump(mode="json") for e in events])
    shown = [e.text for e in events if isinstance(e, Thinking)] + [
        e.message or "" for e in events if isinstance(e, ToolProgress)
    ]
    assert REDACTED in "".join(shown)


async def test_a_held_back_piece_is_shown_when_the_stream_moves_on(secret_env: None) -> None:
    """Text that only looks like the start of a key is not lost: it comes before what follows."""
    events = await _scripted([TextDelta(text="prefix AIzaSy"), ToolUse(tool_use_id="u", name="x", input={})])
    kinds = [(e.type, getattr(e, "text", None)) for e in events if e.type in ("text_delta", "tool_use")]
    assert kinds == [("text_delta", "prefix "), ("text_delta", "AIzaSy"), ("tool_use", None)]


# --- credential files -----------------------------------------------------------------------------

PRIVATE = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"


def _credentials(ws: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Credential files the environment names, all inside the workspace (the worst case)."""
    adc = ws / "sa.json"
    adc.write_text(json.dumps({"type": "service_account", "private_key": PRIVATE}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    gcloud = ws / "gcloud"
    gcloud.mkdir()
    (gcloud / "application_default_credentials.json").write_text('{"refresh_token": "1//secret"}')
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(gcloud))
    cli_home = ws / "cli-home"
    (cli_home / ".gemini").mkdir(parents=True)
    (cli_home / ".gemini" / "oauth_creds.json").write_text('{"access_token": "ya29.secret"}')
    monkeypatch.setenv("GEMINI_CLI_HOME", str(cli_home))
    codex = ws / "codex"
    codex.mkdir()
    (codex / "auth.json").write_text('{"OPENAI_API_KEY": "sk-secret"}')
    monkeypatch.setenv("CODEX_HOME", str(codex))
    return [
        adc,
        gcloud / "application_default_credentials.json",
        cli_home / ".gemini" / "oauth_creds.json",
        codex / "auth.json",
    ]


@pytest.mark.parametrize("mode", ["plan", "default", "yolo"])
async def test_credential_files_are_never_read(ws: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    files = _credentials(ws, monkeypatch)
    (ws / "link.json").symlink_to(files[0])
    os.link(files[2], ws / "hard.json")
    names = [str(f.relative_to(ws)) for f in files] + ["link.json", "hard.json", str(files[0])]
    async with ToolRuntime(ws, approval_mode=mode) as tools:  # type: ignore[arg-type]
        reads = await tools.run_batch([ToolCall(n, "read_file", {"file_path": n}) for n in names])
        [search] = await tools.run_batch([ToolCall("s", "search", {"query": "BEGIN PRIVATE|refresh_token|ya29|sk-"})])
        [one] = await tools.run_batch([ToolCall("o", "search", {"query": "private", "path": "sa.json"})])
    for outcome in reads:
        assert outcome.is_error, outcome.call_id
        assert "credential file" in outcome.response["error"] or "denied" in outcome.response["error"]
    text = json.dumps([o.response for o in [*reads, search, one]])
    for secret in ("MIIEvQ", "1//secret", "ya29.secret", "sk-secret"):
        assert secret not in text
    assert one.is_error


async def test_credential_files_are_never_written(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _credentials(ws, monkeypatch)
    before = [f.read_text() for f in files]
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        calls = [ToolCall(str(i), "write_file", {"file_path": str(f), "content": "x"}) for i, f in enumerate(files)]
        calls.append(ToolCall("e", "edit_file", {"file_path": "sa.json", "old_string": "service", "new_string": "x"}))
        outcomes = await tools.run_batch(calls)
    assert all(o.is_error for o in outcomes)
    assert [f.read_text() for f in files] == before


# --- the CLI child's environment -------------------------------------------------------------------


def test_the_cli_child_gets_an_allowlisted_environment(secret_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value-1234")
    monkeypatch.setenv("UNIFIED_GEMINI_BIN", "/somewhere/gemini")
    monkeypatch.setenv("SOME_PASSWORD", "hunter2hunter2")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "proj")
    env = gemini_env()
    assert env["GEMINI_API_KEY"] == KEY  # its own credential, as the CLI needs it
    assert env["GOOGLE_CLOUD_PROJECT"] == "proj"
    assert env["PATH"] == os.environ["PATH"]
    for name in (
        "UNIFIED_SESSION_STORE_URL",
        "DEPLOY_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "UNIFIED_GEMINI_BIN",
        "SOME_PASSWORD",
    ):
        assert name not in env
    assert "store-password-1234" not in json.dumps(env)


async def test_the_cli_process_is_started_with_that_environment(ws: Path, secret_env: None) -> None:
    fake = FakeAcp([text("hi"), Finish()])
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", cwd=ws, backend_options={"start_process": fake, "pool_size": 0}
    )
    async with EventStream(params) as stream:
        _ = [event async for event in stream]
    [process] = fake.processes
    assert "UNIFIED_SESSION_STORE_URL" not in process.env
    assert "DEPLOY_TOKEN" not in process.env
    assert process.env["GEMINI_API_KEY"] == KEY


# --- cassettes ------------------------------------------------------------------------------------


async def test_a_key_given_only_in_backend_options_is_not_recorded(ws: Path, tmp_path: Path) -> None:
    async with FakeGemini([ModelTurn(text=f"echo {KEY[:10]}")]) as server:
        params = ExecuteParams(
            prompt=f"use {KEY}",
            backend="generate-content",
            model="gemini-2.5-flash",
            cwd=ws,
            backend_options={"api_key": KEY, "base_url": server.base_url},
        )
        cassette = tmp_path / "c" / "run.yaml"
        await record_run(params, cassette, source="test")
    text = cassette.read_text()
    assert KEY not in text
    assert "<redacted>" in text or REDACTED in text


async def test_mcp_server_env_values_are_not_recorded_whatever_their_names(ws: Path, tmp_path: Path) -> None:
    fake = FakeAcp([text("hi"), Finish()])
    server = StdioMcpServer(
        name="gh", command=sys.executable, env={"GITHUB_PAT": TOKEN, "PLAIN_SETTING": "plain-setting-value-42"}
    )
    params = ExecuteParams(
        prompt="go",
        backend="gemini-cli",
        cwd=ws,
        mcp_servers=(server,),
        backend_options={"start_process": fake, "pool_size": 0},
    )
    cassette = tmp_path / "c" / "run.jsonl"
    await record_run(params, cassette, source="test")
    recorded = cassette.read_text()
    assert "session/new" in recorded
    assert "GITHUB_PAT" in recorded  # the server was sent: its value is what must be gone
    assert TOKEN not in recorded
    assert "plain-setting-value-42" not in recorded


async def test_a_thought_signature_is_never_held_back(secret_env: None) -> None:
    """The empty piece that carries a thought's signature ends the thought: what was held comes
    first, then the signature, unchanged."""
    steps: list[Step] = [
        Thinking(text="plan AIzaSy", replace=False),
        Thinking(text="", replace=False, signature="c2ln"),
        TextDelta(text="answer"),
    ]
    events = await _scripted(steps)
    thoughts = [(e.text, e.signature) for e in events if isinstance(e, Thinking)]
    assert thoughts == [("plan ", None), ("AIzaSy", None), ("", "c2ln")]
