"""What every benchmark shares: repeated timing, ratios against a baseline of the same run, the report.

The machines are shared and noisy, so no figure here is read as an absolute: each benchmark
times its subject and its baseline alternately, in the same process and the same minute, and
reports the ratio of their medians (with min and max so the spread is visible).
"""

from __future__ import annotations

import cProfile
import json
import math
import os
import platform
import pstats
import resource
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

from unified import execute
from unified.events import Result, TextDelta, UnifiedEvent
from unified.types import ExecuteParams


class Timing(NamedTuple):
    """One run: wall seconds and seconds to its first output; for a run timed by a `Stopwatch`, also the CPU
    seconds it cost (NaN where not measured)."""

    wall: float
    first: float
    cpu: float = math.nan
    """This process's CPU over the run, every thread: the client (unified, or a baseline's minimal one) and
    the fake model server, which serves both sides alike."""
    cpu_to_first: float = math.nan
    """The same, up to the first output."""
    binary_cpu: float = math.nan
    """The CPU of the processes reaped during the run: the agent binary and what it started (0 for a run on
    a process a pool keeps warm, which is not reaped)."""


def _reaped_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Stopwatch:
    """Times one run of an agent binary: its wall and first output, and what each side spent of the CPU.

    A binary's wall time spreads by tens of percent from one cold start to the next on a shared machine,
    far more than what a client adds; CPU time is what the client itself does, and spreads far less (a
    few ms a run here). What a client adds to the wall is its own CPU on the way (less a baseline
    client's) plus any wait it makes the binary do, which CPU does not show: so `cpu`, unified's against
    the baseline's, bounds what its work adds to a wall ratio, and `binary_cpu` shows whether the binary
    did more work under it."""

    __slots__ = ("_cpu", "_cpu_to_first", "_reaped", "first", "started")

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self._cpu = time.process_time()
        self._reaped = _reaped_cpu()
        self.first = 0.0
        self._cpu_to_first = math.nan

    def mark_first(self) -> None:
        """The first output arrived (a later call changes nothing)."""
        if not self.first:
            self.first = time.perf_counter() - self.started
            self._cpu_to_first = time.process_time() - self._cpu

    def timing(self) -> Timing:
        wall = time.perf_counter() - self.started
        cpu = time.process_time() - self._cpu
        return Timing(wall, self.first, cpu, self._cpu_to_first, _reaped_cpu() - self._reaped)


def is_answer_text(event: UnifiedEvent) -> bool:
    return isinstance(event, TextDelta)


async def through_unified(
    params: ExecuteParams, first_output: Callable[[UnifiedEvent], bool] = is_answer_text
) -> Timing:
    """One run through `unified.execute`, read to its end: (wall, the first event `first_output` accepts).
    Raises unless the run succeeded, so a broken subject never times as a fast one."""
    watch = Stopwatch()
    result: Result | None = None
    async with execute(params) as stream:
        async for event in stream:
            if not watch.first and first_output(event):
                watch.mark_first()
            if isinstance(event, Result):
                result = event
    if result is None or result.status != "success":
        raise RuntimeError(f"the {params.backend} run did not succeed: {result}")
    return watch.timing()


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
    spreads: dict[str, tuple[float, float]] = field(default_factory=dict)
    """(min, max) over the paired runs of a ratio that is a median of pairs."""
    notes: list[str] = field(default_factory=list)
    profiles: dict[str, str] = field(default_factory=dict)
    """Where the time goes, for what missed its target: a summary of the top frames."""

    def ratio(
        self, name: str, value: float, target: str, met: bool, *, low: float | None = None, high: float | None = None
    ) -> None:
        self.ratios[name] = value
        self.targets[name] = target
        self.met[name] = met
        if low is not None and high is not None:
            self.spreads[name] = (low, high)


def _where(path: str) -> str:
    """A frame's file, short: from the package root (site-packages/, src/, the stdlib) on."""
    for marker in ("site-packages/", "/src/", "/lib/python3"):
        if marker in path:
            tail = path.split(marker, 1)[1]
            return tail.split("/", 1)[1] if marker == "/lib/python3" and "/" in tail else tail
    return path


def summarize(profiler: cProfile.Profile, top: int = 12) -> str:
    """The `top` functions by own time, with their cumulative time: where the time goes."""
    stats = pstats.Stats(profiler)
    rows = sorted(stats.stats.items(), key=lambda item: item[1][2], reverse=True)  # type: ignore[attr-defined]
    total = sum(row[1][2] for row in rows) or 1.0
    lines = [f"total {total * 1000:.0f} ms (this thread); own ms, own %, cumulative ms, calls, function"]
    for (path, line, func), (_, calls, own, cumulative, _) in rows[:top]:
        share = own / total * 100
        where = f"{func} ({_where(path)}:{line})"
        lines.append(f"{own * 1000:8.1f} {share:5.1f}% {cumulative * 1000:9.1f} {calls:8d}  {where}")
    return "\n".join(lines)


def profile_sync(fn: Callable[[], object]) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        fn()
    finally:
        profiler.disable()
    return summarize(profiler)


async def profile_async(fn: Callable[[], Awaitable[object]]) -> str:
    """Profile one awaited run (the event-loop thread only: worker threads are not seen)."""
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        await fn()
    finally:
        profiler.disable()
    return summarize(profiler)


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


