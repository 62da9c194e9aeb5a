"""A thin async client over `client.aio.interactions`: our httpx client, our retries, our errors.

google-genai is imported here only, and only when a run starts, so `import unified` stays light.
The SDK's async path is asyncio-only (its hooks call `asyncio.to_thread`), so under trio the
same calls go through the SDK's sync client in worker threads; both paths use httpx clients we
inject, so respx and vcrpy see every request. The SDK's own retries (on by default for the
Interactions API: 5 attempts) are switched off and replaced by ours: bounded, honouring the
server's `RetryInfo.retryDelay`, and announced as a `warning` per retry so a slow run explains
itself. Errors come from two unrelated families (`google.genai.errors` and
`google.genai._interactions`); both become typed `UnifiedError`s.
Everything the client returns is plain JSON (dicts), which the translator consumes.
"""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import httpx
import sniffio

from unified._errors import BackendError, BackendUnavailable, UnifiedError
from unified._internal.api_errors import RETRYABLE_STATUS, api_error, credentials_error, retry_delay
from unified._internal.http import async_client, sync_client
from unified.adapters.interactions._options import Settings

if TYPE_CHECKING:
    from google.genai import Client

T = TypeVar("T")
OnRetry = Callable[[str], Awaitable[None]]
"""Called with a human-readable message before each retry wait."""


def to_json(event: Any) -> dict[str, Any]:
    """An SDK event or resource as the wire JSON the translator reads (unknown events keep their raw)."""
    if getattr(event, "is_unknown", False):
        raw = getattr(event, "raw", None)
        return dict(raw) if isinstance(raw, Mapping) else {}
    dumped: dict[str, Any] = event.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def describe(exc: BaseException) -> tuple[int | None, Any, str]:
    """(HTTP status or None, error body, message) of an error from either SDK family or httpx."""
    from google.genai import _interactions, errors

    if isinstance(exc, _interactions.APIError):
        return exc.status_code, exc.body, exc.message
    if isinstance(exc, errors.APIError):
        return exc.code, {"error": {"details": exc.details}} if exc.details else None, exc.message or str(exc)
    return None, None, f"{type(exc).__name__}: {exc}"


def is_connection_error(exc: BaseException) -> bool:
    """A dropped link or timeout rather than an answer from the server."""
    from google.genai import _interactions

    return isinstance(exc, (httpx.TransportError, _interactions.APIConnectionError))


def is_api_error(exc: BaseException) -> bool:
    from google.genai import _interactions, errors

    return isinstance(exc, (_interactions.APIError, errors.APIError, httpx.TransportError))


def to_unified(exc: BaseException, what: str, model: str | None = None) -> UnifiedError:
    """An SDK or transport failure → the typed error the stream guard reports (see `_internal.api_errors`)."""
    status, body, message = describe(exc)
    if status is None:
        return BackendError(
            f"{what} failed: {message}", hint="check the network and the base URL", retryable=True, details={}
        )
    error = body.get("error") if isinstance(body, Mapping) else None
    status_text = error.get("status") if isinstance(error, Mapping) else None
    failure = api_error(status, status_text if isinstance(status_text, str) else None, message, body=body, model=model)
    failure.details["during"] = what
    return failure


