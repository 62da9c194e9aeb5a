"""An HTTP `Retry-After` on the API backends, over real HTTP through the real SDK: a gateway's or proxy's 429 or 503
says its wait only in that header, not in the API's RetryInfo. Both backends took the policy's backoff instead
(noticed by bad input round 17): a 429 asking for longer than `max_retry_delay_s` was asked again, and a short
wait was guessed. Now the header's wait, in seconds or as an HTTP date, is the wait (RetryInfo still first); one
that reads as no wait (negative, a word, a number no float holds) leaves the backoff. The last one made the
Interactions SDK's own reader overflow (`round(inf * 1000)`), and the run end `internal_error`, "a bug in unified's
interactions adapter": it is the server's bad answer, asked again."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from tests.e2e.api_loop.test_api_loop import collect, params, request_bodies, result, warnings
from unified.events import ErrorEvent
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import Fault, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


@pytest.mark.parametrize("kind", ["rate_limit", "unavailable"])
async def test_the_answer_s_retry_after_is_the_wait(backend: str, fake: FakeGemini, workspace: Path, kind: str) -> None:
    fake.add(ModelTurn(text="after waiting"))
    fake.inject(Fault(kind=kind, retry_after="3"), at_request=0)
    events = await collect(params(backend, fake, workspace))
    (warning,) = warnings(events, "retrying")
    assert "retry 1/3 in 0.003s (the server asked 3s; retry_delay_scale=0.001)" in warning.message
    assert result(events).final_text == "after waiting"


async def test_a_retry_after_date_is_the_wait_until_then(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(ModelTurn(text="after waiting"))
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=600), usegmt=True)
    fake.inject(Fault(kind="rate_limit", retry_after=when), at_request=0)
    events = await collect(params(backend, fake, workspace, backend_options={"max_retry_delay_s": 3600}))
    (warning,) = warnings(events, "retrying")
    asked = float(warning.message.split("(the server asked ")[1].split("s;")[0])
    assert 500 < asked <= 600, warning.message
    assert result(events).final_text == "after waiting"


async def test_a_retry_after_longer_than_allowed_ends_the_run_at_once(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(ModelTurn(text="never"))
    fake.inject(Fault(kind="rate_limit", retry_after="120"), at_request=0)
    events = await collect(params(backend, fake, workspace, backend_options={"max_retry_delay_s": 60}))
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "rate_limited"
    assert error.details["retry_after_s"] == 120
    assert "wait 120s and run again" in error.message
    assert not warnings(events, "retrying")
    assert len(request_bodies(fake, backend)) == 1  # asked once, not again after a guessed wait


@pytest.mark.parametrize("said", ["-5", "soon", "1" * 400])
async def test_a_retry_after_that_says_no_wait_leaves_the_backoff(
    backend: str, fake: FakeGemini, workspace: Path, said: str
) -> None:
    fake.add(ModelTurn(text="recovered"))
    fake.inject(Fault(kind="unavailable", retry_after=said), at_request=0)
    events = await collect(params(backend, fake, workspace))
    (warning,) = warnings(events, "retrying")
    assert "the server asked" not in warning.message
    assert result(events).final_text == "recovered"
