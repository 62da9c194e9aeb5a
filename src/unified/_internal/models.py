"""Per-model facts, as data, in one place: used by both API backends, the tool runtime and routing.

Each profile says, for the model ids it matches (by prefix of the id's last path segment):

- `tool_family`: which local tool declaration set the model gets (docs/tools.md): the Gemini 3 set
  for the Gemini 3 family, `default-legacy` for every other model, as the Gemini CLI decides. The
  API's `-latest` aliases (`gemini-flash-latest`, `gemini-pro-latest`, `gemini-flash-lite-latest`)
  serve Gemini 3 models today, so they get the Gemini 3 set;
- `thinking`: how the model takes a thinking setting: a `level` (Gemini 3), a `budget` in tokens
  with its range (Gemini 2.5), or `none`; which levels it accepts; whether budget 0 turns it off.

Which Google built-in tools a model supports, and which combinations the API refuses, are data of
their own (`api_tools.toml`, read by `unified._internal.api_tools`), keyed by the same model ids.

A budget maps to a level, and a level to a budget, the same way on every backend (`budget_to_level`,
`LEVEL_BUDGETS`). Unknown models get `UNKNOWN`: legacy declarations, no thinking config, no claim
about their family (so no family rule of `api_tools.toml` applies to them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ALL_LEVELS",
    "LEVEL_BUDGETS",
    "PROFILES",
    "UNKNOWN",
    "ModelProfile",
    "ThinkingLevel",
    "ToolFamily",
    "budget_to_level",
    "plan_level",
    "profile",
]

ToolFamily = Literal["gemini-3", "default-legacy"]
ThinkingLevel = Literal["minimal", "low", "medium", "high"]

ALL_LEVELS: tuple[ThinkingLevel, ...] = ("minimal", "low", "medium", "high")
LEVEL_BUDGETS: dict[ThinkingLevel, int] = {"minimal": 0, "low": 1024, "medium": 8192, "high": 24576}
"""A level sent to a model that takes a budget."""


@dataclass(frozen=True)
class ModelProfile:
    prefix: str
    tool_family: ToolFamily
    thinking: Literal["level", "budget", "none"]
    levels: tuple[ThinkingLevel, ...] = ()
    budget_range: tuple[int, int] | None = None
    budget_off: bool = False
    """Budget 0 turns thinking off (outside `budget_range`)."""


def _gemini3(prefix: str, levels: tuple[ThinkingLevel, ...] = ALL_LEVELS) -> ModelProfile:
    return ModelProfile(prefix, "gemini-3", "level", levels=levels)


_PRO_LEVELS: tuple[ThinkingLevel, ...] = ("low", "high")

PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile("gemini-3.1-flash-image", "gemini-3", "none"),
    ModelProfile("gemini-3-pro-image", "gemini-3", "none"),
    _gemini3("gemini-3.1-pro", _PRO_LEVELS),
    _gemini3("gemini-3-pro", _PRO_LEVELS),
    _gemini3("gemini-pro-latest", _PRO_LEVELS),
    _gemini3("gemini-3"),
    _gemini3("gemini-flash-latest"),
    _gemini3("gemini-flash-lite-latest"),
    ModelProfile("gemini-2.5-pro", "default-legacy", "budget", budget_range=(128, 32768)),
    ModelProfile("gemini-2.5-flash-lite", "default-legacy", "budget", budget_range=(512, 24576), budget_off=True),
    ModelProfile("gemini-2.5-flash", "default-legacy", "budget", budget_range=(1, 24576), budget_off=True),
)
"""Most specific prefix first: the first match wins."""

UNKNOWN = ModelProfile("", "default-legacy", "none")


def profile(model: str | None) -> ModelProfile:
    """The profile of a model id (`models/gemini-3-pro-preview` and `gemini-3-pro-preview` alike)."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    return next((p for p in PROFILES if name.startswith(p.prefix)), UNKNOWN)


def budget_to_level(budget: int) -> ThinkingLevel | None:
    """The level a thinking budget stands for, on every backend: -1 (dynamic) is the model's default."""
    if budget == -1:
        return None
    if budget == 0:
        return "minimal"
    if budget <= LEVEL_BUDGETS["low"]:
        return "low"
    if budget <= LEVEL_BUDGETS["medium"]:
        return "medium"
    return "high"


def plan_level(
    model: str | None, level: ThinkingLevel | None, budget: int | None
) -> tuple[ThinkingLevel | None, list[str]]:
    """The thinking level to send a model that takes levels, and a note for each value that changed."""
    notes: list[str] = []
    if budget is not None:
        level = budget_to_level(budget)
        shown = level or "the model's default (dynamic)"
        notes.append(f"{model} takes a thinking level, not a budget; budget {budget} sent as {shown}")
    levels = profile(model).levels
    if level is not None and levels and level not in levels:
        fitted: ThinkingLevel = "low" if level == "minimal" else "high"
        notes.append(f"{model} takes thinking level {' or '.join(levels)}; {level!r} sent as {fitted!r}")
        level = fitted
    return level, notes
