"""The real `AgentProcess` on real child processes: lines both ways, bad lines, any event loop, the whole
group ended on close (checked on the grandchild's pid), a bounded and redacted stderr tail."""

from __future__ import annotations

import asyncio
import json
import os
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.lowlevel
import pytest

import unified._binary.process as process_module
import unified._binary.proctable as proctable
from tests.hang_guard import HANG_GUARD_S
from tests.harness.closed_port import closed_port
from unified._binary.install import BinarySpec, probe_version
from unified._binary.process import PIPED_ENV_MAX_BYTES, STDERR_TAIL_BYTES, AgentSubprocess, PipedEnv
from unified.backends import MalformedLine
from unified.errors import BackendUnavailable

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]  # real child processes

UPPER = "import sys\nfor line in sys.stdin:\n    print(line.strip().upper(), flush=True)\n"


def python(code: str, cwd: Path, env: dict[str, str] | None = None, line_limit: int = 1 << 20) -> AgentSubprocess:
    return AgentSubprocess(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env or dict(os.environ), line_limit=line_limit
    )


def alive(pid: int) -> bool:
    """Whether `pid` is a process that has not exited (absent or a zombie: it has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def gone(pid: int) -> bool:
    """Waits (bounded by the hang guard) for a killed process to finish exiting: SIGKILL is asynchronous."""
    deadline = time.monotonic() + HANG_GUARD_S
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not alive(pid)


async def test_lines_go_both_ways_and_close_ends_it(tmp_path: Path) -> None:
    process = python(UPPER, tmp_path)
    await process.send("hello")
    await process.send("world")
    assert [await process.receive(), await process.receive()] == ["HELLO", "WORLD"]
    assert process.returncode is None
    await process.close()
    assert process.returncode is not None
    assert await process.receive() is None
    with pytest.raises(ConnectionError):
        await process.send("late")
    await process.close()  # idempotent


async def test_bad_lines_are_malformed_and_the_stream_goes_on(tmp_path: Path) -> None:
    code = """
        import sys
        out = sys.stdout.buffer
        out.write(b"x" * 5000 + b"\\n")
        out.write(b"\\xff\\xfe\\n")
        out.write(b"ok\\n")
        out.flush()
    """
    process = python(code, tmp_path, line_limit=1000)
    with pytest.raises(MalformedLine) as long_line:
        await process.receive()
    assert (long_line.value.size, long_line.value.reason) == (5000, "over the 1000-byte cap")
    with pytest.raises(MalformedLine) as not_text:
        await process.receive()
    assert not_text.value.reason.startswith("not UTF-8")
    assert await process.receive() == "ok"
    assert await process.receive() is None
    assert await process.wait(HANG_GUARD_S) == 0
    await process.close()


async def test_close_ends_the_whole_process_group(tmp_path: Path) -> None:
    process = AgentSubprocess(["sh", "-c", "sleep 600 & echo $!; wait"], cwd=tmp_path, env=dict(os.environ))
    grandchild = int(await process.receive() or "0")
    assert alive(grandchild)
    await process.close()
    assert gone(grandchild)
    assert not alive(process.pid)


async def test_close_ends_a_descendant_in_a_process_group_of_its_own(tmp_path: Path) -> None:
    """Claude Code runs each Bash command in a group of its own: the agent's group signal misses it, and
    an agent killed outright would orphan it. Listed before the signals, it is ended after them."""
    # The pid is printed from inside the new session, so it is in its own group when the test reads it.
    script = "setsid sh -c 'echo $$; exec sleep 600' & trap '' TERM; wait"
    process = AgentSubprocess(["sh", "-c", script], cwd=tmp_path, env=dict(os.environ))
    escaped = int(await process.receive() or "0")
    assert alive(escaped)
    assert os.getpgid(escaped) != os.getpgid(process.pid)
    await process.close()
    assert gone(escaped)
    assert not alive(process.pid)


@pytest.fixture
def no_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on macOS: no /proc, so the processes are listed by `ps`."""
    monkeypatch.setattr(proctable, "_PROC", Path("/nonexistent/proc"))


async def test_without_proc_close_still_ends_a_descendant_in_a_process_group_of_its_own(
    tmp_path: Path, no_proc: None
) -> None:
    script = "setsid sh -c 'echo $$; exec sleep 600' & trap '' TERM; wait"
    process = AgentSubprocess(["sh", "-c", script], cwd=tmp_path, env=dict(os.environ))
    escaped = int(await process.receive() or "0")
    assert os.getpgid(escaped) != os.getpgid(process.pid)
    await process.close()
    assert gone(escaped)


