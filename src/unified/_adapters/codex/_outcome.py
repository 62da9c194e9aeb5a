"""How a Codex turn failed, as a typed error with the registry's code; pure.

Codex reports a failed turn as `turn/completed {status: "failed", error: TurnError}` (after an
`error` notification with the same `TurnError`): `message`, `codexErrorInfo` (a string or a
one-key object, e.g. `{"responseTooManyFailedAttempts": {"httpStatusCode": 429}}`) and
`additionalDetails`. Measured on 0.171 with retries off (docs/backends/codex.md, "Errors"):

| codexErrorInfo | code |
|---|---|
| `usageLimitExceeded` (429 `insufficient_quota`), `rateLimitExceeded`, `...{429}` | `rate_limited` |
| `unauthorized`, `httpConnectionFailed{401 or 403}`, a 401/403 status anywhere | `auth_error` |
| `httpConnectionFailed{404}`, `modelNotFound` (no such model) | `model_not_found` |
| `...{400}`, `contextWindowExceeded`, `other` with the provider's `invalid_request_error` body | `bad_request` |
| `internalServerError`, `serverOverloaded`, a 5xx status | `backend_error`, retryable |
| `responseStreamDisconnected`, `other` with "stream disconnected" | `stream_interrupted`, retryable |
| anything else | `backend_error` |

A provider Codex cannot connect to at all is not a failed turn: Codex retries it forever, each time with an
`error {willRetry: true}` notification ("Reconnecting... waiting for network", details "Connection failed: error
sending request" on 0.171, its `codexErrorInfo` the same `responseStreamDisconnected` as a dropped stream).
`connect_failure` tells those apart; the run ends them as `backend_unavailable` (`unified._internal.reach`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from unified._binary.framing import parse_object
from unified._binary.process import killed_by, limit_kill, telling_line
from unified._internal.reach import display_url, provider_unreachable
from unified._redaction import clip
from unified.errors import AuthError, BackendError, BackendUnavailable, RateLimited, UnifiedError

__all__ = [
    "connect_failure",
    "error_from_exit",
    "error_from_turn_error",
    "mcp_startup_failure",
    "provider_down",
    "status_of",
]

_CONNECT_FAILURE = re.compile(
    r"waiting for network|\bConnection failed\b|dns error|failed to lookup address|Connection refused"
    r"|tcp connect error|error trying to connect|certificate|tls handshake",
    re.IGNORECASE,
)
"""Codex's words (0.171, its retry notification's message or details) for a request that made no connection:
refused, a name that does not resolve, a failed TLS handshake. Not "stream disconnected before completion" or an
idle timeout (the server answered, then stopped): those stay retries that `provider_timeout_s` bounds."""


def connect_failure(message: str, details: str | None) -> bool:
    """Whether a retry notification of Codex says it could not connect to the provider at all."""
    return bool(_CONNECT_FAILURE.search(f"{message} {details or ''}"))


def provider_down(url: str, message: str, details: str | None, attempts: int) -> BackendUnavailable:
    """The `backend_unavailable` error of a provider Codex failed to connect to `attempts` times in a row."""
    said = message + (f" ({details})" if details else "")
    return provider_unreachable(
        "the model provider",
        url,
        f"Codex says {said!r}",
        check="backend_options.base_url or OPENAI_BASE_URL (for a ChatGPT login, chatgpt_base_url)",
        attempts=attempts,
    )


_RETRY_IN = re.compile(r"try again in ([0-9]+(?:\.[0-9]+)?)\s*(ms|s)\b", re.IGNORECASE)
"""A number the provider's message gives (`[0-9.]+` took "1.2.3" and ".", which float() refuses)."""


_ASKED_ONCE = re.compile(r"exceeded retry limit, last status: (?P<status>\d{3}\b.*)$")
"""Codex 0.171's words for a 429 it met on its first request (`responseTooManyFailedAttempts{429}`): it never asks
again after a 429, whatever the provider's `request_max_retries`, so "exceeded retry limit" told of retries that were
never made (docs/backends/codex.md, "Errors")."""


