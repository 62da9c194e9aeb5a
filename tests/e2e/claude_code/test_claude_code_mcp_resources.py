"""Claude Code's MCP resource tools (`ListMcpResourcesTool`, `ReadMcpResourceTool`, `ReadMcpResourceDirTool`) are
asked like the MCP tools themselves: the CLI ran them unasked (a read-only tool of its own), so a model could
read what a server's resources hold, and make the server act on a read, where every other MCP call is the
caller's decision (the other backends ask for each; Codex 0.171 cannot, and warns)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import run_claude
from tests.harness import mcp_resource_server
from unified.events import PermissionDecision, Result, UserInputRequest, UserInputResponse
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def _read_resource() -> list[ModelTurn]:
    call = FunctionCall(name="ReadMcpResourceTool", args={"server": "res", "uri": "note://secret"}, id="toolu_read")
    return [ModelTurn(function_calls=[call]), ModelTurn(text="done")]


@pytest.mark.parametrize("allowed", [False, True], ids=["refused", "allowed"])
async def test_a_resource_read_is_the_caller_s_decision(workspace: Path, tmp_path: Path, allowed: bool) -> None:
    marker = tmp_path / "read"
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow() if allowed else UserInputResponse.deny()

    async with FakeAnthropic(_read_resource()) as server:
        events = await run_claude(server, workspace, answer=answer, mcp_servers=(mcp_resource_server.as_stdio(marker),))
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert [r.tool_name for r in asked] == ["ReadMcpResourceTool"]
    decisions = [e for e in events if isinstance(e, PermissionDecision)]
    assert [(d.tool_name, d.decision, d.decided_by) for d in decisions] == [
        ("ReadMcpResourceTool", "allow" if allowed else "deny", "user")
    ]
    assert marker.exists() is allowed  # the server's handler ran only once allowed
