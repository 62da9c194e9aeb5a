"""Overhead over the raw SDK: one FakeGemini stream consumed through `unified` and through google-genai directly.

Two scenarios per API backend (generateContent, Interactions): one answer streamed in 10,000 chunks, and a
50-turn tool session (each turn one `read_file` call, then a final answer). The baseline is the program a
careful user writes with google-genai's async client (see `Baseline`): ONE client for every run of the
process, and in the tool session the history saved durably after every turn, as unified's session store
does. Time to first event is the first piece of model output (text or a call), not `session_started`,
which `unified` emits before any request. Subject and baseline runs alternate against the same server,
all in one event loop (a shared httpx client belongs to the loop it first ran on).
"""

from __future__ import annotations

import gc
import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
from google import genai
from google.genai import types

from bench._env import MODEL, isolated_home, workspace
from bench.harness import Figure, Outcome, Timing, profile_async, spread, through_unified
from unified.events import TextDelta, ToolUse, UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.types import ExecuteParams

INTERACTIONS_MODEL = "gemini-3-flash-preview"


def _stream_turn(chunks: int) -> list[ModelTurn]:
    return [ModelTurn(text="token " * chunks, text_chunks=chunks)]


def _tool_turns(turns: int) -> list[ModelTurn]:
    calls = [
        ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": f"f{n}.txt"})])
        for n in range(turns)
    ]
    return [*calls, ModelTurn(text="done")]


