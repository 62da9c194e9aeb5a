"""Every process the app-server started, found and ended: Codex runs each command in a session of its own.

`codex app-server` starts each command with `setsid` (VERIFIED on 0.171), so a command is not in the
app-server's process group: ending that group does not end it. A polite end (SIGTERM, closed stdin)
makes Codex kill its commands itself; a SIGKILL, a crash or `turn/interrupt` (which leaves the
command running) does not. So the run's processes are found two ways, and whatever of them outlives
the app-server is killed, with its process group:

- every process of the run carries a marker in its environment (`MARKER`, a value per app-server process,
  which serves one run at a time, and which commands inherit): `/proc/<pid>/environ` finds them even once
  orphaned (`find_marked`), or `ps eww` where there is no /proc;
- the app-server's descendants, remembered while it lives (pid and start time, which tells a reused
  pid apart): the binary layer's `descendants`, from `/proc` or, elsewhere, `ps`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable

import anyio.lowlevel

from unified._binary.process import (
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

__all__ = ["GONE_WITHIN_S", "MARKED_SLICE", "MARKER", "end_all", "find_marked"]

MARKER = "UNIFIED_CODEX_RUN"
"""The environment variable that marks a run's processes."""


EXEC_ROUNDS = 2000
"""Looks again (5 ms apart, 10 s in all) at a process still inside execve before it is given up on
(`unified._binary.process.mid_exec`): microseconds when idle, longer on a loaded machine."""

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
