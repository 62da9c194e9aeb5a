"""Finding, spawning and talking to the `gemini` binary.

Decisions:
- We speak ACP with a small JSON-RPC 2.0 client of our own instead of the `agent-client-protocol`
  SDK: the SDK's connection runs on asyncio streams, while `unified` must run on asyncio and trio
  under anyio. We read the handful of ACP fields we need from plain dicts; the SDK's pydantic
  models would reject nothing we care about and cost an import, so they are not used either.
- The child is spawned with `subprocess.Popen(start_new_session=True)` (its own process group),
  not `anyio.open_process`: an anyio process belongs to the event loop that spawned it, but a warm
  process in the pool outlives a run and must serve runs on later loops (each `anyio.run`, each
  test, asyncio or trio). Its pipes are non-blocking file descriptors awaited with
  `anyio.wait_readable` / `anyio.wait_writable`, which every anyio backend supports.
- The seam: `AcpConnection` talks to an `AgentProcess` (bytes in, bytes out, stderr tail, exit
  status), not to a subprocess. `ChildProcess` is the real one; `unified.testing.FakeAcp` is an
  in-process agent speaking the same JSON-RPC, so the run logic is tested without Node.
- No background reader task either (a task group would tie the process to one loop again): the
  runs sharing a process take turns reading it ("leader/follower"). Whoever waits for a message
  takes the read lock, reads one chunk, and files every complete line into the inbox it belongs to
  (by request id or by ACP `sessionId`). The lock is FIFO, so a waiter whose message was filed by
  another leader gets the lock next and returns.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import anyio

from unified._errors import AuthError, BackendError, BackendUnavailable
from unified._internal import limits
from unified._internal.gemini_install import user_installed_binary

PINNED_VERSION = "0.61.0"
MIN_VERSION = (0, 61, 0)
MAX_VERSION_EXCLUSIVE = (0, 62, 0)
INSTALL_HINT = (
    f"install the supported CLI with `unified install-gemini` (Node.js 20+; @google/gemini-cli@{PINNED_VERSION}), "
    "or point UNIFIED_GEMINI_BIN / backend_options['gemini_binary'] at it"
)
MAX_LINE_BYTES = limits.MAX_EVENT_BYTES
"""A JSON-RPC line longer than this is dropped with a warning (a tool output can be large)."""
_HEAD_BYTES = 512
_ANSWER_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(\d+)\s*,\s*"(?:result|error)"')
"""The id of an answer to one of our requests, read from the start of a line that cannot be used."""
STDERR_TAIL_BYTES = 8192

EXIT_CODES: dict[int, str] = {
    1: "general failure (see the error message)",
    41: "authentication failed: no usable credentials for the selected auth type",
    42: "invalid input (for example an unknown session for --resume)",
    44: "sandbox error",
    52: "configuration error (settings.json or a flag)",
    53: "the session hit its turn limit",
    54: "a tool failed fatally",
    55: "the workspace is not trusted",
    130: "cancelled (SIGINT)",
}


def explain_exit(code: int | None) -> str:
    if code is None:
        return "the gemini process is still running"
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}: {EXIT_CODES.get(code, 'unexpected exit')}"


def error_for_exit(code: int | None, stderr_tail: str, context: str) -> BackendError | AuthError:
    """A typed error for a gemini process that ended early; the message carries the stderr tail."""
    tail = stderr_tail.strip()
    message = f"{context}: {explain_exit(code)}" + (f"\nstderr (last lines):\n{tail}" if tail else "")
    details: dict[str, Any] = {"exit_code": code, "stderr_tail": tail}
    if code == 41:
        return AuthError(
            message,
            hint="set GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI with project/location, or log in with `gemini`",
            details=details,
        )
    return BackendError(message, hint="see the stderr tail; rerun with the same options to reproduce", details=details)


# --- the binary ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GeminiBinary:
    path: Path
    version: tuple[int, int, int]

    @property
    def version_text(self) -> str:
        return ".".join(map(str, self.version))


def _project_local_binary() -> Path | None:
    for base in (Path.cwd(), *Path(__file__).resolve().parents):
        candidate = base / ".gemini-cli" / "node_modules" / ".bin" / "gemini"
        if candidate.exists():
            return candidate
    return None


def find_binary(explicit: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    """Explicit option, `UNIFIED_GEMINI_BIN`, the project-local `.gemini-cli`, `unified install-gemini`'s, PATH."""
    for source, value in (
        ("backend_options['gemini_binary']", explicit),
        ("UNIFIED_GEMINI_BIN", env.get("UNIFIED_GEMINI_BIN")),
    ):
        if value:
            path = Path(value).expanduser()
            if not path.exists():
                raise BackendUnavailable(f"{source} points at {path}, which does not exist", hint=INSTALL_HINT)
            return path
    local = _project_local_binary() or user_installed_binary()  # the second from `unified install-gemini`
    if local is not None:
        return local
    found = shutil.which("gemini", path=env.get("PATH"))
    if found is None:
        raise BackendUnavailable("the `gemini` binary was not found", hint=INSTALL_HINT)
    return Path(found)


