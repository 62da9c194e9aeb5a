"""What an HTTP error from the Gemini API means, for every backend that calls it.

Both API backends talk to the same service, which answers errors as a `google.rpc.Status`
envelope (`{"error": {"code", "message", "status", "details": [...]}}`). The meaning of an error
(retry it, wait as the server says, or stop and tell the user what to fix) does not depend on
which SDK surface raised it, so it is decided here once.
"""

from __future__ import annotations

import contextlib
import email.utils
import html
import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from unified._internal.reach import provider_unreachable
from unified._redaction import clip
from unified.errors import AuthError, BackendError, BackendUnavailable, ConfigurationError, RateLimited, UnifiedError

__all__ = [
    "HTTP_OF_STATUS",
    "RETRYABLE_STATUS",
    "UNFIT_ERRORS",
    "body_said",
    "credentials_error",
    "error_from_status",
    "not_its_json",
    "redirected",
    "retry_after_header",
    "retry_delay",
    "timed_out",
    "undecodable",
    "unfit_response",
    "unreachable",
    "unreadable_response",
    "unreadable_wait",
]

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
_DURATION = re.compile(r"^\s*(?P<seconds>\d+(?:\.\d+)?)s\s*$")


def _status_details(body: Any) -> list[Any]:
    """The `details` list of an error body, whether given the envelope, the status, or the list."""
    for _ in range(3):  # envelope → status → details, however deep the caller started
        if isinstance(body, list):
            return body
        if not isinstance(body, Mapping):
            return []
        body = body.get("error", body.get("details"))
    return []


def retry_delay(body: Any) -> float | None:
    """`google.rpc.RetryInfo.retryDelay` ("15s", "0.5s") of an error body, in seconds, if any; None for one of
    400 digits, which `float` makes infinity ("wait infs and run again", and a `retry_after_s` no JSON holds)."""
    for item in _status_details(body):
        if isinstance(item, Mapping) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DURATION.match(str(item.get("retryDelay", "")))
            if match and math.isfinite(seconds := float(match.group("seconds"))):
                return seconds
    return None


def retry_after_header(exc: BaseException, now: datetime | None = None) -> float | None:
    """The HTTP `Retry-After` of the answer a failed request got (either SDK family keeps the httpx response), in
    seconds: delta-seconds, or an HTTP date (the wait until then, 0 once past); None when absent or unreadable (a
    negative number, a word, a number no float holds). The body's RetryInfo is the API's own and comes first; a
    proxy's or gateway's 429 or 503 says its wait only here, and the retry policy's backoff ignored it (bad input
    round 17)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if isinstance(headers, Mapping) else None  # httpx.Headers: any case
    if not isinstance(value, str) or not (value := value.strip()):
        return None
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        seconds = float(value)
        return seconds if math.isfinite(seconds) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


HTTP_OF_STATUS: dict[str, int] = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "RESOURCE_EXHAUSTED": 429,
    "CANCELLED": 499,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}
"""The HTTP status each google.rpc code travels with: an error met in a stream names only the code."""


_PAGE = re.compile(r"\s*(?:<!doctype\s+html|<html|<head|<body)\b", re.IGNORECASE)
_PAGE_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_PAGE_HIDDEN = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL)
_PAGE_TAG = re.compile(r"<[^>]*>")
_PAGE_WORDS = 80
"""How many characters of a page's title (or first words) an error names."""
_SAID_CHARS = 2_000
"""The most of a server's error text an error message quotes: the API's own are a sentence or a few hundred
characters (a 400's field violations); a longer text is a page or a dump, and each retry warning repeated it."""


def _page_said(message: str) -> str:
    """What the server said, as an error message quotes it: an HTML page (a proxy's or load balancer's 429 or 503,
    whose body the SDKs hand on as the message) is named by its title, or else its first words, and its size. Its
    markup was quoted whole: 2.8 KB of tags and styles on several lines, in the retry warning and the error alike.
    Any other text is cut at `_SAID_CHARS` (a proxy's plain-text page, a server's dump), its size said."""
    if not _PAGE.match(message):
        if len(message) <= _SAID_CHARS:
            return message
        size = len(message.encode(errors="replace"))
        return f"{clip(message, _SAID_CHARS, more='…')} ({size} bytes in all)"
    title = _PAGE_TITLE.search(message)
    text = title.group(1) if title else _PAGE_TAG.sub(" ", _PAGE_HIDDEN.sub(" ", message))
    words = clip(" ".join(html.unescape(text).split()), _PAGE_WORDS, more="…")
    named = f"{words!r}, " if words else ""
    size = len(message.encode(errors="replace"))
    return f"an HTML page ({named}{size} bytes) instead of the API's JSON, likely a proxy's or load balancer's"


def body_said(body: object) -> str:
    """What an error answer without the API's `message` said, for its error to quote: the body as it came (a JSON
    string as its text, other JSON as JSON), or "an empty answer". Either SDK's own words for it were no quote: "401
    None. nope" (google-genai), "Error code: 403 - {'foo': 1}" (its Interactions client), a Python repr of its
    wrapper for an empty body (bad input round 21)."""
    if isinstance(body, str):
        return body.strip() or "an empty answer"
    return json.dumps(body, default=str) if body else "an empty answer"


