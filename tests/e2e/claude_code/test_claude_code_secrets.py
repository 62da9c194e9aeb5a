"""Red team (secrets) on the real `claude` binary (offline, against FakeAnthropic): what a Bash command
the model runs can read of the environment of its shell, of Claude Code's process and of unified's
own, and what of it reaches the model and the events.

- The run's ANTHROPIC_API_KEY (given in `backend_options["env"]`) reaches the CLI through its
  `apiKeyHelper`, not its environment (docs/backends/claude-code.md, "Keys and the model's commands"):
  `env`, `printenv ANTHROPIC_API_KEY` and `/proc/$PPID/environ` (Claude Code's own process) show no
  piece of it. The assertion is on what the model received, the tool result Claude Code sent back in
  its next request (not unified's events, whose redaction would hide a leak); the CLI still
  authenticated with the key (`saw_credential`). So does a gateway's ANTHROPIC_AUTH_TOKEN when it is
  the run's only credential.
- The Gemini and OpenAI keys of unified's environment never reach Claude Code's process; the run's key
  is replaced in every event too.
- The key file the helper reads is gone once the run's process has ended.
- A host proxy URL with a password (HTTPS_PROXY, HTTP_PROXY) reaches the CLI as a local forwarder's URL with a
  credential of its own (`unified._binary.proxy`): the model reads no piece of the password, while the CLI's
  requests went through the host's proxy with the host's credentials.
- unified's own environ (`/proc/<unified's pid>/environ`, the keys it started with), read by a command while unified
  runs as a user that is not root: refused (`hide_host_environment`, tests/e2e/host_environ.py); opted out, readable.

One setup (`claude_run`) serves every attack: the merge of the former test_claude_code_env_scrub.py
and test_claude_code_secrets.py, whose runs were the same but for the command and the environment."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from tests.e2e.claude_code.claude_code_helpers import claude_home
from tests.e2e.conformance import mcp_echo_server
from tests.e2e.environ_attack import check_no_key_out, environ_command, pieces
from tests.hang_guard import HANG_GUARD_S
from tests.harness.fake_proxy import fake_proxy
from tests.harness.local_ca import local_ca
from unified._binary import process as process_module
from unified._binary import proxy
from unified._binary.proxy import Limits, ProxyForwarder
from unified._execute import EventStream
from unified.events import Result, ToolUse, UnifiedEvent
from unified.testing import REDACTED, FakeAnthropic, FunctionCall, ModelTurn
from unified.testing._serving import RecordedRequest
from unified.types import ExecuteParams, HttpMcpServer, McpServer, StdioMcpServer

pytestmark = pytest.mark.anyio

RUN_KEY = "sk-ant-api03-Rq7Tz2Wm5Xn9Lb3Kc6Vd1Hf8Gj4Sp0Ya5Ue2Oi7Qw3Er9Ty6Ui1Op4As8Df2Gh5Jk0AA"
GATEWAY_TOKEN = "gw-token-Qm3Xv8Lz1Wt6Rk9Vn4Hc7Jd2Fp5Gs0"
GEMINI_KEY = "AIzaSyD-c8Wq3Ln6Zr1Xt5Vm9Kb2Hp7Jd0Fs4Ge"
OPENAI_KEY = "sk-proj-Nf3Xq8Zr1Lm6Vt9Kb4Wc7Hd2Jp5Gs0Ya3Ue8Oi1Qw6Er4Ty9Ui2Op7T3BlbkFJAs5Df0Gh3Jk"
ENV_COMMAND = (
    "env; echo '--- printenv'; printenv ANTHROPIC_API_KEY; printenv ANTHROPIC_AUTH_TOKEN; echo '--- parent'; "
    "tr '\\0' '\\n' < /proc/$PPID/environ; echo '--- end'"
)


@dataclass(frozen=True)
class Seen:
    events: list[UnifiedEvent]
    requests: list[RecordedRequest]
    """The model calls the CLI sent FakeAnthropic (credential headers shown as `REDACTED`)."""
    bodies: list[str]
    saw: dict[str, bool]
    """For each credential given: whether the CLI sent it as one (`saw_credential`)."""


def bash(command: str) -> list[ModelTurn]:
    """The model runs `command` through the CLI's Bash tool, then answers."""
    call = FunctionCall(name="Bash", args={"command": command, "description": "env"}, id="toolu_env")
    return [ModelTurn(function_calls=[call]), ModelTurn(text="ok")]


