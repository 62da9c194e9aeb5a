"""Bad input round 16, the real claude CLI behind FakeAnthropic: an answer larger than the line cap
(limits.MAX_EVENT_BYTES), whose lines unified drops unread, ended as `success` with an empty final text before; the
answer was lost, so the run is now a typed error saying so and what to do, and the session resumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bad_binaries import small_line_cap, the_error
from tests.e2e.claude_code.claude_code_helpers import run_claude
from unified.events import Result, SessionStarted
from unified.testing import FakeAnthropic, ModelTurn

pytestmark = pytest.mark.anyio


async def test_an_answer_over_the_line_cap_is_an_error_and_the_session_resumes(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    huge = ModelTurn(text="y" * (small_line_cap(monkeypatch) * 3 // 2))
    async with FakeAnthropic([huge, ModelTurn(text="Shorter.")]) as server:
        events = await run_claude(server, workspace)
        error = the_error(events)
        started = next(e for e in events if isinstance(e, SessionStarted))
        again = await run_claude(server, workspace, "Shorter, please.", resume=started.short_id)
    assert error.code == "backend_error"
    assert "larger than unified reads" in error.message, error.message
    assert "limits.MAX_EVENT_BYTES" in error.message
    last = again[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Shorter.")
