"""Tool call ids as the API backends' streams show them.

A subagent's calls are shown as `<task id>/<its call's id>` (`unified._agent_loop._into_task`), so that the
ids of its conversation (the server's, or the translator's own count) never meet the run's. That holds only if
no other id holds a `/`: a server that named a call of the run `task-d1/c1` made it the very id of subagent
`d1`'s call `c1` (two `tool_use` of one id, each answered twice). So every id a server or model chooses is shown
through `shown_id`, which leaves no `/` in it and keeps distinct ids distinct.
"""

from __future__ import annotations

__all__ = ["SEPARATOR", "shown_id"]

SEPARATOR = "/"
"""Between a subagent's task id and its call's id; in no other id of a stream."""


def shown_id(raw: str) -> str:
    """`raw` with `%` and `/` percent-escaped: injective (two ids stay two) and free of `SEPARATOR`.
    An id without either (every id seen from the real APIs) is shown as it is."""
    if "%" not in raw and SEPARATOR not in raw:
        return raw
    return raw.replace("%", "%25").replace(SEPARATOR, "%2F")
