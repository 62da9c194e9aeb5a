"""Red team, round 17, on the real Codex binary: its apply_patch writes each file in place, so the target of a
protected link (a dangling `.git/hooks/pre-push -> ../../scripts/not-yet.sh`, alive once written) was written
unasked in auto_edit; it is asked now (tests/security/test_red_team_round17.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from tests.security.test_red_team_round17 import _linked_targets
from unified.events import PermissionDecision
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_codex_patch_that_brings_a_dangling_hook_link_alive_is_asked(tmp_path: Path) -> None:
    """SUCCEEDED before: the patch added `scripts/not-yet.sh` unasked in auto_edit; the next `git push` ran it."""
    ws = _linked_targets(tmp_path)
    write = FunctionCall(name="write_file", args={"file_path": "scripts/not-yet.sh", "content": "touch PWNED\n"})
    async with FakeOpenAI([ModelTurn(function_calls=[write]), ModelTurn(text="Done.")]) as server:
        events = await run_codex(server, ws, approval_mode="auto_edit")
    (decision,) = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.decision, decision.rule) == ("deny", "protected-paths"), decision
    assert not (ws / "scripts" / "not-yet.sh").exists()
