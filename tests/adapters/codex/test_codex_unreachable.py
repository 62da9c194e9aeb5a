"""Codex's retry notifications that say it could not connect at all, told apart from a stream that broke after the
server answered (docs/protocol.md, "Codes"; the run's bound is tested on the real binary in
tests/e2e/conversations/test_unreachable_provider.py)."""

from __future__ import annotations

import pytest

from unified._adapters.codex._outcome import connect_failure, provider_down


@pytest.mark.parametrize(
    ("message", "details"),
    [
        ("Reconnecting... waiting for network", "Connection failed: error sending request"),
        ("Reconnecting... 1/5", "error sending request: client error (Connect): tcp connect error: Connection refused"),
        ("Reconnecting... 2/5", "dns error: failed to lookup address information"),
    ],
)
def test_a_retry_that_could_not_connect(message: str, details: str) -> None:
    assert connect_failure(message, details)


@pytest.mark.parametrize(
    ("message", "details"),
    [
        ("Reconnecting... 1/5", "stream disconnected before completion: idle timeout waiting for SSE"),
        ("Reconnecting... 2/5", "unexpected status 503 Service Unavailable"),
        ("Reconnecting... 3/5", None),
    ],
)
def test_a_retry_after_the_server_answered(message: str, details: str | None) -> None:
    assert not connect_failure(message, details)


def test_the_error_names_the_url_without_its_secrets() -> None:
    error = provider_down("http://u:pw-0123@127.0.0.1:9/v1?key=abc", "Reconnecting... waiting for network", None, 2)
    assert (error.code, error.retryable) == ("backend_unavailable", True)
    assert "http://127.0.0.1:9/v1" in error.message
    assert "pw-0123" not in str(error)
    assert "key=abc" not in str(error)
    assert error.details["attempts"] == 2
