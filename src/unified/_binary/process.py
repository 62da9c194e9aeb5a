"""The real `AgentProcess`: an agent binary in its own process group, usable from any event loop.

Decisions:
- `subprocess.Popen(start_new_session=True)`, not `anyio.open_process`: an anyio process belongs
  to the event loop that spawned it, but a warm process outlives its run and serves runs of later
  loops (each `anyio.run`, asyncio or trio). Its pipes are non-blocking file descriptors awaited
  with `anyio.wait_readable` / `anyio.wait_writable`, which every anyio backend supports.
- Its own session, hence its own process group: closing it signals the whole group, so what the
  binary started (shells, MCP servers, a relaunched copy of itself) ends with it. The group is signalled
  through the leader's pidfd, or by number only while the leader is unreaped (`unified._pgroup`): the
  leader is reaped last, after the group's final SIGKILL (`returncode` and `wait` look at its exit
  without reaping it), so its zombie keeps the group's number from going to a stranger until then. A child that
  moved to a process group of its own (Claude Code runs each Bash command in one) is not in that
  group: the descendants are listed (from /proc, else `ps`) before the signals, and those still alive once
  the process is gone are killed with their groups; and so is every process still carrying the process's
  marker in its environment (`strays`): what a crashed or SIGKILLed binary orphaned, or a command forked
  into the background, which no list of descendants shows.
- No background task: whoever calls `receive` reads, and stderr is drained meanwhile, so neither
  pipe can fill up and block the child. On Linux one epoll descriptor watches both pipes, so a read
  waits on that one descriptor; elsewhere a task group waits on both (two tasks and a cancellation
  per wait: ~12 of them per codex run, the bulk of the event loop's own work in it).
- On asyncio that descriptor is watched by one reader for as long as the process serves that loop
  (`_LoopWatch`), not added and removed around each wait as `anyio.wait_readable` does (two
  `epoll_ctl` calls, a selector key and a handle per wait: ~20 of the ~60 us a wait cost). Our
  epoll is edge-triggered and the watch takes its events as they come, so the loop's selector sees
  it readable only once per new output, never again while nobody reads (a level-triggered watch
  left in place would wake the loop at every turn while output waits for a busy reader). Every
  read still goes on until the pipe is empty, so no edge is ever missed.
- A pipe known to be empty is not read before a wait: a read that returned less than it asked for, or
  nothing, emptied it, and the epoll's events (kept by the watch when they come while nobody waits) say
  which pipe has new output since. So a wait is not preceded by two reads that fail (`EAGAIN`), one of
  stdout and one of stderr, which was every wait's cost (~12 a warm codex run), and stderr, which a
  well-behaved binary seldom writes to, is read only when it has output.
- The stderr tail is bounded and redacted with the child's own environment, so a secret passed
  only to the child (an API key in the backend's `env` option) never reaches an error message.
- Secrets by pipe (`PipedEnv`): a process's exec environment stays readable for its life by every
  process of the same user (`/proc/<pid>/environ`, `ps eww`), so a command the binary runs for a model
  could read a key there. A backend whose binary can take variables another way (the gemini CLI: a
  preload of node, `_adapters/gemini_cli/_launch.py`) hands them over through a pipe the child inherits:
  written whole (one JSON line) and its write end closed before the child starts, so the child's read
  never waits on us; our read end is closed once the child has its copy. POSIX only (`pass_fds`).
- A proxy variable carrying a password is not given to the child: it gets a local forwarder's URL with a
  credential of its own instead (`proxy.forwarded_env`), stopped with the process (`_finish`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import secrets
import select
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from unified._binary.framing import LineFramer
from unified._binary.loops import PerLoopLock
from unified._binary.proctable import Process, descendants, is_still, still_running, stopped
from unified._binary.proxy import forwarded_env, unforwardable
from unified._binary.strays import MARKER, end_all, find_marked, find_marked_now
from unified._pgroup import ProcessGroup, pidfd, signal_verified
from unified._redaction import REDACTED, SPLIT_HOLD_MIN, Redactor, redactor
from unified.backends import AgentProcess, MalformedLine
from unified.errors import BackendUnavailable, ConfigurationError, UnifiedError

__all__ = [
    "PIPED_ENV_MAX_BYTES",
    "STDERR_TAIL_BYTES",
    "AgentSubprocess",
    "PipedEnv",
    "ProcessStarter",
    "StderrTail",
    "killed_by",
    "limit_kill",
    "start_subprocess",
    "telling_line",
]

_SIGNALS = {
    "SIGXFSZ": "a file it wrote passed the file size limit (`ulimit -f`, RLIMIT_FSIZE): raise the limit",
    "SIGKILL": "killed from outside (the kernel's out-of-memory killer, or someone's `kill -9`): see `dmesg`, free "
    "memory",
    "SIGSEGV": "it crashed (a segmentation fault): run again; if it persists, reinstall the binary",
    "SIGBUS": "it crashed (a bus error; a file it had mapped shrank, or a full /dev/shm): run again",
    "SIGABRT": "it aborted (an internal assertion, or out of memory): run again; if it persists, see its stderr",
    "SIGXCPU": "it used up its CPU time limit (`ulimit -t`, RLIMIT_CPU): raise the limit",
}
"""What a signal that ends an agent binary on its own (not unified's SIGTERM) says about why, and what to do."""


def killed_by(number: int) -> str:
    """`killed by signal N`, with the signal's name and, for the ones a binary meets unasked (`_SIGNALS`), what it
    means: "killed by signal 25" told nobody that the disk's file size limit had been reached."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"killed by signal {number}"
    meaning = _SIGNALS.get(name)
    return f"killed by signal {number} ({name}: {meaning})" if meaning else f"killed by signal {number} ({name})"


_LIMITS = frozenset({signal.SIGXFSZ, signal.SIGXCPU})
"""The signals by which the machine's own limits end a binary (`ulimit -f`, `ulimit -t`)."""


def limit_kill(code: int | None) -> bool:
    """Whether exit status `code` (negative: the signal) is a kill by one of the machine's limits (`_LIMITS`): a
    limit of where it runs, not a fault of the binary, so its run is `backend_unavailable` (a fallback backend may
    take it, as for a full disk) with what to raise; it was `backend_error`, as for a crash."""
    return code is not None and code < 0 and -code in _LIMITS


def telling_line(tail: str, noise: Sequence[str]) -> str:
    """The last line of a binary's stderr `tail` that says something about how it ended: the last one, skipping
    blank ones and those starting with one of `noise` (each binary's lines written on every run, whatever happens:
    codex's "could not create PATH aliases" warning, claude's "[claude-code:unrecognized_model]" note). A crash's
    error quoted that noise as its cause; "" when nothing else is there (the whole tail stays in the details)."""
    for line in reversed(tail.splitlines()):
        said = line.strip()
        if said and not said.startswith(tuple(noise)):
            return said
    return ""


STDERR_TAIL_BYTES = 8192
TERM_GRACE_S = 1.0
"""How long a closed process may take to exit after SIGTERM before its group gets SIGKILL."""
KILL_GRACE_S = 5.0
"""How long the kernel may take to reap a process after SIGKILL (a hang guard: it is immediate)."""
_POLL_S = 0.02
READ_BYTES = 65536
"""The most one read of a pipe takes: a read that returns less has emptied the pipe (Linux and macOS pipes give all
they hold, up to what is asked)."""

ProcessStarter = Callable[[Sequence[str], Path, Mapping[str, str]], AgentProcess]
"""Starts an agent for `(argv, cwd, env)`: `start_subprocess`, or a test's fake."""


_MAX_ARG_BYTES = 128 * 1024
"""The longest single argument Linux passes to a program (MAX_ARG_STRLEN): a longer one fails the start."""


class StderrTail:
    """The last `limit` bytes of a child's stderr: its notices, and the reason when it dies."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self._limit = limit
        self._data = bytearray()
        self._cut = False

    def add(self, chunk: bytes) -> None:
        self._data += chunk
        if len(self._data) > self._limit:
            del self._data[: len(self._data) - self._limit]
            self._cut = True

    def text(self, clean: Redactor | None = None) -> str:
        """The tail as text, `clean`'s secrets replaced; once cut, from its first whole line (half a line
        could hide half a secret), and when it holds no line break (one long line cut), without a
        beginning of `SPLIT_HOLD_MIN` or more characters that ends a secret (shown as the replacement)."""
        text = self._data.decode("utf-8", "replace")
        if self._cut and "\n" in text:
            text = text.split("\n", 1)[1]
        elif self._cut and clean is not None and (end := clean.partial_prefix(text)) >= SPLIT_HOLD_MIN:
            text = REDACTED + text[end:]
        return clean(text) if clean is not None else text


PIPED_ENV_MAX_BYTES = 4096
"""The most a `PipedEnv` message may take: what any pipe holds unread (Linux's page, a quarter of macOS's
16 KiB), so writing it whole before the child starts never blocks. Keys take a few dozen bytes."""


@dataclass(frozen=True, slots=True)
class PipedEnv:
    """Variables handed to the child through an inherited pipe, never its exec environment (see the module
    docstring): the child finds the pipe's descriptor number in its variable `fd_var` and reads one line, a
    JSON object of names to values (a null value: a variable to delete)."""

    fd_var: str
    values: Mapping[str, str | None]


def _piped_env_fd(piped: PipedEnv) -> int:
    """The read end of a pipe that holds `piped.values` as one JSON line, its write end already closed (the
    child reads to the line's end, or to the end of the pipe if something broke, and never waits on us)."""
    message = (json.dumps(dict(piped.values), separators=(",", ":")) + "\n").encode()
    if len(message) > PIPED_ENV_MAX_BYTES:
        raise ValueError(f"{len(message)} bytes of variables for the child's pipe; at most {PIPED_ENV_MAX_BYTES}")
    read_fd, write_fd = os.pipe()  # both non-inheritable: only `pass_fds` gives the child the read end
    try:
        os.set_blocking(write_fd, False)  # a pipe that holds less than promised fails here, never hangs
        if os.write(write_fd, message) != len(message):
            raise OSError("the pipe took only part of the child's variables")
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    return read_fd


def _unpassable(argv: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Which of `argv` and `env` no `execve` can carry (a NUL byte; `=` in a variable's name), named without its
    value (a variable's value may be a secret); None when each can be."""
    for name, value in env.items():
        if "\0" in name or "=" in name or not name:
            return (
                f"the environment variable named {name.replace(chr(0), chr(0xFFFD))!r} has no name a process can have"
            )
        if "\0" in value:
            return f"the environment variable {name} holds a NUL byte, which no process environment can carry"
    for index, arg in enumerate(argv):
        if "\0" in arg:
            return f"argument {index} of its command line holds a NUL byte, which no command line can carry"
    return None


class AgentSubprocess(AgentProcess):
    """The binary as a child process: see the module docstring."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        stdin: bool = True,
        line_limit: int | None = None,
        hint: str | None = None,
        piped: PipedEnv | None = None,
    ) -> None:
        """`stdin=False` gives the child /dev/null (a CLI that reads a piped stdin to its end first);
        `hint` is what a `BackendUnavailable` says to do when the binary cannot be started; `piped`, variables
        handed over through a pipe, not `env` (POSIX only: see the module docstring)."""
        child_env = dict(env)
        self._marker: str | None = None
        """The value of `strays.MARKER` in the process's environment, which what it starts inherits: set here,
        unless the caller set it (codex, whose warm process ends each run's commands itself), and then what
        carries it is ended after the process (`close`, `kill`): a command the binary ran outside its process
        group and left behind by a crash, a SIGKILL or a fork into the background."""
        if MARKER not in child_env:
            self._marker = child_env[MARKER] = secrets.token_hex(8)
        read_fd: int | None = None
        child_env, self._proxy_problems = unforwardable(child_env)
        child_env, self._forwarder = forwarded_env(child_env)
        try:
            if piped is not None:
                read_fd = _piped_env_fd(piped)
                child_env[piped.fd_var] = str(read_fd)
            self.popen = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=child_env,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=() if read_fd is None else (read_fd,),
            )
        except (OSError, ValueError) as exc:
            if isinstance(exc, ValueError) and (why := _unpassable(argv, child_env)) is not None:
                raise ConfigurationError(  # the binary is fine: a value the run gave it cannot be passed at all
                    f"could not start {argv[0]}: {why} ({exc})",
                    hint="remove that character from the run's options (backend_options.env, an MCP server's "
                    "env, args or command)",
                ) from None
            if isinstance(exc, OSError) and exc.errno == errno.E2BIG:  # the binary is fine, its command line is not
                size = sum(len(os.fsencode(arg)) + 1 for arg in argv)
                raise UnifiedError(
                    f"could not start {argv[0]}: its command line ({size:,} bytes) is longer than the system "
                    f"allows (an argument over {_MAX_ARG_BYTES:,} bytes, or all of them over ARG_MAX)",
                    code="bad_request",
                    hint="shorten the longest option of the run (a system instruction, a tool list)",
                ) from None
            raise BackendUnavailable(f"could not start {argv[0]}: {exc}", hint=hint) from exc
        finally:
            if read_fd is not None:
                os.close(read_fd)  # the child has its own copy: what it does not read goes with it
            if self._forwarder is not None and not hasattr(self, "popen"):
                self._forwarder.stop()  # no process: nothing to forward for
        popen = self.popen
        self._group = ProcessGroup(popen.pid, lambda: popen.returncode is not None)
        """Its process group: taken now, while nothing can have reaped the leader."""
        assert self.popen.stdout is not None
        assert self.popen.stderr is not None
        self._stdin = self.popen.stdin.fileno() if self.popen.stdin is not None else None
        self._stdout = self.popen.stdout.fileno()
        self._stderr = self.popen.stderr.fileno()
        for fd in (self._stdin, self._stdout, self._stderr):
            if fd is not None:
                os.set_blocking(fd, False)
        self._either: select.epoll | None = None
        """Readable when stdout or stderr has new output (Linux, edge-triggered: see the module docstring):
        what a read waits on while stderr is open."""
        if hasattr(select, "epoll"):
            self._either = select.epoll()
            self._either.register(self._stdout, select.EPOLLIN | select.EPOLLET)
            self._either.register(self._stderr, select.EPOLLIN | select.EPOLLET)
        self._watch: _LoopWatch | None = None
        """The asyncio loop's lasting reader of `_either`, for the loop it was made on."""
        self._name = str(argv[0])
        self._redact = redactor(env if piped is None else {**env, **_strings(piped.values)})
        self._tail = StderrTail()
        self._framer = LineFramer(line_limit)
        self._lines: deque[str | MalformedLine] = deque()
        self._write_lock = PerLoopLock(fast=True)
        self._stderr_open = True
        self._stdout_empty = False
        """stdout was read until empty and has shown no new output since: a read waits first (module docstring)."""
        self._stderr_empty = False
        """The same for stderr, which is then not drained before a wait."""
        self._eof = False
        self._closed = False

    # --- AgentProcess ---------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self._exit_code()

    def _exit_code(self) -> int | None:
        """How the process ended, None while it runs: once it has exited it is not reaped here (`waitid` with
        `WNOWAIT`), so its zombie keeps its pid and its group's number ours until `_finish` has killed the
        group and reaps it. Where there is no `waitid`, `poll` reaps it (the group is then no longer signalled
        by number: see `unified._pgroup`)."""
        if self.popen.returncode is not None or not hasattr(os, "waitid"):
            return self.popen.poll()
        try:
            info = os.waitid(os.P_PID, self.popen.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # reaped by someone else (a SIGCHLD handler of the host's)
            return self.popen.poll()
        if info is None:
            return None
        return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status

    async def send(self, line: str) -> None:
        """Write `line` and its newline to the process's stdin (a JSON-RPC or stream-json message)."""
        await self.write((line + "\n").encode())

    async def write(self, data: bytes) -> None:
        """Write `data` to the process's stdin, as it is (waiting while the pipe is full)."""
        if self._stdin is None:
            raise ConnectionError(f"{self._name} was started without stdin")
        async with self._write_lock.get():
            view = memoryview(data)
            while view:
                if self._closed:
                    raise ConnectionError("the process was closed")
                try:
                    written = os.write(self._stdin, view)
                except BlockingIOError:
                    await anyio.wait_writable(self._stdin)
                    continue
                except OSError as exc:
                    raise ConnectionError(f"the process's stdin is closed: {exc}") from exc
                view = view[written:]

    async def receive(self) -> str | None:
        while True:
            if self._lines:
                line = self._lines.popleft()
                if isinstance(line, MalformedLine):
                    raise line
                return line
            if self._eof or self._closed:
                return None
            chunk = await self._read_stdout()
            if chunk:
                self._lines.extend(self._framer.feed(chunk))
            else:
                self._eof = True
                cut = self._framer.end()  # a line the process ended in the middle of: a warning, not silence
                if cut is not None:
                    raise cut

    def stderr_tail(self) -> str:
        """The child's stderr (redacted), then what its proxy forwarder met (an upstream unreachable or refusing the
        host's credentials: the CLI itself says only that its request failed) and the proxy variables left out of its
        environment (`proxy.unforwardable`)."""
        self._drain_stderr()
        tail = self._tail.text(self._redact)
        problems = [*self._proxy_problems, *(self._forwarder.problems if self._forwarder is not None else ())]
        if problems:
            seen = dict.fromkeys(self._redact(f"unified: {p.message} ({p.code}): {p.hint}") for p in problems)
            tail = "\n".join([tail.rstrip("\n"), *seen]).lstrip("\n")
        return tail

    async def wait(self, grace: float) -> int | None:
        if self._exit_code() is None:
            with anyio.move_on_after(grace):
                await self._exited()
        self._drain_stderr()
        return self._exit_code()

    async def _exited(self) -> None:
        """Returns once the process has exited (not reaped: see `_exit_code`). On Linux a pidfd wakes the loop
        at the exit itself: polling every `_POLL_S` found a process ended by SIGTERM (codex app-server takes
        ~25 ms to) up to 20 ms late, at the end of every run."""
        try:
            fd = pidfd(self.popen.pid)  # our unreaped child: its pid is still its own
        except ProcessLookupError:  # already reaped
            return
        if fd is None:
            while self._exit_code() is None:  # noqa: ASYNC110 -- no pidfd here
                await anyio.sleep(_POLL_S)
            return
        try:
            while self._exit_code() is None:
                await anyio.wait_readable(fd)
        finally:
            os.close(fd)

    def _exited_sync(self, timeout: float) -> None:
        """`_exited` for a caller without a loop (`kill`): blocks until the exit or `timeout`."""
        try:
            fd = pidfd(self.popen.pid)
        except ProcessLookupError:
            return
        if fd is None:
            deadline = time.monotonic() + timeout
            while self._exit_code() is None and time.monotonic() < deadline:
                time.sleep(_POLL_S)
            return
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            poller.poll(timeout * 1000)
        finally:
            os.close(fd)

    async def end_input(self) -> None:
        stdin = self.popen.stdin
        if stdin is not None and not stdin.closed:
            async with self._write_lock.get():
                with contextlib.suppress(OSError):
                    stdin.close()
            self._stdin = None

    async def close(self) -> None:
        if self._closed:
            return
        strays = self._descendants()
        if self._exit_code() is None:
            self._signal_group(signal.SIGTERM)
            # A stopped process (SIGSTOP, a debugger) takes SIGTERM only once continued: its grace is skipped.
            if stopped(self.popen.pid) or await self.wait(TERM_GRACE_S) is None:
                strays |= descendants(self.popen.pid)
                self._signal_group(signal.SIGKILL)
                await self.wait(KILL_GRACE_S)
        self._finish(strays)
        if self._marker is not None and (marked := await find_marked(self._marker)):
            await anyio.to_thread.run_sync(end_all, marked)

    def kill(self) -> None:
        if self._closed:
            return
        strays = self._descendants()
        self._signal_group(signal.SIGKILL)
        self._exited_sync(KILL_GRACE_S)
        self._finish(strays)
        if self._marker is not None and (marked := find_marked_now(self._marker)):
            end_all(marked)

    # --- the pipes ------------------------------------------------------------------------------

    def _descendants(self) -> frozenset[Process]:
        """The descendants while the process runs (or is a zombie: its pid is still its own). Once it has been
        reaped its children have gone to init and its pid is free: another process may have it, whose
        children are not ours to kill; and after a graceful end (stdin closed, the exit waited for, then
        `close`) a scan of every process on the machine would find nothing of ours anyway."""
        if self._exit_code() is not None:
            return frozenset()
        return descendants(self.popen.pid)

    def _finish(self, strays: frozenset[Process] = frozenset()) -> None:
        """After the leader has exited: the stragglers of its group (a shell it started), then the leader is
        reaped (not before: its zombie kept the group's number ours), then the descendants listed before the
        signals (in groups of their own; each checked to be that very process, through a pidfd opened
        first: not a new process with a reused pid), then the pipes."""
        self._signal_group(signal.SIGKILL)
        self.popen.poll()
        self._group.close()
        for process in still_running(strays) if strays else ():
            signal_verified(process[0], signal.SIGKILL, is_still(process), group=True)
        self._drain_stderr()
        self._closed = True
        if self._forwarder is not None:
            self._forwarder.stop()  # the process is gone: nothing may listen for it any more
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.drop(close=True)  # closes `_either` once its loop has let go of it
        elif self._either is not None:
            self._either.close()
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    def _signal_group(self, sig: int) -> None:
        self._group.signal(sig)

    async def _read_stdout(self) -> bytes:
        """The next chunk of stdout (b'' at its end), draining stderr meanwhile so neither pipe fills. A pipe known
        to be empty is not read before the wait (module docstring)."""
        while True:
            if self._closed:
                return b""
            if not self._stdout_empty:
                chunk = self._try_read(self._stdout)
                if chunk is not None:
                    self._stdout_empty = len(chunk) < READ_BYTES
                    return chunk
                self._stdout_empty = True
            if not self._stderr_empty:
                self._drain_stderr()
            if not self._stderr_open:
                await anyio.wait_readable(self._stdout)
                self._stdout_empty = False
                continue
            if self._either is not None:
                for fd in await self._wait_either(self._either):
                    if fd == self._stdout:
                        self._stdout_empty = False
                    elif fd == self._stderr:
                        self._stderr_empty = False
                continue
            async with anyio.create_task_group() as tg:

                async def wait_for(fd: int) -> None:
                    await anyio.wait_readable(fd)
                    tg.cancel_scope.cancel()

                tg.start_soon(wait_for, self._stdout)
                tg.start_soon(wait_for, self._stderr)
            self._stdout_empty = self._stderr_empty = False

    async def _wait_either(self, either: select.epoll) -> Iterable[int]:
        """Until stdout or stderr has new output (each was read until empty, or is known to be): the descriptors
        that have, by the epoll's events."""
        loop = asyncio._get_running_loop()  # None on trio (`loops.current_loop`)
        watch = self._watch
        if watch is not None and watch.loop is loop:
            return await watch.wait()
        if watch is not None:  # an earlier loop's: it may have taken edges nobody read after, so both pipes are read
            self._watch = None
            watch.drop(close=False)
            self._stdout_empty = self._stderr_empty = False
            return ()
        if loop is not None:
            self._watch = _LoopWatch(loop, either)
            return await self._watch.wait()
        await anyio.wait_readable(either.fileno())
        return [fd for fd, _ in either.poll(0)]  # take the edges: not readable again before new output

    def _try_read(self, fd: int) -> bytes | None:
        if self._closed:
            return b""
        try:
            return os.read(fd, READ_BYTES)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def _drain_stderr(self) -> None:
        while self._stderr_open and not self._closed:
            chunk = self._try_read(self._stderr)
            if chunk is None:
                self._stderr_empty = True
                return
            if not chunk:
                self._stderr_open = False
                return
            self._tail.add(chunk)


class _LoopWatch:
    """One asyncio loop's lasting reader of a process's edge-triggered epoll descriptor (see the module
    docstring): registered on the first wait, kept until the process is closed or serves another loop."""

    __slots__ = ("either", "loop", "ready", "registered", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop, either: select.epoll) -> None:
        self.loop = loop
        self.either = either
        self.registered = False
        self.waiter: asyncio.Future[None] | None = None
        self.ready: set[int] = set()
        """The descriptors with new output that no wait has returned yet."""

    async def wait(self) -> set[int]:
        """The descriptors with new output since the last wait returned: at once if there are some."""
        if self.waiter is not None:
            raise anyio.BusyResourceError("reading from")
        if not self.registered:
            self.loop.add_reader(self.either.fileno(), self._ready)
            self.registered = True
        if not self.ready:
            self.waiter = self.loop.create_future()
            try:
                await self.waiter
            finally:
                self.waiter = None
        ready, self.ready = self.ready, set()
        return ready

    def _ready(self) -> None:
        # Take the edges whether or not anyone waits, and keep which pipes they were for until a wait returns them.
        self.ready.update(fd for fd, _ in self.either.poll(0))
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def drop(self, close: bool) -> None:
        """Stop watching, and close the descriptor if `close` (the process is closed; else it goes on serving
        another loop): at once on the loop's own thread or once that loop has stopped, else (`kill` from
        another thread while the loop runs) by that loop, which may be selecting on it right now."""
        if self.registered and self.loop.is_running() and not self._on_loop():
            with contextlib.suppress(RuntimeError):  # closed meanwhile: its selector is gone
                self.loop.call_soon_threadsafe(self._release, close)
                return
        self._release(close)

    def _on_loop(self) -> bool:
        try:
            return asyncio.get_running_loop() is self.loop
        except RuntimeError:
            return False

    def _release(self, close: bool) -> None:
        if self.registered and not self.loop.is_closed():
            self.loop.remove_reader(self.either.fileno())
        self.registered = False
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)  # a reader still waiting finds the process closed
        if close:
            self.either.close()


def _strings(values: Mapping[str, str | None]) -> dict[str, str]:
    """The set variables of `values` (those not deleted): what the stderr tail is redacted of besides `env`."""
    return {name: value for name, value in values.items() if value is not None}


def start_subprocess(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentSubprocess:
    """The default `ProcessStarter`: the binary itself, as a child process."""
    return AgentSubprocess(argv, cwd=cwd, env=env)
