"""Bad input round 7 for codex: an app-server that closes its stdout and keeps running. The run ended at once,
but its error said the process "exited before it answered initialize (codex app-server has exited) (still
running)", both at once; now it says what happened, and the process is gone when the run is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bad_binaries import script_binary, the_error
from tests.e2e.codex.conftest import run_codex
from tests.e2e.codex.test_codex_bad_input import codex_started
from unified._adapters.codex import _run as codex_run
from unified.testing import FakeOpenAI, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_an_app_server_that_closes_its_stdout_and_runs_on_is_told_so_and_stopped(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(codex_run, "EXIT_GRACE_S", 0.05)  # how long the adapter waits for an exit that never comes
    started = codex_started(script_binary(tmp_path / "bin", "codex", "codex-cli 0.171.0", "exec >&-\nexec sleep 600\n"))
    async with FakeOpenAI([ModelTurn(text="never")]) as server:
        events = await run_codex(server, workspace, options={"start_process": started, "pool_size": 0})
        assert server.requests == []
    error = the_error(events)
    assert error.code == "backend_error"
    assert error.message.startswith(
        "codex app-server closed its stdout before it answered initialize, without exiting (still running)"
    ), error.message
    assert "exited" not in error.message
    assert started.still_running() == []
