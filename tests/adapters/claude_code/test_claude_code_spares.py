"""Spare `claude` processes in process, on `FakeAgentProcess`: which runs take one, which leave one,
what a run in a spare sends, and that every process started is ended (the real binary:
tests/e2e/claude_code/test_claude_code_spares.py)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.adapters.claude_code.test_claude_code_run import FakeClaude, Line, starter, text_turn
from unified._adapters.claude_code import ClaudeSparePool
from unified._adapters.claude_code._control import ClaudeConnection
from unified._adapters.claude_code._options import claude_code_options
from unified._adapters.claude_code._spares import ClaudeSpare, default_spares
from unified._execute import EventStream
from unified.conversations import Conversation, ModelTurn, TextPart, UserTurn
from unified.errors import BackendUnavailable, ConfigurationError
from unified.events import ErrorEvent, Result, SessionStarted, UnifiedEvent
from unified.testing import FakeAgentProcess
from unified.types import ExecuteParams, StdioMcpServer

pytestmark = pytest.mark.anyio

TURN: Sequence[Line] = text_turn("Hello.")


async def run(cwd: Path, start: Callable[..., Any], **fields: Any) -> list[UnifiedEvent]:
    options = {"start_process": start, **fields.pop("options", {})}
    params = ExecuteParams(prompt="go", backend="claude-code", cwd=cwd, backend_options=options, **fields)
    with anyio.fail_after(30):
        async with EventStream(params, strict=True) as stream:
            return [event async for event in stream]


def session_flag(fake: FakeClaude) -> str:
    [flag] = [a for a in fake.process.argv if a.startswith("--session-id=")]
    return flag.removeprefix("--session-id=")


def kinds(fake: FakeClaude) -> list[str]:
    return [m.get("request", {}).get("subtype", m["type"]) for m in fake.sent]


async def test_the_next_new_session_run_takes_the_spare_its_predecessor_left(tmp_path: Path) -> None:
    pool = ClaudeSparePool(size=1)
    keep: list[FakeClaude] = []
    start = starter([TURN], keep)
    cold = await run(tmp_path, start, options={"pool": pool})
    assert len(keep) == 2, "the run's process, then a spare for the next run"
    spare = keep[1]
    assert kinds(spare) == ["initialize"], "a spare is sent its initialize, nothing more"
    assert not spare.process.closed
    warm = await run(tmp_path, start, options={"pool": pool})
    assert [e.type for e in warm] == [e.type for e in cold]
    assert kinds(spare) == ["initialize", "user"], "the run does not initialize a spare again"
    assert spare.process.closed, "the run ends the spare it took, as it ends a cold process"
    started = warm[0]
    assert isinstance(started, SessionStarted)
    assert started.session_id == session_flag(spare)
    final = warm[-1]
    assert isinstance(final, Result)
    assert (final.status, final.final_text) == ("success", "Hello.")
    assert (pool.started, pool.taken, len(keep)) == (2, 1, 3)
    await pool.aclose()
    assert all(fake.process.closed for fake in keep)


async def test_runs_that_name_their_session_or_start_mcp_servers_or_record_stay_cold(tmp_path: Path) -> None:
    """A resumed session is on the command line; a spare would start MCP servers ahead of a run that
    may never come; a transcript starts at initialize. None of them takes or leaves a spare."""
    pool = ClaudeSparePool(size=1)
    keep: list[FakeClaude] = []
    start = starter([TURN], keep)
    await run(tmp_path, start, options={"pool": pool})
    waiting = pool.spares()
    history = Conversation(turns=[UserTurn(parts=[TextPart(text="hi")]), ModelTurn(parts=[TextPart(text="hello")])])
    server = StdioMcpServer(name="tools", command="true")
    transcript: list[dict[str, Any]] = []
    await run(tmp_path, start, options={"pool": pool}, history=history)
    await run(tmp_path, start, options={"pool": pool}, mcp_servers=[server])
    await run(tmp_path, start, options={"pool": pool, "transcript": transcript})
    assert (pool.started, pool.taken, len(keep)) == (1, 0, 5)
    assert pool.spares() == waiting
    assert transcript[0]["msg"]["request"]["subtype"] == "initialize"
    await pool.aclose()
    assert all(fake.process.closed for fake in keep)


async def test_a_spare_that_died_is_passed_over_for_a_cold_start(tmp_path: Path) -> None:
    pool = ClaudeSparePool(size=1)
    keep: list[FakeClaude] = []
    start = starter([TURN], keep)
    await run(tmp_path, start, options={"pool": pool})
    keep[1].process.exit(1)
    events = await run(tmp_path, start, options={"pool": pool})
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert pool.taken == 0
    assert kinds(keep[2]) == ["initialize", "user"], "a cold process of its own"
    assert pool.spares()[0].connection.process is keep[3].process
    await pool.aclose()


async def test_a_spare_that_cannot_start_leaves_the_run_alone(tmp_path: Path) -> None:
    pool = ClaudeSparePool(size=1)
    keep: list[FakeClaude] = []
    first = starter([TURN], keep)

    def start(*args: Any) -> Any:
        if keep:  # the binary went away after the run's own start
            raise BackendUnavailable("could not start claude")
        return first(*args)

    events = await run(tmp_path, start, options={"pool": pool})
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"
    assert (pool.started, pool.spares()) == (0, [])


async def test_pool_size_keeps_spares_in_the_default_pool_and_zero_starts_none(tmp_path: Path) -> None:
    keep: list[FakeClaude] = []
    start = starter([TURN], keep)
    await run(tmp_path, start)
    assert len(keep) == 1, "pool_size 0 (the default): one process per run, nothing ahead"
    pool = default_spares()
    try:
        await run(tmp_path, start, options={"pool_size": 2})
        assert pool.size == 2
        assert [s.connection.process for s in pool.spares()] == [keep[2].process]
    finally:
        await pool.aclose()
    assert all(fake.process.closed for fake in keep)


def test_pool_options_are_checked_before_any_process_starts() -> None:
    with pytest.raises(ConfigurationError, match="pool_size"):
        claude_code_options({"pool_size": -1})
    with pytest.raises(ConfigurationError, match="pool"):
        claude_code_options({"pool": "default"})
    assert claude_code_options({}).pool_size == 0


def test_a_killed_spare_removes_its_own_live_process_entry_and_no_other(tmp_path: Path) -> None:
    """A SIGKILLed CLI cannot remove its `sessions/<pid>.json`; the spare does, once the process is gone, and
    only an entry naming its own session (a later CLI given the same pid writes its own session there)."""
    for named, removed in (("ours", True), ("a later process's", False)):
        entries = tmp_path / named
        entries.mkdir()
        entry = entries / "4321.json"
        entry.write_text(json.dumps({"pid": 4321, "sessionId": named}))
        spare = ClaudeSpare(ClaudeConnection(FakeAgentProcess(pid=4321), "ours", entries=entries), "init")
        spare.kill()
        assert entry.exists() is not removed, named


async def test_a_spare_that_ends_before_answering_the_prompt_gives_way_to_a_cold_start(tmp_path: Path) -> None:
    """Its stdout ends before any line of the run: nothing of the run happened, so it runs cold instead (the
    real binary, killed once taken: tests/e2e/claude_code/test_claude_code_spares.py)."""
    pool = ClaudeSparePool(size=1)
    keep: list[FakeClaude] = []
    start = starter([TURN], keep)
    cold = await run(tmp_path, start, options={"pool": pool})
    spare = keep[1]
    spare.turns = [["EXIT"]]  # exits on the run's prompt, having printed nothing of it
    events = await run(tmp_path, start, options={"pool": pool})
    assert [e.type for e in events] == [e.type for e in cold]
    [started] = [e for e in events if isinstance(e, SessionStarted)]
    [served] = [fake for fake in keep[2:] if kinds(fake) == ["initialize", "user"]]
    assert started.session_id == session_flag(served) != session_flag(spare)
    assert spare.process.closed
    assert pool.taken == 1
    await pool.aclose()
    assert all(fake.process.closed for fake in keep)


async def test_a_spare_that_dies_once_the_run_has_begun_fails_the_run(tmp_path: Path) -> None:
    """Once a line of the run came back, its process's death is the run's: no second start (it could repeat
    what the first one did), the typed error of a cold process's crash."""
    pool = ClaudeSparePool(size=1)
    keep: list[FakeClaude] = []
    start = starter([TURN], keep)
    await run(tmp_path, start, options={"pool": pool})
    keep[1].turns = [[text_turn("Hel")[0], "EXIT"]]
    events = await run(tmp_path, start, options={"pool": pool})
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_error"
    assert "exited with code 2" in error.message
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    assert [fake for fake in keep[2:] if "user" in kinds(fake)] == [], "no cold start of the run"
    await pool.aclose()
