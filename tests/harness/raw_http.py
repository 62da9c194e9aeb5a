"""A loopback HTTP server answering requests from a list of answers, whatever it is asked: for the answers no fake
server gives on purpose (a proxy's HTML page, an event cut in half, a 100 MB stream, a 401 to an MCP client, a
fallback chain's backends giving out one by one)."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

__all__ = ["Answer", "Answering", "answering", "serving"]


POLL_S = 0.005
"""How often a server's loop looks for `shutdown`: at the default 0.5 s every test with a server of its own waited
up to half a second in its teardown (56 cases of bad input round 21: ~28 s of a worker's time), as
`unified.testing`'s fakes found before."""


def serving(server: ThreadingHTTPServer) -> threading.Thread:
    """`server` serving in a daemon thread, started; `shutdown` returns within `POLL_S`."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
    thread.start()
    return thread


@dataclass(frozen=True)
class Answer:
    """One HTTP answer. A `bytes` body goes with its Content-Length; any other iterable of bytes is streamed piece
    by piece, its end the connection's close (so a 100 MB answer is never built whole on the server side)."""

    status: int
    body: bytes | Iterable[bytes]
    content_type: str = "application/json"
    headers: Mapping[str, str] = field(default_factory=dict)


class Answering:
    """A server on 127.0.0.1 answering each GET, POST and DELETE with the next of `answers` (`answers` holds those
    not given yet), then with `otherwise` for good, closing the connection after each; `asked` is the paths it was
    asked, in order. A client that leaves before the end of an answer is what some tests want: not an error here."""

    def __init__(self, answers: Iterable[Answer], otherwise: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                owner.asked.append(self.path)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                given = owner.answers.pop(0) if owner.answers else otherwise
                self.send_response(given.status)
                self.send_header("Content-Type", given.content_type)
                for name, value in given.headers.items():
                    self.send_header(name, value)
                if isinstance(given.body, bytes):
                    self.send_header("Content-Length", str(len(given.body)))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for piece in [given.body] if isinstance(given.body, bytes) else given.body:
                        self.wfile.write(piece)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_DELETE = answer

            def log_message(self, format: str, *args: object) -> None:
                del format, args

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Answering:
        self._thread = serving(self._server)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()


@contextmanager
def answering(
    status: int, body: bytes, content_type: str = "application/json", headers: Mapping[str, str] | None = None
) -> Iterator[tuple[str, list[str]]]:
    """`Answering` every request with one answer: its base URL, and the paths it was asked (in order)."""
    with Answering([], Answer(status, body, content_type, headers or {})) as server:
        yield server.base_url, server.asked
