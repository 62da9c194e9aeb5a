"""How a Claude Code turn fails: its `result` line, an `api_retry`, or the process's exit → typed errors. Pure.

Every API failure ends the CLI's turn with `result.subtype: "success"` and `is_error: true`;
the HTTP status is `api_error_status` (null for a broken connection or a timeout) and the text the
CLI shows is `result`. The codes, as on every backend: 429 `rate_limited` (retryable), 529 and 5xx
`backend_error` (retryable), 401/403 `auth_error`, 400/413 `bad_request`, 404 `model_not_found`,
a dropped or timed-out stream, or an answer with no content at all, `stream_interrupted` (retryable),
no connection made at all (refused, DNS, no route, a proxy's refused tunnel, an untrusted certificate:
`CONNECT_FAILURE`) `backend_unavailable` (retryable, naming the URL: `unified._internal.reach`); "Not
logged in" (no credentials at all) `auth_error`; a `--resume` the CLI could not find `session_not_found`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from unified._binary.process import killed_by, limit_kill, telling_line
from unified._internal.reach import provider_unreachable
from unified.errors import AuthError, BackendError, BackendUnavailable, RateLimited, SessionNotFound, UnifiedError

__all__ = [
    "CONNECT_FAILURE",
    "DEFAULT_BASE_URL",
    "error_from_exit",
    "error_from_result",
    "error_from_status",
    "status_of_result",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
"""Where the CLI sends its model requests when ANTHROPIC_BASE_URL is not set."""
CONNECT_FAILURE = re.compile(
    r"\((?:ECONNREFUSED|ConnectionRefused|ENOTFOUND|EAI_AGAIN|FailedToOpenSocket|ENETUNREACH|ENETDOWN|EHOSTUNREACH"
    r"|EHOSTDOWN|ERR_PROXY_TUNNEL|UND_ERR_CONNECT_TIMEOUT)\)"
    r"|\b(?:UNABLE_TO_(?:VERIFY|GET)_\w+|SELF_SIGNED_CERT\w*|DEPTH_ZERO_SELF_SIGNED_CERT|CERT_\w+|ERR_TLS_CERT\w*)\b"
    r"|Unable to connect to API\. Check your internet connection"
)
"""The CLI's words (2.1.332, its `API Error: ...` text) for a request that made no connection: refused ("Connection
refused — a firewall or proxy may be blocking it (ECONNREFUSED)"), a name that does not resolve ("Can't reach the
API server — check your internet or DNS (ENOTFOUND)"), no route, a proxy that refused the tunnel, a certificate it
does not trust. Not a connection that dropped once open ("Connection dropped (ECONNRESET)") nor a timeout
("Request timed out": the CLI says the same for a server that accepted and went silent): `stream_interrupted`."""

_NO_CONTENT = re.compile(r"\[ede_diagnostic\].*\blast_content_type=none\b")
"""The CLI's words (2.1.332, the `errors` of an `error_during_execution` result) when the model's answer had no
content block at all: an empty stream, and its non-streaming fallback empty too."""


def _text(raw: Mapping[str, Any]) -> str:
    errors = raw.get("errors")
    if isinstance(errors, list) and errors:
        return "; ".join(str(e) for e in errors)
    text = raw.get("result")
    return str(text) if text else f"the claude CLI ended the turn with {raw.get('subtype')}"


def error_from_status(
    status: int | None,
    message: str,
    *,
    retries: int = 0,
    base_url: str | None = None,
    retry_after_s: float | None = None,
) -> UnifiedError:
    """The typed error of an API failure with this HTTP status (None: no answer at all); `base_url` is where the
    CLI sends its requests (ANTHROPIC_BASE_URL; None: the default), named when it could not connect there;
    `retry_after_s`, the wait the CLI last said it would make before asking again (its `api_retry`, which follows the
    server's Retry-After): a 429's or a 5xx's `details.retry_after_s`, as the API backends give it (round 20: the
    wait was known, and a 429 asking more than `max_retry_delay_s` even said it in words, but no field held it)."""
    tried = f" (after {retries} retries)" if retries else ""
    if status is None and CONNECT_FAILURE.search(message):
        return provider_unreachable(
            "the model's API",
            base_url or DEFAULT_BASE_URL,
            f"the claude CLI says {message!r}",
            check="ANTHROPIC_BASE_URL (or the proxy / Bedrock / Vertex settings)",
            attempts=retries + 1 if retries else None,
        )
    details: dict[str, Any] = {"status": status} if status is not None else {}
    if (
        status is not None
        and (status in (429, 529) or status >= 500)
        and retry_after_s
        and math.isfinite(retry_after_s)
    ):
        details["retry_after_s"] = retry_after_s
    if status == 429:
        return RateLimited(
            f"rate limited by the model's API{tried}: {message}", hint="wait, then retry", details=details
        )
    if status in (401, 403):
        return AuthError(
            f"the model's API refused the credentials ({status}): {message}",
            hint="check ANTHROPIC_API_KEY / ANTHROPIC_AUTH_TOKEN (or the Claude login, Bedrock or Vertex settings)",
            details=details,
        )
    if status in (400, 413, 422):
        return UnifiedError(
            f"the model's API rejected the request ({status}): {message}", code="bad_request", details=details
        )
    if status == 404:
        return UnifiedError(
            f"the model's API does not know the model ({status}): {message}", code="model_not_found", details=details
        )
    if status is None:
        return UnifiedError(
            f"the model's answer did not arrive{tried}: {message}",
            code="stream_interrupted",
            retryable=True,
            hint="check the network or the gateway in ANTHROPIC_BASE_URL, then retry",
        )
    return BackendError(
        f"the model's API failed ({status}){tried}: {message}",
        retryable=status == 529 or status >= 500,
        hint="retry later" if status == 529 or status >= 500 else None,
        details=details,
    )


def status_of_result(raw: Mapping[str, Any]) -> str:
    """`success`, `error`, `max_turns`, `aborted` (an interrupt ended the turn)."""
    subtype = raw.get("subtype")
    if subtype == "error_max_turns":
        return "max_turns"
    reason = raw.get("terminal_reason")
    if isinstance(reason, str) and reason.startswith("aborted"):
        return "aborted"
    if raw.get("is_error") is True or (isinstance(subtype, str) and subtype != "success"):
        return "error"
    return "success"


def error_from_result(
    raw: Mapping[str, Any], base_url: str | None = None, *, retry_after_s: float | None = None
) -> UnifiedError:
    """The typed error of a `result` that reports a failure (`base_url`, `retry_after_s`: see `error_from_status`)."""
    message = _text(raw)
    status = raw.get("api_error_status")
    if isinstance(status, int) and not isinstance(status, bool):
        return error_from_status(status, message, retry_after_s=retry_after_s)
    if "Not logged in" in message or "/login" in message:
        return AuthError(
            f"the claude CLI found no credentials: {message}",
            hint="set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN), configure Bedrock or Vertex, or log in to "
            "Claude in the backend's own home (`unified doctor` names it)",
        )
    if "No conversation found" in message or "--resume requires" in message:
        return SessionNotFound(
            f"the claude CLI cannot resume the session: {message}", hint="list them: unified sessions list"
        )
    if raw.get("terminal_reason") == "api_error" or "API Error" in message or "Connection" in message:
        return error_from_status(None, message, base_url=base_url)
    if message.strip().startswith("Prompt is too long"):  # 2.1.332, counted by the CLI itself: no request sent
        return UnifiedError(
            f"the request is larger than the model's context window (the claude CLI says {message.strip()!r}): the "
            "prompt, its images and the session's history together; running it again unchanged fails the same way",
            code="bad_request",
            hint="send a shorter prompt or fewer images, or start a new session instead of resuming a long one",
            details={"subtype": str(raw.get("subtype"))},
        )
    if _NO_CONTENT.search(message):
        return UnifiedError(
            f"the model's API answered with no content (an empty response; the claude CLI says {message!r})",
            code="stream_interrupted",
            retryable=True,
            hint="run again; if it keeps happening, check the model provider or the gateway in ANTHROPIC_BASE_URL",
        )
    return BackendError(f"the claude CLI failed: {message}", details={"subtype": str(raw.get("subtype"))})


STDERR_NOISE = ("[claude-code:unrecognized_model]",)
"""The starts of stderr lines the claude CLI writes on runs that go well (2.1 on a model name it does not know, as
behind a gateway): never the cause of a crash (`telling_line`)."""


def error_from_exit(code: int | None, stderr_tail: str, what: str) -> BackendError | BackendUnavailable:
    """The error of a CLI that ended (or closed its output) before the run was over."""
    if code is None:  # as `jsonrpc.stream_ended` words it for the other binaries: it was not taken for an exit
        how = "closed its output without exiting (it was stopped)"
    elif code < 0:
        how = f"was {killed_by(-code)}"
    else:
        how = f"exited with code {code}"
    tail = stderr_tail.strip()
    last = telling_line(tail, STDERR_NOISE)
    return (BackendUnavailable if limit_kill(code) else BackendError)(
        f"the claude CLI {how} {what}" + (f": {last}" if last else ""),
        hint="run `unified doctor`; the CLI's stderr is in this error's details",
        details={"exit_code": code, "stderr_tail": tail[-4000:]},
    )
