"""Bad input round 16, the real codex behind FakeOpenAI: an answer larger than the line cap (limits.MAX_EVENT_BYTES),
whose lines unified drops unread, ended as `success` with an empty final text before; the answer was lost, so the
run is now a typed error saying so and what to do, and the thread resumes. And a text delta with its JSON cut (the
`garbled_event` fault) is skipped by Codex without a word, the answer shown lacking it ("wo three"), while the
item's end carries the whole text: the run now warns of the difference."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bad_binaries import small_line_cap, the_error
from tests.e2e.codex.conftest import run_codex
from unified.events import Result, SessionStarted, WarningEvent
from unified.testing import FakeOpenAI, Fault, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_an_answer_over_the_line_cap_is_an_error_and_the_thread_resumes(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = ModelTurn(text="y" * (small_line_cap(monkeypatch) * 3 // 2))
    with FakeOpenAI([huge, ModelTurn(text="Shorter.")]) as server:
        events = await run_codex(server, workspace)
        error = the_error(events)
        thread = next(e for e in events if isinstance(e, SessionStarted))
        again = await run_codex(server, workspace, "Shorter, please.", resume=thread.short_id)
    assert error.code == "backend_error"
    assert "larger than unified reads" in error.message, error.message
    assert "limits.MAX_EVENT_BYTES" in error.message
    last = again[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Shorter.")


async def test_a_text_delta_codex_skips_is_warned_of(workspace: Path) -> None:
    garbled = ModelTurn(text="one two three", text_chunks=3, fault=Fault(kind="garbled_event", after=4))
    with FakeOpenAI([garbled]) as server:
        events = await run_codex(server, workspace)
        assert [request.fault for request in server.requests] == ["garbled_event"]
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "wo three")  # Codex's: the piece is lost
    [warning] = [e.message for e in events if isinstance(e, WarningEvent) and e.code == "malformed_line"]
    assert "codex streamed 8 characters of an answer it completed with 13" in warning
    assert "unified sessions show" in warning
