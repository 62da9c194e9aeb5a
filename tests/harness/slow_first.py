"""The modules holding the suite's slow tests start first, an equal share of their seconds on each xdist worker.

With `--dist load` (scripts/test) xdist hands tests out in collection order: first each worker the next
`len(tests) // workers // 4` of them in one block (`xdist.scheduler.load.LoadScheduling.schedule`), then more
blocks, of so many tests, to whoever runs low, and never takes a test back. In collection order the fourth worker's
first block (tests 2,439-3,251 of 13,021) held tests/e2e/gemini_cli, tests/e2e/conformance and most of the rest of
the e2e tier, the Node binaries' runs that are most of the suite's CPU, which it then ran alone while the others,
done, waited: the suite's long tail (a fresh-clone run once spent its last 3% so). So tests/conftest.py lays
the tests out before xdist reads them: the modules holding a test `DURATIONS` names (a measured run's slowest, with
their seconds), longest first, each into the first block of the worker whose share of seconds is smallest so far;
every other module keeps its place in the collection order. Every worker computes the same order from the same
inputs, as xdist requires. A module moves whole, in its order, onto one worker: its tests spread one by one over
the workers would make each worker build what they share (a module-scoped fixture such as a warm Gemini CLI or
600 MB of files, a cache such as test_layering's import graph).
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["DURATIONS", "durations_from_report", "read_durations", "slow_first"]

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
        "# A whole run's slowest tests (tests/harness/slow_first.py), seconds and node id: their modules go first.\n"
        "# Made by `python -m tests.harness.slow_first REPORT` from the run's `pytest --durations=0` report.\n"
    )
    return header + "".join(f"{-total:.1f} {nodeid}\n" for total, nodeid in slow)


def slow_first(nodeids: Sequence[str], seconds: Mapping[str, float], workers: int) -> list[int]:
    """The order (indices into `nodeids`) in which `workers` xdist workers with `--dist load` start the modules
    holding measured tests first.

    Each such module, whole and in its order, its tests' seconds summed, goes longest first to the worker whose share
    is smallest so far among those whose first block has room for it; a module with no room stays where it was
    collected, as does every other module, and fills the blocks up in that order.
    """
    block = max(2, len(nodeids) // workers // 4)
    modules: dict[str, list[int]] = {}
    for i, nodeid in enumerate(nodeids):
        modules.setdefault(nodeid.split("::", 1)[0], []).append(i)
    weights = {module: sum(seconds.get(nodeids[i], 0.0) for i in tests) for module, tests in modules.items()}
    shares: list[list[int]] = [[] for _ in range(workers)]
    totals = [0.0] * workers
    for module in sorted((module for module, weight in weights.items() if weight > 0), key=lambda m: -weights[m]):
        roomy = [w for w in range(workers) if len(shares[w]) + len(modules[module]) <= block]
        if roomy:
            smallest = min(roomy, key=lambda w: totals[w])
            shares[smallest] += modules[module]
            totals[smallest] += weights[module]
    placed = {i for share in shares for i in share}
    rest = iter([i for i in range(len(nodeids)) if i not in placed])
    order: list[int] = []
    for share in shares:
        order += share
        order += (i for _, i in zip(range(block - len(share)), rest, strict=False))
    return order + list(rest)


if __name__ == "__main__":
    sys.stdout.write(durations_from_report(Path(sys.argv[1]).read_text(encoding="utf-8")))
