"""How a Claude Code turn fails: its `result` line, an `api_retry`, or the process's exit → typed errors. Pure.

Every API failure ends the CLI's turn with `result.subtype: "success"` and `is_error: true`;
the HTTP status is `api_error_status` (null for a broken connection or a timeout) and the text the
CLI shows is `result`. The codes, as on every backend: 429 `rate_limited` (retryable), 529 and 5xx
`backend_error` (retryable), 401/403 `auth_error`, 400/413 `bad_request`, 404 `model_not_found`,
a dropped or timed-out stream `stream_interrupted` (retryable); "Not logged in" (no credentials at
all) `auth_error`; a `--resume` the CLI could not find `session_not_found`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from unified.errors import AuthError, BackendError, RateLimited, SessionNotFound, UnifiedError

__all__ = ["error_from_exit", "error_from_result", "error_from_status", "status_of_result"]


def _text(raw: Mapping[str, Any]) -> str:
    errors = raw.get("errors")
    if isinstance(errors, list) and errors:
        return "; ".join(str(e) for e in errors)
    text = raw.get("result")
    return str(text) if text else f"the claude CLI ended the turn with {raw.get('subtype')}"


def error_from_status(status: int | None, message: str, *, retries: int = 0) -> UnifiedError:
    """The typed error of an API failure with this HTTP status (None: no answer at all)."""
    tried = f" (after {retries} retries)" if retries else ""
    details: dict[str, Any] = {"status": status} if status is not None else {}
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


def error_from_result(raw: Mapping[str, Any]) -> UnifiedError:
    """The typed error of a `result` that reports a failure."""
    message = _text(raw)
    status = raw.get("api_error_status")
    if isinstance(status, int) and not isinstance(status, bool):
        return error_from_status(status, message)
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
        return error_from_status(None, message)
    return BackendError(f"the claude CLI failed: {message}", details={"subtype": str(raw.get("subtype"))})


def error_from_exit(code: int | None, stderr_tail: str, what: str) -> BackendError:
    """The error of a CLI that ended (or closed its output) before the run was over."""
    if code is None:
        how = "closed its output"
    elif code < 0:
        how = f"was killed by signal {-code}"
    else:
        how = f"exited with code {code}"
    tail = stderr_tail.strip()
    last = tail.splitlines()[-1] if tail else ""
    return BackendError(
        f"the claude CLI {how} {what}" + (f": {last}" if last else ""),
        hint="run `unified doctor`; the CLI's stderr is in this error's details",
        details={"exit_code": code, "stderr_tail": tail[-4000:]},
    )
