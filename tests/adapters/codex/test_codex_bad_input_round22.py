"""Bad input round 22, codex's token counts: `true` where a count goes, and usage notifications of no shape."""

from __future__ import annotations

from typing import Any

import pytest

from tests.adapters.codex.test_codex_translate import note, translator
from unified._adapters.codex._translate import usage_from_breakdown
from unified.events import Usage

pytestmark = pytest.mark.unit


def test_a_count_that_is_true_or_no_whole_number_is_0() -> None:
    """FAILED before: codex's own copy of the count rule took `true` for 1 token (the shared rule,
    `unified._internal.counts.positive_int`, reads it as 0, as claude-code and gemini-cli do)."""
    usage = usage_from_breakdown(
        {"inputTokens": True, "cachedInputTokens": -3, "outputTokens": 5.0, "reasoningOutputTokens": "2"}
    )
    assert usage == Usage()


@pytest.mark.parametrize(
    "token_usage", ["lots", None, {"total": "x", "last": []}], ids=["a-string", "null", "parts-of-no-shape"]
)
def test_a_usage_notification_of_no_shape_is_a_response_without_usage(token_usage: Any) -> None:
    """Pin: no exception out of the translator; the response counts as one that reported nothing (`estimated`)."""
    (response,) = note(translator(), "thread/tokenUsage/updated", tokenUsage=token_usage)
    assert response.usage == Usage(estimated=True)


@pytest.mark.parametrize("count", [2**53, 10**30], ids=["2**53", "10**30"])
def test_a_count_past_what_json_carries_exactly_is_0(count: int) -> None:
    """FAILED before: 10**30 input tokens went out in the usage events, a number JavaScript rounds and Go refuses."""
    from unified._internal.counts import positive_int

    assert usage_from_breakdown({"inputTokens": count, "outputTokens": 7}) == Usage(output_tokens=7)
    assert positive_int(count) == 0
    assert positive_int(2**53 - 1) == 2**53 - 1  # the largest that is exact
