"""A bounded pool of warm agent processes (or connections to them), leased per run.

A cold start of an agent binary takes seconds; a new session in a running one, milliseconds. A
binary that hosts several sessions (ACP, Codex's app-server) serves several runs at once.

- Key: whatever makes two runs interchangeable (the backend builds it with `pool_key`: argv and
  environment) plus the event loop that uses the entry: a process is loop-agnostic, but the locks
  guarding its pipes are per loop, and a run never shares a pipe with another loop's run (two live
  loops in two threads would each take their own lock and read the same pipe at once).
- Adopted across loops: an idle entry (no run holds it) whose loop has finished for good
  (`loops.loop_finished`: an asyncio loop closed, a trio run exited) is taken over by a run of the
  current loop, which then owns it. Code that runs each call in a fresh loop (`execute_sync`, an
  `anyio.run` per task) thus reuses the warm process instead of starting one per call and leaving
  the last one idle. It is safe because nothing of a finished loop can touch the entry again: no
  run of it holds a lease (a run abandoned in a loop that was never closed keeps its lease, and such
  a loop is not finished anyway), and what a process and its connection keep per loop is renewed on
  the new one (`PerLoopLock`; `process._LoopWatch`, dropped from the old asyncio loop). An entry of
  a loop still running (another thread's) is never adopted.
- Threads: one pool serves the loops of every thread (the default pools are process-wide). Picking
  and claiming an entry, giving it back, and taking entries out to end them are decided under one
  thread lock, so two loops never adopt the same entry, nor end one another loop just took; the
  kills and closes happen after it is let go. Each live loop has its own spawn lock.
- Bounded: at most `size` entries stay warm; a run that finds every warm entry busy with another
  key gets a transient one, closed when it ends. `size=0`: every run starts cold.
- At most `max_leases` runs share one entry at a time (1 for a binary with one session each).
- Idle entries are evicted after `idle_ttl` seconds, checked on every lease (no timer task).
- An entry serves at most `max_runs` runs in its life (`DEFAULT_MAX_RUNS`), then retires: a busy pool never
  goes idle, and what a long-lived agent process keeps growing (its sessions in memory, its debug log) is
  bounded by a restart instead of growing for as long as the pool is used. `None`: no bound.
- An entry that died, or that a run `retire()`d (a cancel it could not settle), takes no new runs
  and is closed once its last run leaves, so the others finish undisturbed.
"""

from __future__ import annotations

import atexit
import hashlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import anyio

from unified._binary.loops import current_loop, loop_finished

__all__ = [
    "DEFAULT_IDLE_TTL",
    "DEFAULT_MAX_RUNS",
    "DEFAULT_SIZE",
    "Lease",
    "Poolable",
    "ProcessWide",
    "WarmPool",
    "pool_key",
]

DEFAULT_SIZE = 2
DEFAULT_IDLE_TTL = 300.0
DEFAULT_MAX_RUNS = 200
"""Runs one warm process serves before it is replaced (a restart costs one cold start per 200 runs)."""


class Poolable(Protocol):
    """What the pool needs of what it keeps warm (a `JsonRpcConnection` is one)."""

    @property
    def alive(self) -> bool:
        """Whether it can take another run (its process runs and its pipes are open)."""

    @property
    def pid(self) -> int | None: ...

    async def close(self) -> None: ...

    def kill(self) -> None:
        """End it without awaiting: it may belong to another, finished event loop."""


T = TypeVar("T", bound=Poolable)


def pool_key(argv: Sequence[str], env: Mapping[str, str]) -> str:
    """A digest of what a process was started with (never the environment's values in clear)."""
    material = "\0".join([*argv, "\1", *(f"{k}={v}" for k, v in sorted(env.items()))])
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(eq=False, slots=True)
class _Entry(Generic[T]):
    key: str
    loop: object
    resource: T
    last_used: float
    spawn: object
    """What started it, held while it lives: a key may name a starter by its `repr` (an id), and an id is
    reused only once its object is freed, so no other starter's runs can ever match this entry."""
    transient: bool = False
    active: int = 0
    retired: bool = False
    runs: int = 0
    """Runs it was leased to so far."""

    @property
    def usable(self) -> bool:
        return not self.retired and self.resource.alive


