"""One reading of Gemini API error answers for every backend: retry, wait, or say what to fix."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from unified._internal.api_errors import error_from_status, retry_delay, unreachable
from unified.errors import AuthError, BackendError, ConfigurationError, RateLimited

RETRY_INFO = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "15s"}


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"code": 429, "details": [{"@type": "x.QuotaFailure"}, RETRY_INFO]}},  # the envelope
        {"code": 429, "details": [RETRY_INFO]},  # the status inside it
        [RETRY_INFO],  # the details list alone
    ],
)
def test_retry_delay_wherever_the_caller_starts(body: Any) -> None:
    assert retry_delay(body) == 15.0


@pytest.mark.parametrize("body", [None, {}, {"error": {}}, [{"@type": "x.RetryInfo", "retryDelay": "soon"}], "15s"])
def test_no_retry_delay(body: Any) -> None:
    assert retry_delay(body) is None


@pytest.mark.parametrize(
    ("code", "message", "kind", "error_code", "retryable"),
    [
        (429, "quota", RateLimited, "rate_limited", True),
        (500, "oops", BackendError, "backend_error", True),
        (503, "overloaded", BackendError, "backend_error", True),
        (400, "API key not valid. Please pass a valid API key.", AuthError, "auth_error", False),
        (403, "denied", AuthError, "auth_error", False),
        (400, "Function call is missing a thought_signature", BackendError, "missing_thought_signature", False),
        (404, "Interaction abc not found", BackendError, "interaction_not_found", False),
        (404, "models/gemini-9 is not found", ConfigurationError, "model_not_found", False),
        (400, "Invalid value", BackendError, "bad_request", False),
    ],
)
def test_classification(code: int, message: str, kind: type, error_code: str, retryable: bool) -> None:
    error = error_from_status(code, "STATUS", message, body={"error": {"details": [RETRY_INFO]}}, model="gemini-9")
    assert isinstance(error, kind)
    assert (error.code, error.retryable) == (error_code, retryable)
    assert message in error.message
    assert error.hint
    assert error.details["http_status"] == code


@pytest.mark.parametrize(
    ("code", "error_code", "retryable"),
    [(301, "configuration_error", False), (308, "configuration_error", False), (204, "stream_interrupted", True)],
)
def test_a_redirect_or_a_success_without_an_answer_is_not_the_request_s_fault(
    code: int, error_code: str, retryable: bool
) -> None:
    """They were `bad_request`, hinting "fix the request (model options, tools, thinking settings)": a redirect is the
    base URL's fault (asking again gets it again), a 204 an answer that holds none (asked again)."""
    error = error_from_status(code, "Moved", f"{code} Moved. {{}}", body=None, model="gemini-9")
    assert (error.code, error.retryable) == (error_code, retryable)
    assert str(code) in error.message
    assert "fix the request" not in (error.hint or "")


def test_rate_limit_says_how_long_to_wait() -> None:
    error = error_from_status(429, "RESOURCE_EXHAUSTED", "quota", body=[RETRY_INFO], model=None)
    assert error.details["retry_after_s"] == 15.0
    assert error.hint == "wait 15s and run again"
    unknown_model = error_from_status(404, None, "not found", body=None, model=None)
    assert "the requested model" in unknown_model.message


_REQUEST = httpx.Request("POST", "http://u:pw-0123@127.0.0.1:9/v1beta/models/m:streamGenerateContent?key=k-0123")


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ConnectError("All connection attempts failed", request=_REQUEST),
        httpx.ConnectTimeout("timed out", request=_REQUEST),
        httpx.ProxyError("tunnel refused", request=_REQUEST),
    ],
)
def test_no_connection_made_is_backend_unavailable_naming_the_url(exc: httpx.TransportError) -> None:
    error = unreachable(exc)
    assert error is not None
    assert (error.code, error.retryable) == ("backend_unavailable", True)
    assert "http://127.0.0.1:9/v1beta/models/m:streamGenerateContent" in error.message
    for secret in ("pw-0123", "k-0123"):
        assert secret not in str(error)
        assert secret not in str(error.details)


def test_a_wrapped_connect_error_is_found() -> None:
    """The Interactions SDK raises its own `APIConnectionError` from httpx's."""

    class Wrapper(Exception):
        pass

    try:
        try:
            raise httpx.ConnectError("refused", request=_REQUEST)
        except httpx.ConnectError as inner:
            raise Wrapper("Connection error.") from inner
    except Wrapper as outer:
        error = unreachable(outer)
    assert error is not None
    assert error.code == "backend_unavailable"


@pytest.mark.parametrize(
    "exc",
    [
        httpx.ReadError("connection reset", request=_REQUEST),
        httpx.RemoteProtocolError("peer closed connection", request=_REQUEST),
        httpx.ReadTimeout("timed out", request=_REQUEST),
        ValueError("not a transport error"),
    ],
)
def test_a_connection_that_was_made_is_not_unreachable(exc: Exception) -> None:
    assert unreachable(exc) is None


STYLE = "<style>body { font-family: sans-serif }</style>"


@pytest.mark.parametrize(
    ("page", "named"),
    [
        (
            f"<!DOCTYPE html>\n<html><head><title>429 Too Many Requests</title>{STYLE}</head><body>x</body></html>",
            "an HTML page ('429 Too Many Requests', ",
        ),
        (
            f"<html><head>{STYLE}<script>var a = 1;</script></head>"
            "<body><h1>Service&nbsp;Unavailable</h1>\n<p>Try later.</p></body></html>",
            "an HTML page ('Service Unavailable Try later.', ",
        ),
        (f"  <HTML><BODY>{'word ' * 100}</BODY></HTML>", "an HTML page ('" + ("word " * 16)[:79] + "…', "),
        ("<html><body></body></html>", "an HTML page (26 bytes)"),
    ],
)
@pytest.mark.parametrize("code", [429, 502, 503])
def test_an_html_page_is_named_by_its_title_or_first_words_and_size_not_quoted(
    code: int, page: str, named: str
) -> None:
    """A proxy's or load balancer's error page was quoted whole (markup, styles, newlines) in every retry warning and
    the error; it is now named."""
    error = error_from_status(code, None, page, body=None, model=None)
    assert named in error.message
    assert f"{len(page.encode())} bytes) instead of the API's JSON" in error.message
    assert "<" not in error.message
    assert "\n" not in error.message
    assert error.retryable
    assert error.details["message"] == error.message.split(": ", 1)[1]


def test_a_message_that_only_mentions_html_is_quoted() -> None:
    said = "the field <html> is not allowed"
    assert said in error_from_status(400, "INVALID_ARGUMENT", said, body=None, model=None).message


@pytest.mark.parametrize("code", [400, 429, 503])
def test_a_long_text_is_cut_and_its_size_said(code: int) -> None:
    """A plain-text page or a server's dump was quoted whole (100 KB in every retry warning and the error)."""
    said = "upstream said: " + "x" * 100_000
    error = error_from_status(code, None, said, body=None, model=None)
    assert "upstream said: xxx" in error.message
    assert f"… ({len(said)} bytes in all)" in error.message
    assert len(error.message) < 2_300
    short = "the request has 3 problems: " + "field a is wrong; " * 50  # an API's own long 400 stays whole
    assert short in error_from_status(400, "INVALID_ARGUMENT", short, body=None, model=None).message
