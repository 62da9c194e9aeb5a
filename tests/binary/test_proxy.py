"""The proxy forwarder (`unified._binary.proxy`) on loopback sockets, against a fake upstream proxy that requires
Basic credentials (`tests.harness.fake_proxy`): which variables it stands in for, its own credential check,
CONNECT and plain requests passed on with the host's credentials, its bounds, an upstream that refuses or cannot
be reached, and nothing listening once it is stopped."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import anyio.abc
import pytest
from anyio.abc import ByteStream

from tests.hang_guard import HANG_GUARD_S
from tests.harness.closed_port import closed_port
from tests.harness.fake_proxy import fake_proxy
from tests.harness.local_ca import local_ca
from unified._binary.proxy import Limits, ProxyForwarder, Upstream, forwarded_env, upstreams_of

pytestmark = pytest.mark.anyio

PASSWORD = "Pr0xy-Pa55w0rd-Zq8Lm3Xv7Tn1"


@asynccontextmanager
async def origin() -> AsyncIterator[int]:
    """A server on 127.0.0.1 answering each request with its request line as the body (then closing), and echoing
    whatever does not start as HTTP (a tunnel's bytes): its port."""

    async def serve(client: ByteStream) -> None:
        async with client:
            try:
                data = await client.receive()
                if not data.startswith((b"GET ", b"POST ")):
                    while True:
                        await client.send(data)
                        data = await client.receive()
                while b"\r\n\r\n" not in data:
                    data += await client.receive()
                line = data.split(b"\r\n", 1)[0]
                await client.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(line), line))
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        yield listener.extra(anyio.abc.SocketAttribute.local_port)
        group.cancel_scope.cancel()


@asynccontextmanager
async def forwarding(upstream_url: str, limits: Limits | None = None) -> AsyncIterator[tuple[ProxyForwarder, str]]:
    """A forwarder for `upstream_url` (the host's HTTPS_PROXY): it, and the URL the child is given."""
    env, forwarder = forwarded_env({"HTTPS_PROXY": upstream_url}, limits)
    assert forwarder is not None
    try:
        yield forwarder, env["HTTPS_PROXY"]
    finally:
        await anyio.to_thread.run_sync(forwarder.stop)


def basic(url: str) -> str:
    parts = urlsplit(url)
    return "Basic " + base64.b64encode(f"{parts.username}:{parts.password}".encode()).decode()


async def ask(url: str, request: bytes) -> bytes:
    """Send `request` to the proxy at `url`, read until it closes."""
    parts = urlsplit(url)
    async with await anyio.connect_tcp("127.0.0.1", parts.port or 0) as stream:
        await stream.send(request)
        answer = b""
        with anyio.fail_after(HANG_GUARD_S):
            while True:
                try:
                    answer += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return answer


def test_only_variables_with_credentials_are_stood_in_for() -> None:
    host = {
        "HTTPS_PROXY": f"http://user:{PASSWORD}@proxy.example:3128",
        "http_proxy": f"http://user:{PASSWORD}@proxy.example:3128",
        "ALL_PROXY": "http://plain.example:8080",
        "all_proxy": f"socks4://user:{PASSWORD}@socks.example:1080",  # a user id, no password (round 27)
        "NO_PROXY": "localhost,127.0.0.1",
        "PATH": "/usr/bin",
    }
    assert set(upstreams_of(host)) == {"HTTPS_PROXY", "http_proxy"}
    env, forwarder = forwarded_env(host)
    assert forwarder is not None
    try:
        assert env["HTTPS_PROXY"] == env["http_proxy"]  # one upstream, one URL
        assert urlsplit(env["HTTPS_PROXY"]).hostname == "127.0.0.1"
        assert urlsplit(env["HTTPS_PROXY"]).port == forwarder.port
        assert {name: env[name] for name in ("ALL_PROXY", "all_proxy", "NO_PROXY", "PATH")} == {
            name: host[name] for name in ("ALL_PROXY", "all_proxy", "NO_PROXY", "PATH")
        }
        assert PASSWORD not in env["HTTPS_PROXY"]
    finally:
        forwarder.stop()
    plain = {"HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": "x"}
    assert forwarded_env(plain) == (plain, None)


