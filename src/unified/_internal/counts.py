"""Counts as the agent CLIs' own output states them (token counts of stream lines and session files, a retry's
attempt): read defensively, one rule for every adapter.

A count there is a whole number above 0 (up to 2**53 - 1, what JSON carries exactly), or it counts as 0: a string,
an object, `null`, a float (NaN and Infinity among them: not worth an `int()` that raises), `true` (a bool is an int
to Python: two of the four copies this replaced took it as one token) or 10**30 is a broken CLI's slip, and a run's
usage must not fail on it.

The Gemini API's usage (generate-content's `usageMetadata`, the Interactions API's `usage`) is read by
`api_usage`, one rule for both: a count is a JSON integer from 0 to 2**31-1 (the API's counts are int32). One that
is anything else (a string such as "12", a float such as 1e29 or NaN, a negative number, `true`) is no count: read
as 0 and the usage flagged `estimated`, so the figure is never mistaken for a measurement, while the answer the
server delivered is kept (a count nobody can read used to end such a run as `backend_error`, the text lost).
"""

from __future__ import annotations

from collections.abc import Mapping

from unified.events import Usage

__all__ = ["api_usage", "positive_int"]

_INT32_MAX = 2**31 - 1


_SAFE_MAX = 2**53 - 1
"""The largest count a JSON number holds exactly for every reader (JavaScript's `Number.MAX_SAFE_INTEGER`): a larger
one (10**30 input tokens, round 22) is no count, and went out in every usage event as a number a JavaScript consumer
rounds and a Rust or Go one refuses to parse."""


def positive_int(value: object) -> int:
    """`value` when it is a whole number above 0 (not a bool) that JSON carries exactly (`_SAFE_MAX`), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _SAFE_MAX else 0


def api_usage(raw: object, names: tuple[str, str, str, str, str]) -> Usage:
    """The Gemini API's usage object `raw` as our Usage, its counts read under `names` (input, output, thinking,
    cached, tool use); a count that is absent is 0, one that is no count (see above) is 0 and flags the usage
    `estimated`, as does a usage that is no object."""
    if raw is None:
        return Usage.model_construct()
    if not isinstance(raw, Mapping):
        return Usage.model_construct(estimated=True)
    counts: list[int] = []
    unread = False
    for name in names:
        value = raw.get(name)
        if value.__class__ is int and 0 <= value <= _INT32_MAX:
            counts.append(value)
        else:
            counts.append(0)
            unread = unread or value is not None
    inputs, output, thinking, cached, tool_use = counts
    return Usage.model_construct(
        input_tokens=inputs,
        output_tokens=output,
        thinking_tokens=thinking,
        cached_tokens=cached,
        tool_use_tokens=tool_use,
        estimated=unread,
    )
