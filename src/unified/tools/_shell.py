"""run_shell_command and its background-process readers (seed 000, "Shell").

Each command leads its own process group, so a timeout or a cancelled run kills everything it
started (`kill -- -PGID`), not just the shell; so do the runtime's close and its host's death (see
`_watchdog`). A group is signalled through its leader's pidfd, taken when the shell starts, or by
number only while that shell is unreaped (`unified._pgroup`): on asyncio the loop's child watcher
reaps a shell the moment it exits, and its group's number may go to a stranger once the group is
empty. The shell gets an environment without credentials: the variables of
`SHELL_ENV_ALLOWLIST` (plus any the caller allows), never a secret value (docs/tools.md).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import resource
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import Process
from pydantic import Field

from unified import _git_drivers
from unified import _limits as limits
from unified._environ import absolute_search_path
from unified._files import open_regular_fd
from unified._pgroup import ProcessGroup
from unified._redaction import REDACTED, SPLIT_HOLD_MIN, Redactor, is_secret, redactor
from unified._undumpable import hide_host_environment
from unified.tools import _safe_io, _watchdog
from unified.tools._base import Params, Progress, ToolError, ToolOutput, require_unicode
from unified.tools._paths import Workspace, echoed, shown_text

__all__ = [
    "BACKGROUND_READ_CAP",
    "MAX_DELAY_MS",
    "SHELL_ENV_ALLOWLIST",
    "SHELL_OUTPUT_CAP",
    "SHELL_SETTINGS",
    "BackgroundProcess",
    "GroupWatch",
    "ListBackgroundParams",
    "ReadBackgroundParams",
    "ShellConfig",
    "ShellParams",
    "hide_host_environment",
    "list_background_processes",
    "read_background_output",
    "run_shell_command",
]

SHELL_OUTPUT_CAP = 32 * 1024
MAX_DELAY_MS = 60_000
"""The longest `delay_ms` a call may wait: a larger one (`1e18`) would hold the call forever."""
BACKGROUND_READ_CAP = 64 * 1024
_PROGRESS_CHARS = 200
_DRAIN_AFTER_EXIT_S = 0.2
_PROGRESS_EVERY_S = 1.0

SHELL_ENV_ALLOWLIST = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "TZ",
    "TMPDIR",
)
"""The host's variables a shell command sees (`*` and `?` wildcards); every other one is dropped.

Not PWD/OLDPWD: bash sets them for the directory it starts in, which is not the host's.
"""

SHELL_SETTINGS: Mapping[str, str] = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "safe.bareRepository",
    "GIT_CONFIG_VALUE_0": "explicit",
    "GIT_CONFIG_KEY_1": "core.fsmonitor",
    "GIT_CONFIG_VALUE_1": "false",
}
"""Set for every command: nothing may wait for a keypress or a password no one will type, and git
uses a bare repository only when told to (`--git-dir`): a directory of plain files the model wrote
(`x/HEAD`, `x/config` with `core.fsmonitor = <command>`) is not a repository an allowed `git status`
run inside it picks up and obeys. (A `.git` directory is a protected path; such a directory is not.) Nor does an
allowed `git status` or `git grep` run the `core.fsmonitor` command of a workspace's own `.git/config` (a hostile
repository's: `_binary.environment.GIT_SAFETY`)."""


async def _open_shielded(command: list[str], **kwargs: Any) -> Process:
    """`anyio.open_process`, which a cancellation cannot cut short.

    On asyncio, a cancel that lands while the child's pipes connect (likely on a loaded machine)
    makes asyncio kill the shell alone and raise before its pid is known, so the rest of its group
    (`cmd &`, pipelines) would run on. Starting takes no time worth cancelling; the caller's next
    checkpoint raises the cancel, with the group known and killed.
    """
    with anyio.CancelScope(shield=True):
        process = await anyio.open_process(command, **kwargs)
    return process


def _describe_duration(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} seconds"


_JOBS_FILE_MAX_BYTES = 64 * 1024


