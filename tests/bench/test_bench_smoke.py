"""The benchmark harness still works: `python -m bench.run --quick` runs every benchmark at tiny sizes.

No figure is asserted (the machines are noisy); only that each benchmark ran and reported its
figures and ratios in the shape bench/README.md documents.
"""

from __future__ import annotations

import json
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
        check=True,
        capture_output=True,
        timeout=HANG_GUARD_S,
    )
    report = json.loads(output.read_text())
    assert report["quick"] is True
    assert {"date", "machine", "versions", "benchmarks"} <= report.keys()
    names = [b["benchmark"] for b in report["benchmarks"]]
    assert "translate" in names
    assert len(set(names)) == len(names)
    for bench in report["benchmarks"]:
        assert bench["ratios"].keys() == bench["targets"].keys() == bench["met"].keys()
        for figure in bench["figures"]:
            assert figure["min"] <= figure["median"] <= figure["max"]
            assert figure["runs"] >= 1
