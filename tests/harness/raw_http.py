"""A loopback HTTP server that answers every request with one fixed answer, whatever it is asked: for the
answers no fake server gives on purpose (a proxy's HTML page, an event cut in half, a 401 to an MCP client)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["answering", "serving"]


POLL_S = 0.005
"""How often a server's loop looks for `shutdown`: at the default 0.5 s every test with a server of its own waited
up to half a second in its teardown (56 cases of bad input round 21: ~28 s of a worker's time), as
`unified.testing`'s fakes found before."""


def serving(server: ThreadingHTTPServer) -> threading.Thread:
    """`server` serving in a daemon thread, started; `shutdown` returns within `POLL_S`."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
    thread.start()
    return thread


@contextmanager
def answering(
    status: int, body: bytes, content_type: str = "application/json", headers: Mapping[str, str] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """A server on 127.0.0.1 answering every GET, POST and DELETE with `status`, `content_type`, `headers` and
    `body`, then closing the connection: its base URL, and the paths it was asked (in order)."""
    asked: list[str] = []

    class Answer(BaseHTTPRequestHandler):
        def answer(self) -> None:
            asked.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = answer

        def log_message(self, format: str, *args: object) -> None:
            del format, args

    server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = serving(server)
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
