"""An MCP server's tools and resources on the real Codex 0.171: an excluded tool named exactly is its server's
`disabled_tools` (not offered, a call of it unknown to Codex); a pattern is refused per call; the resource tools
Codex runs unasked reach no stdio server outside yolo (`_resources_relay`), since no setting stops them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.codex.conftest import run_codex
from tests.e2e.conformance import mcp_echo_server
from tests.harness import mcp_resource_server
from unified.events import (
    PermissionDecision,
    Result,
    ToolResult,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
)
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn
from unified.types import HttpMcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def _run(
    workspace: Path, marker: Path, calls: list[FunctionCall], **fields: Any
) -> tuple[list[UnifiedEvent], dict[str, str]]:
    """The run's events, and what Codex sent the model back for each call (by call id)."""
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, mcp_servers=(mcp_resource_server.as_stdio(marker),), **fields)
        second = server.model_requests()[1].body["input"]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    outputs = {str(i["call_id"]): str(i["output"]) for i in second if i.get("type") == "function_call_output"}
    return events, outputs


def _warnings(events: list[UnifiedEvent], about: str) -> list[WarningEvent]:
    return [e for e in events if isinstance(e, WarningEvent) and about in e.message]


def _mcp_call(tool: str) -> FunctionCall:
    return FunctionCall(name=f"mcp__res__{tool}", args={"text": "x"}, id=f"call_{tool}")


async def test_an_mcp_tool_excluded_by_name_is_not_offered(workspace: Path, tmp_path: Path) -> None:
    """Before: offered, and its call refused by the approval bridge, with an `excluded_tools` warning. Now the
    server's `disabled_tools`: Codex knows no such tool, the other one runs."""
    calls = [_mcp_call("peek"), _mcp_call("poke")]
    events, outputs = await _run(
        workspace, tmp_path / "read", calls, approval_mode="yolo", excluded_tools=("mcp__res__peek",)
    )
    assert "unsupported call" in outputs["call_peek"]
    assert "poked: x" in outputs["call_poke"]
    assert [e.tool_name for e in events if isinstance(e, PermissionDecision)] == ["mcp__res__poke"]
    assert not _warnings(events, "excluded_tools")


async def test_an_mcp_tool_excluded_by_a_pattern_is_refused_per_call(workspace: Path, tmp_path: Path) -> None:
    calls = [_mcp_call("peek"), _mcp_call("poke")]
    events, outputs = await _run(
        workspace, tmp_path / "read", calls, approval_mode="yolo", excluded_tools=("mcp__res__pe*",)
    )
    decisions = {e.tool_name: e for e in events if isinstance(e, PermissionDecision)}
    assert (decisions["mcp__res__peek"].decision, decisions["mcp__res__peek"].rule) == ("deny", "excluded_tools")
    assert decisions["mcp__res__poke"].decision == "allow"
    assert "peeked" not in outputs["call_peek"]
    (warning,) = _warnings(events, "excluded_tools")
    assert "mcp__res__pe*" in warning.message


async def test_a_stdio_server_s_resources_are_off_outside_yolo(workspace: Path, tmp_path: Path) -> None:
    """Codex reads a resource without asking anyone (no setting stops it): before, the server's handler ran in default
    mode and a warning said so. Now the server runs behind `_resources_relay` outside yolo: the read reaches no server,
    the model reads why, and its tools still work. In yolo, which allows every call, the resource is read as before."""
    marker = tmp_path / "read"
    read = FunctionCall(name="read_mcp_resource", args={"server": "res", "uri": "note://secret"}, id="call_read")

    async def allow(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.allow()

    calls = [read, _mcp_call("poke")]
    events, outputs = await _run(workspace, marker, calls, approval_mode="default", on_user_input=allow)
    assert not marker.exists()
    assert "the secret note" not in outputs["call_read"]
    assert "poked: x" in outputs["call_poke"]
    assert not [e for e in events if isinstance(e, WarningEvent) and e.code == "unsupported_option"]
    events, outputs = await _run(workspace, tmp_path / "again", [read], approval_mode="yolo")
    assert (tmp_path / "again").exists()
    assert json.loads(outputs["call_read"])["contents"][0]["text"] == "the secret note"
    assert [e.tool_use_id for e in events if isinstance(e, ToolResult)] == ["call_read"]


async def test_an_http_server_s_resources_are_off_outside_yolo(workspace: Path) -> None:
    """Before: an HTTP server's resource was read unasked (its handler ran) and a warning said so. Now it runs behind
    `_resources_relay` too (`--http`, its URL and headers in the relay's environment alone): the read reaches no
    server, a tool call through it works, the bearer token reaches the server and neither the model nor the events."""
    token = "Bearer relay-secret-0c5f"
    read = FunctionCall(name="read_mcp_resource", args={"server": "res", "uri": "note://secret"}, id="call_read")

    async def allow(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.allow()

    with mcp_echo_server.serving("http", mcp_resource_server.server) as url:
        reads, heard = len(mcp_resource_server.reads), len(mcp_echo_server.headers)
        res = HttpMcpServer(name="res", url=url, headers={"Authorization": token}, timeout_s=20)
        async with FakeOpenAI([ModelTurn(function_calls=[read, _mcp_call("poke")]), ModelTurn(text="done")]) as fake:
            events = await run_codex(fake, workspace, mcp_servers=(res,), approval_mode="default", on_user_input=allow)
            requests = json.dumps([request.body for request in fake.model_requests()])
            second = fake.model_requests()[1].body["input"]
        read_now = mcp_resource_server.reads[reads:]
        sent = mcp_echo_server.headers[heard:]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert read_now == []
    outputs = {str(i["call_id"]): str(i["output"]) for i in second if i.get("type") == "function_call_output"}
    assert "the secret note" not in outputs["call_read"]
    assert "poked: x" in outputs["call_poke"]
    assert sent
    assert {h.get("authorization") for h in sent} == {token}
    assert "relay-secret-0c5f" not in requests
    assert not [e for e in events if "relay-secret-0c5f" in e.model_dump_json()]
    assert not [e for e in events if isinstance(e, WarningEvent) and e.code == "unsupported_option"]