def test_each_forwarder_gives_a_credential_of_its_own() -> None:
    host = {"HTTPS_PROXY": f"http://user:{PASSWORD}@proxy.example:3128"}
    first, one = forwarded_env(host)
    second, other = forwarded_env(host)
    assert one is not None
    assert other is not None
    one.stop()
    other.stop()
    assert urlsplit(first["HTTPS_PROXY"]).password != urlsplit(second["HTTPS_PROXY"]).password


async def test_a_client_without_the_forwarders_credential_gets_407_and_nothing_goes_upstream() -> None:
    async with fake_proxy(password=PASSWORD) as upstream, forwarding(upstream.url) as (_, url):
        for auth in (
            "",
            "Proxy-Authorization: Basic dXNlcjp3cm9uZw==\r\n",
            f"Proxy-Authorization: {upstream.authorization}\r\n",
        ):
            answer = await ask(url, f"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n{auth}\r\n".encode())
            assert answer.startswith(b"HTTP/1.1 407 "), answer
            assert b'Proxy-Authenticate: Basic realm="unified"' in answer
        assert upstream.asked == []


async def tunnel(url: str, port: int) -> bytes:
    """Through the forwarder at `url`, a CONNECT tunnel to 127.0.0.1:`port` (an echoing `origin`), and what a
    message sent through it came back as."""
    async with await anyio.connect_tcp("127.0.0.1", urlsplit(url).port or 0) as stream:
        auth = f"Proxy-Authorization: {basic(url)}"
        await stream.send(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}\r\n\r\n".encode())
        with anyio.fail_after(HANG_GUARD_S):
            answer = await stream.receive()
            assert answer.startswith(b"HTTP/1.1 200 "), answer
            await stream.send(b"hello through the tunnel")
            echoed = b""
            while len(echoed) < len(b"hello through the tunnel"):
                echoed += await stream.receive()
    return echoed


async def test_a_connect_tunnel_goes_through_the_upstream_with_the_hosts_credentials() -> None:
    async with origin() as port, fake_proxy(password=PASSWORD) as upstream, forwarding(upstream.url) as (_, url):
        assert await tunnel(url, port) == b"hello through the tunnel"
        [asked] = upstream.asked
        assert (asked.method, asked.target, asked.allowed) == ("CONNECT", f"127.0.0.1:{port}", True)
        assert asked.authorization == upstream.authorization  # the host's, not the child's
        assert basic(url) not in str(asked.headers)


async def test_an_https_upstream_is_spoken_to_over_tls_it_verifies_with_the_hosts_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose proxy is `https://` and whose CA is named by SSL_CERT_FILE (a corporate proxy): the forwarder
    reaches it over TLS, verified, and the host's credentials go inside the encrypted connection."""
    ca = local_ca(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.bundle))
    async with (
        origin() as port,
        fake_proxy(password=PASSWORD, tls=ca.server) as upstream,
        forwarding(upstream.url) as (forwarder, url),
    ):
        assert upstream.url.startswith("https://")
        assert urlsplit(url).scheme == "http"  # the child speaks plain HTTP to the forwarder on loopback
        assert await tunnel(url, port) == b"hello through the tunnel"
        assert await tunnel(url, port) == b"hello through the tunnel"
        assert [(asked.method, asked.allowed) for asked in upstream.asked] == [("CONNECT", True)] * 2
        assert all(asked.authorization == upstream.authorization for asked in upstream.asked)
        assert forwarder.problems == []


