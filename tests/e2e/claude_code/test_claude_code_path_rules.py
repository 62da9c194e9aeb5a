"""Red team round 15 on the real claude binary: the caller's path rule (a deny of `secrets/`) holds on what a call
reaches past its path argument: Bash commands under an allow rule that walk `secrets/` (`grep -rn TOP .`) or reach
`secrets/key` through a link (`cat docs/l/key`, `docs/l -> ../secrets`). The pinned CLI offers neither Grep nor Glob
in this setup (it answers "No such tool available" and tells the model to grep through Bash), so its Grep and Glob
are judged by the unit tests of tests/security/test_red_team_round15.py only.

SUCCEEDED before: both commands were allowed by the caller's rule for `cat` and `grep`, and the model read
`TOPSECRET`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import model_bodies, run_claude
from tests.security.test_red_team_round13 import _linked_workspace
from tests.security.test_red_team_round15 import READS
from unified.events import PermissionDecision
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_claude_code_commands_that_walk_or_link_into_a_denied_folder_read_no_secret(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    ws = _linked_workspace(tmp_path / "ws")
    (ws / "docs" / "a.md").write_text("TOP of the docs\n")
    grep = FunctionCall(name="Bash", args={"command": "grep -rn TOP ."}, id="toolu_grep")
    cat = FunctionCall(name="Bash", args={"command": "cat docs/l/key"}, id="toolu_cat")
    turns = [ModelTurn(function_calls=[grep, cat]), ModelTurn(text="Done.")]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, ws, options={"policy": READS})
        bodies = model_bodies(server)
    decisions = {e.tool_use_id: e for e in events if isinstance(e, PermissionDecision)}
    assert (decisions["toolu_grep"].decision, decisions["toolu_grep"].rule) == ("deny", "no-secrets")
    assert (decisions["toolu_cat"].decision, decisions["toolu_cat"].rule) == ("deny", "no-secrets")
    assert not any("TOPSECRET" in body for body in bodies)