def status_of(info: object) -> int | None:
    """The HTTP status a `codexErrorInfo` object carries, if any."""
    if isinstance(info, dict):
        for value in info.values():
            if isinstance(value, dict) and isinstance(value.get("httpStatusCode"), int):
                return int(value["httpStatusCode"])
    return None


def _kind(info: object) -> str:
    if isinstance(info, str):
        return info
    if isinstance(info, dict) and info:
        return str(next(iter(info)))
    return "other"


def _provider_refusal(message: str) -> str | None:
    """The provider's own words when `message` is its 400 body verbatim, as Codex 0.171 reports a request the
    provider refused (`codexErrorInfo` `other`, no status): `{"error": {"type": "invalid_request_error",
    "message": ...}}` in OpenAI's shape. None for any other message."""
    if not message.startswith("{"):
        return None
    body = parse_object(message)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or error.get("type") != "invalid_request_error":
        return None
    said = error.get("message")
    return said if isinstance(said, str) and said else "invalid_request_error"


def error_from_turn_error(error: dict[str, Any] | None, *, where: str) -> UnifiedError:
    """The typed error of a failed turn; `where` names the provider for the message."""
    error = error or {}
    message = str(error.get("message") or "the turn failed")
    details = error.get("additionalDetails")
    info = error.get("codexErrorInfo")
    kind = _kind(info)
    status = status_of(info)
    text = f"{message} ({details})" if isinstance(details, str) and details and details not in message else message
    extra: dict[str, Any] = {"codex_error_info": info, "provider": where}
    if status is not None:
        extra["status"] = status
    if kind in ("usageLimitExceeded", "rateLimitExceeded") or status == 429:
        once = _ASKED_ONCE.match(text) if kind == "responseTooManyFailedAttempts" else None
        if once is not None:
            text = f"it answered {once['status']} to the one request Codex makes (Codex does not ask again after a 429)"
        retry = _RETRY_IN.search(text)
        if retry is not None:
            seconds = float(retry[1]) / (1000 if retry[2].lower() == "ms" else 1)
            if math.isfinite(seconds):  # 400 digits make a float infinity
                extra["retry_after_s"] = seconds
        quota = kind == "usageLimitExceeded"
        if "retry_after_s" not in extra and not quota:  # a reader looks for the wait: say why there is none
            text += "; Codex does not pass on how long the provider asked to wait (its Retry-After)"
        return RateLimited(
            f"{where}: {text}",
            hint="check the plan and billing of this key"
            if quota
            else "wait, then run again (or resume the session: it kept the prompt)",
            retryable=not quota,
            details=extra,
        )
    if kind == "unauthorized" or status in (401, 403):
        return AuthError(f"{where} refused the credentials: {text}", hint="check OPENAI_API_KEY", details=extra)
    refused = _provider_refusal(message)
    if refused is not None:
        text = refused + text[len(message) :]
    if status == 404 or kind == "modelNotFound":
        return BackendError(f"{where}: {text}", code="model_not_found", hint="check the model name", details=extra)
    if status == 400 or kind == "contextWindowExceeded" or refused is not None:
        return BackendError(
            f"{where} refused the request: {text}",
            code="bad_request",
            hint="running it again unchanged fails the same way: change what the provider refused",
            details=extra,
        )
    if kind in ("internalServerError", "serverOverloaded") or (status is not None and status >= 500):
        said = {"internalServerError": "an internal server error", "serverOverloaded": "overloaded"}.get(kind)
        return BackendError(  # Codex's words for a 500 ("experiencing high demand") read like a rate limit
            f"{where} had a server error ({status or said}), not a rate limit: {text}",
            retryable=True,
            hint="the fault is the provider's, not the request's: run again (or resume the session: it kept the "
            "prompt), or let the run fail over (ExecuteParams.fallback)",
            details=extra,
        )
    if kind == "responseStreamDisconnected" or "stream disconnected" in text:
        return BackendError(f"{where}: {text}", code="stream_interrupted", retryable=True, details=extra)
    return BackendError(f"codex: {text}", details=extra)


