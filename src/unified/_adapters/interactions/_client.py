"""A thin async client over `client.aio.interactions`: our httpx client, our retries, our errors.

google-genai is imported here only, and only when a run starts, so `import unified` stays light.
The SDK's async path is asyncio-only (its hooks call `asyncio.to_thread`), so under trio the
same calls go through the SDK's sync client in worker threads; both paths use the httpx clients
of `unified._internal.genai_client`, so respx and vcrpy see every request. The SDK's own retries
are off: `create` is retried by the agent loop, `get` (reconnecting, polling) here, both under the
one policy of `unified._internal.retry`. Errors come from two unrelated families
(`google.genai.errors` and `google.genai._interactions`); both become typed `UnifiedError`s.
Everything the client returns is plain JSON (dicts), which the translator consumes.

Streams are read as JSON: google-genai builds, authenticates and sends the request and raises its
typed errors for an error status (`with_streaming_response`, the SDK's raw-response accessor), and
the SSE body is split and parsed here, once per event with `json.loads`. The SDK's own stream
would build a pydantic model class per event (~1 ms each) only for the translator to dump it back
to JSON, and it stops reading at the `[DONE]` sentinel, before the end of the body, so httpx could
not return the connection to the pool: every request opened a new TCP connection. Read to its end,
the connection is reused (one per client, tests/adapters/interactions/test_interactions_pool.py).
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import anyio
import httpx
import sniffio

from unified._adapters.interactions._options import InteractionsOptions
from unified._internal.api_errors import (
    RETRYABLE_STATUS,
    body_said,
    credentials_error,
    error_from_status,
    not_its_json,
    redirected,
    retry_after_header,
    undecodable,
    unreachable,
    unreadable_response,
    unreadable_wait,
)
from unified._internal.genai_client import GenaiClient
from unified._internal.retry import Failure, retrying
from unified._redaction import clip
from unified._text import escapes_surrogates, json_type, well_formed_json
from unified.errors import BackendError, RateLimited, UnifiedError

__all__ = [
    "FailedBeforeOutput",
    "InteractionsClient",
    "T",
    "UnreadableStream",
    "Warn",
    "describe",
    "error_from_exception",
    "failure_from_exception",
    "is_api_error",
    "is_connection_error",
    "lost_interaction",
    "sdk_request",
    "to_json",
]

T = TypeVar("T")
Warn = Callable[[str, str], Awaitable[None]]
"""Emits a `warning` event (code, message)."""


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
        # The server's own words: the SDK's message is "Error code: 429 - " and the whole body's repr (its
        # `details` list and all), which every error of the run and the subagents' tool results repeated.
        error = exc.body.get("error") if isinstance(exc.body, Mapping) else None
        said = error.get("message") if isinstance(error, Mapping) else None
        return exc.status_code, exc.body, said if isinstance(said, str) and said.strip() else body_said(exc.body)
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


def error_from_exception(exc: BaseException, what: str, model: str | None = None) -> UnifiedError:
    """An SDK or transport failure → the typed error the stream guard reports (see `_internal.api_errors`)."""
    unavailable = unreachable(exc)
    if unavailable is not None:  # no connection was made: the same error as generate-content's (api_errors)
        unavailable.details["during"] = what
        return unavailable
    status, body, message = describe(exc)
    if status is None:
        return BackendError(
            f"{what} failed: {message}", hint="check the network and the base URL", retryable=True, details={}
        )
    error = body.get("error") if isinstance(body, Mapping) else None
    status_text = error.get("status") if isinstance(error, Mapping) else None
    said_status = status_text if isinstance(status_text, str) else None
    waited = retry_after_header(exc)
    failure = error_from_status(status, said_status, message, body=body, model=model, retry_after_s=waited)
    failure.details["during"] = what
    return failure


def lost_interaction(error: UnifiedError, previous: str) -> UnifiedError:
    """`error` for a request that continues interaction `previous`: a 404 there is that interaction gone (expired, or
    deleted), whatever words the server chose. Unless its message said "interaction", it read as `model_not_found`
    "the Gemini API does not serve the requested model ... check the model name" (Google's own 404 says "Requested
    entity was not found."): the session's model was fine, and the resume never could work (bad input round 21)."""
    if error.code != "model_not_found" or error.details.get("http_status") != 404:
        return error
    said = error.details.get("message")
    return BackendError(
        f"the Interactions API no longer holds interaction {previous}, which this session continues (404): {said}",
        hint="stored interactions expire; start a new session, or carry this one's history into one (`unified "
        "sessions export REF`, then `unified run --history`); if you changed the model, check its name too",
        code="interaction_not_found",
        details={**error.details, "previous_interaction_id": previous},
    )


def failure_from_exception(exc: BaseException, model: str | None = None) -> Failure | None:
    """What a failed Interactions API call means for the retry policy (None: not a request failure); `model` (or
    agent) is what a 404 names: it said "the requested model" (round 21), where generate-content names it."""
    if isinstance(exc, UnreadableStream):  # the answer's fault, not the request's: asked again, as a cut stream is
        return Failure("transient", not_its_json(str(exc)))
    if isinstance(exc, FailedBeforeOutput):  # its HTTP twin's kind: a 429 waits as a rate limit does
        limited = isinstance(exc.error, RateLimited)
        return Failure("rate_limit" if limited else "transient", exc.error, exc.retry_delay_s)
    if (unread := unreadable_wait(exc)) is not None:
        return Failure("transient", unread)
    if not is_api_error(exc):
        credentials = credentials_error(exc) or unreadable_response(exc)
        return Failure("fatal", credentials) if credentials is not None else None
    status, _, _ = describe(exc)
    error = error_from_exception(exc, "an Interactions API request", model)
    asked = error.details.get("retry_after_s")  # the body's RetryInfo, else the answer's Retry-After
    if status == 429:
        return Failure("rate_limit", error, asked)
    retryable = status in RETRYABLE_STATUS or is_connection_error(exc)
    return Failure("transient" if retryable else "fatal", error, asked if retryable else None)


_DONE = "[DONE]"


class FailedBeforeOutput(Exception):
    """A retryable error the interaction's stream said (a 429 `RESOURCE_EXHAUSTED`, a 503 `UNAVAILABLE`) before the
    turn showed anything: raised out of the turn (`_turns.InteractionsTurns.send`) so that the run's retry policy
    asks again, as for the same status answered over HTTP (`failure_from_exception`); it ended the run at once.
    After output the error stays the turn's end: asking again would show that output twice. `retry_delay_s` is the
    event's `google.rpc.RetryInfo` (`api_errors.retry_delay`, the reader of the HTTP body's): it was not read, and the
    retry came after the policy's backoff, not the wait the server asked for."""

    def __init__(self, error: UnifiedError, retry_delay_s: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_delay_s = retry_delay_s


class UnreadableStream(ValueError):
    """An answer of status 200 that is not the API's stream of JSON events: an event cut in the middle, or
    something other than the API answered (a proxy's page). Read as nothing, it made the run ask the model again
    as for a botched turn, blaming the model; it is a broken stream (`failure_from_exception`, `_turns._follow`)."""


def _event(data: list[str]) -> dict[str, Any] | None:
    """One SSE event's `data` lines as wire JSON (None for the `[DONE]` sentinel). Raises `UnreadableStream` for
    data that is no JSON object."""
    text = data[0] if len(data) == 1 else "\n".join(data)
    if text == _DONE:
        return None
    try:
        event = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableStream(f"an event that is no JSON ({exc.msg}): {clip(text, 200)!r}") from None
    except ValueError as exc:  # JSON Python will not read: a number of over 4,300 digits (internal_error before)
        raise UnreadableStream(f"an event Python cannot read ({exc}): {clip(text, 200)!r}") from None
    except RecursionError:  # nested deeper than the parser goes, under the bound on containers (internal_error)
        raise UnreadableStream(f"an event nested too deeply to parse: {clip(text, 200)!r}") from None
    if not isinstance(event, dict):  # the API's events are objects: an array or a number was dropped, unsaid, and
        # a stream of them read as empty, the model asked again as for a botched turn
        raise UnreadableStream(f"an event that is {json_type(event)}, not an object: {clip(text, 200)!r}")
    return well_formed_json(event) if escapes_surrogates(text) else event


def _event_stream(response: httpx.Response) -> None:
    """Raises `UnreadableStream` unless `response` says it is an event stream (a proxy's page of status 200 is
    `text/html`: its lines are no SSE, and read as such they were no event at all). A redirect, which the SDK hands
    over as an answer, is the base URL's fault (`redirected`): asking again gets it again."""
    if 300 <= response.status_code < 400:
        raise redirected(f"({response.status_code} {response.reason_phrase})".replace(" )", ")"))
    content_type = response.headers.get("content-type", "")
    if content_type and not content_type.lower().startswith("text/event-stream"):
        raise UnreadableStream(f"an answer of type {clip(content_type, 100)!r}, not an event stream")


def _data(line: str) -> str | None:
    """The value of an SSE `data:` line; None for any other field or a comment. A byte order mark before the
    stream's first line is dropped, as the SSE spec drops it (that line was read as no field: its event was lost)."""
    if not line.startswith("data:"):
        if not line.startswith("\ufeffdata:"):
            return None
        line = line[1:]
    return line[6:] if line.startswith("data: ") else line[5:]


class _SseReader:
    """One SSE body, line by line (the async and the sync reader's one state): `line` gives the event a blank line
    completes, `end` the last one. A body that ends without any event, and held a line that is no SSE at all (no
    field, no comment: a proxy's page sent as `text/event-stream`), is `UnreadableStream` naming that line: it read
    as an empty stream, `malformed_turn`, and the model was asked again for the server's fault."""

    __slots__ = ("data", "events", "stray")

    def __init__(self) -> None:
        self.data: list[str] = []
        self.events = 0
        self.stray: str | None = None

    def line(self, line: str) -> dict[str, Any] | None:
        if line:
            value = _data(line)
            if value is not None:
                self.data.append(value)
            elif self.stray is None and not _SSE_LINE.match(line):
                self.stray = line
            return None
        return self._flush()

    def end(self) -> dict[str, Any] | None:
        event = self._flush()
        if event is None and self.events == 0 and self.stray is not None:
            raise UnreadableStream(f"an answer without events, whose line {clip(self.stray, 200)!r} is no SSE")
        return event

    def _flush(self) -> dict[str, Any] | None:
        if not self.data:
            return None
        event = _event(self.data)
        self.data = []
        self.events += event is not None
        return event


_SSE_LINE = re.compile(r"\ufeff?(?::|(?:event|id|retry)(?::|$))")
"""A comment or a field other than `data` (what `_SseReader` passes over without calling it stray)."""


async def sse_events(lines: AsyncIterator[str]) -> AsyncGenerator[dict[str, Any], None]:
    """The JSON events of an SSE body, read to its end (so the connection goes back to the pool)."""
    reader = _SseReader()
    try:
        async for line in lines:
            if (event := reader.line(line)) is not None:
                yield event
    except httpx.DecodingError as exc:  # not a TransportError: it ended the run as unified's bug
        raise UnreadableStream(undecodable(exc)) from None
    if (event := reader.end()) is not None:
        yield event


def sse_events_sync(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """`sse_events` for the sync client (the trio path, in worker threads)."""
    reader = _SseReader()
    try:
        for line in lines:
            if (event := reader.line(line)) is not None:
                yield event
    except httpx.DecodingError as exc:
        raise UnreadableStream(undecodable(exc)) from None
    if (event := reader.end()) is not None:
        yield event


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


def sdk_request(body: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a create call that sends `body`: `request=` the SDK's own request object,
    validated here, where the SDK's public path would read the keywords with `utils.unmarshal`, which
    builds a new pydantic model class for every request (~5 ms, the largest part of a request's cost on
    this side, the same every turn). A request object it takes as it is and sends the very same JSON (a
    test holds the bodies equal). Where this SDK's internals moved, or `body` does not validate, the
    keywords go the public way (and the SDK raises its own error for a bad body, as before)."""
    request = _typed_request(body)
    return {"request": request} if request is not None else body


def _typed_request(body: dict[str, Any]) -> Any | None:
    try:
        from google.genai._gaos import google_genai, models

        # what the SDK does to keywords before it reads them (a bare content list as one user input)
        normalized = google_genai._normalize_create_body(body)
        return models.CreateInteractionRequest.model_validate({"body": normalized})
    except Exception:  # another SDK's internals, or a body its own path will refuse with its own error
        return None


class InteractionsClient(GenaiClient):
    """One run's connection to the Interactions API (`async with`: the HTTP clients close on exit)."""

    modules = ("google.genai", "google.genai._gaos.google_genai")
    """The second is what `client.aio.interactions` imports on first use (~0.7 s): not on the event loop."""

    def __init__(self, options: InteractionsOptions, warn: Warn) -> None:
        super().__init__(options)
        self.options: InteractionsOptions = options
        self._warn = warn
        self._asyncio = sniffio.current_async_library() == "asyncio"

    async def _invoke(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """`client.aio.interactions.<method>` on asyncio, the sync twin in a worker thread elsewhere."""
        if self._asyncio:
            return await getattr(self.client.aio.interactions, method)(*args, **kwargs)
        call = functools.partial(getattr(self.client.interactions, method), *args, **kwargs)
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)

    async def _stream(self, method: str, *args: Any, **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        """Send a streaming call (its errors raised here, as the SDK raises them) and return its events."""
        if self._asyncio:
            manager = getattr(self.client.aio.interactions.with_streaming_response, method)(*args, **kwargs)
            response = await manager.__aenter__()
            return self._read(manager, response)
        manager = getattr(self.client.interactions.with_streaming_response, method)(*args, **kwargs)
        response = await anyio.to_thread.run_sync(manager.__enter__, abandon_on_cancel=True)
        return self._read_threaded(manager, response)

    async def _read(self, manager: Any, response: Any) -> AsyncGenerator[dict[str, Any], None]:
        """The body's events as wire JSON; the response is closed however iteration ends."""
        try:
            _event_stream(response.http_response)
            async for event in sse_events(response.http_response.aiter_lines()):
                yield event
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await manager.__aexit__(None, None, None)

    async def _read_threaded(self, manager: Any, response: Any) -> AsyncGenerator[dict[str, Any], None]:
        def events() -> Iterator[dict[str, Any]]:
            try:
                _event_stream(response.http_response)
                yield from sse_events_sync(response.http_response.iter_lines())
            finally:
                manager.__exit__(None, None, None)

        generator = events()
        reader = _ThreadedReader(generator)
        try:
            while (event := await reader.next()) is not None:
                yield event
        finally:
            reader.close()

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        return await retrying(call, classify=failure_from_exception, options=self.options, warn=self._warn)

    # -- calls ------------------------------------------------------------------------------------

    async def create_stream(self, body: dict[str, Any]) -> AsyncGenerator[dict[str, Any], None]:
        """Not retried here: the agent loop retries the whole turn while nothing of it was shown.

        The SDK's raw accessor has no hidden continuation hops to turn off (the loop handles
        `requires_continuation` itself).
        """
        return await self._stream("create", **sdk_request({**body, "stream": True}))

    async def create(self, body: dict[str, Any]) -> dict[str, Any]:
        return to_json(await self._invoke("create", **sdk_request(body), **_no_continuation(body)))

    async def resume_stream(
        self, interaction_id: str, last_event_id: str | None
    ) -> AsyncGenerator[dict[str, Any], None]:
        extra: dict[str, Any] = {"last_event_id": last_event_id} if last_event_id else {}

        async def call() -> AsyncGenerator[dict[str, Any], None]:
            return await self._stream("get", interaction_id, stream=True, **extra)

        return await self._retrying(call)

    async def get(self, interaction_id: str) -> dict[str, Any]:
        async def call() -> Any:
            return await self._invoke("get", interaction_id)

        return to_json(await self._retrying(call))

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
