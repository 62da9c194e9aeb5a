"""The pytest plugin's fixture serves a script added after start."""

from __future__ import annotations

import httpx

from tests.hang_guard import HANG_GUARD_S
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import ModelTurn

pytest_plugins = ["unified.testing.pytest_plugin"]


def test_fixture_serves_added_turns(fake_gemini: FakeGemini) -> None:
    fake_gemini.add(ModelTurn(text="hi", method="generateContent"))
    url = f"{fake_gemini.base_url}/v1/models/m:generateContent"
    response = httpx.post(url, json={}, headers={"x-goog-api-key": "k"}, timeout=HANG_GUARD_S)
    assert response.json()["candidates"][0]["content"]["parts"] == [{"text": "hi"}]
    fake_gemini.assert_done()
