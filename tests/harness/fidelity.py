"""Fidelity: play a real recording through a backend and check the stream against what the model sent.

Each recording of `recordings()` and `real_recordings()` is served by a `FakeGemini` (its model
turns as streams; a file of unary answers as one-chunk streams, as its manifest says). The run is
continued (resumed with a new prompt) while the recording holds turns the run has not asked for,
and ends at a sentinel turn answering 400, so a recording that ends on a tool call ends visibly.
For every run the stream must hold its invariants (one final `result`, gapless `seq`, every
`tool_use` answered once, no `protocol_violation`/`internal_error`) and agree with the turns it
was served: its text equals their non-thought text, `thinking` appears exactly when they hold
thought text, and each usage figure equals their `usageMetadata` sums, or is flagged `estimated`
where the recording does not report it. `scripts/fidelity` writes the table (docs/fidelity.md);
the test suite runs the same checks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tests.harness.recordings import real_recordings_dir, real_recordings_manifest, recordings
from tests.harness.warm_cli import WarmCli
from unified.events import (
    ErrorEvent,
    ImageOutput,
    Result,
    SessionStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    Usage,
    WarningEvent,
)
from unified.testing import FakeGemini
from unified.testing._scenario import Fault, RecordedTurn, Script
from unified.testing._wiring import backend_options_for

__all__ = [
    "END_OF_RECORDING",
    "Expected",
    "Recording",
    "Verdict",
    "check_run",
    "corpus",
    "expected_of",
    "play",
]

FidelityBackend = Literal["generate-content", "gemini-cli"]
END_OF_RECORDING = "fidelity: the recording holds no further model turn"
"""The message of the 400 that answers a request past the recording's last turn."""
FORBIDDEN_ERRORS = frozenset({"protocol_violation", "internal_error"})
USAGE_KEYS: dict[str, str] = {
    "input_tokens": "promptTokenCount",
    "output_tokens": "candidatesTokenCount",
    "thinking_tokens": "thoughtsTokenCount",
    "cached_tokens": "cachedContentTokenCount",
    "tool_use_tokens": "toolUsePromptTokenCount",
}
SENTINELS = 3
"""Copies of the end-of-recording turn: an HTTP fault leaves its turn queued only once."""


@dataclass(frozen=True)
class Recording:
    """One recording as the backends play it."""

    name: str
    """`<corpus>/<file stem>`, e.g. `gemini-cli-responses/parallel-tools`, `js-genai/Chats_...`."""
    path: Path
    unary_as_stream: bool = False
    """The file holds only unary answers (a `generateContent` client): serve each as a one-chunk stream."""
    model: str = "gemini-2.5-flash"

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]

    def model_turns(self) -> list[RecordedTurn]:
        """The turns the agent loop plays: every stream (and, for a unary file, every answer as a stream)."""
        turns = []
        for line in self.lines():
            if line["method"] == "generateContentStream":
                turns.append(RecordedTurn(method="generateContentStream", response=line["response"]))
            elif line["method"] == "generateContent" and self.unary_as_stream:
                turns.append(RecordedTurn(method="generateContentStream", response=[line["response"]]))
        return turns

    def side_turns(self) -> list[RecordedTurn]:
        """The Gemini CLI's own unary calls (routing, summaries, ...) recorded beside the model turns."""
        if self.unary_as_stream:
            return []
        return [
            RecordedTurn(method=line["method"], response=line["response"])
            for line in self.lines()
            if line["method"] in ("generateContent", "countTokens")
        ]


def corpus() -> list[Recording]:
    """Both corpora: the 16 of `recordings()`, then the 94 of `real_recordings()` in manifest order."""
    found = [Recording(f"gemini-cli-responses/{p.stem}", p) for p in recordings()]
    for entry in real_recordings_manifest():
        models = entry.get("models") or []
        found.append(
            Recording(
                f"{entry['group']}/{entry['name']}",
                real_recordings_dir() / entry["file"],
                unary_as_stream=entry["play"] == "generateContent-as-one-chunk-stream",
                model=models[0] if models else "gemini-2.5-flash",
            )
        )
    return found


# --- what the recording says ----------------------------------------------------------------------


