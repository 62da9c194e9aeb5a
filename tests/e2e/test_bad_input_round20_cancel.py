"""Bad input round 20: a caller's cancel the moment the agent binary has started, before the run's first event,
on each binary backend (the real binaries against their fake model servers). The process (and its group) is gone
when `execute` has returned, and no event claimed a session. Pins: later phases (mid tool call, at a permission
prompt) are each backend's own bad-input files'."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.bad_binaries import Started
from tests.hang_guard import HANG_GUARD_S
from unified import execute
from unified._adapters.claude_code._launch import start_claude
from unified._adapters.codex._launch import native_binary, start_codex
from unified._adapters.gemini_cli._launch import start_gemini
from unified._binary.process import AgentSubprocess
from unified.events import UnifiedEvent
from unified.testing import CODEX_MODEL, FakeAnthropic, FakeGemini, FakeOpenAI, ModelTurn
from unified.testing._fake_gemini import CLI_MODEL
from unified.testing._wiring import backend_options_for
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


class CancelAtStart(Started):
    """`Started`, cancelling `scope` once the process runs: the caller's cancel before any event."""

    def __init__(self, start: Any, binary: Path | str, scope: anyio.CancelScope) -> None:
        super().__init__(start, binary)
        self.scope = scope

    def __call__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentSubprocess:
        process = super().__call__(argv, cwd, env)
        self.scope.cancel()
        return process


def _setup(backend: str) -> tuple[AbstractAsyncContextManager[Any], Any, str, str | None, dict[str, object]]:
    """(its fake server, its starter, its binary, its model, extra options)."""
    turn = [ModelTurn(text="never")]
    if backend == "claude-code":
        return FakeAnthropic(turn), start_claude, os.environ["UNIFIED_CLAUDE_BIN"], None, {}
    if backend == "codex":
        binary = str(native_binary(Path(os.environ["UNIFIED_CODEX_BIN"])))
        return FakeOpenAI(turn), start_codex, binary, CODEX_MODEL, {"pool_size": 0}
    return FakeGemini(turn), start_gemini, os.environ["UNIFIED_GEMINI_BIN"], CLI_MODEL, {"pool_size": 0}


@pytest.mark.parametrize("backend", ["claude-code", "codex", "gemini-cli"])
async def test_a_cancel_before_the_first_event_leaves_no_process(tmp_path: Path, backend: str) -> None:
    server_cm, start, binary, model, extra = _setup(backend)
    events: list[UnifiedEvent] = []
    async with server_cm as server:
        with anyio.fail_after(HANG_GUARD_S), anyio.CancelScope() as scope:
            started = CancelAtStart(start, binary, scope)
            options = {**backend_options_for(server, backend), **extra, "start_process": started}
            params = ExecuteParams(prompt="hi", backend=backend, model=model, cwd=tmp_path, backend_options=options)
            async with execute(params) as stream:
                async for event in stream:
                    events.append(event)
        assert server.requests == []
    assert scope.cancelled_caught
    assert len(started.processes) == 1, started.processes
    assert started.still_running() == []
    assert [e.type for e in events if e.type == "session_started"] == []
