"""The JSON shape of the streamed chunk fields the translator reads, as data: on the error path only (the hot
path reads the wire without validating it), `misfit` names the first field of the wrong type, with what the API
sent, instead of the Python error that reading it raised ("argument of type 'int' is not iterable")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from unified._text import json_type

__all__ = ["CANDIDATE", "CHUNK", "misfit"]

Shape = str | tuple[str, Any] | Mapping[str, Any]
"""A JSON type ("string", "number", "boolean", "object"), ("array", the items' shape), or an object's fields."""

_ID_NAME = {"id": "string", "name": "string"}
_PIECE: Mapping[str, Shape] = {
    "jsonPath": "string",
    "stringValue": "string",
    "numberValue": "number",
    "boolValue": "boolean",
    "willContinue": "boolean",
}
"""One piece of streamed arguments (`partialArgs`): a flag sent as the text "false" is no flag (read as Python
reads a non-empty string, it was true: the call never ended, or a `false` argument became true)."""
_CALL: Mapping[str, Shape] = {
    **_ID_NAME,
    "args": "object",
    "partialArgs": ("array", _PIECE),
    "willContinue": "boolean",
}
_PART: Mapping[str, Shape] = {
    "text": "string",
    "thought": "boolean",
    "thoughtSignature": "string",
    "functionCall": _CALL,
    "functionResponse": {**_ID_NAME, "response": "object"},
    "executableCode": {"id": "string", "code": "string", "language": "string"},
    "codeExecutionResult": {"id": "string", "outcome": "string", "output": "string"},
    "toolCall": {"id": "string", "toolType": "string", "args": "object"},
    "toolResponse": {"id": "string", "toolType": "string", "response": "object"},
    "inlineData": {"data": "string", "mimeType": "string"},
}
CANDIDATE: Mapping[str, Shape] = {
    "content": {"parts": ("array", _PART)},
    "finishReason": "string",
    "finishMessage": "string",
    "groundingMetadata": "object",
    "urlContextMetadata": "object",
}
CHUNK: Mapping[str, Shape] = {
    "candidates": ("array", CANDIDATE),
    "promptFeedback": {"blockReason": "string", "blockReasonMessage": "string"},
}
"""A `GenerateContentResponse` chunk as the translator reads it (a null field is an absent one). Its
`usageMetadata` is not here: a usage of the wrong shape is read as flagged usage (`api_usage`), never unfit."""

_FITS = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, Mapping),
    "array": lambda v: isinstance(v, list),
}


def _sent(value: object) -> str:
    """The JSON type of `value`, with the value itself when it is a short scalar."""
    kind = json_type(value)
    if isinstance(value, bool | int | float) or (isinstance(value, str) and len(value) <= 40):
        return f"{kind} ({value!r})" if not isinstance(value, bool) else f"{kind} ({str(value).lower()})"
    return kind


def misfit(value: object, shape: Shape, path: str) -> str | None:
    """'`path` is <what was sent>, not <what fits>' for the first field of `value` (at `path`) that does not
    fit `shape`; None when all fit."""
    if isinstance(shape, str):
        kind: str = shape
    elif isinstance(shape, tuple):
        kind = "array"
    else:
        kind = "object"
    if not _FITS[kind](value):
        return f"`{path}` is {_sent(value)}, not {'an' if kind[0] in 'aeiou' else 'a'} {kind}"
    if isinstance(shape, tuple) and isinstance(value, list):
        for index, item in enumerate(value):
            if (found := misfit(item, shape[1], f"{path}[{index}]")) is not None:
                return found
    elif isinstance(shape, Mapping) and isinstance(value, Mapping):
        for key, field in shape.items():
            item = value.get(key)
            if item is not None and (found := misfit(item, field, f"{path}.{key}" if path else key)) is not None:
                return found
    return None
