"""Red team, round 18, on the real Claude Code binary: its own Read opened `docs/n`, a hard link to `~/.netrc` in
the workspace, as a read inside the workspace (allowed unasked); it is asked now
(tests/security/test_red_team_round18.py; the pinned CLI offers no Grep tool in these sessions, so its Grep is
covered by the unit tests only)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import model_bodies, run_claude
from unified.events import PermissionDecision
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PASSWORD = "SECRETPASSWORD123"


async def test_claude_codes_read_through_a_hard_link_to_a_credential_file_is_asked(tmp_path: Path) -> None:
    """SUCCEEDED before: it ran unasked in auto_edit and the password reached the model."""
    home = Path(os.environ["HOME"])
    (home / ".netrc").write_text(f"machine x login u password {PASSWORD}\n")
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "x.md").write_text("docs\n")
    os.link(home / ".netrc", ws / "docs" / "n")
    read = FunctionCall(name="Read", args={"file_path": str(ws / "docs" / "n")}, id="toolu_read")
    turns = [ModelTurn(function_calls=[read]), ModelTurn(text="Done.")]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, ws, approval_mode="auto_edit")
        bodies = model_bodies(server)
    decisions = {e.tool_use_id: e for e in events if isinstance(e, PermissionDecision)}
    assert decisions["toolu_read"].decision == "deny", decisions
    assert "credential file" in str(decisions["toolu_read"].reason)
    assert PASSWORD not in json.dumps(bodies)
    assert PASSWORD not in json.dumps([e.model_dump(mode="json") for e in events])
