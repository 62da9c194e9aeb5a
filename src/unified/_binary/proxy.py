"""A local forwarder that keeps a proxy's password out of an agent binary's environment.

An agent CLI reaches its API through the host's proxy variables (`HTTPS_PROXY=http://user:PASSWORD@host:port`),
which it reads from its own environment, and every command it runs for a model inherits that environment: the
model reads the password with `env`, or in `/proc/$PPID/environ` whatever the CLI filters. Redaction hides it in
unified's events, not in what a command prints back to the model. So when a proxy variable the child would get
carries userinfo, the child gets instead the URL of a forwarder on 127.0.0.1 (a random port) with a fresh random
user and password of its own (`ProxyForwarder.start`), worthless outside the process's life: another local user
cannot ride the upstream credentials through the port. The forwarder checks that credential (407 otherwise) and
passes CONNECT tunnels and plain absolute-URI requests on to the upstream proxy with the host's credentials in
`Proxy-Authorization` (the child's own header is dropped). A `socks5://` or `socks5h://` proxy with userinfo is
stood in for the same way on the same port (round 27: `ALL_PROXY=socks5://user:PASSWORD@host` reached the child's
environment as it was): the child gets `socks5(h)://<fresh user>:<fresh password>@127.0.0.1:<port>`, the forwarder
checks that credential in the SOCKS5 username/password sub-negotiation (RFC 1929), then opens the same negotiation
with the upstream with the host's credentials and passes the child's CONNECT request and the upstream's answer on
unchanged (the child still decides whether a name or an address is sent; other commands are refused). A variable
without userinfo and `NO_PROXY` stay as they were; one with userinfo the forwarder cannot take (`socks4://`,
`socks://`, a port that is no number) is left out of the child's environment, with a `proxy_not_forwarded` problem
(`unforwardable`: fail closed).

- One forwarder per process (`process.AgentSubprocess`), for as long as the process lives: a warm or spare
  process serves runs of later event loops, so the forwarder runs its own loop in a daemon thread (as the
  process belongs to no loop) and is stopped when the process is closed or killed; nothing listens after.
- Bounded: `Limits` (connections at once, a request head's size, how long a head may take, how long a
  connection may go without a byte either way).
- Failures: an upstream that cannot be reached, or that answers 407 to the host's credentials, gives the child
  the forwarder's own 502 or 407 whose text names the proxy (host and port only, never a credential) and what to
  check (a CLI's error quotes it), and is kept as a `ProxyProblem` (each once) that the process adds to its
  stderr tail (`details.stderr_tail` of the errors that carry it).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import secrets
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.abc import ByteStream

from unified._urls import PROXY_VARIABLES
from unified.errors import UnifiedError

__all__ = [
    "Limits",
    "ProxyForwarder",
    "ProxyProblem",
    "Upstream",
    "forwarded_env",
    "unforwardable",
    "upstreams_of",
    "with_left_out_proxies",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """What one forwarder takes at most."""

    connections: int = 64
    """Open connections at once; one more gets a 503 (a CLI opens a handful)."""
    head_bytes: int = 16 * 1024
    """A request head (request line and headers); a longer one gets a 431."""
    head_timeout_s: float = 30.0
    """How long a client may take to send its request head."""
    idle_timeout_s: float = 600.0
    """How long a connection may pass no byte either way before it is closed (a model's long silence while it
    thinks stays well under it)."""
    connect_timeout_s: float = 30.0
    """How long the upstream proxy may take to accept the connection and answer a CONNECT."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """A proxy of the host's, with the credentials its URL carried."""

    scheme: str
    host: str
    port: int
    authorization: str = field(repr=False)
    """`Basic <base64 of user:password>`, as sent in `Proxy-Authorization`."""
    login: tuple[str, str] = field(default=("", ""), repr=False, compare=False)
    """(user, password) as a SOCKS5 proxy is sent them (RFC 1929); `authorization` already tells two apart."""

    @property
    def socks(self) -> bool:
        return self.scheme.startswith("socks5")

    @property
    def where(self) -> str:
        """The proxy's address without its credentials (what a message may name)."""
        return f"{self.scheme}://{self.host}:{self.port}"


