"""How a run ends: the `session/prompt` answer, a JSON-RPC error or the process's exit → the run's
status, usage and typed errors. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from unified._adapters.gemini_cli._translate import usage_from_prompt_result
from unified._binary.jsonrpc import RpcError, as_dict
from unified.backends import RunOutcome
from unified.errors import AuthError, BackendError, RateLimited, SessionNotFound
from unified.events import Usage

__all__ = ["EXIT_CODES", "PromptEnd", "error_from_acp", "error_from_exit", "explain_exit", "prompt_end"]

EXIT_CODES: dict[int, str] = {
    1: "general failure (see the error message)",
    41: "authentication failed: no usable credentials for the selected auth type",
    42: "invalid input (for example an unknown session for --resume)",
    44: "sandbox error",
    52: "configuration error (settings.json or a flag)",
    53: "the session hit its turn limit",
    54: "a tool failed fatally",
    55: "the workspace is not trusted",
    130: "cancelled (SIGINT)",
}


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
        raise error_from_acp(RpcError("session/prompt", answer["error"]), stderr_tail)
    result = as_dict(answer.get("result"))
    usage = usage_from_prompt_result(result)
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


def error_from_acp(exc: RpcError, stderr_tail: str = "") -> BackendError | AuthError | RateLimited | SessionNotFound:
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


def explain_exit(code: int | None) -> str:
    if code is None:
        return "the gemini process is still running"
    if code < 0:
        return f"killed by signal {-code}"
    return f"exit code {code}: {EXIT_CODES.get(code, 'unexpected exit')}"


def error_from_exit(code: int | None, stderr_tail: str, context: str) -> BackendError | AuthError:
    """A typed error for a gemini process that ended early; the message carries the stderr tail."""
    tail = stderr_tail.strip()
    message = f"{context}: {explain_exit(code)}" + (f"\nstderr (last lines):\n{tail}" if tail else "")
    details: dict[str, Any] = {"exit_code": code, "stderr_tail": tail}
    if code == 41:
        return AuthError(
            message,
            hint="set GEMINI_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI with project/location, or log in with `gemini`",
            details=details,
        )
    return BackendError(message, hint="see the stderr tail; rerun with the same options to reproduce", details=details)
