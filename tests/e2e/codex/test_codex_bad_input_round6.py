"""Bad input round 6 for the codex backend, with the real pinned binary against FakeOpenAI: MCP servers that do
not start. Codex 0.171 says why in `mcpServer/startupStatus/updated`'s `failureReason`, in its own words: Rust type
paths (`Transport [codex_rmcp_client::...<rmcp::transport::...>]`), most of it twice. And a run cancelled at a
permission prompt; a rollout with a byte that is no UTF-8."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from tests.e2e.codex.conftest import codex_params, run_codex
from tests.e2e.codex.test_codex_bad_input import rollout
from tests.e2e.gemini_cli.test_gemini_cli_bad_input_round5 import SILENT_AFTER_INITIALIZE
from tests.e2e.gemini_cli.test_gemini_cli_bad_input_round6 import EXITS
from tests.hang_guard import HANG_GUARD_S
from tests.harness.cancelled_prompts import WHEN, cancelling, check_denied
from tests.harness.raw_http import answering
from unified import sessions
from unified._execute import EventStream
from unified.events import Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn
from unified.types import HttpMcpServer, StdioMcpServer

pytestmark = [pytest.mark.anyio]


async def test_an_mcp_server_that_does_not_start_is_said_without_rust_types(workspace: Path, tmp_path: Path) -> None:
    """Was, e.g.: "MCP server 'down' did not start: MCP client for `down` failed to start: MCP startup failed:
    handshaking with MCP server failed: Send message error Transport [codex_rmcp_client::tool_list_changes::
    ToolListChanges<...rmcp::transport::worker::WorkerTransport<...>>] error: Client error: ..." (1,000 characters,
    twice over), and no word of what to do. Now each warning names the server, what happened and what to do; codex's
    own text stays in the event's `native`."""
    (tmp_path / "silent.py").write_text(SILENT_AFTER_INITIALIZE)
    (tmp_path / "quits.py").write_text(EXITS)
    with answering(500, b'{"error": "database down"}') as (base, _):
        servers = (
            HttpMcpServer(name="failing", url=f"{base}/mcp", timeout_s=3),
            HttpMcpServer(name="down", url="http://127.0.0.1:9/mcp", timeout_s=3),
            StdioMcpServer(
                name="silent",
                command=sys.executable,
                args=(str(tmp_path / "silent.py"), str(tmp_path / "pid")),
                timeout_s=2,
            ),
            StdioMcpServer(
                name="quits", command=sys.executable, args=(str(tmp_path / "quits.py"), "after-initialize"), timeout_s=3
            ),
        )
        async with FakeOpenAI([ModelTurn(text="done without them")]) as server:
            events = await run_codex(server, workspace, "hi", mcp_servers=servers, include_native=True)
    said = {e.message.split("'")[1]: e for e in events if isinstance(e, WarningEvent) and e.code == "mcp_unavailable"}
    assert sorted(said) == ["down", "failing", "quits", "silent"]
    expected = {
        "failing": ("answered HTTP 500", "database down", "check the server"),
        "down": ("no connection to http://127.0.0.1:9/mcp", "check that the server is up"),
        "silent": ("did not answer tools/list within 2s", "raise its timeout_s"),
        "quits": ("process ended", "run its command alone"),
    }
    for name, parts in expected.items():
        message = said[name].message
        assert "::" not in message, message
        assert "Transport [" not in message, message
        assert len(message) < 400, message
        for part in parts:
            assert part in message, message
    # codex's own words are kept (an HTTP server is reached through `_resources_relay` outside yolo: its error)
    assert "JSON-RPC error" in str(said["down"].native)
    last = events[-1]
    assert isinstance(last, Result)
    assert last.status == "success"


@pytest.mark.parametrize("when", WHEN)
async def test_a_run_cancelled_at_a_permission_prompt_denies_the_call(workspace: Path, when: str) -> None:
    """Was: no `permission_decision` for the call when the answer never came (docs/protocol.md: one per call),
    and `allow` by the user for an answer that came after the cancel, though the call never ran. Now one `deny`,
    the user's (who stopped the run)."""
    answer, streams = cancelling(when)
    call = FunctionCall(name="exec_command", args={"cmd": f"touch {workspace / 'ran'}"})
    events: list[UnifiedEvent] = []
    async with FakeOpenAI([ModelTurn(function_calls=[call]), ModelTurn(text="never")]) as server:
        params = codex_params(server, workspace, "hi", approval_mode="default", on_user_input=answer)
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params, strict=True) as stream:
                streams.append(stream)
                events.extend([event async for event in stream])
    check_denied(events, (workspace / "ran").exists())


async def test_an_answer_with_a_byte_that_is_no_utf8_stays_in_the_export(workspace: Path) -> None:
    """Was: the rollout line of the model's answer, one byte of it no UTF-8, was skipped as unreadable, so the
    exported conversation (and a failover from it) lost the answer, which Codex itself still reads. Now the line is
    read as Codex reads it, the byte as U+FFFD."""
    async with FakeOpenAI([ModelTurn(text="First answer here.")]) as server:
        thread = next(e for e in await run_codex(server, workspace, "One.") if isinstance(e, SessionStarted))
    assert thread.short_id is not None
    path = rollout(thread.session_id)
    data = path.read_bytes()
    path.write_bytes(data.replace(b"First answer", b"\xffFirst answer"))
    exported = await sessions.export(thread.short_id)
    texts = [[getattr(part, "text", None) for part in turn.parts] for turn in exported.turns]
    assert texts == [["One."], ["\ufffdFirst answer here."]]
