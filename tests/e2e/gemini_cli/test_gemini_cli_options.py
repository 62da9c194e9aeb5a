"""Pass-through options, MCP servers, `ask_user`, crashes and cancellation, with the real 0.61 binary.

One backend (asyncio) for most: the trio path is the same code and runs in the other e2e modules.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import Run, call, cmdline, kinds, stream_line, text
from tests.hang_guard import HANG_GUARD_S
from unified import ExecuteParams, UserInputRequest, UserInputResponse
from unified._adapters.gemini_cli import AcpPool
from unified._execute import EventStream
from unified._pgroup import ProcessGroup
from unified.events import ErrorEvent, PermissionDecision, Result, ToolResult, ToolUse, UnifiedEvent, WarningEvent
from unified.types import HttpMcpServer, StdioMcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]
Responses = Callable[..., Path]

MCP_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool()
def lookup(key: str) -> str:
    """Look a key up in the notes."""
    return f"value-of-{key}"


server.run()
'''


def result_of(events: Sequence[object]) -> Result:
    last = events[-1]
    assert isinstance(last, Result)
    return last


def _assert_not_found(events: list[UnifiedEvent], name: str) -> None:
    """The one call the CLI answered with "not found": shown with its name, denied by the backend (as the
    API backends deny a tool they lack), and its error as the result, after the turn's text."""
    assert kinds(events) == [
        "session_started",
        "text_delta",
        "assistant_message",
        "tool_use",
        "permission_decision",
        "tool_result",
        "result",
    ]
    [use] = [e for e in events if isinstance(e, ToolUse)]
    [done] = [e for e in events if isinstance(e, ToolResult)]
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.tool_use_id, decision.decision, decision.decided_by) == (use.tool_use_id, "deny", "backend")
    assert use.name == name
    assert done.tool_use_id == use.tool_use_id
    assert done.is_error
    assert "not found" in (done.output or "")


async def test_excluded_tools_are_not_offered(warm_gemini: Run, responses: Responses) -> None:
    fake = responses(stream_line(call("read_file", file_path="notes.txt")), stream_line(text("could not read")))
    events = await warm_gemini(fake, excluded_tools=("read_file",))
    # The CLI answers the model's call of an unknown tool with an error and shows nothing over ACP; the
    # adapter shows it from the chat file once the prompt has ended. test_tool_call_then_answer is the
    # control (the same call, not excluded, reads the file).
    _assert_not_found(events, "read_file")
    assert result_of(events).final_text == "could not read"
    assert not [e for e in events if isinstance(e, WarningEvent) and "excluded_tools" in e.message]


@pytest.mark.parametrize("excluded", ["write_*", "*_file"])
async def test_an_excluded_glob_takes_the_tools_it_names(warm_gemini: Run, responses: Responses, excluded: str) -> None:
    """Red team round 20: the CLI reads a rule's `toolName` as one name, so a glob took no tool and `write_file`
    stayed offered (and, in auto_edit, wrote); now the glob is matched against the CLI's tools (`deny_rules`)."""
    fake = responses(stream_line(call("write_file", file_path="x.txt", content="x")), stream_line(text("not written")))
    events = await warm_gemini(fake, excluded_tools=(excluded,), approval_mode="auto_edit")
    _assert_not_found(events, "write_file")
    assert result_of(events).final_text == "not written"


@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_include_directories_are_read_there_and_nowhere_else_new(
    warm_gemini: Run, responses: Responses, tmp_path: Path, transport: str
) -> None:
    """REFUSED before over stream-json: its argv lacked `--include-directories`, so the CLI called the included
    folder outside the workspace."""
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "x.txt").write_text("INCLUDED-X")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "y.txt").write_text("OTHER-Y")
    fake = responses(
        stream_line(call("read_file", file_path=str(tmp_path / "inc" / "x.txt"))),
        stream_line(call("read_file", file_path=str(tmp_path / "other" / "y.txt"))),
        stream_line(text("done")),
    )
    events = await warm_gemini(fake, include_directories=(tmp_path / "inc",), backend_options={"transport": transport})
    included, other = [e for e in events if isinstance(e, ToolResult)]
    assert (included.is_error, included.output) == (False, "INCLUDED-X")
    assert other.is_error
    assert "OTHER-Y" not in (other.output or "")
    assert "outside the allowed workspace directories" in (other.output or "")


async def test_system_instruction_replaces_the_system_prompt(
    warm_gemini: Run, responses: Responses, tmp_path: Path
) -> None:
    written = tmp_path / "sent-system.md"
    events = await warm_gemini(
        responses(stream_line(text("arr"))),
        system_instruction="You are a pirate. Answer in pirate speak.",
        backend_options={"env": {"GEMINI_WRITE_SYSTEM_MD": str(written)}},  # the CLI writes what it sends
    )
    assert result_of(events).status == "success"
    assert written.read_text().startswith("You are a pirate. Answer in pirate speak.")
    assert not [e for e in events if isinstance(e, WarningEvent) and "system_instruction" in e.message]


async def test_unsupported_options_warn(warm_gemini: Run, responses: Responses) -> None:
    """(`max_turns` is kept over ACP too now: tests/e2e/gemini_cli/test_gemini_cli_max_turns.py.)"""
    events = await warm_gemini(responses(stream_line(text("ok"))), thinking={"budget": 1024})
    assert any(isinstance(e, WarningEvent) and "thinking" in e.message for e in events)
    assert result_of(events).status == "success"


