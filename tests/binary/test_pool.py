"""The warm pool: reuse by key, a bound, an idle TTL, retirement, and nothing left running."""

from __future__ import annotations

import asyncio
import gc
import itertools
import threading
import weakref
from collections.abc import Awaitable, Callable

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.harness.pool_parts import FakeResource, ManualClock
from unified._binary.pool import Lease, ProcessWide, WarmPool, pool_key

pytestmark = pytest.mark.anyio


class Spawner:
    def __init__(self) -> None:
        self.made: list[FakeResource] = []

    async def __call__(self) -> FakeResource:
        self.made.append(FakeResource())
        return self.made[-1]


async def test_a_warm_entry_serves_the_next_run_of_the_same_key() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()
    async with pool.lease("k", spawn) as first:
        assert not first.warm
    async with pool.lease("k", spawn) as second:
        assert second.warm
        assert second.resource is first.resource
    async with pool.lease("other", spawn) as third:
        assert third.resource is not first.resource
    assert (pool.spawned, len(spawn.made)) == (2, 2)
    assert sorted(p for p in pool.pids() if p is not None) == sorted(r.pid for r in spawn.made)
    await pool.aclose()
    assert all(r.closed for r in spawn.made)
    assert pool.pids() == []


async def test_size_zero_starts_cold_and_ends_each_entry_with_its_run() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=0)
    spawn = Spawner()
    for _ in range(2):
        async with pool.lease("k", spawn) as lease:
            assert not lease.resource.ended
    assert [r.closed for r in spawn.made] == [True, True]
    assert pool.pids() == []


async def test_a_lease_says_whether_its_entry_stays_warm_after_the_run() -> None:
    spawn = Spawner()
    cold: WarmPool[FakeResource] = WarmPool(size=0)
    async with cold.lease("k", spawn) as lease:
        assert not lease.kept
    pool: WarmPool[FakeResource] = WarmPool(size=1)
    async with pool.lease("k", spawn) as lease:
        assert lease.kept
        async with pool.lease("other", spawn) as transient:  # the one warm slot is busy
            assert not transient.kept
        lease.retire()
        assert not lease.kept
    await pool.aclose()


async def test_beyond_the_bound_the_least_recently_used_idle_entry_goes() -> None:
    clock = ManualClock()
    pool: WarmPool[FakeResource] = WarmPool(size=1, clock=clock)
    spawn = Spawner()
    async with pool.lease("a", spawn):
        pass
    clock.now = 1
    async with pool.lease("b", spawn):
        pass
    old, new = spawn.made
    assert (old.killed, new.ended) == (True, False)
    assert pool.pids() == [new.pid]
    await pool.aclose()


async def test_every_entry_busy_gives_a_transient_one() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=1)
    spawn = Spawner()
    async with pool.lease("a", spawn) as busy:
        async with pool.lease("b", spawn) as transient:
            assert transient.resource is not busy.resource
        assert transient.resource.closed  # it never joined the pool
        assert not busy.resource.ended
    assert pool.pids() == [busy.resource.pid]
    await pool.aclose()


async def test_runs_share_an_entry_up_to_max_leases() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=2, max_leases=2)
    spawn = Spawner()
    async with pool.lease("k", spawn) as a, pool.lease("k", spawn) as b, pool.lease("k", spawn) as c:
        assert a.resource is b.resource
        assert c.resource is not a.resource
    assert len(spawn.made) == 2
    await pool.aclose()


async def test_idle_entries_are_evicted_after_the_ttl() -> None:
    clock = ManualClock()
    pool: WarmPool[FakeResource] = WarmPool(size=2, idle_ttl=300, clock=clock)
    spawn = Spawner()
    async with pool.lease("k", spawn):
        pass
    clock.now = 299
    async with pool.lease("k", spawn) as again:
        assert again.warm
    clock.now = 299 + 301
    async with pool.lease("k", spawn) as fresh:
        assert not fresh.warm
    assert spawn.made[0].killed
    await pool.aclose()


async def test_a_retired_entry_closes_when_its_last_run_leaves_and_serves_no_one_new() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()
    async with pool.lease("k", spawn) as first:
        async with pool.lease("k", spawn) as second:
            assert second.resource is first.resource
            second.retire()
        assert not first.resource.ended  # the other run finishes undisturbed
        async with pool.lease("k", spawn) as third:
            assert third.resource is not first.resource
    assert first.resource.closed
    await pool.aclose()


async def test_a_dead_entry_is_replaced() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()
    async with pool.lease("k", spawn) as first:
        pass
    first.resource.alive = False  # its process died while idle
    async with pool.lease("k", spawn) as second:
        assert second.resource is not first.resource
    await pool.aclose()


