"""The generate-content backend's typed options and thinking plan.

The connection, retry and tool options shared with the interactions backend, and how credentials
are read, live in `unified._internal.api_options`; this module adds this backend's own options.
Kept free of google-genai so options are checked before the stream starts, cheaply.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import Field

from unified._adapters.generate_content._sessions import BACKEND
from unified._exports import publish
from unified._internal import api_options
from unified._internal.api_options import ApiOptions
from unified._internal.models import LEVEL_BUDGETS, plan_level, profile
from unified.types import ExecuteParams, ThinkingConfig

__all__ = [
    "DEFAULT_MODEL",
    "GenerateContentOptions",
    "ThinkingPlan",
    "plan_thinking",
    "resolve_options",
    "server_side_invocations",
]

DEFAULT_MODEL = "gemini-2.5-flash"


class GenerateContentOptions(ApiOptions):
    """`backend_options` of the generate-content backend (docs/backends/generate-content.md).

    `max_retries` counts retries of one model turn after a 429, 5xx or dropped stream.
    """

    temperature: float | None = Field(default=None, allow_inf_nan=False)
    max_output_tokens: int | None = Field(default=None, gt=0)


def server_side_invocations(options: GenerateContentOptions, model: str, *, functions: bool) -> bool:
    """`includeServerSideToolInvocations`: as the option says, else on exactly when the API requires it
    (built-in tools combined with function calling on Gemini 3; google-genai refuses it on Vertex AI)."""
    if options.server_side_tool_invocations is not None:
        return options.server_side_tool_invocations
    gemini3 = profile(model).tool_family == "gemini-3"
    return functions and bool(options.google_tools) and gemini3 and not options.vertexai


def resolve_options(params: ExecuteParams, env: Mapping[str, str] | None = None) -> GenerateContentOptions:
    """Options beat the environment; the environment follows google-genai's own names and order."""
    return api_options.resolve_api_options(params, env, backend=BACKEND, options_type=GenerateContentOptions)


# -- thinking ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThinkingPlan:
    """What goes into `ThinkingConfig` on the wire, and a note for each value that had to change."""

    budget: int | None = None
    level: str | None = None
    include_thoughts: bool = True
    notes: tuple[str, ...] = ()


@functools.lru_cache(maxsize=64)
def plan_thinking(model: str, thinking: ThinkingConfig | None) -> ThinkingPlan | None:
    """Map a budget or level onto what the model takes (its profile in `unified._internal.models`).

    Pure (both arguments and the plan are immutable): worked out once per pair, as every run asks it
    twice before its first request (the options check, the request's config)."""
    known = profile(model)
    if thinking is None:
        return None if known.thinking == "none" else ThinkingPlan()
    notes: list[str] = []
    if known.thinking == "none":
        if thinking.budget not in (None, 0) or thinking.level is not None:
            notes.append(f"{model} does not think; the thinking setting is ignored")
        return ThinkingPlan(include_thoughts=False, notes=tuple(notes))
    if known.thinking == "level":
        level, notes = plan_level(model, thinking.level, thinking.budget)
        return ThinkingPlan(level=level, include_thoughts=thinking.include_thoughts, notes=tuple(notes))
    budget = thinking.budget
    if thinking.level is not None:
        budget = LEVEL_BUDGETS[thinking.level]
        notes.append(f"{model} takes a thinking budget, not a level; level {thinking.level!r} sent as budget {budget}")
    if budget is not None and budget != -1 and known.budget_range is not None:
        low, high = known.budget_range
        if not (budget == 0 and known.budget_off) and not low <= budget <= high:
            clamped = min(max(budget, low), high)
            why = "cannot turn thinking off" if budget == 0 else f"takes budgets {low}..{high}"
            notes.append(f"{model} {why}; budget {budget} sent as {clamped}")
            budget = clamped
    return ThinkingPlan(budget=budget, include_thoughts=thinking.include_thoughts, notes=tuple(notes))


publish("unified", ["GenerateContentOptions"], globals())
