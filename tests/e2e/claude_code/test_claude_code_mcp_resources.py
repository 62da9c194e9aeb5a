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


def _read_resource_twice() -> list[ModelTurn]:
    """The model reads the resource, and once that call is answered, reads it again."""
    turns = [
        ModelTurn(
            function_calls=[
                FunctionCall(
                    name="ReadMcpResourceTool", args={"server": "res", "uri": "note://secret"}, id=f"toolu_read{n}"
                )
            ]
        )
        for n in (1, 2)
    ]
    return [*turns, ModelTurn(text="done")]


async def test_a_resource_read_is_the_caller_s_decision(workspace: Path, tmp_path: Path) -> None:
    """One run, two reads: the first refused (the server's handler has not run when the second is asked), the
    second allowed (it has run by the end)."""
    marker = tmp_path / "read"
    asked: list[UserInputRequest] = []
    read_before_allowed: list[bool] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        if len(asked) == 1:
            return UserInputResponse.deny()
        read_before_allowed.append(marker.exists())
        return UserInputResponse.allow()

    async with FakeAnthropic(_read_resource_twice()) as server:
        events = await run_claude(server, workspace, answer=answer, mcp_servers=(mcp_resource_server.as_stdio(marker),))
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert [r.tool_name for r in asked] == ["ReadMcpResourceTool"] * 2
    decisions = [e for e in events if isinstance(e, PermissionDecision)]
    assert [(d.tool_name, d.decision, d.decided_by) for d in decisions] == [
        ("ReadMcpResourceTool", "deny", "user"),
        ("ReadMcpResourceTool", "allow", "user"),
    ]
    assert read_before_allowed == [False]  # the refused read never reached the server's handler
    assert marker.exists()  # the allowed one did
