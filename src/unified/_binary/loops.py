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
    """An `anyio.Lock` for the running loop: a new one when the loop changes (the old loop has ended)."""

    __slots__ = ("_lock", "_loop")

    def __init__(self) -> None:
        self._loop: object = None
        self._lock: anyio.Lock | None = None

    def get(self) -> anyio.Lock:
        loop = current_loop()
        if self._lock is None or self._loop is not loop:
            self._lock, self._loop = anyio.Lock(), loop
        return self._lock
