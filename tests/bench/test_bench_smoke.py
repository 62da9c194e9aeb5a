"""The benchmark harness still works: `python -m bench.run --quick` runs every benchmark at tiny sizes.

No figure is asserted (the machines are noisy); only that each benchmark ran to its end and reported its
figures and ratios in the shape bench/README.md documents. The gemini binary is hidden from it: its
cold starts (seconds each) would make this the slowest test of its tier, and the benchmark that
needs it reports itself skipped, which is checked here too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.hang_guard import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_results(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--output", str(output)],
        cwd=ROOT,
        env={**os.environ, "UNIFIED_GEMINI_BIN": str(tmp_path / "no-gemini-here")},
        check=True,
        capture_output=True,
        timeout=HANG_GUARD_S,
    )
    report = json.loads(output.read_text())
    assert report["quick"] is True
    assert {"date", "machine", "versions", "benchmarks"} <= report.keys()
    names = [b["benchmark"] for b in report["benchmarks"]]
    assert {"translate", "agent_binaries"} <= set(names)
    assert len(set(names)) == len(names)
    # a benchmark that crashed still reports (`completed` 0, its note `failed: ...`): here it fails the test
    crashed = {b["benchmark"]: b["notes"] for b in report["benchmarks"] if "completed" in b["ratios"]}
    assert not crashed
    (cli,) = [b for b in report["benchmarks"] if b["benchmark"] == "cli_overhead"]
    assert cli["notes"][0].startswith("skipped")
    for bench in report["benchmarks"]:
        assert bench["ratios"].keys() == bench["targets"].keys() == bench["met"].keys()
        for figure in bench["figures"]:
            assert figure["min"] <= figure["median"] <= figure["max"]
            assert figure["runs"] >= 1
