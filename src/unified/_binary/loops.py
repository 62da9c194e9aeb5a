"""State that belongs to one event loop, for objects that outlive it.

A warm process, its connection and the pool serve runs of successive event loops (each
`anyio.run`, asyncio or trio). An anyio lock belongs to the loop that first used it, so such
objects keep one lock per loop and never carry a primitive from one loop into another.

Such an object is used by one loop at a time: `loop_finished` says when the loop that last used it
can no longer touch it, so a run of another loop may take it over (`pool.WarmPool`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel

__all__ = ["PerLoopLock", "current_loop", "every", "loop_finished"]


def current_loop() -> object:
    """The running event loop itself (the asyncio loop, the trio token): compared by identity.

    asyncio's own running loop first (`_get_running_loop`: None, not an exception, on trio), anyio's token
    otherwise: the same loop on asyncio (anyio's token holds it), in 0.2 us instead of 1.3 (trio: 1.3 both);
    asked two dozen times a codex run (every line read or written takes a lock of the running loop)."""
    loop = asyncio._get_running_loop()
    return loop if loop is not None else anyio.lowlevel.current_token().native_token


def loop_finished(loop: object) -> bool:
    """Whether the loop `current_loop` gave has ended for good: none of its tasks runs, nor ever will again, so
    nothing of it can touch an object it used (its pipes, its locks). Safe to ask from any thread; cheap (a flag,
    and for trio a lock).

    - asyncio: `is_closed()`. Not "not running": a stopped loop may be run again (`run_until_complete` once
      more) with its tasks still suspended where they were, and its selector may still watch our descriptors.
      A closed loop can never run again (`anyio.run` and `asyncio.run` close theirs at the end, so every
      `execute_sync` and every `anyio.run` call ends with its loop closed). A loop running in another thread
      is not closed (`close()` refuses a running loop).
    - trio: the token's `run_sync_soon` raises `RunFinishedError` once the run has exited (trio sets that
      under the token's lock after every task of the run, the system ones too, has ended; there is no public
      flag to read instead). On a live run it schedules a no-op, `idempotent` so that asking again never
      queues more than one: the run wakes once for nothing, at most.
    - Anything else (a loop we do not know): never finished, so nothing of it is ever taken over."""
    if isinstance(loop, asyncio.AbstractEventLoop):
        return loop.is_closed()
    trio = sys.modules.get("trio")  # a trio token exists only once trio is imported; never import it here
    if trio is not None and isinstance(loop, trio.lowlevel.TrioToken):
        try:
            loop.run_sync_soon(_nothing, idempotent=True)
        except trio.RunFinishedError:
            return True
    return False


def _nothing() -> None:
    """What `loop_finished` schedules on a live trio run (one function, so `idempotent` can merge the calls)."""


class PerLoopLock:
    """An `anyio.Lock` for the running loop: a new one when the loop changes (the old loop has ended: the pool
    hands a process and its connection to another loop only once `loop_finished` says so). Not for an object two
    live loops use at once (the pool itself keeps a lock per live loop).

    `fast=True` makes a lock nobody holds taken without yielding to the loop (anyio's `fast_acquire`; a
    cancelled caller still stops there): for the locks of a process's pipes, taken for every line read
    or written, almost always free, where a yield each time was a loop iteration per message."""

    __slots__ = ("_fast", "_lock", "_loop")

    def __init__(self, *, fast: bool = False) -> None:
        self._fast = fast
        self._loop: object = None
        self._lock: anyio.Lock | None = None

    def get(self) -> anyio.Lock:
        loop = current_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = anyio.Lock(fast_acquire=self._fast), loop
        return self._lock


async def every(interval: float, action: Callable[[], Awaitable[object]], done: anyio.Event) -> None:
    """Await `action` every `interval` seconds until `done` is set, then return: the ticker beside a run (a
    poll of files, a look for processes), which the run ends by setting `done`, not by cancelling it.

    A task cancelled at a run's end leaves a reference cycle: its CancelledError's traceback holds the
    frames of the task, which hold the run (its guard, backend, translator, events), so every run waited
    for the cycle collector instead of being freed as it ended. Set `done` in a `finally`; an exception
    still cancels the ticker with its task group."""
    while not done.is_set():
        with anyio.move_on_after(interval):
            await done.wait()
        if not done.is_set():
            await action()