STDERR_NOISE = ("WARNING: proceeding, even though we could not create PATH aliases",)
"""The starts of stderr lines codex writes on runs that go well (0.171 with its home under /tmp): never the cause of
a crash (`telling_line`)."""


def error_from_exit(code: int | None, stderr: str, what: str) -> UnifiedError:
    """The app-server ended (or never answered): what its exit status and stderr say."""
    tail = stderr.strip()
    last = telling_line(tail, STDERR_NOISE)
    status = "still running" if code is None else killed_by(-code) if code < 0 else f"exit status {code}"
    message = f"{what} ({status})" + (f": {last}" if last else "")
    return (BackendUnavailable if limit_kill(code) else BackendError)(
        message,
        hint="run `unified doctor` (it checks the binary and its credentials); the app-server's stderr is in this "
        "error's details",
        details={"exit_code": code, "stderr_tail": tail[-4000:]},
    )


_RUN_ALONE = "run its command alone to see why it stops"
_SLOW = (
    "check that it answers initialize and tools/list (start it alone, e.g. with the MCP inspector); raise its "
    "timeout_s if it is only slow"
)
_MCP_STARTUP_FAILURES: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (
        re.compile(r"No such file or directory"),
        "its command was not found",
        "check its command (a path, or a program on the PATH codex runs with)",
    ),
    (
        re.compile(r"Permission denied"),
        "its command could not be run (permission denied)",
        "make it executable (`chmod +x`), or name the program that runs it",
    ),
    (
        re.compile(r"timed out awaiting (?P<what>[\w/]+) after (?P<after>[\w.]+)"),
        "it did not answer {what} within {after}",
        _SLOW,
    ),
    (
        re.compile(r"(?P<what>[\w/]+) pagination timed out after (?P<after>[\w.]+)"),  # the same, worded otherwise
        "it did not answer {what} within {after}",
        _SLOW,
    ),
    (
        re.compile(r"connection closed: initialize response"),
        "its process ended before it answered initialize",
        _RUN_ALONE,
    ),
    (
        re.compile(r"Transport closed|Broken pipe"),
        "its process ended (its connection closed) as codex connected, right after it answered initialize",
        _RUN_ALONE,
    ),
    (
        re.compile(r"unexpected server response: HTTP (?P<status>\d{3})(?::\s*(?P<body>.*?))?(?:, when |$)"),
        "it answered HTTP {status}{body}",
        "check the server, its URL and, for a 401 or 403, its headers",
    ),
    (
        re.compile(r"error sending request for url \((?P<url>[^)]*)\)"),
        "no connection to {url}",
        "check that the server is up and its URL",
    ),
)
"""What codex 0.171's `failureReason` of a failed MCP server says (after "MCP client for `NAME` failed to start: MCP
startup failed: "), measured against the real binary, as what happened and what to do. Its own text names Rust
types (`Send message error Transport [codex_rmcp_client::...<rmcp::transport::worker::WorkerTransport<...>>]`) and
says most of it twice."""
_RUST_PATH = re.compile(r"\s*\[[^\]]*::[^\]]*\]|\b\w+(?:::\w+)+(?:<\S*>)?")


def mcp_startup_failure(name: str, reason: str) -> str:
    """The warning's message for the run's MCP server `name` that codex says did not start for `reason`: which
    server, what happened, what to do, without the Rust type paths of codex's own text (a reason no row of
    `_MCP_STARTUP_FAILURES` reads is said with them cut out)."""
    for pattern, what, todo in _MCP_STARTUP_FAILURES:
        match = pattern.search(reason)
        if match is None:
            continue
        found = match.groupdict()
        if found.get("url"):
            found["url"] = display_url(found["url"])
        body = (found.get("body") or "").strip()
        found["body"] = f" ({clip(body, 200)})" if body else ""
        return f"MCP server {name!r} did not start: {what.format(**found)}; its tools are missing from this run; {todo}"
    said = reason.split("MCP startup failed:", 1)[-1]
    said = _RUST_PATH.sub("", said.split(", when ", 1)[0]).strip()
    return f"MCP server {name!r} did not start: {clip(said, 300)}; its tools are missing from this run"
