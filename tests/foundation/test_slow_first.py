"""The suite's slow tests start first on every xdist worker (tests/harness/slow_first.py), checked against xdist's own
`--dist load` scheduler: what each worker is handed first is what the order meant it to get."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from xdist.scheduler.load import LoadScheduling

from tests.harness.slow_first import DURATIONS, durations_from_report, read_durations, slow_first

ROOT = Path(__file__).resolve().parents[2]


@dataclass(eq=False)
class _Worker:
    """What `LoadScheduling` asks of a worker: the batches it is sent."""

    name: str
    batches: list[list[int]] = field(default_factory=list)
    shutting_down: bool = False

    def __post_init__(self) -> None:
        self.gateway = SimpleNamespace(id=self.name)

    def send_runtest_some(self, indices: Sequence[int]) -> None:
        self.batches.append(list(indices))

    def shutdown(self) -> None:
        self.shutting_down = True


class _Config:
    def __init__(self, workers: int) -> None:
        self.workers = workers

    def getvalue(self, name: str) -> Any:
        return [f"{self.workers}*popen"] if name == "tx" else None

    def getoption(self, name: str) -> Any:
        return None


def _first_batches(collection: list[str], workers: int) -> list[list[str]]:
    """The tests xdist's load scheduler hands each worker before any has finished one."""
    scheduler = LoadScheduling(_Config(workers), SimpleNamespace(loadsched=lambda *args: None))
    nodes = [_Worker(f"gw{n}") for n in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    return [[collection[i] for i in node.batches[0]] for node in nodes]


def _suite(modules: int = 40, tests: int = 30) -> list[str]:
    return [f"tests/test_m{m:02}.py::test_{t:02}" for m in range(modules) for t in range(tests)]


def _ordered(collection: list[str], seconds: dict[str, float], workers: int) -> list[str]:
    return [collection[i] for i in slow_first(collection, seconds, workers)]


def test_each_worker_is_first_handed_an_equal_share_of_the_slow_modules_however_late_they_were_collected() -> None:
    collection = _suite()
    late = [f"tests/test_m{m:02}.py::test_00" for m in range(32, 40)]  # one slow test in each of the last 8 modules
    seconds = {nodeid: float(10 + n) for n, nodeid in enumerate(late)}

    batches = _first_batches(_ordered(collection, seconds, 4), 4)

    shares = [sum(seconds.get(nodeid, 0.0) for nodeid in batch) for batch in batches]
    assert sorted(nodeid for batch in batches for nodeid in batch if nodeid in seconds) == sorted(late)
    assert max(shares) - min(shares) <= max(seconds.values())
    assert all(batch[0].endswith("::test_00") and batch[0] in seconds for batch in batches)  # each starts on one


def test_a_module_moves_whole_onto_one_worker_in_its_order() -> None:
    """Spread over the workers, a module's shared setup (a module-scoped fixture, a cache of its own) would be built
    again on each of them."""
    collection = _suite()
    slow = "tests/test_m39.py"
    seconds = {f"{slow}::test_03": 50.0, f"{slow}::test_20": 40.0, "tests/test_m10.py::test_00": 30.0}

    batches = _first_batches(_ordered(collection, seconds, 4), 4)

    holding = [batch for batch in batches if any(nodeid.startswith(slow) for nodeid in batch)]
    assert len(holding) == 1
    assert [nodeid for nodeid in holding[0] if nodeid.startswith(slow)] == [f"{slow}::test_{t:02}" for t in range(30)]
    assert "tests/test_m10.py::test_00" not in holding[0]  # the next slowest goes to a worker with less to do


def test_the_modules_not_moved_keep_their_collection_order_and_no_test_is_lost_or_repeated() -> None:
    collection = _suite(modules=10, tests=4)  # a first block holds 40 // 2 // 4 = 5 tests: a module fits
    seconds = {collection[7]: 3.0, collection[30]: 9.0, "tests/test_gone.py::test_renamed": 99.0}

    ordered = _ordered(collection, seconds, 2)

    assert sorted(ordered) == sorted(collection)
    assert ordered[:4] == collection[28:32]  # the slowest module first; a test no longer collected changes nothing
    assert ordered[5:9] == collection[4:8]  # the other worker's block starts on the other
    moved = {"tests/test_m01.py", "tests/test_m07.py"}
    unmoved = [nodeid for nodeid in ordered if nodeid.split("::")[0] not in moved]
    assert unmoved == [nodeid for nodeid in collection if nodeid.split("::")[0] not in moved]


def test_a_module_too_big_for_a_first_block_stays_where_it_was_collected() -> None:
    collection = _suite(modules=4, tests=20)  # a first block holds 80 // 2 // 4 = 10 tests
    seconds = {"tests/test_m03.py::test_00": 30.0}

    assert _ordered(collection, seconds, 2) == collection


def test_the_durations_file_is_made_from_a_report_summing_each_tests_phases(tmp_path: Path) -> None:
    report = (
        "============================== slowest durations ===============================\n"
        "2.50s call     tests/a.py::test_x[one two]\n"
        "0.60s setup    tests/a.py::test_x[one two]\n"
        "0.90s call     tests/b.py::test_fast\n"
        "0.05s teardown tests/b.py::test_fast\n"
        "1.20s call     tests/c.py::test_y\n"
        "(23646 durations < 0.005s hidden.  Use -vv to show these durations.)\n"
    )
    made = tmp_path / "slow_tests.txt"
    made.write_text(durations_from_report(report), encoding="utf-8")

    assert read_durations(made) == {"tests/a.py::test_x[one two]": 3.1, "tests/c.py::test_y": 1.2}


def test_no_durations_file_is_the_collection_order(tmp_path: Path) -> None:
    assert read_durations(tmp_path / "absent.txt") == {}


def test_every_module_the_durations_file_names_exists() -> None:
    modules = {nodeid.split("::", 1)[0] for nodeid in read_durations(DURATIONS)}
    assert modules
    assert sorted(module for module in modules if not (ROOT / module).is_file()) == []


@pytest.mark.e2e
def test_a_run_on_xdist_workers_starts_each_worker_on_a_named_slow_module(tmp_path: Path) -> None:
    """The whole path: the controller tells the workers tests are spread one by one (a worker's own `dist` option
    reads "no"), and each worker reorders what it collected before xdist hands it out: the two modules collected
    last, each named by one test, are what the two workers start on."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_XDIST")}
    modules = ["test_models.py", "test_routing.py", "test_text.py", "test_render_bad_input_round18.py"]
    pytest_command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        *(f"tests/foundation/{m}" for m in modules),
    ]
    listed = subprocess.run(
        [*pytest_command, "--collect-only", "-q"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    collected = [line for line in listed.stdout.splitlines() if "::" in line]
    firsts = {module: next(n for n in collected if n.startswith(f"tests/foundation/{module}")) for module in modules}
    named = tmp_path / "slow_tests.txt"
    named.write_text(f"9.0 {collected[-2]}\n8.0 {collected[-1]}\n", encoding="utf-8")  # one in each of the last two

    run = subprocess.run(
        [*pytest_command, "-n", "2", "-v", "--slow-tests", str(named)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )

    assert run.returncode == 0, run.stdout[-2000:]
    first: dict[str, str] = {}
    for line in run.stdout.splitlines():
        if match := re.match(r"\[(gw\d)\] \[ *\d+%\] PASSED (\S+)", line):
            first.setdefault(match[1], match[2])
    assert sorted(first.values()) == sorted([firsts["test_text.py"], firsts["test_render_bad_input_round18.py"]]), (
        run.stdout
    )
