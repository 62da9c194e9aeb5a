"""Bad input round 5 for the gemini-cli backend, with the real pinned binary against FakeGemini: an MCP server
that takes the connection and then fails. 0.61 says nothing of such a server over ACP; what it does do is hold
the session's opening until every server has listed its tools (10 minutes for one that never does)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.e2e.api_loop.test_api_bad_input_round5 import ANSWERS
from tests.e2e.bad_binaries import Started, the_error
from tests.e2e.gemini_cli.gemini_cli_helpers import Run, stream_line, text
from tests.hang_guard import HANG_GUARD_S
from tests.harness.raw_http import answering
from unified import ExecuteParams, ImageInput, UserInputRequest, UserInputResponse, execute
from unified._adapters.gemini_cli._launch import start_gemini
from unified.events import Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.testing import FakeGemini, ModelTurn
from unified.testing._fake_gemini import CLI_MODEL
from unified.types import HttpMcpServer, McpServer, SseMcpServer, StdioMcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

SILENT_AFTER_INITIALIZE = """
import json, os, sys
with open(sys.argv[1], "w") as pid_file:
    pid_file.write(str(os.getpid()))
request = json.loads(sys.stdin.readline())
answer = {"protocolVersion": request["params"]["protocolVersion"], "capabilities": {"tools": {}},
          "serverInfo": {"name": "silent", "version": "1"}}
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": answer}) + "\\n")
sys.stdout.flush()
for line in sys.stdin:  # reads tools/list and every later request, and answers none
    pass
"""
"""An MCP server (stdio) that answers `initialize` and then nothing: a server stuck after its handshake."""
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
"""The head of a PNG: the refusal comes before anything reads the image."""


async def run(server: FakeGemini, workspace: Path, started: Started | None, *mcp: McpServer) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="hi",
        backend="gemini-cli",
        model=CLI_MODEL,
        cwd=workspace,
        mcp_servers=mcp,
        idle_timeout_s=120,  # old code's end: the idle timeout, which names nothing
        backend_options={"env": server.cli_env, "pool_size": 0}
        | ({"start_process": started} if started is not None else {}),
    )
    with anyio.fail_after(HANG_GUARD_S):
        async with execute(params) as stream:
            return [event async for event in stream]


def runs(pid: int, script: Path) -> bool:
    """Whether process `pid` still runs `script` (not a later process that took its pid)."""
    try:
        return str(script).encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


@pytest.mark.usefixtures("short_opening_slack")
async def test_an_mcp_server_that_stops_answering_after_initialize_is_a_backend_error_naming_it(
    workspace: Path, tmp_path: Path
) -> None:
    """Was: no event at all until the idle timeout (180 s by default), then `idle_timeout` "no event within
    180s", naming neither the server nor the session's opening that waited for it (the CLI would have waited
    10 minutes). Now the opening is given up after the server's `timeout_s` and a slack, as a typed error that
    names the server and says what to check; the CLI and the server it started are gone."""
    script = tmp_path / "silent_mcp.py"
    script.write_text(SILENT_AFTER_INITIALIZE)
    pid_file = tmp_path / "mcp.pid"
    silent = StdioMcpServer(name="silent", command=sys.executable, args=(str(script), str(pid_file)), timeout_s=1)
    started = Started(start_gemini, os.environ["UNIFIED_GEMINI_BIN"])
    async with FakeGemini([ModelTurn(text="never")]) as server:
        events = await run(server, workspace, started, silent)
        assert server.requests == []  # the model was never asked
    error = the_error(events)
    assert error.code == "backend_error", error.message
    assert "'silent'" in error.message
    assert "tools/list" in error.message  # what to check, from the hint
    assert not any(isinstance(event, SessionStarted) for event in events)
    assert started.processes
    assert not started.still_running()
    assert pid_file.exists()  # the CLI did start the server: it was the server that stalled
    assert not runs(int(pid_file.read_text()), script)


FAILING_MCP = [
    ("http-401", "http", 401, b"{}", "requires authentication"),
    ("sse-401", "sse", 401, b"{}", "requires authentication"),
    ("http-500", "http", 500, b'{"error": "database down"}', "HTTP 500"),
    ("http-garbage", "http", 200, b"no json here", "not valid JSON"),
]
"""MCP servers that take the connection and fail, each its own way: one run is given all four, under their ids."""


async def test_an_mcp_server_that_takes_the_connection_and_fails_is_a_warning_naming_it(workspace: Path) -> None:
    """Was: nothing. The TCP look saw a port that is up; the CLI dropped the server and said so only in its debug
    log. Now `mcp_unavailable` names the server, its URL and what the CLI met, once, and the run goes on. One run
    has all four servers: each gets its own warning, saying what that one met."""
    headers = {"Authorization": "Bearer s3cret-token"}
    with contextlib.ExitStack() as stack:
        failing: list[McpServer] = []
        urls: dict[str, str] = {}
        for name, kind, status, body, _ in FAILING_MCP:
            base, _ = stack.enter_context(answering(status, body))
            urls[name] = f"{base}/mcp"
            cls = HttpMcpServer if kind == "http" else SseMcpServer
            failing.append(cls(name=name, url=urls[name], headers=headers))
        async with FakeGemini([ModelTurn(text="done without it")]) as server:
            events = await run(server, workspace, None, *failing)
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.code == "mcp_unavailable"]
    assert len(warnings) == len(FAILING_MCP), [e.message for e in events if isinstance(e, WarningEvent)]
    for name, _, _, _, said in FAILING_MCP:
        [warning] = [w for w in warnings if f"'{name}'" in w.message]
        assert urls[name].removesuffix("/mcp") in warning.message
        assert said in warning.message
        assert "s3cret-token" not in warning.message
    last = events[-1]
    assert isinstance(last, Result)
    assert last.status == "success"
    assert last.final_text == "done without it"


NO_LOAD_WRAPPER = """#!{python}
import os, subprocess, sys
real = {real!r}
if "--acp" not in sys.argv:
    os.execv(real, [real, *sys.argv[1:]])
