"""What a failed model request means: retry it, wait and retry it, or stop with a typed error.

google-genai raises `errors.APIError` (4xx `ClientError`, 5xx `ServerError`) for HTTP errors and
for `{"error": ...}` chunks in the middle of a stream; httpx raises transport errors when a
connection drops. The SDK's own retries ignore the server's `RetryInfo.retryDelay`, so the loop
does its own (see `_loop.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import httpx
from google.genai import errors

from unified._errors import BackendError, RateLimited, UnifiedError
from unified._internal.api_errors import api_error, credentials_error


@dataclass(frozen=True)
class Failure:
    """A classified failure: `kind` decides the retry, `error` is raised when retries are over."""

    kind: Literal["rate_limit", "transient", "fatal"]
    error: UnifiedError
    retry_delay_s: float | None = None


def classify(exc: BaseException, model: str) -> Failure | None:
    """The meaning of `exc`, or None when it is not a request failure (a bug: let it propagate)."""
    if isinstance(exc, errors.APIError):
        return _api_failure(exc, model)
    credentials = credentials_error(exc)
    if credentials is not None:
        return Failure("fatal", credentials)
    if isinstance(exc, (httpx.TransportError, errors.UnknownApiResponseError)):
        return Failure(
            "transient",
            BackendError(
                f"the connection to the Gemini API broke mid-answer ({type(exc).__name__}: {exc})",
                hint="run again; part of the answer may already have been shown",
                code="stream_interrupted",
                retryable=True,
            ),
        )
    return None


def _api_failure(exc: errors.APIError, model: str) -> Failure:
    error = api_error(exc.code, exc.status, exc.message or str(exc), body=exc.details, model=model)
    if isinstance(error, RateLimited):
        return Failure("rate_limit", error, error.details.get("retry_after_s"))
    return Failure("transient" if error.retryable else "fatal", error)
