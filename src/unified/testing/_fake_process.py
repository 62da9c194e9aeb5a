"""FakeAgentProcess: an in-process `AgentProcess` that is one handler, from lines sent to lines answered.

    def agent(line: str) -> list[str]:
        request = json.loads(line)
        return [json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {}})]

    process = FakeAgentProcess(agent)

Give it where a backend takes its process starter (`backend_options["start_process"]` of
gemini-cli, through `FakeAgentProcess.starter(handler)`), and the backend's whole protocol layer
runs against your handler, with no binary and no subprocess: like httpx's `MockTransport` for an
HTTP client. Everything happens when the backend sends, so a test is deterministic: the handler runs
inside `send`, and its lines are on stdout before `send` returns. For output nobody asked for (a
notification, a crash) call `emit`, `write_stderr` and `exit` yourself, from the handler or the test.

It behaves like the real process where a backend can tell: lines longer than `line_limit` or not
UTF-8 (give `emit` bytes) are a `MalformedLine` at `receive`; after `exit` (or `close`, `kill`),
`receive` drains what was emitted and then returns None, and `send` raises `ConnectionError`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import anyio

from unified._exports import publish
from unified.backends import AgentProcess, MalformedLine

__all__ = ["DEFAULT_LINE_LIMIT", "FakeAgentProcess", "Handler"]

DEFAULT_LINE_LIMIT = 8 * 1024 * 1024
"""The real process's line limit (8 MiB)."""

Handler = Callable[[str], Iterable[str | bytes] | None]
"""A line the backend sent (without its newline) → the lines the agent writes back (None: nothing)."""


class FakeAgentProcess(AgentProcess):
    """An agent process played by `handler` (see the module docstring)."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        pid: int | None = None,
        line_limit: int = DEFAULT_LINE_LIMIT,
        argv: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        """`argv` and `env`: what the backend started it with (kept for the test to look at)."""
        self.handler = handler
        self.received: list[str] = []
        """Every line the backend sent, in order."""
        self.argv = list(argv)
        self.env = dict(env or {})
        self.line_limit = line_limit
        self._pid = pid
        self._returncode: int | None = None
        self._stdout: deque[str | MalformedLine] = deque()
        self._stderr = ""
        self._readable: anyio.Event | None = None

    @classmethod
    def starter(
        cls, handler: Callable[[FakeAgentProcess], Handler]
    ) -> Callable[[Sequence[str], Path, Mapping[str, str]], FakeAgentProcess]:
        """A process starter `(argv, cwd, env) -> FakeAgentProcess`: each process started gets the handler
        `handler(process)` returns (so it can `emit` or `exit` on its own process)."""

        def start(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> FakeAgentProcess:
            process = cls(argv=argv, env=env)
            process.handler = handler(process)
            return process

        return start

    # --- the agent's side -----------------------------------------------------------------------

    def emit(self, *lines: str | bytes) -> None:
        """Write lines to stdout (each without its newline); ignored once the process has exited."""
        if self._returncode is not None:
            return
        for line in lines:
            self._stdout.append(self._readable_line(line))
        self._wake()

    def write_stderr(self, text: str) -> None:
        self._stderr = (self._stderr + text)[-8192:]

    def exit(self, code: int = 0) -> None:
        """The process ends with `code`: stdout ends after what was emitted, stdin is closed."""
        if self._returncode is None:
            self._returncode = code
        self._wake()

    @property
    def closed(self) -> bool:
        """Whether it has ended (a backend must leave no process of a run running)."""
        return self._returncode is not None

    def _readable_line(self, line: str | bytes) -> str | MalformedLine:
        data = line.encode() if isinstance(line, str) else line
        data = data.removesuffix(b"\n")
        if len(data) > self.line_limit:
            return MalformedLine(
                f"over the {self.line_limit}-byte cap", len(data), data[:512].decode("utf-8", "replace")
            )
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            head = data[:512].decode("utf-8", "replace")  # as the real framer keeps it (`LineFramer.feed`)
            return MalformedLine(f"not UTF-8 ({exc.reason} at byte {exc.start})", len(data), head)

    def _wake(self) -> None:
        if self._readable is not None:
            self._readable.set()

    # --- AgentProcess ---------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._pid

    @property
    def returncode(self) -> int | None:
        return self._returncode

    async def send(self, line: str) -> None:
        if self._returncode is not None:
            raise ConnectionError("the fake agent has exited")
        self.received.append(line)
        if self.handler is not None:
            self.emit(*(self.handler(line) or ()))

    async def receive(self) -> str | None:
        while not self._stdout:
            if self._returncode is not None:
                return None
            self._readable = anyio.Event()
            await self._readable.wait()
        line = self._stdout.popleft()
        if isinstance(line, MalformedLine):
            raise line
        return line

    def stderr_tail(self) -> str:
        return self._stderr

    async def wait(self, grace: float) -> int | None:
        """A fake ends the moment it is told to: nothing to wait for."""
        return self._returncode

    async def close(self) -> None:
        self.exit(-15)

    def kill(self) -> None:
        self.exit(-9)


publish("unified.testing", ["FakeAgentProcess"], globals())
