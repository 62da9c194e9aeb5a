"""Issue 29, round 36: what a cheaper JSON-RPC read must keep. Every line the connection reads takes anyio's lock, whose
cancellation check (2-3 us on asyncio 3.11) is made even when the read then waits for output, itself a cancellation
point; round 36 built a read that skipped the check after a wait and found it not the same: a wait on the process's
lasting asyncio watch can end in the very turn of the loop it began (the loop had seen the output, its callback not
yet run), and anyio spares a task whose wait is already over, so a reader whose scope was cancelled took the line
(`warm=True` below). Made exact (an epoll poll before each wait), it saved 0.55 us a line: not kept (bench/README.md).

These pin that a cancelled reader stops, before anything is taken, in every case it stops now: a line already read,
output already in the pipe (a new process's first read, a warm one's after the loop took the edge), the end of the
output, and while it waits; on asyncio and trio, over a real child process."""

from __future__ import annotations

import os
import select
import sys
import textwrap
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._binary.jsonrpc import ConnectionClosed, Inbox, JsonRpcConnection, Message, as_dict
from unified._binary.process import AgentSubprocess

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]  # real child processes

ECHO = """
import json, sys
for line in sys.stdin:
    notes = [{"method": "note", "params": {"sessionId": "s", "n": n}} for n in json.loads(line)["params"]["emit"]]
    sys.stdout.write("".join(json.dumps(note) + "\\n" for note in notes))
    sys.stdout.flush()
"""
"""Writes, for each notification it is sent, the notes its `emit` lists, for session "s", in one write (a pipe takes
a write of under 4 KiB whole, so a read that finds one finds all)."""


def by_session(message: Message) -> str | None:
    session = as_dict(message.get("params")).get("sessionId")
    return session if isinstance(session, str) else None


def echo(tmp_path: Path) -> tuple[AgentSubprocess, JsonRpcConnection, Inbox]:
    process = AgentSubprocess([sys.executable, "-c", textwrap.dedent(ECHO)], cwd=tmp_path, env=dict(os.environ))
    connection = JsonRpcConnection(process, route=by_session, jsonrpc_field=False)
    return process, connection, connection.open_inbox("s")


def number(message: object) -> int:
    assert isinstance(message, dict), message
    return int(message["params"]["n"])


def readable(fd: int) -> None:
    """Until the pipe `fd` holds output (bounded by the hang guard): what the child wrote, not yet read."""
    assert select.select([fd], [], [], HANG_GUARD_S)[0], "the child wrote nothing"


async def test_a_cancelled_reader_stops_before_a_line_already_read(tmp_path: Path) -> None:
    """Two lines come in one read: the second is taken from the process's buffer, without a wait. A cancelled
    reader stops there, and the line stays for the next read."""
    process, connection, inbox = echo(tmp_path)
    try:
        await connection.notify("emit", {"emit": [1, 2]})
        readable(process.popen.stdout.fileno())  # type: ignore[union-attr]
        assert number(await connection.receive(inbox)) == 1
        with anyio.CancelScope() as scope:
            scope.cancel()
            await connection.receive(inbox)
            pytest.fail("a cancelled receive returned")
        assert scope.cancelled_caught
        assert number(await connection.receive(inbox)) == 2
    finally:
        await process.close()


@pytest.mark.parametrize("warm", [False, True])
async def test_a_cancelled_reader_stops_before_output_already_in_the_pipe(tmp_path: Path, warm: bool) -> None:
    """The line is in the pipe, not yet read, and the read would take it without waiting: a new process's first
    read tries the pipe first; on a warm one (a line read before), the loop has taken the pipe's edge meanwhile
    (asyncio's watch keeps it for the next read). A cancelled reader stops there, and the line is read after."""
    process, connection, inbox = echo(tmp_path)
    try:
        if warm:
            await connection.notify("emit", {"emit": [6]})
            assert number(await connection.receive(inbox)) == 6
        await connection.notify("emit", {"emit": [7]})
        readable(process.popen.stdout.fileno())  # type: ignore[union-attr]
        if warm:
            await anyio.lowlevel.checkpoint()  # a turn of the loop: asyncio's watch takes the edge
        with anyio.CancelScope() as scope:
            scope.cancel()
            await connection.receive(inbox)
            pytest.fail("a cancelled receive returned")
        assert scope.cancelled_caught
        assert number(await connection.receive(inbox)) == 7
    finally:
        await process.close()


async def test_a_cancelled_reader_stops_at_the_end_of_the_output(tmp_path: Path) -> None:
    """The child has exited: the read would find the end without waiting. A cancelled reader stops there; the
    next read finds the connection closed."""
    process, connection, inbox = echo(tmp_path)
    try:
        await process.end_input()
        assert await process.wait(HANG_GUARD_S) == 0
        readable(process.popen.stdout.fileno())  # type: ignore[union-attr]
        with anyio.CancelScope() as scope:
            scope.cancel()
            await connection.receive(inbox)
            pytest.fail("a cancelled receive returned")
        assert scope.cancelled_caught
        assert not connection.closed
        with pytest.raises(ConnectionClosed):
            await connection.receive(inbox)
    finally:
        await process.close()


async def test_a_reader_cancelled_while_it_waits_stops(tmp_path: Path) -> None:
    """Nothing comes: the reader waits, and its scope's cancellation (by a task that runs once the reader has
    yielded) ends the wait; what comes after is read."""
    process, connection, inbox = echo(tmp_path)
    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_cancel, scope)
                await connection.receive(inbox)
                pytest.fail("a receive returned with nothing written")
        assert scope.cancelled_caught
        await connection.notify("emit", {"emit": [3]})
        assert number(await connection.receive(inbox)) == 3
    finally:
        await process.close()


async def _cancel(scope: anyio.CancelScope) -> None:
    scope.cancel()