def _parts(chunk: dict[str, Any]) -> list[dict[str, Any]]:
    candidates = chunk.get("candidates") or []
    content = (candidates[0].get("content") or {}) if candidates else {}
    return [p for p in content.get("parts") or [] if isinstance(p, dict)]


@dataclass
class Expected:
    """What the served turns say the stream must show."""

    text: str = ""
    thoughts: bool = False
    usage: Usage = field(default_factory=Usage)
    unreported: set[str] = field(default_factory=set)
    """Usage figures some served turn did not report although it produced what they count."""
    empty_streams: int = 0
    wants_tools: bool = False
    """The last served turn asks for local tools: the run asks for a turn past the recording."""
    images: int = 0
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """The local calls of the served turns (name, arguments), pieces of streamed arguments assembled."""


def expected_of(turns: Sequence[RecordedTurn]) -> Expected:
    """The text, thought presence and usage sums of the turns one run was served."""
    expected = Expected()
    for turn in turns:
        chunks = turn.response if isinstance(turn.response, list) else [turn.response]
        if not chunks:  # an answer that reported no usage either: its input tokens are unmeasured
            expected.empty_streams += 1
            expected.unreported.add("input_tokens")
            continue
        meta: dict[str, Any] | None = None
        has_output = has_thought = calls = continuing = False
        for chunk in chunks:
            if isinstance(chunk.get("usageMetadata"), dict):
                meta = chunk["usageMetadata"]
            for part in _parts(chunk):
                text = part.get("text")
                if part.get("thought") and isinstance(text, str):
                    has_thought = has_thought or bool(text)
                elif isinstance(text, str):
                    expected.text += text
                    has_output = has_output or bool(text)
                if isinstance(part.get("functionCall"), dict) and not _server_side_call(chunks, part):
                    calls = True
                    has_output = True
                    continuing = _add_call(expected.calls, part["functionCall"], continuing)
                if "inlineData" in part:
                    expected.images += 1
        expected.thoughts = expected.thoughts or has_thought
        expected.wants_tools = calls
        meta = meta or {}
        expected.usage += Usage(**{ours: int(meta.get(theirs) or 0) for ours, theirs in USAGE_KEYS.items()})
        if "promptTokenCount" not in meta:
            expected.unreported.add("input_tokens")
        if has_output and "candidatesTokenCount" not in meta:
            expected.unreported.add("output_tokens")
        if has_thought and "thoughtsTokenCount" not in meta:
            expected.unreported.add("thinking_tokens")
    return expected


def _add_call(calls: list[tuple[str, dict[str, Any]]], call: dict[str, Any], continuing: bool) -> bool:
    """Add one call, or one piece of a call whose arguments stream (`partialArgs` at `$.name` paths);
    `continuing`: the previous piece said `willContinue`. Returns whether this one does."""
    if not continuing or not calls:
        calls.append((call.get("name") or "", dict(call.get("args") or {})))
    args = calls[-1][1]
    for piece in call.get("partialArgs") or []:
        key = str(piece.get("jsonPath", "")).removeprefix("$.")
        if "stringValue" in piece:
            args[key] = str(args.get(key, "")) + piece["stringValue"]
        else:
            args[key] = next((piece[k] for k in ("numberValue", "boolValue") if k in piece), None)
    return bool(call.get("willContinue"))


def _server_side_call(chunks: list[dict[str, Any]], part: dict[str, Any]) -> bool:
    """A `functionCall` the server ran itself (server-side MCP): its `functionResponse` is in the same turn."""
    name = part["functionCall"].get("name")
    return any(
        isinstance(p.get("functionResponse"), dict) and p["functionResponse"].get("name") == name
        for chunk in chunks
        for p in _parts(chunk)
    )


# --- what the stream must show --------------------------------------------------------------------


