"""Spare `claude` processes (`unified._binary.spares`): the next new session's process, started ahead.

A `claude` process is one session, fixed on its command line, so a run's process cannot serve the
next run; a spare is started with the next run's launch and a `--session-id` of its own, and sent
its `initialize` at once: it answers when it is up, and the answer waits in the pipe for the run
that takes it. A cold start is ~0.45 s to the first output here, most of it the binary starting.

What a waiting spare has done, checked with 2.1.332 (tests/e2e/claude_code/test_claude_code_spares.py):
no model request and no session file (`projects/`) before its first user message; it writes its
config (`.claude.json`, as every start does) and its live-process entry (`sessions/<pid>.json`,
naming its session id, read by no session listing), which it removes when it ends on SIGTERM or
at the end of its input, not when it is killed (SIGKILL: `close_now` at interpreter exit, or a
spare that died on its own); its connection removes a stale one once the process is reaped, as
for every `claude` process of unified (`ClaudeConnection.forget_entry`). It does
start the run's MCP servers at once, so a run with `mcp_servers` neither takes nor leaves a spare
(an MCP server must not be started for a run that may never come); nor does a run that records a
transcript (it would miss the spare's `initialize`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from unified._adapters.claude_code._control import ClaudeConnection
from unified._adapters.claude_code._key_file import KeyLease
from unified._binary.pool import DEFAULT_IDLE_TTL, ProcessWide
from unified._binary.process import ProcessStarter
from unified._binary.spares import SparePool

__all__ = ["ClaudeSpare", "ClaudeSparePool", "default_spares", "start_spare"]


@dataclass(eq=False, slots=True)
class ClaudeSpare:
    """A started `claude` (its connection knows its session id) and the id of the `initialize` it was sent."""

    connection: ClaudeConnection
    initialize_id: str
    _ready: bool = False

    @property
    def session_id(self) -> str:
        return self.connection.session_id

    @property
    def alive(self) -> bool:
        return self.connection.process.returncode is None

    @property
    def pid(self) -> int | None:
        return self.connection.process.pid

    async def close(self) -> None:
        await self.connection.close()

    def kill(self) -> None:
        """SIGKILL, no wait for a polite exit (interpreter exit: a grace per spare would delay it, and
        a busy machine may outlast any grace); the connection then removes the entry the CLI could not."""
        self.connection.kill()

    async def initialized(self) -> None:
        """Returns once the CLI has answered its `initialize` (or ended): the spare is as ready as it
        gets. For a benchmark or a test that must not time a spare still starting; a run needs no
        such wait. It reads the process: call it on the loop that will take the spare, or on one that
        has finished by then (an asyncio loop still running keeps its watch of the pipes)."""
        if not self._ready:
            await self.connection.read_ahead()
            self._ready = True


class ClaudeSparePool(SparePool[ClaudeSpare]):
    """Spare `claude` processes, at most `size` of them, each ended after `idle_ttl` seconds unused."""

    def __init__(self, size: int = 1, idle_ttl: float = DEFAULT_IDLE_TTL) -> None:
        super().__init__(size, idle_ttl)


default_spares = ProcessWide(ClaudeSparePool)
"""The process-wide pool (its size set by the runs' `pool_size`), its spares killed at interpreter exit."""


async def start_spare(
    starter: ProcessStarter,
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    *,
    session_id: str,
    forward_subagent_text: bool,
    entries: Path | None = None,
    key_lease: KeyLease | None = None,
) -> ClaudeSpare:
    """Start the CLI and send its `initialize` (a line into an empty pipe: no wait for the CLI);
    `entries` is its home's live-process entries folder, `key_lease` its hold on its key file, given
    back when it ends (see `ClaudeConnection`)."""
    try:
        process = starter(argv, cwd, env)
    except BaseException:
        if key_lease is not None:
            key_lease.release()
        raise
    connection = ClaudeConnection(process, session_id, entries=entries, key_lease=key_lease)
    try:
        request_id = await connection.initialize(forward_subagent_text)
    except ConnectionError:
        await connection.close()
        raise
    return ClaudeSpare(connection, request_id)
