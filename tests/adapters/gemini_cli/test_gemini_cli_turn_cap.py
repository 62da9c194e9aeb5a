"""Which model request a call the gemini CLI asks about belongs to (`_permissions.TurnCap`): the CLI numbers a
request's calls from 0 in the ids it makes; a call the API named counts as a request of its own (never late).
e2e: tests/e2e/gemini_cli/test_gemini_cli_max_turns.py."""

from __future__ import annotations

import pytest

from unified._adapters.gemini_cli._permissions import TurnCap

pytestmark = pytest.mark.unit


def test_the_clis_own_numbering_tells_the_requests_apart() -> None:
    cap = TurnCap(2)
    assert not cap.reached("read_file__read_file_1796486350548_0")  # request 1
    assert not cap.reached("glob__glob_1796486350549_1")  # request 1, its second call
    assert not cap.reached("mcp_s_t__synth_p1_1796486350550_2")  # context management's ids: still request 1
    assert cap.reached("read_file__read_file_1796486351000_0")  # request 2: not run
    assert cap.requests == 2


@pytest.mark.parametrize("max_turns", [1, 2, 3])
def test_a_call_the_api_named_counts_as_a_request(max_turns: int) -> None:
    cap = TurnCap(max_turns)
    reached = [cap.reached(f"read_file__c{i}") for i in range(1, 5)]
    assert reached == [i >= max_turns for i in range(1, 5)]
