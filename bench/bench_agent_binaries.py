"""Overhead over the raw `claude` and `codex` binaries, each against its fake model server.

The same one-turn task ("go", answered with four text chunks) runs two ways, alternately, from a
cold start (a new process each run, as claude-code starts one per run and codex with `pool_size=0`):
- baseline: the binary's own one-shot mode, its stdout read line by line: `claude -p ...
  --output-format stream-json --verbose --include-partial-messages` and `codex exec --json`, with
  the very environment and isolated home the backend gives its child (the same variables, the same
  provider overrides), so the difference is what `unified` adds;
- subject: `unified.execute` on the claude-code backend (stream-json both ways, the control
  protocol, a permission bridge) or the codex backend (`codex app-server`, JSON-RPC).
Each backend has a second baseline: the very argv and environment unified gives the binary, driven
with the least a client must do, so against it the ratio is exactly unified's (against the one-shot
mode it includes what the driven mode costs the binary itself):
- claude-code (stream-json both ways): the `initialize` request and the prompt written at once,
  stdout read until the `result`, stdin closed, the exit waited for;
- codex (`codex app-server`, the argv, environment and run marker of `Launch`): `initialize`, and
  once it is answered (the protocol rejects any request before that) `initialized` and the key's
  `account/login/start` (the key never goes in the environment), `thread/start` with unified's very
  parameters once the login is answered, then `turn/start` once the thread's id is known,
  stdout read until `turn/completed`, stdin closed (app-server then exits by itself: over 30 runs
  each, as soon as SIGTERM and without a signal to send), the exit waited for.
Time to first output is the first piece of answer text (a stream-json `text_delta`, an exec
`agent_message`, a unified `text_delta`). The baseline is the floor: nothing can show a binary's
output before it prints it. The modes differ (a one-shot print against a driven session), so the
ratio is held to the same target as gemini-cli's ACP against `gemini -p`.
claude-code's warm mode has rows of its own (`_measure_claude_spares`): a run that takes a spare
against a cold run, informational.

Codex warm (`_codex_warm`): the run on an app-server the pool keeps warm, against the same run cold and
against one app-server kept running by a minimal client (`WarmAppServer`), in one event loop.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from bench._env import ROOT, isolated_home, workspace
from bench.harness import Figure, Outcome, Stopwatch, Timing, cpu_rows, profile_async, spread, through_unified
from unified.testing import CODEX_MODEL, FakeAnthropic, FakeOpenAI, ModelTurn, backend_options_for
from unified.types import ExecuteParams

ANSWER = ModelTurn(text="The answer is four words.", text_chunks=4)


def _binary(env_name: str, folder: str, name: str) -> Path | None:
    given = os.environ.get(env_name)
    path = Path(given) if given else ROOT / folder / "node_modules" / ".bin" / name
    return path if path.exists() else None


def direct(argv: list[str], cwd: Path, env: dict[str, str], first_marker: bytes) -> Timing:
    """(wall, first answer text) of a one-shot binary run, its stdout read as it comes."""
    watch = Stopwatch()
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as child:
        assert child.stdout is not None
        for line in child.stdout:
            if not watch.first and first_marker in line:
                watch.mark_first()
    if child.returncode != 0 or not watch.first:
        raise RuntimeError(f"{argv[0]} exited {child.returncode} (answer seen: {bool(watch.first)})")
    return watch.timing()


def driven(argv: list[str], cwd: Path, env: dict[str, str]) -> Timing:
    """(wall, first answer text) of the stream-json session mode driven by a minimal client."""
    watch = Stopwatch()
    initialize = {"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize"}}
    prompt = {"type": "user", "message": {"role": "user", "content": "go"}, "parent_tool_use_id": None}
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.write(f"{json.dumps(initialize)}\n{json.dumps(prompt)}\n".encode())
        child.stdin.flush()
        for line in child.stdout:
            if not watch.first and b'"text_delta"' in line:
                watch.mark_first()
            if b'"result"' in line and json.loads(line).get("type") == "result":
                break
        child.stdin.close()
        child.wait()
    if child.returncode != 0 or not watch.first:
        raise RuntimeError(f"{argv[0]} exited {child.returncode} (answer seen: {bool(watch.first)})")
    return watch.timing()


def driven_app_server(argv: list[str], cwd: Path, env: dict[str, str], requests: dict[str, Any]) -> Timing:
    """(wall, first answer text) of `codex app-server` driven by a minimal client (see the module docstring);
    `requests` holds the params of `initialize` and `thread/start` and the turn's `input`."""
    watch = Stopwatch()
    status = None
    with subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        stdin = child.stdin

        def send(*messages: dict[str, object]) -> None:
            stdin.write(b"".join(json.dumps(message).encode() + b"\n" for message in messages))
            stdin.flush()

        send({"id": 1, "method": "initialize", "params": requests["initialize"]})
        for line in child.stdout:
            if not watch.first and b'"item/agentMessage/delta"' in line:
                watch.mark_first()
            message = json.loads(line)
            if "error" in message:
                raise RuntimeError(f"codex app-server answered {message}")
            if message.get("id") == 1:
                login = {"id": 4, "method": "account/login/start", "params": requests["login"]}
                send({"method": "initialized", "params": {}}, login)
            elif message.get("id") == 4:
                send({"id": 2, "method": "thread/start", "params": requests["thread"]})
            elif message.get("id") == 2:
                turn = {"threadId": message["result"]["thread"]["id"], "input": requests["input"]}
                send({"id": 3, "method": "turn/start", "params": turn})
            elif message.get("method") == "turn/completed":
                status = message["params"]["turn"]["status"]
                break
        stdin.close()
        child.wait()
    if child.returncode != 0 or not watch.first or status != "completed":
        raise RuntimeError(f"{argv[0]} exited {child.returncode} (answer seen: {bool(watch.first)}, turn: {status})")
    return watch.timing()


