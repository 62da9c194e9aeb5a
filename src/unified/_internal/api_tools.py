"""The Gemini API's built-in tools: which model supports which, and which combinations the API refuses.

The facts are data, in `api_tools.toml` beside this module (docs/api-tools.md explains each rule);
this module only reads them and evaluates a request's tools against them, so both API backends
refuse a combination the same way, before anything is sent. Free of google-genai.
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, Literal

from unified._internal.models import UNKNOWN, profile

__all__ = [
    "BUILTIN_TOOLS",
    "FEATURES",
    "TOOL_NAMES",
    "ModelTools",
    "Rule",
    "ToolProblem",
    "load",
    "model_tools",
    "tool_problems",
]

BUILTIN_TOOLS = ("google_search", "google_maps", "url_context", "code_execution", "file_search")
"""Google's server-side tools, in the order they are listed and sent."""
TOOL_NAMES = frozenset({"functions", *BUILTIN_TOOLS})
FEATURES = TOOL_NAMES | {
    "builtins",
    "invocations_on",
    "invocations_off",
    "mode_auto",
    "mode_any",
    "mode_none",
    "vertexai",
}


@dataclass(frozen=True)
class ModelTools:
    """One `[[models]]` row: the tools a model documents as supported, and as not supported."""

    prefix: str
    supported: frozenset[str]
    unsupported: frozenset[str]


@dataclass(frozen=True)
class Rule:
    """One `[[rules]]` entry: a combination the API refuses (or may refuse, for a warning)."""

    id: str
    all: frozenset[str]
    any_of: tuple[frozenset[str], ...]
    allowed_families: frozenset[str]
    allowed_models: tuple[str, ...]
    level: Literal["error", "warning"]
    message: str
    hint: str


@dataclass(frozen=True)
class ToolProblem:
    """A rule a request breaks: `option` is what to change, `fatal` whether the request is refused."""

    rule: str
    option: str
    message: str
    hint: str
    fatal: bool


def _names(raw: Any, where: str, allowed: frozenset[str]) -> frozenset[str]:
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise ValueError(f"api_tools.toml: {where} must be a list of names")
    unknown = set(raw) - allowed
    if unknown:
        raise ValueError(f"api_tools.toml: {where} names unknown {sorted(unknown)}")
    return frozenset(raw)


def _rule(raw: dict[str, Any]) -> Rule:
    where = f"rule {raw.get('id')!r}"
    level = raw.get("level", "error")
    if level not in ("error", "warning") or not raw.get("id") or not raw.get("message") or not raw.get("hint"):
        raise ValueError(f"api_tools.toml: {where} needs an id, a message, a hint and level error or warning")
    return Rule(
        id=str(raw["id"]),
        all=_names(raw.get("all", []), f"{where} all", FEATURES),
        any_of=tuple(_names(group, f"{where} any_of", FEATURES) for group in raw.get("any_of", [])),
        allowed_families=frozenset(raw.get("allowed_families", [])),
        allowed_models=tuple(raw.get("allowed_models", [])),
        level=level,
        message=str(raw["message"]),
        hint=str(raw["hint"]),
    )


@functools.cache
def load() -> tuple[tuple[ModelTools, ...], tuple[Rule, ...]]:
    """The model rows and rules of `api_tools.toml` (read once); raises ValueError if it is malformed."""
    data = tomllib.loads(files("unified._internal").joinpath("api_tools.toml").read_text(encoding="utf-8"))
    rows = tuple(
        ModelTools(
            prefix=str(row["prefix"]),
            supported=_names(row.get("supported", []), f"model {row['prefix']} supported", TOOL_NAMES),
            unsupported=_names(row.get("unsupported", []), f"model {row['prefix']} unsupported", TOOL_NAMES),
        )
        for row in data.get("models", [])
    )
    return rows, tuple(_rule(raw) for raw in data.get("rules", []))


def model_tools(model: str | None) -> ModelTools | None:
    """The row of a model id (`models/gemini-3-flash-preview` and `gemini-3-flash-preview` alike), or None."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    return next((row for row in load()[0] if name.startswith(row.prefix)), None)


def _option(tool: str) -> str:
    return "backend_options.local_tools" if tool == "functions" else f"backend_options.{tool}"


def _applies(rule: Rule, model: str | None, features: Collection[str]) -> bool:
    if not rule.all <= set(features) or not all(group & set(features) for group in rule.any_of):
        return False
    name = (model or "").lower().rsplit("/", 1)[-1]
    if rule.allowed_families:
        known = profile(model)
        if known is UNKNOWN or known.tool_family in rule.allowed_families:
            return False
    exempt = model_tools(model) is None or any(name.startswith(prefix) for prefix in rule.allowed_models)
    return not (rule.allowed_models and exempt)


def tool_problems(model: str | None, features: Iterable[str]) -> list[ToolProblem]:
    """What `api_tools.toml` says about a request with these features (tool names, modes, ...) to `model`.

    A tool the model's row marks unsupported is fatal, one it does not mention is a warning (the
    documentation may lag); then each rule that applies, at its level. The answer depends on the
    model and the set of features alone (the file is read once), so it is worked out once per pair:
    every run asks it before its first request.
    """
    return list(_problems_of(model, frozenset(features)))


@functools.lru_cache(maxsize=128)
def _problems_of(model: str | None, present_features: frozenset[str]) -> tuple[ToolProblem, ...]:
    present = set(present_features)
    unknown = present - FEATURES
    if unknown:
        raise ValueError(f"unknown tool features {sorted(unknown)}")
    if present & set(BUILTIN_TOOLS):
        present.add("builtins")
    problems: list[ToolProblem] = []
    row = model_tools(model)
    if row is not None:
        for tool in sorted(present & TOOL_NAMES):
            if tool in row.unsupported:
                problems.append(
                    ToolProblem(
                        "model_tool_support",
                        _option(tool),
                        f"{model} does not support {_shown(tool)}",
                        _turn_off(tool),
                        fatal=True,
                    )
                )
            elif tool not in row.supported:
                problems.append(
                    ToolProblem(
                        "model_tool_support",
                        _option(tool),
                        f"{model} does not document {_shown(tool)}",
                        "the API may refuse it; " + _turn_off(tool),
                        fatal=False,
                    )
                )
    others = ", ".join(t for t in BUILTIN_TOOLS if t in present and t != "file_search")
    for rule in load()[1]:
        if _applies(rule, model, present):
            fill = {"model": model or "the model", "others": others}
            problems.append(
                ToolProblem(
                    rule.id,
                    "backend_options",
                    rule.message.format(**fill),
                    rule.hint.format(**fill),
                    fatal=rule.level == "error",
                )
            )
    return tuple(problems)


def _shown(tool: str) -> str:
    return "function calling (function declarations)" if tool == "functions" else f"the built-in tool {tool}"


def _turn_off(tool: str) -> str:
    if tool == "functions":
        return "set local_tools=false, or choose another model"
    return f"turn {tool} off or choose another model"
