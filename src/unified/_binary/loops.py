"""State that belongs to one event loop, for objects that outlive it.

A warm process, its connection and the pool serve runs of successive event loops (each
`anyio.run`, asyncio or trio). An anyio lock belongs to the loop that first used it, so such
objects keep one lock per loop and never carry a primitive from one loop into another.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel

__all__ = ["PerLoopLock", "current_loop"]


def current_loop() -> object:
    """The running event loop itself (the asyncio loop, the trio token): compared by identity."""
    return anyio.lowlevel.current_token().native_token


class PerLoopLock:
    """An `anyio.Lock` for the running loop: a new one when the loop changes (the old loop has ended).

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
