"""Concurrency and memory: 100 concurrent runs in one process, and one run of 1,000,000 events.

Part one runs 100 generate-content runs at once against FakeGemini, then (alternating) 100 raw
google-genai streams of the same answers on ONE shared client built before the timer starts (the fair
floor, `bench.bench_sdk_overhead.Baseline`): throughput ratio, peak RSS added per run, and the longest
event-loop stall, seen by a ticker task that asks to wake every 5 ms and records how late it woke.
The stall target: unified's longest stall under 10 ms, or no longer than the raw SDK's under the
same load (then it is the load's, not unified's).
Part two streams 1,000,000 events through the stream guard from a generator backend (text in
100-delta messages, a tool call every 1,000 events) and samples RSS every 100,000: it must stay flat,
because nothing may buffer the whole stream unless asked.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from bench._env import MODEL, isolated_home, workspace
from bench.bench_sdk_overhead import Baseline
from bench.harness import Figure, Outcome, profile_async, spread
from unified._execute import EventStream, execute
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.events import Result, SessionStarted, TextDelta, ToolResult, ToolUse
from unified.testing import FakeGemini, ModelTurn
from unified.types import ExecuteParams

_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss() -> int:
    """Resident set size now, in bytes."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * _PAGE


@dataclass
class Watch:
    """Samples RSS and event-loop lateness while a load runs."""

    period: float = 0.005
    peak_rss: int = 0
    longest_stall: float = 0.0
    _stop: anyio.Event = field(default_factory=anyio.Event)

    async def tick(self) -> None:
        while not self._stop.is_set():
            due = time.perf_counter() + self.period
            await anyio.sleep(self.period)
            self.longest_stall = max(self.longest_stall, time.perf_counter() - due)
            self.peak_rss = max(self.peak_rss, rss())

    def stop(self) -> None:
        self._stop.set()


@dataclass
class Load:
    seconds: float
    peak_rss_per_run: float
    stall: float


async def _unified_run(params: ExecuteParams) -> None:
    async with execute(params) as stream:
        async for event in stream:
            if isinstance(event, Result) and event.status != "success":
                raise RuntimeError(f"run failed: {event.error}")


async def concurrent(n: int, one: Callable[[], Coroutine[Any, Any, object]]) -> Load:
    gc.collect()
    before = rss()
    watch = Watch(peak_rss=before)
    start = time.perf_counter()
    async with anyio.create_task_group() as outer:
        outer.start_soon(watch.tick)
        async with anyio.create_task_group() as tg:
            for _ in range(n):
                tg.start_soon(one)
        seconds = time.perf_counter() - start
        watch.stop()
    return Load(seconds, (watch.peak_rss - before) / n, watch.longest_stall)


@dataclass
class _Firehose:
    """A backend that produces `count` events lazily, as a long real stream would."""

    count: int
    samples: list[int] = field(default_factory=list)
    every: int = 100_000
    name: str = "firehose"

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []

    async def run(self, ctx: RunContext) -> RunOutcome:
        await ctx.emit(SessionStarted(backend=self.name, session_id="firehose", capabilities={"text": "full"}))
        for n in range(1, self.count):
            if n % 1000 == 0:
                await ctx.emit(ToolUse(tool_use_id=f"t{n}", name="read_file"))
                await ctx.emit(ToolResult(tool_use_id=f"t{n}", output="ok"))
            elif n % 100 == 0:
                await ctx.end_message()
            else:
                await ctx.emit(TextDelta(text="tok "))
            if n % self.every == 0:
                self.samples.append(rss())
        return RunOutcome()


