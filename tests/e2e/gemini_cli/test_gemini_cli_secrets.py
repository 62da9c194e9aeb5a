"""Red team (secrets) on the real `gemini` binary (offline, against FakeGemini): what a shell command the
model runs can read of the environment of its shell, of the CLI's process and of unified's own, and
what of it reaches the model and the events.

- The shell's own environment (`env`, `printenv`): the run's GEMINI_API_KEY / GOOGLE_API_KEY never
  reach it; unified turns on the CLI's own `security.environmentVariableRedaction` in the system
  settings it writes. The assertion is on what the model received, the function response the CLI sent
  back in its next request (not unified's events, whose redaction would hide a leak); the CLI still
  authenticated with the key (`saw_credential`).
- `/proc/$PPID/environ` (up to the CLI's node process) and `/proc/<unified's pid>/environ`: the OpenAI
  and Anthropic keys of unified's environment never reach the CLI's process; the Gemini keys reach it
  through a pipe its node preload reads (`key_loader.cjs`), not its exec environment, so neither its
  environ nor its open files hold them, on ACP and on stream-json (docs/backends/gemini-cli.md, "Keys and
  the model's commands"); the key a `.env` of the workspace names does not replace the run's.
- A host proxy URL with a password (HTTPS_PROXY, HTTP_PROXY) reaches the CLI as a local forwarder's URL with a
  credential of its own (`unified._binary.proxy`): the model reads no piece of the password, while the CLI's
  requests went through the host's proxy with the host's credentials.
- unified's own environ (`/proc/<unified's pid>/environ`, the keys it started with), read by a command while unified
  runs as a user that is not root: refused (`hide_host_environment`, tests/e2e/host_environ.py); opted out, readable.

One setup (`gemini_run`) serves every attack: the merge of the former test_gemini_cli_env_scrub.py and
test_gemini_cli_secrets.py (which ran the CLI on `--fake-responses`: now on FakeGemini too, so what the
model was sent is checked for the other providers' keys as well)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from tests.e2e.environ_attack import check_no_key_out, environ_command, pieces
from tests.hang_guard import HANG_GUARD_S
from tests.harness.fake_proxy import fake_proxy
from unified._execute import EventStream
from unified.events import UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.testing._wiring import backend_options_for
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

GEMINI_KEY = "AIzaSyC-q7Wm2Xt9Lb4Kc1Vd6Hf3Gj8Sp5Ya0Ue"
GOOGLE_KEY = "gk-Tz8Rq3Wn6Lm1Xb5Vc9Hd2Jf7Gs4Pa0Ye"  # not AIza-shaped: out by its name, not its value
OPENAI_KEY = "sk-proj-Gm5Xq1Zr8Lm3Vt6Kb9Wc2Hd7Jp0Gs4Ya1Ue6Oi3Qw8Er2Ty7Ui5Op9T3BlbkFJAs1Df4Gh7Jk"
ANTHROPIC_KEY = "sk-ant-api03-Pw2Ez7Rt4Yu9Io1Pa6Sd3Fg8Hj5Kl0Zx2Cv7Bn4Mq9Wr1Et6Yu3Io8Pa5Sd0Fg2AA"
ENV_COMMAND = (
    "env | grep -a -i -E 'key|token|cred|gemini|google|^home='; echo '--- printenv'; "
    "printenv GEMINI_API_KEY; printenv GOOGLE_API_KEY; printenv GOOGLE_APPLICATION_CREDENTIALS; echo '--- end'"
)
PARENT_COMMAND = (
    "tr '\\0' '\\n' < /proc/$PPID/environ | grep -a -i -E 'api_key|credentials|unified_gemini_env_fd'; "
    "echo '--- fds'; ls -l /proc/$PPID/fd; "
    # the CLI's open regular files, read for a key (never its pipes or sockets: a read could block or steal)
    'for f in /proc/$PPID/fd/*; do [ -f "$f" ] && '
    "grep -a -o -E 'AIza[0-9A-Za-z_-]{8,}|gk-[0-9A-Za-z]{8,}' \"$f\" 2>/dev/null; done; "
    "echo '--- end'"
)
DOTENV_KEY = "AIzaSyD-w0rKsPaCe8Dot3nv5Key1Xy7Zq2Lm4Np"
"""The key a `.env` file of the workspace names: the CLI loads such a file, never over a variable already set."""


@dataclass(frozen=True)
class Seen:
    events: list[UnifiedEvent]
    answer: str
    """The function response the model was sent: the command's output as the CLI passed it on."""
    sent: str
    """Every request the CLI sent the model server."""
    authenticated: bool
    """The CLI sent the run's Gemini key to the model server."""
    server: FakeGemini
    """The model server (`saw_credential`: whether the CLI authenticated with a key)."""


