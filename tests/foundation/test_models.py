"""Model profiles: one table of per-model facts, read the same way by every backend and the tool runtime."""

from __future__ import annotations

import pytest

from unified._adapters.generate_content._options import plan_thinking
from unified._internal.models import budget_to_level, plan_level, profile
from unified.tools import tool_family
from unified.types import ThinkingConfig


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gemini-3-flash-preview", "gemini-3"),
        ("models/gemini-3.1-pro-preview", "gemini-3"),
        ("gemini-flash-latest", "gemini-3"),
        ("gemini-pro-latest", "gemini-3"),
        ("gemini-2.5-flash", "default-legacy"),
        ("gemini-2.0-flash", "default-legacy"),
        (None, "default-legacy"),
    ],
)
def test_the_tool_family_comes_from_the_profile(model: str | None, family: str) -> None:
    assert tool_family(model) == family


@pytest.mark.parametrize(
    ("budget", "level"), [(-1, None), (0, "minimal"), (1, "low"), (1024, "low"), (8192, "medium"), (30000, "high")]
)
def test_one_budget_to_level_mapping(budget: int, level: str | None) -> None:
    assert budget_to_level(budget) == level


@pytest.mark.parametrize("model", ["gemini-3-flash-preview", "gemini-flash-latest", "gemini-3-pro-preview"])
def test_both_backends_send_the_same_level_for_budget_zero(model: str) -> None:
    plan = plan_thinking(model, ThinkingConfig(budget=0))
    assert plan is not None
    interactions_level, notes = plan_level(model, None, 0)
    assert plan.level == interactions_level
    assert interactions_level == ("low" if "pro" in model else "minimal")
    assert notes


def test_budget_ranges_come_from_the_profile() -> None:
    assert profile("gemini-2.5-pro").budget_range == (128, 32768)
