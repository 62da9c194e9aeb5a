"""Bad input round 10 for codex, the real binary against FakeOpenAI: a launcher that prints to stdout before the
app-server speaks (a version manager's shim saying which Node it picked, then `exec`ing codex). A byte order mark,
or a progress text ended by a carriage return alone, ran into the answer to initialize: the run waited the 60 s
request timeout, then failed with "did not answer initialize"; now the line is read as a terminal shows it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.bad_binaries import BANNERS, shim
from tests.e2e.codex.conftest import run_codex
from tests.e2e.codex.test_codex_bad_input import codex_started
from unified._adapters.codex._launch import native_binary
from unified.events import Result, TextDelta, WarningEvent
from unified.testing import FakeOpenAI, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.mark.parametrize("banner", list(BANNERS))
async def test_a_launcher_that_prints_before_the_app_server_speaks_is_a_warning_and_the_run_goes_on(
    banner: str, workspace: Path, tmp_path: Path
) -> None:
    real = native_binary(Path(os.environ["UNIFIED_CODEX_BIN"]))
    started = codex_started(shim(tmp_path / "bin", "codex", real, BANNERS[banner]))
    async with FakeOpenAI([ModelTurn(text="fine")]) as server:
        events = await run_codex(server, workspace, options={"start_process": started, "pool_size": 0})
    final = events[-1]
    assert isinstance(final, Result)
    assert (final.status, final.error) == ("success", None), [getattr(e, "message", e) for e in events]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "fine"
    assert all(w.code == "malformed_line" for w in events if isinstance(w, WarningEvent))
    assert started.still_running() == []
