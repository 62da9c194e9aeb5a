"""The `unified` command: schema, capabilities, doctor, run, sessions; and never a secret in its output."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import jsonschema  # type: ignore[import-untyped]
import pytest
from rich.console import Console
from typer.testing import CliRunner

from tests.hang_guard import HANG_GUARD_S
from unified import _execute as query
from unified import backends as registry
from unified import capabilities
from unified._binary.install import find_binary
from unified._cli import main as cli
from unified._cli.doctor import doctor_report
from unified._cli.install import spec_of
from unified._cli.interactive import ask_in_terminal, make_user_input_handler
from unified._execute import EventStream
from unified.backends import RunContext, RunOutcome, SessionLocator, UnsupportedOption
from unified.conversations import Conversation, TextPart, UserTurn
from unified.errors import BackendUnavailable, SessionNotFound
from unified.events import (
    EVENT_TYPES,
    Question,
    QuestionOption,
    Result,
    SessionStarted,
    TextDelta,
    UserInputRequest,
    UserInputResponse,
    dump_event,
    parse_event,
)
from unified.sessions import SessionInfo, SessionStore, resolve_ref
from unified.types import ExecuteParams

SECRETS = {
    "GEMINI_API_KEY": "AIzaSy-a-fake-secret-value-1234567890",
    "GOOGLE_API_KEY": "AIzaSy-another-fake-secret-0987654321",
}
OAUTH_TOKEN = "ya29.fake-oauth-access-token-abcdefghijkl"
runner = CliRunner()


def _invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(cli.app, list(args))
    return result.exit_code, result.output


def _assert_no_secret(text: str) -> None:
    for value in (*SECRETS.values(), OAUTH_TOKEN):
        assert value not in text


def test_schema_is_valid_json_schema_with_every_event_kind() -> None:
    code, output = _invoke("schema")
    assert code == 0
    schema = json.loads(output)
    jsonschema.Draft202012Validator.check_schema(schema)
    for event_type in EVENT_TYPES:
        kind = event_type.model_fields["type"].default
        assert f'"{kind}"' in output, kind
    sample = json.loads(dump_event(TextDelta(text="hi", seq=0)))
    jsonschema.validate(sample, schema)


def test_capabilities_json_round_trips() -> None:
    code, output = _invoke("capabilities", "--json")
    assert code == 0
    data = json.loads(output)
    assert data == capabilities.to_json()
    for backend, column in data["backends"].items():
        assert {name: cell["level"] for name, cell in column["cells"].items()} == capabilities.snapshot(backend)


def test_capabilities_table_and_notes() -> None:
    code, output = _invoke("capabilities")
    assert code == 0
    assert "background_agents" in output
    code, output = _invoke("capabilities", "--backend", "interactions")
    assert code == 0
    assert "replace=false" in output
    code, output = _invoke("capabilities", "--backend", "nope")
    assert code == 2


@pytest.fixture
def secret_env(isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every kind of credential, with secret values, plus a gemini binary that prints the key."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", f"https://gw.example/v1?key={SECRETS['GEMINI_API_KEY']}")
    monkeypatch.setenv("MY_SERVICE_TOKEN", OAUTH_TOKEN)
    creds = isolated_home / ".gemini" / "oauth_creds.json"
    creds.parent.mkdir(parents=True)
    creds.write_text(json.dumps({"access_token": OAUTH_TOKEN}), encoding="utf-8")
    gemini = tmp_path / "bin" / "gemini"
    gemini.parent.mkdir()
    gemini.write_text('#!/bin/sh\necho "0.61.0 $GEMINI_API_KEY"\n', encoding="utf-8")
    gemini.chmod(0o755)
    monkeypatch.setenv("UNIFIED_GEMINI_BIN", str(gemini))
    return gemini


@pytest.mark.e2e  # runs a real subprocess
def test_doctor_reports_auth_and_binary_without_secrets(secret_env: Path) -> None:
    code, output = _invoke("doctor")
    assert code == 0
    _assert_no_secret(output)
    # A key and a base URL: google-genai sends the key to the gateway, and that is the one mode said.
    assert "gateway from GOOGLE_API_KEY (key from GOOGLE_API_KEY, to https://gw.example)" in output
    assert "code_assist from" in output
    assert f"{secret_env} (from UNIFIED_GEMINI_BIN): 0.61.0" in output  # its version probe is given no key
    assert "generate-content: ✓ ready" in output
    code, output = _invoke("doctor", "--json")
    assert code == 0
    _assert_no_secret(output)
    report = json.loads(output)
    assert {m["mode"] for m in report["auth"]["modes"]} == {"code_assist", "gateway"}
    assert (report["auth"]["api"]["kind"], report["auth"]["api"]["endpoint"]) == ("gateway", "https://gw.example")
    assert report["auto"]["backend"] == "generate-content"


def test_doctor_without_anything_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("UNIFIED_GEMINI_BIN", str(tmp_path / "no-gemini"))  # scripts/test points it at the pinned one
    code, output = _invoke("doctor")
    assert code == 1
    assert "none found: set GEMINI_API_KEY" in output
    assert f"UNIFIED_GEMINI_BIN points at {tmp_path / 'no-gemini'}, which does not exist" in output
    assert "run `unified install-gemini`" in output


@pytest.mark.e2e  # the explicit binary's version is asked of it
def test_doctor_finds_each_binary_where_its_backend_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from a folder outside the clone, with nothing on PATH and no variable: a run finds the clone's
    project-local binaries (above the package), so doctor does too (it once looked above the working
    directory only, and said gemini was missing where every run found it)."""
    monkeypatch.chdir(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIFIED_")} | {"PATH": str(tmp_path)}
    report = doctor_report(env)
    for backend, key in (("gemini-cli", "gemini"), ("claude-code", "claude"), ("codex", "codex")):
        spec = spec_of(backend)
        assert report[key]["path"] == str(find_binary(spec, None, env)), report[key]
        assert report[key]["found_by"] == f"project-local {spec.local_dir}"
        assert report[key]["version"] == spec.version, report[key]
    explicit = tmp_path / "my-gemini"
    explicit.write_text("#!/bin/sh\necho 0.61.0\n")
    explicit.chmod(0o755)
    found = doctor_report({**env, "UNIFIED_GEMINI_BIN": str(explicit)})["gemini"]
    assert (found["path"], found["found_by"], found["version"]) == (str(explicit), "UNIFIED_GEMINI_BIN", "0.61.0")


def test_doctor_does_not_call_gemini_cli_ready_without_the_node_a_run_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pinned gemini is a Node script: with no `node` on PATH every run fails (`backend_unavailable`,
    exit 2) while doctor, which reads the version from the npm package, said "✓ ready"."""
    monkeypatch.chdir(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIFIED_")} | {
        "PATH": str(tmp_path),
        "GEMINI_API_KEY": "a-key-for-the-test-0001",
    }
    report = doctor_report(env)
    assert report["gemini"]["version"] == spec_of("gemini-cli").version
    assert "Node.js was not found on PATH" in str(report["gemini"]["problem"])
    assert "install Node.js 20 or newer" in str(report["gemini"]["problem"])  # what to do
    [status] = [b for b in report["backends"] if b["backend"] == "gemini-cli"]
    assert not status["ready"]
    assert any("Node.js was not found on PATH" in problem for problem in status["problems"])
    for native in ("claude", "codex"):  # native executables: no Node needed to run them
        assert report[native]["problem"] is None, report[native]
    node = tmp_path / "node"
    node.write_bytes(b"\x7fELF" + bytes(60))  # begins as Node.js does: taken as it, never run
    node.chmod(0o755)
    assert doctor_report(env)["gemini"]["problem"] is None


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from unified._cli.main import app; app(prog_name='unified')", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
        check=False,
    )


@pytest.mark.e2e  # runs a real subprocess
def test_run_scripted_in_a_subprocess_without_secrets(secret_env: Path, tmp_path: Path) -> None:
    env = dict(os.environ)
    prompt = f"repeat {SECRETS['GEMINI_API_KEY']} and {SECRETS['GOOGLE_API_KEY']}"
    human = _cli("run", prompt, "--backend", "scripted", "--cwd", str(tmp_path), env=env)
    assert human.returncode == 0, human.stderr
    _assert_no_secret(human.stdout + human.stderr)
    assert "[REDACTED]" in human.stdout
    assert "● session 5c71pted (scripted" in human.stdout
    assert "usage: input 42" in human.stdout

    lines = _cli("run", prompt, "--backend", "scripted", "--json", env=env)
    assert lines.returncode == 0, lines.stderr
    _assert_no_secret(lines.stdout + lines.stderr)
    events = [parse_event(line) for line in lines.stdout.splitlines()]
    assert [e.seq for e in events] == list(range(len(events)))
    assert isinstance(events[0], SessionStarted)
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"


def test_run_exit_codes() -> None:
    code, output = _invoke("run", "hi")
    assert code == 1
    assert "no usable credentials" in output
    code, _ = _invoke("run", "hi", "--max-turns", "0")
    assert code == 2
    code, output = _invoke("run", "hi", "--backend", "claude")
    assert code == 2


class _SlowBackend:
    """Starts a session, interrupts itself as a user's Ctrl-C would once the CLI listens for it, then waits."""

    name = "scripted"

    def __init__(self) -> None:
        self.listening = threading.Event()

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []

    async def run(self, ctx: RunContext) -> RunOutcome:
        await ctx.emit(SessionStarted(backend="scripted", session_id="slow-0001", short_id="slow0001"))
        while not self.listening.is_set():  # noqa: ASYNC110 -- set by the CLI's receiver, in a task of its own
            await anyio.sleep(0.01)
        signal.raise_signal(signal.SIGINT)
        await anyio.sleep(HANG_GUARD_S)  # cancelled at once; a run that ignores the cancel ends without "interrupted"
        return RunOutcome()


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_ctrl_c_cancels_cleanly_with_exit_130(
    loop: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    backend = _SlowBackend()
    open_receiver = anyio.open_signal_receiver

    @contextmanager
    def announced_receiver(*signals: signal.Signals) -> Iterator[Any]:
        with open_receiver(*signals) as receiver:
            backend.listening.set()
            yield receiver

    monkeypatch.setattr(anyio, "open_signal_receiver", announced_receiver)
    # the CLI imports `execute` from unified._execute when a run starts
    monkeypatch.setattr(query, "execute", lambda params: EventStream(params, backend=backend))
    params = ExecuteParams(prompt="hi", backend="scripted")
    assert anyio.run(cli._run, params, True, backend=loop) == 130
    events = [parse_event(line) for line in capsys.readouterr().out.splitlines()]
    assert isinstance(events[-1], Result)
    assert events[-1].status == "interrupted"


def _permission() -> UserInputRequest:
    return UserInputRequest(
        request_id="r1",
        source="permission",
        tool_name="write_file",
        questions=[
            Question(
                id="permission",
                prompt="Allow write_file?",
                options=[
                    QuestionOption(id="allow_once", label="Allow once"),
                    QuestionOption(id="allow_always", label="Allow always"),
                    QuestionOption(id="deny", label="Deny"),
                ],
            )
        ],
    )


def _question() -> UserInputRequest:
    return UserInputRequest(
        request_id="r2",
        source="model-tool",
        questions=[
            Question(
                id="colors",
                prompt="Which colours?",
                multi_select=True,
                options=[QuestionOption(id="r", label="Red"), QuestionOption(id="g", label="Green")],
            ),
            Question(id="name", prompt="Your name?"),
        ],
    )


@pytest.mark.anyio
async def test_approve_and_deny_answer_permission_requests() -> None:
    console = Console(file=io.StringIO())
    assert make_user_input_handler(None, interactive=False, console=console) is None
    approve = make_user_input_handler(True, interactive=False, console=console)
    deny = make_user_input_handler(False, interactive=False, console=console)
    assert approve is not None
    assert deny is not None
    assert (await approve(_permission())).permission() == "allow_once"
    assert (await deny(_permission())).permission() == "deny"
    assert (await approve(_question())).cancelled


def test_terminal_prompt_reads_numbers_labels_and_text(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter(["7", "1, green", "Ada"])
    monkeypatch.setattr("builtins.input", lambda *_: next(answers))
    out = io.StringIO()
    response = ask_in_terminal(_question(), Console(file=out))
    assert response == UserInputResponse(answers={"colors": ["r", "g"], "name": "Ada"})
    assert "please answer with numbers" in out.getvalue()
    monkeypatch.setattr("builtins.input", lambda *_: "Deny")
    assert ask_in_terminal(_permission(), Console(file=io.StringIO())).permission() == "deny"

    def closed(*_: Any) -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", closed)
    assert ask_in_terminal(_permission(), Console(file=io.StringIO())).cancelled


class _MemoryLocator:
    backend = "gemini-cli"

    def __init__(self) -> None:
        now = datetime(2026, 11, 29, tzinfo=UTC)
        self.sessions = {
            sid: SessionInfo(backend="gemini-cli", session_id=sid, short_id=sid[:8], updated_at=now, summary=summary)
            for sid, summary in (("aaaa1111-0000", "first task"), ("bbbb2222-0000", "second task"))
        }

    async def list_sessions(self, cwd: str | None = None) -> list[SessionInfo]:
        return list(self.sessions.values())

    async def resolve(self, ref: str, cwd: str | None = None) -> SessionInfo:
        return resolve_ref(ref, self.sessions.values(), self.backend)

    async def show(self, ref: str, cwd: str | None = None) -> dict[str, Any]:
        return {"session_id": (await self.resolve(ref)).session_id, "messages": [{"type": "user", "content": "hi"}]}

    async def delete(self, ref: str, cwd: str | None = None) -> SessionInfo:
        return self.sessions.pop((await self.resolve(ref)).session_id)

    async def export(self, ref: str, cwd: str | None = None) -> Conversation:
        return Conversation(turns=[UserTurn(parts=[TextPart(text="hi")])])


@pytest.fixture
def locator(monkeypatch: pytest.MonkeyPatch) -> _MemoryLocator:
    memory = _MemoryLocator()

    def load(name: str, store: SessionStore | None = None) -> SessionLocator:
        if name == "gemini-cli":
            return memory
        raise BackendUnavailable(f"the {name} backend cannot load its session locator: not installed")

    monkeypatch.setattr(registry, "load_session_locator", load)
    return memory


def test_sessions_list_show_delete(locator: _MemoryLocator) -> None:
    code, output = _invoke("sessions", "list")
    assert code == 0
    assert "aaaa1111" in output
    assert "second task" in output
    assert "sessions of interactions are not available" in output
    code, output = _invoke("sessions", "list", "--backend", "gemini-cli", "--json")
    assert code == 0
    assert [json.loads(line)["short_id"] for line in output.splitlines()] == ["aaaa1111", "bbbb2222"]  # JSON Lines
    code, output = _invoke("sessions", "show", "bbbb", "--json")
    assert code == 0
    assert len(output.splitlines()) == 1
    assert json.loads(output)["session_id"] == "bbbb2222-0000"
    code, output = _invoke("sessions", "show", "bbbb")
    assert code == 0
    assert json.loads(output)["session_id"] == "bbbb2222-0000"
    code, output = _invoke("sessions", "delete", "aaaa")
    assert code == 2
    assert "without --yes" in output
    code, output = _invoke("sessions", "delete", "aaaa", "--yes")
    assert code == 0
    assert "deleted gemini-cli session aaaa1111" in output
    assert list(locator.sessions) == ["bbbb2222-0000"]


def test_sessions_errors_are_messages(locator: _MemoryLocator) -> None:
    code, output = _invoke("sessions", "show", "zzzz")
    assert code == 1
    assert "no session matches 'zzzz'" in output
    code, output = _invoke("sessions", "list", "--backend", "interactions")
    assert code == 1
    assert "not installed" in output
    code, output = _invoke("sessions", "show", "zzzz", "--backend", "gemini-cli")
    assert code == 1
    assert "no gemini-cli session matches" in output
    with pytest.raises(SessionNotFound):
        anyio.run(locator.resolve, "zzzz")


@pytest.mark.parametrize("command", ["replay", "record"])
def test_the_cassette_help_names_every_backend_that_records_jsonl(command: str) -> None:
    """codex records and replays `.jsonl` transcripts too; the help named gemini-cli and claude-code only."""
    from unified.testing._record import _SUFFIXES

    done = runner.invoke(cli.app, [command, "--help"], terminal_width=200)
    assert done.exit_code == 0
    flat = " ".join(done.output.split())
    start = flat.lower().index("cassette <path>")  # `<Path>` since it refuses an empty name (as --cwd's parser)
    text = flat[start : flat.index("[required]")]  # the argument's own help
    transcript_backends = [backend for backend, suffixes in _SUFFIXES.items() if ".jsonl" in suffixes]
    assert transcript_backends == ["gemini-cli", "claude-code", "codex"]
    assert [backend for backend in transcript_backends if backend not in text] == []
