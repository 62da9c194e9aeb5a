"""One `streamGenerateContent` request, its answer read as JSON.

google-genai builds the request (its converters and transformers: the same body, URL and query as
`client.aio.models.generate_content_stream`), authenticates it, sends it on our httpx client (with
its retry settings: one attempt, ours are in the agent loop) and splits the SSE body into events.
What it would then do to every chunk buys this adapter nothing: a `json.dumps` and a second
`json.loads`, a camelCase-to-snake_case conversion, the removal of unknown fields and a pydantic
model per chunk (each with a Python validator per nested model), about nine tenths of the time of
reading a chunk (bench/README.md). So each event is parsed once, by `json.loads`, into the wire
JSON the translator reads.

The request path relies on google-genai internals (`models._GenerateContentParameters_to_mldev` and
its Vertex twin, `BaseApiClient._build_request`, `._async_request`, `HttpResponse._aiter_response_stream`, the
SDK's split of the SSE body); `WIRE_PATH` says whether they
are there. When a google-genai release moves them, the public `generate_content_stream` is used and
each chunk is read as its JSON dump, slower but the same (tests/adapters/generate_content pins
which path runs and that both send the same body).

The API keeps nothing between calls, so every request carries the whole history, and the public
call validates and converts all of it again each turn: O(turns²) over a run, 1.3 million pydantic
attribute reads in a 50-turn session. The history only grows, so `WireRequest` converts each content
(with google-genai's own converter) the first time it is sent and keeps its wire form, and the
config (tools, system instruction, generation settings) once per config object and client, for
every run of the process (`generation_config` hands runs with the same settings the same object):
converting the local tools' declarations costs ~0.8 ms, which stood in front of every run's first
request.
"""

from __future__ import annotations

import copy
import re
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, cast
from urllib.parse import urlencode

import anyio
import httpx
from google import genai
from google.genai import _api_client, _common, errors, models, types

from unified._text import escapes_surrogates, well_formed_json

__all__ = ["WIRE_PATH", "WireRequest", "stream_chunks", "text_content_json"]

_INTERNALS = (
    hasattr(models, "_GenerateContentParameters_to_mldev")
    and hasattr(models, "_GenerateContentParameters_to_vertex")
    and hasattr(types, "_GenerateContentParameters")
    and hasattr(_common, "convert_to_dict")
    and hasattr(_common, "encode_unserializable_types")
    and hasattr(models, "_Content_to_mldev")
    and hasattr(models, "_Content_to_vertex")
    and hasattr(_api_client.HttpResponse, "_aiter_response_stream")
    and hasattr(_api_client.HttpResponse, "_load_json_from_response")
)
WIRE_PATH: bool = _INTERNALS
"""True when google-genai's request path is driven directly and the answer read as JSON."""


def _wire(value: Any) -> Any:
    return _common.encode_unserializable_types(_common.convert_to_dict(value))


def text_content_json(content: types.Content) -> dict[str, Any] | None:
    """A content of text parts alone (a prompt, an answer) as JSON, None for any other content: both its
    wire form, as the SDK's converters give it (for the Gemini API and Vertex alike) without them (they
    cost ~90 us a content, in front of a run's first request), and what the session stores
    (`model_dump(mode="json", exclude_none=True)`), which is the same. A new dict each call."""
    parts = content.parts
    if not parts:
        return None
    wired: list[dict[str, Any]] = []
    for part in parts:
        fields = part.__dict__
        text = fields.get("text")
        if text.__class__ is not str or any(value is not None for name, value in fields.items() if name != "text"):
            return None
        wired.append({"text": text})
    wire: dict[str, Any] = {"parts": wired}
    if content.role is not None:
        wire["role"] = content.role
    return wire


_RESTS_KEPT = 32
_rests: weakref.WeakKeyDictionary[Any, dict[tuple[int, str], tuple[types.GenerateContentConfig | None, dict[str, Any]]]]
_rests = weakref.WeakKeyDictionary()
"""Per API client (gone with it): the body without its contents per (config object, model); the
config itself is kept with it, so an id in a key is never another object's."""