async def test_close_now_kills_without_awaiting() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()
    async with pool.lease("k", spawn):
        pass
    pool.close_now()
    assert spawn.made[0].killed
    assert pool.pids() == []


def one_run(
    pool: WarmPool[FakeResource], spawn: Spawner, leases: list[Lease[FakeResource]], key: str = "k"
) -> Callable[[], Awaitable[None]]:
    """A run that leases an entry of `key` and gives it back at once, noting its lease."""

    async def run() -> None:
        async with pool.lease(key, spawn) as lease:
            leases.append(lease)

    return run


@pytest.mark.parametrize(("first", "second"), list(itertools.product(["asyncio", "trio"], repeat=2)))
def test_an_idle_entry_of_a_finished_loop_is_adopted_by_the_next_loop(first: str, second: str) -> None:
    """Each `anyio.run` (each `execute_sync`) is a new loop: the next one takes over the entry the last one left."""
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()
    leases: list[Lease[FakeResource]] = []
    anyio.run(one_run(pool, spawn, leases), backend=first)
    anyio.run(one_run(pool, spawn, leases), backend=second)
    assert pool.spawned == 1
    assert [lease.warm for lease in leases] == [False, True]
    assert leases[1].resource is leases[0].resource
    assert not leases[0].resource.ended
    anyio.run(one_run(pool, spawn, leases), backend=second)  # and the adopting loop now owns it as its own
    assert (pool.spawned, leases[2].resource) == (1, leases[0].resource)
    pool.close_now()


@pytest.mark.parametrize("holder", ["asyncio", "trio"])
@pytest.mark.parametrize("taker", ["asyncio", "trio"])
def test_an_idle_entry_of_a_loop_running_in_another_thread_is_not_adopted(holder: str, taker: str) -> None:
    """Another thread's loop is alive and may lease its entry again at any moment: a run of this thread's loop
    starts its own. Once that loop has finished, its entry is adopted."""
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()
    leases: list[Lease[FakeResource]] = []
    idle, release = threading.Event(), threading.Event()

    async def hold_the_loop_open() -> None:
        await one_run(pool, spawn, leases)()
        idle.set()  # its entry is idle; the loop goes on
        await anyio.to_thread.run_sync(release.wait, HANG_GUARD_S)

    thread = threading.Thread(target=anyio.run, args=(hold_the_loop_open,), kwargs={"backend": holder})
    thread.start()
    try:
        assert idle.wait(HANG_GUARD_S)
        anyio.run(one_run(pool, spawn, leases), backend=taker)
        assert pool.spawned == 2
        assert leases[1].resource is not leases[0].resource
        assert not leases[0].resource.ended, "left to its own loop"
    finally:
        release.set()
        thread.join(HANG_GUARD_S)
    assert not thread.is_alive()
    anyio.run(one_run(pool, spawn, leases), backend=taker)  # both loops have finished: their entries are free
    assert (pool.spawned, leases[2].warm) == (2, True)
    pool.close_now()


def test_a_stopped_asyncio_loop_keeps_its_entry_until_it_is_closed() -> None:
    """A stopped loop may run again (its tasks resume where they were): only a closed one has finished."""
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()
    leases: list[Lease[FakeResource]] = []
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(one_run(pool, spawn, leases)())
        assert not loop.is_running()
        anyio.run(one_run(pool, spawn, leases))
        assert pool.spawned == 2, "the stopped loop's entry was adopted"
    finally:
        loop.close()
    anyio.run(one_run(pool, spawn, leases))
    anyio.run(one_run(pool, spawn, leases))
    assert pool.spawned == 2
    pool.close_now()