_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_version_cache: dict[tuple[str, float], tuple[int, int, int]] = {}


def _package_version(binary: Path) -> str | None:
    """The npm package's version, read from its package.json (no Node start-up needed)."""
    for parent in binary.resolve().parents:
        manifest = parent / "package.json"
        if manifest.is_file():
            try:
                data = json.loads(manifest.read_text())
            except (OSError, ValueError):
                return None
            if data.get("name") == "@google/gemini-cli":
                return str(data.get("version"))
            return None
    return None


def probe_version(binary: Path, env: Mapping[str, str]) -> tuple[int, int, int]:
    key = (str(binary), binary.stat().st_mtime)
    if key in _version_cache:
        return _version_cache[key]
    text = _package_version(binary)
    if text is None:
        try:
            with tempfile.TemporaryDirectory(prefix="unified-gemini-version-") as home:  # never the user's ~/.gemini
                done = subprocess.run(
                    [str(binary), "--version"],
                    capture_output=True,
                    text=True,
                    timeout=30,
                    env={**env, "HOME": home, "GEMINI_CLI_HOME": home, "GEMINI_CLI_NO_RELAUNCH": "true"},
                    check=False,
                )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BackendUnavailable(f"could not run {binary} --version: {exc}", hint=INSTALL_HINT) from exc
        text = done.stdout
    match = _VERSION_RE.search(text or "")
    if match is None:
        raise BackendUnavailable(f"{binary} did not report a version ({text!r})", hint=INSTALL_HINT)
    version = (int(match[1]), int(match[2]), int(match[3]))
    _version_cache[key] = version
    return version


def locate(explicit: str | os.PathLike[str] | None, env: Mapping[str, str]) -> GeminiBinary:
    """The binary to run, checked against the supported version range."""
    path = find_binary(explicit, env)
    version = probe_version(path, env)
    if not MIN_VERSION <= version < MAX_VERSION_EXCLUSIVE:
        found = ".".join(map(str, version))
        raise BackendUnavailable(
            f"{path} is gemini-cli {found}; unified supports {'.'.join(map(str, MIN_VERSION))} up to "
            f"(not including) {'.'.join(map(str, MAX_VERSION_EXCLUSIVE))}",
            hint=INSTALL_HINT,
        )
    return GeminiBinary(path, version)


# --- framing ------------------------------------------------------------------------------------


class LineFramer:
    """Splits a byte stream into JSON lines; a line over `limit` bytes is dropped, not buffered."""

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._skipping = 0
        """Bytes of an oversized line dropped so far (0: not inside one)."""
        self.dropped_head = b""
        """The first bytes of the last oversized line (to tell which request it answered)."""

    def feed(self, data: bytes) -> Iterator[bytes | int]:
        """Complete lines as bytes; an int is the size of an oversized line that was dropped."""
        while data:
            newline = data.find(b"\n")
            part, data = (data, b"") if newline < 0 else (data[:newline], data[newline + 1 :])
            if self._skipping:
                self._skipping += len(part)
            elif len(self._buffer) + len(part) > self._limit:
                self._skipping = len(self._buffer) + len(part)
                self.dropped_head = (bytes(self._buffer[:_HEAD_BYTES]) + part[:_HEAD_BYTES])[:_HEAD_BYTES]
                self._buffer.clear()
            else:
                self._buffer += part
            if newline < 0:
                return
            if self._skipping:
                yield self._skipping
                self._skipping = 0
            elif self._buffer.strip():
                yield bytes(self._buffer)
            self._buffer.clear()


