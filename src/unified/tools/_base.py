"""Shared shapes of the tool layer: what a tool returns, how it fails, how it is declared."""

from __future__ import annotations

import copy
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from unified._exports import publish
from unified._internal.models import ToolFamily

__all__ = [
    "InlineData",
    "Params",
    "Progress",
    "ToolError",
    "ToolKind",
    "ToolOutput",
    "ToolSpec",
    "clean_schema",
    "params_schema",
    "require_unicode",
]

"""Which declaration texts the model gets (seed 000: the Gemini 3 family has its own strings)."""

ToolKind = Literal["read", "edit", "execute", "other"]
"""`edit` tools are ordered barriers in a batch; the policy file decides everything else."""


class ToolError(Exception):
    """A failure the model should read: its message becomes `{"error": message}`."""


def require_unicode(text: str, what: str) -> None:
    """Refuse `text` (a path, a command) with a `ToolError` when it holds a lone surrogate: legal in the
    model's JSON (`"\\ud800"`), but no file name or command can hold it. The surrogate escapes of a name's
    undecodable bytes (how Python spells them) are fine."""
    try:
        text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError(f"{what} is not valid Unicode text (a lone surrogate at character {exc.start}).") from None


@dataclass(frozen=True)
class InlineData:
    """A media part sent back beside the function response (an image read by read_file)."""

    mime_type: str
    data: bytes


@dataclass(frozen=True)
class ToolOutput:
    """A successful tool run: `output` is what the model reads, `inline_data` any attached media."""

    output: Any
    inline_data: tuple[InlineData, ...] = ()


class Params(BaseModel):
    """Base of every tool's parameters: unknown arguments are an error the model can fix."""

    model_config = ConfigDict(extra="forbid")


Progress = Callable[[str], Awaitable[None]]
"""Reports interim news of a running call (becomes a `tool_progress` event)."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its declaration texts, parameter model and implementation."""

    name: str
    kind: ToolKind
    params: type[Params] | None
    run: Callable[[Any, Progress], Awaitable[ToolOutput]]
    description: str
    gemini3_description: str | None = None
    schema: dict[str, Any] = field(default_factory=dict)

    def declaration(self, family: ToolFamily) -> dict[str, Any]:
        text = self.gemini3_description if family == "gemini-3" and self.gemini3_description else None
        schema = copy.deepcopy(self.schema or (params_schema(self.params) if self.params else {}))
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        schema["properties"]["wait_for_previous"] = {
            "type": "boolean",
            "description": "Set true to start this call only after every earlier call of this turn "
            "has finished; leave it out to let calls run in parallel.",
        }
        return {"name": self.name, "description": text or self.description, "parameters": schema}


@functools.cache
def params_schema(params: type[Params]) -> dict[str, Any]:
    """A parameter model's declaration schema, built once per process (pydantic takes milliseconds a model).

    Callers get the shared dict: copy it before changing it.
    """
    return clean_schema(params.model_json_schema())


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic JSON schema → the plain subset function declarations accept.

    Inlines `$ref`s, drops titles, and turns `anyOf[X, null]` (an optional argument) into X.
    """
    defs: dict[str, Any] = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = walk(defs[node["$ref"].rsplit("/", 1)[-1]])
            extra = {k: walk(v) for k, v in node.items() if k != "$ref"}
            return {**target, **extra}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("title", "$defs"):
                continue
            if key == "properties":
                out[key] = {name: walk(sub) for name, sub in value.items()}
            elif key == "anyOf":
                options = [walk(v) for v in value if v != {"type": "null"}]
                if len(options) == 1:
                    out.update(options[0])
                else:
                    out[key] = options
            else:
                out[key] = walk(value)
        if out.get("default", 0) is None:
            del out["default"]
        return out

    cleaned: dict[str, Any] = walk(schema)
    if "properties" in cleaned:
        cleaned["type"] = "object"
    return cleaned


publish("unified.tools", ["InlineData", "ToolError", "ToolOutput", "ToolSpec"], globals())
