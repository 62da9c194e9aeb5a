"""HTTP clients for the API backends: ours (so test doubles and cassettes see every request), built cheaply.

Loading a CA bundle into a fresh `ssl.SSLContext` takes about 20 ms, and httpx and google-genai
each do it for every client they build. One context per process, shared by every client (an
`SSLContext` is safe to share across clients and threads), takes that off every run's start.
It trusts the same roots the SDK would: SSL_CERT_FILE / SSL_CERT_DIR, else certifi's bundle.
"""

from __future__ import annotations

import functools
import logging
import os
import ssl
from collections.abc import AsyncIterator, Iterator

import certifi
import httpx

from unified import _limits as limits
from unified._redaction import redact_mapping, redactor
from unified.errors import BackendError

__all__ = ["CONNECT_TIMEOUT_S", "async_client", "sync_client", "tls_context"]

CONNECT_TIMEOUT_S = 10.0
"""How long one attempt may take to connect (TCP and TLS), whatever the request's own timeout: a host that
never answers is unreachable after this, not after `timeout_s` (90 s), so a run fails over in seconds. The
SDKs' own clients use 5 s (openai, anthropic); 10 s leaves room for a slow network."""


@functools.cache
def tls_context() -> ssl.SSLContext:
    return ssl.create_default_context(
        cafile=os.environ.get("SSL_CERT_FILE", certifi.where()), capath=os.environ.get("SSL_CERT_DIR")
    )


def _timeout(timeout_s: float) -> httpx.Timeout:
    return httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S))


def _cap_connect(request: httpx.Request) -> None:
    """Hold the request's connect timeout to `CONNECT_TIMEOUT_S`: google-genai gives every request its
    `HttpOptions.timeout` as one number, which httpx applies to connecting too, replacing the client's."""
    timeout = request.extensions.get("timeout")
    if isinstance(timeout, dict):
        connect = timeout.get("connect")
        if connect is None or connect > CONNECT_TIMEOUT_S:
            request.extensions["timeout"] = {**timeout, "connect": CONNECT_TIMEOUT_S}


async def _cap_connect_async(request: httpx.Request) -> None:
    _cap_connect(request)


class _ScrubbedLog(logging.Filter):
    """httpx logs each request's URL whole at INFO (`HTTP Request: POST https://user:PASSWORD@gateway/...?key=...`),
    and an HTTPStatusError quotes it too: a host that logs at INFO wrote a gateway's password or a query key into its
    logs (round 27, measured). The record's text with the secrets of the environment and the run, a URL's password
    and a query parameter named as a credential replaced, before any handler sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = str(redact_mapping(redactor()(record.getMessage()))), None
        return True


@functools.cache
def _scrub_httpx_logs() -> None:
    """Add `_ScrubbedLog` to httpx's logger, once per process (when the first client is built): a record made
    only when the host enabled INFO for it, so nothing is spent otherwise."""
    logging.getLogger("httpx").addFilter(_ScrubbedLog())


def async_client(timeout_s: float) -> httpx.AsyncClient:
    _scrub_httpx_logs()
    return httpx.AsyncClient(
        timeout=_timeout(timeout_s),
        verify=tls_context(),
        event_hooks={"request": [_cap_connect_async], "response": [cap_async]},
    )


def sync_client(timeout_s: float) -> httpx.Client:
    """Handed to google-genai beside the async one, so it builds no client (and no TLS context) of its own."""
    _scrub_httpx_logs()
    return httpx.Client(
        timeout=_timeout(timeout_s),
        verify=tls_context(),
        event_hooks={"request": [_cap_connect], "response": [cap_sync]},
    )


class EventTooLarge(BackendError):
    """A server sent one event (or one body) over `MAX_EVENT_BYTES`, or with more than
    `MAX_JSON_CONTAINERS` objects and arrays: refused while it arrives, never held whole."""


class EventMeter:
    """Counts the bytes and the `{`/`[` of the current event: the bytes since the last blank line
    (an SSE event ends with one; a plain JSON body is one event). A line of SSE ends with CRLF, LF or a lone CR, so
    a blank line is two line ends in a row: `\n\n`, `\r\r` or `\n\r` (in `\r\n\r\n` too). A stream of
    lone CRs was read as one event growing to its end (every SSE reader here splits them), and a long answer of
    small events was refused as "an event over 8 MiB" (bad input round 22)."""

    def __init__(self, what: str, max_bytes: int, max_containers: int) -> None:
        self.what = what
        self.max_bytes = max_bytes
        self.max_containers = max_containers
        self.size = 0
        self.containers = 0
        self.tail = b""

    def feed(self, chunk: bytes) -> None:
        joined = self.tail + chunk
        end = max(joined.rfind(b"\n\n"), joined.rfind(b"\r\r"), joined.rfind(b"\n\r"))
        if end >= 0:
            rest = joined[end + 2 :]
            self.size, self.containers = len(rest), rest.count(b"{") + rest.count(b"[")
        else:
            self.size += len(chunk)
            self.containers += chunk.count(b"{") + chunk.count(b"[")
        self.tail = joined[-3:]
        if self.size > self.max_bytes:
            raise EventTooLarge(
                f"{self.what} sent an event over {self.max_bytes // (1024 * 1024)} MiB; it was refused unread",
                hint="the server's answer is larger than unified accepts (limits.MAX_EVENT_BYTES)",
            )
        if self.containers > self.max_containers:
            raise EventTooLarge(
                f"{self.what} sent an event with more than {self.max_containers:,} JSON objects and arrays; "
                "it was refused unread",
                hint="the server's answer is larger than unified accepts (limits.MAX_JSON_CONTAINERS)",
            )


class _CappedAsync(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, meter: EventMeter) -> None:
        self._inner = inner
        self._meter = meter

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._meter.feed(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CappedSync(httpx.SyncByteStream):
    def __init__(self, inner: httpx.SyncByteStream, meter: EventMeter) -> None:
        self._inner = inner
        self._meter = meter

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._inner:
            self._meter.feed(chunk)
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _meter(response: httpx.Response, what: str | None) -> EventMeter:
    name = what or f"the server at {response.request.url.host}"
    return EventMeter(name, limits.MAX_EVENT_BYTES, limits.MAX_JSON_CONTAINERS)


async def cap_async(response: httpx.Response, what: str | None = None) -> None:
    """httpx response hook: the body is read through a `EventMeter` (see `EventTooLarge`)."""
    stream = response.stream
    if isinstance(stream, httpx.AsyncByteStream):
        response.stream = _CappedAsync(stream, _meter(response, what))


def cap_sync(response: httpx.Response) -> None:
    """The same hook for a blocking client."""
    stream = response.stream
    if isinstance(stream, httpx.SyncByteStream):
        response.stream = _CappedSync(stream, _meter(response, None))
