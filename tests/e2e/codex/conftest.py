"""The real pinned `codex` binary against FakeOpenAI on 127.0.0.1: fixtures and one way to run it.

Each test has its own HOME and XDG tree (tests/conftest.py), hence its own Codex home
(`<XDG_DATA_HOME>/unified/codex-home`): nothing touches a real `~/.codex`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._execute import EventStream
from unified.events import PermissionDecision, ToolUse, UnifiedEvent
from unified.testing import CODEX_MODEL, FakeOpenAI, FunctionCall, ModelTurn, backend_options_for
from unified.types import ExecuteParams

LOCAL_CODEX = Path(__file__).resolve().parents[3] / ".codex-cli" / "node_modules" / ".bin" / "codex"


@pytest.fixture(autouse=True)
def codex_binary(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The pinned binary (`.ci/install-codex.sh`, which scripts/setup runs)."""
    binary = Path(os.environ.get("UNIFIED_CODEX_BIN") or LOCAL_CODEX)
    if not binary.exists():
        pytest.fail(f"the pinned codex binary is not at {binary}: run .ci/install-codex.sh (scripts/test does)")
    monkeypatch.setenv("UNIFIED_CODEX_BIN", str(binary))
    return binary


@pytest.fixture(params=["asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Each real-binary run costs a process start: asyncio only, unless a test parametrizes
    `anyio_backend` itself to cover trio too (a permission asked and answered, a cancellation that
    leaves no process, the warm pool's reuse and retirement: the paths where the event loop's own I/O
    is what is tested; a plain run on trio is the pool's run on another loop, test_codex_pool.py).
    A run that only drives the binary (a provider down, a resume by another process) is not run twice."""
    return str(request.param)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    return root


def codex_params(server: FakeOpenAI, cwd: Path, prompt: str = "Please do the task.", **fields: Any) -> ExecuteParams:
    options = {**backend_options_for(server, "codex"), **fields.pop("options", {})}
    return ExecuteParams(
        prompt=prompt,
        backend="codex",
        model=fields.pop("model", CODEX_MODEL),
        cwd=cwd,
        backend_options=options,
        **fields,
    )


async def run_codex(
    server: FakeOpenAI, cwd: Path, prompt: str = "Please do the task.", *, strict: bool = True, **fields: Any
) -> list[UnifiedEvent]:
    """One run of the real backend against `server`; strict: a protocol slip by the adapter fails the test."""
    events: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(codex_params(server, cwd, prompt, **fields), strict=strict) as stream:
            async for event in stream:
                events.append(event)
    return events


async def decide_commands(cwd: Path, commands: Sequence[str]) -> dict[str, PermissionDecision]:
    """The model runs each of `commands` (`exec_command`, one turn) in default mode: the decision on each
    command, by its text."""
    calls = [FunctionCall(name="exec_command", args={"cmd": command}) for command in commands]
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, cwd, approval_mode="default")
    issued = {e.tool_use_id: str(e.input.get("cmd")) for e in events if isinstance(e, ToolUse)}
    return {issued[e.tool_use_id]: e for e in events if isinstance(e, PermissionDecision)}


def kinds(events: Sequence[UnifiedEvent]) -> list[str]:
    return [e.type for e in events]