def _size(count: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def _bounds() -> str:
    """The script lines that bound every process of a command (`limits.SHELL_MAX_MEMORY_BYTES`,
    `limits.SHELL_MAX_FILE_BYTES`, `limits.SHELL_MAX_PROCESSES` beyond the tasks running now), run by its
    shell before the command:
    as *hard* limits, which a process without CAP_SYS_RESOURCE can lower but never raise, and which
    every process the command starts inherits. A bound the host already holds tighter is kept; one
    the system refuses (where RLIMIT_DATA is not enforced) is passed over, as the command would fail
    at the first word otherwise. Read at each call, so a test may lower a limit."""
    lines = []
    for option, which, wanted, unit in (
        ("-d", resource.RLIMIT_DATA, limits.SHELL_MAX_MEMORY_BYTES, 1024),
        ("-f", resource.RLIMIT_FSIZE, limits.SHELL_MAX_FILE_BYTES, 1024),
        ("-u", resource.RLIMIT_NPROC, limits.SHELL_MAX_PROCESSES + _tasks_now(), 1),
    ):
        soft, hard = resource.getrlimit(which)
        value = wanted // unit
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard // unit)
        both = "S" if soft == resource.RLIM_INFINITY or soft // unit > value else ""
        lines.append(f"builtin ulimit -H{both} {option} {value} 2>/dev/null\n")
    return "".join(lines)


def _tasks_now() -> int:
    """The tasks the machine runs now (`/proc/loadavg`), 0 where it cannot say. RLIMIT_NPROC counts
    every process and thread of the user, not the command's: the bound is set this far above what
    already runs, so a user with many processes can still fork `SHELL_MAX_PROCESSES` more, no more."""
    try:
        with open("/proc/loadavg", "rb") as file:
            return int(file.read(256).split()[3].split(b"/")[1])
    except (OSError, IndexError, ValueError):
        return 0


_RESOURCE_FAILURE = re.compile(
    r"Resource temporarily unavailable|Cannot allocate memory|MemoryError|out of memory|bad_alloc|"
    r"fork: retry|memory allocation failed|File size limit exceeded|File too large",
    re.IGNORECASE,
)
"""What a program says when a fork, an allocation or a write fails for its size (bash names SIGXFSZ
"File size limit exceeded", EFBIG is "File too large"): the command may have met its bounds."""


def _bounds_note(text: str) -> str | None:
    """A line saying the command's bounds when its output shows a fork, an allocation or a write
    failing, so the model learns why (and that retrying the same way fails the same way)."""
    if not _RESOURCE_FAILURE.search(text):
        return None
    return (
        f"Limits: each process of a command may allocate {_size(limits.SHELL_MAX_MEMORY_BYTES)} and write files "
        f"up to {_size(limits.SHELL_MAX_FILE_BYTES)}, and the user may start {limits.SHELL_MAX_PROCESSES} "
        "processes; a fork, an allocation or a write past that fails, as this command's output suggests one did."
    )


def _open_own(path: Path, flags: int) -> int:
    """A file of the runtime's log directory, opened never through a link and never as a FIFO or a
    device: a command can find the directory (its own script, `$BASH_EXECUTION_STRING`, names the
    jobs file) and put either there, and a blocking open or an endless read of it would hold the host
    in a thread no cancel reaches. OSError otherwise (`NotRegularFile`, ELOOP for a link)."""
    return open_regular_fd(path, flags | os.O_NOFOLLOW)


class CappedLog:
    """A background command's output on disk, at most `limit` bytes: the newest output, in two
    halves (`<log>` and `<log>.1`, the older half). A thread of its own copies the command's pipe
    into it as the command writes, so neither the disk nor memory grows with the output."""

    def __init__(self, path: Path, limit: int = limits.BACKGROUND_LOG_MAX_BYTES) -> None:
        self.path = path
        self.older = path.with_name(path.name + ".1")
        self.half = max(limit // 2, 1)
        self.written = 0
        """Bytes the command wrote in all (kept or not)."""
        path.touch()
        self._thread: threading.Thread | None = None

    def follow(self, fd: int) -> None:
        """Copy `fd` (the read end of the command's pipe) into the log until end of file, in a thread."""
        self._thread = threading.Thread(
            target=self._copy, args=(fd,), name=f"unified-log-{self.path.name}", daemon=True
        )
        self._thread.start()

    def _copy(self, fd: int) -> None:
        size = 0
        out = None
        try:
            out = os.fdopen(_open_own(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab")
            while chunk := os.read(fd, 65536):
                if size + len(chunk) > self.half:
                    out.close()
                    os.replace(self.path, self.older)
                    out = os.fdopen(_open_own(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb")
                    size = 0
                out.write(chunk)
                out.flush()
                size += len(chunk)
                self.written += len(chunk)
        except OSError:
            pass  # the log directory went away with the runtime
        finally:
            os.close(fd)
            if out is not None:
                with contextlib.suppress(OSError):
                    out.close()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def tail(self, limit: int) -> bytes:
        """The last `limit` bytes of the output kept (read from the end: memory stays `limit`)."""
        data = _last_bytes(self.path, limit)
        if len(data) < limit:
            data = _last_bytes(self.older, limit - len(data)) + data
        return data


def _last_bytes(path: Path, limit: int) -> bytes:
    try:
        with os.fdopen(_open_own(path, os.O_RDONLY), "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read(limit)
    except OSError:
        return b""


@dataclass
class BackgroundProcess:
    pid: int
    command: str
    log: CappedLog
    popen: subprocess.Popen[bytes]
    group: ProcessGroup
    cgroup: Path | None = None

    def status(self) -> str:
        code = self.popen.poll()
        if code is None:
            return "RUNNING"
        if code < 0:
            return f"KILLED ({signal.Signals(-code).name})"
        return f"EXITED ({code})"


class GroupWatch:
    """The host's end of a runtime's containment (`_watchdog`): its cgroup where the machine allows
    one, its process groups and marker otherwise, and the watchdog that kills them all if the host
    dies. Started on the first shell call; knows every group a shell call started that may still run.
    """

    def __init__(self) -> None:
        self.marker = os.urandom(8).hex()
        """The value of `_watchdog.OWNER_VARIABLE` in this runtime's shells."""
        self.groups: dict[int, ProcessGroup] = {}
        """Every group a shell call started that may still run, by number, each held through its leader's
        pidfd where there is one (`ProcessGroup`)."""
        self.watchdog_pid: int | None = None
        self._containment: _watchdog.Containment | None = None
        self._contained = False
        self._lock = anyio.Lock()
        self._pipe: int | None = None
        """The write end of the watchdog's pipe."""
        self._closer: weakref.finalize[[int], GroupWatch] | None = None
        """Closes `_pipe`: at `close()`, or when a runtime nobody closed is collected or the host exits."""

    def call_cgroup(self) -> Path | None:
        """A cgroup for one shell call (made with the runtime's on first use), or None where the
        machine gives us none: then process groups and the marker are what is left."""
        if not self._contained:
            self._contained = True
            self._containment = _watchdog.Containment.create(self.marker)
        if self._containment is None:
            return None
        return self._containment.call_cgroup(limits.SHELL_MAX_PROCESSES)

    @property
    def cgroup(self) -> Path | None:
        return self._containment.path if self._containment is not None else None

    async def add(self, group: ProcessGroup) -> None:
        """Put `group` (just started) under watch."""
        pgid = group.leader
        self.groups[pgid] = group
        async with self._lock:
            if self._send(f"+ {pgid}\n"):
                return
            # First use, or the watchdog was killed: start one and tell it everything.
            self._pipe = await anyio.to_thread.run_sync(self._start)
            if self._pipe is not None:
                self._closer = weakref.finalize(self, os.close, self._pipe)
                told = [f"m {self.marker}\n"] + ([f"c {self.cgroup}\n"] if self.cgroup is not None else [])
                self._send("".join([*told, *(f"+ {group}\n" for group in self.groups)]))

    def prune(self) -> None:
        """Forget the groups that have no process left, so a reused group number is never killed. Asked
        through the leader's pidfd where the kernel can; else by number, which may say "alive" for a
        stranger's group that got the number since: it is kept then, and `_watchdog.kill_owned_group`
        checks whose it is before it kills."""
        for pgid, handle in list(self.groups.items()):
            alive = handle.alive()
            if alive is None:
                try:
                    os.killpg(pgid, 0)
                    alive = True
                except ProcessLookupError:
                    alive = False
                except PermissionError:
                    alive = True
            if not alive:
                self._forget(pgid)

    def _forget(self, pgid: int) -> None:
        self.groups.pop(pgid).close()
        self._send(f"- {pgid}\n")

    async def kill_call(self, group: ProcessGroup, cgroup: Path | None) -> None:
        """Kill what one shell call started: its cgroup whole, or its process group."""
        group.signal(signal.SIGKILL)
        if cgroup is not None:
            await anyio.to_thread.run_sync(_watchdog.kill_cgroup, cgroup)

    async def close(self) -> None:
        """Kill everything still running (`cmd &` children, `setsid`/`set -m` escapees included),
        then let the watchdog go."""
        self.prune()
        # through a pidfd where the kernel reaches a group by one (exact); the rest by number, once
        # `kill_owned_group` has found a process of ours in it
        handles, self.groups = self.groups, {}
        by_pidfd = {pgid for pgid, handle in handles.items() if handle.fd is not None and handle.reaches_by_fd()}
        for pgid in by_pidfd:
            handles[pgid].signal(signal.SIGKILL)
        groups = set(handles) - by_pidfd
        cgroup = self.cgroup
        if groups or cgroup is not None:
            await anyio.to_thread.run_sync(_watchdog.kill_all, self.marker, cgroup, groups)
        for handle in handles.values():
            handle.close()
        self._release()

    def _start(self) -> int | None:
        """Start the watchdog; the write end of its pipe, or None where it cannot run.

        Its command line and environment name neither the marker nor the cgroup: it learns both
        on the pipe. It reports its pid on a second pipe and closes it."""
        if not sys.executable:  # an embedded interpreter: nothing to run the watchdog with
            return None
        read, write = os.pipe()
        told_read, told_write = os.pipe()
        try:
            helper = subprocess.Popen(
                [sys.executable, "-I", "-S", _watchdog.__file__],
                stdin=read,
                stdout=told_write,
                stderr=subprocess.DEVNULL,
                env={},
                start_new_session=True,  # no terminal signal reaches it
            )
        except OSError:
            os.close(write)
            os.close(told_read)
            return None
        finally:
            os.close(read)
            os.close(told_write)
        helper.wait()  # it detaches at once: its first process exits after forking the watchdog
        with os.fdopen(told_read, "rb") as told:
            pid = told.read(32).split(b"\n", 1)[0]
        self.watchdog_pid = int(pid) if pid.isdigit() else None
        return write

    def _send(self, lines: str) -> bool:
        """Whether the watchdog got `lines`."""
        if self._pipe is None:
            return False
        try:
            os.write(self._pipe, lines.encode())
        except OSError:  # the watchdog was killed: the next `add` starts another
            self._release()
            return False
        return True

    def _release(self) -> None:
        """Close our end of the pipe: the watchdog kills what it still knows of and exits."""
        if self._closer is not None:
            self._closer()
        self._closer = None
        self._pipe = None


@dataclass
class ShellConfig:
    """Shell settings and the session's background processes (owned by the runtime)."""

    workspace: Workspace
    inactivity_timeout_s: float = 300.0
    output_cap: int = SHELL_OUTPUT_CAP
    env_allowlist: tuple[str, ...] = ()
    """Names (wildcards allowed) of the host's variables to pass on besides `SHELL_ENV_ALLOWLIST`."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables to set in every command, as given (the caller's deliberate choice, secrets included)."""
    secrets: tuple[str, ...] = ()
    """Secret values besides the environment's, replaced in what the model reads."""
    hide_host_environment: bool = True
    """Make this process undumpable before the first command starts (`hide_host_environment`)."""
    background: dict[int, BackgroundProcess] = field(default_factory=dict)
    watch: GroupWatch = field(default_factory=GroupWatch)
    _log_dir: Path | None = None

    def log_dir(self) -> Path:
        if self._log_dir is None:
            self._log_dir = Path(tempfile.mkdtemp(prefix="unified-shell-"))
        return self._log_dir

    def redactor(self) -> Redactor:
        return redactor(extra=self.secrets)

    def search_path(self) -> str:
        """The `PATH` commands run with (`environment`'s): a `shell_env` PATH, else this process's. A
        write into one of its directories replaces a program a later command runs (`_protected`)."""
        return absolute_search_path(self.env.get("PATH") or SHELL_SETTINGS.get("PATH") or os.environ.get("PATH", ""))

    def environment(self, cwd: Path | None = None) -> dict[str, str]:
        """What a command's environment holds: allowlisted host variables without secrets, then ours; for a
        command run in `cwd`, the settings that stop what its repository's config names for a diff or a filter
        (`_git_drivers.overrides`, read now: the config as it is when the command starts)."""
        allowed = (*SHELL_ENV_ALLOWLIST, *self.env_allowlist)
        clean = redactor()
        env = {
            name: value
            for name, value in os.environ.items()
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in allowed)
            and not is_secret(name, value)
            and clean(value) == value  # holds no secret value of another variable
        }
        env.update(SHELL_SETTINGS)
        drivers = _git_drivers.overrides(cwd) if cwd is not None else []
        for at, (key, value) in enumerate(drivers, start=int(SHELL_SETTINGS["GIT_CONFIG_COUNT"])):
            env[f"GIT_CONFIG_KEY_{at}"], env[f"GIT_CONFIG_VALUE_{at}"] = key, value
        env["GIT_CONFIG_COUNT"] = str(int(SHELL_SETTINGS["GIT_CONFIG_COUNT"]) + len(drivers))
        env.update(self.env)
        env["PATH"] = self.search_path()  # its relative entries left out (`absolute_search_path`)
        env[_watchdog.OWNER_VARIABLE] = self.watch.marker
        return env

    async def close(self) -> None:
        """Kill everything still running (background processes, `cmd &` children, whatever left its
        group) and drop the logs."""
        for proc in self.background.values():
            proc.group.signal(signal.SIGKILL)
        await self.watch.close()
        for proc in self.background.values():
            await anyio.to_thread.run_sync(proc.popen.wait)
            await anyio.to_thread.run_sync(proc.log.join, 5.0)
        if self._log_dir is not None:
            await anyio.to_thread.run_sync(_remove_tree, self._log_dir)
            self._log_dir = None


def _remove_tree(path: Path) -> None:
    for child in path.iterdir():
        child.unlink(missing_ok=True)
    path.rmdir()


def _into_cgroup(cgroup: Path | None) -> tuple[int | None, str]:
    """A write descriptor of a call cgroup's `cgroup.procs`, and the script line that moves the
    shell into it (through that descriptor, then closed) before anything else runs."""
    if cgroup is None:
        return None, ""
    try:
        fd = os.open(cgroup / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return None, ""
    return fd, f"{{ builtin echo $$ >&{fd}; }} 2>/dev/null; exec {fd}>&-\n"


_TERMINAL_SEQUENCES = re.compile(
    "(?:\x1b\\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erasing (`ESC[31m`, `ESC[1A`, `ESC[2K`)
    "|(?:\x1b[]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x9c\n\x90\x98\x9d-\x9f]*(?:\x07|\x1b\\\\|\x9c)"  # OSC, DCS
    "|\x1b[ -/]*[0-~]"  # the other escapes: `ESC 7`/`ESC 8` (cursor saved, restored), `ESC M` (a line up), `ESC c`
)
"""The ECMA-48 sequences a terminal acts on instead of showing (OSC, DCS: a title, a link). An OSC or DCS ends on
its line, so one left open cannot take the lines after it away: only its opening two characters go, as do those
of a CSI cut short; a lone ESC at the end is escaped by `shown_text`. Nor does its body hold another opener: each
opener's body was read to the line's end when no terminator came, and a line of 16,384 8-bit OSC openers (the
32 KiB a result keeps) took 1.4 s of CPU to clean, 5 s at 32,768 (a background read's 64 KiB), quadratically."""


def terminal_text(text: str, clean: Redactor) -> str:
    """A command's output as the model (and a `tool_progress` line) reads it: what it printed, never what a
    terminal would make of it. Escape sequences are removed (colours are noise; a cursor move or an erase could
    hide a line), a CRLF becomes a line feed, and every other control but the tab and the line feed is written
    as a Python string literal writes it (`shown_text`): a lone CR that would overwrite a line on a terminal
    shows as `\\r`, so a command cannot fake a line of its output, or of this result's. Secrets are replaced
    again after the sequences go: one printed with sequences between its characters is whole only then."""
    return shown_text(clean(_TERMINAL_SEQUENCES.sub("", text).replace("\r\n", "\n")))


def shown_output(data: bytes, total: int, cap: int, clean: Redactor) -> str:
    """The tail of a command's output as the model reads it: secrets replaced first, over what was
    kept beyond the cap too, so a secret cut by the cap is still replaced whole; then the cut, then
    `terminal_text`."""
    text = data.decode("utf-8", errors="replace")
    if total <= cap:
        return terminal_text(clean(text), clean).rstrip("\n")
    start = len(data[: max(len(data) - cap, 0)].decode("utf-8", errors="replace"))
    shown = cut_tail(text, start, clean).rstrip("\n")
    return f"[output cut: the first {total - cap} bytes were dropped, the last {cap} kept]\n{shown}"


_CUT_SEQUENCE = re.compile(r"[0-?]+[ -/]*[@-~]")
"""What a CSI sequence cut within its parameters leaves at the start of a tail (`42;5m`)."""


def cut_tail(text: str, start: int, clean: Redactor) -> str:
    """`text[start:]`, the end of a longer output, as the model reads it (`terminal_text`), `text[:start]` (the
    margin kept before the cut) only read for secrets that straddle `start`. A secret printed with a sequence
    between its characters spans more bytes than that margin (14 a character with `ESC[0;1;31;42;5m`), so the cut
    can drop its first characters with the margin and show its last ones once the sequences go: a tail that begins
    with `SPLIT_HOLD_MIN` or more characters that end a secret (behind what a sequence cut within its parameters
    left, if any) shows the replacement there instead."""
    shown = terminal_text(clean.window(text, start), clean)
    fragment = _CUT_SEQUENCE.match(shown)
    for skip in (0, fragment.end()) if fragment is not None else (0,):
        end = clean.partial_prefix(shown[skip:])
        if end >= SPLIT_HOLD_MIN:
            return REDACTED + shown[skip + end :]
    return shown


def _margin(clean: Redactor) -> int:
    """Bytes kept before the cap so a secret that straddles it is seen whole (4 per character)."""
    return 4 * max((len(v) for v in clean.values), default=0) + 16


class ShellParams(Params):
    command: str = Field(description="The bash command to run.")
    description: str | None = Field(default=None, description="A short note of what the command does.")
    dir_path: str | None = Field(default=None, description="Directory to run in; the workspace root if left out.")
    is_background: bool = Field(
        default=False, description="Run in the background and return after delay_ms; do not use `&`."
    )
    delay_ms: int = Field(
        default=200,
        ge=0,
        le=MAX_DELAY_MS,
        description="How long a background command runs before the call returns (at most 60,000).",
    )


async def _cwd(config: ShellConfig, raw: str | None) -> Path:
    path = await config.workspace.resolve(raw or ".")
    if not await anyio.Path(path).is_dir():
        for root in config.workspace.roots:
            if path.is_relative_to(root) and not await anyio.Path(root).is_dir():
                raise _safe_io.root_gone(root)
        raise ToolError(f"Path is not a directory: {config.workspace.display(path)}")
    return path


async def run_shell_command(config: ShellConfig, p: ShellParams, progress: Progress) -> ToolOutput:
    if not p.command.strip():
        raise ToolError("command must not be empty.")
    if "\x00" in p.command:  # an argument of exec cannot hold one: Popen would raise ValueError
        at = p.command.index("\x00")
        raise ToolError(f"command holds a NUL byte (at character {at}), which bash cannot be given; remove it.")
    require_unicode(p.command, "command")
    cwd = await _cwd(config, p.dir_path)
    if config.hide_host_environment:
        hide_host_environment()
    if p.is_background:
        return await _run_background(config, p, cwd)
    clean = config.redactor()
    keep = config.output_cap + _margin(clean)
    jobs_file = config.log_dir() / f"jobs-{os.urandom(6).hex()}"
    cgroup = await anyio.to_thread.run_sync(config.watch.call_cgroup)
    move, into = _into_cgroup(cgroup)
    script = f"{into}{_bounds()}trap 'jobs -p > {shlex.quote(str(jobs_file))} 2>/dev/null' EXIT\n{p.command}"
    env = await anyio.to_thread.run_sync(config.environment, cwd)  # reads the repository's git config: off the loop
    try:
        process = await _open_shielded(
            ["bash", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=env,
            start_new_session=True,
            pass_fds=(move,) if move is not None else (),
        )
    except OSError as exc:
        raise ToolError(f"Error: could not start bash: {exc}") from exc
    finally:
        if move is not None:
            os.close(move)
    pgid = process.pid
    group = ProcessGroup(pgid, lambda: process.returncode is not None)
    with anyio.CancelScope(shield=True):  # a group started must be watched, cancelled or not
        await config.watch.add(group)
    buf = bytearray()
    total = 0
    last_output = anyio.current_time()
    last_progress = 0.0
    timed_out = False
    overran = False
    deadline = anyio.current_time() + limits.SHELL_MAX_RUN_S
    drained = anyio.Event()

    async def pump() -> None:
        nonlocal total, last_output, last_progress
        assert process.stdout is not None
        try:
            async for chunk in process.stdout:
                buf.extend(chunk)
                total += len(chunk)
                if len(buf) > keep:
                    del buf[: len(buf) - keep]
                last_output = anyio.current_time()
                if last_output - last_progress >= _PROGRESS_EVERY_S:
                    last_progress = last_output
                    line = _progress_line(buf, clean)
                    if line:
                        await progress(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        drained.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            while True:
                now = anyio.current_time()
                remaining = min(last_output + config.inactivity_timeout_s, deadline) - now
                with anyio.move_on_after(max(remaining, 0)):
                    await process.wait()
                    break
                now = anyio.current_time()
                if now - last_output >= config.inactivity_timeout_s or now >= deadline:
                    # output restarts the inactivity timeout, so `yes` needs the run's own bound
                    timed_out = now - last_output >= config.inactivity_timeout_s
                    overran = not timed_out
                    await config.watch.kill_call(group, cgroup)
                    await process.wait()
                    break
            # `cmd &` children may hold the pipe open: read what is there, then stop listening.
            with anyio.move_on_after(_DRAIN_AFTER_EXIT_S):
                await drained.wait()
            tg.cancel_scope.cancel()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await config.watch.kill_call(group, cgroup)
            await process.wait()
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
        config.watch.prune()
    text = shown_output(bytes(buf), total, config.output_cap, clean)
    if overran or timed_out:
        head = (
            "Command was automatically cancelled because it ran longer than "
            f"{_describe_duration(limits.SHELL_MAX_RUN_S)}, the most a command may run; its processes were killed."
            if overran
            else "Command was automatically cancelled because it exceeded the timeout of "
            f"{_describe_duration(config.inactivity_timeout_s)} without output."
        )
        if text.strip():
            raise ToolError(f"{head} Below is the output before it was cancelled:\n{text}")
        raise ToolError(f"{head} There was no output before it was cancelled.")
    lines = [f"Output: {text if text.strip() else '(empty)'}"]
    code = process.returncode
    if code is not None and code > 0:
        lines.append(f"Exit Code: {code}")
    if code is not None and code < 0:
        lines.append(f"Signal: {signal.Signals(-code).name}")
    note = _bounds_note(text) if code else None
    if note is not None:
        lines.append(note)
    background = await anyio.to_thread.run_sync(_read_jobs, jobs_file)
    if background:
        lines.append(f"Background PIDs: {', '.join(background)}")
    lines.append(f"Process Group PGID: {pgid}")
    return ToolOutput("\n".join(lines))


_OPEN_SEQUENCE = re.compile("(?:\x1b[ -/]*|(?:\x1b\\[|\x9b)[0-?]*[ -/]*)\\Z")
"""An escape sequence the output so far ends inside of (its final byte not yet read)."""


def _progress_line(buf: bytearray, clean: Redactor) -> str:
    """The last line of the output so far for a progress event: secrets replaced over the bytes
    before it too, and the end held back while it may still become a secret (`SplitGuard`). The
    terminal's sequences go first (and one the output ends inside of is held back): coloured output
    (`grep --color`) splits a secret with them, and the end `sk-ant<ESC>[m<ESC>[K-api03-Zq9` read so far
    was not the beginning of a secret to the hold, but became one once they went: it was shown."""
    margin = _margin(clean)
    raw = bytes(buf[-(4 * _PROGRESS_CHARS + 2 * margin) :]).decode("utf-8", errors="replace")
    opened = _OPEN_SEQUENCE.search(raw)
    text = _TERMINAL_SEQUENCES.sub("", raw if opened is None else raw[: opened.start()])
    # a printed form (hex) cut by the line so far, a folded one (`fold -w8`) too, and no piece of a form (round 30)
    hold = clean.streamed().partial_suffix(text) or clean.loose_hold(text, 0)
    start = min(margin, len(text) - hold) if len(buf) > len(raw) else 0
    shown = clean.window(text[: len(text) - hold], max(start, 0), fragments=True).strip().splitlines()
    return terminal_text(shown[-1][:_PROGRESS_CHARS], clean) if shown else ""


def _read_jobs(path: Path) -> list[str]:
    """The pids the command's EXIT trap wrote (what the command made of the file: only its first
    64 KiB, only if it is still a regular file, only the numbers)."""
    try:
        fd = _open_own(path, os.O_RDONLY)
    except OSError:
        data = b""
    else:
        try:
            data = os.read(fd, _JOBS_FILE_MAX_BYTES)
        finally:
            os.close(fd)
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)
    return [word for word in data.decode("ascii", errors="replace").split() if word.isdigit()]


async def _run_background(config: ShellConfig, p: ShellParams, cwd: Path) -> ToolOutput:
    log = CappedLog(config.log_dir() / f"bg-{os.urandom(6).hex()}.log")
    cgroup = await anyio.to_thread.run_sync(config.watch.call_cgroup)
    move, into = _into_cgroup(cgroup)

    def spawn() -> tuple[subprocess.Popen[bytes], ProcessGroup]:
        read, write = os.pipe()
        try:
            popen = subprocess.Popen(
                ["bash", "-c", f"{into}{_bounds()}{p.command}"],
                stdin=subprocess.DEVNULL,
                stdout=write,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=config.environment(cwd),
                start_new_session=True,
                pass_fds=(move,) if move is not None else (),
            )
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(write)
        log.follow(read)
        return popen, ProcessGroup(popen.pid, lambda: popen.returncode is not None)

    try:
        popen, group = await anyio.to_thread.run_sync(spawn)
    except OSError as exc:
        raise ToolError(f"Error: could not start bash: {exc}") from exc
    finally:
        if move is not None:
            os.close(move)
    with anyio.CancelScope(shield=True):
        await config.watch.add(group)
    proc = BackgroundProcess(popen.pid, p.command, log, popen, group, cgroup)
    config.background[popen.pid] = proc
    await anyio.sleep(p.delay_ms / 1000)
    clean = config.redactor()
    data = await anyio.to_thread.run_sync(log.tail, config.output_cap + _margin(clean))
    so_far = shown_output(
        data, min(log.written, len(data)) if log.written <= len(data) else log.written, config.output_cap, clean
    )
    return ToolOutput(
        f"Command moved to the background (PID {popen.pid}, {proc.status()}).\n"
        f"Output so far: {so_far if so_far.strip() else '(empty)'}\n"
        f"Process Group PGID: {popen.pid}\n"
        "Read its output with read_background_output; see all with list_background_processes."
    )


class ListBackgroundParams(Params):
    pass


async def list_background_processes(config: ShellConfig, p: ListBackgroundParams, progress: Progress) -> ToolOutput:
    if not config.background:
        return ToolOutput("No background processes found.")
    return ToolOutput(
        "\n".join(f"- [PID {pid}] {proc.status()}: `{echoed(proc.command)}`" for pid, proc in config.background.items())
    )


class ReadBackgroundParams(Params):
    pid: int = Field(description="PID of a background process started by run_shell_command.")
    lines: int = Field(default=100, ge=1, description="How many of the last lines to return.")
    delay_ms: int = Field(
        default=0, ge=0, le=MAX_DELAY_MS, description="Wait this long before reading (at most 60,000)."
    )


async def read_background_output(config: ShellConfig, p: ReadBackgroundParams, progress: Progress) -> ToolOutput:
    proc = config.background.get(p.pid)
    if proc is None:
        raise ToolError(f"Access denied. Background process ID {p.pid} not found in this session's history.")
    await anyio.sleep(p.delay_ms / 1000)
    if proc.popen.poll() is not None:
        # It ended, and what it wrote last may still be in its pipe, not yet in the log: wait until the
        # log has it all (bounded, as a foreground command's drain: a `cmd &` child may hold the pipe).
        await anyio.to_thread.run_sync(proc.log.join, _DRAIN_AFTER_EXIT_S)
    clean = config.redactor()
    margin = _margin(clean)

    def tail() -> tuple[list[str], int]:
        data = proc.log.tail(BACKGROUND_READ_CAP + margin)
        text = data.decode("utf-8", errors="replace")
        start = len(data[:margin].decode("utf-8", errors="replace")) if len(data) > BACKGROUND_READ_CAP else 0
        lines = (cut_tail(text, start, clean) if start else terminal_text(clean(text), clean)).splitlines()
        return lines[-p.lines :], len(lines)

    shown, total = await anyio.to_thread.run_sync(tail)
    if not shown:
        return ToolOutput(f"No output yet from background process {p.pid} ({proc.status()}).")
    return ToolOutput(f"Showing last {len(shown)} of {total} lines ({proc.status()}):\n" + "\n".join(shown))