class StderrTail:
    """The last few KB of the child's stderr: notices, and the reason when it dies."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self._limit = limit
        self._data = bytearray()

    def add(self, chunk: bytes) -> None:
        self._data += chunk
        if len(self._data) > self._limit:
            del self._data[: len(self._data) - self._limit]

    def text(self) -> str:
        return self._data.decode("utf-8", "replace")


# --- processes ----------------------------------------------------------------------------------


class AgentProcess(Protocol):
    """What `AcpConnection` and the pool need of an ACP agent: its stdio as bytes and its fate.

    Implementations must not tie themselves to one event loop: a warm process serves later loops.
    """

    pid: int
    """The OS process id (a fake's own number)."""
    stderr: StderrTail

    @property
    def returncode(self) -> int | None:
        """The exit code once it ended (negative: killed by that signal), else None."""

    async def write(self, data: bytes) -> None:
        """Write to its stdin; `ConnectionError` once it is closed."""

    async def read_stdout(self) -> bytes:
        """The next chunk of its stdout, b"" at end of file."""

    async def wait_exit(self, grace: float) -> int | None:
        """The exit code once it is gone, or None if it still runs after `grace` seconds."""

    async def terminate(self, grace: float = 1.0) -> int | None:
        """End it (and whatever it started), politely first; returns the exit code."""

    def kill_now(self) -> None:
        """End it at once without awaiting (from any loop, or none: interpreter exit)."""


def _set_nonblocking(fd: int) -> None:
    os.set_blocking(fd, False)


class ChildProcess:
    """A child in its own process group with non-blocking pipes, usable from any event loop."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], stdin: bool = True) -> None:
        """`stdin=False` gives the child /dev/null: `gemini -p` first reads a piped stdin to its end."""
        try:
            self.popen = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise BackendUnavailable(f"could not start {argv[0]}: {exc}", hint=INSTALL_HINT) from exc
        assert self.popen.stdout is not None
        assert self.popen.stderr is not None
        self.stdin_fd = self.popen.stdin.fileno() if self.popen.stdin is not None else None
        self.stdout_fd = self.popen.stdout.fileno()
        self.stderr_fd = self.popen.stderr.fileno()
        for fd in (self.stdin_fd, self.stdout_fd, self.stderr_fd):
            if fd is not None:
                _set_nonblocking(fd)
        self.pid = self.popen.pid
        self.stderr = StderrTail()
        self._write_lock = anyio.Lock()
        self._stderr_open = True

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def write(self, data: bytes) -> None:
        if self.stdin_fd is None:
            raise ConnectionError("this gemini process was started without stdin")
        async with self._write_lock:
            view = memoryview(data)
            while view:
                try:
                    written = os.write(self.stdin_fd, view)
                except BlockingIOError:
                    await anyio.wait_writable(self.stdin_fd)
                    continue
                except (BrokenPipeError, OSError) as exc:
                    raise ConnectionError(f"gemini's stdin is closed: {exc}") from exc
                view = view[written:]

    async def read_stdout(self) -> bytes:
        """The next chunk of stdout (b'' at EOF), draining stderr meanwhile so neither pipe fills."""
        while True:
            chunk = self._try_read(self.stdout_fd)
            if chunk is not None:
                return chunk
            self.drain_stderr()
            if not self._stderr_open:
                await anyio.wait_readable(self.stdout_fd)
                continue
            async with anyio.create_task_group() as tg:

                async def wait_fd(fd: int) -> None:
                    await anyio.wait_readable(fd)
                    tg.cancel_scope.cancel()

                tg.start_soon(wait_fd, self.stdout_fd)
                tg.start_soon(wait_fd, self.stderr_fd)

    def _try_read(self, fd: int) -> bytes | None:
        try:
            return os.read(fd, 65536)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def drain_stderr(self) -> None:
        while self._stderr_open:
            chunk = self._try_read(self.stderr_fd)
            if chunk is None:
                return
            if not chunk:
                self._stderr_open = False
                return
            self.stderr.add(chunk)

    async def wait_exit(self, grace: float) -> int | None:
        """The exit code once the child is gone, or None if it still runs after `grace` seconds."""
        deadline = time.monotonic() + grace
        while self.popen.poll() is None and time.monotonic() < deadline:  # noqa: ASYNC110 -- no pidfd in anyio
            await anyio.sleep(0.02)
        self.drain_stderr()
        return self.popen.poll()

    def kill_group(self, sig: int = signal.SIGKILL) -> None:
        """Signal the whole process group (node and anything it spawned: shells, MCP servers)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def kill_now(self) -> None:
        """SIGKILL the group, reap the child, close the pipes."""
        self.kill_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)
        self.drain_stderr()
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()

    async def terminate(self, grace: float = 1.0) -> int | None:
        """SIGTERM the group, SIGKILL it after `grace` seconds, reap the child, close the pipes."""
        if self.popen.poll() is None:
            self.kill_group(signal.SIGTERM)
            if await self.wait_exit(grace) is None:
                self.kill_group(signal.SIGKILL)
                await self.wait_exit(5.0)
        # Stragglers that left the group's leader behind (e.g. a shell the CLI started).
        self.kill_group(signal.SIGKILL)
        self.drain_stderr()
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return self.popen.poll()