async def gemini_run(command: str, tmp_path: Path, workspace: Path, transport: str = "acp") -> Seen:
    """One run of the real binary (over `transport`) running `command` through its run_shell_command, the
    run's keys (and a credentials file) given in the backend's `env` option."""
    credentials = tmp_path / "adc.json"
    credentials.write_text('{"type": "authorized_user"}')
    call = FunctionCall(name="run_shell_command", args={"command": command})
    async with FakeGemini([ModelTurn(function_calls=[call]), ModelTurn(text="ok")]) as server:
        options = backend_options_for(server, "gemini-cli", cli_home=tmp_path / "cli-home") | {"transport": transport}
        env = dict(options["env"])  # type: ignore[call-overload]
        env |= {"GEMINI_API_KEY": GEMINI_KEY, "GOOGLE_API_KEY": GOOGLE_KEY}
        env["GOOGLE_APPLICATION_CREDENTIALS"] = str(credentials)
        params = ExecuteParams(
            prompt="show me the environment",
            backend="gemini-cli",
            cwd=workspace,
            approval_mode="yolo",
            backend_options={**options, "env": env},
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        bodies = [request.body for request in server.requests]
        assert len(bodies) >= 2, events
        answer = bodies[1]["contents"][-1]  # the function response the model was sent
        assert "functionResponse" in str(answer), answer
        return Seen(events, str(answer), "\n".join(map(str, bodies)), server.saw_credential(GEMINI_KEY), server)


PROXY_PASSWORD = "Pr0xy-Pa55w0rd-Zq8Lm3Xv7Tn1Wk4"
PROXY_COMMAND = (
    "{ env; echo '--- parent'; tr '\\0' '\\n' < /proc/$PPID/environ; } | grep -a -i -E 'proxy|---'; echo '--- end'"
)
"""Only the lines naming a proxy: the CLI cuts a long output."""


async def test_the_model_reads_no_piece_of_the_host_proxy_password_and_the_cli_still_goes_through_the_proxy(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host's proxy variables carry a password (no NO_PROXY: FakeGemini on 127.0.0.1 is reached through the
    proxy). Before the forwarder the CLI got them whole, and `env` and `/proc/$PPID/environ` printed them."""
    async with fake_proxy(password=PROXY_PASSWORD) as proxy:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            monkeypatch.setenv(name, proxy.url)
        seen = await gemini_run(PROXY_COMMAND, tmp_path, workspace)
    sent = seen.answer
    assert seen.authenticated
    assert "--- parent" in sent, sent
    assert "--- end" in sent, sent
    assert pieces(PROXY_PASSWORD, sent) == []
    assert "HTTPS_PROXY=http://unified0:" in sent  # the forwarder's URL
    # the model calls went through the host's proxy: the CLI (undici) opens one CONNECT tunnel and keeps it
    assert [asked.method for asked in proxy.asked][:1] == ["CONNECT"], proxy.asked
    assert all(asked.allowed and asked.authorization == proxy.authorization for asked in proxy.asked), proxy.asked
    shown = "\n".join(event.model_dump_json() for event in seen.events)
    assert pieces(PROXY_PASSWORD, shown) == []


@pytest.fixture
def secure_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """unified's cache (where it writes the system settings it gives the CLI) in a folder the CLI
    accepts system settings from: root's, no ancestor writable by group or others (never /tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="unified-scrub-", dir="/run"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.access("/run", os.W_OK),
    reason="the CLI reads unified's system settings only when root owns them and every folder above them",
)
async def test_the_model_reads_no_piece_of_a_key_in_the_environment_of_its_shell_command(
    tmp_path: Path, workspace: Path, secure_cache: Path
) -> None:
    seen = await gemini_run(ENV_COMMAND, tmp_path, workspace)
    sent = seen.answer
    assert seen.authenticated  # the CLI sent the run's key to the model server
    assert "--- printenv" in sent, sent
    assert "--- end" in sent, sent  # the command ran to its end
    assert "GEMINI_CLI" in sent, sent  # it printed the environment
    assert pieces(GEMINI_KEY, sent) == [], sent
    assert pieces(GOOGLE_KEY, sent) == [], sent
    assert "adc.json" not in sent, sent  # GOOGLE_APPLICATION_CREDENTIALS is out too


