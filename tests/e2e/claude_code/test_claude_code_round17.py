"""Red team, round 17, on the real Claude Code binary: its Write truncates and writes the file in place (Node's
`writeFile`), so a hard link to `.git/config` and the target of a protected link (`.git/hooks/pre-commit ->
../../scripts/hook.sh`) were written unasked in auto_edit; both are asked now
(tests/security/test_red_team_round17.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import run_claude
from tests.security.test_red_team_round17 import _linked_targets
from unified.events import PermissionDecision
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_claude_codes_writes_through_a_hard_link_or_to_a_hook_links_target_are_asked(tmp_path: Path) -> None:
    """SUCCEEDED before: both writes ran unasked in auto_edit, `.git/config` got the model's `core.fsmonitor`. Since
    round 26 the Read of the hard link is asked first."""
    ws = _linked_targets(tmp_path)
    (ws / ".git" / "config").write_text("[core]\n")
    os.link(ws / ".git" / "config", ws / "notes.txt")
    content = "[core]\n\tfsmonitor = sh -c 'touch PWNED'\n"
    config = FunctionCall(name="Write", args={"file_path": str(ws / "notes.txt"), "content": content}, id="toolu_hl")
    hook = FunctionCall(name="Write", args={"file_path": str(ws / "scripts/hook.sh"), "content": "x"}, id="toolu_hook")
    reads = [
        FunctionCall(name="Read", args={"file_path": str(ws / name)}, id=f"toolu_read{n}")
        for n, name in enumerate(("notes.txt", "scripts/hook.sh"))
    ]  # Claude Code writes no existing file it has not read
    turns = [ModelTurn(function_calls=reads), ModelTurn(function_calls=[config, hook]), ModelTurn(text="Done.")]
    async with FakeAnthropic(turns) as server:
        events = await run_claude(server, ws, approval_mode="auto_edit")
    decisions = {e.tool_use_id: e for e in events if isinstance(e, PermissionDecision)}
    assert (decisions["toolu_hook"].decision, decisions["toolu_hook"].rule) == ("deny", "protected-paths")
    # round 26: the Read of the hard link is asked (denied, nobody to ask), so the CLI refuses the Write of a file
    # it has not read, itself; the Write is denied either way
    assert decisions["toolu_read0"].decision == "deny", decisions["toolu_read0"]
    assert "hard links" in str(decisions["toolu_read0"].reason)
    assert decisions["toolu_hl"].decision == "deny", decisions["toolu_hl"]
    assert (ws / ".git" / "config").read_text() == "[core]\n"
    assert (ws / "scripts" / "hook.sh").read_text() == "#!/bin/sh\n"
