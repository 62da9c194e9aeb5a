"""How a `session/prompt` ends: its answer → the run's status, usage and typed errors. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from unified._adapters.gemini_cli._translate import usage_of_prompt_result
from unified._adapters.gemini_cli._transport import AcpRequestError, as_dict
from unified.backends import RunOutcome
from unified.errors import AuthError, BackendError, RateLimited, SessionNotFound
from unified.events import Usage


@dataclass(frozen=True, slots=True)
class PromptEnd:
    """What the prompt's answer says: the outcome, the usage to add and a warning to emit first."""

    outcome: RunOutcome
    usage: Usage | None = None
    warning: tuple[str, str] | None = None
    """`(code, message)` of a `WarningEvent`, for an answer that succeeded with a caveat."""


def prompt_end(answer: dict[str, Any], short_id: str, stderr_tail: str = "") -> PromptEnd:
    """The run's end from the JSON-RPC answer to `session/prompt`; an error answer raises its typed error.

    The usage is the CLI's report; the stream guard estimates the zeros Gemini 2.5 Flash may report.
    """
    if isinstance(answer.get("error"), dict):
        raise error_from_acp(AcpRequestError("session/prompt", answer["error"]), stderr_tail)
    result = as_dict(answer.get("result"))
    usage = usage_of_prompt_result(result)
    stop = result.get("stopReason")
    if stop == "cancelled":
        return PromptEnd(RunOutcome(status="cancelled", short_id=short_id), usage)
    if stop == "max_turn_requests":
        return PromptEnd(RunOutcome(status="max_turns", short_id=short_id), usage)
    if stop == "refusal":
        return PromptEnd(RunOutcome(status="error", error="the model refused to answer", short_id=short_id), usage)
    warning = None
    if stop == "max_tokens":
        warning = ("finish_max_tokens", "the answer was cut at the model's output token limit")
    return PromptEnd(RunOutcome(status="success", short_id=short_id), usage, warning)


def error_from_acp(
    exc: AcpRequestError, stderr_tail: str = ""
) -> BackendError | AuthError | RateLimited | SessionNotFound:
    """A JSON-RPC error answer as the typed error a caller can act on (with the CLI's stderr tail)."""
    reason = exc.data.get("details") if isinstance(exc.data, dict) else None  # e.g. why set_mode was refused
    text = f"{exc.method}: {exc.message}" + (f": {reason}" if isinstance(reason, str) and reason else "")
    details = {"code": exc.code, "data": exc.data, "stderr_tail": stderr_tail.strip()}
    if exc.code in (401, 403) or "authenticat" in exc.message.lower():
        return AuthError(text, hint="check GEMINI_API_KEY / Vertex settings / `gemini` login", details=details)
    if exc.code == 429 or "RESOURCE_EXHAUSTED" in exc.message:
        return RateLimited(text, hint="wait and retry, or use another key or project", details=details)
    if exc.method == "session/load":
        return SessionNotFound(text, hint="run `unified sessions list --backend gemini-cli`", details=details)
    if exc.method == "session/set_mode":  # the CLI refuses yolo/auto_edit in a folder it does not trust
        return BackendError(
            text,
            hint="the CLI allows this approval mode only in a trusted folder: trust it in `gemini` (/permissions) "
            "or set security.folderTrust.enabled to false in the CLI's settings.json; its stderr has more",
            details=details,
        )
    return BackendError(text, hint="see the message; the CLI's stderr has more", details=details)
