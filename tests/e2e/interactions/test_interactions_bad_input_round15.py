"""Bad input round 15 on the interactions backend: an `error` event inside the stream carries the same
`google.rpc.RetryInfo` as its HTTP twin's body, and it is read by the same reader (`api_errors.retry_delay`).

Before: a 429 met in the stream before output was asked again after the policy's own backoff (the server's
delay ignored, a delay longer than `max_retry_delay_s` retried all the same), and the error of one met after
output named no `retry_after_s`."""

from __future__ import annotations

import pytest

from tests.e2e.interactions.interactions_harness import Params, collect, of_type
from unified._adapters.interactions._client import FailedBeforeOutput, failure_from_exception
from unified._adapters.interactions._translate import InteractionsTranslator, StreamFailure
from unified._internal.api_errors import retry_delay
from unified.errors import BackendError
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import Fault, InteractionTurn, TextStep

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

_RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}


def text_turn(text: str, **fields: object) -> InteractionTurn:
    return InteractionTurn.model_validate({"steps": [TextStep(text=text, chunks=2)], **fields})


@pytest.mark.parametrize("after", [0, 1])
async def test_an_error_event_before_output_waits_as_its_retry_info_asks(
    fake: FakeGemini, params: Params, after: int
) -> None:
    fake.add(
        text_turn("never", fault=Fault(kind="mid_stream_error", after=after, carries="rate_limit", retry_delay="2s"))
    )
    fake.add(text_turn("after waiting"))
    events = await collect(params())
    [warning] = of_type(events, "warning")
    assert "in 0.02s (the server asked 2s; retry_delay_scale=0.01)" in warning.message, warning.message
    assert events[-1].final_text == "after waiting"


async def test_an_error_event_asking_longer_than_max_retry_delay_is_not_retried(
    fake: FakeGemini, params: Params
) -> None:
    """As for the HTTP 429: the server's wait is over the limit, so the run says so at once, asking once."""
    fake.add(text_turn("never", fault=Fault(kind="mid_stream_error", after=1, carries="rate_limit", retry_delay="90s")))
    fake.add(text_turn("not asked"))
    events = await collect(params(backend_options={"max_retry_delay_s": 30}))
    assert not of_type(events, "warning")
    [error] = of_type(events, "error")
    assert (error.code, error.details.get("retry_after_s")) == ("rate_limited", 90)
    assert "wait 90s" in error.message, error.message
    assert len(fake.requests_for("interactions.create")) == 1


async def test_an_error_event_after_output_keeps_the_output_names_the_wait_and_the_session_resumes(
    fake: FakeGemini, params: Params
) -> None:
    fake.add(text_turn("partial answer", fault=Fault(kind="mid_stream_error", after=4, carries="rate_limit")))
    fake.add(text_turn("second"))
    events = await collect(params("one"))
    [error] = of_type(events, "error")
    assert (error.code, error.details.get("retry_after_s")) == ("rate_limited", 15)
    shown = "".join(t.text for t in of_type(events, "text_delta"))
    assert shown
    assert "partial answer".startswith(shown)
    end = events[-1]
    assert end.status == "error"
    assert end.short_id
    second = await collect(params("two", resume=end.short_id))
    assert second[0].resumed
    assert second[-1].status == "success"
    assert second[-1].final_text == "second"


def test_an_error_event_keeps_its_details_for_the_one_reader_of_retry_info() -> None:
    translator = InteractionsTranslator()
    [failure] = translator.feed(
        {"event_type": "error", "error": {"code": "UNAVAILABLE", "message": "later", "details": [_RETRY_INFO]}}
    )
    assert isinstance(failure, StreamFailure)
    assert retry_delay(failure.error) == 3


def test_a_failure_before_output_carries_its_delay_to_the_retry_policy() -> None:
    error = BackendError("the Gemini API failed (503 UNAVAILABLE): later", retryable=True)
    failure = failure_from_exception(FailedBeforeOutput(error, 3.0))
    assert failure is not None
    assert (failure.kind, failure.retry_delay_s) == ("transient", 3.0)
