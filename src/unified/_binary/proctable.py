"""The machine's processes, as /proc shows them (or `ps`, where there is none, as on macOS): who started
whom, when each started, and what each carries in its environment.

A process is named by its pid and its start time (`Process`), so a later process that reuses a pid is
never taken for it; every look is a fresh read, never a cache. The agent-binary layer asks these
questions to end what a binary started (`process.AgentSubprocess`, `strays`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = [
    "Process",
    "alive",
    "descendants",
    "has_proc",
    "is_still",
    "mid_exec",
    "proc_pids",
    "process_table",
    "read_proc",
    "start_time",
    "stat_fields",
    "still_running",
    "stopped",
]


def read_proc(pid: int | str, name: str) -> bytes | None:
    """/proc/<pid>/<name> (`stat`, `environ`), None when the process is gone (or /proc is not there).

    Plain `os.open` / `os.read`: the end of every run reads the `stat` of every process on the
    machine (`descendants`), and pathlib's `read_text` cost four times as much (0.94 ms against
    0.25 ms for ~100 processes here), on the event loop when `close` lists the descendants."""
    try:
        fd = os.open(f"/proc/{pid}/{name}", os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def proc_pids() -> list[str]:
    """The pid of every process, as /proc lists them (none where there is no /proc)."""
    try:
        return [entry for entry in os.listdir(_PROC) if entry.isdigit()]
    except OSError:
        return []


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command's name (field 3 on), None when it is gone."""
    stat = read_proc(pid, "stat")
    return stat[stat.rfind(b")") + 2 :].split() if stat else None


def stopped(pid: int | str) -> bool:
    """Whether the process is stopped (state `T`: SIGSTOP, a ^Z, a frozen cgroup; `t`: held by a debugger): it
    answers nothing until it is continued, so a wait for its answer is skipped. False where there is no /proc."""
    fields = stat_fields(pid)
    return fields is not None and fields[0] in (b"T", b"t")


_PF_KTHREAD = 0x00200000
"""/proc/<pid>/stat `flags` bit of a kernel thread (no environment, ever)."""


def mid_exec(pid: int | str) -> bool:
    """Whether the process is inside `execve`: /proc shows it no environment yet (`env_end`, stat field 51,
    is 0) though it will have one. The window opens where a parent sees a start (the kernel closes the
    close-on-exec descriptors before it lays out the new program's environment): 116 of 1,000 `sleep`s read
    at once after `Popen` returned showed none. A look for a marker in the environment must look again
    then. (`unified.tools._watchdog._mid_exec` is the same check in the watchdog's standard-library script.)"""
    fields = stat_fields(pid)
    if fields is None or fields[0] in (b"Z", b"X") or len(fields) < 49:
        return False
    return fields[48] == b"0" and not int(fields[6]) & _PF_KTHREAD


Process = tuple[int, str]
"""(pid, start time): the start time tells a process apart from a later one that reuses its pid. From
/proc the start is field 22 of its `stat` (clock ticks since boot), from `ps` its `lstart`; either way
compared only with a start read the same way on the same machine."""
_PROC = Path("/proc")


def _ps_table(pid: int | None = None) -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every live process (or of `pid` alone), from `ps`: where
    there is no /proc (macOS). Zombies are left out: they have ended, and they have no children."""
    selection = ["-p", str(pid)] if pid is not None else ["-A"]
    try:
        done = subprocess.run(
            ["ps", *selection, "-o", "pid=,ppid=,stat=,lstart="],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    table = {}
    for line in done.stdout.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[0].isdigit() and parts[1].isdigit() and not parts[2].startswith("Z"):
            table[int(parts[0])] = (int(parts[1]), parts[3].strip())
    return table


def _proc_entry(pid: int | str) -> tuple[int, str] | None:
    """(parent pid, start time) of a live process from /proc/<pid>/stat; None when it is gone or a zombie none of
    whose threads runs on (`_threads_run_on`)."""
    fields = stat_fields(pid)
    if fields is None or len(fields) < 20 or not fields[1].isdigit():
        return None
    if fields[0] == b"Z" and not _threads_run_on(pid):
        return None
    return int(fields[1]), fields[19].decode()


def _threads_run_on(pid: int | str) -> bool:
    """Whether a thread of the process other than its main one has not ended. A process whose main thread ended
    (`pthread_exit` in `main`, `SYS_exit`) while others run on shows Z in /proc, and was taken for ended: left
    running by the kill of a binary's descendants, its own children with it (`unified.tools._watchdog._live_thread`
    is the same check in the watchdog's standard-library script). Read for a Z alone: one listing."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tids:
        if tid != str(pid):
            fields = stat_fields(f"{pid}/task/{tid}")
            if fields is not None and fields[0] not in (b"Z", b"X"):
                return True
    return False


def has_proc() -> bool:
    """Whether this machine has /proc (Linux); elsewhere (macOS) processes are listed by `ps`."""
    return _PROC.is_dir()


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) of every live process: from /proc, or from `ps` where there is none."""
    if not has_proc():
        return _ps_table()
    table = {}
    for entry in proc_pids():
        found = _proc_entry(entry)
        if found is not None:
            table[int(entry)] = found
    return table


def start_time(pid: int) -> str | None:
    """The start time of the live process `pid` (see `Process`); None when it is gone."""
    found = _proc_entry(pid) if has_proc() else _ps_table(pid).get(pid)
    return found[1] if found is not None else None


def alive(process: Process) -> bool:
    """Whether this very process (not a later one with its pid) still runs."""
    return start_time(process[0]) == process[1]


def is_still(process: Process) -> Callable[[int], bool]:
    """A `signal_verified` check: the pid is still this very process's."""
    return lambda _pid: alive(process)


def still_running(processes: Iterable[Process]) -> list[Process]:
    """Those of `processes` that still run (not later ones with their pids): one /proc read each, or one
    `ps` for them all where there is no /proc."""
    wanted = list(processes)
    table = {pid: _proc_entry(pid) for pid, _ in wanted} if has_proc() else _ps_table()
    return [process for process in wanted if (table.get(process[0]) or (0, None))[1] == process[1]]


def descendants(root: int) -> frozenset[Process]:
    """Every live descendant of `root` (children, their children, ...), from one `process_table`.

    From /proc not by walking down /proc/<pid>/task/<tid>/children (a read per thread, not per process): the
    dentries that walk leaves under a multi-threaded process's /proc entry made reaping it cost
    0.1-3.7 ms of kernel time (d_invalidate of them all, in `wait4`) against ~0.07 ms, at the end of
    every codex run (app-server has ~20 threads), more than the whole scan costs. Where there is no /proc
    (macOS), `ps` lists them: a child that left the group (Claude Code's Bash commands, Codex's) is
    found there too."""
    children: dict[int, list[Process]] = {}
    for pid, (parent, started) in process_table().items():
        children.setdefault(parent, []).append((pid, started))
    found: set[Process] = set()
    pending = list(children.get(root, []))
    while pending:
        process = pending.pop()
        if process not in found:
            found.add(process)
            pending.extend(children.get(process[0], []))
    return frozenset(found)