def error_from_status(
    code: int, status: str | None, message: str, *, body: Any, model: str | None, retry_after_s: float | None = None
) -> UnifiedError:
    """The typed error for one HTTP error answer; `retryable` says whether asking again may help. A body whose
    `message` or `status` is no string (`{"message": 5, "status": []}`: a server's or proxy's slip, which the SDK
    hands on as it is) is quoted as its JSON: it was `internal_error`, a TypeError in the regex. `retry_after_s`: the
    answer's `Retry-After` header (`retry_after_header`), the wait of a 429 without RetryInfo and of a 5xx."""
    if not isinstance(message, str):
        message = json.dumps(message, default=str)
    if not isinstance(status, str):
        status = None
    message = _page_said(message)
    details: dict[str, Any] = {"http_status": code, "status": status, "message": message}
    what = f"({code} {status or ''})".replace(" )", ")")
    if code == 429:
        delay = retry_delay(body)
        if delay is None:
            delay = retry_after_s
        if delay is not None:
            details["retry_after_s"] = delay
        hint = f"wait {delay:g}s and run again" if delay else "wait and run again, or check your quota"
        return RateLimited(f"the Gemini API rate limit was hit: {message}", hint=hint, details=details)
    if isinstance(code, int) and 300 <= code < 400:  # not an int: a stream's error chunk without its code
        return redirected(what)
    if isinstance(code, int) and 200 <= code < 300:  # a success but 200 (204 No Content): no answer, as a proxy's page
        return not_its_json(f"an answer of status {code}{f' {status}' if status else ''}")
    if code in RETRYABLE_STATUS:
        delay = retry_delay(body)
        if delay is None:
            delay = retry_after_s
        if delay is not None:
            details["retry_after_s"] = delay
        return BackendError(
            f"the Gemini API failed {what}: {message}",
            hint="a server-side problem; run again later",
            retryable=True,
            details=details,
        )
    lowered = message.lower()
    if code in (401, 403) or "api key" in lowered or "api_key" in lowered:
        return AuthError(
            f"the Gemini API refused the credentials {what}: {message}",
            hint="check GEMINI_API_KEY / GOOGLE_API_KEY (or the project's Vertex AI permissions)",
            details=details,
        )
    if "thought_signature" in lowered or "thought signature" in lowered:
        return BackendError(
            f"the Gemini API rejected the history: {message}",
            hint="a model turn lost its thought signature; resume only sessions written by unified, "
            "or start a new session",
            code="missing_thought_signature",
            details=details,
        )
    if code == 404 and "interaction" in lowered:
        return BackendError(
            f"the Interactions API no longer holds that interaction {what}: {message}",
            hint="stored interactions expire; start a new session",
            code="interaction_not_found",
            details=details,
        )
    if code == 404 or ("model" in lowered and ("not found" in lowered or "not supported" in lowered)):
        return ConfigurationError(
            f"the Gemini API does not serve {f'model {model!r}' if model else 'the requested model'} {what}: {message}",
            hint="check the model name (e.g. gemini-2.5-flash, gemini-3-flash-preview) and api_version",
            code="model_not_found",
            details=details,
        )
    return BackendError(
        f"the Gemini API rejected the request {what}: {message}",
        hint="fix the request (model options, tools, thinking settings) as the message says",
        code="bad_request",
        details=details,
    )


def timed_out(exc: BaseException, timeout_s: float) -> str | None:
    """For a client-side timeout (httpx's, or the SDK's wrapper of it): what waited too long, naming the setting."""
    if not isinstance(exc, httpx.TimeoutException) and type(exc).__name__ != "APITimeoutError":
        return None
    return f"the Gemini API sent nothing for timeout_s={timeout_s:g}s ({type(exc).__name__})"


_CONNECT_FAILURES = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ProxyError)
"""What httpx raises when no connection could be made: refused, a name that does not resolve, an unreachable
network and a failed TLS handshake (all `ConnectError`), a connect timeout, a proxy that refused the tunnel.
Nothing was sent. A connection that broke once open raises `ReadError`, `RemoteProtocolError`, `ReadTimeout`
and the like: not these."""


def unreachable(exc: BaseException) -> BackendUnavailable | None:
    """The typed `backend_unavailable` error when `exc` (or what it wraps: the Interactions SDK's
    `APIConnectionError` raises from httpx's) says no connection to the Gemini API could be made; None otherwise.

    The URL named is the request's (its origin and path; never its query)."""
    cause: BaseException | None = exc
    for _ in range(5):  # the SDK's wrapper → httpx's error → the socket's: a short chain
        if cause is None or isinstance(cause, _CONNECT_FAILURES):
            break
        cause = cause.__cause__ or cause.__context__
    if not isinstance(cause, _CONNECT_FAILURES):
        return None
    url = "the configured base URL"
    with contextlib.suppress(RuntimeError):  # an error raised without its request names no URL
        url = str(cause.request.url)
    why = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
    return provider_unreachable(
        "the Gemini API", url, why, check="base_url (backend_options) or GOOGLE_GEMINI_BASE_URL / http_options"
    )