def _rest_of(api: Any, model: str, config: types.GenerateContentConfig | None) -> dict[str, Any]:
    """The body without its contents, as wire JSON (`_url` and `_query` included), shared: never changed."""
    kept = _rests.get(api)
    if kept is None:
        kept = _rests[api] = {}
    key = (id(config), model)
    found = kept.get(key)
    if found is not None and found[0] is config:
        return found[1]
    parameters = types._GenerateContentParameters(model=model, config=config)
    vertex = bool(api.vertexai)
    convert = models._GenerateContentParameters_to_vertex if vertex else models._GenerateContentParameters_to_mldev
    request = convert(api, parameters, None, parameters)
    request.pop("config", None)
    request.pop("contents", None)
    rest: dict[str, Any] = _wire(request)
    if len(kept) >= _RESTS_KEPT:
        kept.clear()
    kept[key] = (config, rest)
    return rest


class WireRequest:
    """One run's streamGenerateContent bodies, each content converted once (see the module's doc).

    A content's wire form is reused only while the very object converted before is at that place,
    so a history that is rewritten rather than extended is converted again from where it changed.
    It serves one run's client: the API it converts for (Gemini API or Vertex) never changes.
    """

    def __init__(self) -> None:
        self._contents: list[tuple[types.Content, dict[str, Any]]] = []
        self._config: types.GenerateContentConfig | None = None
        self._model: str | None = None
        """The model of `_rest`, with `_config` the very config object it was built from."""
        self._rest: dict[str, Any] = {}
        """The body without its contents, as wire JSON (`_url` and `_query` included)."""

    def body(
        self, api: Any, model: str, contents: list[types.Content], config: types.GenerateContentConfig | None
    ) -> dict[str, Any]:
        """The body `generate_content_stream` would build, with its `_url` (and `_query`) keys.

        A new top-level dict each time (`_build_request` deletes keys from it); the wire forms in it
        are shared by every request of the run, so whoever changes them must copy it first.
        """
        if self._model != model or self._config is not config:
            self._rest, self._config, self._model = _rest_of(api, model, config), config, model
        to_wire = models._Content_to_vertex if api.vertexai else models._Content_to_mldev
        kept = self._contents
        for n, content in enumerate(contents):
            if n < len(kept) and kept[n][0] is content:
                continue
            del kept[n:]
            kept.append((content, text_content_json(content) or _wire(to_wire(content, None, None))))
        del kept[len(contents) :]
        return {**self._rest, "contents": [wire for _, wire in kept]}


class _ReleasedAfterTheEnd(httpx.AsyncByteStream):
    """A streamed response's body whose connection goes back to the pool only at `release()`, when
    the body was read to its end: httpx releases it the moment the body ends (~0.2 ms: the pool looks
    at each of its connections), which stood between the stream's end and the announcement of the
    turn's calls. Closed before its end, it is closed at once; `release()` also closes a body left
    before its end (google-genai's reader of the body, left suspended, would close it only when
    garbage-collected), so the connection is dropped then, not later."""

    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self._inner = inner
        self._ended = False
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk
        self._ended = True

    async def aclose(self) -> None:
        if not self._ended:
            await self.release()

    async def release(self) -> None:
        if not self._closed:
            self._closed = True
            with anyio.CancelScope(shield=True):
                await self._inner.aclose()


def _hold_release(response: Any) -> _ReleasedAfterTheEnd | None:
    """Wrap the body of google-genai's `HttpResponse` (its httpx response) in `_ReleasedAfterTheEnd`."""
    http_response = getattr(response, "response_stream", None)
    if not isinstance(http_response, httpx.Response) or not isinstance(http_response.stream, httpx.AsyncByteStream):
        return None
    held = _ReleasedAfterTheEnd(http_response.stream)
    http_response.stream = held
    return held


_SSE_FIELD = re.compile(r"(?:event|id|retry)(?::|$)")


