"""Every process a tool starts stays reachable for cleanup (issue 24, "Process escapes").

A model's command tries to outlive its run: a new session (`setsid`), job control (`set -m` makes
`&` jobs their own process groups), double forks, `disown`, a cleared environment, an ignored
SIGHUP/SIGTERM. Each escapee writes its pid to a file; after the runtime closes, after the call is
cancelled, and after the host itself is SIGKILLed, that pid must be gone (checked in /proc). The
watchdog must not be findable or killable through what the tool's processes know.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from tests.harness.pidfds import Held, Holder, wait_exited
from unified.tools import ToolCall, ToolRuntime, _watchdog

pytestmark = pytest.mark.e2e  # real processes throughout
HANG_GUARD_S = 60.0
"""Far above the fraction of a second each wait takes: only a hang trips it."""

ESCAPES = {
    "setsid": "setsid sleep 601 & echo $! > {pid}",
    "setsid-fork": "setsid -f bash -c 'echo $$ > {pid}; exec sleep 602'",
    "job-control-disown": "set -m; sleep 603 & echo $! > {pid}; disown",
    "double-fork": "( ( sleep 604 & echo $! > {pid} ) & )",
    "nohup-setsid": "nohup setsid bash -c 'echo $$ > {pid}; exec sleep 605' > /dev/null 2>&1 &",
    "ignores-hup-term": "( trap '' HUP TERM INT; echo $BASHPID > {pid}; exec sleep 606 ) &",
    "python-daemon": (
        "python3 -c 'import os,sys\nif os.fork(): sys.exit()\nos.setsid()\n"
        'if os.fork(): sys.exit()\nopen(sys.argv[1], "w").write(str(os.getpid()))\nimport time; time.sleep(607)\' {pid}'
    ),
    "renamed": "bash -c 'exec -a innocent sleep 608' & echo $! > {pid}",
    "cleared-env": "env -i setsid bash -c 'echo $$ > {pid}; exec sleep 609' &",
}
FALLBACK = [name for name in ESCAPES if name != "cleared-env"]
"""Without a cgroup, what keeps the runtime's marker in its environment (all but `env -i`)."""


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"hang guard: still waiting for {what} after {HANG_GUARD_S:g} s")
        time.sleep(0.01)


def pid_in(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


@pytest.fixture
def strays() -> Iterator[Holder]:
    """What a failed test might leave, held by pidfd from the moment its pid is known (the escapee wrote it and
    sleeps on): killed at the end whatever happened, never a stranger that got a pid of theirs since."""
    holder = Holder()
    try:
        yield holder
    finally:
        holder.release()


def cgroups_here() -> bool:
    probe = _watchdog.Containment.create("probe")
    if probe is None:
        return False
    _watchdog.kill_cgroup(probe.path)
    return True


async def _start_all(tools: ToolRuntime, ws: Path, names: list[str], strays: Holder) -> dict[str, Held]:
    for name in names:
        [outcome] = await tools.run_batch(
            [ToolCall(name, "run_shell_command", {"command": ESCAPES[name].format(pid=ws / f"{name}.pid")})]
        )
        assert not outcome.is_error, outcome.response
    pids: dict[str, Held] = {}
    for name in names:
        wait_for(lambda name=name: pid_in(ws / f"{name}.pid") is not None, f"{name} to start")  # type: ignore[misc]
        pid = pid_in(ws / f"{name}.pid")
        assert pid is not None
        pids[name] = strays.hold(pid, running)
    return pids


@pytest.mark.anyio
async def test_every_escape_dies_with_the_runtime(ws: Path, strays: Holder) -> None:
    names = list(ESCAPES) if cgroups_here() else FALLBACK
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        pids = await _start_all(tools, ws, names, strays)
    wait_exited(pids.values(), "escapees")


@pytest.mark.anyio
async def test_without_cgroups_the_marker_still_finds_them(
    ws: Path, strays: Holder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_watchdog.Containment, "create", classmethod(lambda cls, token: None))
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        pids = await _start_all(tools, ws, FALLBACK, strays)
        assert tools._shell.watch.cgroup is None
    wait_exited(pids.values(), "escapees")


@pytest.mark.anyio
async def test_a_cancelled_call_takes_its_escapees_with_it(ws: Path, strays: Holder) -> None:
    if not cgroups_here():
        pytest.skip("without a cgroup, a cancelled call's setsid escapee is reached at the runtime's close")
    command = "setsid sleep 611 & echo $! > esc.pid; sleep 612"
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tools.run_batch, [ToolCall("c", "run_shell_command", {"command": command})])
            await anyio.to_thread.run_sync(wait_for, lambda: pid_in(ws / "esc.pid") is not None, "the escapee")
            found = pid_in(ws / "esc.pid")
            assert found is not None
            escapee = strays.hold(found, running)
            tg.cancel_scope.cancel()
        wait_exited([escapee], "the cancelled call's escapee")  # before the runtime closes


HOST = """
import sys
from pathlib import Path

import anyio

from unified.tools import ToolCall, ToolRuntime

ESCAPES = {escapes!r}

async def main() -> None:
    ws = Path(sys.argv[1])
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        for name, command in ESCAPES.items():
            call = {{"command": command.format(pid=ws / (name + ".pid"))}}
            await rt.run_batch([ToolCall(name, "run_shell_command", call)])
        (ws / "watchdog.pid").write_text(str(rt._shell.watch.watchdog_pid))
        await rt.run_batch([ToolCall("f", "run_shell_command", {{"command": "touch ready; sleep 600"}})])

anyio.run(main)
"""


