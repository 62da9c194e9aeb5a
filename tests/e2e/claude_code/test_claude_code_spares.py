"""Spare processes of the real `claude` (`pool_size` / `pool`), offline against FakeAnthropic: the next
run takes the spare its predecessor left (checked by pid), and is the run a cold process would have
been; another launch never gets it; a dead spare means a cold start; nothing outlives a cancelled
run or the pool; a spare that was never used leaves no session behind."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from tests.e2e.claude_code.claude_code_helpers import Processes, alive, claude_home, entry_written, run_claude
from tests.hang_guard import HANG_GUARD_S
from unified import sessions
from unified._adapters.claude_code import ClaudeSparePool
from unified._adapters.claude_code._spares import ClaudeSpare
from unified._binary.process import AgentSubprocess
from unified._execute import EventStream
from unified.backends import AgentProcess
from unified.errors import SessionNotFound
from unified.events import Result, SessionStarted, TextDelta, UnifiedEvent
from unified.testing import FakeAnthropic, ModelTurn

pytestmark = pytest.mark.anyio


def started(events: Sequence[UnifiedEvent]) -> SessionStarted:
    return next(e for e in events if isinstance(e, SessionStarted))


def final(events: Sequence[UnifiedEvent]) -> Result:
    last = events[-1]
    assert isinstance(last, Result)
    return last


def session_files() -> list[str]:
    return sorted(p.stem for p in (claude_home() / ".claude" / "projects").glob("*/*.jsonl"))


def registry() -> list[str]:
    """The CLI's live-process entries (`sessions/<pid>.json`), which name their session."""
    folder = claude_home() / ".claude" / "sessions"
    return sorted(json.loads(p.read_text())["sessionId"] for p in folder.glob("*.json")) if folder.is_dir() else []


async def ready(pool: ClaudeSparePool) -> list[int]:
    """The waiting spares' pids, once each has answered its initialize (as ready as it gets)."""
    for spare in pool.spares():
        await spare.initialized()
    return [pid for pid in pool.pids() if pid is not None]


@asynccontextmanager
async def a_cold_run_and_its_spare(
    pool: ClaudeSparePool, workspace: Path
) -> AsyncIterator[tuple[FakeAnthropic, Processes, dict[str, object], list[UnifiedEvent], int]]:
    """A cold run ("One." answered "First.") with `pool`, and the one spare it left, ready: (the server, with
    "Second." and "You said second." to answer, the processes started, the run options, the cold run's
    events, the spare's pid)."""
    processes = Processes()
    options: dict[str, object] = {"pool": pool, "start_process": processes}
    turns = [ModelTurn(text="First."), ModelTurn(text="Second."), ModelTurn(text="You said second.")]
    async with FakeAnthropic(turns) as server:
        cold = await run_claude(server, workspace, "One.", options=options)
        [spare_pid] = await ready(pool)
        yield server, processes, options, cold, spare_pid


async def test_the_next_run_takes_the_spare_and_is_the_run_a_cold_process_makes(workspace: Path) -> None:
    pool = ClaudeSparePool(size=1)
    async with a_cold_run_and_its_spare(pool, workspace) as (server, processes, options, cold, spare_pid):
        [spare] = pool.spares()
        assert spare_pid == processes.pids[1]
        # The cold run's CLI has ended (its live-process entry is gone); the spare's entry is written at some
        # point of its start, not ordered with its initialize answer: it may or may not be there yet.
        assert set(registry()) <= {spare.session_id}
        warm = await run_claude(server, workspace, "Two.", options=options)
        assert (pool.taken, pool.started) == (1, 2)
        assert [e.type for e in warm] == [e.type for e in cold]
        assert started(warm).session_id == spare.session_id
        assert final(warm).final_text == "Second."
        assert not alive(spare_pid), "the run ended the spare it took"
        assert spare.session_id in session_files()
        assert "Two." in json.dumps(server.model_bodies()[-1])
        resumed = await run_claude(server, workspace, "Which?", options=options, resume=started(warm).short_id)
        assert started(resumed).resumed
        assert started(resumed).session_id == spare.session_id
        assert pool.taken == 1, "a resumed run starts cold and leaves its spare waiting"
        assert "Two." in json.dumps(server.model_bodies()[-1]), "the resumed request carries the warm run's turn"
    assert final(resumed).final_text == "You said second."
    leftover = await ready(pool)
    assert [pid for pid in processes.pids if alive(pid)] == leftover
    await pool.aclose()
    assert not any(alive(pid) for pid in processes.pids)
    assert registry() == [], "closed politely: the CLI removed its live-process entry"


