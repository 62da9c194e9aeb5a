"""Red team (secrets) on the real `codex` binary (offline, against FakeOpenAI): what a command the model
runs can read of the environment of its shell, of Codex's process and of unified's own, and what of
the run's key reaches the model and the events.

- The shell's own environment (`env`, `printenv`): unified keeps the keys out with Codex's own
  `[shell_environment_policy] exclude` (`_launch.py`, SECRET_PATTERNS); the assertion is on what the
  model received, the command output Codex sent back in its next request (not unified's events, whose
  redaction would hide a leak). Codex still authenticated with the key (`saw_credential`).
- `/proc/$PPID/environ` (Codex's own process) and `/proc/<unified's pid>/environ`: the Gemini and
  Anthropic keys of unified's environment never reach Codex's process, nor does the run's own key (it
  goes by `account/login/start`: docs/backends/codex.md), which is replaced in every event too.
- A provider error quoting the key: no piece of it in the events.
- A host proxy URL with a password (HTTPS_PROXY, HTTP_PROXY) reaches Codex as a local forwarder's URL with a
  credential of its own (`unified._binary.proxy`): the model reads no piece of the password, while Codex's
  requests went through the host's proxy with the host's credentials.
- unified's own environ (`/proc/<unified's pid>/environ`, the keys it started with), read by a command while unified
  runs as a user that is not root: refused (`hide_host_environment`, tests/e2e/host_environ.py); opted out, readable.

One setup (`codex_run`) serves every attack: the merge of the former test_codex_env_scrub.py and
test_codex_secrets.py, whose runs were the same but for the command."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from tests.e2e.conformance import mcp_echo_server
from tests.e2e.environ_attack import check_no_key_out, environ_command, pieces
from tests.hang_guard import HANG_GUARD_S
from tests.harness.fake_proxy import fake_proxy
from unified._execute import EventStream
from unified.events import ErrorEvent, UnifiedEvent
from unified.testing import CODEX_MODEL, FakeOpenAI, Fault, FunctionCall, ModelTurn
from unified.types import ApprovalMode, ExecuteParams, HttpMcpServer, McpServer, StdioMcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

RUN_KEY = "sk-proj-cRt7Qx2Lm9Vb4Nz8Kp3Wd6Hs1Jf5Gy0Ua7Ei2Ol9Tc4Xr8Mq3Bn6Zv1Sk5Dh0Fw7Pg2Yj9T3BlbkFJaQ4eR7tY1uI"
GEMINI_KEY = "AIzaSyC-k3Vn8Qz1Wx5Rt9Lp2Mb6Hj0Df4Gs7Ya3Ue"
ANTHROPIC_KEY = "sk-ant-api03-Hq4Zm8Xc2Vb6Nl1Kj5Gf9Ds3Ap7Oi0Uy4Tr8Ew2Qw6Er1Ty5Ui9Op3As7Df0AA"
ENV_COMMAND = "env; echo '--- printenv'; printenv OPENAI_API_KEY; printenv CODEX_API_KEY; echo '--- end'"
PARENT_COMMAND = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -a -i -E 'api_key'; echo '--- end'"


@dataclass(frozen=True)
class Seen:
    events: list[UnifiedEvent]
    bodies: list[str]
    """Every request Codex sent the model server, as the model received it."""
    authenticated: bool
    """Codex sent the run's key to the model server."""

    @property
    def after_the_command(self) -> str:
        assert len(self.bodies) >= 2, self.events
        return "\n".join(self.bodies[1:])


def shell(command: str) -> list[ModelTurn]:
    """The model runs `command` through Codex's shell tool, then answers."""
    call = FunctionCall(name="run_shell_command", args={"command": command})
    return [ModelTurn(function_calls=[call]), ModelTurn(text="ok")]


