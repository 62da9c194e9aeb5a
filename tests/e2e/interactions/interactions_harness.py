"""Helpers of the interactions end-to-end tests (the fixtures live in conftest.py).

A module of its own, not `from conftest import ...`: with several test directories in one pytest
run, `conftest` names whichever conftest was imported last.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import unified
from unified.events import UnifiedEvent
from unified.types import ExecuteParams

MODEL = "gemini-3-flash-preview"

Params = Callable[..., ExecuteParams]


async def collect(params: ExecuteParams) -> list[Any]:
    """Every event of one run (typed `Any` so tests read kind-specific fields without casts)."""
    events: list[UnifiedEvent] = []
    async with unified.execute(params) as stream:
        events.extend([event async for event in stream])
    return list(events)


def of_type(events: list[UnifiedEvent], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]
