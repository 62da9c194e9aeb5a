"""`folder_lease` through a spare lock file (`unified._sessions.spares`): no file created and freed per lease.

Proved here, each with the spare's inode seen at the lock's path (so the spare path, not the fallback, is what
is tested): processes racing for one session, half of them through the store's lease (the protocol an older
unified takes), have exactly one holder a round; a holder killed with SIGKILL is taken over at once and its
spare is swept once stale; a process leaves no spare behind when it exits; a taker that locks a spare after its
release makes the next lease drop it, never share it; a spare whose name was swept is replaced, its lease kept;
a forked child never uses (or unlocks) its parent's spares.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Barrier
from pathlib import Path

import anyio
import pytest

from tests.sessions.records import BACKEND
from unified._sessions import spares, stores
from unified._sessions.stores import FileSessionStore, folder_lease
from unified.errors import SessionInUse

SESSION = "019b2c3d-4e5f-7a8b-9c0d-1e2f3a4b5c6d"
OTHER = "019b2c3d-0000-7a8b-9c0d-1e2f3a4b5c6d"
HANG_GUARD_S = 120.0


def _lock(root: Path, session_id: str = SESSION) -> Path:
    return root / BACKEND / session_id[:2] / f"{session_id}.lock"


def _spares(root: Path) -> list[Path]:
    return sorted((root / BACKEND).glob(".spare-*"))


def _spare_linked(lock: Path) -> bool:
    """Whether the lock file is a spare's inode (its second name), not a file of its own."""
    return lock.stat().st_nlink == 2 and any(p.stat().st_ino == lock.stat().st_ino for p in _spares(lock.parents[2]))


# --- processes ------------------------------------------------------------------------------------------------------


def _contend(root: str, through_store: bool, rounds: int, start: Barrier, tried: Barrier, out: Connection) -> None:
    """Each round: try the session at once with the others, report, hold until every contender has tried."""

    async def one_round() -> str:
        lease = (
            FileSessionStore(Path(root)).lease(BACKEND, SESSION)
            if through_store
            else folder_lease(root, BACKEND, SESSION)
        )
        try:
            async with lease:
                linked = _spare_linked(_lock(Path(root)))
                await anyio.to_thread.run_sync(tried.wait, HANG_GUARD_S)
                return "spare" if linked else "file"
        except SessionInUse:
            await anyio.to_thread.run_sync(tried.wait, HANG_GUARD_S)
            return "refused"

    for _ in range(rounds):
        start.wait(HANG_GUARD_S)
        out.send(anyio.run(one_round))
        start.wait(HANG_GUARD_S)  # every lease of the round released before the next begins


@pytest.mark.e2e  # runs real subprocesses
def test_processes_racing_for_one_session_have_exactly_one_holder_a_round(tmp_path: Path) -> None:
    """Four processes, two through `folder_lease` (spares) and two through the store's lease (the lock file an older
    unified takes the same way), race for one session ten times: one holds it each round, the others are
    refused; folder leases win through their spares; no lock file is left, and no spare once the processes exit."""
    rounds, context = 10, multiprocessing.get_context("spawn")
    start, tried = context.Barrier(4), context.Barrier(4)
    pipes = [context.Pipe(duplex=False) for _ in range(4)]
    workers = [
        context.Process(target=_contend, args=(str(tmp_path), index % 2 == 1, rounds, start, tried, pipes[index][1]))
        for index in range(4)
    ]
    for worker in workers:
        worker.start()
    outcomes = [[pipes[index][0].recv() for _ in range(rounds)] for index in range(4)]
    for worker in workers:
        worker.join(HANG_GUARD_S)
    assert [w.exitcode for w in workers] == [0] * 4
    for round_ in zip(*outcomes, strict=True):
        assert sorted(round_).count("refused") == 3, round_
    folder_wins = [o for index in (0, 2) for o in outcomes[index] if o != "refused"]
    assert "spare" in folder_wins  # the spare path raced (a folder lease may also win through a store taker's file)
    assert not list(tmp_path.rglob("*.lock"))
    assert _spares(tmp_path) == []  # the two folder-lease processes removed theirs as they exited