def _claude(
    binary: Path, fake: FakeAnthropic, home: Path, cwd: Path
) -> tuple[ExecuteParams, Callable[[], Timing], Callable[[], Timing]]:
    from unified._adapters.claude_code._launch import Launch
    from unified._adapters.claude_code._options import claude_code_options

    options = {**backend_options_for(fake, "claude-code", cli_home=home / "claude-home"), "claude_binary": str(binary)}
    params = ExecuteParams(prompt="go", backend="claude-code", cwd=cwd, backend_options=options)
    launch = Launch.of(params, claude_code_options(options))
    argv = [str(binary), "-p", "go", "--output-format", "stream-json", "--verbose", "--include-partial-messages"]
    argv += ["--setting-sources", "user"]

    # The key file the argv's apiKeyHelper reads exists while a process holds a lease on it (`_key_file`):
    # the runs' own lease, held for as long as the benchmark may start the binary (dropped at its exit).
    key_lease = launch.lease()

    def same_argv() -> Timing:
        assert key_lease is None or key_lease.held
        return driven(launch.argv(session_id=str(uuid.uuid4()), resume=False), cwd, launch.run_env())

    # `claude -p` as a user runs it: the key in its environment. The backend gives it through the CLI's
    # apiKeyHelper instead (a `cat` the CLI runs at start: out of the model's commands), which is
    # unified's cost, so it counts against unified here; the same-argv baseline has it too.
    one_shot_env = {**launch.env, "ANTHROPIC_API_KEY": fake.cli_env["ANTHROPIC_API_KEY"]}
    return params, partial(direct, argv, cwd, one_shot_env, b'"text_delta"'), same_argv


@dataclass
class CodexSetup:
    """One codex run as the backend makes it, and what the baselines give the binary."""

    params: ExecuteParams
    exec_argv: list[str]
    """`codex exec --json` with the backend's provider overrides."""
    exec_env: dict[str, str]
    argv: list[str]
    """What `CodexRun` gives the process and sends it: the argv, the environment with a run's marker, the
    `initialize` and thread parameters (with the cwd), the prompt."""
    env: dict[str, str]
    requests: dict[str, Any]


