"""FakeGemini refuses what Google's servers refuse, so a client that builds a bad request fails a test."""

from __future__ import annotations

import httpx
import pytest

from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import ModelTurn

KEY = {"x-goog-api-key": "k-0123456789"}
BEARER = {"Authorization": "Bearer ya29.t"}
STREAM = "publishers/google/models/m:streamGenerateContent"


@pytest.mark.parametrize(
    ("path", "headers", "status", "state", "says"),
    [
        (f"/v1beta1/projects/None/locations/global/{STREAM}", KEY, 403, "PERMISSION_DENIED", "project None"),
        (f"/v1beta1/projects/p/locations/None/{STREAM}", BEARER, 403, "PERMISSION_DENIED", "location None"),
        ("/v1beta1/projects/null/locations/us/interactions", BEARER, 403, "PERMISSION_DENIED", "project null"),
        (f"/v1beta1/projects/p/locations/us-central1/{STREAM}", {}, 401, "UNAUTHENTICATED", "OAuth 2 access token"),
        (f"/v1beta1/{STREAM}", BEARER, 401, "UNAUTHENTICATED", "missing required authentication credential"),
        ("/v1beta/models/m:streamGenerateContent", {}, 403, "PERMISSION_DENIED", "unregistered callers"),
        ("/v1beta/interactions", {}, 403, "PERMISSION_DENIED", "Please use API Key"),
    ],
)
def test_malformed_or_unauthenticated_requests_are_refused(
    path: str, headers: dict[str, str], status: int, state: str, says: str
) -> None:
    with FakeGemini([ModelTurn(text="never")]) as server:
        response = httpx.post(f"{server.base_url}{path}?alt=sse", json={}, headers=headers, timeout=30)
        assert response.status_code == status
        error = response.json()["error"]
        assert (error["code"], error["status"]) == (status, state)
        assert says in error["message"]
        assert server.requests[0].api_method == "refused"
        assert server.problems == [f"refused {path}"]
        with pytest.raises(AssertionError, match="refused"):
            server.assert_done()


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        (f"/v1beta1/projects/p/locations/us-central1/{STREAM}", BEARER),  # Vertex AI with ADC
        (f"/v1beta1/{STREAM}", KEY),  # Vertex AI express mode
        ("/v1beta/models/m:streamGenerateContent", KEY),  # Gemini API
    ],
)
def test_well_formed_requests_are_served(path: str, headers: dict[str, str]) -> None:
    with FakeGemini([ModelTurn(text="yes")]) as server:
        response = httpx.post(f"{server.base_url}{path}?alt=sse", json={}, headers=headers, timeout=30)
        assert response.status_code == 200
        assert "yes" in response.text
        server.assert_done()