_HOLDER = """
import sys, anyio
from unified._sessions.stores import folder_lease

async def main() -> None:
    async with folder_lease(sys.argv[1], sys.argv[2], sys.argv[3]):
        print("held", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)

anyio.run(main)
"""


@pytest.mark.e2e  # runs a real subprocess
def test_a_holder_killed_with_sigkill_is_taken_over_at_once_and_its_spare_swept_once_stale(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(tmp_path), BACKEND, SESSION], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == b"held"
        assert _spare_linked(_lock(tmp_path))

        async def refused() -> None:
            with pytest.raises(SessionInUse, match=f"pid {holder.pid}"):
                async with folder_lease(tmp_path, BACKEND, SESSION):
                    pass

        anyio.run(refused)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    _forget_spares()  # this process's own, from the refused take
    (dead,) = _spares(tmp_path)
    assert _lock(tmp_path).exists()  # what a crashed holder leaves: its lock file, its spare
    stale = time.time() - spares.STALE_SPARE_SECONDS - 60
    os.utime(dead, (stale, stale))

    async def take() -> None:
        async with folder_lease(tmp_path, BACKEND, SESSION):  # at once: the kernel dropped the dead holder's flock
            assert f'"pid": {os.getpid()}' in _lock(tmp_path).read_text()

    anyio.run(take)
    assert not dead.exists()  # swept by this process's new spare
    assert not _lock(tmp_path).exists()
    assert [p.name.startswith(f".spare-{os.getpid()}-") for p in _spares(tmp_path)] == [True]


@pytest.mark.e2e  # runs a real subprocess
def test_a_process_leaves_no_spare_when_it_exits(tmp_path: Path) -> None:
    script = (
        "import sys, anyio\nfrom pathlib import Path\nfrom unified._sessions.stores import folder_lease\n"
        "async def main():\n"
        "    for sid in sys.argv[3:]:\n"
        "        async with folder_lease(sys.argv[1], sys.argv[2], sid):\n"
        "            print(len(list(Path(sys.argv[1], sys.argv[2]).glob('.spare-*'))), flush=True)\n"
        "anyio.run(main)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), BACKEND, SESSION, OTHER], check=True, capture_output=True
    )
    assert ran.stdout.split() == [b"1", b"1"]  # one spare, for both leases
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


# --- in this process ------------------------------------------------------------------------------------------------


def _forget_spares() -> None:
    """Drop this process's idle spares (as its exit does), so a test starts without one."""
    spares._remove_at_exit()


@pytest.fixture(autouse=True)
def _no_spares_across_tests() -> Iterator[None]:
    _forget_spares()
    yield
    _forget_spares()


def test_successive_leases_link_one_spare_and_leave_only_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        inodes = []
        for session_id in (SESSION, OTHER, SESSION):
            async with folder_lease(tmp_path, BACKEND, session_id):
                assert _spare_linked(_lock(tmp_path, session_id))
                inodes.append(_lock(tmp_path, session_id).stat().st_ino)
                with pytest.raises(SessionInUse):
                    async with FileSessionStore(tmp_path).lease(BACKEND, session_id):
                        pass
            assert not _lock(tmp_path, session_id).exists()
        assert len(set(inodes)) == 1

    anyio.run(scenario)
    (spare,) = _spares(tmp_path)
    assert spare.stat().st_nlink == 1
    assert not list(tmp_path.rglob("*.lock"))