def save_durably(path: Path, document: object) -> None:
    """The floor of a durable save: the whole document to a temp file, fsync, atomic rename."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as handle:
        json.dump(document, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


@dataclass
class Baseline:
    """The raw-SDK side as a careful user writes it: the fair floor for what unified does.

    One `genai.Client` on one `httpx.AsyncClient` for every run (built once, outside the timings:
    an application builds its client at start-up, so building one per run would time set-up, not
    work), and the history saved after every tool round as unified saves its session (whole
    document, fsync, atomic rename, in a worker thread so the event loop is not blocked). It saves
    nothing before the first request: nothing exists to resume yet. Everything else unified adds
    (typed events, the guard, the tool runtime's policy and confinement) is its own cost.
    """

    base_url: str
    cwd: Path
    history: Path
    http: httpx.AsyncClient = field(init=False)
    client: genai.Client = field(init=False)

    async def __aenter__(self) -> Baseline:
        self.http = httpx.AsyncClient()
        options = types.HttpOptions(
            base_url=self.base_url,
            api_version="v1beta",
            httpx_async_client=self.http,
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        self.client = genai.Client(api_key="bench-key", http_options=options)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    def _read(self, args: dict[str, Any] | None) -> str:
        return (self.cwd / str((args or {})["file_path"])).read_text()

    async def _save(self, document: object) -> None:
        await anyio.to_thread.run_sync(save_durably, self.history, document)

    async def generate(self, declarations: list[types.FunctionDeclaration] | None = None) -> Timing:
        """The agent loop on `client.aio.models.generate_content_stream`: the whole history per request.
        `declarations`: the tools it declares (default: `read_file` alone, the one it calls)."""
        start = time.perf_counter()
        first = 0.0
        read = types.FunctionDeclaration(
            name="read_file",
            description="Read a file.",
            parameters_json_schema={"type": "object", "properties": {"file_path": {"type": "string"}}},
        )
        config = types.GenerateContentConfig(
            tools=[types.Tool(function_declarations=declarations or [read])],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="go")])]
        saved: list[dict[str, Any]] = [contents[0].model_dump(mode="json", exclude_none=True)]
        while True:
            parts: list[types.Part] = []
            async for chunk in await self.client.aio.models.generate_content_stream(
                model=MODEL, contents=list(contents), config=config
            ):
                if not first:
                    first = time.perf_counter() - start
                parts += (
                    chunk.candidates[0].content.parts or [] if chunk.candidates and chunk.candidates[0].content else []
                )
            contents.append(types.Content(role="model", parts=parts))
            calls = [p.function_call for p in parts if p.function_call is not None]
            if not calls:
                return Timing(time.perf_counter() - start, first)
            answers = [
                types.Part(
                    function_response=types.FunctionResponse(
                        id=c.id, name=c.name, response={"output": self._read(c.args)}
                    )
                )
                for c in calls
            ]
            contents.append(types.Content(role="user", parts=answers))
            saved += [c.model_dump(mode="json", exclude_none=True) for c in contents[-2:]]
            await self._save(saved)

    async def interactions(self) -> Timing:
        """The loop on `client.aio.interactions.create(stream=True)` chained by previous_interaction_id."""
        start = time.perf_counter()
        first = 0.0
        tools = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
        body: dict[str, Any] = {"model": INTERACTIONS_MODEL, "input": "go", "tools": tools}
        chain: list[str] = []
        while True:
            calls: list[dict[str, Any]] = []
            async for event in await self.client.aio.interactions.create(**body, stream=True):
                data = event.model_dump(mode="json", exclude_none=True)
                if not first and data.get("event_type") in ("step.delta", "step.start"):
                    first = time.perf_counter() - start
                if data.get("event_type") == "interaction.created":
                    chain.append(data["interaction"]["id"])
                step = data.get("step") or {}
                if data.get("event_type") == "step.start" and step.get("type") == "function_call":
                    calls.append(step)
            if not calls:
                return Timing(time.perf_counter() - start, first)
            results = [
                {
                    "type": "function_result",
                    "call_id": c["id"],
                    "name": c["name"],
                    "result": (self.cwd / str(c["arguments"]["file_path"])).read_text(),
                }
                for c in calls
            ]
            await self._save({"chain": chain, "pending": results})
            body = {"model": INTERACTIONS_MODEL, "input": results, "tools": tools, "previous_interaction_id": chain[-1]}


def unified_declarations(fake: FakeGemini) -> list[types.FunctionDeclaration]:
    """The function declarations of the server's last generateContent request: called right after a unified
    run, its tool runtime's tools."""
    body = fake.requests_for("generateContentStream")[-1].body
    found = [d for tool in body.get("tools") or [] for d in tool.get("functionDeclarations") or []]
    return [types.FunctionDeclaration.model_validate(d) for d in found]


async def _same_request(outcome: Outcome, fake: FakeGemini, raw: Baseline, params: ExecuteParams, runs: int) -> None:
    """Where the tool session's first output goes (informational): a one-turn tool session through unified,
    the raw SDK declaring `read_file` alone (as the main baseline), and the raw SDK declaring unified's own
    tools, so that it sends the very request unified sends (~8 KB of declarations against ~0.3), the three
    in turn (the order rotating each round, after one untimed round). The gap between the two rows is the
    server's handling and the transport of the larger request, which neither side's client code does."""
    fake.add(*_tool_turns(1))
    await through_unified(params, _model_output)  # untimed: its request is where unified's declarations are read
    same = unified_declarations(fake)
    sides: list[Callable[[], Awaitable[Timing]]] = [
        partial(through_unified, params, _model_output),
        raw.generate,
        partial(raw.generate, same),
    ]
    timings: list[list[Timing]] = [[], [], []]
    for n in range(runs + 1):
        for index in [(n + k) % 3 for k in range(3)]:
            gc.collect()
            fake.add(*_tool_turns(1))
            timing = await sides[index]()
            fake.assert_done()
            if n:
                timings[index].append(timing)
    subject, alone, same_request = timings
    for label, baseline in (
        ("declaring read_file alone", alone),
        (f"sending unified's {len(same)} declarations", same_request),
    ):
        low, mid, high = spread([(s[1] - b[1]) * 1000 for s, b in zip(subject, baseline, strict=True)])
        row = f"generate-content, one-turn tools: first output, ms added vs the raw SDK {label}"
        outcome.ratio(row, mid, "informational", True, low=low, high=high)


def _model_output(event: UnifiedEvent) -> bool:
    """The first model output of a run: its text, or its first tool call (a tool turn has no text)."""
    return isinstance(event, TextDelta | ToolUse)


def _params(backend: str, fake: FakeGemini, cwd: Path) -> ExecuteParams:
    options: dict[str, object] = {"api_key": "bench-key", "base_url": fake.base_url}
    model = MODEL if backend == "generate-content" else INTERACTIONS_MODEL
    return ExecuteParams(prompt="go", backend=backend, model=model, cwd=cwd, backend_options=options)


async def _pair(
    fake: FakeGemini,
    turns: Callable[[], list[ModelTurn]],
    subject: Callable[[], Awaitable[Timing]],
    baseline: Callable[[], Awaitable[Timing]],
    runs: int,
    *,
    warm_up: bool,
) -> tuple[list[Timing], list[Timing]]:
    """Alternate runs, after one untimed warm-up of each (first-use imports are not overhead per run);
    the order flips every pair, and each run starts after a full garbage collection, so what a run
    leaves behind (10,000 chunks' objects, a busy disk) weighs on neither the next nor its side only."""
    subject_t: list[Timing] = []
    baseline_t: list[Timing] = []
    for n in range(runs + 1 if warm_up else runs):
        pair = ((baseline, baseline_t), (subject, subject_t))
        for fn, sink in pair if n % 2 == 0 else reversed(pair):
            gc.collect()
            fake.add(*turns())
            timing = await fn()
            fake.assert_done()
            if n or not warm_up:
                sink.append(timing)
    return subject_t, baseline_t


async def _scenarios(
    outcome: Outcome, fake: FakeGemini, home: Path, chunks: int, tool_turns: int, runs: int, *, quick: bool
) -> None:
    cwd = workspace(home)
    for n in range(tool_turns):
        (cwd / f"f{n}.txt").write_text(f"file {n}\n" * 20)
    scenarios: dict[str, Callable[[], list[ModelTurn]]] = {
        f"{tool_turns}-turn tools": lambda: _tool_turns(tool_turns),  # first: the cheaper warm-up
        f"{chunks} chunks": lambda: _stream_turn(chunks),
    }
    async with Baseline(fake.base_url, cwd, home / "baseline-history.json") as raw:
        for backend, baseline_fn in (("generate-content", raw.generate), ("interactions", raw.interactions)):
            params = _params(backend, fake, cwd)

            async def subject(params: ExecuteParams = params) -> Timing:
                return await through_unified(params, _model_output)

            for n, (label, turns) in enumerate(scenarios.items()):
                # Only a backend's first scenario is warmed up: later ones find its imports done.
                warm_up = n == 0 and not quick
                # The raw SDK alone takes ~20 s for 10,000 Interactions events here: two pairs keep the run short.
                # A tool session's pair takes 2-3 s and its first output is a matter of a millisecond under tens
                # of noise: it gets 2 * runs - 1 pairs (9), a steadier median at no cost to either side.
                if label == f"{chunks} chunks":
                    pairs = min(runs, 2) if backend == "interactions" else runs
                else:
                    pairs = 2 * runs - 1
                subject_t, baseline_t = await _pair(fake, turns, subject, baseline_fn, pairs, warm_up=warm_up)
                name = f"{backend}, {label}"
                outcome.figures += [
                    Figure(f"{name}: unified wall", "s", [t[0] for t in subject_t]),
                    Figure(f"{name}: raw SDK (shared client) wall", "s", [t[0] for t in baseline_t]),
                    Figure(f"{name}: unified first output", "s", [t[1] for t in subject_t]),
                    Figure(f"{name}: raw SDK (shared client) first output", "s", [t[1] for t in baseline_t]),
                ]
                low, ratio, high = spread([s[0] / b[0] for s, b in zip(subject_t, baseline_t, strict=True)])
                wall = f"{name}: wall, unified / raw SDK"
                outcome.ratio(wall, ratio, "<= 1.05", ratio <= 1.05, low=low, high=high)
                first_low, first, first_high = spread(
                    [(s[1] - b[1]) * 1000 for s, b in zip(subject_t, baseline_t, strict=True)]
                )
                added = f"{name}: first output, ms added"
                outcome.ratio(added, first, "< 1 ms", first < 1, low=first_low, high=first_high)
                if backend == "generate-content" and label.endswith("tools"):
                    await _same_request(outcome, fake, raw, params, 4 * runs + 1)
                if not (outcome.met[wall] and outcome.met[added]) and not quick:
                    # A tenth of the stream: the same shape per chunk at a tenth of the profiler's cost.
                    small = _stream_turn(chunks // 10) if label == f"{chunks} chunks" else turns()
                    fake.add(*small)
                    what = f"{chunks // 10} chunks" if label == f"{chunks} chunks" else label
                    outcome.profiles[f"{backend}, {what}: one unified run"] = await profile_async(subject)
                    fake.assert_done()


def run(quick: bool) -> Outcome:
    chunks, tool_turns, runs = (50, 2, 1) if quick else (10_000, 50, 5)
    outcome = Outcome("sdk_overhead")
    with isolated_home() as home, FakeGemini() as fake:
        anyio.run(partial(_scenarios, outcome, fake, home, chunks, tool_turns, runs, quick=quick))
    return outcome
