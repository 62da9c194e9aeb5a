"""Bad input round 16, the real gemini CLI behind FakeGemini: a 429 whose `RetryInfo` asks for 100 s. 0.61 waits it
out (about 100 s measured, with a `retrying` warning that gave no wait); the run now ends at once, `rate_limited`
with `retry_after_s`, past the default `max_retry_delay_s` (60 s), no process left (unit cases:
tests/adapters/gemini_cli/test_gemini_cli_bad_input_round16.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bad_binaries import the_error
from tests.e2e.gemini_cli.test_gemini_cli_bad_input import gemini_started, run
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
