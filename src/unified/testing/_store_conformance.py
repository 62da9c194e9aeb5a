"""The conformance suite every `SessionStore` runs: subclass it in a test module, name the subclass `Test...`.

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store_factory(self, tmp_path: Path) -> Callable[[], SessionStore]:
            return functools.partial(MyStore, tmp_path)     # every call: a store over the same data

        def damage(self, store, backend, session_id): ...      # overwrite the record with non-record bytes
        def mark_newer(self, store, backend, session_id): ...  # make the record claim format 99
        def raw(self, store, backend, session_id): ...         # the record as stored, to compare

`StoreConformance` runs in one process (list/resolve/ambiguous prefix/delete, leases between
tasks, corrupt and newer records reported and kept, redaction). `StoreProcessConformance` adds
what only several processes show: one lease holder among concurrent processes, a holder killed
with SIGKILL freeing its lease, and a saver killed mid-save leaving the previous version whole.
It needs a factory that pickles (a `functools.partial` of the store class and its arguments),
since each worker process builds its own store; its tests are plain functions (processes, not
event loops, are what they exercise). The in-process tests use `@pytest.mark.anyio`: they run on
whatever `anyio_backend` the project's tests choose. Guarantees tested: docs/sessions.md.
"""

from __future__ import annotations

import base64
import pickle
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from unified._exports import publish
from unified.errors import (
    AmbiguousSession,
    CorruptSession,
    SessionInUse,
    SessionNotFound,
    UnsupportedSessionFormat,
)
from unified.events import Usage
from unified.sessions import SessionStore, StoredSession
from unified.testing._store_worker import StoreFactory as StoreFactory
from unified.testing._store_worker import blob_of

__all__ = ["HANG_GUARD_S", "StoreConformance", "StoreProcessConformance"]

HANG_GUARD_S = 60.0
"""Hang guard only: how long a freed lease may take to become free again (normally milliseconds)."""
_SECRET = "AIzaSyConformanceSecret0123456789abcdefg"


def _session(backend: str, session_id: str | None = None, prompt: str = "hello") -> StoredSession:
    session = StoredSession.new(backend, model="gemini-test", cwd="/work/project", first_prompt=prompt)
    if session_id is not None:
        session.session_id = session_id
    return session


