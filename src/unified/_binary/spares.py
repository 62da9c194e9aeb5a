"""Spare agent processes: started ahead, each for the next run of its key, used once.

A binary whose session is fixed on its command line (Claude Code's `--session-id`) cannot serve a
second session, so a run's process cannot be kept warm for the next run as `pool.WarmPool` keeps a
process that hosts many. What can be saved is the binary's own start, most of a cold run's time to
its first output: a spare is a process started ahead with the next run's launch and a session of
its own, waiting on its stdin. The run that takes it owns it and ends it, as it ends a cold one.

- Key: what makes a spare fit a run (the backend builds it with `pool.pool_key`: argv without the
  session, environment, cwd, starter). Not the event loop: a process serves any loop
  (`process.AgentSubprocess`), and a spare holds no loop's lock until a run takes it.
- Bounded: at most `size` spares in all keys; a new one evicts the one that has waited longest
  (unless that one has the same key: an identical spare is not replaced). `size=0`: none.
- Idle TTL: a spare not taken within `idle_ttl` seconds is ended; checked whenever a run takes or
  adds a spare (no timer task). A spare that died is never handed out.
- No spare outlives the pool: `aclose` closes them, `close_now` kills them (interpreter exit).
  What leaves the pool otherwise (evicted, expired, dead) is closed politely by the next
  `replenish`, which a run calls once its own process has its work (the close overlaps that work,
  rather than preceding the run's start); a polite end lets the binary remove what it registered
  at its start.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio

from unified._binary.pool import DEFAULT_IDLE_TTL, Poolable

__all__ = ["SparePool"]

T = TypeVar("T", bound=Poolable)


@dataclass(eq=False, slots=True)
class _Spare(Generic[T]):
    key: str
    resource: T
    started_at: float
    start: object
    """What started it, held while it waits (as `pool._Entry.spawn`: a starter's id in a key is never reused)."""


class SparePool(Generic[T]):
    """See the module docstring."""

    def __init__(self, size: int = 0, idle_ttl: float = DEFAULT_IDLE_TTL, clock: Callable[[], float] = time.monotonic):
        """`clock` says how long a spare has waited (a test's own clock)."""
        self.size = size
        self.idle_ttl = idle_ttl
        self._clock = clock
        self._spares: list[_Spare[T]] = []
        self._leaving: list[T] = []
        """Out of service, not yet closed (the next `replenish` closes them)."""
        self.started = 0
        """Spares started so far (tests and benchmarks read it)."""
        self.taken = 0
        """Spares handed to runs so far."""

    def take(self, key: str) -> T | None:
        """The live spare of `key` that has waited longest, now the caller's to use and end; None if none."""
        self._sort_out()
        spare = next((s for s in self._spares if s.key == key), None)
        if spare is None:
            return None
        self._spares.remove(spare)
        self.taken += 1
        return spare.resource

    async def replenish(self, key: str, start: Callable[[], Awaitable[T]]) -> None:
        """Start a spare for `key` (within the bound), then close what has left the pool.

        Shielded: a cancelled caller neither leaks a started process nor leaves one half set up;
        `start` is meant to be quick (a spawn and a line written), not to wait for the process."""
        with anyio.CancelScope(shield=True):
            self._sort_out()
            if self.size > 0 and self._make_room(key):
                resource = await start()
                self.started += 1
                self._spares.append(_Spare(key, resource, self._clock(), start))
                while len(self._spares) > self.size:  # another run's replenish filled the room meanwhile
                    self._retire(self._spares[0])
            leaving, self._leaving = self._leaving, []
            for resource in leaving:
                await resource.close()

    def _sort_out(self) -> None:
        """Move dead and expired spares out of service."""
        now = self._clock()
        for spare in list(self._spares):
            if not spare.resource.alive or now - spare.started_at > self.idle_ttl:
                self._retire(spare)

    def _make_room(self, key: str) -> bool:
        """Whether a spare of `key` may be added, evicting the longest-waiting spare if the pool is full."""
        while len(self._spares) >= self.size:
            oldest = self._spares[0]  # kept in the order they were started
            if oldest.key == key:
                return False
            self._retire(oldest)
        return True

    def _retire(self, spare: _Spare[T]) -> None:
        self._spares.remove(spare)
        self._leaving.append(spare.resource)

    async def aclose(self) -> None:
        """Close every spare, and what was leaving."""
        resources = [s.resource for s in self._spares] + self._leaving
        self._spares, self._leaving = [], []
        with anyio.CancelScope(shield=True):
            for resource in resources:
                await resource.close()

    def close_now(self) -> None:
        """`aclose` without awaiting, for interpreter exit (kills: there is no loop to wait on)."""
        resources = [s.resource for s in self._spares] + self._leaving
        self._spares, self._leaving = [], []
        for resource in resources:
            resource.kill()

    def spares(self) -> list[T]:
        """The spares waiting to be taken, longest-waiting first."""
        return [s.resource for s in self._spares]

    def pids(self) -> list[int | None]:
        """The process ids of the spares waiting to be taken."""
        return [s.resource.pid for s in self._spares]