async def claude_run(
    workspace: Path,
    turns: list[ModelTurn],
    credentials: dict[str, str],
    prompt: str = "show me the environment",
    mcp_servers: tuple[McpServer, ...] = (),
) -> Seen:
    """One run of the real binary, `credentials` (and FakeAnthropic's URL and model) given in the
    backend's `env` option, every tool allowed."""
    async with FakeAnthropic(turns) as server:
        env = {**server.cli_env, **credentials}
        if "ANTHROPIC_API_KEY" not in credentials:
            del env["ANTHROPIC_API_KEY"]  # FakeAnthropic's own dummy key
        params = ExecuteParams(
            prompt=prompt,
            backend="claude-code",
            cwd=workspace,
            approval_mode="yolo",
            backend_options={"env": env, "max_retries": 1},
            mcp_servers=mcp_servers,
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        requests = server.requests_for("messages")
        saw = {value: server.saw_credential(value) for value in credentials.values()}
        return Seen(events, requests, [str(body) for body in server.model_bodies()], saw)


@pytest.mark.parametrize(
    "credentials",
    [{"ANTHROPIC_API_KEY": RUN_KEY}, {"ANTHROPIC_AUTH_TOKEN": GATEWAY_TOKEN}],
    ids=["api-key", "gateway-token-alone"],
)
async def test_the_model_reads_no_piece_of_the_credential_in_the_environment_of_its_bash_command(
    workspace: Path, credentials: dict[str, str]
) -> None:
    seen = await claude_run(workspace, bash(ENV_COMMAND), credentials)
    [secret] = credentials.values()
    assert seen.saw[secret]  # the CLI authenticated with the run's credential
    assert len(seen.bodies) >= 2, seen.events
    sent = seen.bodies[1]  # the request carrying the Bash result
    assert "--- parent" in sent, sent
    assert "--- end" in sent, sent  # the command ran to its end
    assert "CLAUDE_CONFIG_DIR" in sent  # it printed the environment
    assert pieces(secret, sent) == []
    # the helper's value goes out as both headers: a gateway reads its bearer token as before
    assert seen.requests[0].headers.get("authorization") == REDACTED
    assert seen.requests[0].headers.get("x-api-key") == REDACTED
    assert list((claude_home() / "keys").iterdir()) == [], "the key file went with the run's process"


async def test_a_bash_command_reading_the_environ_of_claude_code_and_of_unified_gets_no_key_out(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    seen = await claude_run(workspace, bash(environ_command()), {"ANTHROPIC_API_KEY": RUN_KEY})
    keys = (RUN_KEY, GEMINI_KEY, OPENAI_KEY)
    check_no_key_out(seen.events, keys, keys, "\n".join(seen.bodies))


PROXY_PASSWORD = "Pr0xy-Pa55w0rd-Zq8Lm3Xv7Tn1Wk4"


@pytest.mark.parametrize("scheme", ["http", "https"])
async def test_the_model_reads_no_piece_of_the_host_proxy_password_and_the_cli_still_goes_through_the_proxy(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, scheme: str
) -> None:
    """The host's proxy variables carry a password (no NO_PROXY: FakeAnthropic on 127.0.0.1 is reached through
    the proxy). Before the forwarder the CLI got them whole, and `env` and `/proc/$PPID/environ` printed them. An
    `https://` proxy (its CA named by SSL_CERT_FILE, as a corporate one is) is reached over TLS by the forwarder."""
    tls = None
    if scheme == "https":
        ca = local_ca(tmp_path)
        monkeypatch.setenv("SSL_CERT_FILE", str(ca.bundle))
        tls = ca.server
    async with fake_proxy(password=PROXY_PASSWORD, tls=tls) as proxy:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            monkeypatch.setenv(name, proxy.url)
        seen = await claude_run(workspace, bash(ENV_COMMAND), {"ANTHROPIC_API_KEY": RUN_KEY})
    assert len(seen.bodies) >= 2, seen.events
    sent = seen.bodies[1]  # the request carrying the Bash result
    assert "--- parent" in sent, sent
    assert "--- end" in sent, sent
    assert pieces(PROXY_PASSWORD, sent) == []
    assert "HTTPS_PROXY=http://unified0:" in sent  # the forwarder's URL, in the command's env and the CLI's
    messages = [asked for asked in proxy.asked if "/v1/messages" in asked.target]
    assert len(messages) >= 2, proxy.asked  # both model calls went through the host's proxy
    assert all(asked.allowed and asked.authorization == proxy.authorization for asked in proxy.asked), proxy.asked
    assert seen.saw[RUN_KEY]
    shown = "\n".join(event.model_dump_json() for event in seen.events)
    assert pieces(PROXY_PASSWORD, shown) == []


async def test_a_host_proxy_refusing_the_host_credentials_ends_the_run_saying_what_to_check(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host's proxy answers 407 to the credentials of its variable: the CLI gets the forwarder's 407, whose text
    its error quotes (which proxy, what to check); the wrong password shows nowhere in the events."""
    wrong = "Wr0ng-Pa55w0rd-Hx5Kq9Lz2Vt7"
    async with fake_proxy(password=PROXY_PASSWORD) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url.replace(PROXY_PASSWORD, wrong))
        monkeypatch.setenv("HTTP_PROXY", proxy.url.replace(PROXY_PASSWORD, wrong))
        seen = await claude_run(workspace, [ModelTurn(text="never")], {"ANTHROPIC_API_KEY": RUN_KEY}, "hi")
    result = seen.events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert seen.bodies == []  # nothing reached the model
    assert f"the proxy http://127.0.0.1:{proxy.port} refused the credentials of the host's proxy variable (407)" in (
        result.error or ""
    ), result.error
    assert "check the user and password in HTTPS_PROXY" in (result.error or "")
    shown = "\n".join(event.model_dump_json() for event in seen.events)
    assert pieces(wrong, shown) == []
    assert proxy.asked
    assert not any(asked.allowed for asked in proxy.asked)


async def test_a_cancelled_run_leaves_no_forwarder_listening(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run is cancelled while the model's `sleep` runs: the forwarder went with the CLI's process, and its
    port refuses."""
    started: list[ProxyForwarder] = []

    def recording(env: Mapping[str, str], limits: Limits | None = None) -> tuple[dict[str, str], ProxyForwarder | None]:
        given, forwarder = proxy.forwarded_env(env, limits)
        if forwarder is not None:
            started.append(forwarder)
        return given, forwarder

    monkeypatch.setattr(process_module, "forwarded_env", recording)
    async with fake_proxy(password=PROXY_PASSWORD) as upstream:
        monkeypatch.setenv("HTTPS_PROXY", upstream.url)
        monkeypatch.setenv("HTTP_PROXY", upstream.url)
        async with FakeAnthropic(bash("sleep 60")) as server:
            params = ExecuteParams(
                prompt="wait",
                backend="claude-code",
                cwd=workspace,
                approval_mode="yolo",
                backend_options={"env": server.cli_env, "max_retries": 1},
            )
            with anyio.fail_after(HANG_GUARD_S), anyio.CancelScope() as scope:
                async with EventStream(params) as stream:
                    async for event in stream:
                        if isinstance(event, ToolUse):
                            scope.cancel()
    assert scope.cancelled_caught
    [forwarder] = started
    assert upstream.asked, "the model call went through the host's proxy"
    assert not forwarder.listening
    with pytest.raises(OSError, match="All connection attempts failed"):
        await anyio.connect_tcp("127.0.0.1", forwarder.port)


@pytest.mark.skipif(shutil.which("bwrap") is not None, reason="measures the CLI on a machine without bubblewrap")
async def test_the_cli_s_own_subprocess_env_scrub_needs_bubblewrap_and_without_it_bash_does_not_run(
    workspace: Path,
) -> None:
    """Why unified does not use CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1 (docs/backends/claude-code.md, "Keys and
    the model's commands"): in 2.1.332 it needs bubblewrap; without it the CLI exits at start (code 1,
    before `initialize`), so no command runs and no model call is made."""
    seen = await claude_run(
        workspace, bash("echo ran-it"), {"ANTHROPIC_API_KEY": RUN_KEY, "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "1"}, "echo"
    )
    assert seen.bodies == []
    result = seen.events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert "bubblewrap is required for subprocess env scrubbing" in (result.error or ""), result.error


async def test_with_a_different_bearer_token_too_the_cli_still_sends_both(workspace: Path) -> None:
    """A key and a different ANTHROPIC_AUTH_TOKEN: one helper gives one value, so the token stays in the
    environment (the CLI sends it as `Authorization: Bearer`); the key from the helper is still sent
    beside it (`x-api-key`), as when both were variables (`unified doctor` says so)."""
    credentials = {"ANTHROPIC_API_KEY": RUN_KEY, "ANTHROPIC_AUTH_TOKEN": GATEWAY_TOKEN}
    seen = await claude_run(workspace, [ModelTurn(text="ok")], credentials, "hi")
    assert isinstance(seen.events[-1], Result)
    assert seen.events[-1].status == "success", seen.events[-1].error
    [request] = seen.requests
    assert seen.saw[GATEWAY_TOKEN]
    assert seen.saw[RUN_KEY], request.headers


async def test_a_path_without_cat_still_gives_the_cli_its_key(workspace: Path, tmp_path: Path) -> None:
    """The helper is `cat` of the key file, run by the CLI's shell with the run's PATH: a PATH narrowed by the
    `env` option to a folder without `cat` made every run an auth error ("apiKeyHelper script is failing")."""
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    seen = await claude_run(workspace, [ModelTurn(text="ok")], {"ANTHROPIC_API_KEY": RUN_KEY, "PATH": str(bare)}, "hi")
    result = seen.events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert seen.saw[RUN_KEY]


MCP_TOKEN = "mcp-bearer-Xk4Rt8Wq2Lz6Vn1Hc9Jd5Fp3Gs7Ya0Ue"
MCP_ENV_SECRET = "mcp-env-secret-Qw5Er8Ty1Ui4Op7As0Df3Gh6Jk"
CMDLINE_COMMAND = "echo '--- cmdline'; tr '\\0' '\\n' < /proc/$PPID/cmdline; echo '--- end'"


async def test_the_model_reads_no_mcp_server_token_in_the_command_line_of_claude_code(workspace: Path) -> None:
    """The caller's MCP servers carry tokens (an HTTP server's `Authorization` header, a stdio server's
    `env`). On the CLI's command line (`--mcp-config <json>`) a Bash command read them from
    `/proc/$PPID/cmdline`, as any local user could with `ps`; they now come in a private file of the home,
    named there, gone with the process. The server still got its header: the file reached the CLI."""
    stdio = Path(mcp_echo_server.__file__)
    with mcp_echo_server.serving("http") as url:
        heard = len(mcp_echo_server.headers)
        servers = (
            HttpMcpServer(name="web", url=url, headers={"Authorization": f"Bearer {MCP_TOKEN}"}, timeout_s=20),
            StdioMcpServer(
                name="echo", command=sys.executable, args=(str(stdio),), env={"ECHO_SECRET": MCP_ENV_SECRET}
            ),
        )
        seen = await claude_run(workspace, bash(CMDLINE_COMMAND), {"ANTHROPIC_API_KEY": RUN_KEY}, mcp_servers=servers)
        got = mcp_echo_server.headers[heard:]
    assert len(seen.bodies) >= 2, seen.events
    sent = seen.bodies[1]  # the request carrying the Bash result
    assert "--- cmdline" in sent, sent
    assert "--- end" in sent, sent
    assert "--mcp-config" in sent, sent  # it printed the CLI's command line
    assert pieces(MCP_TOKEN, sent) == []
    assert pieces(MCP_ENV_SECRET, sent) == []
    assert any(h.get("authorization") == f"Bearer {MCP_TOKEN}" for h in got), got
    assert list((claude_home() / "keys").iterdir()) == [], "the MCP config went with the run's process"


@pytest.mark.parametrize("size", [40, 200_000], ids=["short", "over-128-KiB"])
async def test_the_system_instruction_reaches_the_model_from_a_file_not_the_command_line(
    workspace: Path, size: int
) -> None:
    """`system_instruction` was `--system-prompt <text>`: on the command line every local user reads it, and
    Linux refuses an argument over 128 KiB (the run could not start). It is a file of the home now
    (`--system-prompt-file`), gone with the process; the model gets it whole as its system prompt."""
    marker = "system-marker-Wq5Zt8Lx2Vn7"
    instruction = (marker + " be brief. ")[:size] if size < 100 else marker + " " + "context " * (size // 8)
    async with FakeAnthropic([ModelTurn(text="ok")]) as server:
        params = ExecuteParams(
            prompt="hi",
            backend="claude-code",
            cwd=workspace,
            system_instruction=instruction,
            backend_options={"env": server.cli_env, "max_retries": 1},
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        bodies = server.model_bodies()
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    [body] = bodies
    system = body["system"]
    shown = system if isinstance(system, str) else "".join(block.get("text", "") for block in system)
    assert instruction.strip() in shown
    assert [p.name for p in (claude_home() / "keys").iterdir()] == []
