"""Bad input round 15, the real claude CLI behind FakeAnthropic: a model stream with one event's JSON cut in half (the
`garbled_event` fault). The CLI asks again: the run succeeds with the second answer, shown once (a guard: it did
before too; gemini-cli's run did not, tests/e2e/gemini_cli/test_gemini_cli_bad_input_round15.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.claude_code.claude_code_helpers import run_claude
from unified.events import Result
from unified.testing import FakeAnthropic, Fault, ModelTurn

pytestmark = pytest.mark.anyio


async def test_an_event_cut_in_half_is_read_around(workspace: Path) -> None:
    garbled = ModelTurn(text="one two three", text_chunks=3, fault=Fault(kind="garbled_event", after=2))
    async with FakeAnthropic([garbled, ModelTurn(text="Asked again.")]) as server:
        events = await run_claude(server, workspace)
        assert [request.fault for request in server.requests_for("messages")] == ["garbled_event", None]
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Asked again.")
