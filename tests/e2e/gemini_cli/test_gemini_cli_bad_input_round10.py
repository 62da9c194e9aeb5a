"""Bad input round 10 for gemini-cli, the real binary against FakeGemini: a launcher that prints to stdout before
the CLI speaks ACP (see tests/e2e/codex/test_codex_bad_input_round10.py)."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from tests.e2e.bad_binaries import BANNERS, Started, shim
from tests.e2e.gemini_cli.test_gemini_cli_bad_input import params
from tests.hang_guard import HANG_GUARD_S
from unified import execute
from unified._adapters.gemini_cli._launch import start_gemini
from unified.events import Result, TextDelta, WarningEvent
from unified.testing import FakeGemini, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def _shimmed(tmp_path: Path, banner: str) -> Started:
    real = os.path.realpath(os.environ["UNIFIED_GEMINI_BIN"])
    return Started(start_gemini, shim(tmp_path / "bin", "gemini", real, BANNERS[banner]))


@pytest.mark.parametrize("banner", list(BANNERS))
async def test_a_launcher_that_prints_before_the_cli_speaks_is_a_warning_and_the_run_goes_on(
    banner: str, workspace: Path, tmp_path: Path
) -> None:
    started = _shimmed(tmp_path, banner)
    async with FakeGemini([ModelTurn(text="fine")]) as server:
        run = params(server, workspace, start_process=started, pool_size=0)
        with anyio.fail_after(HANG_GUARD_S):
            async with execute(run) as stream:
                events = [event async for event in stream]
    final = events[-1]
    assert isinstance(final, Result)
    assert (final.status, final.error) == ("success", None), [getattr(e, "message", e) for e in events]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "fine"
    assert all(w.code == "malformed_line" for w in events if isinstance(w, WarningEvent))
    assert started.still_running() == []
