"""Translation throughput: native events → translator → stream guard → consumer, no I/O.

Per backend, one "cycle" is every recorded session back to back: the GenerateContentResponse chunks of
the shared Gemini CLI recordings; the ACP messages the real `gemini --acp` sent for them (bench/record.py)
plus the project's gemini-cli cassettes (thoughts, permissions, a subagent); the Interactions API events
FakeGemini rendered for them plus the project's interactions cassettes (server-side tools). Cycles are replayed until at
least 100,000 native events have passed, each cycle as one run through the real StreamGuard (fresh
translators, unique tool ids). The baseline is `json.loads` of the very same lines, the floor for any
parser. The natives are parsed once up front, so the figure is what the translator and guard add.
For generateContent the target is against google-genai's own parse of the same chunk (json →
GenerateContentResponse, a pydantic validation), what a client of the SDK pays per chunk: unified's
own work per chunk at most 15% of it (the adapter itself reads the wire JSON and never builds that
model). How much of that parse a reader of the raw JSON avoids is shown beside it (1 - json.loads /
SDK parse). Each corpus also runs with an API key given to the run (informational): every real run
has one, and then the guard looks at every text for it and holds back a piece's end that may begin it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import yaml
from google.genai import types

from bench._env import ROOT, TRANSCRIPTS, recordings
from bench.harness import Figure, Outcome, profile_sync, rounds, spread
from unified._adapters.gemini_cli._translate import AcpTranslator, TurnBoundary
from unified._adapters.generate_content._translate import GenerateContentTranslator
from unified._adapters.interactions._translate import FunctionCall, InteractionsTranslator, StatusChange, StreamFailure
from unified._execute import EventStream
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.events import ErrorEvent, SessionStarted
from unified.types import ExecuteParams

_PARAMS = ExecuteParams(prompt="bench", backend="generate-content")
_KEYED = _PARAMS.model_copy(update={"backend_options": {"api_key": "AIzaSyB-bench-key-0123456789abcdefghijk"}})
"""The same run with a credential to keep out of the events, as every real API run has (an informational
row: the guard then looks at every text for it, and holds back a piece's end that may begin it)."""
Feed = Callable[[RunContext, Sequence[Any]], Any]


@dataclass
class Corpus:
    """One cycle of a backend's natives: the raw lines (for the baseline) and their parsed form."""

    backend: str
    lines: list[str]
    natives: list[Any]


def _gc_corpus() -> Corpus:
    lines: list[str] = []
    natives: list[Any] = []
    for path in recordings():
        for record in map(json.loads, path.read_text().splitlines()):
            if record["method"] != "generateContentStream":
                continue
            turn = [json.dumps(chunk) for chunk in record["response"]]
            lines += turn
            natives.append([json.loads(line) for line in turn])
    return Corpus("generate-content", lines, natives)


_ID_KEYS = frozenset({"toolCallId", "id", "call_id", "interaction_id"})


def _scoped(value: Any, scope: str) -> Any:
    """`value` with every id prefixed by `scope`: transcripts recorded apart may reuse ids (call_1_0)."""
    if isinstance(value, dict):
        return {
            k: f"{scope}/{v}" if k in _ID_KEYS and isinstance(v, str) else _scoped(v, scope) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scoped(v, scope) for v in value]
    return value


def _sessions(folder: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """(name, native messages) of every recorded session for one backend: ours and the project's cassettes."""
    found: list[tuple[str, list[dict[str, Any]]]] = []
    for path in sorted((TRANSCRIPTS / folder).glob("*.jsonl")):
        found.append((path.stem, [json.loads(line) for line in path.read_text().splitlines()]))
    if folder == "acp":
        for path in sorted((ROOT / "cassettes" / "gemini-cli").glob("*.jsonl")):
            records = [json.loads(line) for line in path.read_text().splitlines()]
            found.append((path.stem, [r["msg"] for r in records if r.get("dir") == "recv"]))
    else:
        for path in sorted((ROOT / "cassettes" / "interactions").glob("*.yaml")):
            for exchange in yaml.safe_load(path.read_text())["interactions"]:
                body = exchange["response"]["body"]["string"]
                events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]
                found.append((path.stem, events))
    return found


def _transcript_corpus(backend: str, folder: str, keep: Callable[[dict[str, Any]], bool]) -> Corpus:
    lines: list[str] = []
    natives: list[Any] = []
    for n, (name, messages) in enumerate(_sessions(folder)):
        session = [_scoped(m, f"{name}-{n}") for m in messages if keep(m)]
        lines += [json.dumps(m) for m in session]
        natives.append(session)
    return Corpus(backend, lines, natives)


def corpora() -> list[Corpus]:
    acp_methods = ("session/update", "session/request_permission")
    return [
        _gc_corpus(),
        _transcript_corpus("gemini-cli", "acp", lambda m: m.get("method") in acp_methods),
        _transcript_corpus("interactions", "interactions", lambda m: True),
    ]


async def _feed_gc(ctx: RunContext, sessions: Sequence[Any]) -> None:
    taken: set[str] = set()
    for turns in sessions:
        ctx.turns += 1
        translator = GenerateContentTranslator(turn=ctx.turns, taken_ids=taken)
        for chunk in turns:
            for event in translator.feed(chunk):
                await ctx.emit(event)
        for event in translator.finish():
            await ctx.emit(event)
        await ctx.end_message()


async def _feed_acp(ctx: RunContext, sessions: Sequence[Any]) -> None:
    for session in sessions:
        translator = AcpTranslator(session_id="s")
        for message in session:
            params = message["params"]
            if message["method"] == "session/request_permission":
                items = translator.permission_request(params)
            else:
                items = translator.update(params["update"])
            for item in items:
                if isinstance(item, TurnBoundary):
                    await ctx.end_message()
                    ctx.turns += 1
                else:
                    await ctx.emit(item)


_NOT_EVENTS = (FunctionCall, StatusChange, StreamFailure)
"""The translator's signals that are not events: the adapter (`_turns.InteractionsTurns._apply`) acts on
them itself and emits the rest."""


async def _feed_interactions(ctx: RunContext, sessions: Sequence[Any]) -> None:
    for session in sessions:
        translator = InteractionsTranslator()
        for event in session:
            for signal in translator.feed(event):
                if not isinstance(signal, _NOT_EVENTS):
                    await ctx.emit(signal)
        await ctx.end_message()


_FEEDS: dict[str, Feed] = {"generate-content": _feed_gc, "gemini-cli": _feed_acp, "interactions": _feed_interactions}


@dataclass
class _Replay:
    """A backend that replays one cycle of natives through a real translator."""

    backend: str
    sessions: Sequence[Any]
    name: str = "bench-replay"

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []

    async def run(self, ctx: RunContext) -> RunOutcome:
        await ctx.emit(SessionStarted(backend=self.backend, session_id="bench-session", capabilities={"text": "full"}))
        await _FEEDS[self.backend](ctx, self.sessions)
        return RunOutcome()


async def replay(corpus: Corpus, cycles: int, params: ExecuteParams = _PARAMS) -> tuple[int, int]:
    """(unified events delivered, protocol violations) over `cycles` runs."""
    delivered = violations = 0
    for _ in range(cycles):
        async with EventStream(params, backend=_Replay(corpus.backend, corpus.natives)) as stream:
            async for event in stream:
                delivered += 1
                if type(event) is ErrorEvent and event.code == "protocol_violation":  # isinstance: 10x the cost
                    violations += 1
    return delivered, violations


def _loads_all(lines: list[str], cycles: int) -> None:
    loads = json.loads
    for _ in range(cycles):
        for line in lines:
            loads(line)


def _sdk_parse(lines: list[str], cycles: int) -> None:
    validate = types.GenerateContentResponse.model_validate
    for _ in range(cycles):
        for line in lines:
            validate(json.loads(line))


def _rates(times: list[float], events: int) -> list[float]:
    return [events / t for t in times]


def _replay_into(counts: list[tuple[int, int]], corpus: Corpus, cycles: int, params: ExecuteParams = _PARAMS) -> None:
    counts.append(anyio.run(replay, corpus, cycles, params))


def _median_ratio(subject: list[float], baseline: list[float]) -> tuple[float, float, float]:
    """(min, median, max) of the per-pair ratios: each pair was timed back to back."""
    return spread([s / b for s, b in zip(subject, baseline, strict=True)])


def run(quick: bool) -> Outcome:
    target_events = 2_000 if quick else 100_000
    runs = 2 if quick else 6
    outcome = Outcome("translate")
    for corpus in corpora():
        cycles = math.ceil(target_events / len(corpus.lines))
        natives = cycles * len(corpus.lines)
        counts: list[tuple[int, int]] = []
        name = corpus.backend
        translate = partial(_replay_into, counts, corpus, cycles)
        keyed = partial(_replay_into, [], corpus, cycles, _KEYED)
        loads = partial(_loads_all, corpus.lines, cycles)
        parse_cycles = max(cycles // 10, 1)  # the SDK's parse is slow: a tenth of the cycles, compared per event
        parse = partial(_sdk_parse, corpus.lines, parse_cycles)
        timed = rounds(
            [loads, translate, keyed, parse] if name == "generate-content" else [loads, translate, keyed],
            runs,
            clock=time.thread_time,  # no I/O, one thread: CPU time, without the machine's other processes
        )
        baseline, subject, with_key = timed[0], timed[1], timed[2]
        delivered, violations = counts[-1]
        outcome.figures += [
            Figure(f"{name}: translate+guard", "native events/s", _rates(subject, natives)),
            Figure(f"{name}: json.loads", "lines/s", _rates(baseline, natives)),
        ]
        low, mid, high = _median_ratio(with_key, baseline)
        keyed_row = f"{name}: translate+guard with a key to hide / json.loads"
        outcome.ratio(keyed_row, mid, "informational", True, low=low, high=high)
        low, mid, high = _median_ratio(subject, baseline)
        outcome.notes.append(
            f"{name}: {natives} native events in {cycles} runs -> {delivered} unified events, "
            f"{violations} protocol violations"
        )
        if name != "generate-content":
            key = f"{name}: translate+guard / json.loads"
            outcome.ratio(key, mid, "< 2x", mid < 2, low=low, high=high)
        else:
            outcome.ratio(f"{name}: translate+guard / json.loads", mid, "informational", True, low=low, high=high)
            sdk = [t * cycles / parse_cycles for t in timed[3]]  # as if it had parsed every cycle
            outcome.figures.append(Figure(f"{name}: SDK parse (not ours)", "native events/s", _rates(sdk, natives)))
            low, mid, high = _median_ratio(subject, sdk)
            key = f"{name}: translate+guard / SDK parse"
            outcome.ratio(key, mid, "<= 0.15", mid <= 0.15, low=low, high=high)
            low, mid, high = spread([1 - f / p for f, p in zip(baseline, sdk, strict=True)])
            avoidable = f"{name}: share of the SDK parse a json.loads reader avoids"
            outcome.ratio(avoidable, mid, "informational", True, low=low, high=high)
        if not outcome.met.get(key, True) and not quick:
            tenth = max(cycles // 10, 1)  # the same shape per event at a tenth of the profiler's cost
            outcome.profiles[f"{name}: translate+guard, {tenth} cycles"] = profile_sync(
                partial(_replay_into, [], corpus, tenth)
            )
    return outcome
