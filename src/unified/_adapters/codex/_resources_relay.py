"""An MCP server with its resources taken away: Codex starts this in place of the server, as a stdio server of its
own, and it relays every message both ways but two.

Codex 0.171 offers the model `list_mcp_resources`, `list_mcp_resource_templates` and `read_mcp_resource` with any
MCP server and runs them without asking the client (no setting turns them off or makes them ask; interrupting the
turn comes after the read: measured), where unified has the caller decide every MCP call. So, outside yolo, the
server's answer to `initialize` loses its `resources` capability, and a `resources/*` request Codex still sends is
answered here with an error, never reaching the server. Its tools, prompts and notifications pass unchanged.

- A stdio server (`python -I -S <this file> -- <command> <args>...`): the server is this process's child, its lines
  relayed as they are; the server's exit status is this process's.
- A streamable HTTP server (`python -I -S <this file> --http`): the URL and the headers (a bearer token) come in
  this process's environment, `URL_VARIABLE` and `HEADERS_VARIABLE` (JSON), never on its command line (and the
  process makes itself undumpable at once, so only root reads that environment in /proc); each message
  of Codex's is POSTed to the URL (with the server's `Mcp-Session-Id` once it gave one) on a thread of its own, and
  the answer, JSON or an event stream, relayed back. The server's own stream (a GET) is not opened: a server that
  sends requests or notifications outside an answer has them dropped.

Run by path with the standard library alone (`-I -S`: no site-packages, no PYTHON* variables), as a process of its
own between Codex and the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["HEADERS_VARIABLE", "URL_VARIABLE", "main"]

REFUSAL = (
    "unified turned this server's resources off: Codex reads them without asking, and the run's approval mode "
    "has every MCP call decided by the caller (they are available with approval_mode='yolo')"
)
URL_VARIABLE = "UNIFIED_MCP_RELAY_URL"
HEADERS_VARIABLE = "UNIFIED_MCP_RELAY_HEADERS"


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class _Filter:
    """What both relays take away: `resources/*` requests (answered here) and the `resources` capability."""

    def __init__(self, to_codex: Callable[[bytes], None]) -> None:
        self.to_codex = to_codex
        self.initialize_ids: set[str] = set()

    def passes(self, line: bytes) -> bool:
        """Whether a line of Codex's goes on to the server; a resources request is answered here instead."""
        # Only a line that may be a resources request or the `initialize` is read (a call's arguments may be
        # large): JSON spells a method name with its characters as they are, or with escapes, so a line holding
        # `\\` is read too.
        suspect = b"resources/" in line or b"initialize" in line or b"\\" in line
        message = _message(line) if suspect else None
        method = message.get("method") if message is not None else None
        if message is None or not isinstance(method, str):
            return True
        if method.startswith("resources/"):
            if "id" in message:
                error = {"code": -32601, "message": REFUSAL}
                self.to_codex(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode() + b"\n")
            return False
        if method == "initialize" and "id" in message:
            self.initialize_ids.add(json.dumps(message["id"]))
        return True

    def answer(self, line: bytes) -> bytes:
        """A line of the server's as Codex gets it: the answer to `initialize` without `resources`."""
        message = _message(line) if self.initialize_ids and b"resources" in line else None
        if message is not None and "method" not in message and json.dumps(message.get("id")) in self.initialize_ids:
            self.initialize_ids.discard(json.dumps(message.get("id")))
            result = message.get("result")
            capabilities = result.get("capabilities") if isinstance(result, dict) else None
            if isinstance(capabilities, dict) and "resources" in capabilities:
                del capabilities["resources"]
                return json.dumps(message).encode() + b"\n"
        return line


def _writer() -> Callable[[bytes], None]:
    out = sys.stdout.buffer
    writing = threading.Lock()

    def to_codex(line: bytes) -> None:  # from several threads: the server's lines and the refusals
        with writing:
            out.write(line)
            out.flush()

    return to_codex