def test_killing_the_host_kills_every_escapee(ws: Path, strays: Holder) -> None:
    escapes = {name: ESCAPES[name] for name in (list(ESCAPES) if cgroups_here() else FALLBACK)}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    host = subprocess.Popen([sys.executable, "-c", HOST.format(escapes=escapes), str(ws)], env=env, cwd=ws)
    try:
        wait_for(lambda: (ws / "ready").exists(), "the host to start everything")
        pids = {name: pid_in(ws / f"{name}.pid") for name in escapes}
        assert all(pid is not None for pid in pids.values()), pids
        escapees = [strays.hold(pid, running) for pid in pids.values() if pid is not None]
        watchdog = pid_in(ws / "watchdog.pid")
        assert watchdog is not None
        assert running(watchdog)
    finally:
        host.kill()  # SIGKILL: no finally, no atexit, no finalizer of the host runs
        host.wait()
    wait_exited(escapees, "escapees")
    wait_for(lambda: not running(watchdog), "the watchdog to exit")


def _named(pid: int) -> bytes:
    """What a process shows of itself to others: its command line and environment."""
    return Path(f"/proc/{pid}/cmdline").read_bytes() + Path(f"/proc/{pid}/environ").read_bytes()


@pytest.mark.anyio
async def test_the_tool_cannot_find_or_kill_the_watchdog_through_the_marker(ws: Path, strays: Holder) -> None:
    hunt = (
        'for p in /proc/[0-9]*; do if grep -qa "$UNIFIED_SHELL_OWNER" $p/cmdline $p/environ 2>/dev/null; '
        'then echo ${p#/proc/}; fi; done > found; pkill -9 -f "$UNIFIED_SHELL_OWNER"; true'
    )
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        await tools.run_batch([ToolCall("w", "run_shell_command", {"command": "true"})])
        watchdog = tools._shell.watch.watchdog_pid
        assert watchdog is not None
        assert tools._shell.watch.marker.encode() not in _named(watchdog)
        await tools.run_batch([ToolCall("h", "run_shell_command", {"command": hunt})])
        found = {int(line) for line in (ws / "found").read_text().split()}
        assert watchdog not in found
        held = strays.hold(watchdog, running)  # signalled through its pidfd: never a stranger given its pid
        signal.pidfd_send_signal(held.fd, signal.SIGTERM)  # a polite kill is ignored
        signal.pidfd_send_signal(held.fd, signal.SIGHUP)
        assert not held.exited()
        # found by the script's name and killed anyway: the next shell call starts another. Only this runtime's
        # is killed: `pkill -f _watchdog.py` also took every other runtime's on the machine, the watchdog of a
        # test running beside this one (this very test on the other event loop failed that way).
        find_and_kill = f'for p in $(pgrep -f _watchdog.py); do [ "$p" = {watchdog} ] && kill -9 "$p"; done; true'
        await tools.run_batch([ToolCall("k", "run_shell_command", {"command": find_and_kill})])
        wait_exited([held], "the killed watchdog")
        await tools.run_batch([ToolCall("n", "run_shell_command", {"command": "true"})])
        replaced = tools._shell.watch.watchdog_pid
        assert replaced is not None
        assert not strays.hold(replaced, running).exited()  # a watchdog runs, and the first has ended: another


def test_a_runtime_reaps_the_cgroup_of_a_host_that_died_with_its_watchdog() -> None:
    if not cgroups_here():
        pytest.skip("no writable cgroup v2 here")
    # the "host" of the orphan cgroup below: a pid no process can have (pids stay below pid_max). Not the pid of a
    # child that ended: that one may be a stranger's again by the time the runtime looks, and the host alive.
    dead = int(Path("/proc/sys/kernel/pid_max").read_text())
    mount, own = _watchdog._cgroup2_mount(), _watchdog._own_cgroup()
    assert mount is not None
    assert own is not None
    orphan = Path(mount, own.lstrip("/"), f"{_watchdog.CGROUP_PREFIX}{dead}.{_watchdog._pid_namespace()}-stale")
    stray = subprocess.Popen(["sleep", "613"], start_new_session=True)
    # Another test worker's runtime may reap the orphan while it is still empty (it was made for that): made again
    # until the stray is in it (a CI run lost it between the `mkdir` and the write, FileNotFoundError). From then on
    # whichever runtime reaps it, this test's or another worker's, is the behaviour under test.
    for _ in range(100):
        orphan.mkdir(exist_ok=True)
        try:
            (orphan / "cgroup.procs").write_text(str(stray.pid))
            break
        except FileNotFoundError:
            continue
    else:
        stray.kill()
        stray.wait()
        pytest.fail("the orphan cgroup was removed 100 times before the stray could be put in it")
    try:
        fresh = _watchdog.Containment.create("fresh")
        assert fresh is not None
        stray.wait(timeout=HANG_GUARD_S)
        assert not orphan.exists()
        _watchdog.kill_cgroup(fresh.path)
    finally:
        _watchdog.kill_cgroup(orphan)
        stray.kill()  # our child: `kill` signals it only while it is not reaped
        stray.wait()
