"""A create call handed to the SDK as its own request object (`sdk_request`) sends the very request the
keywords send: the same method, path, query and JSON body on the wire, through the real SDK and HTTP."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from google import genai

from unified._adapters.interactions._client import sdk_request
from unified._adapters.interactions._options import InteractionsOptions
from unified._adapters.interactions._turns import builtin_tools
from unified.testing import FakeGemini, ModelTurn
from unified.tools import ToolRuntime, tool_family

pytest.importorskip("google.genai._gaos.models")


def _tools(tmp_path: Path) -> list[dict[str, Any]]:
    runtime = ToolRuntime(tmp_path)
    declarations = runtime.declarations(tool_family("gemini-3-flash-preview"))
    options = InteractionsOptions(google_search=True, code_execution=True, url_context=True)
    return builtin_tools(options) + [{"type": "function", **d} for d in declarations]


PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n0000").decode("ascii")

BODIES: dict[str, dict[str, Any]] = {
    "a prompt": {"model": "gemini-3-flash-preview", "input": "go"},
    "a conversation carried over": {
        "model": "gemini-3-flash-preview",
        "input": [
            {
                "type": "user_input",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image", "data": PIXEL, "mime_type": "image/png"},
                ],
            },
            {"type": "thought", "summary": [{"type": "text", "text": "**Reading** the file"}], "signature": "c2ln"},
            {"type": "function_call", "id": "c1", "name": "read_file", "arguments": {"file_path": "a.txt", "limit": 3}},
            {"type": "function_result", "call_id": "c1", "name": "read_file", "result": {"output": "hello"}},
            {
                "type": "function_result",
                "call_id": "c2",
                "name": "run_shell_command",
                "result": {"error": "no"},
                "is_error": True,
            },
            {"type": "model_output", "content": [{"type": "text", "text": "done"}]},
            {"type": "user_input", "content": [{"type": "text", "text": "again, ünïcode"}]},
        ],
        "generation_config": {
            "tool_choice": {"allowed_tools": {"mode": "any", "tools": ["read_file"]}},
            "thinking_summaries": "auto",
            "thinking_level": "high",
        },
        "system_instruction": "be brief",
        "store": False,
    },
    "a chained turn": {
        "model": "gemini-3-flash-preview",
        "input": [
            {
                "type": "function_result",
                "call_id": "c1",
                "name": "read_file",
                "result": [{"type": "text", "text": "{}"}, {"type": "image", "data": PIXEL, "mime_type": "image/png"}],
            }
        ],
        "previous_interaction_id": "v1_abc",
        "continuation_token": "tok",
    },
    "a bare content list (the SDK makes it one user input)": {
        "model": "gemini-3-flash-preview",
        "input": [{"text": "hi"}],
    },
    "an agent": {"agent": "deep-research-pro-preview-12-2025", "input": "go", "background": True},
}


def _create(client: genai.Client, **kwargs: Any) -> str:
    """How the call ended: the server's answer read to its end, or the SDK's error (FakeGemini refuses a
    previous interaction it does not hold: the request was sent and recorded all the same)."""
    try:
        with client.interactions.with_streaming_response.create(**kwargs) as response:
            for _ in response.iter_lines():
                pass
    except Exception as exc:
        return type(exc).__name__
    return "answered"


@pytest.mark.parametrize("name", list(BODIES))
def test_the_request_object_sends_what_the_keywords_send(tmp_path: Path, name: str) -> None:
    body = {**BODIES[name], "stream": True}
    if name != "an agent":
        body["tools"] = _tools(tmp_path)
    kwargs = sdk_request(body)
    assert set(kwargs) == {"request"}  # the SDK's own object, not the keywords
    with FakeGemini() as fake:
        fake.add(ModelTurn(text="one"), ModelTurn(text="two"))
        client = genai.Client(api_key="test-key", http_options={"base_url": fake.base_url})
        assert _create(client, **body) == _create(client, **kwargs)
        by_keywords, by_request = fake.requests
    assert (by_request.method, by_request.path, by_request.query) == (
        by_keywords.method,
        by_keywords.path,
        by_keywords.query,
    )
    assert by_request.body == by_keywords.body
    assert by_request.headers.get("accept") == by_keywords.headers.get("accept") == "text/event-stream"


def test_a_body_the_sdk_would_refuse_goes_its_own_way() -> None:
    """What does not validate is handed over as keywords, so the SDK raises its own error, as before."""
    body = {"model": "m", "input": "go", "not_a_field": 1}
    assert sdk_request(body) is body
    assert sdk_request({"model": "m", "input": 42}) == {"model": "m", "input": 42}
