"""Bad input round 20, claude-code (the stream-json protocol played by a fake CLI): the wait of a 429 or 5xx. The CLI
says how long it waits before each retry (`system/api_retry`, following the server's Retry-After); when the request
then fails for good, or a 429 asks more than `max_retry_delay_s`, that wait was in no field of the error (the second
said it in words only). Now it is `details.retry_after_s`, as the API backends give it (`unified._routing` reads
it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.adapters.claude_code.test_claude_code_run import init, result, run
from unified.events import ErrorEvent

pytestmark = pytest.mark.anyio


def retry(status: int, delay_ms: object, attempt: int = 1) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "api_retry",
        "attempt": attempt,
        "max_retries": 2,
        "retry_delay_ms": delay_ms,
        "error_status": status,
        "error": "rate_limit" if status == 429 else "server_error",
    }


def failed(status: int) -> dict[str, Any]:
    return result(is_error=True, api_error_status=status, result=f"API Error: {status}", terminal_reason="api_error")


@pytest.mark.parametrize(("status", "code"), [(429, "rate_limited"), (529, "backend_error"), (503, "backend_error")])
async def test_the_last_wait_the_cli_said_is_the_errors_retry_after_s(tmp_path: Path, status: int, code: str) -> None:
    """FAILED before (no `retry_after_s`)."""
    events, _ = await run(tmp_path, [[init(), retry(status, 1500), retry(status, 2500, attempt=2), failed(status)]])
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert (error.code, error.retryable) == (code, True)
    assert error.details["retry_after_s"] == 2.5


async def test_a_429_asking_more_than_max_retry_delay_s_carries_the_wait(tmp_path: Path) -> None:
    """FAILED before: "the server asks to wait 120 s, more than max_retry_delay_s (60 s)" in words only."""
    events, _ = await run(tmp_path, [[init(), retry(429, 120_000)]])
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "rate_limited"
    assert "the server asks to wait 120 s, more than max_retry_delay_s (60 s)" in error.message
    assert error.details["retry_after_s"] == 120.0


@pytest.mark.parametrize("delay", [None, "soon", -5, 10**400])
async def test_no_wait_or_one_no_json_holds_gives_no_retry_after_s(tmp_path: Path, delay: object) -> None:
    """Pin: a retry without a usable number (none, text, below 0, past a float's range) leaves the field out; a
    failure no retry came before has none either."""
    events, _ = await run(tmp_path, [[init(), retry(429, delay) if delay is not None else init(), failed(429)]])
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "rate_limited"
    assert "retry_after_s" not in error.details
