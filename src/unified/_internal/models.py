"""Per-model facts, as data, in one place: used by both API backends, the tool runtime and routing.

Each profile says, for the model ids it matches (by prefix of the id's last path segment):

- `tool_family`: which local tool declaration set the model gets (docs/tools.md): the Gemini 3 set
  for the Gemini 3 family, `default-legacy` for every other model, as the Gemini CLI decides. The
  API's `-latest` aliases (`gemini-flash-latest`, `gemini-pro-latest`, `gemini-flash-lite-latest`)
  serve Gemini 3 models today, so they get the Gemini 3 set;
- `thinking`: how the model takes a thinking setting: a `level` (Gemini 3), a `budget` in tokens
  with its range (Gemini 2.5), or `none`; which levels it accepts; whether budget 0 turns it off;
- `builtin_tools`: which Google server-side tools it documents (google_search, url_context,
  code_execution); `builtins_with_functions`: whether it may combine them with function calling.

A budget maps to a level, and a level to a budget, the same way on every backend (`budget_to_level`,
`LEVEL_BUDGETS`). Unknown models get `UNKNOWN`: legacy declarations, no thinking config, no claim
about built-in tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ToolFamily = Literal["gemini-3", "default-legacy"]
ThinkingLevel = Literal["minimal", "low", "medium", "high"]
BuiltinTool = Literal["google_search", "url_context", "code_execution"]

ALL_LEVELS: tuple[ThinkingLevel, ...] = ("minimal", "low", "medium", "high")
ALL_BUILTINS: frozenset[BuiltinTool] = frozenset({"google_search", "url_context", "code_execution"})
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
    builtin_tools: frozenset[BuiltinTool] = ALL_BUILTINS
    builtins_with_functions: bool = False


def _gemini3(prefix: str, levels: tuple[ThinkingLevel, ...] = ALL_LEVELS) -> ModelProfile:
    return ModelProfile(prefix, "gemini-3", "level", levels=levels, builtins_with_functions=True)


_PRO_LEVELS: tuple[ThinkingLevel, ...] = ("low", "high")

PROFILES: tuple[ModelProfile, ...] = (
    ModelProfile("gemini-3.1-flash-image", "gemini-3", "none", builtin_tools=frozenset({"google_search"})),
    ModelProfile("gemini-3-pro-image", "gemini-3", "none", builtin_tools=frozenset({"google_search"})),
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


def builtin_tool_problems(model: str | None, enabled: tuple[str, ...], local_tools: bool) -> list[tuple[str, str]]:
    """(option, why) for each enabled Google built-in tool the model does not document, or cannot
    combine with function calling (only Gemini 3 can); warnings, as the documentation may lag."""
    known = profile(model)
    if known is UNKNOWN:
        return []
    problems = [
        (f"backend_options.{name}", f"{model} does not document the built-in tool {name}")
        for name in enabled
        if name not in known.builtin_tools
    ]
    if enabled and local_tools and not known.builtins_with_functions:
        problems.append(
            (
                f"backend_options.{enabled[0]}",
                f"{model} may refuse built-in tools combined with function calling (Gemini 3 only); "
                "set local_tools=False if the API answers 400",
            )
        )
    return problems
