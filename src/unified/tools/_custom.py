"""Plain Python callables as tools: the schema comes from the type hints, via pydantic."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, get_type_hints

import anyio.to_thread
from pydantic import create_model
from pydantic_core import to_jsonable_python

from unified import _limits as limits
from unified.tools._base import Params, Progress, ToolError, ToolOutput, ToolSpec, clean_schema

__all__ = ["function_tool"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")


def function_tool(fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> ToolSpec:
    """A `ToolSpec` for `fn`. Sync functions run in a worker thread; a `str` return is the output
    as is, anything else is converted to JSON. Every parameter needs a type hint."""
    tool_name = name or fn.__name__
    if not _NAME.match(tool_name):
        raise ValueError(f"invalid tool name {tool_name!r}: letters, digits, _ . : - only, at most 64")
    hints = get_type_hints(fn)
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ValueError(f"tool {tool_name}: *args and **kwargs cannot be described to a model")
        if param.name not in hints:
            raise ValueError(f"tool {tool_name}: parameter {param.name!r} needs a type hint")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints[param.name], default)
    model: type[Params] = create_model(f"{tool_name}_params", __base__=Params, **fields)
    text = description or inspect.getdoc(fn) or f"Calls {tool_name}."

    async def run(params: Params, progress: Progress) -> ToolOutput:
        kwargs = {key: getattr(params, key) for key in fields}
        if inspect.iscoroutinefunction(fn):
            value = await fn(**kwargs)
        else:
            value = await anyio.to_thread.run_sync(lambda: fn(**kwargs), abandon_on_cancel=True)
        if isinstance(value, str):
            return ToolOutput(value)
        if limits.too_deep(value):
            raise ToolError(
                f"{tool_name} returned output nested deeper than {limits.MAX_JSON_DEPTH} levels; it was not sent."
            )
        try:
            return ToolOutput(to_jsonable_python(value))
        except (ValueError, TypeError, RecursionError) as exc:
            raise ToolError(f"{tool_name} returned a value that cannot be sent as JSON: {exc}") from None

    return ToolSpec(
        name=tool_name,
        kind="other",
        params=model,
        run=run,
        description=text,
        schema=clean_schema(model.model_json_schema()),
    )