async def firehose(count: int) -> tuple[list[int], float, int]:
    """(RSS samples, seconds, events received) for one run of `count` events."""
    backend = _Firehose(count, every=max(count // 10, 1))
    received = 0
    start = time.perf_counter()
    async with EventStream(ExecuteParams(prompt="firehose", backend="generate-content"), backend=backend) as stream:
        async for _ in stream:
            received += 1
    return backend.samples, time.perf_counter() - start, received


async def _round(n: int, raw: bool, fake: FakeGemini, cwd: Path, params: ExecuteParams) -> Load:
    """`n` concurrent runs: raw SDK streams on one shared client, or unified runs."""
    if raw:
        async with Baseline(fake.base_url, cwd, cwd / "history.json") as baseline:
            return await concurrent(n, baseline.generate)
    return await concurrent(n, partial(_unified_run, params))


def run(quick: bool) -> Outcome:
    n, chunks, runs, events = (10, 20, 1, 20_000) if quick else (100, 50, 3, 1_000_000)
    outcome = Outcome("concurrency")
    with isolated_home() as home, FakeGemini() as fake:
        cwd = workspace(home)
        options: dict[str, object] = {"api_key": "bench-key", "base_url": fake.base_url, "local_tools": False}
        params = ExecuteParams(prompt="go", backend="generate-content", model=MODEL, cwd=cwd, backend_options=options)
        subject: list[Load] = []
        baseline: list[Load] = []
        for attempt in range(runs + 1):  # the first round warms imports and connection code up, untimed
            for raw, sink in ((True, baseline), (False, subject)):
                fake.add(*[ModelTurn(text="token " * chunks, text_chunks=chunks) for _ in range(n)])
                load = anyio.run(_round, n, raw, fake, cwd, params)
                fake.assert_done()
                if attempt:
                    sink.append(load)
        outcome.figures += [
            Figure(f"{n} concurrent unified runs", "runs/s", [n / s.seconds for s in subject]),
            Figure(f"{n} concurrent raw SDK streams (shared client)", "runs/s", [n / b.seconds for b in baseline]),
            Figure("unified: peak RSS added per run", "KiB", [s.peak_rss_per_run / 1024 for s in subject]),
            Figure("raw SDK: peak RSS added per stream", "KiB", [b.peak_rss_per_run / 1024 for b in baseline]),
            Figure("unified: longest event-loop stall", "ms", [s.stall * 1000 for s in subject]),
            Figure("raw SDK: longest event-loop stall", "ms", [b.stall * 1000 for b in baseline]),
        ]
        pairs = list(zip(subject, baseline, strict=True))
        low, throughput, high = spread([b.seconds / s.seconds for s, b in pairs])
        outcome.ratio("throughput, unified / raw SDK", throughput, ">= 0.95", throughput >= 0.95, low=low, high=high)
        low, stall, high = spread([s.stall / max(b.stall, 1e-6) for s, b in pairs])
        longest = spread([s.stall * 1000 for s, _ in pairs])[1]
        stall_met = longest < 10 or stall <= 1
        outcome.ratio("longest stall, unified / raw SDK", stall, "< 10 ms or <= 1", stall_met, low=low, high=high)
        outcome.notes.append(f"unified's longest event-loop stall, median of rounds: {longest:.1f} ms")
        if not (stall_met and throughput >= 0.95) and not quick:
            fake.add(*[ModelTurn(text="token " * chunks, text_chunks=chunks) for _ in range(n)])
            outcome.profiles[f"{n} concurrent unified runs"] = anyio.run(
                profile_async, partial(_round, n, False, fake, cwd, params)
            )
            fake.assert_done()
    samples, seconds, received = anyio.run(firehose, events)
    growth = (samples[-1] - samples[0]) / 2**20
    outcome.figures += [
        Figure(f"{events} events through the guard", "events/s", [received / seconds]),
        Figure("RSS along the stream (each tenth)", "MiB", [s / 2**20 for s in samples]),
    ]
    flat = samples[-1] / samples[0]
    outcome.ratio(f"RSS at {events} events / at {events // 10}", flat, "<= 1.05 (flat)", flat <= 1.05)
    outcome.notes.append(f"RSS grew {growth:.1f} MiB between the first and last tenth of {received} events")
    return outcome
