"""The one retry policy of the API backends (generateContent, Interactions).

A failed request is asked again when its failure is retryable and nothing of it has reached the
consumer yet (a retry must never show output twice). The wait is the server's
`google.rpc.RetryInfo.retryDelay` when it gives one, else the answer's HTTP `Retry-After`
(`api_errors.retry_after_header`), otherwise capped exponential backoff with full
jitter (uniform in `[0, min(30 s, 2^attempt s)]`, so many clients hit by the same outage do not come
back in step). Each retry is announced by one `warning` with code `retrying`. Attempts stop at
`max_retries`, at a RetryInfo (or Retry-After) longer than `max_retry_delay_s`, or when the next attempt would start
after `request_deadline_s` (counted from the first attempt): the error then says what was tried.
See docs/backends/api-loop.md.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

import anyio

from unified._internal.api_options import ApiOptions
from unified.errors import UnifiedError

__all__ = ["BACKOFF_CAP_S", "RETRY_WARNING", "Failure", "T", "backoff_s", "retrying"]

T = TypeVar("T")

RETRY_WARNING = "retrying"
"""The code of the warning each retry emits, on every API backend."""

BACKOFF_CAP_S = 30.0


@dataclass(frozen=True)
class Failure:
    """A classified request failure: `kind` decides the retry, `error` is raised when retries are over."""

    kind: Literal["rate_limit", "transient", "fatal"]
    error: UnifiedError
    retry_delay_s: float | None = None
    """The server's RetryInfo, when it sent one."""


def backoff_s(attempt: int) -> float:
    """Full jitter: a uniform wait up to `min(BACKOFF_CAP_S, 2^attempt)` seconds."""
    return random.uniform(0.0, min(BACKOFF_CAP_S, 2.0**attempt))


async def retrying(
    call: Callable[[], Awaitable[T]],
    *,
    classify: Callable[[BaseException], Failure | None],
    options: ApiOptions,
    warn: Callable[[str, str], Awaitable[None]],
    shown: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """`call()`, asked again under the policy above.

    `classify` maps an exception to its meaning (None: not a request failure, it propagates); a
    `UnifiedError` is final (already classified, e.g. by an inner retry). `shown()` says whether
    the failed attempt already delivered output, which forbids a retry.
    """
    attempt = 0
    started = clock()
    while True:
        try:
            return await call()
        except UnifiedError:
            raise
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            error = failure.error
            asked = failure.retry_delay_s
            if failure.kind == "fatal" or shown() or attempt >= options.max_retries:
                if attempt and failure.kind != "fatal" and not shown():
                    _tell_what_was_tried(error, attempt + 1, clock() - started, options)
                raise error from exc
            if asked is not None and asked > options.max_retry_delay_s:
                raise error from exc  # the server asks for a longer wait than allowed: say so at once
            delay = asked if asked is not None else backoff_s(attempt)
            elapsed = clock() - started
            if elapsed + delay * options.retry_delay_scale >= options.request_deadline_s:
                _tell_what_was_tried(error, attempt + 1, elapsed, options)
                raise error from exc
            attempt += 1
            wait = delay * options.retry_delay_scale
            await warn(
                RETRY_WARNING,
                f"{error.message}; retry {attempt}/{options.max_retries} in {wait:.3g}s{_why(asked, options)}",
            )
            await anyio.sleep(wait)


def _why(asked: float | None, options: ApiOptions) -> str:
    """Where the announced wait comes from: the server's RetryInfo, scaled when `retry_delay_scale` is not 1
    (the warning states the wait that is slept, so a shortened one says what the server asked for)."""
    if asked is None:
        return ""
    if options.retry_delay_scale == 1:
        return " as the server asked"
    return f" (the server asked {asked:.3g}s; retry_delay_scale={options.retry_delay_scale:g})"


def _tell_what_was_tried(error: UnifiedError, attempts: int, elapsed: float, options: ApiOptions) -> None:
    """Retries that ran out say how many attempts were made, over how long, under which limits."""
    tried = (
        f"gave up after {attempts} attempts in {elapsed:.3g}s (timeout_s={options.timeout_s:g} per attempt, "
        f"request_deadline_s={options.request_deadline_s:g} in all, max_retries={options.max_retries})"
    )
    error.extend(tried, attempts=attempts)
