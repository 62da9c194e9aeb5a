"""The suite's slow tests start first, an equal share of their seconds on each xdist worker, so none starts last.

With `--dist load` (scripts/test) xdist hands tests out in collection order: first each worker the next
`len(tests) // workers // 4` of them in one block (`xdist.scheduler.load.LoadScheduling.schedule`), then more
blocks, of so many tests, to whoever runs low. A slow test collected late starts late and runs on while the other
workers, done, wait: the suite's long tail (a fresh-clone run once spent its last 3% so). So tests/conftest.py lays
the tests out before xdist reads them: the tests `DURATIONS` names (a measured run's slowest, with their seconds),
longest first, each into the first block of the worker whose share of seconds is smallest so far; every other
test keeps its place in the collection order. Every worker computes the same order from the same inputs, as xdist
requires. A module whose tests share a module-scoped fixture (a warm Gemini CLI, 600 MB of files) moves whole,
onto one worker: spread, every worker would build the fixture again.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Container, Mapping, Sequence
from pathlib import Path

import pytest

__all__ = ["DURATIONS", "durations_from_report", "read_durations", "shares_a_module_fixture", "slow_first"]

DURATIONS = Path(__file__).resolve().parents[1] / "slow_tests.txt"
MIN_SECONDS = 1.0
"""A test this slow is named in `DURATIONS` (in the run it was made from, 714 tests of 13,021: 82% of the seconds)."""

_REPORT_LINE = re.compile(r"(\d+\.\d+)s (?:setup|call|teardown) +(\S.*)")


def read_durations(path: Path) -> dict[str, float]:
    """`path`'s `seconds node-id` lines (`#` starts a comment line); no file is no durations (collection order)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    seconds: dict[str, float] = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            number, nodeid = line.split(maxsplit=1)
            seconds[nodeid] = float(number)
    return seconds


def durations_from_report(report: str) -> str:
    """`DURATIONS`' text from a whole run's `pytest --durations=0` report: each test's setup, call and teardown
    seconds summed, the tests of `MIN_SECONDS` or more, slowest first (`python -m tests.harness.slow_first REPORT`)."""
    seconds: defaultdict[str, float] = defaultdict(float)
    for line in report.splitlines():
        if match := _REPORT_LINE.fullmatch(line.strip()):
            seconds[match[2]] += float(match[1])
    slow = sorted((-total, nodeid) for nodeid, total in seconds.items() if total >= MIN_SECONDS)
    header = (
        "# The slowest tests of a whole run (tests/harness/slow_first.py): seconds, node id. They start first.\n"
        "# Made by `python -m tests.harness.slow_first REPORT` from the run's `pytest --durations=0` report.\n"
    )
    return header + "".join(f"{-total:.1f} {nodeid}\n" for total, nodeid in slow)


def shares_a_module_fixture(item: pytest.Item) -> bool:
    """Whether `item` uses a module-scoped fixture (pytest keeps a test's fixtures in `_fixtureinfo`)."""
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


def slow_first(
    nodeids: Sequence[str], seconds: Mapping[str, float], workers: int, together: Container[str]
) -> list[int]:
    """The order (indices into `nodeids`) in which `workers` xdist workers with `--dist load` start the measured
    tests first; `together` holds the modules (the node ids' paths) whose tests stay together.

    Each measured test, or each `together` module holding one (its seconds summed), goes longest first to the
    worker whose share is smallest so far among those whose first block has room for it; what has no room stays
    where it was collected, as does every unmeasured test, and fills the blocks up in that order.
    """
    block = max(2, len(nodeids) // workers // 4)
    groups: dict[str, list[int]] = {}
    for i, nodeid in enumerate(nodeids):
        module = nodeid.split("::", 1)[0]
        if module in together:
            groups.setdefault(module, []).append(i)
        elif nodeid in seconds:
            groups[nodeid] = [i]
    weights = {key: sum(seconds.get(nodeids[i], 0.0) for i in group) for key, group in groups.items()}
    shares: list[list[int]] = [[] for _ in range(workers)]
    totals = [0.0] * workers
    for key in sorted((key for key, weight in weights.items() if weight > 0), key=lambda key: -weights[key]):
        roomy = [w for w in range(workers) if len(shares[w]) + len(groups[key]) <= block]
        if roomy:
            smallest = min(roomy, key=lambda w: totals[w])
            shares[smallest] += groups[key]
            totals[smallest] += weights[key]
    placed = {i for share in shares for i in share}
    rest = iter([i for i in range(len(nodeids)) if i not in placed])
    order: list[int] = []
    for share in shares:
        order += share
        order += (i for _, i in zip(range(block - len(share)), rest, strict=False))
    return order + list(rest)


if __name__ == "__main__":
    sys.stdout.write(durations_from_report(Path(sys.argv[1]).read_text(encoding="utf-8")))
