"""The claude CLI's words for a request that made no connection → `backend_unavailable` naming the URL; a
connection that dropped once open, or a timeout, stays `stream_interrupted` (docs/protocol.md, "Codes")."""

from __future__ import annotations

import pytest

from unified._adapters.claude_code._outcome import DEFAULT_BASE_URL, error_from_result


def _result(text: str) -> dict[str, object]:
    """A `result` line as the CLI (2.1.332) ends a turn whose request failed without an HTTP status."""
    return {"type": "result", "subtype": "success", "is_error": True, "api_error_status": None, "result": text}


@pytest.mark.parametrize(
    "text",
    [
        "API Error: Connection refused \u2014 a firewall or proxy may be blocking it (ECONNREFUSED)",
        "API Error: Can't reach the API server \u2014 check your internet or DNS (ENOTFOUND)",
        "API Error: No internet route \u2014 check your connection or VPN (EHOSTUNREACH)",
        "API Error: Couldn't connect through your proxy (ERR_PROXY_TUNNEL) \u2014 the proxy refused the tunnel",
        "API Error: Unable to connect to API: SSL certificate verification failed (UNABLE_TO_GET_ISSUER_CERT_LOCALLY)",
        "API Error: Unable to connect to API. Check your internet connection",
    ],
)
def test_no_connection_is_backend_unavailable_naming_the_url(text: str) -> None:
    error = error_from_result(_result(text), "http://u:pw-0123@gateway.example:8443/anthropic?key=abc")
    assert (error.code, error.retryable) == ("backend_unavailable", True)
    assert "http://gateway.example:8443/anthropic" in error.message
    assert "pw-0123" not in str(error)
    assert "key=abc" not in str(error)
    assert "ANTHROPIC_BASE_URL" in (error.hint or "")


def test_without_a_base_url_the_default_is_named() -> None:
    error = error_from_result(_result("API Error: Connection refused (ECONNREFUSED)"))
    assert error.code == "backend_unavailable"
    assert DEFAULT_BASE_URL in error.message


@pytest.mark.parametrize(
    "text",
    [
        "API Error: Connection dropped (ECONNRESET)",
        "API Error: Connection closed before the response finished",
        "API Error: Request timed out",
    ],
)
def test_a_connection_that_was_made_stays_stream_interrupted(text: str) -> None:
    error = error_from_result(_result(text), "http://127.0.0.1:9")
    assert (error.code, error.retryable) == ("stream_interrupted", True)
