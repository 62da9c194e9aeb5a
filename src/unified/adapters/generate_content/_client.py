"""The per-request `GenerateContentConfig`: our tools, thinking, and the SDK's own loops switched off.

google.genai is imported here, and this module only when a run starts (the client itself is built
by `unified._internal.genai_client`, shared with the interactions backend).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.genai import types

from unified.adapters.generate_content._options import GenerateContentOptions

if TYPE_CHECKING:
    from unified.adapters.generate_content._options import ThinkingPlan


def _declaration(spec: dict[str, Any]) -> types.FunctionDeclaration:
    """`parametersJsonSchema` carries the runtime's JSON Schema verbatim (the SDK's `Schema` would reject
    keywords it does not model)."""
    return types.FunctionDeclaration(
        name=spec["name"], description=spec.get("description"), parameters_json_schema=spec.get("parameters")
    )


def generation_config(
    settings: GenerateContentOptions,
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
    if server_side_invocations and declarations and settings.google_tools:
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
