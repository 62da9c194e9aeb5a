"""`excluded_tools` on the real Codex: each tool 0.171 has a setting for is not offered; its patch tool (no setting)
is offered and every call of it refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.codex.conftest import run_codex
from unified.events import PermissionDecision, Result, WarningEvent
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

OFFERED = {
    "exec_command",
    "write_stdin",
    "request_user_input",
    "apply_patch",
    "view_image",
    "get_goal",
    "create_goal",
    "update_goal",
    "tool_search",
}
"""What Codex 0.171 offers FakeOpenAI's model by default (measured)."""


def _offered(server: FakeOpenAI) -> set[str]:
    (request,) = server.model_requests()
    return {str(tool.get("name") or tool.get("type")) for tool in request.body["tools"]}


async def _run(workspace: Path, excluded: tuple[str, ...], **fields: Any) -> tuple[set[str], list[object]]:
    async with FakeOpenAI([ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, excluded_tools=excluded, **fields)
        offered = _offered(server)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    return offered, list(events)


async def test_by_default_codex_offers_its_tools(workspace: Path) -> None:
    offered, _ = await _run(workspace, ())
    assert offered == OFFERED


EXCLUDED = [
    ("view_image", {"view_image"}),
    ("request_user_input", {"request_user_input"}),
    ("ask_user", {"request_user_input"}),
    ("run_shell_command", {"exec_command", "write_stdin"}),
    ("exec_command", {"exec_command", "write_stdin"}),
    ("create_goal", {"get_goal", "create_goal", "update_goal"}),
    ("tool_search", {"tool_search"}),
    ("invoke_agent", {"tool_search"}),
]
"""Each tool a run excludes and what Codex then no longer offers."""


async def test_an_excluded_tool_is_not_offered(workspace: Path) -> None:
    """OFFERED before (every one of them): Codex has no flag, the thread's config has a key for each. One run for
    each excluded tool against one server, each run's request asserted on its own: the tools are the thread's,
    so the default pool's warm app-server serves every run (one start, not one a tool)."""
    async with FakeOpenAI([ModelTurn(text="done") for _ in EXCLUDED]) as server:
        for excluded, gone in EXCLUDED:
            before = len(server.model_requests())
            events = await run_codex(server, workspace, excluded_tools=(excluded,))
            (request,) = server.model_requests()[before:]
            offered = {str(tool.get("name") or tool.get("type")) for tool in request.body["tools"]}
            result = events[-1]
            assert isinstance(result, Result)
            assert result.status == "success", (excluded, result.error)
            assert offered == OFFERED - gone, excluded
            assert not [e for e in events if isinstance(e, WarningEvent) and "excluded_tools" in e.message], excluded


async def test_excluded_web_search_is_not_turned_on(workspace: Path) -> None:
    """OFFERED before: the web_search option turned OpenAI's hosted search on whatever the run excluded."""
    offered, _ = await _run(workspace, ("web_search",), options={"web_search": "live"})
    assert "web_search" not in offered
    offered, _ = await _run(workspace, (), options={"web_search": "live"})
    assert "web_search" in offered


async def test_an_excluded_shell_is_not_offered_even_in_yolo(workspace: Path, tmp_path: Path) -> None:
    """RAN before round 17; then offered and refused per call; now not offered: a call of it is Codex's unknown tool."""
    marker = tmp_path / "ran"
    shell = FunctionCall(name="exec_command", args={"cmd": f"touch {marker}"})
    async with FakeOpenAI([ModelTurn(function_calls=[shell]), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, approval_mode="yolo", excluded_tools=("run_shell_command",))
        first = server.model_requests()[0].body
    assert not marker.exists()
    assert "exec_command" not in {tool.get("name") for tool in first["tools"]}
    assert not [e for e in events if isinstance(e, WarningEvent) and "excluded_tools" in e.message]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error


async def test_an_excluded_patch_tool_is_offered_and_every_call_of_it_refused(workspace: Path) -> None:
    """Codex has no setting for apply_patch: it stays offered, the run warns, and the bridge refuses each call."""
    patch = "*** Begin Patch\n*** Add File: made.txt\n+x\n*** End Patch\n"
    call = FunctionCall(name="apply_patch", args={"input": patch})
    async with FakeOpenAI([ModelTurn(function_calls=[call]), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, approval_mode="yolo", excluded_tools=("write_file",))
        offered = {tool.get("name") for tool in server.model_requests()[0].body["tools"]}
    assert "apply_patch" in offered
    assert not (workspace / "made.txt").exists()
    (decision,) = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "excluded_tools")
    (warning,) = [e for e in events if isinstance(e, WarningEvent) and "excluded_tools" in e.message]
    assert "stops offering write_file" in warning.message
