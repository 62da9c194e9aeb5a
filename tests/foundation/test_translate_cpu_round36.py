"""Round 36 of issue 29 (the generate-content translate miss): what a run no longer does per run or per event,
and that the behaviour each cut could have changed is kept (bench/README.md, "The thirty-sixth round
(generate-content translate)")."""

from __future__ import annotations

import sys
from typing import Any

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import ExecuteParams
from unified._execute import EventStream
from unified._internal import stream as stream_module
from unified.backends import RunContext, RunOutcome
from unified.events import AssistantMessage, Result, SessionStarted, TextDelta
from unified.testing._scripted import ScriptedBackend

pytestmark = pytest.mark.anyio

START = SessionStarted(backend="scripted", session_id="sess-1", short_id="sess-1")


def params(**kw: Any) -> ExecuteParams:
    return ExecuteParams(prompt="p", backend="scripted", **kw)


class Deltas(ScriptedBackend):
    """Starts its session and emits `count` text deltas, then returns."""

    def __init__(self, count: int) -> None:
        super().__init__([])
        self.count = count

    async def run(self, ctx: RunContext) -> RunOutcome:
        await ctx.emit(START.model_copy())
        for n in range(self.count):
            await ctx.emit(TextDelta(text=f"{n},"))
        return RunOutcome()


@pytest.fixture
def shields(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Every cancel scope the guard opens, by its `shield` flag (anyio's own scopes are not counted)."""
    opened: list[bool] = []
    real = anyio.CancelScope

    def recording(*args: Any, shield: bool = False, **kwargs: Any) -> anyio.CancelScope:
        opened.append(shield)
        return real(*args, shield=shield, **kwargs)

    monkeypatch.setattr(anyio, "CancelScope", recording)  # as the guard names it: `anyio.CancelScope`
    return opened


async def test_a_run_that_ends_with_room_in_the_buffer_opens_no_shielded_scope(shields: list[bool]) -> None:
    """The run's end is shielded only when it has to wait for room: a run read as it goes (the bench's, most
    runs) no longer pays a cancel scope for its end (about 3 us a run)."""
    async with EventStream(params(), backend=Deltas(3)) as stream:
        events = [event async for event in stream]
    assert isinstance(events[-1], Result)
    assert shields == [False]  # the backend's own scope, which `stop()` cancels


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the host task is reached as asyncio's (`_HOSTS`)
async def test_the_result_arrives_though_the_run_s_task_is_cancelled_while_its_end_waits_for_room(
    shields: list[bool],
) -> None:
    """The buffer is full as the backend returns: its message and `result` wait for room, and the task hosting
    the run is cancelled meanwhile. The wait is shielded, so the consumer still reads every event and the
    `result` (without the shield the cancel ended the run there, with no `result`)."""
    deltas = stream_module._BUFFER - 1  # with the session's start: the buffer is full when the backend returns
    with anyio.fail_after(HANG_GUARD_S):
        stream = EventStream(params(), backend=Deltas(deltas))
        first = await stream.__anext__()  # starts the run in its own task (a bare `async for`)
        await anyio.wait_all_tasks_blocked()  # the run's end waits for room
        (host,) = stream_module._HOSTS
        host.cancel()
        await anyio.wait_all_tasks_blocked()
        rest = [event async for event in stream]
    events = [first, *rest]
    assert [type(e) for e in events[-2:]] == [AssistantMessage, Result]
    assert [e.seq for e in events] == list(range(deltas + 3))
    assert True in shields


def test_a_run_that_names_no_store_does_not_import_the_tool_runtime_s_protections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`_protect_store` reaches `credential_home` only for a run that names a store: its import statement was
    0.7 us of every run's set-up. (A run that names one records its root: tests/security, round 28.)"""
    monkeypatch.setitem(sys.modules, "unified.tools._protected", None)  # an import of it raises ImportError
    stream = EventStream(params(), backend=Deltas(0))
    assert stream.backend == "scripted"
