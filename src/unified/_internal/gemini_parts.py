"""Gemini's function responses <-> the portable tool result, for every backend that speaks Gemini's
wire format (generate-content's `contents`, the Gemini CLI's chat files).

A Gemini function response is `{"output": value}` or `{"error": value}` (the shape unified's tool
runtime and the CLI both send); anything else is kept whole as the output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from unified.conversations import ToolResultPart

__all__ = ["response_of_result", "result_of_response"]


def result_of_response(call_id: str, name: str, response: object) -> ToolResultPart:
    """The tool result a function response (`functionResponse.response`) carries."""
    body = response if isinstance(response, Mapping) else {"output": response}
    failed = "error" in body and "output" not in body
    value = body["error"] if failed else body.get("output", dict(body))
    return ToolResultPart.of(call_id, name, value, is_error=failed)


def response_of_result(part: ToolResultPart) -> dict[str, Any]:
    """The function response (`functionResponse.response`) that tells a Gemini model `part`."""
    return {"error" if part.is_error else "output": part.value()}