async def test_another_model_cwd_or_env_never_gets_the_spare(workspace: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pool = ClaudeSparePool(size=1)
    processes = Processes()
    options = {"pool": pool, "start_process": processes}
    async with FakeAnthropic([ModelTurn(text="Done.")] * 4) as server:
        await run_claude(server, workspace, options=options)
        other_env = {**options, "env": {**server.cli_env, "CLAUDE_CODE_EXTRA": "1"}}
        for where, other_options, model in [
            (workspace, options, "claude-other-model"),
            (elsewhere, options, None),
            (workspace, other_env, None),
        ]:
            [before] = await ready(pool)
            events = await run_claude(server, where, options=other_options, model=model)
            assert final(events).status == "success"
            assert pool.taken == 0
            assert not alive(before), "evicted (closed) for the other launch's spare"
    await pool.aclose()
    assert len(processes.started) == 8, "four cold runs, each leaving a spare"
    assert not any(alive(pid) for pid in processes.pids)


async def test_a_spare_that_died_is_replaced_by_a_cold_start(workspace: Path) -> None:
    pool = ClaudeSparePool(size=1)
    processes = Processes()
    options = {"pool": pool, "start_process": processes}
    async with FakeAnthropic([ModelTurn(text="One."), ModelTurn(text="Two.")]) as server:
        await run_claude(server, workspace, options=options)
        [spare] = pool.spares()
        os.kill(spare.connection.process.pid or 0, signal.SIGKILL)
        assert await spare.connection.process.wait(HANG_GUARD_S) is not None
        events = await run_claude(server, workspace, options=options)
    assert final(events).final_text == "Two."
    assert pool.taken == 0
    assert started(events).session_id != spare.session_id
    assert len(processes.started) == 4, "run, spare (killed), cold run, its spare"
    await pool.aclose()
    assert not any(alive(pid) for pid in processes.pids)


class DyingSpares(ClaudeSparePool):
    """A pool whose next `take` SIGKILLs the spare it hands out: the spare dies after the pool saw it
    alive and before the run that has it writes anything (the window a run cannot see coming)."""

    def __init__(self) -> None:
        super().__init__(size=1)
        self.killed: ClaudeSpare | None = None
        self.armed = False

    def take(self, key: str) -> ClaudeSpare | None:
        spare = super().take(key)
        if spare is not None and self.armed:
            self.armed = False
            os.kill(spare.connection.process.pid or 0, signal.SIGKILL)
            self.killed = spare
        return spare


def session_flag(process: AgentProcess) -> str | None:
    """The `--session-id` a real process was started with."""
    assert isinstance(process, AgentSubprocess)
    argv = process.popen.args
    assert isinstance(argv, list)
    flags = [str(a).removeprefix("--session-id=") for a in argv if str(a).startswith("--session-id=")]
    return flags[0] if flags else None


async def test_a_spare_that_dies_once_taken_gives_way_to_a_cold_start_of_the_same_run(workspace: Path) -> None:
    """Killed between the take and the run's first write, the spare's death costs the run nothing: the run
    starts cold (its own session id), is the run a cold process makes, and its session resumes."""
    pool = DyingSpares()
    async with a_cold_run_and_its_spare(pool, workspace) as (server, processes, options, cold, spare_pid):
        entry = await entry_written(spare_pid)
        pool.armed = True
        events = await run_claude(server, workspace, "Two.", options=options)
        assert [e.type for e in events] == [e.type for e in cold], "the events of one normal run"
        assert sum(isinstance(e, SessionStarted) for e in events) == 1
        assert final(events).final_text == "Second."
        dead = pool.killed
        assert dead is not None
        assert dead.pid == spare_pid
        assert not alive(spare_pid), "the dead spare was reaped"
        assert not entry.exists(), "the killed spare's live-process entry was removed"
        [served] = [p for p in processes.started if session_flag(p) == started(events).session_id]
        assert served is not dead.connection.process, "the id of the process that served it"
        assert served.returncode is not None, "the run ended the process that served it"
        assert started(events).session_id in session_files()
        assert dead.session_id not in session_files()
        assert len(server.model_bodies()) == 2, "the dead spare asked the model nothing"
        resumed = await run_claude(server, workspace, "Which?", options=options, resume=started(events).short_id)
        assert started(resumed).session_id == started(events).session_id
        assert "Two." in json.dumps(server.model_bodies()[-1])
    assert final(resumed).final_text == "You said second."
    assert (pool.taken, pool.started) == (1, 2), "the cold start left the next run's spare"
    await pool.aclose()
    assert not any(alive(pid) for pid in processes.pids)


async def test_close_now_leaves_no_live_process_entry(workspace: Path) -> None:
    """`close_now` (interpreter exit) SIGKILLs its spares, which cannot remove their `sessions/<pid>.json`."""
    pool = ClaudeSparePool(size=1)
    processes = Processes()
    async with FakeAnthropic([ModelTurn(text="Done.")]) as server:
        await run_claude(server, workspace, options={"pool": pool, "start_process": processes})
        [spare_pid] = await ready(pool)
        [spare] = pool.spares()
        entry = await entry_written(spare_pid)
        pool.close_now()
    assert not alive(spare_pid)
    assert not entry.exists()
    assert spare.session_id not in registry()
    assert not any(alive(pid) for pid in processes.pids)


async def test_cancelling_a_run_in_a_spare_leaves_no_process(workspace: Path) -> None:
    pool = ClaudeSparePool(size=1)
    processes = Processes()
    options = {"pool": pool, "start_process": processes}
    turns = [
        ModelTurn(text="Ready."),
        ModelTurn(text="A slow answer that takes its time.", text_chunks=6, chunk_delay=1.0),
    ]

    async def cancel_at_first_text(event: UnifiedEvent, stream: EventStream) -> None:
        if isinstance(event, TextDelta):
            stream.cancel()

    async with FakeAnthropic(turns) as server:
        await run_claude(server, workspace, options=options)
        [spare_pid] = await ready(pool)
        events = await run_claude(server, workspace, options=options, on_event=cancel_at_first_text)
    assert final(events).status == "cancelled"
    assert pool.taken == 1
    assert not alive(spare_pid)
    await pool.aclose()
    assert not any(alive(pid) for pid in processes.pids)


async def test_pool_size_zero_starts_nothing_ahead(workspace: Path) -> None:
    processes = Processes()
    async with FakeAnthropic([ModelTurn(text="One."), ModelTurn(text="Two.")]) as server:
        for _ in range(2):
            await run_claude(server, workspace, options={"start_process": processes, "pool_size": 0})
    assert len(processes.started) == 2
    assert not any(alive(pid) for pid in processes.pids)


async def test_an_unused_spare_leaves_no_session_behind(workspace: Path) -> None:
    pool = ClaudeSparePool(size=1)
    processes = Processes()
    async with FakeAnthropic([ModelTurn(text="Done.")]) as server:
        events = await run_claude(server, workspace, options={"pool": pool, "start_process": processes})
        [spare] = pool.spares()
        await spare.initialized()
        listed = (await sessions.list_sessions(backend="claude-code")).sessions
        assert [info.session_id for info in listed] == [started(events).session_id]
        with pytest.raises(SessionNotFound):
            await sessions.resolve(spare.session_id[:8], backend="claude-code")
        assert len(server.model_bodies()) == 1, "a waiting spare asks the model nothing"
    await pool.aclose()
    assert spare.session_id not in session_files()
    assert registry() == []
    assert not any(alive(pid) for pid in processes.pids)


def test_a_spare_left_by_an_asyncio_run_serves_a_trio_run(workspace: Path) -> None:
    """A process serves any event loop: the spare of one `anyio.run` is taken by the next, on trio."""
    pool = ClaudeSparePool(size=1)
    processes = Processes()
    options = {"pool": pool, "start_process": processes}
    server = FakeAnthropic([ModelTurn(text="One."), ModelTurn(text="Two.")]).start()
    try:

        async def first() -> list[int | None]:
            await run_claude(server, workspace, options=options)
            await ready(pool)
            return pool.pids()

        spare_pids = anyio.run(first, backend="asyncio")
        events = anyio.run(functools.partial(run_claude, server, workspace, options=options), backend="trio")
    finally:
        server.stop()
    assert final(events).final_text == "Two."
    assert pool.taken == 1
    assert not any(alive(pid) for pid in spare_pids if pid is not None)
    anyio.run(pool.aclose, backend="trio")
    assert not any(alive(pid) for pid in processes.pids)


_ONE_RUN_THEN_EXIT = """
import json, sys
import anyio
from unified._adapters.claude_code._spares import default_spares
from unified._binary.process import AgentSubprocess
from unified._execute import EventStream
from unified.backends import AgentProcess
from unified.types import ExecuteParams

async def main() -> None:
    options = {"env": json.loads(sys.argv[2]), "max_retries": 1, "pool_size": 1}
    params = ExecuteParams(prompt="hi", backend="claude-code", cwd=sys.argv[1], backend_options=options)
    async with EventStream(params, strict=True) as stream:
        async for _ in stream:
            pass
    [spare] = default_spares().spares()
    await spare.initialized()
    print(spare.pid, flush=True)

anyio.run(main)
"""


async def test_the_default_pools_spares_end_at_interpreter_exit(workspace: Path) -> None:
    async with FakeAnthropic([ModelTurn(text="Done.")]) as server:
        command = [sys.executable, "-c", _ONE_RUN_THEN_EXIT, str(workspace), json.dumps(server.cli_env)]
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
        )
    assert done.returncode == 0, done.stderr
    spare_pid = int(done.stdout.split()[-1])
    assert not alive(spare_pid), "the spare outlived the interpreter that started it"
    assert len(session_files()) == 1, "the run's session; the killed spare wrote none"
    assert registry() == [], "nor left its live-process entry"