def credentials_error(exc: BaseException) -> UnifiedError | None:
    """google-auth failing to find or refresh credentials (Vertex AI without ADC), as a typed error."""
    try:
        from google.auth import exceptions
    except ImportError:  # google-auth comes with google-genai; without it there is nothing to classify
        return None
    if isinstance(exc, exceptions.DefaultCredentialsError):
        return AuthError(
            "Vertex AI mode found no Application Default Credentials",
            hint="run `gcloud auth application-default login`, set GOOGLE_APPLICATION_CREDENTIALS, "
            "or use an API key (GEMINI_API_KEY) instead",
        )
    if isinstance(exc, exceptions.GoogleAuthError):
        return AuthError(
            f"the Google credentials could not be used: {exc}",
            hint="refresh them with `gcloud auth application-default login`",
        )
    return None


def unreadable_response(exc: BaseException) -> UnifiedError | None:
    """google-genai failing to read what the server sent (a field of the wrong type, such as a
    function call named `123` or with a list for its arguments; JSON nested too deeply for its
    parser), as a typed error rather than a crash of unified: the server's answer was bad."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError | RecursionError) or not _through_genai(exc):
        return None
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        where = ".".join(str(p) for p in errors[0]["loc"]) if errors else exc.title
        why = f"{where}: {errors[0]['msg'] if errors else 'invalid'}"
    else:
        why = "its JSON is nested too deeply to parse"
    return unfit_response(why)


def unreadable_wait(exc: BaseException) -> UnifiedError | None:
    """google-genai's Interactions client failing to read an error answer's `Retry-After` (a number no float holds:
    its `round(seconds * 1000)` raised OverflowError, which ended the run as `internal_error`, "a bug in unified"):
    the server's or a proxy's bad answer, asked again after the policy's own backoff (`retry_after_header` reads
    such a header as no wait)."""
    if not isinstance(exc, OverflowError | ValueError):
        return None
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_code.co_name != "_parse_retry_after_header":
        return None
    if not str(tb.tb_frame.f_globals.get("__name__", "")).startswith("google.genai"):
        return None
    return BackendError(
        f"the server's error answer had a Retry-After header google-genai cannot read ({type(exc).__name__}: {exc})",
        hint="a server or proxy problem; run again later",
        retryable=True,
    )


UNFIT_ERRORS = (TypeError, AttributeError, ValueError, KeyError, IndexError, OverflowError)
"""What reading a wire field of the wrong shape raises (`x.get` on a list, `int()` of an object, `candidates[0]`
of an object, google-genai's ValidationError): caught at a translator's boundary for one native message, the
server's fault (`unfit_response`)."""


def not_its_json(why: str) -> BackendError:
    """An answer of status 200 that is not the API's JSON (`why` says what it is): a stream cut in the middle of an
    event, a proxy's page, a body that does not decode as its `Content-Encoding` says. The answer's fault, not the
    request's: retried as a dropped stream is (`stream_interrupted`)."""
    return BackendError(
        f"the answer from the Gemini API is not its JSON ({why})",
        hint="a stream cut in the middle of an event, or something other than the Gemini API answered (a "
        "proxy's page): run again; if it persists, check the URL the backend talks to (GOOGLE_GEMINI_BASE_URL "
        "or backend_options['base_url'])",
        code="stream_interrupted",
        retryable=True,
    )


def redirected(what: str) -> ConfigurationError:
    """The base URL answered with a redirect (`what`: its status), which the SDKs do not follow (nor should they: the
    key would go wherever it points): the URL is not where the API answers. It was `bad_request` "fix the request
    (model options, tools, thinking settings)" on generate-content, an answer retried as not the API's JSON on
    Interactions; the request was never the problem, and asking again gets the same redirect."""
    return ConfigurationError(
        f"the Gemini API's base URL answered with a redirect {what}, which unified does not follow: it is not the "
        "URL the API answers at",
        hint="set base_url (backend_options) or GOOGLE_GEMINI_BASE_URL to the URL the redirect names (often https:// "
        "where http:// was given)",
    )


def undecodable(exc: httpx.DecodingError) -> str:
    """What `not_its_json` says of a body httpx could not decode (gzip declared, something else sent)."""
    return f"a body that does not decode as its Content-Encoding says: {exc}"


def unfit_response(why: str) -> BackendError:
    """The server's answer has a field of the wrong shape (`why` names it): the server's fault, typed."""
    return BackendError(
        f"the Gemini API sent a response that does not fit its schema ({why}); it was not used",
        hint="this is the server's (or a proxy's) fault: run again, or report it if it persists",
    )


def _through_genai(exc: BaseException) -> bool:
    """Whether google-genai's code is on `exc`'s traceback (it raised inside the SDK's reading)."""
    tb = exc.__traceback__
    while tb is not None:
        if str(tb.tb_frame.f_globals.get("__name__", "")).startswith("google.genai"):
            return True
        tb = tb.tb_next
    return False