def _sse_payload(segment: str) -> str | None:
    """The JSON text of a segment the SDK's split did not strip (it strips "data: " alone, and takes any other line
    for a line of an error's JSON): None for an SSE comment (a proxy's ": keep-alive") or a field other than data
    (`event:`, `id:`, `retry:`) or the "[DONE]" an OpenAI-style gateway ends with, the text after "data:" without
    its space, a byte order mark dropped. Each was "not its JSON" to the SDK: the request was sent again, and
    again, until the run failed as the model's (or, after the answer, as `stream_interrupted`)."""
    text = segment.removeprefix("\ufeff")
    if text.startswith(":") or _SSE_FIELD.match(text) or text == "[DONE]":  # [DONE]: an OpenAI-style gateway's end
        return None
    if text.startswith("data:"):
        return text[5:].removeprefix(" ")
    return text


async def stream_chunks(
    client: genai.Client,
    *,
    model: str,
    contents: list[types.Content],
    config: types.GenerateContentConfig | None,
    wire: WireRequest | None = None,
    on_end: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[Mapping[str, Any]]:
    """The answer's chunks as wire JSON (camelCase keys, bytes as base64 text), as they arrive.

    `wire` keeps the run's converted history between its requests (a new one converts it all).
    `on_end` is awaited once the stream has ended (read to its end, not failed), before its
    connection goes back to the pool: what the end announces goes out first.

    Raises google-genai's `errors.APIError` for an error status or an in-band error event, as
    `generate_content_stream` does. Close it (`aclose`) to release the connection early.
    """
    api = client.aio.models._api_client
    if not (WIRE_PATH and hasattr(api, "_build_request") and hasattr(api, "_async_request")):
        stream = cast(
            "AsyncGenerator[types.GenerateContentResponse, None]",
            await client.aio.models.generate_content_stream(model=model, contents=contents, config=config),
        )
        try:
            async for chunk in stream:
                dumped: dict[str, Any] = chunk.model_dump(mode="json", by_alias=True, exclude_none=True)
                dumped.pop("sdkHttpResponse", None)
                yield well_formed_json(dumped)
            if on_end is not None:
                await on_end()
        finally:
            await stream.aclose()
        return
    request = (wire or WireRequest()).body(api, model, contents, config)
    url = request.get("_url")
    path = "{model}:streamGenerateContent?alt=sse".format_map(url) if url else "{model}:streamGenerateContent?alt=sse"
    query = request.get("_query")
    if query:
        path = f"{path}?{urlencode(query)}"
    http_options = config.http_options if config is not None else None
    if getattr(api._http_options, "extra_body", None) or getattr(http_options, "extra_body", None):
        request = copy.deepcopy(request)  # merged into the body in place: the kept wire forms stay as sent
    http_request = api._build_request("post", path, request, http_options)
    response = await api._async_request(http_request=http_request, http_options=http_options, stream=True)
    held = _hold_release(response)
    segments = cast("AsyncGenerator[str, None]", response._aiter_response_stream())
    try:
        async for segment in segments:  # the SDK's split of the SSE body, each event's JSON text
            raw = segment if segment[:1] == "{" else _sse_payload(segment)
            if raw is None:
                continue
            try:
                chunk = response._load_json_from_response(raw)
            except errors.UnknownApiResponseError:
                raise
            except ValueError as exc:  # JSON the SDK does not call unparsable: a number of over 4,300 digits
                raise errors.UnknownApiResponseError(f"Failed to parse response as JSON ({exc})") from None
            if escapes_surrogates(raw):  # a lone surrogate no request nor session file could hold again
                chunk = well_formed_json(chunk)
            if isinstance(chunk, dict) and next(iter(chunk), None) == "error":  # the SDK's in-band error check
                await errors.APIError.raise_error_async(chunk["error"].get("code"), chunk, response)
            yield chunk
        if on_end is not None:
            await on_end()
    finally:
        try:
            await segments.aclose()
        finally:
            if held is not None:
                await held.release()
