"""Bad input round 7 for gemini-cli: a binary that closes its stdout and keeps running. The run ended at once, but
its error said "gemini --acp failed to start (gemini has exited): the gemini process is still running", both at
once; now it says what happened, and the process is gone when the run is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bad_binaries import Started, script_binary, the_error
from tests.e2e.gemini_cli.test_gemini_cli_bad_input import run
from unified._adapters.gemini_cli import _acp
from unified._adapters.gemini_cli._launch import start_gemini
from unified.testing import FakeGemini, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])  # the loop's own pipe reads see the closed stdout
async def test_a_binary_that_closes_its_stdout_and_runs_on_is_told_so_and_stopped(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_acp, "START_EXIT_GRACE_S", 0.05)  # how long the adapter waits for an exit that never comes
    started = Started(start_gemini, script_binary(tmp_path / "bin", "gemini", "0.61.0", "exec >&-\nexec sleep 600\n"))
    async with FakeGemini([ModelTurn(text="never")]) as server:
        events = await run(server, workspace, start_process=started)
    error = the_error(events)
    assert error.code == "backend_error"
    assert error.message.startswith(
        "gemini --acp closed its stdout before it answered initialize, without exiting: "
        "the gemini process is still running"
    ), error.message
    assert "has exited" not in error.message
    assert started.still_running() == []