class _ThreadedReader:
    """Reads the SDK's sync stream in worker threads (the trio path), and closes it safely.

    A read cancelled mid-wait leaves its thread running inside the stream, which must not be closed
    under it (httpx refuses a generator that is already executing). Then the thread closes the
    stream itself as soon as its read returns (the server-side cancel that follows ends the stream).
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._iterator = iter(stream)
        self._lock = threading.Lock()
        self._busy = False
        self._abandoned = False

    def _read(self) -> Any:
        try:
            return next(self._iterator, None)
        finally:
            with self._lock:
                self._busy = False
                if self._abandoned:
                    self._stream.close()

    async def next(self) -> Any:
        with self._lock:
            self._busy = True
        return await anyio.to_thread.run_sync(self._read, abandon_on_cancel=True)

    def close(self) -> None:
        with self._lock:
            if self._busy:
                self._abandoned = True
                return
        self._stream.close()


class InteractionsClient:
    """One run's connection to the Interactions API."""

    def __init__(self, settings: Settings, on_retry: OnRetry) -> None:
        self.settings = settings
        self._on_retry = on_retry
        self._asyncio = sniffio.current_async_library() == "asyncio"
        self._http = async_client(settings.timeout_s)
        self._sync_http = sync_client(settings.timeout_s)
        self._client = self._build(settings)

    def _build(self, settings: Settings) -> Client:
        try:
            from google import genai
            from google.genai import types
        except ImportError as exc:  # pragma: no cover - google-genai is a dependency
            raise BackendUnavailable(f"google-genai is not importable: {exc}", hint="pip install google-genai") from exc
        options = types.HttpOptions(
            base_url=settings.base_url,
            api_version=settings.api_version,
            httpx_client=self._sync_http,
            httpx_async_client=self._http,
            retry_options=types.HttpRetryOptions(attempts=1),  # ours replace them
        )
        if settings.vertexai:
            return genai.Client(
                vertexai=True,
                api_key=settings.api_key if not settings.project else None,
                project=settings.project,
                location=settings.location,
                http_options=options,
            )
        return genai.Client(api_key=settings.api_key, http_options=options)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._http.aclose()
            await anyio.to_thread.run_sync(self._sync_http.close, abandon_on_cancel=True)

    async def _invoke(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`client.aio.interactions.<method>` on asyncio, the sync twin in a worker thread elsewhere."""
        if self._asyncio:
            return await getattr(self._client.aio.interactions, method)(*args, **kwargs)
        call = functools.partial(getattr(self._client.interactions, method), *args, **kwargs)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)

    async def _events(self, stream: Any) -> AsyncGenerator[dict[str, Any], None]:
        """The stream's events as wire JSON; the stream is closed however iteration ends."""
        if self._asyncio:
            try:
                async for event in stream:
                    yield to_json(event)
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await stream.close()
            return
        reader = _ThreadedReader(stream)
        try:
            while (event := await reader.next()) is not None:
                yield to_json(event)
        finally:
            reader.close()

    # -- retries ----------------------------------------------------------------------------------

    async def retrying(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run `call`, retrying 408/409/429/5xx and connection errors up to `max_retries` times."""
        attempt = 0
        while True:
            try:
                return await call()
            except Exception as exc:
                if not is_api_error(exc):
                    credentials = credentials_error(exc)
                    if credentials is not None:
                        raise credentials from exc
                    raise
                status, body, message = describe(exc)
                retryable = status in RETRYABLE_STATUS or is_connection_error(exc)
                if not retryable or attempt >= self.settings.max_retries:
                    raise to_unified(exc, what) from exc
                asked = retry_delay(body)
                if asked is not None and asked > self.settings.max_retry_delay_s:
                    raise to_unified(exc, what) from exc  # the server asks for a longer wait than we allow
                delay = asked if asked is not None else min(0.5 * 2**attempt, 8.0) * (0.5 + random.random() / 2)
                attempt += 1
                await self._on_retry(
                    f"{what}: {status or 'connection error'} ({message[:200]}); "
                    f"retry {attempt}/{self.settings.max_retries} in {delay:g}s"
                    + (" as the server asked" if asked is not None else "")
                )
                await anyio.sleep(delay * self.settings.retry_delay_scale)

    # -- calls ------------------------------------------------------------------------------------

    async def create_stream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        async def call() -> Any:
            return await self._invoke("create", **body, stream=True, **_no_continuation(body))

        return self._events(await self.retrying("interactions.create", call))

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        async def call() -> Any:
            return await self._invoke("create", **body, **_no_continuation(body))

        return to_json(await self.retrying("interactions.create", call))

    async def resume_stream(
        self, interaction_id: str, last_event_id: str | None
    ) -> AsyncGenerator[dict[str, Any], None]:
        extra: dict[str, Any] = {"last_event_id": last_event_id} if last_event_id else {}

        async def call() -> Any:
            return await self._invoke("get", interaction_id, stream=True, **extra)

        return self._events(await self.retrying("interactions.get", call))

    async def get(self, interaction_id: str) -> dict[str, Any]:
        async def call() -> Any:
            return await self._invoke("get", interaction_id)

        return to_json(await self.retrying("interactions.get", call))

    async def cancel(self, interaction_id: str) -> None:
        """Best effort, once: called while a run is being torn down."""
        await self._invoke("cancel", interaction_id)


def _no_continuation(body: Mapping[str, Any]) -> dict[str, Any]:
    """Turn off the SDK's hidden continuation hops (the loop handles `requires_continuation` itself).

    The SDK refuses the flag for background and agent interactions, whose loops the server runs.
    """
    if body.get("background") or "agent" in body:
        return {}
    return {"automatic_continuation": False}
