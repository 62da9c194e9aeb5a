"""A loopback HTTP proxy that requires Basic credentials and records what it was asked: the host's proxy in the
tests of unified's proxy forwarder (`unified._binary.proxy`).

It serves CONNECT (a tunnel to the named host and port) and plain absolute-URI requests (sent on to the URL's
host as an origin-form request, the answer passed back until the server closes), in the test's own event loop.
A request without the right `Proxy-Authorization` gets a 407 (and is recorded too).
"""

from __future__ import annotations

import base64
import contextlib
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol, TypeVar
from urllib.parse import urlsplit

import anyio
import anyio.abc
from anyio.abc import ByteStream
from anyio.streams.tls import TLSListener

__all__ = ["Asked", "FakeProxy", "fake_proxy", "relay"]


@dataclass(frozen=True)
class Asked:
    """One request the proxy got."""

    method: str
    target: str
    authorization: str
    headers: dict[str, str]
    """By lower-case name."""
    allowed: bool


@dataclass
class FakeProxy:
    user: str
    password: str
    port: int = 0
    asked: list[Asked] = field(default_factory=list)
    scheme: str = "http"
    """`https` when it is reached over TLS (`fake_proxy(tls=...)`)."""

    @property
    def url(self) -> str:
        """Its URL with its credentials, as a host's `HTTPS_PROXY` names it."""
        return f"{self.scheme}://{self.user}:{self.password}@127.0.0.1:{self.port}"

    @property
    def authorization(self) -> str:
        return "Basic " + base64.b64encode(f"{self.user}:{self.password}".encode()).decode()

    async def serve(self, client: ByteStream) -> None:
        # a target that cannot be reached, a client gone: the connection ends
        with contextlib.suppress(OSError, anyio.EndOfStream, anyio.BrokenResourceError):
            await self._serve(client)

    async def _serve(self, client: ByteStream) -> None:
        async with client:
            data = b""
            while b"\r\n\r\n" not in data:
                try:
                    data += await client.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
            head, _, rest = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ")
            headers = {
                name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])
            }
            given = headers.get("proxy-authorization", "")
            allowed = given == self.authorization
            self.asked.append(Asked(method, target, given, headers, allowed))
            if not allowed:
                await client.send(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                return
            if method == "CONNECT":
                host, _, port = target.rpartition(":")
                async with await anyio.connect_tcp(host, int(port)) as server:
                    await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    await relay(client, server, rest)
                return
            url = urlsplit(target)
            path = url.path or "/"
            kept = [line for line in lines[1:] if not line.lower().startswith(("proxy-", "connection:"))]
            request = "\r\n".join(
                [f"{method} {path}{'?' + url.query if url.query else ''} {version}", *kept, "Connection: close"]
            )
            async with await anyio.connect_tcp(url.hostname or "", url.port or 80) as server:
                await server.send(request.encode("latin-1") + b"\r\n\r\n" + rest)
                await relay(client, server, b"")


async def relay(client: ByteStream, server: ByteStream, early: bytes) -> None:
    """Pass bytes both ways (`early`, already read from the client, first) until either side closes."""
    if early:
        await server.send(early)

    async def pump(source: ByteStream, sink: ByteStream) -> None:
        try:
            while True:
                await sink.send(await source.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(pump, client, server)
        group.start_soon(pump, server, client)


@asynccontextmanager
async def fake_proxy(
    user: str = "proxyuser", password: str = "Pr0xy-Pa55w0rd-Zq8Lm3Xv7Tn1", tls: ssl.SSLContext | None = None
) -> AsyncIterator[FakeProxy]:
    """A `FakeProxy` listening on 127.0.0.1 (a random port) for the `async with`; over TLS with the server context
    `tls` (an `https://` proxy: `tests.harness.local_ca`)."""
    async with listening(FakeProxy(user, password, scheme="https" if tls else "http"), tls) as proxy:
        yield proxy


class _Serving(Protocol):
    port: int

    async def serve(self, client: ByteStream) -> None: ...


Served = TypeVar("Served", bound=_Serving)


@asynccontextmanager
async def listening(proxy: Served, tls: ssl.SSLContext | None = None) -> AsyncIterator[Served]:
    """`proxy` serving each connection made to 127.0.0.1 (a random port, set as its `port`) for the `async with`,
    over TLS with the server context `tls` if given (a handshake that fails ends that connection alone)."""
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    proxy.port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    listener = tcp if tls is None else TLSListener(tcp, tls, standard_compatible=False)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, proxy.serve)
        try:
            yield proxy
        finally:
            group.cancel_scope.cancel()
