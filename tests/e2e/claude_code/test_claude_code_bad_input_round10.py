"""Bad input round 10 for claude-code, the real binary against FakeAnthropic: a launcher that prints to stdout before
the CLI speaks stream-json (see tests/e2e/codex/test_codex_bad_input_round10.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.bad_binaries import BANNERS, shim
from tests.e2e.claude_code.claude_code_helpers import Processes, run_claude
from unified.events import Result, TextDelta, WarningEvent
from unified.testing import FakeAnthropic, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def _shimmed(tmp_path: Path, banner: str) -> Path:
    return shim(tmp_path / "bin", "claude", os.path.realpath(os.environ["UNIFIED_CLAUDE_BIN"]), BANNERS[banner])


@pytest.mark.parametrize("banner", list(BANNERS))
async def test_a_launcher_that_prints_before_the_cli_speaks_is_a_warning_and_the_run_goes_on(
    banner: str, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNIFIED_CLAUDE_BIN", str(_shimmed(tmp_path, banner)))
    processes = Processes()
    async with FakeAnthropic([ModelTurn(text="fine")]) as server:
        events = await run_claude(server, workspace, options={"start_process": processes, "pool_size": 0})
    final = events[-1]
    assert isinstance(final, Result)
    assert (final.status, final.error) == ("success", None), [getattr(e, "message", e) for e in events]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "fine"
    assert all(w.code == "malformed_line" for w in events if isinstance(w, WarningEvent))
