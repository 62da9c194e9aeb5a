"""unified.testing._cassettes: scrubbed recording, offline replay, unplayed interactions caught."""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import pytest
from vcr.errors import CannotOverwriteExistingCassetteException

from unified.testing._cassettes import RECORD_ENV, REDACTED, UNREACHABLE, cassette_endpoint, use_cassette
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import Fault, ModelTurn

SECRET = "AIza-very-secret-key"


def record(directory: Path, monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    monkeypatch.setenv(RECORD_ENV, "1")
    turns = [ModelTurn(text=f"answer {i}", method="generateContent") for i in range(calls)]
    with FakeGemini(turns) as server, use_cassette(directory, "demo"), httpx.Client() as client:
        for _ in range(calls):
            client.post(
                f"{server.base_url}/v1beta/models/m:generateContent?key={SECRET}",
                json={"contents": []},
                headers={"x-goog-api-key": SECRET, "Authorization": f"Bearer {SECRET}", "Cookie": "sid=1"},
            )
    monkeypatch.delenv(RECORD_ENV)


def test_recording_scrubs_secrets_and_says_where_it_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record(tmp_path, monkeypatch, 1)
    text = (tmp_path / "demo.yaml").read_text()
    assert SECRET not in text
    assert "sid=1" not in text
    assert REDACTED in text
    assert text.startswith("# Recorded ")
    assert "FakeGemini" in text.splitlines()[0]


def test_replay_needs_no_network_and_plays_everything(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record(tmp_path, monkeypatch, 2)
    with use_cassette(tmp_path, "demo"), httpx.Client() as client:
        for i in range(2):
            response = client.post("http://127.0.0.1:9/v1beta/models/m:generateContent?key=other", json={})
            assert response.json()["candidates"][0]["content"]["parts"][0]["text"] == f"answer {i}"


def test_unplayed_interactions_fail_the_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record(tmp_path, monkeypatch, 2)
    with pytest.raises(AssertionError, match="unplayed"), use_cassette(tmp_path, "demo"), httpx.Client() as client:
        client.post("http://127.0.0.1:9/v1beta/models/m:generateContent?key=x", json={})


def test_an_unrecorded_request_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record(tmp_path, monkeypatch, 1)
    refused = pytest.raises(CannotOverwriteExistingCassetteException, match="Can't play back this request")
    with refused, use_cassette(tmp_path, "demo"), httpx.Client() as client:
        client.post("http://127.0.0.1:9/v1beta/models/other:generateContent?key=x", json={})


def test_a_missing_cassette_says_how_to_record_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=RECORD_ENV), use_cassette(tmp_path, "absent"):
        pass


@pytest.mark.anyio
async def test_cassette_endpoint_is_unreachable_on_replay_and_the_script_when_recording(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(RECORD_ENV, raising=False)
    async with cassette_endpoint([ModelTurn(text="unused")]) as url:
        assert url == UNREACHABLE
    monkeypatch.setenv(RECORD_ENV, "1")
    turns = [ModelTurn(text="recorded answer", method="generateContent")]
    async with cassette_endpoint(turns, {0: Fault(kind="rate_limit")}) as url, httpx.AsyncClient() as client:
        assert url != UNREACHABLE
        key = {"x-goog-api-key": SECRET}
        first = await client.post(f"{url}/v1beta/models/m:generateContent", json={"contents": []}, headers=key)
        second = await client.post(f"{url}/v1beta/models/m:generateContent", json={"contents": []}, headers=key)
    assert first.status_code == 429
    assert second.status_code == 200
    assert "recorded answer" in second.text


def _record_prompt(directory: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv(RECORD_ENV, "1")
    turns = [ModelTurn(text="hello", method="generateContent")]
    with FakeGemini(turns) as server, use_cassette(directory, "prompted"), httpx.Client() as client:
        client.post(
            f"{server.base_url}/v1beta/models/m:generateContent",
            json={"contents": [{"role": "user", "parts": [{"text": text}]}]},
            headers={"x-goog-api-key": SECRET},
        )
    monkeypatch.delenv(RECORD_ENV)


def _send_swallowing_refusal(url: str, text: str) -> None:
    """What an adapter does: the refused request becomes an error of the run, not an exception here."""
    with httpx.Client() as client, contextlib.suppress(CannotOverwriteExistingCassetteException):
        client.post(url, json={"contents": [{"role": "user", "parts": [{"text": text}]}]})


def test_a_changed_prompt_is_reported_as_the_first_differing_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record_prompt(tmp_path, monkeypatch, "say hi")
    with use_cassette(tmp_path, "prompted"):  # the recorded prompt replays
        _send_swallowing_refusal("http://127.0.0.1:9/v1beta/models/m:generateContent", "say hi")
    expected = (
        r"request 1 \(POST /v1beta/models/m:generateContent\) differs from the recording: "
        r"prompt 'say bye' instead of the recorded 'say hi'"
    )
    with pytest.raises(AssertionError, match=expected), use_cassette(tmp_path, "prompted"):
        _send_swallowing_refusal("http://127.0.0.1:9/v1beta/models/m:generateContent", "say bye")


def test_a_changed_model_is_reported_as_a_different_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _record_prompt(tmp_path, monkeypatch, "say hi")
    expected = (
        r"request 1 \(POST /v1beta/models/other:generateContent\) differs from the recorded POST "
        r"/v1beta/models/m:generateContent: path"
    )
    with pytest.raises(AssertionError, match=expected), use_cassette(tmp_path, "prompted"):
        _send_swallowing_refusal("http://127.0.0.1:9/v1beta/models/other:generateContent", "say hi")
