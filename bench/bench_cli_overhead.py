"""Overhead over the raw Gemini CLI, and what the warm process pool buys.

The same recorded session (`--fake-responses`, strict) is run three ways from a cold start:
- baseline: the `gemini` binary itself, `-p ... --output-format stream-json`, its stdout read line by line;
- the gemini-cli backend on the stream-json transport: the same argv plus the `--policy` file unified gives
  every run (its protected paths), so the ratio is ours, that file's cost to the CLI included;
- the gemini-cli backend on ACP (its default), started cold: a different CLI mode, held to the same wall target.
Time to first output is the first assistant text. Then time to the FIRST EVENT of a new run: a warm pool
(one `gemini --acp` already initialized) against a cold `gemini -p` start to its first stdout line.
The baseline is the floor: nothing can show the CLI's output before the CLI prints it.

A cold `gemini` start takes ~1.4 s with tens of ms of noise, more than the figure at stake, and the
order of two runs in a round skews them (an A/A run of `gemini -p` against itself gave +14 ms in
the median): one untimed round first, then rounds whose order flips every time (baseline first,
then last), seven of them.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio

from bench._env import MODEL, RECORDINGS, gemini_binary, isolated_home, workspace
from bench.harness import Figure, Outcome, Timing, profile_async, spread, through_unified
from unified._adapters.gemini_cli._acp import AcpPool
from unified._adapters.gemini_cli._launch import gemini_env
from unified.types import ExecuteParams

SESSION = RECORDINGS / "json-output.france.responses"


def direct(binary: Path, cwd: Path, *, first_line: bool = False) -> Timing:
    """(wall, first assistant message) of `gemini -p`; with `first_line`, stop timing at its first line."""
    argv = [str(binary), "-p", "go", "--output-format", "stream-json", "--approval-mode", "default"]
    argv += ["-m", MODEL, "--fake-responses", str(SESSION)]
    start = time.perf_counter()
    first = 0.0
    with subprocess.Popen(
        argv, cwd=cwd, env=gemini_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as child:
        assert child.stdout is not None
        for line in child.stdout:
            if first_line:
                first = time.perf_counter() - start
                child.kill()
                break
            if not first and b'"role":"assistant"' in line.replace(b" ", b""):
                first = time.perf_counter() - start
    if child.returncode not in (0, -9):
        raise RuntimeError(f"gemini -p exited {child.returncode}")
    return time.perf_counter() - start, first


def _params(cwd: Path, **options: object) -> ExecuteParams:
    opts: dict[str, object] = {"fake_responses": str(SESSION), "pool_size": 0, **options}
    return ExecuteParams(prompt="go", backend="gemini-cli", model=MODEL, cwd=cwd, backend_options=opts)


def _compare(outcome: Outcome, name: str, subject: list[Timing], baseline: list[Timing], *, first_target: bool) -> bool:
    """Wall ratio (target <= 1.05) and first output ms added; True when every target held."""
    outcome.figures += [
        Figure(f"{name}: wall", "s", [t[0] for t in subject]),
        Figure(f"{name}: first output", "s", [t[1] for t in subject]),
    ]
    low, ratio, high = spread([s[0] / b[0] for s, b in zip(subject, baseline, strict=True)])
    first_low, first, first_high = spread([(s[1] - b[1]) * 1000 for s, b in zip(subject, baseline, strict=True)])
    outcome.ratio(f"{name} / gemini -p: wall ratio", ratio, "<= 1.05", ratio <= 1.05, low=low, high=high)
    first_met = first < 1 or not first_target
    target = "< 1 ms" if first_target else "informational"
    outcome.ratio(f"{name}: first output, ms added", first, target, first_met, low=first_low, high=first_high)
    return ratio <= 1.05 and first_met


def _any_event(event: object) -> bool:
    return True


async def _warm_first_events(params: ExecuteParams, runs: int) -> list[float]:
    """One untimed run fills the pool; each later run's first event comes from the warm process."""
    await through_unified(params, _any_event)
    return [(await through_unified(params, _any_event))[1] for _ in range(runs)]


def run(quick: bool) -> Outcome:
    outcome = Outcome("cli_overhead")
    binary = gemini_binary()
    if binary is None:
        outcome.notes.append("skipped: the pinned gemini binary is not installed (scripts/setup installs it)")
        return outcome
    runs = 1 if quick else 7
    with isolated_home() as home:
        cwd = workspace(home)
        baseline: list[Timing] = []
        stream_json: list[Timing] = []
        acp: list[Timing] = []
        cold_first: list[float] = []
        steps: list[Callable[[], None]] = [
            lambda: baseline.append(direct(binary, cwd)),
            lambda: stream_json.append(anyio.run(partial(through_unified, _params(cwd, transport="stream-json")))),
            lambda: acp.append(anyio.run(partial(through_unified, _params(cwd)))),
            lambda: cold_first.append(direct(binary, cwd, first_line=True)[1]),
        ]
        if not quick:  # the untimed round: the binary's files and unified's code read once
            for step in steps:
                step()
            for timings in (baseline, stream_json, acp, cold_first):
                timings.clear()
        for round_ in range(runs):
            for step in steps if round_ % 2 == 0 else reversed(steps):
                step()
        outcome.figures += [
            Figure("gemini -p: wall", "s", [t[0] for t in baseline]),
            Figure("gemini -p: first output", "s", [t[1] for t in baseline]),
        ]
        for name, timings, params, first_target in (
            ("unified stream-json", stream_json, _params(cwd, transport="stream-json"), True),
            ("unified ACP (cold)", acp, _params(cwd), False),
        ):
            if not _compare(outcome, name, timings, baseline, first_target=first_target) and not quick:
                outcome.profiles[f"{name}: one run"] = anyio.run(profile_async, partial(through_unified, params))
        pool = AcpPool(size=1)
        warm_params = _params(cwd, pool=pool, pool_size=1, fake_responses_strict=False)
        try:
            warm = anyio.run(_warm_first_events, warm_params, 1 if quick else max(runs, 3))
        finally:
            pool.close_now()
        outcome.figures += [
            Figure("cold gemini -p: first stdout line", "s", cold_first),
            Figure("warm pool: first event", "s", warm),
        ]
        speedup = spread(cold_first)[1] / spread(warm)[1]
        outcome.ratio("first event: cold gemini -p / warm pool", speedup, "> 20x", speedup > 20)
    return outcome