def check_run(events: Sequence[UnifiedEvent], expected: Expected, *, exact_calls: bool = True) -> list[str]:
    """The ways one run's events break the stream's invariants or disagree with its served turns.

    `exact_calls`: the local `tool_use`s must carry the recorded names and arguments, in order (else
    the names only, in any order: the Gemini CLI may announce a call before its arguments, and a
    subagent's calls are read from its own file beside the main stream).
    """
    problems: list[str] = []
    results = [e for e in events if isinstance(e, Result)]
    if len(results) != 1 or not isinstance(events[-1], Result):
        problems.append(f"{len(results)} result events (one, last, expected)")
    if [e.seq for e in events] != list(range(len(events))):
        problems.append("seq has gaps or repeats")
    uses = [e.tool_use_id for e in events if isinstance(e, ToolUse)]
    answers = [e.tool_use_id for e in events if isinstance(e, ToolResult)]
    if len(set(uses)) != len(uses):
        problems.append("a tool_use id is announced twice")
    unanswered = [u for u in uses if answers.count(u) != 1]
    if unanswered:
        problems.append(f"tool_use not answered exactly once: {unanswered[:3]}")
    if set(answers) - set(uses):
        problems.append("tool_result for an unannounced tool_use")
    for event in events:
        if isinstance(event, ErrorEvent) and event.code in FORBIDDEN_ERRORS:
            problems.append(f"{event.code}: {event.message[:160]}")
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    if text != expected.text:
        problems.append(f"text differs: got {len(text)} chars, the recording has {len(expected.text)}")
    local = [e for e in events if isinstance(e, ToolUse) and not e.server_side]
    got_calls = [(e.name, e.input) for e in local]
    want_calls = expected.calls
    if not exact_calls:
        got_calls = sorted((name, {}) for name, _ in got_calls)
        want_calls = sorted((name, {}) for name, _ in want_calls)
    if got_calls != want_calls:
        problems.append(f"tool calls differ: got {_short(got_calls)}, the recording has {_short(want_calls)}")
    shown = sum(isinstance(e, ImageOutput) and bool(e.data) for e in events)
    if shown != expected.images:
        problems.append(f"{shown} image_output event(s) with bytes, the recording has {expected.images} image(s)")
    thinking = any(isinstance(e, Thinking) for e in events)
    if thinking != expected.thoughts:
        problems.append("thinking shown without thought text" if thinking else "thought text not shown")
    if not results:
        return problems
    result = results[-1]
    problems += _usage_problems(result.usage, expected)
    problems += _outcome_problems(events, result, expected)
    return problems


def _short(calls: list[tuple[str, dict[str, Any]]]) -> str:
    return json.dumps(calls, default=str)[:200]


def _usage_problems(got: Usage, expected: Expected) -> list[str]:
    problems = []
    for name in USAGE_KEYS:
        have, want = getattr(got, name), getattr(expected.usage, name)
        if have == want:
            continue
        if name in expected.unreported and got.estimated:
            continue
        problems.append(f"usage {name}={have}{' (estimated)' if got.estimated else ''}, recording says {want}")
    if got.estimated and not expected.unreported:
        problems.append("usage flagged estimated although the recording reports every figure")
    return problems


def _outcome_problems(events: Sequence[UnifiedEvent], result: Result, expected: Expected) -> list[str]:
    if expected.empty_streams:
        warned = any(isinstance(e, WarningEvent) and e.code == "malformed_turn" for e in events)
        if not warned:
            return ["an empty answer stream was not warned about"]
        if result.status == "success" and not expected.text:
            return ["an empty answer stream ended as success with nothing to show"]
        return []
    if expected.wants_tools:
        if result.status == "error" and END_OF_RECORDING in (result.error or ""):
            return []
        return [f"ends {result.status} ({(result.error or '')[:120]}), not at the recording's end"]
    if result.status != "success":
        return [f"ends {result.status}: {(result.error or '')[:160]}"]
    return []


# --- playing ----------------------------------------------------------------------------------------


