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
its Vertex twin, `BaseApiClient._build_request`, `._async_request`); `WIRE_PATH` says whether they
are there. When a google-genai release moves them, the public `generate_content_stream` is used and
each chunk is read as its JSON dump, slower but the same (tests/adapters/generate_content pins
which path runs).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, cast
from urllib.parse import urlencode

from google import genai
from google.genai import _common, errors, models, types

__all__ = ["WIRE_PATH", "stream_chunks"]

_INTERNALS = (
    hasattr(models, "_GenerateContentParameters_to_mldev")
    and hasattr(models, "_GenerateContentParameters_to_vertex")
    and hasattr(types, "_GenerateContentParameters")
    and hasattr(_common, "convert_to_dict")
    and hasattr(_common, "encode_unserializable_types")
)
WIRE_PATH: bool = _INTERNALS
"""True when google-genai's request path is driven directly and the answer read as JSON."""


async def stream_chunks(
    client: genai.Client,
    *,
    model: str,
    contents: list[types.Content],
    config: types.GenerateContentConfig | None,
) -> AsyncIterator[Mapping[str, Any]]:
    """The answer's chunks as wire JSON (camelCase keys, bytes as base64 text), as they arrive.

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
                yield dumped
        finally:
            await stream.aclose()
        return
    parameters = types._GenerateContentParameters(model=model, contents=contents, config=config)
    if api.vertexai:
        convert = models._GenerateContentParameters_to_vertex
    else:
        convert = models._GenerateContentParameters_to_mldev
    request: dict[str, Any] = convert(api, parameters, None, parameters)
    url = request.get("_url")
    path = "{model}:streamGenerateContent?alt=sse".format_map(url) if url else "{model}:streamGenerateContent?alt=sse"
    query = request.get("_query")
    if query:
        path = f"{path}?{urlencode(query)}"
    request.pop("config", None)
    http_options = parameters.config.http_options if parameters.config is not None else None
    request = _common.encode_unserializable_types(_common.convert_to_dict(request))
    http_request = api._build_request("post", path, request, http_options)
    response = await api._async_request(http_request=http_request, http_options=http_options, stream=True)
    segments = cast("AsyncGenerator[Any, None]", response.async_segments())
    try:
        async for chunk in segments:
            if isinstance(chunk, dict) and next(iter(chunk), None) == "error":  # the SDK's in-band error check
                await errors.APIError.raise_error_async(chunk["error"].get("code"), chunk, response)
            yield chunk
    finally:
        await segments.aclose()
