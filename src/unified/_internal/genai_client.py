"""The one `genai.Client` builder of the API backends, on httpx clients we own and close.

google-genai would otherwise pick its own HTTP stack (httpx2, or aiohttp when importable), which
respx and vcrpy's httpx patch cannot see, and build a TLS context per client. We inject both of
the clients it may use (async, and sync for the trio path) and the process-wide TLS context (for
its websocket path, which would load a CA bundle, ~25 ms, for every client), apply the base URL,
API version, the per-attempt timeout once, build the client from the resolved auth
(`ApiOptions.auth`, see `unified._auth.resolve_api_auth`) and nothing else, and switch the SDK's
retries off (ours honour RetryInfo: `unified._internal.retry`).

Runs in one event loop with the same connection options share ONE client and its connection
pool, as a careful user of the SDK would: 100 concurrent runs use one client, not 100, and a run
that follows another finds its warm connection (no new client, no new TCP or TLS handshake before
its first request). An httpx async client belongs to the event loop it first ran on, so the sharing
is per loop, and the client lives as long as its loop: it is closed when the loop ends (asyncio's
and trio's runners finalize the async generator that holds it, `_closed_with_the_loop`), or at once
by `close_idle_clients()`. google.genai is imported only when a run enters this context.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx

from unified._internal.api_options import ApiOptions
from unified._internal.http import async_client, sync_client, tls_context
from unified._internal.imports import import_off_loop
from unified.errors import BackendUnavailable

if TYPE_CHECKING:
    from google import genai

__all__ = ["GenaiClient", "close_idle_clients"]


@dataclass
class _Shared:
    """One event loop's client for one connection configuration, and how many runs are using it."""

    client: genai.Client
    http: httpx.AsyncClient
    sync_http: httpx.Client
    credentials: object
    """Held so the `id()` in the key stays this object's while the entry lives."""
    users: int = 0
    closer: AsyncGenerator[None, None] | None = None
    """Suspended for the loop's lifetime; its finalization (the loop's end) closes the clients."""
    closed: bool = False

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with anyio.CancelScope(shield=True):
            await self.http.aclose()
            self.sync_http.close()


_shared: dict[tuple[Any, ...], _Shared] = {}


async def _closed_with_the_loop(key: tuple[Any, ...], shared: _Shared) -> AsyncGenerator[None, None]:
    """Advanced once, then left suspended: the event loop's runner finalizes it when the loop ends."""
    try:
        yield
    finally:
        if _shared.get(key) is shared:
            del _shared[key]
        await shared.close()


async def close_idle_clients() -> None:
    """Close this event loop's shared clients that no run is using (the next run builds a new one)."""
    token = anyio.lowlevel.current_token()
    for key, shared in list(_shared.items()):
        if key[0] == token and not shared.users:
            del _shared[key]
            await shared.close()


def _key(options: ApiOptions) -> tuple[Any, ...]:
    """Everything the client is built from, and the running event loop (its httpx client is bound to it)."""
    return (
        anyio.lowlevel.current_token(),
        options.auth,
        options.api_version,
        options.timeout_s,
        id(options.credentials),
    )


def _build(options: ApiOptions) -> _Shared:
    try:
        from google import genai
        from google.genai import types
    except ImportError as exc:  # pragma: no cover - google-genai is a dependency
        raise BackendUnavailable(f"google-genai is not importable: {exc}", hint="pip install google-genai") from exc
    auth = options.auth
    assert auth is not None, "GenaiClient needs options from resolve_api_options"
    http = async_client(options.timeout_s)
    sync_http = sync_client(options.timeout_s)
    http_options = types.HttpOptions(
        api_version=options.api_version or ("v1beta1" if auth.vertexai else "v1beta"),
        base_url=auth.base_url,
        timeout=int(options.timeout_s * 1000),  # the SDK sends timeout=None to httpx otherwise: no timeout
        httpx_async_client=http,
        httpx_client=sync_http,
        async_client_args={"ssl": tls_context()},  # read only by its websocket path; saves a CA bundle load
        retry_options=types.HttpRetryOptions(attempts=1),  # retries are ours: they honour RetryInfo
    )
    # Every value is explicit, so google-genai's own reading of the environment changes nothing.
    client = genai.Client(
        vertexai=auth.vertexai,
        api_key=auth.api_key,
        credentials=options.credentials if auth.kind == "vertex_adc" else None,
        project=auth.project,
        location=auth.location,
        http_options=http_options,
    )
    return _Shared(client, http, sync_http, options.credentials)


class GenaiClient:
    """`async with GenaiClient(options) as g: g.client...` — the clients close when their last run leaves."""

    modules: tuple[str, ...] = ("google.genai",)
    """What the client's calls import on first use, imported here off the event loop."""

    def __init__(self, options: ApiOptions) -> None:
        self.options = options
        self._key: tuple[Any, ...] | None = None
        self._shared: _Shared | None = None

    @property
    def client(self) -> genai.Client:
        assert self._shared is not None, "GenaiClient used outside its `async with`"
        return self._shared.client

    async def __aenter__(self) -> GenaiClient:
        key = _key(self.options)
        shared = _shared.get(key)
        if shared is None:
            for module in self.modules:
                await import_off_loop(module)
            shared = _shared.get(key)  # another run of this loop may have built it meanwhile
        if shared is None:
            shared = _shared[key] = _build(self.options)
            shared.closer = _closed_with_the_loop(key, shared)
            await shared.closer.__anext__()
        shared.users += 1
        self._key, self._shared = key, shared
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        shared = self._shared
        self._shared = self._key = None
        if shared is not None:
            shared.users -= 1  # the clients stay open for the loop's next run (see the module's docstring)
