"""Warm `codex app-server` processes on the real pinned binary, against FakeOpenAI: reuse, isolation of the runs
that share a process, and the ends that must never give a process back (a cancel, a crash)."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest

from tests.e2e.codex.conftest import codex_params, run_codex
from tests.e2e.conformance import mcp_echo_server
from tests.hang_guard import HANG_GUARD_S
from tests.harness.fake_proxy import fake_proxy
from unified._adapters.codex._launch import native_binary, start_codex
from unified._adapters.codex._pool import CodexPool, default_pool
from unified._adapters.codex._rollouts import Rollouts
from unified._binary.process import AgentSubprocess
from unified._binary.proctable import alive, stat_fields
from unified._execute import EventStream, execute_sync
from unified.events import (
    ErrorEvent,
    Result,
    SessionStarted,
    TextDelta,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
)
from unified.testing import FakeOpenAI, Fault, FunctionCall, ModelTurn
from unified.types import HttpMcpServer, StdioMcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


class Recording:
    """`start_codex` on the pinned binary (a `start_process` is given argv[0] `codex`), noting every process it
    starts."""

    def __init__(self) -> None:
        self.binary = str(native_binary(Path(os.environ["UNIFIED_CODEX_BIN"])))
        self.made: list[AgentSubprocess] = []

    def __call__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentSubprocess:
        process = start_codex([self.binary, *argv[1:]], cwd, env)
        self.made.append(process)
        return process


def started(events: Sequence[UnifiedEvent]) -> SessionStarted:
    return next(e for e in events if isinstance(e, SessionStarted))


def result(events: Sequence[UnifiedEvent]) -> Result:
    last = events[-1]
    assert isinstance(last, Result), [e.type for e in events]
    return last


def text(events: Sequence[UnifiedEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def running(pid: int) -> bool:
    """Whether a process of that pid runs (a zombie has ended)."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] != b"Z"


async def gone(pid: int, started_at: str) -> None:
    """Until that process has ended (SIGKILL is delivered asynchronously): watching its state, not the clock."""
    while alive((pid, started_at)):  # noqa: ASYNC110
        await anyio.sleep(0.01)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_the_next_run_takes_the_warm_process_with_a_thread_and_a_rollout_of_its_own(
    workspace: Path, tmp_path: Path
) -> None:
    pool = CodexPool(size=1)
    home = tmp_path / "codex-home"
    options = {"pool": pool, "codex_home": home}
    turns = [ModelTurn(text=t) for t in ("one", "two", "again one", "again two")]
    try:
        async with FakeOpenAI(turns) as server:
            first = await run_codex(server, workspace, "first", options=options)
            (pid,) = pool.pids()
            second = await run_codex(server, workspace, "second", options=options)
            assert (pool.spawned, pool.pids()) == (1, [pid])
            assert [text(first), text(second)] == ["one", "two"]
            assert [result(first).status, result(second).status] == ["success", "success"]
            ids = [started(first).session_id, started(second).session_id]
            assert None not in ids
            assert ids[0] != ids[1]
            rollouts = Rollouts(home)
            paths = [rollouts.path_of(i) for i in ids if i is not None]
            assert paths[0] is not None
            assert paths[1] is not None
            assert paths[0] != paths[1]
            assert '"second"' not in paths[0].read_text()
            assert '"first"' not in paths[1].read_text()
            for number, ref in enumerate(ids):  # each thread resumes on the same warm process
                again = await run_codex(server, workspace, f"resume {number}", options=options, resume=ref)
                assert started(again).session_id == ref
                assert started(again).resumed
                sent = json.dumps(server.model_requests()[-1].body["input"])
                assert ('"first"' in sent, '"second"' in sent) == (number == 0, number == 1)
            assert (pool.spawned, pool.pids()) == (1, [pid])
    finally:
        await pool.aclose()
    assert pool.pids() == []


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_cancelled_run_retires_its_process_and_leaves_nothing_running(workspace: Path) -> None:
    pool = CodexPool(size=1)
    start = Recording()
    options = {"pool": pool, "start_process": start}
    command = FunctionCall(name="exec_command", args={"cmd": "sleep 300 & echo $! > pid.txt; wait"})
    try:
        async with FakeOpenAI(
            [ModelTurn(text="warm"), ModelTurn(function_calls=[command]), ModelTurn(text="after")]
        ) as server:
            await run_codex(server, workspace, options=options)
            events: list[UnifiedEvent] = []
            with anyio.fail_after(HANG_GUARD_S):
                params = codex_params(server, workspace, approval_mode="yolo", options=options)
                async with EventStream(params, strict=True) as stream:
                    async for event in stream:
                        events.append(event)
                        if isinstance(event, ToolUse):
                            while not (workspace / "pid.txt").exists() or not (workspace / "pid.txt").read_text():  # noqa: ASYNC110
                                await anyio.sleep(0.02)  # watching a file the command writes
                            sleeper = int((workspace / "pid.txt").read_text())
                            sleeper_started = start_time(sleeper)
                            stream.cancel()
            assert result(events).status == "cancelled"
            server_process = start.made[0]
            assert server_process.returncode is not None, "a cancelled run's process is never reused"
            assert not alive((sleeper, sleeper_started))
            after = await run_codex(server, workspace, options=options)
            assert text(after) == "after"
            assert (pool.spawned, len(start.made)) == (2, 2)
    finally:
        await pool.aclose()


