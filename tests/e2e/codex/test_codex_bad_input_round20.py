"""Bad input round 20, codex behind FakeOpenAI: what the error event of a 429 and of a 5xx says (Codex 0.171 never
retries a 429, and ends a run on a 5xx: unified sets its provider's `request_max_retries` to 0), and a proxy variable
left out of the CLI's environment named in the error of a provider it could not reach."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.e2e.codex.conftest import run_codex
from tests.hang_guard import HANG_GUARD_S
from unified._execute import EventStream
from unified.events import ErrorEvent, Result, UnifiedEvent, WarningEvent
from unified.testing import CODEX_MODEL, FakeOpenAI, Fault, FunctionCall, ModelTurn
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PASSWORD = "pr0xy-secret-round20"


def _error(events: list[UnifiedEvent]) -> ErrorEvent:
    return next(e for e in events if isinstance(e, ErrorEvent))


async def test_a_429_says_rate_limited_retryable_and_why_no_wait_is_given(workspace: Path) -> None:
    """The server sends `Retry-After: 7` (and "try again in 7s" in its body): Codex passes on neither
    (docs/backends/codex.md), so the event says so instead of leaving the reader to look for `retry_after_s`.
    FAILED before (the message said nothing of the wait)."""
    async with FakeOpenAI([ModelTurn(text="never", fault=Fault(kind="rate_limit", retry_delay="7s"))]) as server:
        events = await run_codex(server, workspace)
        assert len(server.model_requests()) == 1  # never retried
    error = _error(events)
    assert (error.code, error.retryable, error.fatal) == ("rate_limited", True, True)
    assert "429 Too Many Requests" in error.message
    assert "Codex does not pass on how long the provider asked to wait (its Retry-After)" in error.message
    assert "wait, then run again" in error.message  # what to do
    assert "retry_after_s" not in error.details


@pytest.mark.parametrize(("kind", "said"), [("server_error", "an internal server error"), ("unavailable", "503")])
async def test_a_5xx_says_server_error_not_rate_limit_and_what_to_do(workspace: Path, kind: str, said: str) -> None:
    """Codex words a 500 "We're currently experiencing high demand, which may cause temporary errors.", which reads
    as a rate limit: the event says it was the server's error, retryable, and what to do. FAILED before (the message
    was Codex's words alone, the hint "the server had a problem; run again")."""
    async with FakeOpenAI([ModelTurn(text="never", fault=Fault(kind=kind))]) as server:
        events = await run_codex(server, workspace)
    error = _error(events)
    assert (error.code, error.retryable, error.fatal) == ("backend_error", True, True)
    assert f"had a server error ({said}), not a rate limit" in error.message, error.message
    assert "the fault is the provider's, not the request's: run again" in error.message
    assert "ExecuteParams.fallback" in error.message


async def test_a_proxy_left_out_is_named_in_the_error_of_a_provider_not_reached(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ALL_PROXY=socks4://user:PASSWORD@...` cannot be stood in for (`proxy.unforwardable`), so Codex ran without
    it and could not reach its provider: the error says which variable was left out and what to use instead.
    FAILED before (only a stderr tail, which this error does not carry, named it)."""
    with FakeOpenAI() as server:
        base_url = server.base_url
    monkeypatch.setenv("ALL_PROXY", f"socks4://user:{PASSWORD}@socks.invalid:1080")
    params = ExecuteParams(
        prompt="hello",
        backend="codex",
        model=CODEX_MODEL,
        cwd=workspace,
        backend_options={"base_url": base_url, "api_key": "fake-openai-key", "provider_timeout_s": 2.0},
    )
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params, strict=True) as stream:
            events = [event async for event in stream]
    error = _error(events)
    assert (error.code, error.retryable) == ("backend_unavailable", True)
    assert "note: ALL_PROXY carries credentials in a proxy URL unified cannot stand in for" in error.message
    assert "(proxy_not_forwarded): use an http://, https://, socks5:// or socks5h:// URL" in error.message
    assert error.details["proxy_problems"] == ["proxy_not_forwarded"]
    assert PASSWORD not in "".join(event.model_dump_json() for event in events)


async def test_a_cwd_deleted_during_the_run_is_a_warning_before_the_result(workspace: Path) -> None:
    """The model's first command deletes the run's own folder; its next fails in Codex's words ("Failed to create
    unified exec process: No such file or directory"). The caller is told why, once, before the result. FAILED before
    (a plain success, nothing said)."""
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="exec_command", args={"cmd": f"rm -rf {workspace}"})]),
        ModelTurn(function_calls=[FunctionCall(name="exec_command", args={"cmd": "echo hi > x.txt"})]),
        ModelTurn(text="done"),
    ]
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, approval_mode="yolo")
    [gone] = [e for e in events if isinstance(e, WarningEvent) and e.code == "cwd_gone"]
    assert f"the run's working directory {workspace} was deleted, moved or replaced during the run" in gone.message
    assert events.index(gone) == len(events) - 2  # just before the result
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