async def test_the_clis_own_ask_user_is_not_offered_over_acp(warm_gemini: Run, responses: Responses) -> None:
    """0.61 removes its own `ask_user` from the tools in ACP mode: a call of that bare name fails, nobody is
    asked. unified's ask_user is offered instead, as an MCP tool of another name (test_gemini_cli_ask_user.py)."""
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow()

    fake = responses(stream_line(call("ask_user", question="Which color?")), stream_line(text("never mind")))
    events = await warm_gemini(fake, on_user_input=answer)
    assert not asked
    _assert_not_found(events, "ask_user")
    assert result_of(events).final_text == "never mind"


async def test_mcp_server_tool_is_called(warm_gemini: Run, responses: Responses, tmp_path: Path) -> None:
    script = tmp_path / "notes_server.py"
    script.write_text(MCP_SERVER)
    server = StdioMcpServer(name="notes", command=sys.executable, args=(str(script),))
    fake = responses(stream_line(call("mcp_notes_lookup", key="alpha")), stream_line(text("found it")))
    events = await warm_gemini(fake, mcp_servers=(server,), approval_mode="yolo")
    use = next(e for e in events if isinstance(e, ToolUse))
    done = next(e for e in events if isinstance(e, ToolResult))
    assert (done.tool_use_id, done.is_error) == (use.tool_use_id, False)
    assert "value-of-alpha" in str(done.output)
    assert result_of(events).final_text == "found it"


async def test_crash_mid_stream_is_an_explained_error(responses: Responses, workspace: Path) -> None:
    fake = responses(stream_line(call("run_shell_command", command="sleep 30")), stream_line(text("done")))
    params = ExecuteParams(
        prompt="wait",
        backend="gemini-cli",
        cwd=workspace,
        approval_mode="yolo",
        backend_options={"fake_responses": str(fake), "pool_size": 0},
    )
    events = []
    async with EventStream(params, strict=True) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, ToolUse):
                # The whole group: `gemini` is a node launcher with a node child holding the pipes.
                [leader] = [p for p in _children(os.getpid()) if str(fake).encode() in cmdline(p)]  # not a warm one
                # through its pidfd, checked to be our child not yet reaped: never a group number gone to a stranger
                group = ProcessGroup(leader, lambda: False)
                assert group.signal(signal.SIGKILL)
                group.close()
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert "killed by signal 9" in error.message
    assert error.details["exit_code"] == -9
    assert result_of(events).status == "error"


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid:
                found.append(int(entry.name))
    return found


async def test_cancelled_run_leaves_its_neighbour_alone(responses: Responses, workspace: Path) -> None:
    # Each ACP session replays the responses file from its start, so both runs get the same script;
    # only the first to run the command (the victim, started first) sleeps.
    fake = responses(
        stream_line(call("run_shell_command", command="if mkdir first.lock; then sleep 3000; fi")),
        stream_line(text("the neighbour's whole answer")),
    )
    pool = AcpPool(size=1)
    outcomes: dict[str, list[str]] = {}
    started = anyio.current_time()
    shell_started = anyio.Event()

    async def one(name: str, prompt: str) -> None:
        params = ExecuteParams(
            prompt=prompt,
            backend="gemini-cli",
            cwd=workspace,
            approval_mode="yolo",
            backend_options={"fake_responses": str(fake), "pool": pool},
        )
        seen: list[str] = []
        async with EventStream(params, strict=True) as stream:
            async for event in stream:
                seen.append(event.type)
                if name == "victim" and isinstance(event, ToolUse):
                    shell_started.set()
                    stream.cancel()
                if isinstance(event, Result):
                    seen.append(f"{event.status}:{event.final_text}")
        outcomes[name] = seen

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "victim", "sleep")
            await shell_started.wait()
            tg.start_soon(one, "neighbour", "answer")
        assert pool.spawned == 1
        assert outcomes["victim"][-1].startswith("cancelled")
        assert outcomes["neighbour"][-1] == "success:the neighbour's whole answer"
        assert anyio.current_time() - started < HANG_GUARD_S  # nobody waited for the victim's `sleep 3000`
    finally:
        await pool.aclose()


async def test_an_http_mcp_server_that_is_down_is_a_warning_naming_it(warm_gemini: Run, responses: Responses) -> None:
    """A port nothing listens on (bound, never listening: refused, and no other process can take it meanwhile):
    the CLI dropped the server without a word over ACP; now `mcp_unavailable` names it, and the run goes on."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        down = HttpMcpServer(name="down", url=f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "Bearer s3"})
        events = await warm_gemini(responses(stream_line(text("ok"))), mcp_servers=(down,))
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.code == "mcp_unavailable"]
    assert len(warnings) == 1, [e.message for e in events if isinstance(e, WarningEvent)]
    assert "'down'" in warnings[0].message
    assert f"127.0.0.1:{port}" in warnings[0].message
    assert "s3" not in warnings[0].message
    assert result_of(events).final_text == "ok"


async def test_mcp_server_that_cannot_start_is_a_warning(warm_gemini: Run, responses: Responses) -> None:
    broken = StdioMcpServer(name="broken", command="no-such-mcp-server-binary")
    events = await warm_gemini(responses(stream_line(text("ok"))), mcp_servers=(broken,))
    warning = next(e for e in events if isinstance(e, WarningEvent) and e.code == "mcp_unavailable")
    assert "'broken'" in warning.message
    assert "no-such-mcp-server-binary" in warning.message
    assert result_of(events).final_text == "ok"