async def test_a_crashed_warm_process_is_replaced(workspace: Path) -> None:
    pool = CodexPool(size=1)
    async with FakeOpenAI([ModelTurn(text="before"), ModelTurn(text="after")]) as server:
        try:
            await run_codex(server, workspace, options={"pool": pool})
            (pid,) = pool.pids()
            assert pid is not None
            began = start_time(pid)
            os.kill(pid, signal.SIGKILL)
            await gone(pid, began)
            events = await run_codex(server, workspace, options={"pool": pool})
            assert not [e for e in events if isinstance(e, ErrorEvent)]
            assert text(events) == "after"
            assert pool.spawned == 2
            assert pool.pids() != [pid]
        finally:
            await pool.aclose()


async def test_a_pool_size_of_zero_is_a_cold_process_every_run(workspace: Path) -> None:
    start = Recording()
    async with FakeOpenAI([ModelTurn(text="one"), ModelTurn(text="two")]) as server:
        for expected in ("one", "two"):
            events = await run_codex(server, workspace, options={"pool_size": 0, "start_process": start})
            assert text(events) == expected
            assert start.made[-1].returncode is not None, "the run's own process has ended with it"
    assert len(start.made) == 2
    assert start.made[0].pid != start.made[1].pid


async def test_allow_for_the_session_ends_with_the_run_on_a_warm_process(workspace: Path) -> None:
    """Codex's `acceptForSession` belongs to the thread: the next run on the same process asks again."""
    pool = CodexPool(size=1)
    command = FunctionCall(name="run_shell_command", args={"command": "echo one >> log.txt"})
    turns = [ModelTurn(function_calls=[command]), ModelTurn(text="Done."), ModelTurn(function_calls=[command])]
    asked: list[UserInputRequest] = []

    async def allow_always(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow(always=True)

    try:
        async with FakeOpenAI([*turns, ModelTurn(text="Done again.")]) as server:
            for _ in range(2):
                events = await run_codex(server, workspace, options={"pool": pool}, on_user_input=allow_always)
                assert result(events).status == "success"
            assert pool.spawned == 1
    finally:
        await pool.aclose()
    assert len(asked) == 2, "the second run's thread asked again"
    assert (workspace / "log.txt").read_text() == "one\none\n"


async def test_what_a_run_started_ends_with_it_while_its_warm_process_stays(workspace: Path) -> None:
    """A command that left a process of its own session behind (out of Codex's reach, carrying the mark) is
    ended when the run ends, though the app-server it ran under serves the next run."""
    pool = CodexPool(size=1)
    command = FunctionCall(name="exec_command", args={"cmd": "setsid sleep 300 > /dev/null 2>&1 & echo $! > pid.txt"})
    try:
        async with FakeOpenAI([ModelTurn(function_calls=[command]), ModelTurn(text="left it running")]) as server:
            events = await run_codex(server, workspace, approval_mode="yolo", options={"pool": pool})
        assert result(events).status == "success"
        sleeper = int((workspace / "pid.txt").read_text())
        assert not running(sleeper)
        (pid,) = pool.pids()
        assert pid is not None
        assert running(pid), "the app-server itself stays warm"
    finally:
        await pool.aclose()


async def test_a_stop_answer_retires_the_process(workspace: Path) -> None:
    pool = CodexPool(size=1)
    command = FunctionCall(name="run_shell_command", args={"command": "touch stopped.txt"})

    async def stop(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse.stop_run()

    try:
        async with FakeOpenAI([ModelTurn(function_calls=[command]), ModelTurn(text="never")]) as server:
            events = await run_codex(server, workspace, options={"pool": pool}, on_user_input=stop)
        assert result(events).status == "interrupted"
        assert pool.pids() == []
    finally:
        await pool.aclose()


async def test_a_turn_the_provider_failed_gives_a_healthy_process_back(workspace: Path) -> None:
    pool = CodexPool(size=1)
    turns = [ModelTurn(text="after", fault=Fault(kind="server_error"))]  # the fault leaves the turn queued
    try:
        async with FakeOpenAI(turns) as server:
            failed = await run_codex(server, workspace, options={"pool": pool})
            assert result(failed).status == "error"
            events = await run_codex(server, workspace, options={"pool": pool})
        assert text(events) == "after"
        assert pool.spawned == 1
    finally:
        await pool.aclose()


async def test_a_run_with_a_subagent_gives_its_process_back_with_both_threads_let_go(workspace: Path) -> None:
    """The end of a run lets go of its subagents' threads too (each unsubscribed, and awaited until unloaded when
    Codex unloads it), so the process serves the next run."""
    pool = CodexPool(size=1)
    spawn = FunctionCall(name="invoke_agent", args={"agent_name": "helper", "prompt": "Read notes.txt."})
    turns = [
        ModelTurn(function_calls=[spawn]),
        ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]),
        ModelTurn(function_calls=[FunctionCall(name="complete_task", args={"result": {"response": "It says alpha."}})]),
        ModelTurn(text="The helper says alpha."),
        ModelTurn(text="next"),
    ]
    try:
        async with FakeOpenAI(turns) as server:
            first = await run_codex(server, workspace, "Ask a helper.", approval_mode="yolo", options={"pool": pool})
            assert result(first).status == "success"
            assert any(e.type == "subagent_completed" for e in first)
            second = await run_codex(server, workspace, options={"pool": pool})
        assert text(second) == "next"
        assert not [e for e in second if e.type.startswith("subagent")]
        assert pool.spawned == 1
    finally:
        await pool.aclose()