@dataclass
class Verdict:
    """How one recording played on one backend."""

    recording: str
    backend: str
    problems: list[str] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)
    """Differences the capability matrix declares for this backend (each naming its cell), not failures."""
    runs: int = 0
    served: int = 0
    turns: int = 0
    events: list[list[UnifiedEvent]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No failure (a declared difference is not one)."""
        return not self.problems

    @property
    def outcome(self) -> Literal["pass", "declared", "fail"]:
        return "fail" if self.problems else "declared" if self.declared else "pass"


# --- differences the capability matrix declares (src/unified/capabilities.toml) ----------------------

RETRIED_BY_CLI = (
    "the Gemini CLI asked the model again for an answer with nothing visible (or only whitespace) or a malformed "
    "call, a retry "
    "neither ACP nor its chat file shows: that call's tokens are missing or estimated, and a retry past the "
    "recording's end fails (capabilities: gemini-cli usage_accuracy)"
)
HELPER_CALLS_BY_CLI = (
    "the Gemini CLI's own model calls (its web search, routing, summaries) are not in its chat file: their "
    "tokens are missing (capabilities: gemini-cli usage_accuracy)"
)
_USAGE_PROBLEM = re.compile(r"=(?P<have>\d+)(?: \(estimated\))?, recording says (?P<want>\d+)$")


def _below(problem: str) -> bool:
    """A usage problem whose figure is lower than the recording's."""
    match = _USAGE_PROBLEM.search(problem)
    return match is not None and int(match["have"]) < int(match["want"])


STREAMED_ARGUMENTS_UNKNOWN_TO_CLI = (
    "the Gemini CLI does not assemble function-call arguments streamed in pieces (it never asks for them): "
    "it sees nameless calls, its loop detection ends the turn and it asks again, nothing reaching ACP or "
    "its chat file (capabilities: gemini-cli tool_use)"
)
IMAGES_DROPPED_BY_CLI = (
    "the Gemini CLI drops generated images: neither ACP nor its chat file carries them "
    "(capabilities: gemini-cli image_output)"
)
SERVER_MCP_RUN_BY_CLI = (
    "the Gemini CLI runs a server-side MCP call found in the model's output as one of its own tools "
    "(it has none by that name: an error result, then it asks the model again) "
    "(capabilities: gemini-cli server_side_tools)"
)


def _retried_by_cli(turn: RecordedTurn) -> bool:
    """An answer the Gemini CLI treats as invalid and asks again for: nothing visible (no chunks, no parts,
    only thoughts or whitespace) or a malformed call."""
    chunks = turn.response if isinstance(turn.response, list) else [turn.response]
    finishes = {c.get("finishReason") for chunk in chunks for c in chunk.get("candidates") or []}
    visible = any(
        not part.get("thought") and (str(part.get("text", "")).strip() or set(part) - {"text", "thoughtSignature"})
        for chunk in chunks
        for part in _parts(chunk)
    )
    return not visible or "MALFORMED_FUNCTION_CALL" in finishes


def _has_streamed_arguments(turn: RecordedTurn) -> bool:
    chunks = turn.response if isinstance(turn.response, list) else [turn.response]
    return any(
        "partialArgs" in part["functionCall"] or "willContinue" in part["functionCall"]
        for chunk in chunks
        for part in _parts(chunk)
        if isinstance(part.get("functionCall"), dict)
    )


def _has_server_mcp(turn: RecordedTurn) -> bool:
    chunks = turn.response if isinstance(turn.response, list) else [turn.response]
    return any("functionResponse" in part for chunk in chunks for part in _parts(chunk))


def declared_differences(
    backend: str, turns: Sequence[RecordedTurn], problems: list[str], *, helper_calls: bool = False
) -> tuple[list[str], list[str]]:
    """Split a run's problems into (failures, declared differences) for what the served turns held;
    `helper_calls`: the run also made unary model calls (the CLI's own, e.g. for its web search)."""
    if backend != "gemini-cli":
        return problems, []
    streamed_arguments = any(_has_streamed_arguments(t) for t in turns)
    retried = any(_retried_by_cli(t) for t in turns)
    server_mcp = any(_has_server_mcp(t) for t in turns)
    failures: list[str] = []
    declared: list[str] = []
    for problem in problems:
        if streamed_arguments and problem.startswith(("tool calls differ", "usage ", "ends error")):
            declared.append(f"{problem}: {STREAMED_ARGUMENTS_UNKNOWN_TO_CLI}")
        elif retried and (
            problem.startswith("usage ")
            or problem == "an empty answer stream was not warned about"
            or (problem.startswith("ends error") and END_OF_RECORDING in problem)
        ):
            declared.append(f"{problem}: {RETRIED_BY_CLI}")
        elif helper_calls and problem.startswith("usage ") and _below(problem):
            declared.append(f"{problem}: {HELPER_CALLS_BY_CLI}")
        elif problem.endswith("neither shown nor warned about"):
            declared.append(f"{problem}: {IMAGES_DROPPED_BY_CLI}")
        elif server_mcp and problem.startswith(("tool calls differ", "ends error")):
            declared.append(f"{problem}: {SERVER_MCP_RUN_BY_CLI}")
        else:
            failures.append(problem)
    return failures, declared


PROMPTS = ("Please do the task.", "Continue with the next message.")


def _sentinel() -> RecordedTurn:
    return RecordedTurn(
        method="generateContentStream", response=[], fault=Fault(kind="bad_request", message=END_OF_RECORDING)
    )


def _turns_served(server: FakeGemini, api_method: str) -> int:
    """Recorded turns of this method the server has answered (not a fault, not a script error)."""
    return sum(1 for r in server.requests_for(api_method) if r.status == 200 and r.error is None and r.fault is None)


async def play(
    recording: Recording,
    backend: FidelityBackend,
    workspace: Path,
    *,
    cli_home: Path | None = None,
    warm: WarmCli | None = None,
) -> Verdict:
    """Play `recording` on `backend` (runs resumed until every model turn was served) and check each run.

    `workspace` is the runs' cwd; `cli_home` the isolated home of the `gemini` binary (gemini-cli); or `warm`, a
    module's warm CLI host (gemini-cli, `tests.harness.warm_cli`): its server plays the recording, its processes run.
    """
    from unified import execute
    from unified.types import ExecuteParams

    turns = recording.model_turns()
    side = [t for t in recording.side_turns() if t.method == "generateContent"]
    helpers_served = 0
    verdict = Verdict(recording.name, backend, turns=len(turns))
    script = Script(turns=[*turns, *recording.side_turns(), *(_sentinel() for _ in range(SENTINELS))])
    serving = contextlib.nullcontext(warm.play(script.turns)) if warm is not None else FakeGemini(script)
    async with serving as server:
        options = warm.backend_options if warm is not None else backend_options_for(server, backend, cli_home=cli_home)
        if backend != "gemini-cli":
            options["retry_delay_scale"] = 0.001
        short_id: str | None = None
        while verdict.served < len(turns) or verdict.runs == 0:
            params = ExecuteParams(
                prompt=PROMPTS[min(verdict.runs, 1)],
                backend=backend,
                cwd=workspace,
                model=None if backend == "gemini-cli" else recording.model,
                approval_mode="yolo",
                resume=short_id,
                backend_options=options,
            )
            events: list[UnifiedEvent] = []
            async with execute(params) as stream:
                async for event in stream:
                    events.append(event)
            verdict.runs += 1
            verdict.events.append(events)
            served = _turns_served(server, "generateContentStream")
            helpers = _turns_served(server, "generateContent")
            expected = expected_of(turns[verdict.served : served])
            helper_usage = expected_of(side[helpers_served:helpers]).usage
            expected.usage += helper_usage
            helpers_served = helpers
            prefix = f"run {verdict.runs}: " if verdict.runs > 1 else ""
            found = check_run(events, expected, exact_calls=backend != "gemini-cli")
            failures, declared = declared_differences(
                backend, turns[verdict.served : served], found, helper_calls=not helper_usage.is_empty()
            )
            verdict.problems += [prefix + p for p in failures]
            verdict.declared += [prefix + p for p in declared]
            progressed = served > verdict.served
            verdict.served = served
            result = events[-1] if events else None
            short_id = next((e.short_id for e in events if isinstance(e, SessionStarted)), None)
            if not progressed or not isinstance(result, Result) or result.status != "success" or short_id is None:
                break
        if verdict.served < len(turns):
            verdict.problems.append(f"played {verdict.served} of {len(turns)} model turns")
    return verdict


def gemini_binary() -> Path | None:
    """The pinned `gemini` (UNIFIED_GEMINI_BIN), if it exists."""
    value = os.environ.get("UNIFIED_GEMINI_BIN")
    return Path(value) if value and Path(value).exists() else None


# --- the report -------------------------------------------------------------------------------------


def _cell(verdict: Verdict | None) -> str:
    if verdict is None:
        return "not run"
    if verdict.outcome == "pass":
        return "pass"
    return f"{verdict.outcome}: " + "; ".join(verdict.problems or verdict.declared).replace("|", "\\|")


def render_report(
    recordings: Sequence[Recording], verdicts: dict[tuple[str, str], Verdict], backends: Sequence[str]
) -> str:
    """docs/fidelity.md: the totals per backend, then one row a recording."""
    lines = [
        "# Fidelity: every real recording through every backend",
        "",
        "Generated by `scripts/fidelity` (`python -m tests.harness.fidelity`); see `tests.harness.fidelity` for",
        "the checks. Each recording of both shipped corpora is served by FakeGemini and played through the backend;",
        "`pass` means the stream holds its invariants and agrees with the recording (text, thinking, usage).",
        "",
        "`declared` means a difference `src/unified/capabilities.toml` declares for that backend (the cell is named).",
        "",
        "| backend | pass | declared | fail |",
        "| --- | --- | --- | --- |",
    ]
    for backend in backends:
        got = [verdicts[(r.name, backend)] for r in recordings if (r.name, backend) in verdicts]
        counts = [sum(v.outcome == outcome for v in got) for outcome in ("pass", "declared", "fail")]
        lines.append(f"| {backend} | " + " | ".join(map(str, counts)) + " |")
    lines += ["", "| recording | turns | " + " | ".join(backends) + " |", "| --- | --- |" + " --- |" * len(backends)]
    for recording in recordings:
        cells = [_cell(verdicts.get((recording.name, b))) for b in backends]
        turns = len(recording.model_turns())
        lines.append(f"| `{recording.name}` | {turns} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


async def _play_all(
    recordings: Sequence[Recording], backends: Sequence[FidelityBackend], root: Path, jobs: int
) -> dict[tuple[str, str], Verdict]:
    import anyio

    verdicts: dict[tuple[str, str], Verdict] = {}
    limit = anyio.Semaphore(jobs)

    async def one(index: int, recording: Recording, backend: FidelityBackend) -> None:
        async with limit:
            base = root / f"{index}-{backend}"
            workspace = base / "ws"
            workspace.mkdir(parents=True)
            cli_home = base / "home" if backend == "gemini-cli" else None
            try:
                verdict = await play(recording, backend, workspace, cli_home=cli_home)
            except Exception as exc:  # a crash of one play is that recording's failure, not the report's
                verdict = Verdict(recording.name, backend, problems=[f"raised {type(exc).__name__}: {exc}"])
            verdicts[(recording.name, backend)] = verdict
            mark = _cell(verdict) if verdict.passed else "FAIL " + "; ".join(verdict.problems)
            print(f"{backend:16} {recording.name}: {mark}", flush=True)

    async with anyio.create_task_group() as tg:
        for index, recording in enumerate(recordings):
            for backend in backends:
                tg.start_soon(one, index, recording, backend)
    return verdicts


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tests.harness.fidelity [--backend B] [--only SUBSTRING] [--jobs N] [--out docs/fidelity.md]`."""
    import argparse
    import tempfile

    import anyio

    parser = argparse.ArgumentParser(prog="python -m tests.harness.fidelity", description=main.__doc__)
    parser.add_argument("--backend", action="append", choices=["generate-content", "gemini-cli"])
    parser.add_argument("--only", default="", help="play only recordings whose name contains this")
    parser.add_argument("--jobs", type=int, default=2, help="plays at once (each gemini-cli play starts a process)")
    parser.add_argument("--out", type=Path, help="write the markdown report here")
    args = parser.parse_args(argv)
    backends: list[FidelityBackend] = args.backend or ["generate-content", "gemini-cli"]
    if "gemini-cli" in backends and gemini_binary() is None:
        parser.error("gemini-cli needs UNIFIED_GEMINI_BIN naming the pinned gemini binary")
    chosen = [r for r in corpus() if args.only in r.name]
    with tempfile.TemporaryDirectory(prefix="unified-fidelity-") as tmp:
        root = Path(tmp)
        for name, sub in (("HOME", "home"), ("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config")):
            os.environ[name] = str(root / sub)
        os.environ["GEMINI_CLI_HOME"] = str(root / "home")
        verdicts = anyio.run(_play_all, chosen, backends, root / "plays", args.jobs)
    report = render_report(chosen, verdicts, backends)
    if args.out is not None:
        args.out.write_text(report, encoding="utf-8")
    outcomes = [v.outcome for v in verdicts.values()]
    failed = outcomes.count("fail")
    print(f"{outcomes.count('pass')} pass, {outcomes.count('declared')} declared, {failed} fail")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