def test_a_taker_that_locks_a_spare_after_its_release_makes_the_next_lease_drop_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store taker opens the lock file (the spare's inode); the folder lease releases before the taker's flock,
    which then locks the spare: a lease taken meanwhile must not share the spare with it, and the taker, seeing
    the path gone, takes a file of its own."""
    folder = f"{tmp_path}/{BACKEND}"
    lock, other = str(_lock(tmp_path)), str(_lock(tmp_path, OTHER))
    os.makedirs(os.path.dirname(lock))
    held = spares.linked_spare(folder, lock)
    assert held is not None
    spare_path = Path(held.path)
    real_flock = fcntl.flock
    meanwhile: list[object] = []

    def flock_after_the_release(fd: int, operation: int) -> None:
        monkeypatch.setattr(fcntl, "flock", real_flock)  # the taker's first flock only
        spares.put_back(folder, lock, held)
        real_flock(fd, operation)
        meanwhile.append(spares.linked_spare(folder, other))  # the taker holds the spare's inode, for an instant

    monkeypatch.setattr(fcntl, "flock", flock_after_the_release)
    fd = stores._take_lock(lock, SESSION)
    try:
        assert meanwhile == [None]  # the spare was locked: dropped, and the lease would take a file of its own
        assert not spare_path.exists()
        assert not Path(other).exists()
        assert Path(lock).stat().st_nlink == 1
        assert f'"pid": {os.getpid()}' in Path(lock).read_text()

        async def refused_then_other() -> None:
            with pytest.raises(SessionInUse):
                async with folder_lease(tmp_path, BACKEND, SESSION):
                    pass
            async with folder_lease(tmp_path, BACKEND, OTHER):
                assert _spare_linked(Path(other))

        anyio.run(refused_then_other)
    finally:
        stores._release_lock(lock, fd)
    assert not Path(lock).exists()


def test_a_spare_whose_name_was_swept_is_replaced_and_its_lease_kept(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with folder_lease(tmp_path, BACKEND, SESSION):
            (first,) = _spares(tmp_path)
            first.unlink()  # another process's sweep
            with pytest.raises(SessionInUse):
                async with FileSessionStore(tmp_path).lease(BACKEND, SESSION):
                    pass
        assert not _lock(tmp_path).exists()
        async with folder_lease(tmp_path, BACKEND, OTHER):  # the nameless spare is closed: a file of its own
            assert _lock(tmp_path, OTHER).stat().st_nlink == 1
        async with folder_lease(tmp_path, BACKEND, SESSION):  # and the next lease makes a new spare
            assert _spare_linked(_lock(tmp_path))
            assert _spares(tmp_path) != [first]

    anyio.run(scenario)
    assert len(_spares(tmp_path)) == 1
    assert not list(tmp_path.rglob("*.lock"))


def _child_takes(root: str, ready: Connection, out: Connection) -> None:
    """In a forked child: once the parent holds the session, try it too."""
    ready.recv()

    async def take() -> str:
        try:
            async with folder_lease(root, BACKEND, SESSION):
                return "held"
        except SessionInUse:
            return "refused"

    out.send(anyio.run(take))


@pytest.mark.e2e  # forks a real subprocess
def test_a_forked_child_never_uses_its_parent_s_spare(tmp_path: Path) -> None:
    """The child shares the parent's spare's open file, so its flock: had it used that spare, its link failing at the
    held path would have unlocked the parent's lease (`LOCK_UN` of the shared file) and let it in."""

    async def once(session_id: str) -> None:
        async with folder_lease(tmp_path, BACKEND, session_id):
            pass

    anyio.run(once, OTHER)  # leaves this process an idle spare, which the child inherits
    context = multiprocessing.get_context("fork")
    go_read, go_write = context.Pipe(duplex=False)
    out_read, out_write = context.Pipe(duplex=False)
    child = context.Process(target=_child_takes, args=(str(tmp_path), go_read, out_write), daemon=True)
    child.start()

    async def hold() -> str:
        async with folder_lease(tmp_path, BACKEND, SESSION):
            assert _spare_linked(_lock(tmp_path))
            go_write.send("go")
            answer: str = await anyio.to_thread.run_sync(out_read.recv)
            with pytest.raises(SessionInUse):  # still held: nothing unlocked it
                async with FileSessionStore(tmp_path).lease(BACKEND, SESSION):
                    pass
            return answer

    try:
        assert anyio.run(hold) == "refused"
    finally:
        go_write.send("go")  # a failure before the parent said so must not leave the child waiting
        child.join(HANG_GUARD_S)
    assert child.exitcode == 0