child = subprocess.Popen([real, *sys.argv[1:]], stdout=subprocess.PIPE, close_fds=False)  # the key pipe too
for line in child.stdout:  # the CLI's answers, with session/load no longer offered
    sys.stdout.buffer.write(line.replace(b'"loadSession":true', b'"loadSession":false'))
    sys.stdout.buffer.flush()
sys.exit(child.wait())
"""
"""The real pinned gemini, whose ACP `initialize` answer says it offers no `session/load` (as a CLI without it)."""


def without_load(folder: Path) -> Path:
    """`NO_LOAD_WRAPPER` around the real binary, as a binary of its own."""
    path = folder / "gemini-without-load"
    path.write_text(NO_LOAD_WRAPPER.format(python=sys.executable, real=os.environ["UNIFIED_GEMINI_BIN"]))
    path.chmod(0o755)
    return path


async def a_session(warm_gemini: Run, responses: Callable[..., Path]) -> str:
    """The short id of a session the real CLI made (over ACP) in the workspace: on the module's warm process, whose
    HOME the test's own run (of another binary) then finds it in."""
    events = await warm_gemini(responses(stream_line(text("first answer"))), prompt="remember 42")
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.short_id is not None
    return started.short_id


async def ask(request: UserInputRequest) -> UserInputResponse:
    raise AssertionError(f"nothing can be asked on `gemini -p`: {request}")


