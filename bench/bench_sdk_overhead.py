"""Overhead over the raw SDK: one FakeGemini stream consumed through `unified` and through google-genai directly.

Two scenarios per API backend (generateContent, Interactions): one answer streamed in 10,000 chunks, and a
50-turn tool session (each turn one `read_file` call, then a final answer). The baseline is the shortest
honest program doing the same with google-genai's async client on an httpx client of its own: stream,
run the read, send the function result back. Both sides create their client per run, as `unified` does.
Time to first event is the first piece of model output (text or a call), not `session_started`, which
`unified` emits before any request. Subject and baseline runs alternate against the same server.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx
from google import genai
from google.genai import types

from bench._env import MODEL, isolated_home, workspace
from bench.harness import Figure, Outcome, spread
from unified import execute
from unified.events import Result, TextDelta, ToolUse
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.types import ExecuteParams

INTERACTIONS_MODEL = "gemini-3-flash-preview"
Timing = tuple[float, float]
"""(wall seconds, seconds to the first model output)."""


def _stream_turn(chunks: int) -> list[ModelTurn]:
    return [ModelTurn(text="token " * chunks, text_chunks=chunks)]


def _tool_turns(turns: int) -> list[ModelTurn]:
    calls = [
        ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": f"f{n}.txt"})])
        for n in range(turns)
    ]
    return [*calls, ModelTurn(text="done")]


def _client(base_url: str, http: httpx.AsyncClient) -> genai.Client:
    options = types.HttpOptions(
        base_url=base_url,
        api_version="v1beta",
        httpx_async_client=http,
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    return genai.Client(api_key="bench-key", http_options=options)


async def raw_generate(base_url: str, cwd: Path) -> Timing:
    """The baseline agent loop on `client.aio.models.generate_content_stream`."""
    start = time.perf_counter()
    first = 0.0
    read = types.FunctionDeclaration(
        name="read_file",
        description="Read a file.",
        parameters_json_schema={"type": "object", "properties": {"file_path": {"type": "string"}}},
    )
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[read])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    async with httpx.AsyncClient() as http:
        client = _client(base_url, http)
        contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="go")])]
        while True:
            parts: list[types.Part] = []
            async for chunk in await client.aio.models.generate_content_stream(
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
                return time.perf_counter() - start, first
            answers = [
                types.Part(
                    function_response=types.FunctionResponse(
                        id=c.id, name=c.name, response={"output": (cwd / str((c.args or {})["file_path"])).read_text()}
                    )
                )
                for c in calls
            ]
            contents.append(types.Content(role="user", parts=answers))


async def raw_interactions(base_url: str, cwd: Path) -> Timing:
    """The baseline loop on `client.aio.interactions.create(stream=True)` with previous_interaction_id."""
    start = time.perf_counter()
    first = 0.0
    tools = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]
    async with httpx.AsyncClient() as http:
        client = _client(base_url, http)
        body: dict[str, Any] = {"model": INTERACTIONS_MODEL, "input": "go", "tools": tools}
        while True:
            calls: list[dict[str, Any]] = []
            interaction_id = None
            async for event in await client.aio.interactions.create(**body, stream=True):
                data = event.model_dump(mode="json", exclude_none=True)
                if not first and data.get("event_type") in ("step.delta", "step.start"):
                    first = time.perf_counter() - start
                if data.get("event_type") == "interaction.created":
                    interaction_id = data["interaction"]["id"]
                step = data.get("step") or {}
                if data.get("event_type") == "step.start" and step.get("type") == "function_call":
                    calls.append(step)
            if not calls:
                return time.perf_counter() - start, first
            results = [
                {
                    "type": "function_result",
                    "call_id": c["id"],
                    "name": c["name"],
                    "result": (cwd / str(c["arguments"]["file_path"])).read_text(),
                }
                for c in calls
            ]
            body = {
                "model": INTERACTIONS_MODEL,
                "input": results,
                "tools": tools,
                "previous_interaction_id": interaction_id,
            }


async def through_unified(params: ExecuteParams) -> Timing:
    start = time.perf_counter()
    first = 0.0
    result: Result | None = None
    async with execute(params) as stream:
        async for event in stream:
            if not first and isinstance(event, TextDelta | ToolUse):
                first = time.perf_counter() - start
            if isinstance(event, Result):
                result = event
    if result is None or result.status != "success":
        raise RuntimeError(f"unified run did not succeed: {result}")
    return time.perf_counter() - start, first


def _params(backend: str, fake: FakeGemini, cwd: Path) -> ExecuteParams:
    options: dict[str, object] = {"api_key": "bench-key", "base_url": fake.base_url}
    model = MODEL if backend == "generate-content" else INTERACTIONS_MODEL
    return ExecuteParams(prompt="go", backend=backend, model=model, cwd=cwd, backend_options=options)


def _pair(
    fake: FakeGemini,
    turns: Callable[[], list[ModelTurn]],
    subject: Callable[[], Awaitable[Timing]],
    baseline: Callable[[], Awaitable[Timing]],
    runs: int,
) -> tuple[list[Timing], list[Timing]]:
    """Alternate runs after one untimed warm-up of each (first-use imports are not overhead per run)."""
    subject_t: list[Timing] = []
    baseline_t: list[Timing] = []
    for n in range(runs + 1):
        for fn, sink in ((baseline, baseline_t), (subject, subject_t)):
            fake.add(*turns())
            timing = anyio.run(fn)
            fake.assert_done()
            if n:
                sink.append(timing)
    return subject_t, baseline_t


def run(quick: bool) -> Outcome:
    chunks, tool_turns, runs = (200, 3, 2) if quick else (10_000, 50, 4)
    outcome = Outcome("sdk_overhead")
    with isolated_home() as home, FakeGemini() as fake:
        cwd = workspace(home)
        for n in range(tool_turns):
            (cwd / f"f{n}.txt").write_text(f"file {n}\n" * 20)
        raw = {"generate-content": raw_generate, "interactions": raw_interactions}
        scenarios = {
            f"{chunks} chunks": lambda: _stream_turn(chunks),
            f"{tool_turns}-turn tools": lambda: _tool_turns(tool_turns),
        }
        for backend, baseline_fn in raw.items():
            params = _params(backend, fake, cwd)
            for label, turns in scenarios.items():
                subject, baseline = _pair(
                    fake, turns, partial(through_unified, params), partial(baseline_fn, fake.base_url, cwd), runs
                )
                name = f"{backend}, {label}"
                outcome.figures += [
                    Figure(f"{name}: unified wall", "s", [t[0] for t in subject]),
                    Figure(f"{name}: raw SDK wall", "s", [t[0] for t in baseline]),
                    Figure(f"{name}: unified first output", "s", [t[1] for t in subject]),
                    Figure(f"{name}: raw SDK first output", "s", [t[1] for t in baseline]),
                ]
                low, ratio, high = spread([s[0] / b[0] for s, b in zip(subject, baseline, strict=True)])
                outcome.ratio(f"{name}: wall ratio", ratio, "<= 1.05", ratio <= 1.05)
                first_low, first, first_high = spread(
                    [(s[1] - b[1]) * 1000 for s, b in zip(subject, baseline, strict=True)]
                )
                outcome.ratio(f"{name}: first output, ms added", first, "< 1 ms", first < 1)
                outcome.notes.append(
                    f"{name}: wall ratio min {low:.3f} max {high:.3f}; "
                    f"first-output ms added min {first_low:.2f} max {first_high:.2f}"
                )
    return outcome