@dataclass(slots=True)
class Lease(Generic[T]):
    """A run's share of a warm (or a fresh) entry."""

    resource: T
    warm: bool
    """Whether an earlier run started it."""
    _entry: _Entry[T]

    @property
    def kept(self) -> bool:
        """Whether it stays warm once its runs leave (else it is closed then): a run on a process that is not
        kept may let it begin to exit as soon as its work is done."""
        return not self._entry.transient and not self._entry.retired

    def retire(self) -> None:
        """Take it out of service: no new run gets it, and it is closed once its last run leaves."""
        self._entry.retired = True


class WarmPool(Generic[T]):
    """See the module docstring."""

    def __init__(
        self,
        size: int = DEFAULT_SIZE,
        idle_ttl: float = DEFAULT_IDLE_TTL,
        max_leases: int = 8,
        clock: Callable[[], float] = time.monotonic,
        max_runs: int | None = DEFAULT_MAX_RUNS,
    ) -> None:
        """`clock` says how long an entry has been idle (a test's own clock)."""
        self.size = size
        self.idle_ttl = idle_ttl
        self.max_leases = max_leases
        self.max_runs = max_runs
        self._clock = clock
        self._entries: list[_Entry[T]] = []
        self._spawn_locks: dict[object, anyio.Lock] = {}
        """One per live loop (`_spawn_lock`): a loop's runs of a key wait for its spawn and then share it."""
        self._claim_lock = threading.Lock()
        """Held while a run picks an entry and claims or releases it, and while the list changes: a pool is shared
        by every thread's loop, and another thread's loop may be looking at the same idle entry to adopt it."""
        self.spawned = 0
        """Entries started so far (tests read it to prove reuse)."""

    @asynccontextmanager
    async def lease(self, key: str, spawn: Callable[[], Awaitable[T]]) -> AsyncIterator[Lease[T]]:
        """An entry for one run: a warm one with the same key if any has room, else a new one from `spawn`."""
        loop = current_loop()
        async with self._spawn_lock(loop):
            with self._claim_lock:
                ended = self._evict()
                entry = self._claim(key, loop)
            self._kill(ended)
            warm = entry is not None
            if entry is None:
                resource = await spawn()
                with self._claim_lock:
                    self.spawned += 1
                    kept, ended = self._make_room()
                    entry = _Entry(key, loop, resource, self._clock(), spawn, transient=not kept)
                    if kept:
                        self._entries.append(entry)
                    self._count_run(entry)
                self._kill(ended)
        try:
            yield Lease(entry.resource, warm, entry)
        finally:
            with self._claim_lock:  # taken out of the list here, so no other thread's `_evict` ends it too
                entry.active -= 1
                entry.last_used = self._clock()
                closing = entry.active == 0 and (entry.transient or not entry.usable)
                if closing and entry in self._entries:
                    self._entries.remove(entry)
            if closing:
                with anyio.CancelScope(shield=True):
                    await entry.resource.close()

    def _spawn_lock(self, loop: object) -> anyio.Lock:
        """The spawn lock of `loop`. Not a `PerLoopLock`, which renews its lock whenever the loop changes, taking
        the change for the end of the old loop: a pool serves the loops of every thread at once, and a lease
        from another thread's loop in the middle of this loop's spawn gave this loop a new lock, so its next
        run of the key spawned again instead of waiting for the first process. Those of finished loops are
        dropped when a new loop comes."""
        with self._claim_lock:
            lock = self._spawn_locks.get(loop)
            if lock is None:
                for old in [other for other in self._spawn_locks if loop_finished(other)]:
                    del self._spawn_locks[old]
                # Taken without a yield when free (the warm case: every run of a loop that spawns nothing), which
                # was a loop iteration per run; a cancelled caller still stops there.
                lock = self._spawn_locks[loop] = anyio.Lock(fast_acquire=True)
            return lock

    def _claim(self, key: str, loop: object) -> _Entry[T] | None:
        """A warm entry of `key` for a run of `loop`, its lease counted: one of this loop with room, else an
        idle one of a finished loop, adopted (see the module docstring). Under `_claim_lock`."""
        same = [e for e in self._entries if e.key == key and e.usable]
        entry = next((e for e in same if e.loop is loop and e.active < self.max_leases), None)
        if entry is None:
            # `active` is read before the loop is asked: a finished loop leases nothing more, so 0 stays 0.
            entry = next((e for e in same if e.active == 0 and e.loop is not loop and loop_finished(e.loop)), None)
            if entry is not None:
                entry.loop = loop
        if entry is not None:
            self._count_run(entry)
        return entry

    def _count_run(self, entry: _Entry[T]) -> None:
        """One more run on `entry`; its last one (`max_runs`) retires it. Under `_claim_lock`."""
        entry.active += 1
        entry.runs += 1
        if self.max_runs is not None and entry.runs >= self.max_runs:
            entry.retired = True

    def _make_room(self) -> tuple[bool, list[_Entry[T]]]:
        """Whether a new entry may stay warm, and the least recently used idle one taken out to make room for it
        (to be killed once `_claim_lock` is let go). Under `_claim_lock`."""
        if self.size <= 0:
            return False, []
        if len(self._entries) < self.size:
            return True, []
        idle = sorted((e for e in self._entries if e.active == 0), key=lambda e: e.last_used)
        if not idle:
            return False, []
        self._entries.remove(idle[0])
        return True, idle[:1]

    def _evict(self) -> list[_Entry[T]]:
        """The idle entries that died or waited beyond the TTL, taken out (to be killed once `_claim_lock` is let
        go: a kill may wait for the process, and other threads' loops wait for the lock). Under `_claim_lock`."""
        now = self._clock()
        ended = [e for e in self._entries if e.active == 0 and (not e.usable or now - e.last_used > self.idle_ttl)]
        self._entries = [e for e in self._entries if e not in ended]
        return ended

    @staticmethod
    def _kill(entries: list[_Entry[T]]) -> None:
        for entry in entries:
            entry.resource.kill()

    async def aclose(self) -> None:
        """End every entry (runs still using one see it close)."""
        with self._claim_lock:
            entries, self._entries = self._entries, []
        with anyio.CancelScope(shield=True):
            for entry in entries:
                await entry.resource.close()

    def close_now(self) -> None:
        """`aclose` without awaiting, for interpreter exit."""
        with self._claim_lock:
            entries, self._entries = self._entries, []
        self._kill(entries)

    def pids(self) -> list[int | None]:
        """The process ids of the entries kept warm."""
        return [e.resource.pid for e in self._entries]


class _SizedPool(Protocol):
    size: int

    def close_now(self) -> None: ...


P = TypeVar("P", bound=_SizedPool)


class ProcessWide(Generic[P]):
    """A backend's default pool: one for the whole interpreter, made on first use (`pool()`), and ended at the
    interpreter's exit (`close_now`: no event loop is left to wait on), so no warm process outlives it."""

    def __init__(self, make: Callable[[], P]) -> None:
        self._make = make
        self._pool: P | None = None

    def __call__(self) -> P:
        if self._pool is None:
            self._pool = self._make()
            atexit.register(self._pool.close_now)
        return self._pool

    def for_run(self, given: P | None, size: int | None, cold: Callable[[], P]) -> P:
        """The pool a run leases from, by its options: `given` (the `pool` option) as it is; else, for a
        `pool_size` of 0, `cold()` (a pool that keeps nothing); else this one, at `size` when given."""
        if given is not None:
            return given
        if size == 0:
            return cold()
        pool = self()
        if size is not None:
            pool.size = size
        return pool
