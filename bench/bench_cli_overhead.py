"""Overhead over the raw Gemini CLI, and what the warm process pool buys.

The same recorded session (`--fake-responses`, strict) is run three ways from a cold start:
- baseline: the `gemini` binary itself, `-p ... --output-format stream-json`, its stdout read line by line;
- the gemini-cli backend on the stream-json transport: the same argv plus the `--policy` file unified gives
  every run (its protected paths), so the ratio is ours, that file's cost to the CLI included;
- the gemini-cli backend on ACP (its default), started cold: a different CLI mode, held to the same wall target,
  and against `gemini --acp` itself driven by a minimal client (`acp_driven`: the very argv, environment,
  cwd and requests), so that ratio is exactly unified's and the first one includes what ACP costs the CLI.
Time to first output is the first assistant text. Then time to the FIRST EVENT of a new run: a warm pool
(one `gemini --acp` already initialized) against a cold `gemini -p` start to its first stdout line.
The baseline is the floor: nothing can show the CLI's output before the CLI prints it.

A cold `gemini` start takes ~1.4 s with tens of ms of noise, more than the figure at stake, and the
order of two runs in a round skews them (an A/A run of `gemini -p` against itself gave +14 ms in
the median): one untimed round first, then rounds whose order flips every time (baseline first,
then last), seven of them.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from bench._env import MODEL, RECORDINGS, gemini_binary, isolated_home, workspace
from bench.harness import Figure, Outcome, Stopwatch, Timing, cpu_rows, profile_async, spread, through_unified
from unified._adapters.gemini_cli._acp import AcpPool, initialize_params
from unified._adapters.gemini_cli._backend import GeminiCliBackend
from unified._adapters.gemini_cli._backend import _workdir as acp_workdir
from unified._adapters.gemini_cli._launch import CLI_MODES, gemini_env
from unified._adapters.gemini_cli._run import prompt_blocks
from unified.types import ExecuteParams

SESSION = RECORDINGS / "json-output.france.responses"


def direct(binary: Path, cwd: Path, *, first_line: bool = False) -> Timing:
    """(wall, first assistant message) of `gemini -p`; with `first_line`, stop timing at its first line."""
    argv = [str(binary), "-p", "go", "--output-format", "stream-json", "--approval-mode", "default"]
    argv += ["-m", MODEL, "--fake-responses", str(SESSION)]
    watch = Stopwatch()
    with subprocess.Popen(
        argv, cwd=cwd, env=gemini_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as child:
        assert child.stdout is not None
        for line in child.stdout:
            if first_line:
                watch.mark_first()
                child.kill()
                break
            if not watch.first and b'"role":"assistant"' in line.replace(b" ", b""):
                watch.mark_first()
    if child.returncode not in (0, -9):
        raise RuntimeError(f"gemini -p exited {child.returncode}")
    return watch.timing()


def acp_driven(params: ExecuteParams) -> Timing:
    """(wall, first assistant text) of `gemini --acp` driven by the least a client must do, with the very
    argv, environment and cwd the backend gives it and its requests (`initialize`, `session/new`,
    `session/set_model`, `session/set_mode` when the mode needs it, `session/prompt`), each sent once the
    previous one is answered, read to the prompt's answer; then stdin is closed and the exit waited for
    (the CLI exits at its end of input). Against it the ratio is exactly unified's; against `gemini -p`
    it includes what the ACP mode costs the CLI itself."""
    launch = GeminiCliBackend(params).launch
    watch = Stopwatch()
    with subprocess.Popen(
        launch.acp_argv(),
        cwd=acp_workdir(),
        env=launch.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        stdin, stdout = child.stdin, child.stdout

        def ask(request_id: int, method: str, request: dict[str, Any]) -> dict[str, Any]:
            message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": request}
            stdin.write(json.dumps(message).encode() + b"\n")
            stdin.flush()
            for line in stdout:
                received = json.loads(line)
                update = received.get("params", {}).get("update", {}) if received.get("method") else {}
                if not watch.first and update.get("sessionUpdate") == "agent_message_chunk":
                    watch.mark_first()
                if received.get("id") == request_id and "method" not in received:
                    answer: dict[str, Any] = received.get("result") or {}
                    return answer
            raise RuntimeError(f"gemini --acp closed its output before answering {method}")

        ask(1, "initialize", initialize_params())
        session_id = ask(2, "session/new", {"cwd": str(params.cwd), "mcpServers": []})["sessionId"]
        ask(3, "session/set_model", {"sessionId": session_id, "modelId": launch.model_for()})
        if CLI_MODES[params.approval_mode] != "default":
            ask(4, "session/set_mode", {"sessionId": session_id, "modeId": CLI_MODES[params.approval_mode]})
        ask(5, "session/prompt", {"sessionId": session_id, "prompt": prompt_blocks(params)})
        stdin.close()
        child.wait()
    if child.returncode != 0 or not watch.first:
        raise RuntimeError(f"gemini --acp exited {child.returncode} (answer seen: {bool(watch.first)})")
    return watch.timing()


def _params(cwd: Path, **options: object) -> ExecuteParams:
    opts: dict[str, object] = {"fake_responses": str(SESSION), "pool_size": 0, **options}
    return ExecuteParams(prompt="go", backend="gemini-cli", model=MODEL, cwd=cwd, backend_options=opts)


def _compare(
    outcome: Outcome,
    name: str,
    subject: list[Timing],
    baseline: list[Timing],
    *,
    first_target: bool,
    against: str = "gemini -p",
) -> bool:
    """Wall ratio (target <= 1.05) and first output ms added; True when every target held."""
    low, ratio, high = spread([s[0] / b[0] for s, b in zip(subject, baseline, strict=True)])
    first_low, first, first_high = spread([(s[1] - b[1]) * 1000 for s, b in zip(subject, baseline, strict=True)])
    outcome.ratio(f"{name} / {against}: wall ratio", ratio, "<= 1.05", ratio <= 1.05, low=low, high=high)
    first_met = first < 1 or not first_target
    target = "< 1 ms" if first_target else "informational"
    label = f"{name}: first output, ms added" + ("" if against == "gemini -p" else f" (vs {against})")
    outcome.ratio(label, first, target, first_met, low=first_low, high=first_high)
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
        acp_floor: list[Timing] = []
        cold_first: list[float] = []
        steps: list[Callable[[], None]] = [
            lambda: baseline.append(direct(binary, cwd)),
            lambda: stream_json.append(anyio.run(partial(through_unified, _params(cwd, transport="stream-json")))),
            lambda: acp.append(anyio.run(partial(through_unified, _params(cwd)))),
            lambda: acp_floor.append(acp_driven(_params(cwd))),
            lambda: cold_first.append(direct(binary, cwd, first_line=True)[1]),
        ]
        if not quick:  # the untimed round: the binary's files and unified's code read once
            for step in steps:
                step()
            for timings in (baseline, stream_json, acp, acp_floor, cold_first):
                timings.clear()
        for round_ in range(runs):
            for step in steps if round_ % 2 == 0 else reversed(steps):
                step()
        for label, timings in (
            ("gemini -p", baseline),
            ("unified stream-json", stream_json),
            ("unified ACP (cold)", acp),
            ("gemini --acp driven directly", acp_floor),
        ):
            outcome.figures += [
                Figure(f"{label}: wall", "s", [t[0] for t in timings]),
                Figure(f"{label}: first output", "s", [t[1] for t in timings]),
            ]
        stream_params, acp_params = _params(cwd, transport="stream-json"), _params(cwd)
        for name, timings, params, against, floor, first_target in (
            ("unified stream-json", stream_json, stream_params, "gemini -p", baseline, True),
            ("unified ACP (cold)", acp, acp_params, "gemini -p", baseline, False),
            ("unified ACP (cold)", acp, acp_params, "gemini --acp driven directly", acp_floor, False),
        ):
            met = _compare(outcome, name, timings, floor, first_target=first_target, against=against)
            cpu_rows(outcome, name, timings, floor, against)
            if not met and not quick and f"{name}: one run" not in outcome.profiles:
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
