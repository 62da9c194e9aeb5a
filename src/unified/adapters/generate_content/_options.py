"""The generate-content backend's settings: `backend_options`, environment and model-family rules.

Kept free of google-genai so `unsupported_options` (which runs before the stream starts) and the
session locator stay cheap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from unified._errors import BackendUnavailable, ConfigurationError
from unified.types import ExecuteParams, ThinkingConfig

DEFAULT_MODEL = "gemini-2.5-flash"
BUILTIN_TOOLS = ("google_search", "url_context", "code_execution")

_OPTION_TYPES: dict[str, tuple[type, ...]] = {
    "api_key": (str,),
    "vertexai": (bool,),
    "project": (str,),
    "location": (str,),
    "base_url": (str,),
    "api_version": (str,),
    "timeout_s": (int, float),
    "max_retries": (int,),
    "max_retry_delay_s": (int, float),
    "retry_delay_scale": (int, float),
    "loop_threshold": (int,),
    "local_tools": (bool,),
    "temperature": (int, float),
    "max_output_tokens": (int,),
    **{name: (bool,) for name in BUILTIN_TOOLS},
}


@dataclass(frozen=True)
class Settings:
    """Everything the client and the loop need, resolved once per run."""

    api_key: str | None = None
    vertexai: bool = False
    project: str | None = None
    location: str | None = None
    base_url: str | None = None
    api_version: str = "v1beta"
    timeout_s: float = 300.0
    max_retries: int = 3
    """Retries of one model turn after a 429, 5xx or dropped stream (not counting the first try)."""
    max_retry_delay_s: float = 60.0
    """A 429 asking to wait longer than this ends the run at once with `rate_limited`."""
    retry_delay_scale: float = 1.0
    """Multiplies every wait; tests set it tiny so RetryInfo delays of seconds take milliseconds."""
    loop_threshold: int = 4
    """The same call with the same arguments this many turns in a row is a runaway loop."""
    local_tools: bool = True
    google_search: bool = False
    url_context: bool = False
    code_execution: bool = False
    temperature: float | None = None
    max_output_tokens: int | None = None

    @property
    def builtin_tools(self) -> tuple[str, ...]:
        return tuple(name for name in BUILTIN_TOOLS if getattr(self, name))


def unknown_options(options: Mapping[str, object]) -> list[tuple[str, str]]:
    """(option, why) for each backend option this backend does not know or cannot read."""
    problems: list[tuple[str, str]] = []
    for key, value in options.items():
        kinds = _OPTION_TYPES.get(key)
        if kinds is None:
            problems.append((f"backend_options.{key}", f"unknown option; known: {', '.join(sorted(_OPTION_TYPES))}"))
        elif not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            problems.append((f"backend_options.{key}", f"expected {'/'.join(k.__name__ for k in kinds)}"))
    return problems


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes")


def resolve_settings(params: ExecuteParams, env: Mapping[str, str] | None = None) -> Settings:
    """Options beat the environment; the environment follows google-genai's own names and order."""
    env = os.environ if env is None else env
    options: dict[str, Any] = {k: v for k, v in params.backend_options.items() if k in _OPTION_TYPES}
    vertexai = bool(options.pop("vertexai", _truthy(env.get("GOOGLE_GENAI_USE_VERTEXAI"))))
    api_key = options.pop("api_key", None) or env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY")
    project = options.pop("project", None) or env.get("GOOGLE_CLOUD_PROJECT")
    location = options.pop("location", None) or env.get("GOOGLE_CLOUD_LOCATION")
    base_env = "GOOGLE_VERTEX_BASE_URL" if vertexai else "GOOGLE_GEMINI_BASE_URL"
    base_url = options.pop("base_url", None) or env.get(base_env) or None
    if not vertexai and not api_key:
        raise BackendUnavailable(
            "the generate-content backend needs an API key",
            hint="set GEMINI_API_KEY (or GOOGLE_API_KEY), or use Vertex AI with GOOGLE_GENAI_USE_VERTEXAI=true",
        )
    if vertexai and not api_key and not project:
        raise BackendUnavailable(
            "Vertex AI mode needs a project",
            hint="set GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (credentials come from ADC)",
        )
    if "api_version" in options and options["api_version"] not in ("v1", "v1beta", "v1alpha", "v1beta1"):
        raise ConfigurationError(
            f"unknown api_version {options['api_version']!r}", hint="use 'v1' or 'v1beta' (default)"
        )
    return Settings(
        api_key=api_key, vertexai=vertexai, project=project, location=location, base_url=base_url, **options
    )


