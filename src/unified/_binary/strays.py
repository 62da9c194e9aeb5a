"""What an agent binary started, found and ended after it: a model's commands run outside its process group.

Agent binaries run a model's commands where a signal to the binary's process group does not reach them
(VERIFIED on the pinned versions): `codex app-server` `setsid`s each command, Claude Code gives each Bash
command a process group of its own, and the gemini CLI runs each on a pseudo-terminal, a session of its
own. A polite end (SIGTERM, closed stdin) makes a binary end its commands itself; a crash, a SIGKILL or
Codex's `turn/interrupt` does not, and a command that forks into the background leaves the binary's tree
at once. So every process of a binary carries a marker in its environment (`MARKER`, a value per binary
process, which its commands inherit): `/proc/<pid>/environ` finds them even once orphaned
(`find_marked`), or `ps eww` where there is no /proc, and whatever of them outlives the binary is killed
with its process group (`end_all`). `AgentSubprocess` marks every process it starts and ends the marked
ones after it; a backend that sets the marker itself (codex, whose warm process ends each run's commands
at the run's end) does the looking itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable

import anyio.lowlevel

from unified._binary.proctable import (
    Process,
    has_proc,
    is_still,
    mid_exec,
    proc_pids,
    process_table,
    read_proc,
    start_time,
    still_running,
)
from unified._pgroup import signal_verified

__all__ = ["GONE_WITHIN_S", "MARKED_SLICE", "MARKER", "end_all", "find_marked", "find_marked_now"]

MARKER = "UNIFIED_AGENT_PROCESS"
"""The environment variable that marks the processes of one binary process (and of its commands)."""


EXEC_ROUNDS = 2000
"""Looks again (5 ms apart, 10 s in all) at a process still inside execve before it is given up on
(`unified._binary.proctable.mid_exec`): microseconds when idle, longer on a loaded machine."""

MARKED_SLICE = 64
"""Processes `find_marked` looks at between two checkpoints (~0.2 ms of reads on the event loop)."""


async def find_marked(value: str) -> list[Process]:
    """Every live process whose environment says `MARKER=value`.

    From /proc it is looked up on the event loop, `MARKED_SLICE` processes at a time with a checkpoint
    between slices: the end of every run looks, and a worker thread's round trip for it cost more than
    the look itself (~0.8 ms against ~0.2 ms for ~70 processes, on the run's last stretch after the
    exit), while a slice never holds the loop much longer than that, however many processes the
    machine runs. Where there is no /proc (macOS), `ps` lists them, in a worker thread."""
    if not has_proc():
        return await anyio.to_thread.run_sync(_marked_by_ps, value)
    pids = proc_pids()
    found: list[Process] = []
    later: list[str] = []
    for start in range(0, len(pids), MARKED_SLICE):
        if start:
            await anyio.lowlevel.checkpoint()
        found += _marked_among(pids[start : start + MARKED_SLICE], value, later)
    for _ in range(EXEC_ROUNDS):  # a process inside execve shows its environment in a moment: look again
        if not later:
            break
        await anyio.sleep(0.005)
        pending, later = later, []
        found += _marked_among(pending, value, later)
    return found


def find_marked_now(value: str) -> list[Process]:
    """`find_marked` for a caller without an event loop (`AgentSubprocess.kill`): the same look, blocking."""
    if not has_proc():
        return _marked_by_ps(value)
    later: list[str] = []
    found = _marked_among(proc_pids(), value, later)
    for _ in range(EXEC_ROUNDS):
        if not later:
            break
        time.sleep(0.005)
        pending, later = later, []
        found += _marked_among(pending, value, later)
    return found


def _marked_among(pids: Iterable[str], value: str, later: list[str]) -> list[Process]:
    """The marked processes of `pids`; those inside execve (no environment to read yet) go to `later`."""
    needle = f"{MARKER}={value}".encode()
    found: list[Process] = []
    own = os.getpid()
    for entry in pids:
        if int(entry) == own:
            continue
        environ = read_proc(entry, "environ")
        if environ == b"" and mid_exec(entry):
            later.append(entry)
            continue
        if environ == b"":  # the exec may have ended between the two reads
            environ = read_proc(entry, "environ")
        if (
            environ is not None
            and needle in environ  # in C, before the split (which most environments fail)
            and needle in environ.split(b"\0")
            and (started := start_time(int(entry))) is not None
        ):
            found.append((int(entry), started))
    return found


def _marked_by_ps(value: str) -> list[Process]:
    """`find_marked` where there is no /proc (macOS): `ps` shows each process's environment after its command
    line (`e`), one whole line a process (`ww`); the marker is one of its words."""
    needle = f"{MARKER}={value}"
    try:
        done = subprocess.run(
            ["ps", "eww", "-A", "-o", "pid=,args="],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    own = os.getpid()
    pids = [
        int(words[0])
        for line in done.stdout.splitlines()
        if (words := line.split()) and words[0].isdigit() and int(words[0]) != own and needle in words[1:]
    ]
    table = process_table() if pids else {}
    return [(pid, table[pid][1]) for pid in pids if pid in table]


GONE_WITHIN_S = 5.0
"""How long `end_all` waits for the processes it killed to be gone (SIGKILL is delivered asynchronously:
under load a killed process can still run for a moment after `kill` returns)."""


def end_all(processes: Iterable[Process]) -> list[int]:
    """SIGKILL each one still alive, and its process group, and wait (up to `GONE_WITHIN_S`) until they
    are gone; returns the pids that were still alive. Runs in a worker thread."""
    killed: list[Process] = []
    for process in still_running(processes):
        killed.append(process)
        # checked to be this very process (its start time) through a pidfd opened first: its pid, and the
        # number of the group it leads, may have gone to a stranger since it was found
        signal_verified(process[0], signal.SIGKILL, is_still(process), group=True)
    deadline = time.monotonic() + GONE_WITHIN_S
    while still_running(killed) and time.monotonic() < deadline:
        time.sleep(0.005)  # no event tells a non-child's end: look again shortly
    return [pid for pid, _ in killed]
