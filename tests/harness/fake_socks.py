"""A loopback SOCKS5 proxy that requires a username and password (RFC 1929) and records what it was asked: the
host's `ALL_PROXY=socks5://user:PASSWORD@...` in the tests of unified's proxy forwarder (round 27).

It serves CONNECT only (to an IPv4 address or a name), in the test's own event loop. A wrong credential gets the
RFC 1929 failure and is recorded too.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.abc
from anyio.abc import ByteStream

from tests.harness.fake_proxy import listening, relay

__all__ = ["FakeSocks", "SocksAsked", "fake_socks"]


@dataclass(frozen=True)
class SocksAsked:
    """One negotiation the proxy got."""

    user: str
    password: str
    target: str
    """`host:port` of the CONNECT ("" when the credential was refused)."""
    allowed: bool


@dataclass
class FakeSocks:
    user: str
    password: str
    port: int = 0
    asked: list[SocksAsked] = field(default_factory=list)

    @property
    def url(self) -> str:
        """Its URL with its credentials, as a host's `ALL_PROXY` names it."""
        return f"socks5h://{self.user}:{self.password}@127.0.0.1:{self.port}"

    async def serve(self, client: ByteStream) -> None:
        with contextlib.suppress(OSError, anyio.EndOfStream, anyio.BrokenResourceError):
            async with client:
                await self._serve(client)

    async def _serve(self, client: ByteStream) -> None:
        data = b""

        async def take(size: int) -> bytes:
            nonlocal data
            while len(data) < size:
                data += await client.receive()
            out, data = data[:size], data[size:]
            return out

        _, count = await take(2)
        if 2 not in await take(count):
            await client.send(b"\x05\xff")
            return
        await client.send(b"\x05\x02")
        _, size = await take(2)
        user = (await take(size)).decode()
        password = (await take((await take(1))[0])).decode()
        if (user, password) != (self.user, self.password):
            self.asked.append(SocksAsked(user, password, "", False))
            await client.send(b"\x01\x01")
            return
        await client.send(b"\x01\x00")
        _, _, _, kind = await take(4)  # CONNECT: the only command the forwarder passes on
        host = str(ipaddress.IPv4Address(await take(4))) if kind == 1 else (await take((await take(1))[0])).decode()
        port = int.from_bytes(await take(2), "big")
        self.asked.append(SocksAsked(user, password, f"{host}:{port}", True))
        async with await anyio.connect_tcp(host, port) as server:
            await client.send(b"\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x00")
            await relay(client, server, data)


@asynccontextmanager
async def fake_socks(
    user: str = "socksuser", password: str = "S0cks-Pa55w0rd-Qw7Er4Ty9Ui2"
) -> AsyncIterator[FakeSocks]:
    """A `FakeSocks` listening on 127.0.0.1 (a random port) for the `async with`."""
    async with listening(FakeSocks(user, password)) as proxy:
        yield proxy