@pytest.mark.parametrize("trust", ["another CA", "the default store"])
async def test_an_https_upstream_the_host_does_not_trust_gives_502_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trust: str
) -> None:
    """An `https://` proxy whose certificate no CA of the host vouches for (a man in the middle, or a corporate CA
    the host was not told of): nothing is sent to it, the credentials included, and the problem says it is the
    certificate, not an unreachable proxy, and what to do."""
    ca = local_ca(tmp_path)
    if trust == "another CA":
        (tmp_path / "other").mkdir()
        monkeypatch.setenv("SSL_CERT_FILE", str(local_ca(tmp_path / "other").bundle))
    else:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    async with fake_proxy(password=PASSWORD, tls=ca.server) as upstream, forwarding(upstream.url) as (forwarder, url):
        answer = await ask(
            url, f"CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: {basic(url)}\r\n\r\n".encode()
        )
    assert answer.startswith(b"HTTP/1.1 502 "), answer
    assert upstream.asked == []
    [problem] = forwarder.problems
    assert problem.code == "proxy_untrusted"
    assert problem.message.startswith(
        f"the proxy https://127.0.0.1:{upstream.port} of the host's proxy variables showed a TLS certificate this "
        "host does not trust ("
    ), problem.message
    assert "SSL_CERT_FILE" in problem.hint
    assert b"does not trust" in answer
    assert PASSWORD not in f"{problem.message} {problem.hint} {answer.decode()}"


async def test_a_plain_request_goes_through_the_upstream_without_the_childs_header() -> None:
    async with origin() as port, fake_proxy(password=PASSWORD) as upstream, forwarding(upstream.url) as (_, url):
        target = f"http://127.0.0.1:{port}/v1/messages?beta=true"
        request = (
            f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nProxy-Authorization: {basic(url)}\r\n"
            "Proxy-Connection: keep-alive\r\nContent-Length: 2\r\n\r\n{}"
        )
        answer = await ask(url, request.encode())
        assert answer.startswith(b"HTTP/1.1 200 OK"), answer
        assert answer.endswith(b"POST /v1/messages?beta=true HTTP/1.1")
        [asked] = upstream.asked
        assert (asked.method, asked.target, asked.allowed) == ("POST", target, True)
        assert "proxy-connection" not in asked.headers
        assert asked.headers["connection"] == "close"


async def test_an_upstream_refusing_the_hosts_credentials_gives_407_and_a_problem_naming_no_password() -> None:
    async with (
        fake_proxy(password=PASSWORD) as upstream,
        forwarding(upstream.url.replace(PASSWORD, "wrong-pass-123")) as (
            forwarder,
            url,
        ),
    ):
        answer = await ask(
            url, f"CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: {basic(url)}\r\n\r\n".encode()
        )
        assert answer.startswith(b"HTTP/1.1 407 "), answer
        assert b"refused the credentials of the host's proxy variable (407): check the user and password" in answer
        [problem] = forwarder.problems
        assert problem.code == "proxy_auth_refused"
        assert f"127.0.0.1:{upstream.port}" in problem.message
        assert "wrong-pass" not in f"{problem.message} {problem.hint}"
        assert b"wrong-pass" not in answer
        # a plain request's 407 too
        plain = await ask(
            url, f"GET http://example.com/ HTTP/1.1\r\nProxy-Authorization: {basic(url)}\r\n\r\n".encode()
        )
        assert plain.startswith(b"HTTP/1.1 407 "), plain
        assert b"check the user and password in HTTPS_PROXY" in plain
        assert forwarder.problems == [problem]  # noted once


async def test_an_upstream_that_cannot_be_reached_gives_502_and_a_problem() -> None:
    with closed_port() as port:
        async with forwarding(f"http://user:{PASSWORD}@127.0.0.1:{port}") as (forwarder, url):
            answer = await ask(
                url, f"CONNECT example.com:443 HTTP/1.1\r\nProxy-Authorization: {basic(url)}\r\n\r\n".encode()
            )
    assert answer.startswith(b"HTTP/1.1 502 "), answer
    [problem] = forwarder.problems
    assert problem.code == "proxy_unreachable"
    assert problem.message == f"the proxy http://127.0.0.1:{port} of the host's proxy variables cannot be reached"
    assert PASSWORD not in problem.hint