def _stdio(argv: list[str]) -> int:
    try:
        server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as exc:
        sys.stderr.write(f"could not start the MCP server {argv[0]!r}: {exc}\n")
        return 127
    stdin, stdout = server.stdin, server.stdout
    assert stdin is not None
    assert stdout is not None
    to_codex = _writer()
    relay = _Filter(to_codex)

    def from_codex() -> None:
        try:
            for line in sys.stdin.buffer:
                if relay.passes(line):
                    stdin.write(line)
                    stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    threading.Thread(target=from_codex, daemon=True).start()
    try:
        for line in stdout:
            to_codex(relay.answer(line))
    except (BrokenPipeError, OSError):
        server.kill()
    return server.wait()


def _events(body: Iterable[bytes]) -> Iterable[bytes]:
    """The data of each event of a server-sent event stream."""
    data: list[bytes] = []
    for raw in body:
        line = raw.rstrip(b"\r\n")
        if not line:
            if data:
                yield b"\n".join(data)
            data = []
        elif line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
    if data:
        yield b"\n".join(data)


class _HttpServer:
    """The streamable HTTP server behind the relay: a POST for each message of Codex's."""

    def __init__(self, url: str, headers: dict[str, str], relay: _Filter) -> None:
        self.url = url
        self.headers = headers
        self.relay = relay
        self.session: str | None = None

    def post(self, line: bytes) -> None:
        message = _message(line)
        headers = {
            **self.headers,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        if self.session is not None:
            headers["Mcp-Session-Id"] = self.session
        request = urllib.request.Request(self.url, data=line.strip(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request) as response:
                self.session = response.headers.get("Mcp-Session-Id") or self.session
                if "text/event-stream" in (response.headers.get("Content-Type") or ""):
                    answers: Iterable[bytes] = _events(response)
                else:
                    answers = [body] if (body := response.read().strip()) else []
                for answer in answers:
                    self.relay.to_codex(self.relay.answer(answer + b"\n"))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            if message is not None and "id" in message and "method" in message:
                error = {"code": -32000, "message": self._failure(exc)}
                self.relay.to_codex(
                    json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode() + b"\n"
                )

    def _failure(self, exc: Exception) -> str:
        """What went wrong, in the words of Codex's own HTTP client (`_outcome.mcp_startup_failure` reads them), the
        URL without its query or credentials."""
        if isinstance(exc, urllib.error.HTTPError):
            body = ""
            with contextlib.suppress(OSError, AttributeError):
                body = exc.read(1000).decode("utf-8", "replace").strip()
            return f"unexpected server response: HTTP {exc.code}: {body}, when posting a message"
        parts = urllib.parse.urlsplit(self.url)
        port = f":{parts.port}" if parts.port else ""
        return f"error sending request for url ({parts.scheme}://{parts.hostname or ''}{port}{parts.path})"


def _undumpable() -> None:
    """Mark this process not dumpable (Linux `prctl(PR_SET_DUMPABLE, 0)`): its environment holds the server's
    headers, and the model's commands run as the same user, who could otherwise read them in
    `/proc/<pid>/environ`; then only root can. Where there is no such call, nothing is set. (`unified._undumpable`
    does the same for unified's process; this file runs with the standard library alone, so it cannot import it.)"""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0


def _http() -> int:
    _undumpable()  # first: before the server is reached (and before Codex lets the model run a command)
    url = os.environ.get(URL_VARIABLE)
    if not url:
        sys.stderr.write(f"_resources_relay.py --http: {URL_VARIABLE} names no server\n")
        return 2
    try:
        headers = json.loads(os.environ.get(HEADERS_VARIABLE) or "{}")
    except ValueError:
        headers = None
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        sys.stderr.write(f"_resources_relay.py --http: {HEADERS_VARIABLE} is no JSON object of strings\n")
        return 2
    server = _HttpServer(url, headers, _Filter(_writer()))
    for line in sys.stdin.buffer:
        if line.strip() and server.relay.passes(line):
            message = _message(line)
            if message is not None and "id" in message and "method" in message:
                # a request, on a thread of its own (a tool call may take long); the rest in order
                threading.Thread(target=server.post, args=(line,), daemon=True).start()
            else:
                server.post(line)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--http"]:
        return _http()
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        sys.stderr.write("usage: _resources_relay.py -- <command> [args...] | --http\n")
        return 2
    return _stdio(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
