"""`excluded_tools` on the real Codex: it cannot stop offering a tool, so every call of an excluded one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from unified.events import PermissionDecision, Result, WarningEvent
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_an_excluded_shell_never_runs_even_in_yolo(workspace: Path, tmp_path: Path) -> None:
    """RAN before: the warning said the bridge decides every call, and in yolo it allowed the excluded shell."""
    marker = tmp_path / "ran"
    shell = FunctionCall(name="exec_command", args={"cmd": f"touch {marker}"})
    async with FakeOpenAI([ModelTurn(function_calls=[shell]), ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace, approval_mode="yolo", excluded_tools=("run_shell_command",))
    assert not marker.exists()
    (decision,) = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "excluded_tools")
    assert decision.reason == "the run's excluded_tools names run_shell_command"
    warning = next(e for e in events if isinstance(e, WarningEvent))
    assert "unified refuses every command, patch or MCP call of an excluded one" in warning.message
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