def rounds(
    fns: list[Callable[[], object]], runs: int, clock: Callable[[], float] = time.perf_counter
) -> list[list[float]]:
    """Time each of `fns` once per round, `runs` rounds: `alternate` for more than two. `clock`:
    `time.thread_time` for work that does no I/O and runs on this thread alone, so a figure is its
    CPU time, not also the time other processes of a shared machine took the core."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, sink in zip(fns, times, strict=True):
            start = clock()
            fn()
            sink.append(clock() - start)
    return times


def spread(values: list[float]) -> tuple[float, float, float]:
    """(min, median, max): how a ratio over paired runs is reported."""
    return min(values), statistics.median(values), max(values)


def cpu_rows(
    outcome: Outcome, name: str, subject: list[Timing], baseline: list[Timing], against: str, *, reaped: bool = True
) -> None:
    """What the CPU of paired runs (`Stopwatch`) says of their wall ratio, which the binary's own spread blurs:
    - the client's CPU per run, unified's less the baseline client's, in ms (informational), and up to the
      first output;
    - that CPU as a share of the baseline's wall: the most unified's own work can add to it. Held to the
      wall ratio's target (<= 0.05): above it, unified itself is the overhead;
    - the binary's CPU under unified against under the baseline (informational), when each run's binary is
      `reaped` by its end (not one a pool keeps warm): above 1, unified made the binary work more (flags,
      requests, files it gave it).
    """
    pairs = list(zip(subject, baseline, strict=True))
    low, added, high = spread([(s.cpu - b.cpu) * 1000 for s, b in pairs])
    outcome.ratio(f"{name}: client CPU, unified less {against}, ms", added, "informational", True, low=low, high=high)
    low, added, high = spread([(s.cpu_to_first - b.cpu_to_first) * 1000 for s, b in pairs])
    label = f"{name}: client CPU to first output, unified less {against}, ms"
    outcome.ratio(label, added, "informational", True, low=low, high=high)
    low, share, high = spread([(s.cpu - b.cpu) / b.wall for s, b in pairs])
    label = f"{name}: client CPU unified adds / {against} wall"
    outcome.ratio(label, share, "<= 0.05", share <= 0.05, low=low, high=high)
    if reaped:
        low, ratio, high = spread([s.binary_cpu / b.binary_cpu for s, b in pairs])
        label = f"{name}: the binary's CPU, under unified / under {against}"
        outcome.ratio(label, ratio, "informational", True, low=low, high=high)


def versions() -> dict[str, str]:
    out: dict[str, str] = {"python": platform.python_version()}
    for dist in ("unified", "google-genai", "pydantic", "anyio", "httpx"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def load_average() -> list[float]:
    """1, 5 and 15-minute load averages: how busy the shared machine was."""
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "load_average": load_average(),
    }


def write_report(
    outcomes: list[Outcome], path: Path, *, quick: bool, seconds: float, load_at_start: list[float]
) -> dict[str, Any]:
    report = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "seconds": round(seconds, 1),
        "load_average_at_start": load_at_start,
        "machine": machine(),
        "versions": versions(),
        "benchmarks": [
            {**{k: v for k, v in asdict(o).items() if k != "figures"}, "figures": [f.as_dict() for f in o.figures]}
            for o in outcomes
        ],
    }
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def render_header(report: dict[str, Any]) -> str:
    """Which run, on what machine, how busy it was, with which versions."""
    m = report["machine"]
    versions_text = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    minutes, seconds = divmod(round(report["seconds"]), 60)
    load_start = " / ".join(f"{x:g}" for x in report["load_average_at_start"])
    load_end = " / ".join(f"{x:g}" for x in m["load_average"])
    return (
        f"Run of {report['date']} (`quick={str(report['quick']).lower()}`) on {m['platform']}, {m['cpus']} CPUs; "
        f"load average (1 / 5 / 15 min) {load_start} at the start, {load_end} at the end; {versions_text}. "
        f"Whole run: {minutes} min {seconds} s."
    )


def render_table(outcomes: list[Outcome]) -> str:
    lines = ["| benchmark | ratio | median | min | max | target | met |", "|---|---|---|---|---|---|---|"]
    for o in outcomes:
        for name, value in o.ratios.items():
            low, high = (f"{x:.3g}" for x in o.spreads[name]) if name in o.spreads else ("", "")
            met = "yes" if o.met[name] else "NO"
            lines.append(f"| {o.benchmark} | {name} | {value:.3g} | {low} | {high} | {o.targets[name]} | {met} |")
    lines += ["", "| benchmark | figure | min | median | max | unit |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        for f in o.figures:
            lines.append(f"| {o.benchmark} | {f.name} | {f.min:.4g} | {f.median:.4g} | {f.max:.4g} | {f.unit} |")
    notes = [f"- {o.benchmark}: {n}" for o in outcomes for n in o.notes]
    if notes:
        lines += ["", *notes]
    missed = [(o.benchmark, name) for o in outcomes for name, met in o.met.items() if not met]
    if missed:
        lines += ["", "### Targets missed, and where the time goes", ""]
        for benchmark, name in missed:
            lines.append(f"- {benchmark}: **{name}**")
        for o in outcomes:
            for what, summary in o.profiles.items():
                lines += ["", f"Profile, {o.benchmark}: {what}", "", "```", summary, "```"]
    return "\n".join(lines)