async def test_a_resume_through_stream_json_names_the_mcp_servers_and_the_asking_it_drops(
    warm_gemini: Run, run_gemini: Run, responses: Callable[..., Path], tmp_path: Path
) -> None:
    """A gemini without ACP `session/load` (the real one, its `initialize` answer saying so) resumes
    through `gemini -p --resume`, which takes no MCP servers and asks nobody. Was: a warning that said "no
    thoughts, no permission prompts" and nothing of the run's MCP servers or its `on_user_input`, which went
    nowhere; the model just lacked the tools. Now the warning names them; the run goes on."""
    short_id = await a_session(warm_gemini, responses)
    notes = StdioMcpServer(name="notes", command=sys.executable, args=(str(tmp_path / "never_started.py"),))
    events = await run_gemini(
        responses(stream_line(text("still 42"))),
        prompt="what was it?",
        resume=short_id,
        mcp_servers=(notes,),
        on_user_input=ask,
        backend_options={"gemini_binary": str(without_load(tmp_path))},
    )
    [warning] = [e for e in events if isinstance(e, WarningEvent) and e.code == "resume_via_stream_json"]
    assert "'notes'" in warning.message
    assert "on_user_input" in warning.message
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "still 42")


async def test_a_resume_through_stream_json_refuses_the_images_it_would_drop(
    warm_gemini: Run, run_gemini: Run, responses: Callable[..., Path], tmp_path: Path
) -> None:
    """Was: the prompt's images were dropped without a word (`gemini -p` takes text only), where the stream-json
    transport refuses them. Now the same refusal, before the CLI runs, and the session is left as it was."""
    short_id = await a_session(warm_gemini, responses)
    events = await run_gemini(
        responses(stream_line(text("never"))),
        prompt="what is in this picture?",
        resume=short_id,
        images=(ImageInput(mime_type="image/png", data=PNG),),
        backend_options={"gemini_binary": str(without_load(tmp_path))},
    )
    error = the_error(events)
    assert error.code == "configuration_error", error.message
    assert "images" in error.message


@pytest.mark.parametrize(
    ("kind", "said"),
    [("directory", "is a directory, not a program"), ("not_executable", "is not executable")],
)
async def test_an_mcp_command_that_cannot_run_is_a_warning_saying_why(
    warm_gemini: Run, responses: Callable[..., Path], tmp_path: Path, kind: str, said: str
) -> None:
    """Was: a file without its `x` bit "was not found" (it is there), and a directory passed the look (it has an
    `x` bit) to fail in the CLI's own spawn (EACCES). Now the warning says which it is, before the CLI starts it."""
    command = tmp_path / "mcp-server"
    if kind == "directory":
        command.mkdir()
    else:
        command.write_text("#!/bin/sh\nexit 0\n")
        command.chmod(0o644)
    server = StdioMcpServer(name="tickets", command=str(command))
    events = await warm_gemini(responses(stream_line(text("ok"))), mcp_servers=(server,))
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.code == "mcp_unavailable"]
    assert len(warnings) == 1, [e.message for e in events if isinstance(e, WarningEvent)]
    assert "'tickets'" in warnings[0].message
    assert said in warnings[0].message
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "ok")


@pytest.mark.parametrize("kind", list(ANSWERS))
async def test_an_answer_that_is_not_the_api_s_json_is_a_stream_error_saying_so(workspace: Path, kind: str) -> None:
    """A stream cut in the middle of an event, and a proxy's HTML page with status 200: 0.61 ends the prompt with
    a JSON-RPC error 500 "Incomplete JSON segment at the end", which the run passed on as `backend_error` "the
    Gemini API failed (500) ... a server-side problem" (no 500 came). Now `stream_interrupted`, saying what came."""
    content_type, body = ANSWERS[kind]
    with answering(200, body, content_type) as (url, _):
        env = {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": "fake-gemini-key", "GEMINI_MODEL": CLI_MODEL}
        options = {"env": env, "pool_size": 0}
        params = ExecuteParams(prompt="hi", backend="gemini-cli", cwd=workspace, backend_options=options)
        with anyio.fail_after(HANG_GUARD_S):
            async with execute(params) as stream:
                events = [event async for event in stream]
    error = the_error(events)
    assert (error.code, error.retryable) == ("stream_interrupted", True), error.message
    assert "is not its JSON" in error.message
    assert "(500)" not in error.message
