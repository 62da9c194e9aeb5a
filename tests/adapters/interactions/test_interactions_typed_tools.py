"""The tools handed to the SDK as its own objects (`typed_tools`) make the very request body the dicts make."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from unified._adapters.interactions._client import typed_tools
from unified._adapters.interactions._options import InteractionsOptions
from unified._adapters.interactions._turns import builtin_tools
from unified.tools import ToolRuntime, tool_family

models = pytest.importorskip("google.genai._gaos.models")
utils = pytest.importorskip("google.genai._gaos.utils")


def _sent(body: dict[str, Any]) -> Any:
    """The JSON the SDK sends for `body` (its own reading and serialisation of a create call)."""
    request = utils.unmarshal({"body": {**body, "stream": True}}, models.CreateInteractionRequest)
    serialized = utils.serialize_request_body(request.body, False, False, "json", models.CreateInteractionRequestBody)
    return json.loads(serialized.content)


def _body(tmp_path: Path) -> dict[str, Any]:
    runtime = ToolRuntime(tmp_path)
    declarations = runtime.declarations(tool_family("gemini-3-flash-preview"))
    options = InteractionsOptions(google_search=True, code_execution=True)
    tools = builtin_tools(options) + [{"type": "function", **d} for d in declarations]
    return {"model": "gemini-3-flash-preview", "input": "go", "tools": tools}


def test_typed_tools_send_the_same_body(tmp_path: Path) -> None:
    body = _body(tmp_path)
    typed = typed_tools(body)
    assert typed["tools"] is not body["tools"]
    assert not isinstance(typed["tools"][0], dict)
    assert _sent(typed) == _sent(body)
    assert typed_tools(body)["tools"] is typed["tools"]  # built once for the same tools
    assert body["tools"][0].get("type") == "google_search"  # the caller's body is left as it was


def test_a_body_without_tools_is_left_alone() -> None:
    body = {"model": "m", "input": "go"}
    assert typed_tools(body) is body
