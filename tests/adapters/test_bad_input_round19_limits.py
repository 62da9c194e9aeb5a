"""Bad input round 19: an agent binary killed by one of the machine's limits (SIGXFSZ under `ulimit -f`, SIGXCPU under
`ulimit -t`) ended the run as `backend_error`, as a crash of the binary would; the limit is where it runs, not the
binary's fault, so the run is now `backend_unavailable` (a fallback backend may take it, as for a full disk) and
the message still names the limit to raise. A crash (SIGSEGV) stays `backend_error`. The e2e proof under a real
`ulimit -f` is tests/e2e/cli/test_cli_bad_input_round5.py. And codex's 429, met on its one request, was said as
"exceeded retry limit" (no retry was made)."""

from __future__ import annotations

import signal
from collections.abc import Callable

import pytest

from unified._adapters.claude_code._outcome import error_from_exit as claude_exit
from unified._adapters.codex._outcome import error_from_exit as codex_exit
from unified._adapters.codex._outcome import error_from_turn_error as codex_turn_error
from unified._adapters.gemini_cli._outcome import error_from_exit as gemini_exit
from unified.errors import UnifiedError

EXITS: dict[str, Callable[[int | None, str, str], UnifiedError]] = {
    "gemini-cli": gemini_exit,
    "claude-code": claude_exit,
    "codex": codex_exit,
}
LIMITS = {
    signal.SIGXFSZ: "the file size limit (`ulimit -f`, RLIMIT_FSIZE): raise the limit",
    signal.SIGXCPU: "its CPU time limit (`ulimit -t`, RLIMIT_CPU): raise the limit",
}


@pytest.mark.parametrize("limit", list(LIMITS), ids=lambda s: s.name)
@pytest.mark.parametrize("backend", list(EXITS))
def test_a_binary_killed_by_a_limit_of_the_machine_is_backend_unavailable(backend: str, limit: signal.Signals) -> None:
    error = EXITS[backend](-limit, "some stderr line\n", "ended before its answer")
    assert error.code == "backend_unavailable", error.message
    assert f"killed by signal {int(limit)} ({limit.name}: " in error.message
    assert LIMITS[limit] in error.message
    assert error.details["exit_code"] == -limit


@pytest.mark.parametrize("backend", list(EXITS))
def test_a_crash_stays_a_backend_error(backend: str) -> None:
    error = EXITS[backend](-signal.SIGSEGV, "", "ended before its answer")
    assert error.code == "backend_error", error.message
    assert "SIGSEGV" in error.message


def test_a_codex_429_says_it_was_asked_once_not_that_retries_ran_out() -> None:
    """Codex 0.171 says "exceeded retry limit, last status: 429 Too Many Requests" for a 429 met on its first and only
    request (it never asks again after a 429): the message told of retries that were never made."""
    error = codex_turn_error(
        {
            "message": "exceeded retry limit, last status: 429 Too Many Requests",
            "codexErrorInfo": {"responseTooManyFailedAttempts": {"httpStatusCode": 429}},
        },
        where="the model provider at http://127.0.0.1:9/v1",
    )
    assert (error.code, error.retryable) == ("rate_limited", True)
    assert error.message == (
        "the model provider at http://127.0.0.1:9/v1: it answered 429 Too Many Requests to the one request Codex makes "
        "(Codex does not ask again after a 429); Codex does not pass on how long the provider asked to wait (its "
        "Retry-After)"
    )
    assert "exceeded retry limit" not in error.message
    assert error.hint == "wait, then run again (or resume the session: it kept the prompt)"
