"""What every fake model server of the test kit shares: an HTTP server on 127.0.0.1 in a thread.

`FakeGemini`, `FakeAnthropic` and `FakeOpenAI` each speak their provider's wire; how they are
started, stopped (plainly, `with`, `async with`) and found (`port`, `base_url`) is this one class,
so the three cannot drift apart.
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, ClassVar, Self

import anyio.to_thread

__all__ = ["FakeHTTPServer", "FakeHandler", "ThreadedFake"]


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


class FakeHTTPServer(ThreadingHTTPServer):
    """The HTTP server of a fake: on 127.0.0.1 at the fake's port, one thread per connection."""

    daemon_threads = True
    request_queue_size = 256  # a burst of concurrent clients (100 runs at once) must not be refused

    def __init__(self, fake: ThreadedFake, handler: type[BaseHTTPRequestHandler]) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", fake._port), handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a pooled keep-alive connection closed, a cancelled run) is normal here."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class FakeHandler(BaseHTTPRequestHandler):
    """What every fake's request handler shares: HTTP/1.1, no Nagle delay, no log lines, GET and POST
    answered by the subclass's `_serve` (a fake that answers more methods adds them)."""

    protocol_version = "HTTP/1.1"  # keep-alive and chunked streams, as the SDKs' pooled clients expect
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms delayed-ACK stalls

    def _serve(self) -> None:
        raise NotImplementedError

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the request log is the fake's `requests`."""
