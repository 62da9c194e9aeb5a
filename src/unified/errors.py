"""Typed exceptions. Each says what happened and what to do about it.

Inside a run, adapters raise these; the stream guard turns them into an `error` event and a
`result(status="error")`, so a consumer iterating events never sees a traceback. Outside a run
(routing, session lookup, configuration), they reach the caller as exceptions. Either way their
message, hint and details carry no secret of the environment: they are redacted when the error is made.
"""

from __future__ import annotations

from typing import Any

from unified._redaction import redactor

__all__ = [
    "AmbiguousSession",
    "AuthError",
    "BackendError",
    "BackendUnavailable",
    "ConfigurationError",
    "CorruptSession",
    "ProtocolViolation",
    "RateLimited",
    "RoutingError",
    "RunStopped",
    "SessionError",
    "SessionInUse",
    "SessionNotFound",
    "SessionStoreUnavailable",
    "UnifiedError",
    "UnsupportedSessionFormat",
]


class UnifiedError(Exception):
    """Base of every error `unified` raises on purpose.

    `code` is stable and machine-readable; `hint` tells the reader what to do next.
    """

    code: str = "unified_error"
    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = None,
        code: str | None = None,
        retryable: bool | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        clean = redactor()
        self.message = clean(message)
        self.hint = None if hint is None else clean(hint)
        if code is not None:
            self.code = code
        if retryable is not None:
            self.retryable = retryable
        cleaned = clean.json(dict(details or {}))
        self.details: dict[str, Any] = cleaned if isinstance(cleaned, dict) else {}
        super().__init__(f"{self.message} ({self.hint})" if self.hint else self.message)

    def extend(self, more: str, **details: Any) -> None:
        """Add `more` to the message (after "; ") and `details` to the details, redacted as at construction, with
        `str(self)` in step: what a layer the error passes through learned of it (the retries tried, the backends
        that gave out before, a proxy left out of a binary's environment). In place: the traceback stays, and an
        error class whose constructor takes other arguments needs no rebuilding."""
        clean = redactor()
        self.message = f"{self.message}; {clean(more)}"
        cleaned = clean.json(details)
        self.details.update(cleaned if isinstance(cleaned, dict) else {})
        self.args = (f"{self.message} ({self.hint})" if self.hint else self.message,)


class ConfigurationError(UnifiedError):
    """The parameters or settings given cannot work together."""

    code = "configuration_error"


class BackendUnavailable(UnifiedError):
    """A backend cannot run here: a missing binary, a missing SDK, no usable credentials."""

    code = "backend_unavailable"


class RoutingError(UnifiedError):
    """No backend offers what the run requires with the credentials present."""

    code = "no_backend"


class AuthError(UnifiedError):
    """The backend refused the credentials (HTTP 401/403, CLI exit 41)."""

    code = "auth_error"


class RateLimited(UnifiedError):
    """The backend said to slow down (HTTP 429) and the retries ran out."""

    code = "rate_limited"
    retryable = True


class BackendError(UnifiedError):
    """The backend failed: an API error, a crashed subprocess, a broken stream."""

    code = "backend_error"


class SessionError(UnifiedError):
    """A stored session could not be found, told apart, read or used; the subclasses say which."""

    code = "session_error"


class SessionNotFound(SessionError):
    """No session matches the reference; the message names the backends searched (`unified sessions list`)."""

    code = "session_not_found"


class AmbiguousSession(SessionError):
    """The reference matches several sessions; the message lists them by whole id: give a longer prefix."""

    code = "ambiguous_session"


class CorruptSession(SessionError):
    """A stored session cannot be read; the file is left exactly as it is."""

    code = "corrupt_session"


class UnsupportedSessionFormat(SessionError):
    """A stored session was written by a newer `unified`; it is left exactly as it is."""

    code = "unsupported_session_format"


class SessionInUse(SessionError):
    """Another run holds the session's lease."""

    code = "session_in_use"


class SessionStoreUnavailable(SessionError):
    """The configured session store cannot be reached; nothing falls back to another store."""

    code = "session_store_unavailable"


class ProtocolViolation(UnifiedError):
    """A backend broke an invariant of the event stream: a bug in `unified`, please report it."""

    code = "protocol_violation"


class RunStopped(UnifiedError):
    """The caller's permission answer stopped the run (`UserInputResponse.stop_run`).

    Not a failure: the stream guard ends the run with `result(status="interrupted")` and no `error`.
    """

    code = "stopped_by_user"