class StoreConformance:
    """The in-process cases. A subclass supplies the `store_factory` fixture and the three hooks."""

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        raise NotImplementedError("a store's conformance test defines the store_factory fixture")

    def damage(self, store: SessionStore, backend: str, session_id: str) -> None:
        """Overwrite the stored record of `session_id` with bytes that are not a record."""
        raise NotImplementedError

    def mark_newer(self, store: SessionStore, backend: str, session_id: str) -> None:
        """Make the stored record of `session_id` claim format 99 (a newer unified's)."""
        raise NotImplementedError

    def raw(self, store: SessionStore, backend: str, session_id: str) -> object:
        """The stored record as it is (bytes, rows...), to check that nothing rewrote it."""
        raise NotImplementedError

    @pytest.fixture
    def backend(self) -> str:
        """A namespace of its own for each test, so a shared database needs no cleaning."""
        return f"conformance-{uuid.uuid4().hex[:12]}"

    @pytest.mark.anyio
    async def test_lists_newest_first_and_resolves_full_short_and_prefix(
        self, store_factory: StoreFactory, backend: str
    ) -> None:
        store = store_factory()
        ids = ["aaaa1111-0000-4000-8000-000000000001", "aaaa2222-0000-4000-8000-000000000002"]
        ids.append("bbbb3333-0000-4000-8000-000000000003")
        for number, session_id in enumerate(ids):
            await store.save(_session(backend, session_id, prompt=f"prompt {number}"))
        listed = await store.list_sessions(backend)
        assert [s.session_id for s in listed] == ids[::-1]
        assert [s.first_prompt for s in listed] == ["prompt 2", "prompt 1", "prompt 0"]
        assert all(s.problem is None and s.backend == backend for s in listed)
        assert (await store.resolve(backend, ids[0])).session_id == ids[0]
        assert (await store.resolve(backend, "aaaa2222")).session_id == ids[1]
        assert (await store.resolve(backend, "BBB")).session_id == ids[2]
        with pytest.raises(AmbiguousSession) as ambiguous:
            await store.resolve(backend, "aaaa")
        assert sorted(ambiguous.value.details["candidates"]) == ids[:2]
        with pytest.raises(SessionNotFound):
            await store.resolve(backend, "cccc")
        for hostile in ("a%", "aaaa_111", "*", "a'; DROP TABLE unified_sessions; --", "../aaaa"):
            with pytest.raises(SessionNotFound):  # no wildcard, quote or path of the engine works here
                await store.resolve(backend, hostile)
        with pytest.raises(SessionNotFound):
            await store.resolve(backend, "   ")
        assert await store.list_sessions(f"{backend}-other") == []
        assert len(await store.list_sessions(backend)) == 3  # and nothing above changed the store

    @pytest.mark.anyio
    async def test_save_replaces_the_whole_record_and_load_returns_a_copy(
        self, store_factory: StoreFactory, backend: str
    ) -> None:
        store = store_factory()
        session = _session(backend)
        session.state = {"history": [{"role": "user", "text": "one"}]}
        await store.save(session)
        session.state = {"history": [{"role": "user", "text": "one"}, {"role": "model", "text": "two ☃"}]}
        session.usage = Usage(input_tokens=7, output_tokens=3)
        session.turns = 1
        await store.save(session)
        loaded = await store_factory().load(backend, session.session_id)
        assert loaded.state == session.state
        assert (loaded.usage.input_tokens, loaded.usage.output_tokens, loaded.turns) == (7, 3, 1)
        assert (loaded.model, loaded.cwd, loaded.first_prompt) == ("gemini-test", "/work/project", "hello")
        loaded.state["history"].append({"role": "user", "text": "three"})
        again = await store.load(backend, session.session_id)
        assert len(again.state["history"]) == 2
        with pytest.raises(SessionNotFound):
            await store.load(backend, "ffffffff-0000-4000-8000-00000000000f")

    @pytest.mark.anyio
    async def test_a_later_save_reads_later_even_when_the_clock_ties_or_steps_back(
        self, store_factory: StoreFactory, backend: str
    ) -> None:
        store = store_factory()
        session = _session(backend, "aaaa1111-0000-4000-8000-000000000001")
        stamps = []
        for _ in range(20):  # back to back: saves that can read the same microsecond from the clock
            await store.save(session)
            stamps.append((await store.load(backend, session.session_id)).updated_at)
        assert stamps == sorted(set(stamps))  # strictly increasing
        ahead = datetime.now(UTC) + timedelta(hours=1)  # the stamp a clock since stepped back gave
        session.updated_at = ahead
        await store.save(session)
        assert (await store.load(backend, session.session_id)).updated_at > ahead
        other = _session(backend, "bbbb2222-0000-4000-8000-000000000002")
        order = []
        for _ in range(10):  # two sessions saved in turn, back to back: each save reads later than the one before
            for saved in (session, other):
                saved.updated_at = datetime.now(UTC) - timedelta(hours=1)  # as a copy loaded earlier holds
                await store.save(saved)
                order.append((await store.load(backend, saved.session_id)).updated_at)
        assert order == sorted(set(order))
        listed = await store.list_sessions(backend)
        assert [s.session_id for s in listed] == [other.session_id, session.session_id]

    @pytest.mark.anyio
    async def test_a_stamp_no_clock_gave_is_not_followed(self, store_factory: StoreFactory, backend: str) -> None:
        """A damaged or foreign record's stamp (the last possible moment, a year ahead, no time zone)
        neither overflows a save nor drags the stamps of later saves into the future."""
        store = store_factory()
        far = datetime.now(UTC) + timedelta(days=365)
        for n, stamp in enumerate((datetime.max.replace(tzinfo=UTC), far, datetime(2026, 1, 1))):
            session = _session(backend, f"cccc{n}000-0000-4000-8000-00000000000{n}")
            session.updated_at = stamp
            await store.save(session)
            assert session.updated_at < far
            assert (await store.load(backend, session.session_id)).updated_at == session.updated_at
        later = _session(backend, "dddd0000-0000-4000-8000-00000000000d")
        await store.save(later)
        assert later.updated_at < far

    @pytest.mark.anyio
    async def test_save_redacts_known_secret_values(
        self, store_factory: StoreFactory, backend: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("GEMINI_API_KEY", _SECRET)
        store = store_factory()
        session = _session(backend, prompt=f"my key is {_SECRET}")
        session.state = {"echo": f"the key {_SECRET} again"}
        await store.save(session)
        assert _SECRET not in repr(self.raw(store, backend, session.session_id))
        loaded = await store.load(backend, session.session_id)
        assert _SECRET not in f"{loaded.first_prompt} {loaded.state}"

    @pytest.mark.anyio
    async def test_delete_removes_one_session_and_refuses_a_held_one(
        self, store_factory: StoreFactory, backend: str
    ) -> None:
        store = store_factory()
        kept, gone = _session(backend), _session(backend)
        await store.save(kept)
        await store.save(gone)
        async with store.lease(backend, kept.session_id):
            with pytest.raises(SessionInUse):
                await store.delete(backend, kept.session_id)
        await store.delete(backend, gone.session_id)
        assert [s.session_id for s in await store.list_sessions(backend)] == [kept.session_id]
        with pytest.raises(SessionNotFound):
            await store.delete(backend, gone.session_id)
        with pytest.raises(SessionNotFound):
            await store.resolve(backend, gone.short_id)
        assert (await store.load(backend, kept.session_id)).session_id == kept.session_id

    @pytest.mark.anyio
    async def test_a_lease_has_one_holder_and_is_free_again_after_release(
        self, store_factory: StoreFactory, backend: str
    ) -> None:
        store, other = store_factory(), store_factory()
        session_id = str(uuid.uuid4())
        holding = anyio.Event()
        release = anyio.Event()

        async def hold() -> None:
            async with store.lease(backend, session_id):
                holding.set()
                await release.wait()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(hold)
            await holding.wait()
            for contender in (store, other):
                with pytest.raises(SessionInUse, match=session_id[:8]):
                    async with contender.lease(backend, session_id):
                        pass
            release.set()
        async with other.lease(backend, session_id):
            pass
        async with other.lease(backend, f"{session_id}-2"), store.lease(backend, session_id):
            pass  # leases of different sessions do not exclude each other

    @pytest.mark.anyio
    async def test_a_corrupt_record_is_reported_and_left_unchanged(
        self, store_factory: StoreFactory, backend: str
    ) -> None:
        store = store_factory()
        session, sound = _session(backend), _session(backend)
        await store.save(session)
        await store.save(sound)
        self.damage(store, backend, session.session_id)
        before = self.raw(store, backend, session.session_id)
        listed = {s.session_id: s for s in await store.list_sessions(backend)}
        assert listed[sound.session_id].problem is None
        problem = listed[session.session_id].problem
        assert problem is not None
        assert problem.kind == "corrupt"
        with pytest.raises(CorruptSession):
            await store.resolve(backend, session.short_id)
        with pytest.raises(CorruptSession):
            await store.load(backend, session.session_id)
        with pytest.raises(CorruptSession):
            await store.save(session)
        assert self.raw(store, backend, session.session_id) == before

    @pytest.mark.anyio
    async def test_a_record_of_a_newer_format_is_refused_and_left_unchanged(
        self, store_factory: StoreFactory, backend: str
    ) -> None:
        store = store_factory()
        session = _session(backend)
        await store.save(session)
        self.mark_newer(store, backend, session.session_id)
        before = self.raw(store, backend, session.session_id)
        [listed] = await store.list_sessions(backend)
        assert listed.problem is not None
        assert listed.problem.kind == "newer_format"
        with pytest.raises(UnsupportedSessionFormat) as refused:
            await store.resolve(backend, session.short_id)
        assert "newer unified" in refused.value.message
        with pytest.raises(UnsupportedSessionFormat):
            await store.load(backend, session.session_id)
        with pytest.raises(UnsupportedSessionFormat):
            await store.save(session)
        assert self.raw(store, backend, session.session_id) == before


class _Worker:
    """A store in another process (`python -m unified.testing._store_worker`), driven line by line."""

    def __init__(self, factory: StoreFactory, action: str, backend: str, session_id: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "unified.testing._store_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        # On stdin, not argv: the factory may carry a store URL with its password, which any user sees in argv.
        self.say(base64.b64encode(pickle.dumps((factory, action, backend, session_id))).decode())

    def say(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def hear(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def finish(self) -> int:
        if self.process.stdin is not None:
            self.process.stdin.close()
        return self.process.wait()


@contextmanager
def _workers(count: int, *args: Any) -> Iterator[list[_Worker]]:
    workers = [_Worker(*args) for _ in range(count)]
    try:
        yield workers
    finally:
        for worker in workers:
            if worker.process.poll() is None:
                worker.kill()


async def _take_when_free(store: SessionStore, backend: str, session_id: str) -> None:
    """Take the lease as soon as it is free. Fails only past the hang guard."""
    started = time.monotonic()
    while True:
        try:
            async with store.lease(backend, session_id):
                return
        except SessionInUse:
            if time.monotonic() - started > HANG_GUARD_S:
                raise
            await anyio.sleep(0.01)  # polling for the server to notice the death; not an ordering


class StoreProcessConformance:
    """The cases that need several processes; `store_factory` must pickle. Start processes: e2e tier."""

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        raise NotImplementedError("a store's conformance test defines the store_factory fixture")

    @pytest.fixture
    def backend(self) -> str:
        return f"conformance-{uuid.uuid4().hex[:12]}"

    def test_concurrent_processes_one_lease_holder(self, store_factory: StoreFactory, backend: str) -> None:
        session_id = str(uuid.uuid4())
        with _workers(3, store_factory, "lease", backend, session_id) as workers:
            assert [w.hear() for w in workers] == ["ready"] * 3
            for worker in workers:
                worker.say("go")  # all three race for the lease now
            answers = [w.hear() for w in workers]
            assert sorted(answers) == ["held", "in use", "in use"], answers
            holder = workers[answers.index("held")]
            with pytest.raises(SessionInUse):
                anyio.run(_hold_once, store_factory(), backend, session_id)
            assert holder.finish() == 0  # releases the lease and exits
            assert all(w.finish() == 0 for w in workers)
        anyio.run(_hold_once, store_factory(), backend, session_id)

    def test_a_holder_killed_with_sigkill_frees_the_lease(self, store_factory: StoreFactory, backend: str) -> None:
        session_id = str(uuid.uuid4())
        with _workers(1, store_factory, "lease", backend, session_id) as [worker]:
            assert worker.hear() == "ready"
            worker.say("go")
            assert worker.hear() == "held"
            with pytest.raises(SessionInUse) as refused:
                anyio.run(_hold_once, store_factory(), backend, session_id)
            assert f"pid {worker.process.pid}" in refused.value.message
            worker.kill()
        anyio.run(_take_when_free, store_factory(), backend, session_id)

    def test_a_saver_killed_mid_save_leaves_a_whole_version(self, store_factory: StoreFactory, backend: str) -> None:
        """The worker saves versions of a 2 MB state in a loop; it is killed during (or right after) save 3."""
        session_id = str(uuid.uuid4())
        with _workers(1, store_factory, "save-loop", backend, session_id) as [worker]:
            assert worker.hear() == "ready"
            worker.say("go")
            while worker.hear() != "saving 3":
                pass
            worker.kill()
        anyio.run(_check_whole, store_factory(), backend, session_id)


async def _hold_once(store: SessionStore, backend: str, session_id: str) -> None:
    async with store.lease(backend, session_id):
        pass


async def _check_whole(store: SessionStore, backend: str, session_id: str) -> None:
    """The record a killed saver left: one whole version (2 or later), readable and still saveable."""
    loaded = await store.load(backend, session_id)
    version = loaded.state["version"]
    assert version >= 2
    assert loaded.state["blob"] == blob_of(version)
    [listed] = await store.list_sessions(backend)
    assert listed.problem is None
    loaded.state = {"version": 0}
    await store.save(loaded)  # and the store still takes saves


publish("unified.testing", ["StoreConformance", "StoreProcessConformance"], globals())