def test_an_entry_with_an_active_lease_is_never_adopted() -> None:
    """A run abandoned in a loop closed under it (no `shutdown_asyncgens`, its task never finished) still holds its
    lease: however finished its loop, the entry is not idle, so another loop's run starts its own."""
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()
    leases: list[Lease[FakeResource]] = []
    held = pool.lease("k", spawn)
    loop = asyncio.new_event_loop()
    try:
        abandoned = loop.run_until_complete(held.__aenter__())
    finally:
        loop.close()
    anyio.run(one_run(pool, spawn, leases))
    anyio.run(one_run(pool, spawn, leases), backend="trio")
    assert pool.spawned == 2
    assert [lease.resource for lease in leases] == [spawn.made[1]] * 2
    assert abandoned.resource is spawn.made[0]
    assert not abandoned.resource.ended
    anyio.run(held.__aexit__, None, None, None)  # the abandoned run ends after all (its generator is done)
    pool.close_now()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_loops_runs_wait_for_its_spawn_while_another_threads_loop_uses_the_pool(backend: str) -> None:
    """The pool is shared by every thread's loop: a lease from another thread's loop, in the middle of this loop's
    spawn, must not give this loop a new spawn lock, or its next run of the key spawns again instead of waiting
    for the first process and sharing it."""
    pool: WarmPool[FakeResource] = WarmPool(size=2, max_leases=2)
    spawning, go = threading.Event(), threading.Event()
    made: list[FakeResource] = []
    leases: list[Lease[FakeResource]] = []

    async def slow_spawn() -> FakeResource:
        spawning.set()
        await anyio.to_thread.run_sync(go.wait, HANG_GUARD_S)
        made.append(FakeResource())
        return made[-1]

    async def run_k(both: anyio.Event, holding: anyio.Event) -> None:
        async with pool.lease("k", slow_spawn) as lease:
            leases.append(lease)
            if len(leases) == 2:
                both.set()
            await holding.wait()

    async def main() -> None:
        both, holding = anyio.Event(), anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(run_k, both, holding)
            await anyio.to_thread.run_sync(spawning.wait, HANG_GUARD_S)
            other = one_run(pool, Spawner(), [], key="other")
            await anyio.to_thread.run_sync(lambda: anyio.run(other, backend=backend))  # another thread's loop
            tg.start_soon(run_k, both, holding)
            await anyio.wait_all_tasks_blocked()  # both runs wait: the first on its spawn, the second on the first
            go.set()
            await both.wait()
            holding.set()

    anyio.run(main, backend=backend)
    assert len(made) == 1, "the second run spawned its own"
    assert leases[0].resource is leases[1].resource
    pool.close_now()


def test_the_key_is_a_digest_of_argv_and_environment() -> None:
    key = pool_key(["gemini", "--acp"], {"GEMINI_API_KEY": "secret-value"})
    assert "secret-value" not in key
    assert key == pool_key(["gemini", "--acp"], {"GEMINI_API_KEY": "secret-value"})
    assert key != pool_key(["gemini", "--acp"], {"GEMINI_API_KEY": "other"})


async def test_a_warm_entry_holds_what_started_it_while_it_lives() -> None:
    """A key may name a starter by its `repr` (an id, as the backends' keys do): while the entry lives the starter
    is never freed, so its id cannot come back as another starter's and match the entry."""
    pool: WarmPool[FakeResource] = WarmPool(size=1)
    spawn = Spawner()
    freed = weakref.ref(spawn)
    async with pool.lease(repr(spawn), spawn) as lease:
        assert not lease.warm
    del spawn, lease
    gc.collect()
    assert freed() is not None, "held by the warm entry"
    await pool.aclose()
    gc.collect()
    assert freed() is None, "let go with the entry"


def test_a_run_takes_the_given_pool_or_a_cold_one_or_the_process_wide_one_at_its_size() -> None:
    made: list[WarmPool[FakeResource]] = []

    def make() -> WarmPool[FakeResource]:
        made.append(WarmPool(size=2))
        return made[-1]

    default = ProcessWide(make)
    given: WarmPool[FakeResource] = WarmPool(size=5)
    cold: WarmPool[FakeResource] = WarmPool(size=0)
    assert default.for_run(given, 3, lambda: cold) is given
    assert given.size == 5, "a given pool keeps its own size"
    assert default.for_run(None, 0, lambda: cold) is cold
    assert made == [], "no process-wide pool for a run that keeps nothing warm"
    pool = default.for_run(None, None, lambda: cold)
    assert pool is made[0]
    assert pool.size == 2
    assert default.for_run(None, 4, lambda: cold) is pool
    assert pool.size == 4
    pool.close_now()


async def test_an_entry_retires_after_max_runs_and_its_successor_is_warm_again() -> None:
    """A busy pool never idles: without a bound, one process served every run for as long as the pool was used,
    its sessions and debug log growing with them. Its `max_runs`th run retires it; the run after starts anew."""
    pool: WarmPool[FakeResource] = WarmPool(size=2, max_runs=3)
    spawn = Spawner()
    async with pool.lease("k", spawn) as first:
        async with pool.lease("k", spawn) as second:
            assert second.resource is first.resource
        async with pool.lease("k", spawn) as third:  # its third run: the last it takes
            assert third.resource is first.resource
            assert not third.kept
            async with pool.lease("k", spawn) as fourth:
                assert fourth.resource is not first.resource
        assert not first.resource.ended  # the runs still on it finish undisturbed
    assert first.resource.closed
    async with pool.lease("k", spawn) as fifth:
        assert fifth.warm
        assert fifth.resource is spawn.made[1]
    assert pool.spawned == 2
    await pool.aclose()


async def test_without_max_runs_an_entry_serves_every_run() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=1, max_runs=None)
    spawn = Spawner()
    for _ in range(300):
        async with pool.lease("k", spawn):
            pass
    assert pool.spawned == 1
    await pool.aclose()
