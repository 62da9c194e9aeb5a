"""What a failed model request means: retry it, wait and retry it, or stop with a typed error.

google-genai raises `errors.APIError` (4xx `ClientError`, 5xx `ServerError`) for HTTP errors and
for `{"error": ...}` chunks in the middle of a stream; httpx raises transport errors when a
connection drops, or when none can be made (`unreachable`: nothing was sent, so `backend_unavailable`).
It raises plain `ValueError`/`TypeError` when it refuses to build a request (a part the chosen API
does not accept): that is the request's fault, not a bug here, so it is a typed backend error too.
The SDK's own retries ignore the server's `RetryInfo.retryDelay`, so the agent loop does its own
(`unified._internal.retry`).
"""

from __future__ import annotations

import httpx
from google.genai import errors

from unified._internal.api_errors import (
    body_said,
    credentials_error,
    error_from_status,
    not_its_json,
    retry_after_header,
    timed_out,
    undecodable,
    unreachable,
    unreadable_response,
)
from unified._internal.retry import Failure
from unified._redaction import clip
from unified.errors import BackendError, RateLimited

__all__ = ["failure_from_exception"]


def failure_from_exception(exc: BaseException, model: str, timeout_s: float) -> Failure | None:
    """The meaning of `exc`, or None when it is not a request failure (a bug: let it propagate)."""
    if isinstance(exc, errors.APIError):
        return _api_failure(exc, model)
    if isinstance(exc, errors.UnknownApiResponseError):  # a ValueError too, but the answer's fault, not the request's
        return Failure("transient", not_its_json(clip(str(exc), 300)))
    if isinstance(exc, httpx.DecodingError):  # not a TransportError: it ended the run as unified's bug
        return Failure("transient", not_its_json(undecodable(exc)))
    if isinstance(exc, ValueError | TypeError) and _raised_by_genai(exc):
        return Failure(
            "fatal",
            BackendError(
                f"google-genai refused to send the request ({type(exc).__name__}: {exc})",
                hint="the history or the options hold something this API does not accept (e.g. a Vertex-only "
                "field on the Gemini Developer API): check the model and backend_options, or start a new session",
            ),
        )
    credentials = credentials_error(exc) or unreadable_response(exc)
    if credentials is not None:
        return Failure("fatal", credentials)
    unavailable = unreachable(exc)
    if unavailable is not None:  # no connection was made: retried, then `backend_unavailable` (api_errors)
        return Failure("transient", unavailable)
    if isinstance(exc, httpx.TransportError):
        why = timed_out(exc, timeout_s) or f"the connection to the Gemini API broke ({type(exc).__name__}: {exc})"
        return Failure(
            "transient",
            BackendError(
                why,
                hint="run again; part of the answer may already have been shown",
                code="stream_interrupted",
                retryable=True,
            ),
        )
    return None


def _raised_by_genai(exc: BaseException) -> bool:
    """Whether the innermost frame of `exc`'s traceback is google-genai's own code."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    return str(tb.tb_frame.f_globals.get("__name__", "")).startswith("google.genai")


def _said(exc: errors.APIError) -> str:
    """What the server said in an error answer: the API's `message`, else (a proxy's, a broken server's) the body as
    it came (`body_said`; google-genai wraps a body that is no JSON as `{"message": text, "status": reason}`)."""
    said = exc.message
    if said is not None and (not isinstance(said, str) or said.strip()):  # no str: quoted as JSON (error_from_status)
        return said
    details = exc.details
    if isinstance(details, dict) and set(details) <= {"message", "status"}:  # the SDK's wrapper of a body not JSON
        return body_said(None)
    return body_said(details)


def _api_failure(exc: errors.APIError, model: str) -> Failure:
    said = _said(exc)
    waited = retry_after_header(exc)
    error = error_from_status(exc.code, exc.status, said, body=exc.details, model=model, retry_after_s=waited)
    if isinstance(error, RateLimited):
        return Failure("rate_limit", error, error.details.get("retry_after_s"))
    if error.retryable:  # a 5xx: its RetryInfo, else its Retry-After, is the wait
        return Failure("transient", error, error.details.get("retry_after_s"))
    return Failure("fatal", error)