def _codex_setup(binary: Path, fake: FakeOpenAI, home: Path, cwd: Path) -> CodexSetup:
    from unified._adapters.codex._launch import PROVIDER, Launch, prepare_home, toml_value
    from unified._adapters.codex._options import codex_options
    from unified._adapters.codex._run import initialize_params, thread_params, user_input
    from unified._binary.strays import MARKER

    options = {**backend_options_for(fake, "codex", cli_home=home / "codex-home"), "codex_binary": str(binary)}
    options["pool_size"] = 0  # a cold process each run, as the baselines start one (warm runs: `_codex_warm`)
    params = ExecuteParams(prompt="go", backend="codex", model=CODEX_MODEL, cwd=cwd, backend_options=options)
    launch = Launch.of(params, codex_options(options))
    prepare_home(launch.home)
    argv = [str(launch.binary), "exec", "--json", "--skip-git-repo-check"]
    for key, value in launch.overrides:
        if key == f"model_providers.{PROVIDER}":  # exec has no login request: the key as its variable
            provider = {k: v for k, v in value.items() if k != "requires_openai_auth"}
            value = {**provider, "env_key": "OPENAI_API_KEY"}
        argv += ["-c", f"{key}={toml_value(value)}"]
    argv.append("go")
    assert launch.api_key is not None
    exec_env = {**launch.env, "OPENAI_API_KEY": launch.api_key}
    requests = {
        "initialize": initialize_params(),
        "login": {"type": "apiKey", "apiKey": launch.api_key},
        "thread": {**thread_params(params), "cwd": str(cwd.expanduser().resolve())},
        "input": user_input("go", ()),
    }
    run_env = {**launch.env, MARKER: secrets.token_hex(8)}
    return CodexSetup(params, argv, exec_env, launch.argv(), run_env, requests)


def _codex(
    binary: Path, fake: FakeOpenAI, home: Path, cwd: Path
) -> tuple[ExecuteParams, Callable[[], Timing], Callable[[], Timing]]:
    setup = _codex_setup(binary, fake, home, cwd)
    same_argv = partial(driven_app_server, setup.argv, cwd, setup.env, setup.requests)
    return setup.params, partial(direct, setup.exec_argv, cwd, setup.exec_env, b'"agent_message"'), same_argv


