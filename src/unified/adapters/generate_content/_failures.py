"""What a failed model request means: retry it, wait and retry it, or stop with a typed error.

google-genai raises `errors.APIError` (4xx `ClientError`, 5xx `ServerError`) for HTTP errors and
for `{"error": ...}` chunks in the middle of a stream; httpx raises transport errors when a
connection drops. The SDK's own retries ignore the server's `RetryInfo.retryDelay`, so the loop
does its own (see `_loop.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from google.genai import errors

from unified._errors import AuthError, BackendError, ConfigurationError, RateLimited, UnifiedError

_DURATION = re.compile(r"^\s*(?P<seconds>\d+(?:\.\d+)?)s\s*$")


@dataclass(frozen=True)
class Failure:
    """A classified failure: `kind` decides the retry, `error` is raised when retries are over."""

    kind: Literal["rate_limit", "transient", "fatal"]
    error: UnifiedError
    retry_delay_s: float | None = None


def retry_delay(details: Any) -> float | None:
    """`RetryInfo.retryDelay` ("15s", "0.5s") from a google.rpc.Status error body, if any."""
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(item.get("retryDelay", "")))
            if match:
                return float(match.group("seconds"))
    return None


def classify(exc: BaseException, model: str) -> Failure | None:
    """The meaning of `exc`, or None when it is not a request failure (a bug: let it propagate)."""
    if isinstance(exc, errors.APIError):
        return _api_failure(exc, model)
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
    code = exc.code
    message = exc.message or str(exc)
    details = {"http_status": code, "status": exc.status, "message": message}
    if code == 429:
        delay = retry_delay(exc.details)
        hint = f"wait {delay:g}s and run again" if delay else "wait and run again, or check your quota"
        return Failure(
            "rate_limit",
            RateLimited(f"the Gemini API rate limit was hit: {message}", hint=hint, details=details),
            delay,
        )
    if code >= 500 or code in (408,):
        return Failure(
            "transient",
            BackendError(
                f"the Gemini API failed ({code} {exc.status}): {message}",
                hint="a server-side problem; run again later",
                retryable=True,
                details=details,
            ),
        )
    lowered = message.lower()
    error: UnifiedError
    if code in (401, 403) or "api key" in lowered or "api_key" in lowered:
        error = AuthError(
            f"the Gemini API refused the credentials ({code} {exc.status}): {message}",
            hint="check GEMINI_API_KEY / GOOGLE_API_KEY (or the project's Vertex AI permissions)",
            details=details,
        )
    elif "thought_signature" in lowered or "thought signature" in lowered:
        error = BackendError(
            f"the Gemini API rejected the history: {message}",
            hint="a model turn lost its thought signature; resume only sessions written by unified, "
            "or start a new session",
            code="missing_thought_signature",
            details=details,
        )
    elif code == 404 or ("model" in lowered and ("not found" in lowered or "not supported" in lowered)):
        error = ConfigurationError(
            f"the Gemini API does not serve model {model!r} ({code} {exc.status}): {message}",
            hint="check the model name (e.g. gemini-2.5-flash, gemini-3-flash-preview) and api_version",
            code="model_not_found",
            details=details,
        )
    else:
        error = BackendError(
            f"the Gemini API rejected the request ({code} {exc.status}): {message}",
            hint="fix the request (model options, tools, thinking settings) as the message says",
            code="bad_request",
            details=details,
        )
    return Failure("fatal", error)
