"""The first fields of a JSON object whose line cannot be parsed: too long to read whole (over a cap), or
cut. A peer waits for the answer to a request it wrote on such a line, and a request of ours waits for
the answer such a line carried: both are told at once, from the fields that open the object, instead
of waiting for a timeout. One reader for every peer (the agent binaries' JSON-RPC and control protocol,
an MCP server's stdio), so they agree on what a head says.

Only the top level is read: a key inside a nested value (a tool's output holding `"id": 5`) is never
taken for the message's own.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any, TypeGuard

__all__ = ["answer_in_head", "leading_fields", "request_in_head"]

_FIELD = re.compile(
    r'\s*"([A-Za-z_]+)"\s*:\s*(?:("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)\s*,)?'
)
"""One field of the object's top level: its key, and its value when that is a scalar followed by more."""


def leading_fields(head: str, names: Sequence[str]) -> tuple[dict[str, Any], str | None]:
    """The fields among `names` that open the JSON object whose first characters are `head`, in any order,
    while each holds a string, a number, true, false or null; and the key that follows them (the first
    whose value is not such a scalar, or is not among `names`), when the head reaches one."""
    start = head.lstrip()
    fields: dict[str, Any] = {}
    if not start.startswith("{"):
        return fields, None
    at = 1
    while (found := _FIELD.match(start, at)) is not None:
        name, value = found.group(1), found.group(2)
        if value is None or name not in names:
            return fields, name
        with contextlib.suppress(ValueError):
            fields[name] = json.loads(value)
        at = found.end()
    return fields, None


def _is_id(value: object) -> TypeGuard[int | str]:
    """A JSON-RPC id: a number (`true` is an int to Python, and `True == 1`) or a string."""
    return isinstance(value, int | str) and not isinstance(value, bool)


def request_in_head(head: str) -> tuple[int | str, str] | None:
    """(id, method) when `head` opens a JSON-RPC request: the peer waits for its answer, which a dropped
    line would never get."""
    fields, _ = leading_fields(head, ("jsonrpc", "id", "method"))
    request_id, method = fields.get("id"), fields.get("method")
    return (request_id, method) if _is_id(request_id) and isinstance(method, str) else None


def answer_in_head(head: str) -> int | str | None:
    """The id when `head` opens a JSON-RPC answer (its `id` among the leading fields, then `result` or
    `error`): the request it answers waits for it, and fails at once instead."""
    fields, following = leading_fields(head, ("jsonrpc", "id"))
    request_id = fields.get("id")
    return request_id if following in ("result", "error") and _is_id(request_id) else None