async def test_runs_at_once_never_share_a_process(workspace: Path) -> None:
    """One run at a time per process: a second run while the warm one is busy gets a process of its own, which
    the pool (full) closes when that run ends."""
    pool = CodexPool(size=1)
    texts: list[str] = []

    async def one() -> None:
        texts.append(text(await run_codex(server, workspace, options={"pool": pool})))

    try:
        async with FakeOpenAI([ModelTurn(text="a"), ModelTurn(text="b")]) as server, anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
        assert sorted(texts) == ["a", "b"]
        assert pool.spawned == 2
        assert len(pool.pids()) == 1
    finally:
        await pool.aclose()


def test_runs_in_successive_event_loops_take_the_default_pools_warm_process(workspace: Path) -> None:
    """`execute_sync` runs each call in a new event loop (a blocking portal's), and a script may `anyio.run` each
    task: once a run's loop has ended, the next loop's run takes over the app-server it left warm in the default
    (process-wide) pool, on either backend, instead of starting another and leaving that one idle."""
    pool = default_pool()
    spawned, before = pool.spawned, set(pool.pids())
    turns = [ModelTurn(text=t) for t in ("one", "two", "three")]
    runs: list[list[UnifiedEvent]] = []
    try:
        with FakeOpenAI(turns) as server:
            runs.append(list(execute_sync(codex_params(server, workspace, "first"))))
            mine = set(pool.pids()) - before
            assert len(mine) == 1, (pool.pids(), before)
            runs.append(list(execute_sync(codex_params(server, workspace, "second"))))
            runs.append(anyio.run(partial(run_codex, server, workspace, "third"), backend="trio"))
            assert pool.spawned - spawned == 1, "a run started its own app-server"
            assert set(pool.pids()) - before == mine
        assert [text(events) for events in runs] == ["one", "two", "three"]
        assert [result(events).status for events in runs] == ["success"] * 3
        assert not [e for events in runs for e in events if isinstance(e, ErrorEvent)]
        ids = [started(events).session_id for events in runs]
        assert None not in ids
        assert len(set(ids)) == 3, "each run has a thread of its own"
        assert [started(events).resumed for events in runs] == [False] * 3
    finally:
        pool.close_now()
    assert not any(running(pid) for pid in mine if pid is not None)


