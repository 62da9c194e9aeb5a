"""Bad input round 15, the real codex behind FakeOpenAI: a model stream with one event's JSON cut in half (the
`garbled_event` fault) before the text: Codex skips the event and the run succeeds with the whole answer (a guard:
it did before too; gemini-cli's run did not, tests/e2e/gemini_cli/test_gemini_cli_bad_input_round15.py). A text
delta cut so is skipped too, and the answer lacks it with no word from Codex (final text "wo three" for "one two
three"): nothing in the app-server's protocol tells unified."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from unified.events import Result
from unified.testing import FakeOpenAI, Fault, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_an_event_cut_in_half_is_read_around(workspace: Path) -> None:
    garbled = ModelTurn(text="one two three", text_chunks=3, fault=Fault(kind="garbled_event", after=2))
    with FakeOpenAI([garbled]) as server:
        events = await run_codex(server, workspace)
        assert [request.fault for request in server.requests] == ["garbled_event"]
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "one two three")