@dataclass(frozen=True, slots=True)
class ProxyProblem:
    """What went wrong between the forwarder and an upstream proxy, in words that name no credential."""

    code: str
    """`proxy_unreachable`, `proxy_untrusted` (an `https://` proxy's certificate), `proxy_auth_refused` or
    `proxy_not_forwarded`."""
    message: str
    hint: str


_SCHEMES = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}
"""The proxies stood in for, with their default ports."""


def upstreams_of(env: Mapping[str, str]) -> dict[str, Upstream]:
    """The proxy variables of `env` whose http(s) or socks5(h) URL carries userinfo, by name. A value without a
    scheme is read as http (as curl and Node's clients do); a URL that cannot be read is left alone."""
    found: dict[str, Upstream] = {}
    for name in PROXY_VARIABLES:
        value = env.get(name, "").strip()
        if not value:
            continue
        try:
            parts = urlsplit(value if "://" in value else f"http://{value}")
            port = parts.port
        except ValueError:
            continue
        if parts.scheme not in _SCHEMES or not parts.hostname or "@" not in parts.netloc:
            continue
        user = unquote(parts.username or "")
        password = unquote(parts.password or "")
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        login = (user, password)
        found[name] = Upstream(parts.scheme, parts.hostname, port or _SCHEMES[parts.scheme], f"Basic {token}", login)
    return found


def unforwardable(env: Mapping[str, str]) -> tuple[dict[str, str], list[ProxyProblem]]:
    """`env` without the proxy variables that carry userinfo the forwarder cannot stand in for (a `socks4://` or
    `socks://` URL, a port that is no number, a URL that cannot be read), and a `proxy_not_forwarded` problem for
    each (naming the variable, never its value). Fail closed (round 27): passed on, the child's commands would read
    the password in its environment; left out, the child reaches the network directly or not at all, and the
    problem in its stderr tail says what to change."""
    kept = dict(env)
    problems: list[ProxyProblem] = []
    stood_in = upstreams_of(env)
    for name in PROXY_VARIABLES:
        value = env.get(name, "")
        if name in stood_in or "@" not in value.split("://", 1)[-1].split("/", 1)[0]:
            continue
        del kept[name]
        problems.append(
            ProxyProblem(
                "proxy_not_forwarded",
                f"{name} carries credentials in a proxy URL unified cannot stand in for, so the CLI was not given it",
                "use an http://, https://, socks5:// or socks5h:// URL with a numeric port (percent-encode reserved "
                "characters of the user and password), or a proxy that needs no credentials",
            )
        )
    return kept, problems


_NETWORK_CODES = frozenset({"backend_unavailable", "backend_error", "stream_interrupted"})
"""The codes of a failure a proxy left out of the CLI's environment may have caused (it reached the network
directly, or not at all)."""


def with_left_out_proxies(exc: UnifiedError, env: Mapping[str, str]) -> UnifiedError:
    """`exc`, when its code says the CLI may have failed to reach its provider, with each proxy variable of `env`
    left out of the CLI's environment (`unforwardable`) named in its message and `details.proxy_problems`: the
    `proxy_not_forwarded` problem was only in the stderr tail of the errors that carry one, and a CLI's "fetch
    failed" or "Connection error" said nothing of a proxy (round 20). Changed in place (the traceback stays)."""
    _, problems = unforwardable(env)
    if not problems or exc.code not in _NETWORK_CODES:
        return exc
    notes = "; ".join(f"note: {p.message} ({p.code}): {p.hint}" for p in problems)
    exc.extend(notes, proxy_problems=[p.code for p in problems])
    return exc


def forwarded_env(env: Mapping[str, str], limits: Limits | None = None) -> tuple[dict[str, str], ProxyForwarder | None]:
    """`env` with each proxy variable that carries credentials pointed at a forwarder started for it (see the
    module docstring), and that forwarder; `env` as it is and None when no variable carries any."""
    found = upstreams_of(env)
    if not found:
        return dict(env), None
    forwarder = ProxyForwarder(list(dict.fromkeys(found.values())), limits or Limits())
    urls = forwarder.start()
    return {**env, **{name: urls[upstream] for name, upstream in found.items()}}, forwarder


