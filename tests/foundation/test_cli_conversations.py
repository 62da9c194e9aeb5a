"""`unified run --history FILE`, `--retry` and `--fallback B[,C]`, each run as a user runs them, with its own HOME, XDG
folders and data directory, its model calls answered by FakeGemini on 127.0.0.1: what reads stdin (`-` as the
history or the prompt) is the real command in a subprocess, a shell's pipe into it; the others go through `main()` in
this process (tests/harness/cli_main.py), their exit codes and JSON lines what a process of their own would show.

A session made on generate-content is exported (`unified sessions export REF`, the file `--history` reads) and
continued on interactions; a failed turn is retried without a new prompt; a run whose backend's binary is missing
fails over. Bad input ends with one line and exit 2, nothing run: sent through the console script's entry point in
this process, as tests/foundation/test_cli_errors.py sends bad arguments.
"""

from __future__ import annotations

import functools
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.harness.cli_main import environ_of, in_process
from unified._cli.main import main
from unified.testing import FakeGemini, Fault
from unified.testing import ModelTurn as ScriptTurn

pytestmark = pytest.mark.e2e  # the real command

EXIT_BAD_INPUT = 2
FACT = "the code word is heron-7731"
MODEL = "gemini-2.5-flash"


def _env(home: Path, server: FakeGemini | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "ANTHROPIC_", "OPENAI_"))}
    env |= {
        "HOME": str(home),
        "GEMINI_CLI_HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "UNIFIED_DATA_DIR": str(home / "unified-data"),
    }
    env.pop("UNIFIED_DEBUG", None)
    if server is not None:
        env |= {"GOOGLE_GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "fake-gemini-key"}
    return env | extra


def _piped(*args: str, env: dict[str, str], stdin: str) -> tuple[int, str, str]:
    """`unified ARGS` in a subprocess of its own, `stdin` piped in, as a shell runs `... | unified run -`."""
    command = [sys.executable, "-m", "unified._cli", *args]
    done = subprocess.run(command, env=env, input=stdin, capture_output=True, text=True, timeout=HANG_GUARD_S)
    return done.returncode, done.stdout, done.stderr


def _unified(
    *args: str, env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """`unified ARGS` with `env` through `main()` in this process (tests/harness/cli_main.py): a run against the
    fake, its exit code and its JSON lines, which a process of its own (~1 s of CPU starting Python and unified)
    would not change; what reads stdin goes through `_piped`."""
    with monkeypatch.context() as environ:
        environ_of(env, environ)
        done = in_process(capsys, *args)
    return done.returncode, done.stdout, done.stderr


def _events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def _result(stdout: str) -> dict[str, Any]:
    result = _events(stdout)[-1]
    assert result["type"] == "result", stdout
    return result


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "user"
    path.mkdir()
    return path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "notes.txt").write_text(FACT + "\n", encoding="utf-8")
    return path


def _last_history(server: FakeGemini) -> str:
    body = server.requests[-1].body or {}
    return json.dumps(body.get("contents") or body.get("input"))


def test_history_from_sessions_export_continues_on_another_backend(
    home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = [
        ScriptTurn(text="I will remember it."),
        ScriptTurn(text="The code word is heron-7731."),
    ]
    with FakeGemini(turns) as server:
        env = _env(home, server)
        unified = functools.partial(_unified, env=env, monkeypatch=monkeypatch, capsys=capsys)
        common = ["--model", MODEL, "--cwd", str(workspace), "--json"]
        code, out, err = unified("run", f"remember: {FACT}", "--backend", "generate-content", *common)
        assert code == 0, err
        short = _result(out)["short_id"]

        code, exported, err = unified("sessions", "export", short)
        assert code == 0, err
        conversation = home / "conv.json"
        conversation.write_text(exported, encoding="utf-8")

        args = ["run", "what is the code word?", "--history", str(conversation), "--backend", "interactions", *common]
        code, out, err = unified(*args)
        assert code == 0, err
        result = _result(out)
        assert (result["status"], result["backend"]) == ("success", "interactions"), result
        assert result["short_id"] != short
        sent = _last_history(server)
        assert FACT in sent
        assert "I will remember it." in sent
        assert sent.count("what is the code word?") == 1

        # `-` reads the conversation from stdin.
        server.add(ScriptTurn(text="Still heron."))
        args = ["run", "again?", "--history", "-", "--backend", "generate-content", *common]
        code, out, err = _piped(*args, env=env, stdin=exported)
        assert code == 0, err
        assert _result(out)["final_text"] == "Still heron."
        assert FACT in _last_history(server)

        # `-` as the PROMPT reads it from stdin (a long task piped in), whole.
        server.add(ScriptTurn(text="Read it."))
        task = "Task from a file:\n- first line\n- second line with ünïcode\n"
        args = ["run", "-", "--backend", "generate-content", *common]
        code, out, err = _piped(*args, env=env, stdin=task)
        assert code == 0, err
        assert _result(out)["final_text"] == "Read it."
        assert json.dumps(task)[1:-1] in json.dumps(server.requests[-1].body)


def test_retry_answers_the_failed_turn_without_a_prompt(
    home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeGemini([ScriptTurn(text="noted"), ScriptTurn(text="heron")]) as server:
        server.inject(Fault(kind="bad_request"), at_request=1)  # not retried: the turn fails, its prompt stays
        env = _env(home, server)
        unified = functools.partial(_unified, env=env, monkeypatch=monkeypatch, capsys=capsys)
        common = ["--backend", "generate-content", "--model", MODEL, "--cwd", str(workspace), "--json"]
        code, out, err = unified("run", "remember heron", *common)
        assert code == 0, err
        short = _result(out)["short_id"]
        code, out, _ = unified("run", "what was it?", "--resume", short, *common)
        assert code == 1
        assert _result(out)["status"] == "error"

        code, out, err = unified("run", "--resume", short, "--retry", *common)
        assert code == 0, err
        assert _result(out)["final_text"] == "heron"
        assert _last_history(server).count("what was it?") == 1


def test_fallback_goes_on_when_the_backends_binary_is_missing(
    home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeGemini([ScriptTurn(text="answered by generate-content")]) as server:
        env = _env(home, server, UNIFIED_CLAUDE_BIN=str(home / "no-such-claude"), ANTHROPIC_API_KEY="fake-key")
        unified = functools.partial(_unified, env=env, monkeypatch=monkeypatch, capsys=capsys)
        args = ["run", "hello", "--backend", "claude-code", "--fallback", "generate-content", "--model", MODEL]
        code, out, err = unified(*args, "--cwd", str(workspace), "--json")
        assert code == 0, (out, err)
        events = _events(out)
        [failover] = [e for e in events if e["type"] == "failover"]
        assert (failover["from_backend"], failover["to_backend"]) == ("claude-code", "generate-content"), failover
        assert failover["code"] == "backend_unavailable"
        results = [e for e in events if e["type"] == "result"]
        assert len(results) == 1
        assert (results[0]["status"], results[0]["backend"]) == ("success", "generate-content")
        assert results[0]["final_text"] == "answered by generate-content"


@pytest.mark.parametrize(
    ("args", "stdin", "phrase"),
    [
        (("run", "-"), b"\xff\xfe\x00bad", "the prompt on stdin is not UTF-8 (byte 0"),
        (("run", "-"), b" \n\t\n", "the prompt on stdin is empty"),
        (("run", "-", "--history", "-"), b"{}", "PROMPT and --history cannot both be read from stdin"),
    ],
)
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_prompt_read_from_stdin_is_refused_in_one_line_when_it_cannot_be_one(
    home: Path,
    args: tuple[str, ...],
    stdin: bytes,
    phrase: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Refused before anything runs (in this process, as the cases below): bytes that are no UTF-8, nothing but
    blanks, and stdin asked for twice."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = await anyio.to_thread.run_sync(main, [*args, "--backend", "generate-content"])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT, (out, err)
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith("error: ")
    assert phrase in err, err


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (("run", "hi", "--history", "{missing}"), "cannot read --history"),
        (("run", "hi", "--history", "{bad}"), "is not a conversation"),
        (("run", "hi", "--fallback", "generate-content,nope"), "'nope' is not one of"),
        (("run", "--retry"), "retry answers the last turn of a session again"),
        (("run", "hi", "--retry", "--resume", "abc"), "retry sends no new prompt"),
        (("run", "hi", "--history", "{good}", "--resume", "abc"), "not both"),
    ],
)
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_bad_conversation_arguments(
    home: Path, args: tuple[str, ...], phrase: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the console script's entry point in this process (`main`, as tests/foundation/test_cli_errors.py
    sends bad arguments), in a thread as it runs its own event loop: refused before anything runs, so a process
    of its own (~0.35 s of CPU starting Python and unified) would show nothing more."""
    (home / "bad.json").write_text('{"format": "something else"}', encoding="utf-8")
    (home / "good.json").write_text(
        '{"turns": [{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]}', encoding="utf-8"
    )
    files = {"missing": str(home / "missing.json"), "bad": str(home / "bad.json"), "good": str(home / "good.json")}
    code = await anyio.to_thread.run_sync(main, [a.format(**files) for a in args])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    assert phrase in lines[0], lines[0]
