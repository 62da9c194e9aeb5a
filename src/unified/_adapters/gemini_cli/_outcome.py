"""How a run ends: the `session/prompt` answer, a JSON-RPC error or the process's exit → the run's
status, usage and typed errors. Pure."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from unified._adapters.gemini_cli._translate import usage_from_prompt_result
from unified._binary.jsonrpc import RpcError, as_dict
from unified._binary.process import killed_by, limit_kill
from unified._internal.reach import provider_unreachable
from unified._redaction import clip
from unified.backends import RunOutcome
from unified.errors import AuthError, BackendError, BackendUnavailable, RateLimited, SessionNotFound, UnifiedError
from unified.events import Usage

__all__ = [
    "AUTH_HINT",
    "DEFAULT_BASE_URL",
    "EXIT_CODES",
    "TRUST_ADVICE",
    "PromptEnd",
    "RetryNote",
    "error_from_acp",
    "error_from_exit",
    "error_from_result",
    "explain_exit",
    "no_answer",
    "prompt_end",
    "provider_down",
    "retries_spent",
    "retry_note",
    "wait_too_long",
]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
"""Where the CLI sends its model requests when GOOGLE_GEMINI_BASE_URL is not set (an API key's service)."""

TRUST_ADVICE = (
    "trust it in `gemini` (/permissions) or set security.folderTrust.enabled to false in the CLI's settings.json"
)
"""What to change for yolo or auto_edit in a folder the CLI does not trust (it allows them only in a trusted one)."""

EXIT_CODES: dict[int, str] = {
    1: "general failure (see the error message)",
    41: "authentication failed: no usable credentials for the selected auth type",
    42: "invalid input (for example an unknown session for --resume)",
    44: "sandbox error",
    52: "configuration error (settings.json or a flag)",
    53: "the session hit its turn limit",
    54: "a tool failed fatally",
    55: f"the workspace is not trusted, and the CLI allows yolo and auto_edit only in a trusted folder: {TRUST_ADVICE}",
    78: "unified's key loader (key_loader.cjs, preloaded by node) could not read the credentials unified piped it",
    130: "cancelled (SIGINT)",
}


@dataclass(frozen=True, slots=True)
class PromptEnd:
    """What the prompt's answer says: the outcome and the usage to add."""

    outcome: RunOutcome
    usage: Usage | None = None


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
    if stop == "max_tokens":
        # 0.61's ACP agent says it for one thing only, its `ContextWindowWillOverflow`: the next request (the
        # prompt, its images, the session's history) counts more tokens than the model's context window, so the
        # CLI never sent it. A real cut at the output limit ends as `end_turn`.
        raise UnifiedError(
            "the request is larger than the model's context window: the Gemini CLI counted its tokens and did "
            "not send it (the prompt, its images and the session's history together)",
            code="bad_request",
            hint="send a shorter prompt or fewer images, or start a new session instead of resuming a long one",
        )
    return PromptEnd(RunOutcome(status="success", short_id=short_id), usage)


def no_answer(url: str, *, shown: bool) -> UnifiedError:
    """The error of a prompt the CLI ended well although the model's last call got no answer, even on the CLI's
    retries (`_run`): cut off after `shown` text, or no chunk at all (an empty stream). `gemini -p` fails it
    ("Model stream ended without a finish reason"); over ACP the CLI ends it as answered."""
    what = (
        "the model's answer was cut off and the Gemini CLI's retries got no answer"
        if shown
        else "the model answered with nothing (an empty stream, also on the Gemini CLI's retries): no text, no call"
    )
    return UnifiedError(
        f"the Gemini API at {url}: {what}",
        code="stream_interrupted",
        retryable=True,
        hint="run again (retry=True answers the same prompt); if it keeps happening, check the model provider",
    )


_NOT_FOUND = re.compile(
    r"is not found for API version|models/\S+ is not found|model .* (?:not found|does not exist)", re.I
)
_QUOTA = re.compile(r"RESOURCE_EXHAUSTED|quota exceeded|exceeded your current quota", re.I)
_KEY_MISSING = re.compile(r"API key is missing|GEMINI_API_KEY", re.I)
_ADC_MISSING = re.compile(r"default credentials|GOOGLE_CLOUD_PROJECT|GOOGLE_APPLICATION_CREDENTIALS", re.I)
AUTH_HINT = (
    "set GEMINI_API_KEY (GOOGLE_API_KEY works too: unified hands it to the CLI); for Vertex AI or a Google login, "
    "select it in `gemini` (/auth sets security.auth.selectedType: the CLI reads no GOOGLE_GENAI_USE_* variable over "
    "ACP) with GOOGLE_CLOUD_PROJECT, GOOGLE_CLOUD_LOCATION and Application Default Credentials; `unified doctor` "
    "says what it sees"
)


_CUT = re.compile(r"terminated|other side closed|socket hang up", re.I)
"""The whole message of a JSON-RPC error (code 500) of 0.61 for a model stream whose connection dropped once open
(node's fetch: `TypeError: terminated`), which it does not retry: no HTTP 500 came. Its retry loop's word for the
same break is `stream_interrupted` too (`retries_spent`)."""


_NOT_JSON = re.compile(
    r"Incomplete JSON segment|is not valid JSON|Unexpected end of JSON input|\b(?:in|after) JSON at position \d", re.I
)
"""0.61's JSON-RPC error (code 500) for an HTTP 200 answer its stream parser could not read: an event cut in the
middle, or a page that is no JSON (a proxy's). No HTTP 500 came; the same break as `_CUT`, said for what it is.
An event cut in the middle of the stream (not at its end) fails node's `JSON.parse` with its own words, "Unterminated
string in JSON at position 62", "Expected ',' or '}' after property value in JSON at position 9" (bad input round
15: `backend_error` "the Gemini API failed (500) ... a server-side problem", as the round-5 ones were)."""


def _http_error(exc: RpcError) -> tuple[int, str | None, str, Any] | None:
    """The Gemini API's HTTP error inside a JSON-RPC error of the CLI: (status code, status, message, body).

    0.61 passes a 4xx on as the JSON-RPC error's code with the API's whole error body as its message
    (`{"error": {"code": 400, "message", "status"}}`), a missing model as code 500 with the API's message,
    and a quota it stopped retrying as its text.
    """
    try:
        body = json.loads(exc.message)
    except (ValueError, RecursionError):
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        status = error.get("status")
        return int(error["code"]), status if isinstance(status, str) else None, str(error.get("message") or ""), body
    if _NOT_FOUND.search(exc.message):
        return 404, "NOT_FOUND", exc.message, exc.data
    if _QUOTA.search(exc.message):
        return 429, "RESOURCE_EXHAUSTED", exc.message, exc.data
    if 400 <= exc.code < 600:
        return exc.code, None, exc.message, exc.data
    return None


def error_from_acp(exc: RpcError, stderr_tail: str = "") -> UnifiedError:
    """A JSON-RPC error answer as the typed error a caller can act on: the same codes as the API backends for
    the API's HTTP errors (`unified._internal.api_errors`), `auth_error` naming what to set for missing
    credentials; the CLI's own message and its stderr tail (redacted) in `details`."""
    reason = exc.data.get("details") if isinstance(exc.data, dict) else None  # e.g. why set_mode was refused
    text = f"{exc.method}: {exc.message}" + (f": {reason}" if isinstance(reason, str) and reason else "")
    details: dict[str, Any] = {
        "method": exc.method,
        "code": exc.code,
        "data": exc.data,
        "cli_message": exc.message,
        "stderr_tail": stderr_tail.strip(),
    }
    if _CUT.fullmatch(exc.message.strip()):
        return BackendError(
            f"{exc.method}: the Gemini API's answer broke off (the connection dropped mid-stream: {exc.message!r})",
            code="stream_interrupted",
            retryable=True,
            hint="run again (retry=True answers the same prompt); a failover_on backend takes over",
            details=details,
        )
    if _NOT_JSON.search(exc.message):
        return BackendError(
            f"{exc.method}: the answer from the Gemini API is not its JSON ({exc.message!r}): an event cut in the "
            "middle, or something other than the Gemini API answered (a proxy's page)",
            code="stream_interrupted",
            retryable=True,
            hint="run again (retry=True answers the same prompt); if it persists, check GOOGLE_GEMINI_BASE_URL",
            details=details,
        )
    http = _http_error(exc)
    if http is not None:
        from unified._internal.api_errors import error_from_status  # imports httpx: only when an error came

        code, status, message, body = http
        typed = error_from_status(code, status, message, body=body, model=None)
        return type(typed)(
            f"{exc.method}: {typed.message}",
            hint=typed.hint,
            code=typed.code,
            retryable=typed.retryable,
            details={**details, **typed.details},
        )
    if _KEY_MISSING.search(exc.message) or _ADC_MISSING.search(exc.message) or "authenticat" in exc.message.lower():
        return AuthError(f"{text}: the Gemini CLI found no usable credentials", hint=AUTH_HINT, details=details)
    if exc.method == "session/load":
        return SessionNotFound(text, hint="run `unified sessions list --backend gemini-cli`", details=details)
    if exc.method == "session/set_mode":  # the CLI refuses yolo in a folder it does not trust
        return BackendError(
            text,
            hint=f"the CLI allows this approval mode only in a trusted folder: {TRUST_ADVICE}; its stderr has more",
            details=details,
        )
    return BackendError(text, hint="see the message and details.stderr_tail (the CLI's stderr)", details=details)


def explain_exit(code: int | None) -> str:
    if code is None:
        return "the gemini process is still running"
    if code < 0:
        return killed_by(-code)
    return f"exit code {code}: {EXIT_CODES.get(code, 'unexpected exit')}"


def error_from_exit(code: int | None, stderr_tail: str, context: str) -> BackendError | AuthError | BackendUnavailable:
    """A typed error for a gemini process that ended early; the message carries the stderr tail."""
    tail = stderr_tail.strip()
    message = f"{context}: {explain_exit(code)}" + (f"\nstderr (last lines):\n{tail}" if tail else "")
    details: dict[str, Any] = {"exit_code": code, "stderr_tail": tail}
    if code == 41:
        return AuthError(message, hint=AUTH_HINT, details=details)
    if limit_kill(code):
        return BackendUnavailable(message, hint="raise the limit its signal names (see the message)", details=details)
    return BackendError(message, hint="see the stderr tail; rerun with the same options to reproduce", details=details)


RATE_LIMIT_NOTES = (
    "request a quota increase through",  # an API key's (AI Studio) or Vertex AI's
    "Possible quota limitations in place",  # any other login's
)
"""What 0.61's `parseAndFormatApiError` appends, by auth type, to the text of an API error of status 429: in a
headless run's `result` (its error `type` is `unknown`) the one sign that the quota ended the run."""
_RETRY_AFTER = re.compile(r"Suggested retry after (\d+(?:\.\d+)?)s")


def error_from_result(error: dict[str, Any], exit_code: int | None) -> UnifiedError:
    """The typed error of a headless run's `result(status=error)`: a quota error is `rate_limited`, as over ACP
    and on the API backends (a caller's retry or failover acts on the code); any other is `backend_error`."""
    message = str(error.get("message") or "unknown error")
    text = f"gemini failed: {message} ({error.get('type') or 'error'})"
    details: dict[str, Any] = {"exit_code": exit_code, "error": error}
    if _QUOTA.search(message) or any(note in message for note in RATE_LIMIT_NOTES):
        delay = _RETRY_AFTER.search(message)
        if delay is not None and not math.isfinite(float(delay.group(1))):  # 400 digits: infinity
            delay = None
        if delay is not None:
            details["retry_after_s"] = float(delay.group(1))
        hint = f"wait {delay.group(1)}s and run again" if delay else "wait and run again, or check your quota"
        return RateLimited(text, hint=hint, details=details)
    return BackendError(
        text,
        hint="see the message; `gemini-client-error-*.json` in the CLI's temp dir (unified's cache folder "
        "`gemini-cli-tmp`, where the newest 20 of the last week are kept) has the request",
        details=details,
    )


_RETRY_LINE = re.compile(r"^\[[^\]]*\] \[WARN\] (?P<text>Attempt (?P<attempt>\d+) failed\b.*)$")
"""The first line of the entry the CLI's retry loop (`retryWithBackoff`, 0.61) writes to its debug log before each
wait: `[<time>] [WARN] Attempt 2 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending
request` (a status, when the server answered: `Attempt 1 failed with status 503. Retrying with backoff...`)."""
_CONNECT_FAILURE = re.compile(
    r"fetch failed|ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR_CONNECT_TIMEOUT|ERR_SSL_|"
    r"CERT_|UNABLE_TO_VERIFY|SELF_SIGNED"
)
"""What no connection at all looks like in that line: undici's `fetch failed` (its error for a request that got no
response: refused, a name that does not resolve, a failed TLS handshake) or a connect error's code. A stream that
broke after the server answered says `terminated` or `incomplete json segment` instead; an HTTP error, its status."""


@dataclass(frozen=True, slots=True)
class RetryNote:
    """One failed attempt of the CLI's retry loop, as its debug log tells it."""

    attempt: int
    text: str
    """The line's text (the CLI's words), from "Attempt N failed"."""
    connect_failure: bool
    """No connection could be made (`_CONNECT_FAILURE`)."""
    status: int | None = None
    """The HTTP status the server answered with, when it answered one."""
    wait_s: float | None = None
    """How long the CLI waits before it asks again, when it says (`Retrying after <n>ms`, a quota error's)."""
    asked_s: float | None = None
    """The wait the server asked for (its `RetryInfo`, which the CLI words `Suggested retry after <n>s`)."""


def retry_note(entry: str) -> RetryNote | None:
    """The retry an entry of the CLI's debug log reports, if it reports one: its first line, and the lines that
    continue it (a quota error's message runs on to `Suggested retry after 9s.. Retrying after 10390ms...`)."""
    first, _, rest = entry.partition("\n")
    match = _RETRY_LINE.match(first)
    if match is None:
        return None
    text = " ".join([match.group("text").strip(), *(line.strip() for line in rest.splitlines() if line.strip())])
    status = _status_of(text)
    failed = status is None and bool(_CONNECT_FAILURE.search(text))
    wait = _WAIT.search(text)
    asked = _ASKED.search(text)
    return RetryNote(
        int(match.group("attempt")),
        text,
        failed,
        status,
        wait_s=_seconds(wait[1], 1000) if wait is not None else None,
        asked_s=_seconds(asked[1], 1) if asked is not None else None,
    )


_WAIT = re.compile(r"Retrying after (\d+(?:\.\d+)?)ms")
_ASKED = re.compile(r"Suggested retry after (\d+(?:\.\d+)?)s")


def _seconds(number: str, per_second: int) -> float | None:
    seconds = float(number) / per_second
    return seconds if math.isfinite(seconds) else None  # 400 digits make a float infinity


_STATUSES: tuple[tuple[re.Pattern[str], int | None], ...] = (
    (re.compile(r"^Attempt \d+ failed with status (\d{3})\b"), None),
    (re.compile(r"^Attempt \d+ failed with 429 error\b"), 429),
    (re.compile(r"^Attempt \d+ failed with 5xx error\b"), 500),
    (re.compile(r'^Attempt \d+ failed: \{\s*"error":\s*\{\s*"code":\s*(\d{3})\b'), None),
    (re.compile(r"^Attempt \d+ failed: "), 429),
)
"""The HTTP status each of the retry loop's lines (0.61) tells: its number, or the one its words stand for. `failed:
<message>` is its quota error (`RetryableQuotaError`, a 429 it retries after the server's delay; the message may
run over several lines, `. Retrying after <n>ms...` last), or, on the last attempt (`. Max attempts reached`), a
5xx the server answered, whose message is the API's error body (`{"error":{"code":500,...}}`): its code, else a
persistent 500 read as an exhausted quota (`rate_limited`, which fails over by default where other backends
give `backend_error`)."""


def _status_of(text: str) -> int | None:
    for pattern, status in _STATUSES:
        found = pattern.search(text)
        if found is not None:
            return status if status is not None else int(found[1])
    return None


def retries_spent(note: RetryNote) -> UnifiedError:
    """The typed error of a request that failed `note.attempt` times, the last as `note` says (an HTTP status, or a
    broken stream), when the run's `max_retries` are spent: retryable, as the failure was."""
    from unified._internal.api_errors import error_from_status  # imports httpx: only when an error came

    said = f"the gemini CLI's attempt {note.attempt} failed, the last the run allows: {clip(note.text, 300)!r}"
    if note.status is not None:
        return error_from_status(note.status, None, said, body=None, model=None)
    return BackendError(
        f"the Gemini API's answer broke off {note.attempt} times: {said}",
        code="stream_interrupted",
        retryable=True,
        hint="run again; a failover_on backend takes over",
    )


def wait_too_long(note: RetryNote, limit: float) -> RateLimited:
    """The error of a retry the CLI would make only after a wait over the run's `max_retry_delay_s` (`limit`): the
    wait the server asked for, else the CLI's own, as `retry_after_s`."""
    wait = note.asked_s if note.asked_s is not None else note.wait_s
    return RateLimited(
        f"the Gemini API rate limit was hit and the gemini CLI would wait {wait:g} s before it asks again, more than "
        f"max_retry_delay_s ({limit:g} s): {clip(note.text, 300)!r}",
        hint=f"wait {wait:g} s and run again, or raise max_retry_delay_s",
        details={"http_status": 429, "retry_after_s": wait},
    )


def provider_down(url: str, note: RetryNote, attempts: int) -> BackendUnavailable:
    """The `backend_unavailable` error of a provider the CLI failed to connect to `attempts` times in a row."""
    return provider_unreachable(
        "the Gemini API",
        url,
        f"the gemini CLI says {clip(note.text, 300)!r}",
        check="GOOGLE_GEMINI_BASE_URL (or the CLI's proxy settings)",
        attempts=attempts,
    )
