"""The one retry policy of the API backends, on its own: waits, limits, and what the error says."""

from __future__ import annotations

import random

import pytest

from unified._internal.api_options import ApiOptions
from unified._internal.retry import BACKOFF_CAP_S, Failure, backoff_s, retrying
from unified.errors import BackendError, UnifiedError

pytestmark = pytest.mark.anyio


def test_backoff_is_full_jitter_under_a_cap() -> None:
    random.seed(7)
    for attempt in range(12):
        waits = [backoff_s(attempt) for _ in range(200)]
        assert all(0.0 <= w <= min(BACKOFF_CAP_S, 2.0**attempt) for w in waits)
        assert max(waits) > 0.5 * min(BACKOFF_CAP_S, 2.0**attempt)  # spread over the whole range


class Flaky(Exception):
    pass


async def test_retryinfo_wins_and_a_shown_attempt_is_never_repeated() -> None:
    settings = ApiOptions(retry_delay_scale=0.0)
    said: list[str] = []
    calls = 0

    async def warn(code: str, message: str) -> None:
        said.append(f"{code}: {message}")

    async def call() -> str:
        nonlocal calls
        calls += 1
        raise Flaky

    def classify(exc: BaseException) -> Failure | None:
        return Failure("rate_limit", BackendError("slow down"), retry_delay_s=4.0) if isinstance(exc, Flaky) else None

    with pytest.raises(UnifiedError) as raised:
        await retrying(call, classify=classify, options=settings, warn=warn)
    assert calls == 4
    assert said[0] == "retrying: slow down; retry 1/3 in 0s (the server asked 4s; retry_delay_scale=0)"
    assert "gave up after 4 attempts" in raised.value.message
    calls = 0
    with pytest.raises(UnifiedError):
        await retrying(call, classify=classify, options=settings, warn=warn, shown=lambda: True)
    assert calls == 1


@pytest.mark.parametrize(
    ("scale", "said"),
    [
        (1.0, "retry 1/1 in 0.02s as the server asked"),
        (0.5, "retry 1/1 in 0.01s (the server asked 0.02s; retry_delay_scale=0.5)"),
    ],
)
async def test_the_retry_warning_states_the_wait_it_sleeps(scale: float, said: str) -> None:
    """A `retry_delay_scale` that shortens the server's RetryInfo is in the warning: it stated the unscaled
    wait, so a caller read a wait of seconds where milliseconds were slept."""
    messages: list[str] = []

    async def warn(code: str, message: str) -> None:
        messages.append(message)

    async def call() -> str:
        raise Flaky

    def classify(exc: BaseException) -> Failure | None:
        return Failure("rate_limit", BackendError("slow down"), retry_delay_s=0.02)

    with pytest.raises(UnifiedError):
        await retrying(call, classify=classify, options=ApiOptions(max_retries=1, retry_delay_scale=scale), warn=warn)
    assert messages == [f"slow down; {said}"]