@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_without_the_clis_own_redaction_no_command_it_starts_gets_the_key(
    tmp_path: Path, workspace: Path, transport: str
) -> None:
    """Any user, unified's system settings skipped by the CLI (not root's: its redaction is off): the key
    loader keeps the piped variables out of every environment the CLI gives a child. Before, a command's
    `env` showed GEMINI_API_KEY, GOOGLE_API_KEY and the credentials file's path to the model."""
    seen = await gemini_run(ENV_COMMAND, tmp_path, workspace, transport)
    sent = seen.answer
    assert seen.authenticated  # the CLI itself still read the key
    assert "--- end" in sent, sent  # the command ran to its end
    assert "GEMINI_CLI" in sent, sent  # it printed the environment
    assert pieces(GEMINI_KEY, sent) == [], sent
    assert pieces(GOOGLE_KEY, sent) == [], sent
    assert "adc.json" not in sent, sent


@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_the_cli_process_holds_the_key_in_neither_its_environ_nor_its_open_files(
    tmp_path: Path, workspace: Path, transport: str
) -> None:
    """The shell's parent is the CLI's node process: its exec environment (`/proc/$PPID/environ`, readable by
    the same user for the process's whole life) holds no key, nor does any file it holds open; the pipe the
    key came through is closed (its number, in the environ, names no pipe of ours any more). The CLI still
    authenticated with the run's key, not with the one a `.env` of the workspace names."""
    (workspace / ".env").write_text(f"GEMINI_API_KEY={DOTENV_KEY}\n")
    seen = await gemini_run(PARENT_COMMAND, tmp_path, workspace, transport)
    assert seen.authenticated
    assert not seen.server.saw_credential(DOTENV_KEY), "the key of the workspace's .env replaced the run's"
    assert "--- fds" in seen.answer, seen.answer
    assert "--- end" in seen.answer, seen.answer
    assert pieces(GEMINI_KEY, seen.answer) == [], seen.answer
    assert pieces(GOOGLE_KEY, seen.answer) == [], seen.answer
    assert "adc.json" not in seen.answer, seen.answer
    assert "UNIFIED_GEMINI_ENV_FD=" in seen.answer, seen.answer  # the key came by pipe


async def test_a_shell_command_reading_the_environ_of_the_cli_and_of_unified_gets_no_key_out(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    seen = await gemini_run(environ_command(keys_only=True), tmp_path, workspace)  # the CLI cuts a long output
    output = check_no_key_out(
        seen.events, (GEMINI_KEY, OPENAI_KEY, ANTHROPIC_KEY), (OPENAI_KEY, ANTHROPIC_KEY), seen.sent
    )
    assert "OPENAI_API_KEY" not in output, "the CLI's process never gets another provider's key"
    assert "ANTHROPIC_API_KEY" not in output
