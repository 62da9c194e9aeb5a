"""Tool work ends when its call is cancelled, and a FIFO named by the model never hangs a run
(issue 11, finding 3).

The cancellation tests park the worker inside its stop check (a spy around `StopFlag.check`) and
cancel the call from an event: the call must return while the worker is still parked, and the
worker, once let go, must see the stop flag and end.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import anyio.from_thread
import pytest

from tests.e2e.generate_content.gc_harness import Harness, harness, result_of
from tests.e2e.interactions.interactions_harness import MODEL, collect
from unified.events import ToolResult
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import (
    FunctionCall,
    FunctionCallStep,
    InteractionTurn,
    ModelTurn,
    TextStep,
    Usage,
)
from unified.tools import ToolCall, ToolOutcome, ToolRuntime
from unified.tools._safe_io import StopFlag, WorkStopped
from unified.types import ExecuteParams

__all__ = ["harness"]

pytestmark = pytest.mark.anyio

HANG_GUARD_S = 60.0
"""Hang guard only (10x+ what any step here takes); nothing is ordered by time."""


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read_file", {"file_path": "big.txt"}),
        ("search", {"query": "absent"}),
        ("search", {"query": "absent", "path": "big.txt"}),
    ],
)
async def test_a_cancelled_call_returns_and_its_worker_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, object]
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with (ws / "big.txt").open("wb") as f:
        for _ in range(32):
            f.write(b"some text\n" * 26_000)
    reached = anyio.Event()
    release = threading.Event()
    stopped = threading.Event()
    checks = 0
    check = StopFlag.check

    def parked_check(self: StopFlag) -> None:
        nonlocal checks
        checks += 1
        if checks == 2:  # the worker is busy: it has read a chunk and is about to read the next
            anyio.from_thread.run_sync(reached.set)
            release.wait(HANG_GUARD_S)
        try:
            check(self)
        except WorkStopped:
            stopped.set()
            raise

    monkeypatch.setattr(StopFlag, "check", parked_check)
    runtime = ToolRuntime(ws, approval_mode="yolo")
    outcomes: list[list[ToolOutcome]] = []
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            outcomes.append(await runtime.run_batch([ToolCall("c", tool, args)]))

    with anyio.fail_after(HANG_GUARD_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await reached.wait()
            scope.cancel()
    assert scope.cancelled_caught
    assert outcomes == []
    assert not stopped.is_set()  # the call returned while its worker was still parked
    release.set()
    assert await anyio.to_thread.run_sync(stopped.wait, HANG_GUARD_S)


FIFO_CALLS = [
    ("read_file", {"file_path": "pipe"}, "read"),
    ("edit_file", {"file_path": "pipe", "old_string": "a", "new_string": "b"}, "edit"),
    ("write_file", {"file_path": "pipe", "content": "x"}, "write"),
    ("search", {"query": "x", "path": "pipe"}, "search"),
]


def assert_fifo_refused(events: list[object]) -> None:
    """Every call got its refusal as a tool error, and the run still ended with a `result`."""
    results = {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}
    assert sorted(results) == [f"c{i}" for i in range(len(FIFO_CALLS))]
    for i, (_, _, verb) in enumerate(FIFO_CALLS):
        assert results[f"c{i}"].is_error
        assert f"pipe is a FIFO, not a regular file; refusing to {verb} it." in str(results[f"c{i}"].output)


@pytest.mark.e2e
async def test_generate_content_run_with_a_fifo_ends_with_a_result(harness: Harness) -> None:
    os.mkfifo(harness.workspace / "pipe")
    calls = [FunctionCall(name=name, args=args, id=f"c{i}") for i, (name, args, _) in enumerate(FIFO_CALLS)]
    harness.server.add(ModelTurn(function_calls=calls), ModelTurn(text="the pipe is not a file"))
    with anyio.fail_after(HANG_GUARD_S):
        events = await harness.run(approval_mode="yolo")
    assert_fifo_refused(list(events))
    assert result_of(events).status == "success"


@pytest.mark.e2e
async def test_interactions_run_with_a_fifo_ends_with_a_result(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    os.mkfifo(ws / "pipe")
    steps = [FunctionCallStep(name=name, arguments=args, id=f"c{i}") for i, (name, args, _) in enumerate(FIFO_CALLS)]
    with FakeGemini() as fake:
        fake.add(
            InteractionTurn(steps=list(steps), usage=Usage(input_tokens=5, output_tokens=2)),
            InteractionTurn(steps=[TextStep(text="the pipe is not a file")]),
        )
        options: dict[str, object] = {"api_key": "test-key", "base_url": fake.base_url, "poll_interval_s": 0.01}
        params = ExecuteParams(
            prompt="read the pipe",
            backend="interactions",
            model=MODEL,
            cwd=ws,
            approval_mode="yolo",
            backend_options=options,
        )
        with anyio.fail_after(HANG_GUARD_S):
            events = await collect(params)
    assert_fifo_refused(events)
    assert events[-1].type == "result"
    assert events[-1].status == "success"


async def test_a_cancelled_sync_custom_tool_returns_while_it_still_runs(tmp_path: Path) -> None:
    started = anyio.Event()
    release = threading.Event()

    def slow_tool() -> str:
        """Blocks until released."""
        anyio.from_thread.run_sync(started.set)
        release.wait(HANG_GUARD_S)
        return "done"

    runtime = ToolRuntime(tmp_path, approval_mode="yolo")
    runtime.register(slow_tool)
    scope = anyio.CancelScope()
    outcomes: list[list[ToolOutcome]] = []

    async def run() -> None:
        with scope:
            outcomes.append(await runtime.run_batch([ToolCall("c", "slow_tool", {})]))

    try:
        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await started.wait()
                scope.cancel()
        assert scope.cancelled_caught
        assert outcomes == []
        assert not release.is_set()  # the call returned while the function was still blocked
    finally:
        release.set()
