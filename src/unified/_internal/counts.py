"""Counts as the agent CLIs' own output states them (token counts of stream lines and session files, a retry's
attempt): read defensively, one rule for every adapter.

A count there is a whole number above 0, or it counts as 0: a string, an object, `null`, a float (NaN and Infinity
among them: not worth an `int()` that raises) or `true` (a bool is an int to Python: two of the four copies this
replaced took it as one token) is a broken CLI's slip, and a run's usage must not fail on it. The API backends'
counts are checked otherwise (generate-content's `_tokens` refuses a count that is no number: the server's
response is unfit).
"""

from __future__ import annotations

__all__ = ["positive_int"]


def positive_int(value: object) -> int:
    """`value` when it is a whole number above 0 (not a bool), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
