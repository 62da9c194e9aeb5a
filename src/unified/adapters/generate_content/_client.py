"""The google-genai client, on an httpx client we own.

google-genai 3.x would otherwise pick its own HTTP stack (httpx2, or aiohttp when importable),
which respx and vcrpy's httpx patch cannot see. Injecting our `httpx.AsyncClient` makes every
request visible to test doubles and cassettes, and lets us close the connection pool ourselves.
google.genai is imported here, and this module only when a run starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
from google import genai
from google.genai import types

from unified._internal.http import async_client, sync_client
from unified.adapters.generate_content._options import Settings

if TYPE_CHECKING:
    from unified.adapters.generate_content._options import ThinkingPlan


def open_http(settings: Settings) -> httpx.AsyncClient:
    """Our httpx client; the SDK passes a per-request timeout, so this one only sets connection limits."""
    return async_client(settings.timeout_s)


def make_client(settings: Settings, http: httpx.AsyncClient) -> genai.Client:
    """API-key or Vertex (ADC) mode, with base URL, API version and timeout applied."""
    options = types.HttpOptions(
        api_version=settings.api_version,
        base_url=settings.base_url,
        timeout=int(settings.timeout_s * 1000),  # the SDK sends timeout=None to httpx otherwise: no timeout at all
        httpx_async_client=http,
        httpx_client=sync_client(settings.timeout_s),  # unused, but spares the SDK building its own
        retry_options=types.HttpRetryOptions(attempts=1),  # retries are ours: they honour RetryInfo
    )
    if settings.vertexai:
        return genai.Client(
            vertexai=True,
            api_key=settings.api_key if not settings.project else None,
            project=settings.project,
            location=settings.location or "global",
            http_options=options,
        )
    return genai.Client(api_key=settings.api_key, http_options=options)


def _declaration(spec: dict[str, Any]) -> types.FunctionDeclaration:
    """`parametersJsonSchema` carries the runtime's JSON Schema verbatim (the SDK's `Schema` would reject
    keywords it does not model)."""
    return types.FunctionDeclaration(
        name=spec["name"], description=spec.get("description"), parameters_json_schema=spec.get("parameters")
    )


def generation_config(
    settings: Settings,
    *,
    system_instruction: str | None,
    declarations: list[dict[str, Any]],
    thinking: ThinkingPlan | None,
    server_side_invocations: bool,
) -> types.GenerateContentConfig:
    """The per-request config: our tools, thinking, and the SDK's own loops switched off."""
    tools: list[types.Tool] = []
    if declarations:
        tools.append(types.Tool(function_declarations=[_declaration(d) for d in declarations]))
    if settings.google_search:
        tools.append(types.Tool(google_search=types.GoogleSearch()))
    if settings.url_context:
        tools.append(types.Tool(url_context=types.UrlContext()))
    if settings.code_execution:
        tools.append(types.Tool(code_execution=types.ToolCodeExecution()))
    thinking_config = None
    if thinking is not None:
        thinking_config = types.ThinkingConfig(
            include_thoughts=thinking.include_thoughts,
            thinking_budget=thinking.budget,
            thinking_level=types.ThinkingLevel(thinking.level.upper()) if thinking.level else None,
        )
    tool_config = None
    if server_side_invocations and declarations and settings.builtin_tools:
        tool_config = types.ToolConfig(include_server_side_tool_invocations=True)
    return types.GenerateContentConfig(
        system_instruction=system_instruction,
        tools=tools or None,
        tool_config=tool_config,
        thinking_config=thinking_config,
        temperature=settings.temperature,
        max_output_tokens=settings.max_output_tokens,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        automatic_continuation=False,
    )
