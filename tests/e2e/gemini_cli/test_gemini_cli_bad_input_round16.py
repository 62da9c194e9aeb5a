"""Bad input round 16, the real gemini CLI behind FakeGemini: a 429 whose `RetryInfo` asks for 100 s. 0.61 waits it
out (about 100 s measured, with a `retrying` warning that gave no wait); the run now ends at once, `rate_limited`
with `retry_after_s`, past the default `max_retry_delay_s` (60 s), no process left (unit cases:
tests/adapters/gemini_cli/test_gemini_cli_bad_input_round16.py). And an answer over the line cap
(limits.MAX_EVENT_BYTES), its ACP chunk dropped unread: the run said `stream_interrupted` "the model answered with
nothing"; now `backend_error` saying the answer was larger than unified reads and what to do, as on claude-code and
codex, and the session resumes. (An answer of one letter repeated is stopped by the CLI itself: `max_turns`, no
text.)"""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from tests.e2e.bad_binaries import small_line_cap, the_error
from tests.e2e.gemini_cli.test_gemini_cli_bad_input import gemini_started, run
from unified.events import SessionStarted
from unified.testing import FakeGemini, Fault, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_a_429_asking_longer_than_max_retry_delay_s_is_rate_limited_at_once(workspace: Path) -> None:
    started = gemini_started()
    asks = ModelTurn(text="Never.", fault=Fault(kind="rate_limit", retry_delay="100s"))
    async with FakeGemini([asks]) as server:
        events = await run(server, workspace, start_process=started)
        assert len(server.requests) == 1  # not asked again
    error = the_error(events)
    assert (error.code, error.retryable) == ("rate_limited", True), error.message
    assert error.details["retry_after_s"] == 100.0
    assert "more than max_retry_delay_s (60 s)" in error.message
    assert not started.still_running()


async def test_an_answer_over_the_line_cap_is_an_error_and_the_session_resumes(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    words = random.Random(16)
    vocabulary = ["".join(words.choices(string.ascii_lowercase, k=words.randint(2, 9))) for _ in range(5000)]
    text = " ".join(words.choice(vocabulary) for _ in range(small_line_cap(monkeypatch) * 3 // 2 // 6))
    async with FakeGemini([ModelTurn(text=text), ModelTurn(text="Shorter.")]) as server:
        events = await run(server, workspace)
        error = the_error(events)
        session = next(e for e in events if isinstance(e, SessionStarted))
        again = await run(server, workspace, "Shorter, please.", resume=session.short_id)
    assert error.code == "backend_error", error.message
    assert "larger than unified reads" in error.message
    assert "limits.MAX_EVENT_BYTES" in error.message
    # The session is kept, the answer in it: the resume loads it. What the CLI then asks about a history that large
    # runs past the two-turn script (FakeGemini's 500 for a request it has no turn for): not judged here.
    resumed = next(e for e in again if isinstance(e, SessionStarted))
    assert (resumed.resumed, resumed.session_id) == (True, session.session_id)
