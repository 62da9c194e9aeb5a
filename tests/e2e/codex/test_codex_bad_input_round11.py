"""Bad input round 11 for codex, the real binary against FakeOpenAI: a run whose app-server is SIGSTOPped (a
debugger, a ^Z to the wrong process group, a frozen cgroup) took about 9 s to cancel, 5 s of it the wait for an
answer to `turn/interrupt` that a stopped process cannot give, 1 s SIGTERM's grace (a stopped process takes no
SIGTERM). A stopped process is seen in /proc (state T) and ended at once: no interrupt is sent, SIGKILL follows
SIGTERM with no grace, and it is gone when the cancelled run is."""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.bad_binaries import SLOW
from tests.e2e.codex.conftest import codex_params
from tests.e2e.codex.test_codex_bad_input import codex_started
from tests.hang_guard import HANG_GUARD_S
from unified import execute
from unified._binary.jsonrpc import Inbox, JsonRpcConnection
from unified._binary.process import TERM_GRACE_S, AgentSubprocess
from unified.events import TextDelta
from unified.testing import FakeOpenAI

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.mark.parametrize("stop", [True, False])
async def test_a_stopped_app_server_is_not_sent_an_interrupt_it_cannot_answer(
    stop: bool, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`stop=False` is the pin that the interrupt is still sent to a process that runs."""
    asked: list[str] = []
    start_request = JsonRpcConnection.start_request

    async def recorded(
        self: JsonRpcConnection, method: str, params: Mapping[str, Any], inbox: Inbox | None = None
    ) -> int:
        asked.append(method)
        return await start_request(self, method, params, inbox)

    monkeypatch.setattr(JsonRpcConnection, "start_request", recorded)
    graces: list[float] = []
    wait = AgentSubprocess.wait

    async def waited(self: AgentSubprocess, grace: float) -> int | None:
        graces.append(grace)
        return await wait(self, grace)

    monkeypatch.setattr(AgentSubprocess, "wait", waited)
    started = codex_started()
    async with FakeOpenAI([SLOW]) as server:
        params = codex_params(server, workspace, options={"start_process": started, "pool_size": 1})
        with anyio.fail_after(HANG_GUARD_S), anyio.CancelScope() as scope:
            async with execute(params) as stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        if stop:
                            pid = started.processes[-1][0]
                            os.kill(pid, signal.SIGSTOP)
                            # The signal is delivered, not yet taken: wait for the stop itself (WNOWAIT: the
                            # report stays, and an exit is never reaped here).
                            await anyio.to_thread.run_sync(os.waitid, os.P_PID, pid, os.WSTOPPED | os.WNOWAIT)
                        scope.cancel()
    assert scope.cancelled_caught
    assert "turn/start" in asked
    assert ("turn/interrupt" in asked) is not stop
    assert (TERM_GRACE_S in graces) is not stop  # SIGKILL at once: a stopped process takes no SIGTERM
    assert started.processes
    assert started.still_running() == []
