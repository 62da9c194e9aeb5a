"""Bad input round 11: four copies of one defensive count rule (claude-code's stream, the Gemini CLI's stream-json,
its ACP prompt result and its chat files) were one rule apart: two of them took `true` (a bool is an int to
Python) as one token. One rule now (`unified._internal.counts.positive_int`), the same answer from every reader."""

from __future__ import annotations

from typing import Any

import pytest

from unified._adapters.claude_code._translate import usage_from_anthropic
from unified._adapters.gemini_cli._chat_files import usage_from_counts
from unified._adapters.gemini_cli._translate import usage_from_prompt_result
from unified._internal.counts import positive_int
from unified.events import Usage


@pytest.mark.parametrize("value", [True, False, None, "5", 2.0, float("nan"), -3, 0, {}, []])
def test_a_count_that_is_no_whole_number_above_zero_counts_as_zero(value: Any) -> None:
    assert positive_int(value) == 0


def test_a_whole_number_above_zero_is_kept() -> None:
    assert positive_int(7) == 7


def _readers(value: Any) -> dict[str, Usage | None]:
    prompt = {"_meta": {"quota": {"token_count": {"input_tokens": value, "output_tokens": 2}}}}
    return {
        "claude-code stream": usage_from_anthropic({"input_tokens": value, "output_tokens": 2}),
        "gemini-cli chat file": usage_from_counts({"input": value, "output": 2}),
        "gemini-cli prompt result": usage_from_prompt_result(prompt),
    }


@pytest.mark.parametrize("value", [True, "9", 1.5, -1])
def test_every_reader_counts_a_broken_input_count_as_zero(value: Any) -> None:
    for reader, usage in _readers(value).items():
        assert usage is not None, reader
        assert (usage.input_tokens, usage.output_tokens) == (0, 2), reader


def test_every_reader_keeps_a_good_count() -> None:
    for reader, usage in _readers(4).items():
        assert usage is not None, reader
        assert (usage.input_tokens, usage.output_tokens) == (4, 2), reader