_NEWLINE = b"\r\n"
_END_OF_HEAD = b"\r\n\r\n"
_HOP_HEADERS = frozenset({"proxy-authorization", "proxy-connection", "connection", "keep-alive"})
"""Headers of the client's hop to the forwarder, never passed on (the upstream's credentials replace the first)."""


@dataclass(slots=True)
class _Route:
    credential: bytes
    """`user:password` a client of this route authenticates with."""
    upstream: Upstream


class ProxyForwarder:
    """See the module docstring: `start` it, give the child the URLs it returns, `stop` it when the process ends."""

    def __init__(self, upstreams: list[Upstream], limits: Limits) -> None:
        self.limits = limits
        self._routes = [
            _Route(f"unified{i}:{secrets.token_urlsafe(24)}".encode(), upstream) for i, upstream in enumerate(upstreams)
        ]
        self.port = 0
        self.problems: list[ProxyProblem] = []
        """What went wrong with the upstream proxies so far, each once (appended from the forwarder's thread)."""
        self._active = 0
        self._ready = threading.Event()
        self._closed = threading.Event()
        self._failure: BaseException | None = None
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._scope: anyio.CancelScope | None = None
        self._thread: threading.Thread | None = None
        self._tls_context: ssl.SSLContext | None = None

    def start(self) -> dict[Upstream, str]:
        """Listen on 127.0.0.1 (a random port), in a thread of its own; the URL each upstream's clients are given."""
        self._thread = threading.Thread(target=self._run, name="unified-proxy-forwarder", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure
        return {
            route.upstream: f"{route.upstream.scheme if route.upstream.socks else 'http'}://"
            f"{route.credential.decode()}@127.0.0.1:{self.port}"
            for route in self._routes
        }

    def stop(self) -> None:
        """Stop listening and close every connection (idempotent; any thread, any loop, or none). Returns once the
        port is closed and every connection with it. The thread is not waited for: its loop may still be waiting for
        a name lookup of a worker thread, which nothing can cancel, and `stop` is called on the caller's event loop
        (a process's end): the thread, a daemon, ends by itself."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        scope, token = self._scope, self._token
        if scope is not None and token is not None and not self._closed.is_set():
            with contextlib.suppress(RuntimeError):  # its loop has already ended
                anyio.from_thread.run_sync(scope.cancel, token=token)
        self._closed.wait()

    @property
    def listening(self) -> bool:
        """Whether its port is open."""
        return self._ready.is_set() and not self._closed.is_set()

    def _run(self) -> None:
        try:
            anyio.run(self._serve)
        except BaseException as exc:  # reported to `start`, which raises it in the caller's thread
            self._failure = exc
        finally:
            self._ready.set()
            self._closed.set()

    async def _serve(self) -> None:
        [listener] = (await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)).listeners
        assert isinstance(listener, anyio.abc.SocketListener)  # one address: one socket, which `accept`s
        try:
            async with listener, anyio.create_task_group() as group:
                self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
                self._scope = group.cancel_scope
                self._token = anyio.lowlevel.current_token()
                self._ready.set()
                while True:
                    client = await listener.accept()
                    group.start_soon(self._connection, client)
        finally:
            self._closed.set()  # the listener and every connection are closed

    async def _connection(self, client: ByteStream) -> None:
        async with client:
            if self._active >= self.limits.connections:
                await _answer(client, 503, "the forwarder has as many connections as it takes; retry")
                return
            self._active += 1
            try:
                await self._handle(client)
            except Exception:  # one connection's failure (a reset, a malformed answer) must not end the others
                return
            finally:
                self._active -= 1

    async def _handle(self, client: ByteStream) -> None:
        head, rest = b"", b""
        socks: tuple[_Route, bytes, bytes] | None = None
        with anyio.move_on_after(self.limits.head_timeout_s):
            first = await client.receive()
            if first[:1] == _SOCKS5:
                socks = await self._socks_handshake(_Reader(client, first))
            else:
                head, rest = await _read_head(client, self.limits.head_bytes, first)
        if socks is not None:
            await self._socks_connect(client, *socks)
            return
        if not head:
            return  # closed, too slow, or a SOCKS5 client answered
        if len(head) > self.limits.head_bytes:
            await _answer(client, 431, "the request head is larger than the forwarder takes")
            return
        try:
            method, target, version, headers = _parse(head)
        except ValueError:
            await _answer(client, 400, "the request is not HTTP")
            return
        route = self._route(headers)
        if route is None:
            await _answer(client, 407, "the forwarder's credentials are missing or wrong", authenticate=True)
            return
        upstream = route.upstream
        out = [f"{method} {target} {version}".encode()]
        out += [f"{name}: {value}".encode() for name, value in headers if name.lower() not in _HOP_HEADERS]
        out.append(f"Proxy-Authorization: {upstream.authorization}".encode())
        if method.upper() != "CONNECT":  # one request per connection: the answer ends where the upstream closes
            out.append(b"Connection: close")
        server = await self._connect(upstream)
        if isinstance(server, ProxyProblem):
            await _answer(client, 502, self._noted(server))
            return
        async with server:
            await server.send(_NEWLINE.join(out) + _END_OF_HEAD + rest)
            if method.upper() == "CONNECT":
                answer = b""
                with anyio.move_on_after(self.limits.connect_timeout_s):
                    answer, early = await _read_head(server, self.limits.head_bytes)
                    if _status(answer) == 407:
                        await _answer(client, 407, self._noted(_refused(upstream)))
                        return
                    await client.send(answer + _END_OF_HEAD + early)
                    if _status(answer) != 200:
                        return
                if not answer:
                    await _answer(client, 502, self._noted(_unreachable(upstream, "did not answer a CONNECT")))
                    return
            await self._relay(client, server, upstream)

    async def _socks_handshake(self, client: _Reader) -> tuple[_Route, bytes, bytes] | None:
        """A SOCKS5 client's greeting, its credential (RFC 1929) and its request, answered as a proxy requiring
        that credential does: the route it authenticated for, its CONNECT request as sent and what it sent after it
        (for the tunnel); None (the client answered) when it offered no username/password method, gave a wrong
        credential or asked another command."""
        _, count = await client.exactly(2)
        if 2 not in await client.exactly(count):
            await client.stream.send(_SOCKS5 + b"\xff")  # no acceptable method
            return None
        await client.stream.send(_SOCKS5 + b"\x02")
        _, size = await client.exactly(2)
        user = await client.exactly(size)
        password = await client.exactly((await client.exactly(1))[0])
        route = self._match(user + b":" + password)
        if route is None or not route.upstream.socks:
            await client.stream.send(b"\x01\x01")
            return None
        await client.stream.send(b"\x01\x00")
        request = await client.exactly(4)
        kind = request[3]
        if kind == 3:
            request += await client.exactly(1)
        request += await client.exactly({1: 4, 3: request[-1], 4: 16}.get(kind, 0) + 2)
        if request[1] != 1 or kind not in (1, 3, 4):
            await client.stream.send(_socks_reply(7))  # command (or address type) not supported
            return None
        return route, request, client.rest()

    async def _socks_connect(self, client: ByteStream, route: _Route, request: bytes, early: bytes) -> None:
        """Open the upstream SOCKS5 proxy with the host's credentials, pass it `request`, its answer back to
        `client`, then the bytes both ways. An upstream that cannot be reached or refuses the credentials gives
        the client a general failure (1) or "not allowed" (2) and a `ProxyProblem`, as the HTTP path does. Bytes
        either side sent early (`early`, the client's after its request; the upstream's after its answer) go on."""
        upstream = route.upstream
        server = await self._connect(upstream)
        if isinstance(server, ProxyProblem):
            self._noted(server)
            await client.send(_socks_reply(1))
            return
        async with server:
            answer = b""
            reader = _Reader(server)
            with anyio.move_on_after(self.limits.connect_timeout_s):
                answer = await _socks_open(reader, upstream, request)
            if answer == b"refused":
                self._noted(_refused(upstream))
                await client.send(_socks_reply(2))
                return
            if not answer:
                self._noted(_unreachable(upstream, "did not answer a SOCKS5 request"))
                await client.send(_socks_reply(1))
                return
            await client.send(answer + reader.rest())
            if answer[1] != 0:
                return
            if early:
                await server.send(early)
            await self._relay(client, server, upstream)

    def _match(self, credential: bytes) -> _Route | None:
        """The route whose credential is `credential`, compared in constant time."""
        found = None
        for route in self._routes:
            if hmac.compare_digest(route.credential, credential):
                found = route
        return found

    def _route(self, headers: list[tuple[str, str]]) -> _Route | None:
        """The route whose credential the client sent in `Proxy-Authorization`, compared in constant time."""
        given = next((value for name, value in headers if name.lower() == "proxy-authorization"), "")
        scheme, _, token = given.strip().partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            credential = base64.b64decode(token.strip(), validate=True)
        except (binascii.Error, ValueError):
            return None
        route = self._match(credential)
        return route if route is None or not route.upstream.socks else None

    async def _connect(self, upstream: Upstream) -> ByteStream | ProxyProblem:
        """A connection to `upstream` (over TLS for an `https://` proxy, verified as the host's trust store and
        `SSL_CERT_FILE`/`SSL_CERT_DIR` say), or why there is none."""
        stream: ByteStream | None = None
        with anyio.move_on_after(self.limits.connect_timeout_s):
            try:
                if upstream.scheme == "https":  # a SOCKS5 proxy is reached over plain TCP, like http
                    stream = await anyio.connect_tcp(upstream.host, upstream.port, tls=True, ssl_context=self._tls())
                else:
                    stream = await anyio.connect_tcp(upstream.host, upstream.port)
            except ssl.SSLCertVerificationError as exc:
                return _untrusted(upstream, exc.verify_message or exc.reason or "not verified")
            except (OSError, anyio.BrokenResourceError, ssl.SSLError):
                stream = None
        return stream if stream is not None else _unreachable(upstream, "cannot be reached")

    def _tls(self) -> ssl.SSLContext:
        """The forwarder's one client context for `https://` proxies: loading the trust store takes milliseconds,
        once and not for each connection a CLI opens (only the forwarder's thread calls this)."""
        if self._tls_context is None:
            self._tls_context = ssl.create_default_context()
        return self._tls_context

    def _noted(self, problem: ProxyProblem) -> str:
        """Keep `problem` (for the process's stderr tail); what the client's answer says."""
        if problem not in self.problems:  # a CLI retrying the same request adds nothing: the list stays short
            self.problems.append(problem)
        return f"{problem.message}: {problem.hint}"

    async def _relay(self, client: ByteStream, server: ByteStream, upstream: Upstream) -> None:
        """Pass bytes both ways until either side closes or neither sends for `idle_timeout_s`. A plain request's
        answer of 407 (the host's credentials refused) is replaced by the forwarder's own."""
        last = [time.monotonic()]

        async def pump(source: ByteStream, sink: ByteStream, first: bool) -> None:
            try:
                while True:
                    chunk = await source.receive()
                    last[0] = time.monotonic()
                    if first and not upstream.socks and _status(chunk) == 407:  # ours, saying what to check
                        await _answer(sink, 407, self._noted(_refused(upstream)))
                        break
                    first = False
                    await sink.send(chunk)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            group.cancel_scope.cancel()

        async with anyio.create_task_group() as group:
            group.start_soon(pump, client, server, False)
            group.start_soon(pump, server, client, True)
            idle = self.limits.idle_timeout_s
            while True:
                await anyio.sleep(max(0.0, last[0] + idle - time.monotonic()))
                if time.monotonic() - last[0] >= idle:
                    group.cancel_scope.cancel()
                    return


def _unreachable(upstream: Upstream, what: str) -> ProxyProblem:
    return ProxyProblem(
        "proxy_unreachable",
        f"the proxy {upstream.where} of the host's proxy variables {what}",
        "check that it runs and that the host and port in HTTPS_PROXY/HTTP_PROXY/ALL_PROXY are right",
    )


def _untrusted(upstream: Upstream, why: str) -> ProxyProblem:
    return ProxyProblem(
        "proxy_untrusted",
        f"the proxy {upstream.where} of the host's proxy variables showed a TLS certificate this host does not "
        f"trust ({why})",
        "add the proxy's CA to the host's trust store, or point SSL_CERT_FILE at a CA bundle that holds it",
    )


def _refused(upstream: Upstream) -> ProxyProblem:
    return ProxyProblem(
        "proxy_auth_refused",
        f"the proxy {upstream.where} refused the credentials of the host's proxy variable (407)",
        "check the user and password in HTTPS_PROXY/HTTP_PROXY/ALL_PROXY (percent-encode reserved characters)",
    )


_SOCKS5 = b"\x05"


class _Reader:
    """Exactly so many bytes at a time from a stream (a SOCKS5 negotiation's fields), after those already read."""

    def __init__(self, stream: ByteStream, data: bytes = b"") -> None:
        self.stream = stream
        self._data = data

    async def exactly(self, size: int) -> bytes:
        """The next `size` bytes; anyio.EndOfStream when the stream ends first."""
        while len(self._data) < size:
            self._data += await self.stream.receive()
        out, self._data = self._data[:size], self._data[size:]
        return out

    def rest(self) -> bytes:
        """What was read past the last `exactly` (and is no more this reader's)."""
        out, self._data = self._data, b""
        return out


def _socks_reply(code: int) -> bytes:
    """A SOCKS5 answer to a request with `code` (0 succeeded, 1 general failure, 2 not allowed, 7 not supported)."""
    return bytes([5, code, 0, 1, 0, 0, 0, 0, 0, 0])


async def _socks_open(server: _Reader, upstream: Upstream, request: bytes) -> bytes:
    """Negotiate with an upstream SOCKS5 proxy (username/password, or none when it asks none), send `request`:
    its answer as it came (its bound address included), b"refused" when it refused the credentials, b"" when it
    ended first or answered what SOCKS5 is not."""
    user, password = (part.encode() for part in upstream.login)
    try:
        await server.stream.send(_SOCKS5 + b"\x02\x00\x02")
        version, method = await server.exactly(2)
        if version != 5 or method not in (0, 2):
            return b"refused" if method == 0xFF else b""
        if method == 2:
            await server.stream.send(bytes([1, len(user)]) + user + bytes([len(password)]) + password)
            if (await server.exactly(2))[1] != 0:
                return b"refused"
        await server.stream.send(request)
        answer = await server.exactly(4)
        kind = answer[3]
        if kind == 3:
            answer += await server.exactly(1)
        return answer + await server.exactly({1: 4, 3: answer[-1], 4: 16}.get(kind, 0) + 2)
    except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
        return b""


async def _read_head(stream: ByteStream, limit: int, data: bytes = b"") -> tuple[bytes, bytes]:
    """(the head up to its blank line, what came after it, `data` the beginning already read); b"" for a head when
    the stream ended first, and more than `limit` bytes when the head is longer."""
    while _END_OF_HEAD not in data:
        if len(data) > limit:
            return data, b""
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return b"", b""
    head, _, rest = data.partition(_END_OF_HEAD)
    return head, rest


def _parse(head: bytes) -> tuple[str, str, str, list[tuple[str, str]]]:
    """Method, target, version and headers of a request head (ValueError when it is none)."""
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ")
    if not version.startswith("HTTP/1.") or not method.isalpha():
        raise ValueError(lines[0])
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise ValueError(line)
        headers.append((name, value.strip()))
    return method, target, version, headers


def _status(head: bytes) -> int:
    """The status of an HTTP answer's head, 0 when it has none."""
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        return 0
    try:
        return int(parts[1])
    except ValueError:
        return 0


_REASONS = {400: "Bad Request", 407: "Proxy Authentication Required", 431: "Request Header Fields Too Large"}
_REASONS |= {502: "Bad Gateway", 503: "Service Unavailable"}


async def _answer(client: ByteStream, status: int, text: str, *, authenticate: bool = False) -> None:
    """An answer of the forwarder's own to the client, then the end of the connection."""
    body = f"unified's proxy forwarder: {text}\n".encode()
    head = [f"HTTP/1.1 {status} {_REASONS[status]}", "Content-Type: text/plain", f"Content-Length: {len(body)}"]
    if authenticate:
        head.append('Proxy-Authenticate: Basic realm="unified"')
    head.append("Connection: close")
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await client.send("\r\n".join(head).encode() + _END_OF_HEAD + body)
