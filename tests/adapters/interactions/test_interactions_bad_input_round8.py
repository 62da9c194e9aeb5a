"""Bad input round 8 for interactions: streamed `arguments_delta` pieces that join to JSON that is no object (an
array, a string, a number, null) were dropped without a word: the call ran with no arguments. Now they reach the
tool as `_unparsed_arguments`, as arguments given whole that are no object and streamed text that is no JSON do,
so the tool refuses the call and the model reads why."""

from __future__ import annotations

import pytest

from tests.security.test_malformed_input import _feed, _function_step
from unified._adapters.interactions._translate import UNPARSED_ARGUMENTS


@pytest.mark.parametrize("streamed", ['["a.txt"]', '"a.txt"', "7", "null"])
def test_streamed_arguments_that_are_no_object_reach_the_tool_as_unparsed(streamed: str) -> None:
    events = _function_step(name="read_file")
    pieces = [streamed[: len(streamed) // 2], streamed[len(streamed) // 2 :]]
    deltas = [
        {"event_type": "step.delta", "index": 0, "delta": {"type": "arguments_delta", "arguments": piece}}
        for piece in pieces
    ]
    signals = _feed([events[0], events[1], *deltas, events[2]])
    [use] = [s for s in signals if getattr(s, "type", None) == "tool_use"]
    assert use.input == {UNPARSED_ARGUMENTS: streamed}