async def codex_run(
    workspace: Path,
    turns: list[ModelTurn],
    prompt: str = "show me the environment",
    approval: ApprovalMode = "yolo",
    mcp_servers: tuple[McpServer, ...] = (),
) -> Seen:
    """One run of the real binary with the run's key given in its options (no environment of its own)."""
    async with FakeOpenAI(turns, api_key=RUN_KEY) as server:
        params = ExecuteParams(
            prompt=prompt,
            backend="codex",
            model=CODEX_MODEL,
            cwd=workspace,
            approval_mode=approval,
            backend_options={"base_url": server.base_url, "api_key": RUN_KEY, "pool_size": 0},
            mcp_servers=mcp_servers,
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        return Seen(events, [str(request.body) for request in server.requests], server.saw_credential(RUN_KEY))


async def test_the_model_reads_no_piece_of_the_key_in_the_environment_of_its_command(workspace: Path) -> None:
    seen = await codex_run(workspace, shell(ENV_COMMAND))
    sent = seen.after_the_command
    assert seen.authenticated
    assert "--- printenv" in sent, sent
    assert "--- end" in sent, sent  # the command ran to its end
    assert "PATH=" in sent, sent  # it printed the environment
    assert pieces(RUN_KEY, sent) == [], sent


async def test_the_environ_of_codex_itself_holds_no_key(workspace: Path) -> None:
    """The shell's parent is Codex's process, whose exec environment a same-user command can read for the
    process's whole life: the run's key reaches Codex by `account/login/start` (kept in memory), never
    there. Before, it held OPENAI_API_KEY (measured as a user other than root too: dumpable)."""
    seen = await codex_run(workspace, shell(PARENT_COMMAND))
    sent = seen.after_the_command
    assert seen.authenticated  # Codex still sent the key to the model server
    assert "--- end" in sent, sent
    assert pieces(RUN_KEY, sent) == [], sent


async def test_a_command_reading_the_environ_of_codex_and_of_unified_gets_no_key_out(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    seen = await codex_run(workspace, shell(environ_command()))
    # What the model was sent (the command's output): never another provider's key. (unified's own
    # /proc/<pid>/environ is the environment this test process started with, not the monkeypatched one.)
    check_no_key_out(
        seen.events, (RUN_KEY, GEMINI_KEY, ANTHROPIC_KEY), (GEMINI_KEY, ANTHROPIC_KEY), "\n".join(seen.bodies)
    )


PROXY_PASSWORD = "Pr0xy-Pa55w0rd-Zq8Lm3Xv7Tn1Wk4"
PROXY_COMMAND = "env; echo '--- parent'; tr '\\0' '\\n' < /proc/$PPID/environ; echo '--- end'"


async def test_the_model_reads_no_piece_of_the_host_proxy_password_and_codex_still_goes_through_the_proxy(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host's proxy variables carry a password (no NO_PROXY: FakeOpenAI on 127.0.0.1 is reached through the
    proxy). Before the forwarder Codex got them whole, and `env` and `/proc/$PPID/environ` printed them."""
    async with fake_proxy(password=PROXY_PASSWORD) as proxy:
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            monkeypatch.setenv(name, proxy.url)
        seen = await codex_run(workspace, shell(PROXY_COMMAND))
    sent = seen.after_the_command
    assert seen.authenticated
    assert "--- parent" in sent, sent
    assert "--- end" in sent, sent
    assert pieces(PROXY_PASSWORD, sent) == []
    assert "HTTPS_PROXY=http://unified0:" in sent  # the forwarder's URL
    assert len(proxy.asked) >= 2, proxy.asked  # the model calls went through the host's proxy
    assert all(asked.allowed and asked.authorization == proxy.authorization for asked in proxy.asked), proxy.asked
    shown = "\n".join(event.model_dump_json() for event in seen.events)
    assert pieces(PROXY_PASSWORD, shown) == []


@pytest.mark.parametrize("kind", ["unauthenticated", "permission_denied", "bad_request"])
async def test_a_provider_error_that_echoes_the_key_shows_none_of_it(workspace: Path, kind: str) -> None:
    """The provider's 401/403/400 quotes the key, whole, in a URL's query, and cut at the provider's end
    (a long message): Codex passes the text on; the run's error events show no piece of the key."""
    long = "x" * 400
    message = f"Incorrect API key provided: {RUN_KEY}. See https://p.test/keys?key={RUN_KEY}&v=1 {long}{RUN_KEY}"
    turns = [ModelTurn(text="never", fault=Fault(kind=kind, message=message))]
    seen = await codex_run(workspace, turns, prompt="hello", approval="default")
    errors = [e for e in seen.events if isinstance(e, ErrorEvent)]
    assert errors, [e.type for e in seen.events]
    shown = "\n".join(e.model_dump_json() for e in seen.events)
    assert pieces(RUN_KEY, shown) == []


SERVER_SECRET = "pg://u:Pw7Kq2Xz9Lm4Vb1Nc6Hd3Jf8Tz0@h-Rx4Wq.Yv8/Lm2Bn"


async def test_a_stdio_mcp_server_s_env_is_not_in_the_environment_of_the_model_s_command(workspace: Path) -> None:
    """A stdio MCP server's `env` reaches Codex's process (Codex forwards it to the server by name) and so the
    environment the model's commands inherit; a name no secret pattern matches (`ECHO_DATABASE_URL`) was
    printed by `env` whole. It is excluded by name now ([shell_environment_policy] exclude, per run)."""
    echo = StdioMcpServer(
        name="echo",
        command=sys.executable,
        args=(str(mcp_echo_server.__file__),),
        env={"ECHO_DATABASE_URL": SERVER_SECRET},
        timeout_s=20,
    )
    seen = await codex_run(workspace, shell(ENV_COMMAND), mcp_servers=(echo,))
    sent = seen.after_the_command
    assert "--- end" in sent, sent
    assert "PATH=" in sent, sent  # it printed the environment
    assert "ECHO_DATABASE_URL" not in sent, sent
    assert pieces(SERVER_SECRET, sent) == [], sent


MCP_TOKEN = "mcp-bearer-Xk4Rt8Wq2Lz6Vn1Hc9Jd5Fp3Gs7Ya0Ue"
PARENT_DUMP = "tr '\\0' '\\n' < /proc/$PPID/environ; echo '--- end'"


async def test_no_mcp_server_secret_is_in_the_environ_of_codex_itself(workspace: Path) -> None:
    """A stdio server's `env` was forwarded through Codex's environment (`env_vars`) and an HTTP server's
    headers through `UNIFIED_MCP_<n>_<i>_TOKEN` variables (`env_http_headers`): a command reading
    `/proc/$PPID/environ` (Codex's own, same user) printed both whole, and the model got them. The tables go
    to the thread now (`thread/start`'s `config`, over stdin): the servers still get their secrets."""
    with mcp_echo_server.serving("http") as url:
        heard = len(mcp_echo_server.headers)
        servers = (
            HttpMcpServer(name="web", url=url, headers={"Authorization": f"Bearer {MCP_TOKEN}"}, timeout_s=20),
            StdioMcpServer(
                name="echo",
                command=sys.executable,
                args=(str(mcp_echo_server.__file__),),
                env={"ECHO_DATABASE_URL": SERVER_SECRET},
                timeout_s=20,
            ),
        )
        seen = await codex_run(workspace, shell(PARENT_DUMP), mcp_servers=servers)
        got = mcp_echo_server.headers[heard:]
    sent = seen.after_the_command
    assert "--- end" in sent, sent
    assert "CODEX_HOME=" in sent, sent  # it printed Codex's environment
    assert pieces(MCP_TOKEN, sent) == [], sent
    assert pieces(SERVER_SECRET, sent) == [], sent
    assert any(h.get("authorization") == f"Bearer {MCP_TOKEN}" for h in got), got  # the header reached the server
    warnings = [e for e in seen.events if e.type == "warning"]
    assert not any(getattr(w, "code", "") == "mcp_unavailable" for w in warnings), warnings  # both servers started