def start_child(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> ChildProcess:
    """The default `ProcessStarter`: the real `gemini --acp` subprocess."""
    return ChildProcess(argv, cwd=cwd, env=env)


# --- JSON-RPC -----------------------------------------------------------------------------------


class AcpRequestError(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, method: str, error: Mapping[str, Any]) -> None:
        self.method = method
        self.code = int(error.get("code", 0) or 0)
        self.message = str(error.get("message", ""))
        self.data = error.get("data")
        super().__init__(f"{method} failed ({self.code}): {self.message}")


class ConnectionClosed(Exception):
    """The gemini process ended (or its stdout closed) while a run was waiting on it."""


@dataclass(slots=True)
class Inbox:
    """Messages for one ACP session (notifications, agent requests) and its pending answers."""

    messages: deque[dict[str, Any]] = field(default_factory=deque)

    def put(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    def pop(self) -> dict[str, Any] | None:
        return self.messages.popleft() if self.messages else None


@dataclass(frozen=True, slots=True)
class Malformed:
    """A stdout line we could not use; surfaced to whichever run reads next as a warning."""

    reason: str


class AcpConnection:
    """JSON-RPC 2.0 over a `gemini --acp` child, shared by the sessions (runs) it hosts."""

    def __init__(self, child: AgentProcess) -> None:
        self.child = child
        self._framer = LineFramer()
        self._read_lock = anyio.Lock()
        self._next_id = 0
        self._answers: dict[int, Inbox] = {}
        self._sessions: dict[str, Inbox] = {}
        self._unrouted = Inbox()
        """Messages for no known session (startup notices, malformed lines); read by whoever asks."""
        self.closed = False
        self.agent_info: dict[str, Any] = {}
        self.can_load = False
        """Whether the agent offers `session/load` (its `agentCapabilities.loadSession`)."""
        self.transcript: list[dict[str, Any]] | None = None
        """When a list, every message both ways is appended as `{"dir": "send"|"recv", "msg": ...}`
        (recording cassettes for the Node-free unit tests)."""

    # registration
    def open_inbox(self, session_id: str) -> Inbox:
        return self._sessions.setdefault(session_id, Inbox())

    def close_inbox(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    @property
    def session_count(self) -> int:
        return len(self._sessions)

    # sending
    async def _send(self, message: dict[str, Any]) -> None:
        if self.closed:
            raise ConnectionClosed("the gemini process has exited")
        if self.transcript is not None:
            self.transcript.append({"dir": "send", "msg": message})
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        try:
            await self.child.write(data)
        except ConnectionError as exc:
            self._mark_closed()
            raise ConnectionClosed(str(exc)) from exc

    async def notify(self, method: str, params: Mapping[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": dict(params)})

    async def respond(self, request_id: Any, result: Mapping[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "id": request_id, "result": dict(result)})

    async def respond_error(self, request_id: Any, code: int, message: str) -> None:
        await self._send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    async def start_request(self, method: str, params: Mapping[str, Any], inbox: Inbox | None = None) -> int:
        """Send a request; its answer arrives in `inbox` as `{"id", "result"|"error"}`."""
        self._next_id += 1
        request_id = self._next_id
        self._answers[request_id] = inbox if inbox is not None else Inbox()
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)})
        return request_id

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its answer; notifications meanwhile go to their inboxes."""
        inbox = Inbox()
        request_id = await self.start_request(method, params, inbox)
        try:
            answer = await self.receive(inbox)
        finally:
            self._answers.pop(request_id, None)
        if isinstance(answer.get("error"), dict):
            raise AcpRequestError(method, answer["error"])
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    def forget(self, request_id: int) -> None:
        self._answers.pop(request_id, None)

    # receiving
    async def receive(self, inbox: Inbox) -> dict[str, Any]:
        """The next message for `inbox`, reading the pipe ourselves when nobody else is."""
        while True:
            message = inbox.pop()
            if message is not None:
                return message
            if self.closed:
                raise ConnectionClosed("the gemini process has exited")
            async with self._read_lock:
                if inbox.messages or self.closed:
                    continue
                chunk = await self.child.read_stdout()
                if not chunk:
                    self._mark_closed()
                    continue
                for line in self._framer.feed(chunk):
                    self._route(line)

    def take_unrouted(self) -> list[dict[str, Any]]:
        items = []
        while (message := self._unrouted.pop()) is not None:
            items.append(message)
        return items

    def _route(self, line: bytes | int) -> None:
        if isinstance(line, int):
            self._refuse(
                self._framer.dropped_head,
                f"dropped a {line}-byte line from gemini (over the {MAX_LINE_BYTES}-byte cap)",
            )
            return
        try:
            message = json.loads(line)
        except RecursionError:
            self._refuse(line, "ignored a line from gemini nested too deeply to parse")
            return
        except ValueError:
            self._broadcast_warning(f"ignored a line from gemini that is not JSON: {line[:200]!r}")
            return
        if not isinstance(message, dict):
            self._broadcast_warning(f"ignored a JSON line that is not an object: {line[:200]!r}")
            return
        if limits.too_deep(message):
            self._refuse(line, f"ignored a line from gemini nested deeper than {limits.MAX_JSON_DEPTH} levels")
            return
        if self.transcript is not None:
            self.transcript.append({"dir": "recv", "msg": message})
        if "method" not in message:
            target = self._answers.get(message.get("id", -1)) if isinstance(message.get("id"), int) else None
            (target or self._unrouted).put(message)
            return
        params = message.get("params")
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        target = self._sessions.get(session_id) if isinstance(session_id, str) else None
        (target or self._unrouted).put(message)

    def _refuse(self, head: bytes, text: str) -> None:
        """A line that cannot be used: every run is warned, and if it answered one of our requests,
        that request fails now with `text` (instead of waiting for an answer that never comes)."""
        self._broadcast_warning(text)
        found = _ANSWER_ID.match(head[:_HEAD_BYTES])
        target = self._answers.get(int(found.group(1))) if found else None
        if target is not None and found is not None:
            target.put({"jsonrpc": "2.0", "id": int(found.group(1)), "error": {"code": -32603, "message": text}})

    def _broadcast_warning(self, text: str) -> None:
        note = {"unified_warning": text}
        for inbox in self._sessions.values():
            inbox.put(note)
        if not self._sessions:
            self._unrouted.put(note)

    def _mark_closed(self) -> None:
        self.closed = True

    async def close(self) -> int | None:
        self._mark_closed()
        return await self.child.terminate()


def json_line_warning(message: Mapping[str, Any]) -> str | None:
    """The text of a framing warning filed by `AcpConnection._broadcast_warning`, if it is one."""
    value = message.get("unified_warning")
    return value if isinstance(value, str) else None


def as_dict(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (protocol fields are never trusted)."""
    return value if isinstance(value, dict) else {}