@pytest.mark.parametrize("source", ["/proc", "ps"])
def test_descendants_are_every_generation_below_and_start_times_tell_a_reused_pid_apart(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child and its child, from /proc and, as on macOS, from `ps`; a made-up start time is another process."""
    if source == "ps":
        monkeypatch.setattr(proctable, "_PROC", Path("/nonexistent/proc"))
    code = (
        "import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.read()'],"
        " stdin=subprocess.PIPE); print(child.pid, flush=True); sys.stdin.read(); child.stdin.close(); child.wait()"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())
        ours = sorted(p for p in proctable.descendants(os.getpid()) if p[0] in (parent.pid, grandchild))
        assert [pid for pid, _ in ours] == sorted([parent.pid, grandchild])
        assert all(proctable.alive(p) for p in ours)
        assert not proctable.alive((ours[0][0], ours[0][1] + "0"))  # another start: another process
        assert proctable.still_running([*ours, (ours[0][0], "then")]) == ours
    finally:
        assert parent.stdin is not None
        parent.stdin.close()
        parent.wait()
    assert proctable.still_running(ours) == []


def test_kill_ends_a_descendant_in_a_process_group_of_its_own(tmp_path: Path) -> None:
    async def start() -> tuple[AgentSubprocess, int]:
        script = "setsid sh -c 'echo $$; exec sleep 600' & wait"
        process = AgentSubprocess(["sh", "-c", script], cwd=tmp_path, env=dict(os.environ))
        return process, int(await process.receive() or "0")

    process, escaped = anyio.run(start)
    process.kill()
    assert gone(escaped)


async def test_end_input_closes_stdin_and_the_process_finishes_by_itself(tmp_path: Path) -> None:
    process = python(UPPER, tmp_path)
    await process.send("last")
    await process.end_input()
    assert await process.receive() == "LAST"
    assert await process.wait(HANG_GUARD_S) == 0
    await process.close()


def test_kill_ends_the_group_from_no_event_loop(tmp_path: Path) -> None:
    async def start() -> tuple[AgentSubprocess, int]:
        process = AgentSubprocess(["sh", "-c", "sleep 600 & echo $!; wait"], cwd=tmp_path, env=dict(os.environ))
        return process, int(await process.receive() or "0")

    process, grandchild = anyio.run(start)
    process.kill()  # no loop runs now (interpreter exit, a pool entry of a finished loop)
    assert gone(grandchild)
    assert process.returncode == -9
    process.kill()  # idempotent


def test_one_process_serves_successive_event_loops(tmp_path: Path) -> None:
    process = python(UPPER, tmp_path)

    async def ask(word: str) -> str | None:
        await process.send(word)
        return await process.receive()

    assert anyio.run(ask, "asyncio") == "ASYNCIO"
    assert anyio.run(ask, "trio", backend="trio") == "TRIO"
    assert anyio.run(ask, "again") == "AGAIN"
    process.kill()


async def test_the_stderr_tail_is_bounded_and_redacted(tmp_path: Path) -> None:
    secret = "sk-test-0123456789abcdefghijklmnop"
    code = """
        import os, sys
        sys.stderr.write("noise\\n" * 4000)
        sys.stderr.write("the key is " + os.environ["FAKE_API_KEY"] + "\\n")
        sys.stderr.flush()
    """
    process = python(code, tmp_path, env={**os.environ, "FAKE_API_KEY": secret})
    assert await process.receive() is None
    await process.wait(HANG_GUARD_S)
    tail = process.stderr_tail()
    assert len(tail.encode()) <= STDERR_TAIL_BYTES
    assert tail.startswith("noise\n")  # from a whole line: the cut half line is left out
    assert tail.endswith("the key is [REDACTED]\n")
    assert secret not in tail
    await process.close()


PIPE_READER = """
    import json, os, sys
    fd = int(os.environ["TEST_ENV_FD"])
    line = b""
    while not line.endswith(b"\\n"):
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        line += chunk
    os.close(fd)
    environ = open("/proc/self/environ", "rb").read().decode(errors="replace")
    print(json.dumps({"values": json.loads(line), "environ": environ}), flush=True)
    sys.stderr.write("the key is " + json.loads(line)["FAKE_API_KEY"] + "\\n")
    sys.stderr.flush()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_piped_variables_reach_the_child_through_a_pipe_not_its_environment(tmp_path: Path) -> None:
    """`PipedEnv`: the child reads the values from the descriptor its variable names; its exec environment
    (`/proc/<pid>/environ`, readable by the same user) never holds them; the stderr tail is redacted of them
    too; our end of the pipe is not left open."""
    secret = "sk-test-piped-0123456789abcdefghijkl"
    before = set(os.listdir("/proc/self/fd"))
    process = AgentSubprocess(
        [sys.executable, "-c", textwrap.dedent(PIPE_READER)],
        cwd=tmp_path,
        env=dict(os.environ),
        piped=PipedEnv("TEST_ENV_FD", {"FAKE_API_KEY": secret, "GONE": None}),
    )
    line = await process.receive()
    assert line is not None, process.stderr_tail()
    seen = json.loads(line)
    assert seen["values"] == {"FAKE_API_KEY": secret, "GONE": None}
    assert "TEST_ENV_FD=" in seen["environ"]
    assert secret not in seen["environ"]
    await process.wait(HANG_GUARD_S)
    assert process.stderr_tail() == "the key is [REDACTED]\n"
    await process.close()
    assert set(os.listdir("/proc/self/fd")) == before


def test_variables_too_large_for_a_pipe_are_refused_before_the_child_starts(tmp_path: Path) -> None:
    """Written whole before the child starts, so never more than any pipe holds: a typed error, never a hang."""
    before = set(os.listdir("/proc/self/fd")) if sys.platform.startswith("linux") else set()
    with pytest.raises(BackendUnavailable, match="at most"):
        AgentSubprocess(
            [sys.executable, "-c", "pass"],
            cwd=tmp_path,
            env=dict(os.environ),
            piped=PipedEnv("TEST_ENV_FD", {"BIG": "x" * PIPED_ENV_MAX_BYTES}),
        )
    if sys.platform.startswith("linux"):
        assert set(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("either", [True, False], ids=["one-epoll-descriptor", "a-task-group"])
async def test_a_read_drains_a_stderr_that_would_fill_its_pipe(tmp_path: Path, either: bool) -> None:
    """The child writes more to stderr than a pipe holds before its first stdout line, and again between two
    lines, once both pipes were read until empty (a read then waits without trying either pipe first): a read
    waiting only on stdout would leave it blocked on stderr forever."""
    code = """
        import sys
        for line in ("out", "more"):
            for _ in range(256):
                sys.stderr.write("e" * 1023 + "\\n")
            sys.stderr.flush()
            print(line, flush=True)
            sys.stdin.readline()
    """
    process = python(code, tmp_path)
    if not either and process._either is not None:  # the portable way, as where there is no epoll
        process._either.close()
        process._either = None
    assert await process.receive() == "out"
    await process.send("next")
    assert await process.receive() == "more"
    await process.send("done")
    assert await process.receive() is None
    assert process.stderr_tail().endswith("e\n")
    await process.close()


async def test_close_after_the_exit_looks_up_no_descendants_of_the_free_pid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked_up: list[int] = []
    real = proctable.descendants

    def recording(root: int) -> frozenset[tuple[int, str]]:
        looked_up.append(root)
        return real(root)

    monkeypatch.setattr(process_module, "descendants", recording)
    running = python("import sys; sys.stdin.read()", tmp_path)
    await running.close()
    assert looked_up == [running.pid]  # a running process's descendants are ended with it
    done = python("pass", tmp_path)
    assert await done.wait(HANG_GUARD_S) == 0  # reaped: the pid may already be another process's
    await done.close()
    assert looked_up == [running.pid]


async def test_an_exit_code_is_read_and_stdin_refuses_afterwards(tmp_path: Path) -> None:
    process = python("import sys; sys.stdin.readline(); sys.exit(41)", tmp_path)
    await process.send("go")
    assert await process.receive() is None
    assert await process.wait(HANG_GUARD_S) == 41
    await process.close()
    assert process.returncode == 41


def test_a_binary_that_cannot_start_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable) as caught:
        AgentSubprocess([str(tmp_path / "missing")], cwd=tmp_path, env={}, hint="install it")
    assert caught.value.hint == "install it"


def test_a_version_probe_runs_with_a_throwaway_home(tmp_path: Path) -> None:
    spec = BinarySpec(
        name="probe-cli",
        package="@example/probe-cli",
        version="2.0.0",
        supported=((2, 0, 0), (3, 0, 0)),
        bin="probe",
        env_var="UNIFIED_PROBE_BIN",
        option="probe_binary",
        local_dir=".probe-cli",
        install_command="unified install probe-cli",
        title="the probe CLI",
        home_vars=("HOME", "PROBE_HOME"),
        probe_env={"PROBE_FAST": "1"},
    )
    binary = tmp_path / "probe"
    binary.write_text('#!/bin/sh\ntouch "$HOME/was-here" "$PROBE_HOME/too"\necho "probe 2.$PROBE_FAST.0"\n')
    binary.chmod(0o755)
    home = Path(os.environ["HOME"])
    before = sorted(home.rglob("*"))
    assert probe_version(spec, binary, dict(os.environ)) == (2, 1, 0)  # with its probe_env
    assert sorted(home.rglob("*")) == before  # the probe wrote into its own home, not ours


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="no pidfds on this platform: wait polls")
async def test_wait_wakes_at_the_exit_itself_not_by_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On Linux the exit wakes `wait` through a pidfd: no sleep-and-poll loop runs (it noticed up to 20 ms late)."""
    process = python(UPPER, tmp_path)
    await process.send("last")
    assert await process.receive() == "LAST"

    async def no_polling(delay: float) -> None:
        raise AssertionError(f"wait polled (anyio.sleep({delay}))")

    monkeypatch.setattr(anyio, "sleep", no_polling)
    await process.end_input()
    assert await process.wait(HANG_GUARD_S) == 0
    assert await process.wait(HANG_GUARD_S) == 0  # already reaped: at once, the same code
    await process.close()


async def test_wait_gives_up_after_its_grace_and_close_still_ends_it(tmp_path: Path) -> None:
    process = python("import time\ntime.sleep(600)\n", tmp_path)
    assert await process.wait(0.05) is None
    pid = process.pid
    assert pid is not None
    await process.close()
    assert gone(pid)


SLOW_LINES = """
    import sys, time
    for n in range(5):
        time.sleep(0.01)
        print(n, flush=True)
    sys.stdin.read()