class WarmAppServer:
    """One `codex app-server` kept running (the argv, environment and marker of `Launch`), driven by a minimal
    client: `initialize` once, then each run `thread/start` with unified's parameters and `turn/start`, read
    until that thread's `turn/completed`, then `thread/unsubscribe` and its `thread/closed` (a client that keeps
    the process must let the thread go: else loaded threads pile up, and a later resume gets the thread as
    memory holds it, not as its rollout says). The floor of a run on a warm process."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], requests: dict[str, Any]) -> None:
        self.requests = requests
        self.child = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.next_id = 0
        self._request("initialize", requests["initialize"])
        self._send({"method": "initialized", "params": {}})
        login = self._request("account/login/start", requests["login"])
        for line in self._lines():  # answered before any thread, as unified waits for it
            if json.loads(line).get("id") == login:
                break

    def _send(self, message: dict[str, Any]) -> None:
        assert self.child.stdin is not None
        self.child.stdin.write(json.dumps(message).encode() + b"\n")
        self.child.stdin.flush()

    def _request(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def _lines(self) -> Iterator[bytes]:
        assert self.child.stdout is not None
        while line := self.child.stdout.readline():
            yield line
        raise RuntimeError(f"codex app-server exited {self.child.wait()}")

    def __call__(self) -> Timing:
        watch = Stopwatch()
        thread_request = self._request("thread/start", self.requests["thread"])
        thread = None
        for line in self._lines():
            if not watch.first and b'"item/agentMessage/delta"' in line:
                watch.mark_first()
            message = json.loads(line)
            if "error" in message:
                raise RuntimeError(f"codex app-server answered {message}")
            if message.get("id") == thread_request:
                thread = message["result"]["thread"]["id"]
                self._request("turn/start", {"threadId": thread, "input": self.requests["input"]})
            elif message.get("method") == "turn/completed" and message["params"]["threadId"] == thread:
                if message["params"]["turn"]["status"] != "completed" or not watch.first:
                    raise RuntimeError(f"the turn did not complete with an answer: {message}")
                self._request("thread/unsubscribe", {"threadId": thread})
            elif message.get("method") == "thread/closed" and message["params"]["threadId"] == thread:
                return watch.timing()
        raise AssertionError("unreachable: _lines raises at the end")

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait()


def _codex_warm(outcome: Outcome, binary: Path, fake: FakeOpenAI, home: Path, cwd: Path, runs: int) -> None:
    """A codex run on a warm app-server (`backend_options.pool`, filled by one untimed run) against the same run
    cold (`pool_size=0`) and against a warm app-server driven directly (`WarmAppServer`), alternately in one event
    loop (the pool keeps a process per loop); the order flips each round. Fair rule, as for the cold runs: wall,
    unified / the same argv driven directly (warm) <= 1.05; warm against cold is informational."""
    from unified._adapters.codex._pool import CodexPool

    setup = _codex_setup(binary, fake, home, cwd)
    cold = setup.params
    pool = CodexPool(size=1)
    options = {key: value for key, value in cold.backend_options_dict().items() if key != "pool_size"}
    warm = cold.model_copy(update={"backend_options": {**options, "pool": pool}})
    timings: dict[str, list[Timing]] = {"warm": [], "cold": [], "direct": []}

    async def measure() -> None:
        direct = WarmAppServer(setup.argv, cwd, setup.env, setup.requests)
        subjects: dict[str, Callable[[], Awaitable[Timing]]] = {
            "warm": partial(through_unified, warm),
            "cold": partial(through_unified, cold),
            "direct": partial(anyio.to_thread.run_sync, direct),
        }
        try:
            for subject in subjects.values():  # untimed: fills the pool, warms the page cache
                await subject()
            for round_ in range(runs):
                order = list(subjects) if round_ % 2 else list(reversed(subjects))
                for label in order:
                    timings[label].append(await subjects[label]())
        finally:
            direct.close()
            await pool.aclose()
        if pool.spawned != 1:
            raise RuntimeError(f"the warm runs started {pool.spawned} processes, not 1")

    anyio.run(measure)
    name = "codex warm (app-server)"
    labels = {"warm": "unified", "cold": "unified cold (pool_size=0)", "direct": "the same argv driven directly, warm"}
    for label, samples in timings.items():
        outcome.figures += [
            Figure(f"{name}: {labels[label]} wall", "s", [t[0] for t in samples]),
            Figure(f"{name}: {labels[label]} first output", "s", [t[1] for t in samples]),
        ]
    pairs = list(zip(timings["warm"], timings["direct"], strict=True))
    low, ratio, high = spread([w[0] / d[0] for w, d in pairs])
    outcome.ratio(f"{name}: wall, unified / {labels['direct']}", ratio, "<= 1.05", ratio <= 1.05, low=low, high=high)
    low, added, high = spread([(w[1] - d[1]) * 1000 for w, d in pairs])
    outcome.ratio(
        f"{name}: first output vs {labels['direct']}, ms added", added, "informational", True, low=low, high=high
    )
    cpu_rows(outcome, name, timings["warm"], timings["direct"], labels["direct"], reaped=False)
    against_cold = list(zip(timings["warm"], timings["cold"], strict=True))
    for index, what in ((0, "wall"), (1, "first output")):
        low, value, high = spread([w[index] / c[index] for w, c in against_cold])
        outcome.ratio(f"{name}: {what}, warm / cold", value, "informational", True, low=low, high=high)


def _measure(
    outcome: Outcome,
    name: str,
    params: ExecuteParams,
    baselines: dict[str, Callable[[], Timing]],
    runs: int,
    quick: bool,
) -> None:
    if not quick:  # untimed warm-ups: the page cache is not per-run overhead (a quick run checks the harness)
        for baseline in baselines.values():
            baseline()
        anyio.run(through_unified, params)
    subject_t: list[Timing] = []
    baseline_t: dict[str, list[Timing]] = {label: [] for label in baselines}
    for round_ in range(runs):  # alternately, so drift hits every one alike; the order flips each round,
        if round_ % 2:  # so whatever the run before leaves behind (a busy disk, a warm cache) does too
            subject_t.append(anyio.run(through_unified, params))
        for label, baseline in baselines.items():
            baseline_t[label].append(baseline())
        if not round_ % 2:
            subject_t.append(anyio.run(through_unified, params))
    outcome.figures += [
        Figure(f"{name}: unified wall", "s", [t[0] for t in subject_t]),
        Figure(f"{name}: unified first output", "s", [t[1] for t in subject_t]),
    ]
    missed = False
    for label, timings in baseline_t.items():
        outcome.figures += [
            Figure(f"{name}: {label} wall", "s", [t[0] for t in timings]),
            Figure(f"{name}: {label} first output", "s", [t[1] for t in timings]),
        ]
        low, ratio, high = spread([s[0] / b[0] for s, b in zip(subject_t, timings, strict=True)])
        outcome.ratio(f"{name}: wall, unified / {label}", ratio, "<= 1.05", ratio <= 1.05, low=low, high=high)
        first_low, first, first_high = spread([(s[1] - b[1]) * 1000 for s, b in zip(subject_t, timings, strict=True)])
        outcome.ratio(
            f"{name}: first output vs {label}, ms added", first, "informational", True, low=first_low, high=first_high
        )
        cpu_rows(outcome, name, subject_t, timings, label)
        missed = missed or ratio > 1.05
    if missed and not quick:
        outcome.profiles[f"{name}: one unified run"] = anyio.run(profile_async, partial(through_unified, params))


def _measure_claude_spares(outcome: Outcome, params: ExecuteParams, runs: int) -> None:
    """claude-code's warm mode: a run that takes a spare (`pool`) against a cold run, alternately.

    Before every timed run the waiting spare is given the time to be ready, awaited, not slept for:
    until it has answered its `initialize` (`ClaudeSpare.initialized`). So the spare's start (~0.47 s
    of CPU) never overlaps a timed run, the cold one included; what a warm run pays for the next
    spare (its spawn, the CLI starting beside the run's own) is in its figures. Not all of it: 2.1.332
    still does ~0.1 s of deferred start-up work within a second after it answered (measured from its
    /proc CPU time), which no message marks, so the runs right after share the CPU with it: the cold
    row reads up to ~0.1 s slower than `_measure`'s. Informational: the gain is the binary's start."""
    from unified._adapters.claude_code import ClaudeSparePool
    from unified._adapters.claude_code._options import claude_code_options

    pool = ClaudeSparePool(size=1)
    options = claude_code_options(params.backend_options).model_copy(update={"pool": pool})
    warm = params.model_copy(update={"backend_options": options})

    async def spare_ready() -> None:
        for spare in pool.spares():
            await spare.initialized()

    def in_spare() -> Timing:
        anyio.run(spare_ready)
        taken = pool.taken
        timing = anyio.run(through_unified, warm)
        if pool.taken != taken + 1:
            raise RuntimeError("the warm run did not take the spare: it would time as a cold one")
        return timing

    def cold() -> Timing:
        anyio.run(spare_ready)
        return anyio.run(through_unified, params)

    try:
        anyio.run(through_unified, warm)  # untimed: leaves the first spare
        spare_t: list[Timing] = []
        cold_t: list[Timing] = []
        for round_ in range(runs):  # the order flips each round, as in `_measure`
            pair = (in_spare, cold) if round_ % 2 else (cold, in_spare)
            for fn in pair:
                (spare_t if fn is in_spare else cold_t).append(fn())
    finally:
        anyio.run(pool.aclose)
    name = "claude-code"
    outcome.figures += [
        Figure(f"{name}: run in a spare wall", "s", [t[0] for t in spare_t]),
        Figure(f"{name}: run in a spare first output", "s", [t[1] for t in spare_t]),
        Figure(f"{name}: cold run (beside the spares) wall", "s", [t[0] for t in cold_t]),
        Figure(f"{name}: cold run (beside the spares) first output", "s", [t[1] for t in cold_t]),
    ]
    for what, index in (("first output", 1), ("wall", 0)):
        low, ratio, high = spread([s[index] / c[index] for s, c in zip(spare_t, cold_t, strict=True)])
        outcome.ratio(f"{name}: {what}, run in a spare / cold run", ratio, "informational", True, low=low, high=high)


def run(quick: bool) -> Outcome:
    outcome = Outcome("agent_binaries")
    runs = 1 if quick else 8
    claude = _binary("UNIFIED_CLAUDE_BIN", ".claude-code", "claude")
    codex = _binary("UNIFIED_CODEX_BIN", ".codex-cli", "codex")
    with isolated_home() as home:
        cwd = workspace(home)
        if claude is None:
            outcome.notes.append("claude-code skipped: the pinned claude binary is not installed (scripts/setup)")
        else:
            with FakeAnthropic([ANSWER], repeat=True) as fake:
                params, one_shot, same_argv = _claude(claude, fake, home, cwd)
                baselines = {"claude -p": one_shot, "the same argv driven directly": same_argv}
                _measure(outcome, "claude-code", params, baselines, runs, quick)
                _measure_claude_spares(outcome, params, runs)
        if codex is None:
            outcome.notes.append("codex skipped: the pinned codex binary is not installed (scripts/setup)")
        else:
            with FakeOpenAI([ANSWER], repeat=True) as fake:
                params, one_shot, same_argv = _codex(codex, fake, home, cwd)
                baselines = {"codex exec": one_shot, "the same argv driven directly": same_argv}
                # A codex run takes ~0.2 s, a third of claude's: three times the pairs in about the same time
                # (at 5 pairs its ratio to codex exec read 1.06 and 1.20 in two runs ten minutes apart).
                pairs = runs if quick else runs * 3
                _measure(outcome, "codex (app-server)", params, baselines, pairs, quick)
                _codex_warm(outcome, codex, fake, home, cwd, pairs)
    return outcome
