"""Every process the app-server started, found and ended: Codex runs each command in a session of its own.

`codex app-server` starts each command with `setsid` (VERIFIED on 0.171), so a command is not in the
app-server's process group: ending that group does not end it. A polite end (SIGTERM, closed stdin)
makes Codex kill its commands itself; a SIGKILL, a crash or `turn/interrupt` (which leaves the
command running) does not. So the run's processes are found two ways, and whatever of them outlives
the app-server is killed, with its process group:

- every process of the run carries a marker in its environment (`MARKER`, a value per run, which
  commands inherit): on Linux `/proc/<pid>/environ` finds them even once orphaned (`find_marked`);
- the app-server's descendants, remembered while it lives (pid and start time, which tells a reused
  pid apart): `descendants`, from `/proc` or, elsewhere, `ps`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import anyio.lowlevel

from unified._binary.process import descendants as process_descendants
from unified._binary.process import proc_pids, read_proc, stat_fields

__all__ = [
    "GONE_WITHIN_S",
    "MARKED_SLICE",
    "MARKER",
    "Process",
    "alive",
    "descendants",
    "end_all",
    "find_marked",
]

MARKER = "UNIFIED_CODEX_RUN"
"""The environment variable that marks a run's processes."""

Process = tuple[int, str]
"""(pid, start time): the start time tells a process apart from a later one that reuses its pid."""
_PROC = Path("/proc")


def _stat(pid: int | str) -> tuple[int, str] | None:
    """(parent pid, start time) of a live process; None when it is gone."""
    fields = stat_fields(pid)
    if fields is None or len(fields) < 20 or fields[0] == b"Z":
        return None  # a zombie has ended
    return int(fields[1]), fields[19].decode()


def _ps_table() -> dict[int, tuple[int, str]]:
    """pid → (parent pid, start time) of every process, from `ps` (where there is no /proc)."""
    try:
        done = subprocess.run(
            ["ps", "-A", "-o", "pid=,ppid=,lstart="], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    table = {}
    for line in done.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[0].isdigit() and parts[1].isdigit():
            table[int(parts[0])] = (int(parts[1]), parts[2].strip())
    return table


def descendants(pid: int) -> list[Process]:
    """Every process below `pid` (children, their children, ...): from /proc the binary layer's walk
    (`unified._binary.process.descendants`: its start times are this module's, as numbers), else `ps`."""
    if _PROC.is_dir():
        return [(child, str(started)) for child, started in process_descendants(pid)]
    table = _ps_table()
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found: list[Process] = []
    stack = list(children.get(pid, []))
    while stack:
        child = stack.pop()
        found.append((child, table[child][1]))
        stack += children.get(child, [])
    return found


MARKED_SLICE = 64
"""Processes `find_marked` looks at between two checkpoints (~0.2 ms of reads on the event loop)."""


async def find_marked(value: str) -> list[Process]:
    """Every live process whose environment says `MARKER=value` (Linux; elsewhere none are found), looked
    up on the event loop, `MARKED_SLICE` processes at a time with a checkpoint between slices: the
    end of every run looks, and a worker thread's round trip for it cost more than the look itself
    (~0.8 ms against ~0.2 ms for ~70 processes, on the run's last stretch after the exit), while a
    slice never holds the loop much longer than that, however many processes the machine runs."""
    pids = proc_pids()  # none where there is no /proc
    found: list[Process] = []
    for start in range(0, len(pids), MARKED_SLICE):
        if start:
            await anyio.lowlevel.checkpoint()
        found += _marked_among(pids[start : start + MARKED_SLICE], value)
    return found


def _marked_among(pids: Iterable[str], value: str) -> list[Process]:
    needle = f"{MARKER}={value}".encode()
    found: list[Process] = []
    own = os.getpid()
    for entry in pids:
        if int(entry) == own:
            continue
        environ = read_proc(entry, "environ")
        if (
            environ is not None
            and needle in environ  # in C, before the split (which most environments fail)
            and needle in environ.split(b"\0")
            and (stat := _stat(entry)) is not None
        ):
            found.append((int(entry), stat[1]))
    return found


def alive(process: Process) -> bool:
    """Whether this very process (not a later one with its pid) still runs."""
    pid, started = process
    if _PROC.is_dir():
        found = _stat(pid)
        return found is not None and found[1] == started
    return _ps_table().get(pid, (0, ""))[1] == started


GONE_WITHIN_S = 5.0
"""How long `end_all` waits for the processes it killed to be gone (SIGKILL is delivered asynchronously:
under load a killed process can still run for a moment after `kill` returns)."""


def end_all(processes: Iterable[Process]) -> list[int]:
    """SIGKILL each one still alive, and its process group, and wait (up to `GONE_WITHIN_S`) until they
    are gone; returns the pids that were still alive. Runs in a worker thread."""
    killed: list[Process] = []
    for process in processes:
        if not alive(process):
            continue
        pid = process[0]
        killed.append(process)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            group = os.getpgid(pid)
            if group == pid:
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + GONE_WITHIN_S
    while any(alive(process) for process in killed) and time.monotonic() < deadline:
        time.sleep(0.005)  # no event tells a non-child's end: look again shortly
    return [pid for pid, _ in killed]