async def test_a_head_larger_than_the_bound_gets_431() -> None:
    async with fake_proxy() as upstream, forwarding(upstream.url, Limits(head_bytes=1024)) as (_, url):
        answer = await ask(url, b"GET http://example.com/ HTTP/1.1\r\nX-Big: " + b"a" * 4096 + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 431 "), answer
    assert upstream.asked == []


async def test_connections_past_the_bound_get_503() -> None:
    async with (
        origin() as port,
        fake_proxy() as upstream,
        forwarding(upstream.url, Limits(connections=1)) as (_, url),
        await anyio.connect_tcp("127.0.0.1", urlsplit(url).port or 0) as held,  # the one connection
    ):
        await held.send(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nProxy-Authorization: {basic(url)}\r\n\r\n".encode())
        with anyio.fail_after(HANG_GUARD_S):
            assert (await held.receive()).startswith(b"HTTP/1.1 200 ")  # an open tunnel, counted
        answer = await ask(url, b"GET http://example.com/ HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 503 "), answer


async def test_a_client_slow_to_send_its_head_or_an_idle_tunnel_is_closed() -> None:
    limits = Limits(head_timeout_s=0.2, idle_timeout_s=0.2)
    async with origin() as port, fake_proxy() as upstream, forwarding(upstream.url, limits) as (_, url):
        # half a head, then nothing: closed without an answer
        assert await ask(url, b"GET http://example.com/ HTTP/1.1\r\n") == b""
        # a tunnel nobody uses: closed after its 200
        answer = await ask(
            url, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nProxy-Authorization: {basic(url)}\r\n\r\n".encode()
        )
    assert answer == b"HTTP/1.1 200 Connection established\r\n\r\n"


async def test_nothing_listens_once_stopped_and_open_connections_are_closed() -> None:
    async with origin() as port, fake_proxy() as upstream:
        async with forwarding(upstream.url) as (forwarder, url):
            proxy_port = urlsplit(url).port or 0
            stream = await anyio.connect_tcp("127.0.0.1", proxy_port)
            await stream.send(
                f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nProxy-Authorization: {basic(url)}\r\n\r\n".encode()
            )
            with anyio.fail_after(HANG_GUARD_S):
                assert (await stream.receive()).startswith(b"HTTP/1.1 200 ")
        assert not forwarder.listening
        async with stream:
            with anyio.fail_after(HANG_GUARD_S), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                await stream.receive()  # the tunnel went with the forwarder
        with pytest.raises(OSError, match="All connection attempts failed"):
            await anyio.connect_tcp("127.0.0.1", proxy_port)


def test_an_https_upstream_is_forwarded_and_a_url_without_scheme_is_read_as_http() -> None:
    found = upstreams_of(
        {"HTTPS_PROXY": f"https://u:{PASSWORD}@proxy.example", "HTTP_PROXY": "u:p%40ss@proxy.example:3128"}
    )
    assert found["HTTPS_PROXY"] == Upstream(
        "https", "proxy.example", 443, "Basic " + base64.b64encode(f"u:{PASSWORD}".encode()).decode()
    )
    assert found["HTTP_PROXY"].authorization == "Basic " + base64.b64encode(b"u:p@ss").decode()
    assert PASSWORD not in repr(found["HTTPS_PROXY"])


async def test_two_upstreams_get_two_credentials_each_routed_to_its_own_proxy() -> None:
    async with fake_proxy(password=PASSWORD) as first, fake_proxy(password=PASSWORD + "-2") as second:
        env, forwarder = forwarded_env({"HTTP_PROXY": first.url, "HTTPS_PROXY": second.url})
        assert forwarder is not None
        try:
            assert env["HTTP_PROXY"] != env["HTTPS_PROXY"]
            for name in ("HTTP_PROXY", "HTTPS_PROXY"):
                auth = f"Proxy-Authorization: {basic(env[name])}"
                await ask(env[name], f"GET http://example.com/{name} HTTP/1.1\r\n{auth}\r\n\r\n".encode())
        finally:
            await anyio.to_thread.run_sync(forwarder.stop)
    assert [(a.target, a.authorization) for a in first.asked] == [
        ("http://example.com/HTTP_PROXY", first.authorization)
    ]
    assert [(a.target, a.authorization) for a in second.asked] == [
        ("http://example.com/HTTPS_PROXY", second.authorization)
    ]
