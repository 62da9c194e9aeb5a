"""What every benchmark shares: repeated timing, ratios against a baseline of the same run, the report.

The machines are shared and noisy, so no figure here is read as an absolute: each benchmark
times its subject and its baseline alternately, in the same process and the same minute, and
reports the ratio of their medians (with min and max so the spread is visible).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any


@dataclass
class Figure:
    """One measured quantity over repeated runs."""

    name: str
    unit: str
    samples: list[float]

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "min": self.min,
            "median": self.median,
            "max": self.max,
            "runs": len(self.samples),
        }


@dataclass
class Outcome:
    """A benchmark's figures and the ratios that matter, each with the target it is held to."""

    benchmark: str
    figures: list[Figure] = field(default_factory=list)
    ratios: dict[str, float] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    met: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def ratio(self, name: str, value: float, target: str, met: bool) -> None:
        self.ratios[name] = value
        self.targets[name] = target
        self.met[name] = met


def alternate(
    subject: Callable[[], object], baseline: Callable[[], object], runs: int
) -> tuple[list[float], list[float]]:
    """Time subject and baseline alternately `runs` times each, so drift hits both alike."""
    subject_times: list[float] = []
    baseline_times: list[float] = []
    for _ in range(runs):
        for fn, sink in ((baseline, baseline_times), (subject, subject_times)):
            start = time.perf_counter()
            fn()
            sink.append(time.perf_counter() - start)
    return subject_times, baseline_times


def spread(values: list[float]) -> tuple[float, float, float]:
    """(min, median, max): how a ratio over paired runs is reported."""
    return min(values), statistics.median(values), max(values)


def versions() -> dict[str, str]:
    out: dict[str, str] = {"python": platform.python_version()}
    for dist in ("unified", "google-genai", "pydantic", "anyio", "httpx"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def write_report(outcomes: list[Outcome], path: Path, *, quick: bool) -> dict[str, Any]:
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "machine": machine(),
        "versions": versions(),
        "benchmarks": [
            {**{k: v for k, v in asdict(o).items() if k != "figures"}, "figures": [f.as_dict() for f in o.figures]}
            for o in outcomes
        ],
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def render_table(outcomes: list[Outcome]) -> str:
    lines = ["| benchmark | ratio | value | target | met |", "|---|---|---|---|---|"]
    for o in outcomes:
        for name, value in o.ratios.items():
            lines.append(
                f"| {o.benchmark} | {name} | {value:.3g} | {o.targets[name]} | {'yes' if o.met[name] else 'NO'} |"
            )
    lines += ["", "| benchmark | figure | min | median | max | unit |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        for f in o.figures:
            lines.append(f"| {o.benchmark} | {f.name} | {f.min:.4g} | {f.median:.4g} | {f.max:.4g} | {f.unit} |")
    notes = [f"- {o.benchmark}: {n}" for o in outcomes for n in o.notes]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)
