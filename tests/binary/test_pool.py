"""The warm pool: reuse by key, a bound, an idle TTL, retirement, and nothing left running."""

from __future__ import annotations

import gc
import weakref

import anyio
import pytest

from tests.harness.pool_parts import FakeResource, ManualClock
from unified._binary.pool import ProcessWide, WarmPool, pool_key

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


def test_each_event_loop_gets_its_own_entries() -> None:
    pool: WarmPool[FakeResource] = WarmPool(size=2)
    spawn = Spawner()

    async def one_run() -> None:
        async with pool.lease("k", spawn):
            pass

    anyio.run(one_run)
    anyio.run(one_run, backend="trio")  # another loop: the first loop's entry is not shared
    assert len(spawn.made) == 2
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
