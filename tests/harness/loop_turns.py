"""How often the event loop let another task run while some code ran: the tests that say a piece of work
never blocks the loop (it yields between slices) or never yields to it (a fast path) count these turns."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

__all__ = ["LoopTurns", "counting_turns"]


class LoopTurns:
    """The turns a task beside the code under test got: one per pass of the loop it was given."""

    def __init__(self) -> None:
        self.count = 0

    async def _count(self) -> None:
        while True:
            self.count += 1
            await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def counting_turns() -> AsyncIterator[LoopTurns]:
    """Count, from zero, the turns another task gets while the body runs (started, and given its first
    turn, before the body: the count starts at the body's first line)."""
    turns = LoopTurns()
    async with anyio.create_task_group() as tg:
        tg.start_soon(turns._count)
        await anyio.lowlevel.checkpoint()  # the counting task runs once, then waits for its next turn
        turns.count = 0
        yield turns
        tg.cancel_scope.cancel()
