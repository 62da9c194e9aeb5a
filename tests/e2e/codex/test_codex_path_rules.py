"""Red team round 15 on the real codex binary: commands Codex parses as reads run unasked when unified's parse
agrees, and the caller's path rule (a deny of `secrets/`) read only their text. Now what they reach is judged:
`rg TOP` and `grep -rn TOP .` walk `secrets/`, `cat docs/l/key` reads it through a link (`docs/l -> ../secrets`).

SUCCEEDED before: all three ran unasked (rule `read-only` of the bridge's table) and the model read `TOPSECRET`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from tests.security.test_red_team_round13 import DENY_SECRETS, _linked_workspace
from unified.events import PermissionDecision, ToolUse
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

COMMANDS = ["rg TOP", "grep -rn TOP .", "cat docs/l/key"]


async def test_codex_reads_that_reach_a_denied_folder_are_declined(workspace: Path) -> None:
    ws = _linked_workspace(workspace)
    (ws / "docs" / "a.md").write_text("TOP of the docs\n")
    calls = [FunctionCall(name="exec_command", args={"cmd": command}) for command in [*COMMANDS, "cat docs/a.md"]]
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, ws, approval_mode="default", options={"policy": DENY_SECRETS})
        sent = "".join(str(request.body) for request in server.requests)
    issued = {e.tool_use_id: str(e.input.get("cmd")) for e in events if isinstance(e, ToolUse)}
    decided = {issued[e.tool_use_id]: e for e in events if isinstance(e, PermissionDecision)}
    for command in COMMANDS:
        assert (decided[command].decision, decided[command].rule) == ("deny", "no-secrets"), command
    assert decided["cat docs/a.md"].decision == "allow"
    assert "TOPSECRET" not in sent
    assert "TOP of the docs" in sent
