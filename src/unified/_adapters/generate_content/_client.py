"""The per-request `GenerateContentConfig`: our tools, thinking, and the SDK's own loops switched off.

google.genai is imported here, and this module only when a run starts (the client itself is built
by `unified._internal.genai_client`, shared with the interactions backend).
"""

from __future__ import annotations

import functools
import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from google.genai import types

from unified._adapters.generate_content._options import GenerateContentOptions
from unified._agent_loop import Declarations
from unified._internal.api_options import GoogleMapsTool

if TYPE_CHECKING:
    from unified._adapters.generate_content._options import ThinkingPlan

__all__ = ["CONFIG_OPTIONS", "builtin_tools", "generation_config", "tool_config"]

CONFIG_OPTIONS = frozenset(
    {
        "temperature",
        "max_output_tokens",
        "function_calling",
        "user_location",
        "google_search",
        "google_maps",
        "url_context",
        "code_execution",
        "file_search",
    }
)
"""The options `generation_config` reads (the key of its cache; a test holds it to this module's reads)."""

_CONFIGS_KEPT = 32
_configs: OrderedDict[tuple[object, ...], types.GenerateContentConfig] = OrderedDict()


def _declaration(spec: dict[str, Any]) -> types.FunctionDeclaration:
    """`parametersJsonSchema` carries the runtime's JSON Schema verbatim (the SDK's `Schema` would reject
    keywords it does not model)."""
    return types.FunctionDeclaration(
        name=spec["name"], description=spec.get("description"), parameters_json_schema=spec.get("parameters")
    )


@functools.lru_cache(maxsize=32)
def _function_tool(declarations: str) -> types.Tool:
    """The `Tool` of these declarations (JSON), built once: validating ten declarations costs ~0.5 ms,
    and every run of a process declares the same ones. Shared by the runs' configs, never changed."""
    return types.Tool(function_declarations=[_declaration(d) for d in json.loads(declarations)])


def builtin_tools(options: GenerateContentOptions) -> list[types.Tool]:
    """The Google built-in tools switched on, one `Tool` each (docs/api-tools.md)."""
    tools: list[types.Tool] = []
    if options.google_search:
        tools.append(types.Tool(google_search=types.GoogleSearch()))
    if options.google_maps:
        widget = options.google_maps.enable_widget if isinstance(options.google_maps, GoogleMapsTool) else None
        tools.append(types.Tool(google_maps=types.GoogleMaps(enable_widget=widget or None)))
    if options.url_context:
        tools.append(types.Tool(url_context=types.UrlContext()))
    if options.code_execution:
        tools.append(types.Tool(code_execution=types.ToolCodeExecution()))
    if options.file_search is not None:
        search = options.file_search
        tools.append(
            types.Tool(
                file_search=types.FileSearch(
                    file_search_store_names=list(search.store_names),
                    metadata_filter=search.metadata_filter,
                    top_k=search.top_k,
                )
            )
        )
    return tools


def tool_config(options: GenerateContentOptions, *, invocations: bool) -> types.ToolConfig | None:
    """`toolConfig`: the function-calling mode, the user's location, server-side tool invocations."""
    calling = None
    if options.function_calling is not None:
        chosen = options.function_calling
        calling = types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode(chosen.mode.upper()),
            allowed_function_names=list(chosen.allowed_function_names) or None,
        )
    retrieval = None
    if options.user_location is not None:
        where = options.user_location
        retrieval = types.RetrievalConfig(lat_lng=types.LatLng(latitude=where.latitude, longitude=where.longitude))
    if calling is None and retrieval is None and not invocations:
        return None
    return types.ToolConfig(
        function_calling_config=calling,
        retrieval_config=retrieval,
        include_server_side_tool_invocations=True if invocations else None,
    )


def generation_config(
    options: GenerateContentOptions,
    *,
    system_instruction: str | None,
    declarations: Declarations,
    thinking: ThinkingPlan | None,
    invocations: bool,
) -> types.GenerateContentConfig:
    """The per-request config: our tools, thinking, and the SDK's own loops switched off.

    The same settings give the very same config object, shared by the runs of the process (never
    changed once built): building it costs ~0.2 ms, and its wire form, which a run's requests
    convert once per config object (~0.8 ms with the local tools' declarations), is then kept
    across runs too (`unified._adapters.generate_content._stream`), both in front of a run's first
    request otherwise.
    """
    tools_json = declarations.json  # the text the declarations are cached as: never parsed and dumped again
    chosen = options.model_dump_json(include=set(CONFIG_OPTIONS))
    key = (chosen, system_instruction, tools_json, thinking, invocations)
    config = _configs.get(key)
    if config is not None:
        _configs.move_to_end(key)
        return config
    config = _configs[key] = _build_config(options, system_instruction, tools_json, thinking, invocations)
    if len(_configs) > _CONFIGS_KEPT:
        _configs.popitem(last=False)
    return config


def _build_config(
    options: GenerateContentOptions,
    system_instruction: str | None,
    tools_json: str,
    thinking: ThinkingPlan | None,
    invocations: bool,
) -> types.GenerateContentConfig:
    tools: list[types.Tool] = []
    if tools_json != "[]":
        tools.append(_function_tool(tools_json))
    tools += builtin_tools(options)
    thinking_config = None
    if thinking is not None:
        thinking_config = types.ThinkingConfig(
            include_thoughts=thinking.include_thoughts,
            thinking_budget=thinking.budget,
            thinking_level=types.ThinkingLevel(thinking.level.upper()) if thinking.level else None,
        )
    return types.GenerateContentConfig(
        system_instruction=system_instruction,
        tools=tools or None,
        tool_config=tool_config(options, invocations=invocations),
        thinking_config=thinking_config,
        temperature=options.temperature,
        max_output_tokens=options.max_output_tokens,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        automatic_continuation=False,
    )
