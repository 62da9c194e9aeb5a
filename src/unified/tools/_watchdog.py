"""Keep every process a tool runtime's shell commands start reachable, and kill them when the
runtime closes or its host process dies, even by `kill -9`.

Containment, where the machine allows it: a cgroup v2 per runtime (`Containment`), with one child
cgroup per shell call. A command's shell moves itself into its call's cgroup before it runs
anything, through a descriptor the host passes it (and it closes at once), so every process it
starts stays inside whatever it does with sessions, process groups or job control (`setsid`,
`set -m`, a double fork, `disown`, `env -i`); killing a cgroup (`cgroup.kill`, or SIGKILL to each
member until none is left) reaches all of them.

Fallback, where cgroups are not writable: process groups. Each command leads its own group, and
every process carries the runtime's marker (`OWNER_VARIABLE` in its environment); a kill takes the
known groups and then every process of the machine whose environment holds the marker, so a
process that left its group (`setsid`, `set -m`) is still found, unless it also dropped its
environment.

Host death: a small helper (the watchdog) is started per runtime, detached from the host and
holding the read end of a pipe from it. The host tells it, on that pipe only, the runtime's
marker, its cgroup and each group it starts and ends; at end of file (the host died, or the
runtime closed) it kills all of that and exits. Neither its command line nor its environment names
the marker or the cgroup, so a tool's process cannot pick it out by them; it ignores the signals a
terminal or a polite kill sends; and if a tool kills it anyway, the host starts another on its next
shell call, the host's own close still kills everything, and the next runtime on the machine reaps
any cgroup whose host is gone (`Containment.reap_orphans`).

A process found by its number (in `cgroup.procs`, in /proc) is signalled through a pidfd opened
before it is checked to be ours (in the cgroup, in the group, carrying the marker): a process that
ended meanwhile, and a stranger that got its number, is never signalled (`_kill_checked`, Linux >= 5.3;
where there are no pidfds, the check and `kill` follow each other, and that moment is the window left).

This file runs as a script (`python -I -S _watchdog.py`), so it imports only the standard library
(`unified._pgroup` does for the host what `_kill_checked` does here).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

__all__ = ["OWNER_VARIABLE", "group_members", "kill_owned_group", "main", "owned_by"]

OWNER_VARIABLE = "UNIFIED_SHELL_OWNER"
"""Set in every shell a runtime starts; its value names the runtime (a random token)."""

CGROUP_PREFIX = "unified-shells-"
"""Runtime cgroups are `<prefix><host pid>.<its pid namespace>-<token>` beside the host's own cgroup's children:
a host pid means something only in its pid namespace (`_pid_namespace`), and runtimes of other namespaces (a
container's, a test's) may share that parent cgroup. (`<prefix><host pid>-<token>`: an older version's.)"""

KILL_ROUNDS = 200
"""Rounds of SIGKILL over a cgroup's members without cgroup.kill (each round waits a few ms)."""

EXEC_ROUNDS = 2000
"""Further rounds (5 ms each, 10 s in all) spent waiting for a process inside execve to show its environment
(`_mid_exec`): microseconds on an idle machine, but a loaded one can leave the process unscheduled for long;
a kill that gave up on it sooner would leave it running."""


PIDFD_SIGNAL_PROCESS_GROUP = 4
"""`pidfd_send_signal` flag (Linux 6.9): signal the group the pidfd's process leads."""


def _pidfd(pid: int) -> int | None:
    """A pidfd for the process that has `pid` now, None where there are no pidfds; ProcessLookupError when
    there is no such process."""
    if not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise
    except OSError:  # a kernel without pidfds
        return None


def _kill_checked(
    pids: Iterable[int],
    check: Callable[[list[int]], Iterable[int]],
    group: int | None = None,
    dying: dict[int, int] | None = None,
) -> int:
    """SIGKILL those of `pids` that `check` (given them all) keeps, its checks made once a pidfd for each was
    opened; with `group`, that group whole through its leader's pidfd when the leader is one kept (Linux >=
    6.9). How many were sent a kill. With `dying` (`_killed`), the pidfd of each process sent one is kept there
    by pid instead of closed, so the caller sees each one end (`_forget_ended`)."""
    fds: dict[int, int | None] = {}
    try:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                fds[pid] = _pidfd(pid)
        kept = list(check(list(fds)))
        leader = fds.get(group) if group is not None and group in kept else None
        sent: list[int] = []
        if leader is not None:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(leader, signal.SIGKILL, None, PIDFD_SIGNAL_PROCESS_GROUP)
                sent = kept
        if not sent:
            for pid in kept:
                fd = fds[pid]
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    signal.pidfd_send_signal(fd, signal.SIGKILL) if fd is not None else os.kill(pid, signal.SIGKILL)
                    sent.append(pid)
        for pid in sent:
            if dying is not None and (fd := fds.pop(pid)) is not None:
                with contextlib.suppress(KeyError):
                    os.close(dying.pop(pid))  # an earlier kill's pidfd for this number
                dying[pid] = fd
        return len(sent)
    finally:
        for fd in fds.values():
            if fd is not None:
                os.close(fd)


@contextlib.contextmanager
def _killed() -> Iterator[dict[int, int]]:
    """Where a kill keeps the pidfds of the processes it sent SIGKILL (`_kill_checked`) until it sees them end;
    whatever is left is closed at the end.

    A kill that returns must leave what it killed dead, and /proc cannot tell it so: SIGKILL lands
    asynchronously, and a process it reached first lets go of its memory (its address space torn down then, long
    on a loaded machine) and only then becomes a zombie. Meanwhile it is listed, not a zombie, and reading its
    environment fails with ESRCH as for a process that is gone (`_carries` says False): a kill that took that for
    the end returned with it still running (measured: 6 of 300 processes killed as their 100,000-variable
    environment was laid out, 1 of 600 `sleep`s killed as they started, with two CPU burners and a fork storm
    beside them; every one in that state). Its pidfd turns readable once it is a zombie."""
    dying: dict[int, int] = {}
    try:
        yield dying
    finally:
        for fd in dying.values():
            os.close(fd)


def _forget_ended(dying: dict[int, int]) -> None:
    """Close and drop the pidfds in `dying` whose process has ended (a zombie, or reaped: the pidfd is readable)."""
    poller = select.poll()
    for fd in dying.values():
        poller.register(fd, select.POLLIN)
    ended = {fd for fd, _events in poller.poll(0)}
    for pid, fd in list(dying.items()):
        if fd in ended:
            os.close(fd)
            del dying[pid]


# --- cgroup v2 -------------------------------------------------------------------------------------


def _cgroup2_mount() -> Path | None:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        head, _, tail = line.partition(" - ")
        if tail.split(" ", 1)[0] == "cgroup2":
            return Path(head.split()[4])
    return None


def _own_cgroup() -> str | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return line[3:]
    except OSError:
        return None
    return None


def cgroup_members(path: Path) -> list[int]:
    """The processes of a cgroup and of all its descendants."""
    pids: list[int] = []
    with contextlib.suppress(OSError):
        for directory, _dirs, _files in os.walk(path):
            with contextlib.suppress(OSError):
                pids.extend(int(p) for p in Path(directory, "cgroup.procs").read_text().split())
    return pids


def _still_members(path: Path) -> Callable[[list[int]], Iterable[int]]:
    """A `_kill_checked` check: those still in the cgroup (listed again, once their pidfds are open)."""
    return lambda pids: set(pids) & set(cgroup_members(path))


def kill_cgroup(path: Path) -> bool:
    """SIGKILL every process of a cgroup (and its descendants), wait until none is left and each it killed has
    ended (`_killed`), and remove the cgroups; whether it ended empty.

    `cgroup.procs` is not the end: it drops a process once the process has left its cgroup (`cgroup_exit`),
    before it is a zombie, and kernels before 5.5 dropped it as soon as it began to exit, before it let go of
    its memory. A process killed by `cgroup.kill` is listed (and sent a kill of ours, its pidfd kept) until it
    has left its cgroup, on the kernels that have `cgroup.kill` (5.14)."""
    if not path.is_dir():
        return True
    with contextlib.suppress(OSError):
        Path(path, "cgroup.kill").write_text("1")
    with _killed() as dying:
        for _ in range(KILL_ROUNDS):
            members = cgroup_members(path)
            if members:
                _kill_checked(members, _still_members(path), dying=dying)
            _forget_ended(dying)
            if not members and not dying:
                break
            time.sleep(0.005)
    remove_cgroup(path)
    return not cgroup_members(path)


def remove_cgroup(path: Path) -> None:
    """rmdir a cgroup tree, deepest first; a cgroup that still has processes stays."""
    with contextlib.suppress(OSError):
        for directory, _dirs, _files in sorted(os.walk(path), key=lambda entry: -len(entry[0])):
            with contextlib.suppress(OSError):
                os.rmdir(directory)


def populated(path: Path) -> bool:
    """Whether a cgroup (or a descendant) still has a process."""
    try:
        for line in Path(path, "cgroup.events").read_text().splitlines():
            if line.startswith("populated "):
                return line.split()[1] != "0"
    except OSError:
        return bool(cgroup_members(path))
    return False


class Containment:
    """A runtime's cgroup and its per-call children, where the machine lets us make them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._calls = 0

    @classmethod
    def create(cls, token: str) -> Containment | None:
        """A fresh cgroup beside the host's own, or None where cgroup v2 is not writable here."""
        mount, own = _cgroup2_mount(), _own_cgroup()
        if mount is None or own is None:
            return None
        parent = Path(mount, own.lstrip("/"))
        path = parent / f"{CGROUP_PREFIX}{os.getpid()}.{_pid_namespace()}-{token}"
        try:
            path.mkdir()
        except OSError:
            return None
        with contextlib.suppress(OSError):
            # the pids controller bounds a call's processes whoever runs it (RLIMIT_NPROC spares root);
            # where the parent does not delegate it, the write fails and only the rlimit is left
            Path(path, "cgroup.subtree_control").write_text("+pids")
        containment = cls(path)
        containment.reap_orphans(parent)
        return containment

    def call_cgroup(self, max_processes: int | None = None) -> Path | None:
        """A new child cgroup for one shell call, holding at most `max_processes` where the pids
        controller is delegated here (this script runs without the package: the caller says the number)."""
        self._calls += 1
        path = self.path / f"call-{self._calls}"
        try:
            path.mkdir()
        except OSError:
            return None
        with contextlib.suppress(OSError):
            if max_processes is not None:
                Path(path, "pids.max").write_text(str(max_processes))
        return path

    @staticmethod
    def reap_orphans(parent: Path) -> None:
        """Kill and remove the cgroups of runtimes whose host process is gone (killed with its
        watchdog): whatever they left is reached by the next runtime on this machine.

        Only those of hosts in this pid namespace: another namespace's host pid is absent here (or someone
        else's), and its runtime, alive, would lose every process. A host's pid that went to another process
        since keeps its cgroup (left, not killed). An older version's name, without a namespace, is taken to
        be of the initial pid namespace's host (left alone by a runtime in any other)."""
        own = str(_pid_namespace())
        unnamed = "" if own == str(INITIAL_PID_NAMESPACE) else own
        with contextlib.suppress(OSError):
            for entry in parent.iterdir():
                if not entry.name.startswith(CGROUP_PREFIX):
                    continue
                host, _, namespace = entry.name[len(CGROUP_PREFIX) :].split("-", 1)[0].partition(".")
                if host.isdigit() and namespace in (unnamed, own) and not _alive(int(host)):
                    kill_cgroup(entry)


INITIAL_PID_NAMESPACE = 0xEFFFFFFC
"""The inode of the initial pid namespace (PROC_PID_INIT_INO, fixed by the kernel)."""


def _pid_namespace() -> int:
    """This process's pid namespace (the inode of /proc/self/ns/pid; 0 where it cannot be read)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- process groups and the marker (the fallback) -----------------------------------------------


def _stat_fields(pid: str) -> list[bytes] | None:
    """The fields of `/proc/<pid>/stat` (or of a thread's, `<pid>/task/<tid>`) after the command name; None when
    there is no such process (any more).
    Any other failure to read it (no descriptor left, no memory) is raised: a look that could not read a process
    knows nothing of it, and must not take it for one that is gone (a kill would then leave it running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(b")", 1)[1].split()


def _live_thread(pid: str) -> str | None:
    """`<pid>/task/<tid>` of a thread of the process other than its main one that has not ended, None when there
    is none (or no such process). A process whose main thread ended (`pthread_exit`, `SYS_exit`) while others
    run on shows Z, and its main thread's environment cannot be read (ESRCH); it runs on, and carries what it
    carried, in those others."""
    with contextlib.suppress(FileNotFoundError, ProcessLookupError, NotADirectoryError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            fields = _stat_fields(f"{pid}/task/{tid}")
            if tid != pid and fields is not None and fields[0] not in (b"Z", b"X"):
                return f"{pid}/task/{tid}"
    return None


def _ended(pid: str, fields: list[bytes] | None) -> bool:
    """Whether the process whose stat fields (`_stat_fields`) are `fields` has ended: gone, or a zombie none of
    whose threads runs on (`_live_thread`)."""
    return fields is None or (fields[0] == b"Z" and _live_thread(pid) is None)


def _group_of(pid: int) -> int | None:
    fields = _stat_fields(str(pid))
    return int(fields[2]) if fields is not None and not _ended(str(pid), fields) else None


def _scanned_group(pgid: int) -> tuple[list[int], bool]:
    """The live processes of process group `pgid` found in /proc, and whether the look went through the whole
    of it (an OSError, no descriptor left to open /proc say, cuts it short: what it found is not all there is)."""
    members: list[int] = []
    try:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            fields = _stat_fields(entry.name)
            if fields is not None and int(fields[2]) == pgid and not _ended(entry.name, fields):
                members.append(int(entry.name))
    except OSError:
        return members, False
    return members, True


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid`, from /proc (empty where there is no /proc)."""
    return _scanned_group(pgid)[0]


def _carries(pid: int, needle: bytes, where: str | None = None) -> bool | None:
    """Whether the process's environment holds `needle`; None while that cannot be known yet: the process
    is inside `execve` (`_mid_exec`). Read in its main thread's /proc entry, or (`where`) another thread's: that of
    one running on where the main thread has ended (`_live_thread`)."""
    path = Path(f"/proc/{where or pid}/environ")
    try:
        environ = path.read_bytes()
        if not environ:
            if _mid_exec(where or str(pid)):
                return None
            environ = path.read_bytes()  # the exec may have ended between the two reads
    except ProcessLookupError:  # gone or ending, or only its main thread has ended
        try:
            fields = _stat_fields(str(pid))
            thread = _live_thread(str(pid)) if where is None and fields is not None and fields[0] == b"Z" else None
        except OSError:
            return None
        return False if thread is None else _carries(pid, needle, thread)
    except (FileNotFoundError, PermissionError):
        return False  # gone, or another user's
    except OSError:
        return None  # not read now (no descriptor left, say): not known, looked at again
    if needle in environ.split(b"\0"):
        return True
    return None if _still_ours(where or str(pid), environ) else False


def _still_ours(pid: str, environ: bytes) -> bool:
    """Whether the process is a child of this one that still runs on this process's memory, inside `execve` before
    its own replaced it: `posix_spawn` and `subprocess` start a child with vfork, and the kernel lets the parent go
    on (`exec_mm_release`) just before it gives the child its new memory, so for that moment /proc shows the parent's
    environment as the child's (seen once: in a fresh-clone CI run, 1 of 100 children of 100,000 variables read as
    a stranger's at once after `posix_spawn` returned; 1,100 starts here, four at once, showed none). Not known then:
    looked at again (the caller's `EXEC_ROUNDS`). A child of ours whose environment is all and only ours, without
    the marker, is looked at again the same way before it is called a stranger's."""
    fields = _stat_fields(pid)
    if fields is None or int(fields[1]) != os.getpid():
        return False
    try:
        return environ == Path("/proc/self/environ").read_bytes()
    except OSError:
        return False


_PF_KTHREAD = 0x00200000
"""/proc/<pid>/stat `flags` bit of a kernel thread (no memory of its own, so no environment ever)."""


def _mid_exec(pid: str) -> bool:
    """Whether the process is inside `execve`, between the old program's memory and the new one's
    environment: /proc shows no environment then, though it will have one. The window is real and
    opens right where a parent sees a start: the kernel closes the close-on-exec descriptors, which
    tells `subprocess` (and a shell's `$!`) that the exec succeeded, before it lays out the new
    environment (measured: 13% of `sleep` processes read at once after `Popen` returned, on 2 busy
    cores). A process read then would be taken for a stranger's and never killed.

    Two stat fields say so. `env_end` (field 51) is 0 until the kernel lays out the environment; while
    it does (a loop over every variable) `env_end` equals `env_start`, as for a process whose
    environment is empty, so that alone would miss it (measured: 20 of 200 processes with 100,000
    variables read as strangers' at once after `Popen`, 4 of them left running by `kill_marked`).
    `start_code` (field 26) tells the two apart: the new program's memory has none until the layout is
    done, while every program that runs has its code mapped above 0."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in (b"Z", b"X") or len(fields) < 49:
        return False  # ended, or a kernel too old to say: what was read is what there is
    return b"0" in (fields[48], fields[23]) and not int(fields[6]) & _PF_KTHREAD


def owned_by(pgid: int, marker: str) -> bool:
    """Whether a process of group `pgid` was started by the runtime `marker` names.

    Without /proc (not Linux) nothing can be checked, and the group is taken to be the runtime's.
    """
    if not os.path.isdir("/proc/self"):
        return True
    needle = f"{OWNER_VARIABLE}={marker}".encode()
    for _ in range(EXEC_ROUNDS):
        marks = [_carries(pid, needle) for pid in group_members(pgid)]
        if any(marks) or None not in marks:
            return any(marks)
        time.sleep(0.005)  # a member inside execve: its environment is about to be readable
    return False


def kill_owned_group(pgid: int, marker: str) -> None:
    """SIGKILL process group `pgid` if it is still the runtime's: a process of it carries the marker.

    On Linux the group's live members are each checked (in the group, and one of them marked) after a pidfd
    for each was opened, and killed through those pidfds (the whole group through the leader's where it is
    one of them, Linux >= 6.9), round after round until none is left: a number that went to a stranger's
    group since, and a member's pid that went to a stranger, is never signalled; it returns once each member
    it killed has ended (`_killed`). Without /proc (not Linux) nothing can be checked: the group is taken to be
    the runtime's and killed by number."""
    if not os.path.isdir("/proc/self"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
        return
    needle = f"{OWNER_VARIABLE}={marker}".encode()
    undecided = False

    def ours(pids: list[int]) -> list[int]:
        nonlocal undecided
        try:
            members = [pid for pid in pids if _group_of(pid) == pgid]
        except OSError:  # a member's group could not be read now: nothing is known, look again
            undecided = True
            return []
        marks = [_carries(pid, needle) for pid in members]
        undecided = not any(marks) and None in marks
        return members if any(marks) else []

    with _killed() as dying:
        for _ in range(KILL_ROUNDS + EXEC_ROUNDS):
            members, whole = _scanned_group(pgid)
            sent = _kill_checked(members, ours, group=pgid, dying=dying)
            _forget_ended(dying)
            if not sent and not undecided and whole and not dying:
                return
            # a member killed has not ended yet, or one inside execve shows its environment in a moment: look again
            time.sleep(0.005)


def kill_marked(marker: str) -> None:
    """SIGKILL every process whose environment carries the runtime's marker, wherever its group or
    session is (what `setsid` and `set -m` leave behind), until each it killed has ended (`_killed`) and two
    whole looks through /proc in a row find none (one that fails part way is no such look). One look is not
    enough: a process of ours may fork and end while a look goes through /proc, its child getting a number the
    look has passed (numbers come round: pid_max is 32768 on many machines); the next look finds that child.
    The second look costs one more pass over /proc (and 5 ms) a runtime's end.

    A process inside execve (`_mid_exec`) makes a look not clean whoever's it is: which processes could be ours
    cannot be narrowed without a hole (a marked process may change its uid, `setpriv --reuid`, and its session
    and parent with `setsid` and a double fork; a watchdog that is not root reads no other user's environment,
    so sees none of theirs inside execve). It costs little: with two or three loops of execs beside it (one
    of them 100,000 variables wide), a kill took 3.0 and 3.3 looks on average (at most 5) against 3.0 idle."""
    if not marker or not os.path.isdir("/proc/self"):
        return
    needle = f"{OWNER_VARIABLE}={marker}".encode()
    me = os.getpid()
    clean = 0

    def marked(pids: list[int]) -> list[int]:
        return [pid for pid in pids if _carries(pid, needle)]

    with _killed() as dying:
        for _ in range(20 + EXEC_ROUNDS):
            found = 0
            try:
                for entry in os.scandir("/proc"):
                    if not entry.name.isdigit() or int(entry.name) == me:
                        continue
                    fields = _stat_fields(entry.name)
                    if fields is None or int(fields[6]) & _PF_KTHREAD:
                        continue  # gone, or a kernel thread; a zombie is looked at (its other threads may run on)
                    mark = _carries(int(entry.name), needle)
                    if mark is None:  # inside execve (anyone's): look again once its environment shows
                        found += 1
                        continue
                    if not mark:
                        continue
                    found += 1
                    _kill_checked([int(entry.name)], marked, dying=dying)
            except OSError:  # a scan cut short (no descriptor left to open /proc, say) saw nothing it can vouch for
                found += 1
            _forget_ended(dying)
            clean = 0 if found or dying else clean + 1
            if clean == 2:
                return
            time.sleep(0.005)


def kill_all(marker: str, cgroup: Path | None, groups: set[int]) -> None:
    """Everything a runtime started: its cgroup, its groups still marked, any marked process."""
    if cgroup is not None:
        kill_cgroup(cgroup)
    for pgid in groups:
        kill_owned_group(pgid, marker)
    kill_marked(marker)


def main() -> None:
    if os.fork() > 0:
        os._exit(0)  # the host reaps this parent at once; the helper below is never its zombie
    os.chdir("/")  # hold no directory of the host's busy
    with contextlib.suppress(OSError):  # tell the host who we are, then let go of its pipe
        os.write(1, f"{os.getpid()}\n".encode())
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    marker = ""
    cgroup: Path | None = None
    groups: set[int] = set()
    for line in sys.stdin.buffer:
        op, _, value = line.decode("utf-8", "replace").rstrip("\n").partition(" ")
        if op == "m":
            marker = value
        elif op == "c":
            cgroup = Path(value)
        elif value.isdigit() and op == "+":
            groups.add(int(value))
        elif value.isdigit() and op == "-":
            groups.discard(int(value))
    kill_all(marker, cgroup, groups)


if __name__ == "__main__":
    main()