def children(pid: int) -> list[int]:
    """The running processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        fields = stat_fields(int(entry.name)) if entry.name.isdigit() else None
        if fields is not None and fields[0] != b"Z" and int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


async def test_a_warm_process_serves_runs_of_other_mcp_servers_and_ends_each_run_s(workspace: Path) -> None:
    """MCP servers are the thread's (`thread/start`'s `config`), not the process's: a warm process serves the
    next run whatever its servers; the first run's stdio server ends with that run, and in the next run (no
    servers) the model's call to the first run's server tool reaches no server."""
    pool = CodexPool(size=1)
    local = StdioMcpServer(name="local", command=sys.executable, args=(str(mcp_echo_server.__file__),), timeout_s=20)
    call = FunctionCall(name="mcp__echo__echo", args={"text": "warm-mcp-hello"})
    turns = [
        ModelTurn(function_calls=[call]),
        ModelTurn(text="with"),
        ModelTurn(function_calls=[call]),
        ModelTurn(text="without"),
    ]
    try:
        async with FakeOpenAI(turns) as server:
            with mcp_echo_server.serving("http") as url:
                heard = len(mcp_echo_server.heard)
                echo = HttpMcpServer(name="echo", url=url, timeout_s=20)
                first = await run_codex(
                    server, workspace, approval_mode="yolo", options={"pool": pool}, mcp_servers=(echo, local)
                )
                assert result(first).status == "success", result(first).error
                assert mcp_echo_server.heard[heard:] == ["warm-mcp-hello"], "the run's server was called"
                (pid,) = pool.pids()
                assert pid is not None
                assert children(pid) == [], "the run's stdio MCP server ended with it"
                second = await run_codex(server, workspace, approval_mode="yolo", options={"pool": pool})
                assert result(second).status == "success", result(second).error
                assert pool.pids() == [pid], "the same warm process served it"
                assert mcp_echo_server.heard[heard:] == ["warm-mcp-hello"], "no server of the first run's in the second"
    finally:
        await pool.aclose()


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_warm_process_keeps_its_proxy_forwarder_for_its_runs_and_the_pool_s_close_ends_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy password in the host's environment: the warm process's forwarder serves both runs (one process, one
    forwarder, every model call through the host's proxy with its credentials); once the pool is closed its port
    refuses."""
    pool = CodexPool(size=1)
    recording = Recording()
    options = {"pool": pool, "start_process": recording}
    async with fake_proxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        try:
            async with FakeOpenAI([ModelTurn(text="one"), ModelTurn(text="two")]) as server:
                first = await run_codex(server, workspace, "first", options=options)
                asked = len(proxy.asked)
                second = await run_codex(server, workspace, "second", options=options)
            assert [text(first), text(second)] == ["one", "two"]
            [process] = recording.made
            given = urlsplit(_environ_of(process)["HTTPS_PROXY"])
            assert (given.hostname, given.username) == ("127.0.0.1", "unified0")
            assert 0 < asked < len(proxy.asked)  # the second run's calls went through the proxy too
            assert all(a.allowed and a.authorization == proxy.authorization for a in proxy.asked)
        finally:
            await pool.aclose()
    with pytest.raises(OSError, match="All connection attempts failed"):
        await anyio.connect_tcp("127.0.0.1", given.port or 0)


def _environ_of(process: AgentSubprocess) -> dict[str, str]:
    """The variables a process was started with, as the kernel keeps them (`/proc/<pid>/environ`)."""
    raw = Path(f"/proc/{process.pid}/environ").read_bytes()
    return dict(item.decode().partition("=")[::2] for item in raw.split(b"\0") if item)
