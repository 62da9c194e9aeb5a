"""A bounded pool of warm `gemini --acp` processes.

A cold start to the first answer takes about 1.8 s; `session/new` + a prompt in a running process
about 50 ms. One process hosts many ACP sessions, each with its own cwd, mode, model and MCP
servers, so a run leases a process, opens its own session, and gives the process back.

- Key: the argv (binary and flags), a digest of the environment (auth, HOME, ...) and the event
  loop. Processes themselves are loop-agnostic (see transport.py) but the locks guarding their
  pipes belong to the loop that first waited on them.
- Bounded: at most `size` processes stay warm; a run that finds every process busy with another
  key gets a transient process, closed when it ends. `size=0` means every run starts cold.
- Idle processes are evicted after `idle_ttl` seconds, checked on every lease (no timer task).
- A process that died, or that a cancelled run could not settle, is retired: it takes no new
  sessions and is ended once its last run leaves, so other runs in it finish undisturbed.
"""

from __future__ import annotations

import atexit
import hashlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel

from unified._adapters.gemini_cli._transport import AcpConnection

DEFAULT_SIZE = 2
DEFAULT_IDLE_TTL = 300.0
MAX_SESSIONS_PER_PROCESS = 8


def pool_key(argv: Sequence[str], env: Mapping[str, str]) -> str:
    material = "\0".join([*argv, "\1", *(f"{k}={v}" for k, v in sorted(env.items()))])
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(eq=False, slots=True)
class _Entry:
    key: str
    loop: object
    connection: AcpConnection
    transient: bool = False
    active: int = 0
    retired: bool = False
    last_used: float = field(default_factory=time.monotonic)

    @property
    def usable(self) -> bool:
        return not (self.retired or self.connection.closed or self.connection.child.returncode is not None)


@dataclass(slots=True)
class Lease:
    """A run's share of a process. `retire()` when the process must not serve anyone else."""

    connection: AcpConnection
    warm: bool
    _entry: _Entry

    def retire(self) -> None:
        self._entry.retired = True


class AcpPool:
    def __init__(self, size: int = DEFAULT_SIZE, idle_ttl: float = DEFAULT_IDLE_TTL) -> None:
        self.size = size
        self.idle_ttl = idle_ttl
        self._entries: list[_Entry] = []
        self._spawn_lock: anyio.Lock | None = None
        self._spawn_lock_loop: object = None
        self.spawned = 0
        """Processes started so far (tests read it to prove reuse)."""

    def _lock(self, loop: object) -> anyio.Lock:
        if self._spawn_lock is None or self._spawn_lock_loop is not loop:
            self._spawn_lock = anyio.Lock()
            self._spawn_lock_loop = loop
        return self._spawn_lock

    @asynccontextmanager
    async def lease(self, key: str, spawn: Callable[[], Awaitable[AcpConnection]]) -> AsyncIterator[Lease]:
        """A process for one run: a warm one with the same key if any, else a new one."""
        loop = anyio.lowlevel.current_token().native_token
        async with self._lock(loop):
            self._evict()
            entry = next(
                (
                    e
                    for e in self._entries
                    if e.key == key and e.loop is loop and e.usable and e.active < MAX_SESSIONS_PER_PROCESS
                ),
                None,
            )
            warm = entry is not None
            if entry is None:
                connection = await spawn()
                self.spawned += 1
                entry = _Entry(key, loop, connection, transient=not self._make_room())
                if not entry.transient:
                    self._entries.append(entry)
            entry.active += 1
        try:
            yield Lease(entry.connection, warm, entry)
        finally:
            entry.active -= 1
            entry.last_used = time.monotonic()
            if entry.active == 0 and (entry.transient or not entry.usable):
                with anyio.CancelScope(shield=True):
                    await self._close(entry)

    def _make_room(self) -> bool:
        """Whether a new process may stay warm (evicting the least recently used idle one if needed)."""
        if self.size <= 0:
            return False
        if len(self._entries) < self.size:
            return True
        idle = sorted((e for e in self._entries if e.active == 0), key=lambda e: e.last_used)
        if not idle:
            return False
        self._kill(idle[0])
        return True

    def _evict(self) -> None:
        now = time.monotonic()
        for entry in list(self._entries):
            if entry.active == 0 and (not entry.usable or now - entry.last_used > self.idle_ttl):
                self._kill(entry)

    def _kill(self, entry: _Entry) -> None:
        """End an idle process without awaiting (it may belong to another, finished loop)."""
        if entry in self._entries:
            self._entries.remove(entry)
        entry.connection.closed = True
        entry.connection.child.kill_now()

    async def _close(self, entry: _Entry) -> None:
        if entry in self._entries:
            self._entries.remove(entry)
        await entry.connection.close()

    async def aclose(self) -> None:
        """End every process of the pool (runs still using one see it close)."""
        entries, self._entries = self._entries, []
        with anyio.CancelScope(shield=True):
            for entry in entries:
                await entry.connection.close()

    def close_now(self) -> None:
        """Synchronous `aclose` for interpreter exit."""
        for entry in list(self._entries):
            self._kill(entry)

    def pids(self) -> list[int]:
        return [e.connection.child.pid for e in self._entries]


_default_pool: AcpPool | None = None


def default_pool() -> AcpPool:
    """The process-wide pool, ended at interpreter exit."""
    global _default_pool
    if _default_pool is None:
        _default_pool = AcpPool()
        atexit.register(_default_pool.close_now)
    return _default_pool
