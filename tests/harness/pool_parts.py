"""Parts of the pool tests (`tests/binary/test_pool.py`, `test_spares.py`): a stand-in for a warm process,
and a clock a test sets by hand (how long an entry has waited, with no sleeps)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

_pids = itertools.count(1)


@dataclass(eq=False)
class FakeResource:
    """What a pool keeps (`unified._binary.pool.Poolable`), noting how it was ended."""

    key: str = ""
    pid: int = field(default_factory=lambda: next(_pids))
    alive: bool = True
    closed: bool = False
    killed: bool = False

    async def close(self) -> None:
        self.closed, self.alive = True, False

    def kill(self) -> None:
        self.killed, self.alive = True, False

    @property
    def ended(self) -> bool:
        return self.closed or self.killed


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
