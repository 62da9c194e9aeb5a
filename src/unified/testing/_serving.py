"""What every fake model server of the test kit shares: an HTTP server on 127.0.0.1 in a thread.

`FakeGemini`, `FakeAnthropic` and `FakeOpenAI` each speak their provider's wire; how they are
started, stopped (plainly, `with`, `async with`) and found (`port`, `base_url`) is this one class,
so the three cannot drift apart.
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import ClassVar, Self

import anyio.to_thread

__all__ = ["ThreadedFake"]


class ThreadedFake:
    """A fake server's lifecycle; a subclass builds its `ThreadingHTTPServer` in `_make_server`."""

    _title: ClassVar[str] = "the fake server"
    """How errors name it (`FakeGemini`)."""

    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    def _init_serving(self, port: int = 0) -> None:
        self._port = port
        """The port to listen on (0: any free one)."""
        self._server = None
        self._thread = None
        self.stopping = threading.Event()
        """Set by `stop`: releases every connection a ``stall`` or ``no_headers`` fault holds."""

    def _make_server(self) -> ThreadingHTTPServer:
        raise NotImplementedError

    def start(self) -> Self:
        if self._server is not None:
            raise RuntimeError(f"{self._title} is already running")
        self.stopping.clear()
        self._server = self._make_server()
        # stop() waits for the serve loop's next poll: at 50 ms, 110 short-lived servers idled 3.7 s.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.005}, name=self._title, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        self.stopping.set()
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # shutdown() waits for the serve loop's next poll: keep that off the event loop.
        await anyio.to_thread.run_sync(self.stop)

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError(f"{self._title} is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
