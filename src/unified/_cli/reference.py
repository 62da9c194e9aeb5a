"""docs/params.md, written from the models themselves: `python -m unified._cli.reference > docs/params.md`.

Each field of `ExecuteParams` and of its parts (thinking, images, MCP servers) with its type, its
default and its description, as pydantic holds them, so the page cannot drift from the code:
tests/foundation/test_params_doc.py regenerates it and compares, and fails for a field with no
description.
"""

from __future__ import annotations

import collections.abc
import sys
import types
import typing
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from unified._files import current_directory
from unified.types import (
    ExecuteParams,
    HttpMcpServer,
    ImageInput,
    SseMcpServer,
    StdioMcpServer,
    ThinkingConfig,
)

__all__ = ["MODELS", "params_markdown", "type_text"]

MODELS: tuple[type[BaseModel], ...] = (
    ExecuteParams,
    ThinkingConfig,
    ImageInput,
    StdioMcpServer,
    HttpMcpServer,
    SseMcpServer,
)
"""The page's sections, in order: the parameters, then the models their fields take."""

_HEAD = """# `ExecuteParams`: every parameter of a run

`unified.ExecuteParams` (also `unified.types.ExecuteParams`) is what `execute()` and
`execute_sync()` take; keyword arguments of `execute(prompt=..., backend=...)` are its fields. A
parameter a backend cannot honour gives a `warning` event before `session_started`, or an error
when ignoring it would change what the run does ([capabilities.md](capabilities.md)). Each
backend's own settings go in `backend_options` ([backends/](backends/)).

This page is generated from the models (`python -m unified._cli.reference > docs/params.md`);
tests/foundation/test_params_doc.py keeps it equal to them.
"""


def type_text(annotation: Any) -> str:
    """An annotation as a reader writes it: `str | None`, `tuple[Path, ...]`, `"plan" | "yolo"`."""
    if annotation is type(None):
        return "None"
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is typing.Annotated:
        return type_text(args[0])
    if origin in (typing.Union, types.UnionType):
        shown = [type_text(arg) for arg in args]
        return " | ".join(f"({text})" if text.startswith("async ") else text for text in shown)
    if origin is Literal:
        return " | ".join(f'"{arg}"' if isinstance(arg, str) else repr(arg) for arg in args)
    if origin is collections.abc.Callable:
        parameters, returned = args
        inner = get_args(returned)[0] if get_origin(returned) is collections.abc.Awaitable else returned
        return f"async ({', '.join(type_text(p) for p in parameters)}) -> {type_text(inner)}"
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return f"tuple[{type_text(args[0])}, ...]"
    if origin is not None:
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(type_text(arg) for arg in args)}]" if args else name
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def _default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        factory = field.default_factory
        if factory is current_directory:
            return "the current directory"
        made = factory()  # type: ignore[call-arg]  # pydantic's factories here take no argument
        return f"`{made!r}`"
    if field.default is PydanticUndefined:
        return "required"
    value = field.default
    return f'`"{value}"`' if isinstance(value, str) else f"`{value!r}`"


def _bounds(field: FieldInfo) -> str:
    """A field's numeric and length bounds, as `≥ 1`, `> 0`."""
    found = []
    for item in field.metadata:
        for name, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"), ("min_length", "length ≥")):
            value = getattr(item, name, None)
            if value is not None:
                found.append(f"{sign} {value}")
    return f" ({', '.join(found)})" if found else ""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _section(model: type[BaseModel]) -> str:
    doc = (model.__doc__ or "").strip().split("\n\n")[0]
    rows = [
        f"## `{model.__name__}`",
        "",
        " ".join(doc.split()),
        "",
        "| field | type | default | description |",
        "|---|---|---|---|",
    ]
    for name, field in model.model_fields.items():
        if name == "type" and get_origin(field.annotation) is Literal:  # an MCP server's discriminator
            rows.append(f"| `type` | {_cell(type_text(field.annotation))} | {_default_text(field)} | the transport |")
            continue
        kind = _cell(type_text(field.annotation) + _bounds(field))
        rows.append(f"| `{name}` | `{kind}` | {_default_text(field)} | {_cell(field.description or '')} |")
    return "\n".join(rows) + "\n"


def undocumented() -> list[str]:
    """`Model.field` for every field without a description (the page would have an empty cell)."""
    return [
        f"{model.__name__}.{name}"
        for model in MODELS
        for name, field in model.model_fields.items()
        if not field.description and name != "type"
    ]


def params_markdown() -> str:
    """The whole of docs/params.md."""
    return "\n".join([_HEAD, *(_section(model) for model in MODELS)])


if __name__ == "__main__":
    sys.stdout.write(params_markdown())
