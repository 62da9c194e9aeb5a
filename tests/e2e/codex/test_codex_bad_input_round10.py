"""Bad input round 10 for codex, the real binary against FakeOpenAI: a launcher that prints to stdout before the
app-server speaks (a version manager's shim saying which Node it picked, then `exec`ing codex). A byte order mark,
or a progress text ended by a carriage return alone, ran into the answer to initialize: the run waited the 60 s
request timeout, then failed with "did not answer initialize"; now the line is read as a terminal shows it."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from tests.e2e.bad_binaries import BANNERS, SLOW, shim
from tests.e2e.codex.conftest import codex_params, run_codex
from tests.e2e.codex.test_codex_bad_input import codex_started
from tests.hang_guard import HANG_GUARD_S
from unified import execute
from unified._adapters.codex._launch import native_binary
from unified.events import Result, TextDelta, UnifiedEvent, WarningEvent
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


async def test_a_stopped_app_server_is_gone_when_its_cancelled_run_is(workspace: Path) -> None:
    """SIGSTOP at the first text (a debugger, a ^Z to the wrong process group, a frozen cgroup), then the run is
    cancelled: a stopped process takes no SIGTERM, answers no interrupt, and must still be gone when the run is,
    never kept warm in the pool (a pin: this held on the old code too; the cancel took about 9 s, the interrupt's
    5 s grace and SIGTERM's 1 s among them, against 3 s for a process that runs; round 11 skips the interrupt)."""
    started = codex_started()
    async with FakeOpenAI([SLOW]) as server:
        options = {"start_process": started, "pool_size": 1}
        params = codex_params(server, workspace, options=options)
        events: list[UnifiedEvent] = []
        with anyio.fail_after(HANG_GUARD_S), anyio.CancelScope() as scope:
            async with execute(params) as stream:
                async for event in stream:
                    events.append(event)
                    if isinstance(event, TextDelta):
                        os.kill(started.processes[-1][0], signal.SIGSTOP)
                        scope.cancel()
    assert scope.cancelled_caught
    assert started.processes
    assert started.still_running() == []