# -- thinking ---------------------------------------------------------------------------------------

Family = Literal["gemini-3", "gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "no-thinking"]

_BUDGET_RANGE: dict[str, tuple[int, int]] = {
    "gemini-2.5-pro": (128, 32768),
    "gemini-2.5-flash": (1, 24576),
    "gemini-2.5-flash-lite": (512, 24576),
}
_LEVEL_TO_BUDGET = {"minimal": 0, "low": 1024, "medium": 8192, "high": 24576}


def model_family(model: str) -> Family:
    name = model.lower().rsplit("/", 1)[-1]
    if name.startswith("gemini-3") or name.startswith("gemini-flash-latest") or name.startswith("gemini-pro-latest"):
        return "gemini-3"
    if name.startswith("gemini-2.5-pro"):
        return "gemini-2.5-pro"
    if name.startswith("gemini-2.5-flash-lite"):
        return "gemini-2.5-flash-lite"
    if name.startswith("gemini-2.5"):
        return "gemini-2.5-flash"
    return "no-thinking"


@dataclass(frozen=True)
class ThinkingPlan:
    """What goes into `ThinkingConfig` on the wire, and a note for each value that had to change."""

    budget: int | None = None
    level: str | None = None
    include_thoughts: bool = True
    notes: tuple[str, ...] = ()


def plan_thinking(model: str, thinking: ThinkingConfig | None) -> ThinkingPlan | None:
    """Map a budget or level onto what the model family takes (2.5: budget, 3.x: level)."""
    family = model_family(model)
    if thinking is None:
        return None if family == "no-thinking" else ThinkingPlan()
    notes: list[str] = []
    if family == "no-thinking":
        if thinking.budget not in (None, 0) or thinking.level is not None:
            notes.append(f"{model} does not think; the thinking setting is ignored")
        return ThinkingPlan(include_thoughts=False, notes=tuple(notes))
    if family == "gemini-3":
        level: str | None = thinking.level
        if thinking.budget is not None:
            level = _budget_to_level(thinking.budget)
            shown = level or "the model's default (dynamic)"
            notes.append(f"{model} takes a thinking level, not a budget; budget {thinking.budget} sent as {shown}")
        if level is not None and "pro" in model and level in ("minimal", "medium"):
            mapped = "low" if level == "minimal" else "high"
            notes.append(f"{model} takes thinking level low or high; {level!r} sent as {mapped!r}")
            level = mapped
        return ThinkingPlan(level=level, include_thoughts=thinking.include_thoughts, notes=tuple(notes))
    budget = thinking.budget
    if thinking.level is not None:
        budget = _LEVEL_TO_BUDGET[thinking.level]
        notes.append(f"{model} takes a thinking budget, not a level; level {thinking.level!r} sent as budget {budget}")
    if budget is not None and budget != -1:
        low, high = _BUDGET_RANGE[family]
        allowed_off = family != "gemini-2.5-pro"
        if not (budget == 0 and allowed_off) and not low <= budget <= high:
            clamped = min(max(budget, low), high)
            why = "cannot turn thinking off" if budget == 0 else f"takes budgets {low}..{high}"
            notes.append(f"{model} {why}; budget {budget} sent as {clamped}")
            budget = clamped
    return ThinkingPlan(budget=budget, include_thoughts=thinking.include_thoughts, notes=tuple(notes))


def _budget_to_level(budget: int) -> str | None:
    if budget == -1:
        return None
    if budget <= 1024:
        return "low"
    if budget <= 8192:
        return "medium"
    return "high"
