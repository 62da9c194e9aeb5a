"""Spare processes: taken once by key, bounded, an idle TTL, dead ones never handed out, none outliving the pool."""

from __future__ import annotations

import gc
import weakref

import anyio
import anyio.lowlevel
import pytest

from tests.harness.pool_parts import FakeResource, ManualClock
from unified._binary.spares import SparePool

pytestmark = pytest.mark.anyio


class Starter:
    """Starts resources, remembering each (what a backend's spawn of a spare would be)."""

    def __init__(self) -> None:
        self.made: list[FakeResource] = []

    def of(self, key: str) -> FakeResource:
        return next(r for r in self.made if r.key == key)

    async def start(self, key: str, pool: SparePool[FakeResource]) -> None:
        async def spawn() -> FakeResource:
            self.made.append(FakeResource(key))
            return self.made[-1]

        await pool.replenish(key, spawn)


async def test_a_spare_is_taken_once_by_its_own_key() -> None:
    pool: SparePool[FakeResource] = SparePool(size=2)
    starter = Starter()
    assert pool.take("a") is None
    await starter.start("a", pool)
    assert pool.take("b") is None
    spare = pool.take("a")
    assert spare is starter.of("a")
    assert not spare.closed, "a taken spare is its run's to end"
    assert pool.take("a") is None, "a spare serves one run"
    assert (pool.started, pool.taken, pool.pids()) == (1, 1, [])


async def test_size_zero_starts_nothing() -> None:
    pool: SparePool[FakeResource] = SparePool(size=0)
    starter = Starter()
    await starter.start("a", pool)
    assert (starter.made, pool.started, pool.take("a")) == ([], 0, None)


async def test_beyond_the_bound_the_spare_that_waited_longest_is_closed() -> None:
    pool: SparePool[FakeResource] = SparePool(size=2)
    starter = Starter()
    for key in ("a", "b", "c"):
        await starter.start(key, pool)
    a, b, c = (starter.of(k) for k in "abc")
    assert a.closed, "evicted, and closed politely by the replenish that evicted it"
    assert not b.closed
    assert not c.closed
    assert pool.pids() == [b.pid, c.pid]
    assert pool.take("a") is None


async def test_a_full_pool_does_not_replace_a_spare_by_an_identical_one() -> None:
    pool: SparePool[FakeResource] = SparePool(size=1)
    starter = Starter()
    await starter.start("a", pool)
    await starter.start("a", pool)
    assert len(starter.made) == 1
    assert pool.spares() == starter.made
    await starter.start("b", pool)
    assert pool.spares() == [starter.of("b")]
    assert starter.of("a").closed


async def test_a_smaller_size_evicts_down_to_it() -> None:
    pool: SparePool[FakeResource] = SparePool(size=3)
    starter = Starter()
    for key in ("a", "b", "c"):
        await starter.start(key, pool)
    pool.size = 1
    await starter.start("d", pool)
    assert pool.spares() == [starter.of("d")]
    assert [r.closed for r in starter.made] == [True, True, True, False]


async def test_concurrent_replenishes_stay_within_the_bound() -> None:
    pool: SparePool[FakeResource] = SparePool(size=1)
    made: list[FakeResource] = []

    async def slow_spawn() -> FakeResource:
        await anyio.lowlevel.checkpoint()  # the other replenish runs meanwhile
        made.append(FakeResource("k"))
        return made[-1]

    async with anyio.create_task_group() as tg:
        for key in ("a", "b"):
            tg.start_soon(pool.replenish, key, slow_spawn)
    assert len(made) == 2
    assert pool.spares() == [made[1]]
    assert made[0].closed


async def test_an_idle_spare_expires_after_the_ttl() -> None:
    clock = ManualClock()
    pool: SparePool[FakeResource] = SparePool(size=2, idle_ttl=10.0, clock=clock)
    starter = Starter()
    await starter.start("a", pool)
    clock.now = 10.0
    assert pool.take("a") is starter.of("a"), "still within its TTL"
    await starter.start("a", pool)
    fresh = starter.made[-1]
    clock.now = 20.5
    assert pool.take("a") is None
    assert not fresh.closed, "set aside by take: closed by the next replenish, not on a run's way"
    await starter.start("b", pool)
    assert fresh.closed
    assert pool.pids() == [starter.of("b").pid]


async def test_a_dead_spare_is_never_handed_out_and_is_closed_later() -> None:
    pool: SparePool[FakeResource] = SparePool(size=2)
    starter = Starter()
    await starter.start("a", pool)
    dead = starter.of("a")
    dead.alive = False  # it died while it waited
    assert pool.take("a") is None
    assert pool.pids() == []
    await starter.start("a", pool)
    assert dead.closed
    assert pool.take("a") is starter.made[-1]


async def test_aclose_and_close_now_end_every_spare_and_what_was_leaving() -> None:
    clock = ManualClock()
    pool: SparePool[FakeResource] = SparePool(size=2, idle_ttl=1.0, clock=clock)
    starter = Starter()
    await starter.start("a", pool)
    clock.now = 5.0
    assert pool.take("a") is None  # expired: leaving, not closed yet
    await pool.aclose()
    assert starter.of("a").closed
    await starter.start("b", pool)
    await starter.start("c", pool)
    pool.close_now()
    assert starter.of("b").killed and starter.of("c").killed  # noqa: PT018
    assert pool.pids() == []


async def test_a_cancelled_caller_still_keeps_the_spare_it_started() -> None:
    """A spare started by a run cancelled meanwhile is in the pool (ended with it), never lost running."""
    pool: SparePool[FakeResource] = SparePool(size=1)
    starter = Starter()
    with anyio.CancelScope() as scope:
        scope.cancel()
        await starter.start("a", pool)
    assert pool.spares() == starter.made
    await pool.aclose()
    assert starter.of("a").closed


def test_a_spare_started_under_one_event_loop_is_taken_under_another() -> None:
    """Nothing in the pool belongs to a loop: a spare left by an asyncio run serves a trio run."""
    pool: SparePool[FakeResource] = SparePool(size=1)
    starter = Starter()
    anyio.run(starter.start, "a", pool, backend="asyncio")
    assert anyio.run(_take, pool, "a", backend="trio") is starter.of("a")


async def _take(pool: SparePool[FakeResource], key: str) -> FakeResource | None:
    return pool.take(key)


async def test_a_waiting_spare_holds_what_started_it() -> None:
    """As a warm entry does (`test_pool`): a starter named in a key by its id is not freed while its spare waits."""
    pool: SparePool[FakeResource] = SparePool(size=1)
    starter = Starter()
    freed = weakref.ref(starter)
    await starter.start("a", pool)
    del starter
    gc.collect()
    assert freed() is not None
    await pool.aclose()
    gc.collect()
    assert freed() is None