"""


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_one_reader_watches_the_pipes_for_the_process_life_on_asyncio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines that each need a wait: the loop is given the pipes' descriptor once, not once per wait, and
    takes it back when the process is closed."""
    loop = asyncio.get_running_loop()
    calls: list[tuple[str, int]] = []
    add_reader, remove_reader = loop.add_reader, loop.remove_reader

    def adding(fd: int, callback: Any, *args: Any) -> None:
        calls.append(("add", fd))
        add_reader(fd, callback, *args)

    def removing(fd: int) -> bool:
        calls.append(("remove", fd))
        return remove_reader(fd)

    monkeypatch.setattr(loop, "add_reader", adding)
    monkeypatch.setattr(loop, "remove_reader", removing)
    process = python(SLOW_LINES, tmp_path)
    assert process._either is not None
    either = process._either.fileno()
    assert [await process.receive() for _ in range(5)] == ["0", "1", "2", "3", "4"]
    assert calls == [("add", either)]
    await process.close()
    assert [call for call in calls if call[1] == either] == [("add", either), ("remove", either)]
    assert process._either.closed


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_output_nobody_reads_yet_does_not_keep_waking_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch stays in place between reads; the pipes' descriptor is edge-triggered, so output that waits
    for a busy reader wakes the loop once, not at every turn of it."""
    woken = 0
    ready = process_module._LoopWatch._ready

    def counting(watch: process_module._LoopWatch) -> None:
        nonlocal woken
        woken += 1
        ready(watch)

    monkeypatch.setattr(process_module._LoopWatch, "_ready", counting)
    # each line in one write: with PYTHONUNBUFFERED set (as in CI's shell) `print` writes the text and its newline
    # apart, two edges, and a loaded machine ran the loop between them (woken == 2, failed once in a full run)
    code = "import os, sys\nos.write(1, b'a\\n')\nsys.stdin.readline()\nos.write(1, b'b\\n')\nsys.stdin.read()\n"
    process = python(code, tmp_path)
    assert await process.receive() == "a"  # the watch is in place now
    woken = 0
    await process.send("go")
    stdout = process.popen.stdout
    assert stdout is not None
    assert select.select([stdout], [], [], HANG_GUARD_S)[0]  # "b" is there, unread
    for _ in range(50):  # the loop turns 50 times while the line waits
        await anyio.lowlevel.checkpoint()
    assert woken <= 1
    assert await process.receive() == "b"
    await process.close()


def test_a_process_read_on_asyncio_then_trio_then_asyncio_again(tmp_path: Path) -> None:
    """The watch belongs to one loop: a later loop (of either kind) reads the same pipes."""
    process = python(UPPER, tmp_path)

    async def ask(word: str) -> str | None:
        await anyio.sleep(0.01)  # the answer needs a wait
        await process.send(word)
        return await process.receive()

    assert anyio.run(ask, "one") == "ONE"
    assert anyio.run(ask, "two", backend="trio") == "TWO"
    assert anyio.run(ask, "three") == "THREE"
    assert anyio.run(ask, "four") == "FOUR"
    process.kill()
    assert process._either is not None
    assert process._either.closed


def test_a_command_line_too_long_for_the_system_says_so_not_to_reinstall(tmp_path: Path) -> None:
    """Linux refuses an argument over 128 KiB (E2BIG): the binary is fine, the run's options are not. It was a
    `BackendUnavailable` telling the caller to install the CLI."""
    from unified.errors import UnifiedError

    with pytest.raises(UnifiedError) as caught:
        AgentSubprocess(["sh", "-c", "exit 0", "x" * 200_000], cwd=tmp_path, env=dict(os.environ))
    assert not isinstance(caught.value, BackendUnavailable)
    assert caught.value.code == "bad_request"
    assert "longer than the system allows" in caught.value.message
    assert "install" not in str(caught.value)


async def test_write_gives_stdin_its_bytes_as_they_are(tmp_path: Path) -> None:
    """`write` passes bytes on unchanged (no newline added: a prompt given as a CLI's whole stdin)."""
    out = tmp_path / "got"
    proc = AgentSubprocess(["sh", "-c", f"cat > {out}"], cwd=tmp_path, env=dict(os.environ))
    try:
        await proc.write(b"no newline\0after")
        await proc.end_input()
        assert await proc.wait(HANG_GUARD_S) == 0
    finally:
        await proc.close()
    assert out.read_bytes() == b"no newline\0after"


PROXY_CHILD = """
import os, socket, sys
from urllib.parse import urlsplit
url = urlsplit(os.environ["HTTPS_PROXY"])
print(os.environ["HTTPS_PROXY"], flush=True)
with socket.create_connection(("127.0.0.1", url.port)) as s:
    import base64
    token = base64.b64encode(f"{url.username}:{url.password}".encode()).decode()
    s.sendall(f"CONNECT example.com:443 HTTP/1.1\\r\\nProxy-Authorization: Basic {token}\\r\\n\\r\\n".encode())
    print(s.recv(4096).split(b"\\r\\n")[0].decode(), flush=True)
sys.stdin.read()
"""


@pytest.mark.parametrize("end", ["close", "kill"])
async def test_a_proxy_password_reaches_the_child_as_a_forwarder_that_goes_with_the_process(
    tmp_path: Path, end: str
) -> None:
    """The child gets a forwarder's URL, not the host's password; an upstream that cannot be reached gives it a
    502 and the stderr tail a line saying what to check (no password); once the process is ended, closed or
    killed, nothing listens on the forwarder's port."""
    password = "Pr0xy-Pa55w0rd-Zq8Lm3Xv7Tn1Wk4"
    with closed_port() as port:
        env = {**os.environ, "HTTPS_PROXY": f"http://user:{password}@127.0.0.1:{port}", "NO_PROXY": "example.org"}
        process = python(PROXY_CHILD, tmp_path, env=env)
        with anyio.fail_after(HANG_GUARD_S):
            given = await process.receive()
            status = await process.receive()
        assert given is not None
        assert password not in given
        forwarder = urlsplit(given)
        assert (forwarder.hostname, forwarder.username) == ("127.0.0.1", "unified0")
        assert status == "HTTP/1.1 502 Bad Gateway"
        tail = process.stderr_tail()
        assert f"the proxy http://127.0.0.1:{port} of the host's proxy variables cannot be reached" in tail
        assert "(proxy_unreachable)" in tail
        assert password not in tail
        if end == "close":
            await process.close()
        else:
            process.kill()
    with pytest.raises(OSError, match="All connection attempts failed"):
        await anyio.connect_tcp("127.0.0.1", forwarder.port or 0)


async def test_a_child_without_proxy_credentials_gets_its_variables_unchanged(tmp_path: Path) -> None:
    env = {**os.environ, "HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": "example.org"}
    code = "import os; print(os.environ['HTTPS_PROXY'], os.environ['NO_PROXY'], flush=True)"
    process = python(code, tmp_path, env=env)
    with anyio.fail_after(HANG_GUARD_S):
        assert await process.receive() == "http://proxy.example:3128 example.org"
    await process.close()
