"""FakeGemini refuses a history the Gemini API refuses: calls and responses that do not pair up (HTTP 400)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import ModelTurn
from unified.testing._wire import CALL_COUNT_MISMATCH, RESPONSE_WITHOUT_CALL, history_problem

PROMPT = {"role": "user", "parts": [{"text": "go"}]}


def _call(call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"functionCall": {"id": call_id, "name": name, "args": {}}}


def _response(call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"functionResponse": {"id": call_id, "name": name, "response": {"output": "x"}}}


def _body(*contents: dict[str, Any]) -> dict[str, Any]:
    return {"contents": [PROMPT, *contents]}


VALID = [
    pytest.param(_body(), id="a prompt"),
    pytest.param(
        _body({"role": "model", "parts": [_call("a")]}, {"role": "user", "parts": [_response("a")]}),
        id="one call, one response",
    ),
    pytest.param(
        _body(
            {"role": "model", "parts": [{"text": "both"}, _call("a"), _call("b")]},
            {"role": "user", "parts": [_response("a")]},
            {"role": "user", "parts": [_response("b"), {"text": "an image beside it"}]},
        ),
        id="parallel calls answered in two consecutive user contents (one turn)",
    ),
    pytest.param(
        _body({"role": "model", "parts": [_call("mcp-1", "search"), _response("mcp-1", "search"), {"text": "found"}]}),
        id="a server-side call answered inside the model's own turn",
    ),
    pytest.param(
        _body(
            {"role": "model", "parts": [_call("a")]},
            {"role": "user", "parts": [_response("a")]},
            {"role": "model", "parts": [{"text": "done"}]},
            {"role": "user", "parts": [{"text": "again"}]},
        ),
        id="a later prompt",
    ),
    pytest.param({"contents": "hi"}, id="not a list: left to the server's other checks"),
]

INVALID = [
    pytest.param(
        _body({"role": "model", "parts": [_call("a")]}, {"role": "user", "parts": [_response("a"), _response("a")]}),
        CALL_COUNT_MISMATCH,
        id="answered twice (the gemini CLI 0.61's resumed sessions)",
    ),
    pytest.param(
        _body(
            {"role": "model", "parts": [_call("a")]},
            {"role": "user", "parts": [_response("a")]},
            {"role": "user", "parts": [_response("a")]},
        ),
        CALL_COUNT_MISMATCH,
        id="answered twice in two user contents",
    ),
    pytest.param(
        _body({"role": "model", "parts": [_call("a"), _call("b")]}, {"role": "user", "parts": [_response("a")]}),
        CALL_COUNT_MISMATCH,
        id="one of two calls unanswered",
    ),
    pytest.param(
        _body({"role": "model", "parts": [_call("a")]}, {"role": "user", "parts": [{"text": "next"}]}),
        CALL_COUNT_MISMATCH,
        id="a call answered by a prompt",
    ),
    pytest.param(_body({"role": "model", "parts": [_call("a")]}), CALL_COUNT_MISMATCH, id="a call at the end"),
    pytest.param(
        {"contents": [{"role": "user", "parts": [{"text": "go"}, _response("a")]}]},
        RESPONSE_WITHOUT_CALL,
        id="a response without its call (a denied call of the gemini CLI 0.61, resumed)",
    ),
    pytest.param(
        _body({"role": "model", "parts": [{"text": "hm"}]}, {"role": "user", "parts": [_response("a")]}),
        RESPONSE_WITHOUT_CALL,
        id="a response after a turn without calls",
    ),
]


@pytest.mark.parametrize("body", VALID)
def test_a_well_paired_history_passes(body: dict[str, Any]) -> None:
    assert history_problem(body) is None


@pytest.mark.parametrize(("body", "problem"), INVALID)
def test_a_malformed_history_is_named_as_the_api_names_it(body: dict[str, Any], problem: str) -> None:
    assert history_problem(body) == problem


def _post(server: FakeGemini, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        json=body,
        headers={"x-goog-api-key": "fake-gemini-key"},
    )


def test_the_server_answers_400_and_the_refusal_is_a_problem() -> None:
    duplicated = _body(
        {"role": "model", "parts": [_call("a")]}, {"role": "user", "parts": [_response("a"), _response("a")]}
    )
    with FakeGemini([ModelTurn(text="never sent")]) as server:
        answer = _post(server, duplicated)
        assert answer.status_code == 400
        assert answer.json() == {"error": {"code": 400, "message": CALL_COUNT_MISMATCH, "status": "INVALID_ARGUMENT"}}
        assert len(server.unplayed) == 1  # the refused request consumed no turn
        assert server.problems == [
            f"FakeGemini refused the request's history as the Gemini API would (400): {CALL_COUNT_MISMATCH}"
        ]
        with pytest.raises(AssertionError, match="refused the request's history"):
            server.assert_done()
        assert _post(server, _body()).status_code == 200  # a good request is still served


def test_the_check_can_be_turned_off() -> None:
    with FakeGemini([ModelTurn(text="served")], check_history=False) as server:
        assert _post(server, {"contents": [{"role": "user", "parts": [_response("a")]}]}).status_code == 200
        server.assert_done()
