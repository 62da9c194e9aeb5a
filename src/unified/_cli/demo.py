"""`unified demo`: one built-in task, run through the real adapters of every backend that can run here, offline.

A throwaway workspace, a throwaway CLI home and data directory, and one script that thinks, looks
around the workspace, reads a file and answers, played by FakeGemini (the Google backends),
FakeAnthropic (Claude Code, which looks around by reading the README: its tools have no listing a
default policy allows) or FakeOpenAI (Codex: the same script as the OpenAI Responses API). The
model is scripted (the same turns and made-up token counts for every backend); everything else is
real: the `gemini`, `claude` and `codex` binaries with their own tools, the google-genai SDK over
HTTP on 127.0.0.1, `unified`'s tool runtime and policy, the stream guard. A backend that needs an
agent binary (`unified._cli.install.INSTALLABLE`) and cannot start one here (no Node.js, no binary)
is skipped, with what to do about it.

While it runs, every place a backend could write (XDG folders, the data directory, the CLI's
home) points into one temporary directory, removed at the end: the demo writes nothing else.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from unified._cli.demo_backends import DEMO_BACKENDS
from unified.events import Result, Thinking, ToolUse, UnifiedEvent
from unified.testing import CODEX_MODEL, FakeAnthropic, FakeGemini, FakeOpenAI, FunctionCall, ModelTurn, Thought, Usage

if TYPE_CHECKING:
    from unified._execute import EventStream

__all__ = [
    "ANSWER",
    "DEMO_BACKENDS",
    "NOTES",
    "PROMPT",
    "SCRIPTED",
    "TURN_COUNTING",
    "DemoControl",
    "DemoRun",
    "Skipped",
    "differences",
    "run_demo",
    "script",
    "skipped",
    "summary_table",
]

PROMPT = "What is in this project, and what do the notes say?"
NOTES = "Ship the adapter layer on Friday.\nBenchmarks first.\n"
ANSWER = "The project holds a README and notes.txt. The notes say: ship the adapter layer on Friday, benchmarks first."
SCRIPTED = (
    "The model is scripted: FakeGemini on 127.0.0.1 plays the same 3 turns and made-up token counts to every "
    "backend. The adapters, the SDK, the agent binaries and the tools are real."
)
"""Said first, so nobody takes the answers or the token counts for a real model's."""
TURN_COUNTING = {
    "gemini-cli": "ACP marks no turn boundary: a turn that only calls a tool right after another tool call "
    "is not counted, so result.turns is a lower bound there (docs/backends/gemini-cli.md)",
}
"""Why a backend's `result.turns` may be lower than the model turns played, by backend."""


def script(backend: str = "gemini-cli") -> list[ModelTurn]:
    """Three model turns: look around, read, answer (with real thought-summary shapes and usage)."""
    claude = backend == "claude-code"
    look = (
        FunctionCall(name="Read", args={"file_path": "README.md"})
        if claude
        else FunctionCall(name="list_directory", args={"dir_path": "."})
    )
    return [
        ModelTurn(
            thoughts=[Thought(text="**Looking around**\n\nList the workspace before answering.", signature="demo-1")],
            function_calls=[look],
            usage=Usage(input_tokens=812, output_tokens=9, thinking_tokens=14),
        ),
        ModelTurn(
            function_calls=[FunctionCall(name="Read" if claude else "read_file", args={"file_path": "notes.txt"})],
            usage=Usage(input_tokens=870, output_tokens=11),
        ),
        ModelTurn(text=ANSWER, text_chunks=4, usage=Usage(input_tokens=931, output_tokens=27)),
    ]


@dataclass
class DemoRun:
    backend: str
    events: list[UnifiedEvent]

    @property
    def result(self) -> Result | None:
        last = self.events[-1] if self.events else None
        return last if isinstance(last, Result) else None

    @property
    def tools(self) -> list[str]:
        return [e.name for e in self.events if isinstance(e, ToolUse)]


@dataclass(frozen=True)
class Skipped:
    """A backend the demo cannot run here, why, and what makes it run."""

    backend: str
    why: str
    fix: str

    def line(self) -> str:
        return f"skipped {self.backend}: {self.why} ({self.fix})"


@dataclass
class DemoControl:
    """Shared with whoever handles Ctrl-C: the run in progress, and whether to start no other."""

    stream: EventStream | None = None
    """The run in progress (`cancel(interrupted=True)` ends it with `result(interrupted)`)."""
    interrupted: bool = False
    terminated: bool = False
    """The interruption was SIGTERM (the demo exits 143, not 130)."""
    runs: list[DemoRun] = field(default_factory=list)
    """The runs that ended, in order."""
    binaries: dict[str, Path] = field(default_factory=dict)
    """The agent binary each backend that needs one runs (found before the demo's folders replace the user's)."""


def _in_a_clone() -> bool:
    """Whether this unified is a clone's source tree (scripts/setup beside it), not an installed package."""
    return (Path(__file__).resolve().parents[3] / "scripts" / "setup").is_file()


def skipped(backends: tuple[str, ...], env: Mapping[str, str], control: DemoControl) -> list[Skipped]:
    """The backends of `backends` that cannot run here; the binaries of the others go into `control`."""
    from unified._binary.install import NodeUnavailable, locate, node_version
    from unified._cli.install import INSTALLABLE, spec_of
    from unified.errors import BackendUnavailable

    found: list[Skipped] = []
    for backend in backends:
        if backend not in INSTALLABLE:
            continue
        spec = spec_of(backend)
        try:
            if spec.runs_on_node:
                node_version(spec, env)
            control.binaries[backend] = locate(spec, None, env).path
        except NodeUnavailable as exc:
            again = "./scripts/demo" if _in_a_clone() else f"`{spec.install_command}`"
            found.append(Skipped(backend, exc.message, f"install Node.js {spec.min_node[0]}+, then run {again}"))
        except BackendUnavailable as exc:
            fix = "run ./scripts/setup" if _in_a_clone() else f"run `{spec.install_command}`"
            found.append(Skipped(backend, exc.message, fix))
    return found


@contextmanager
def _only_under(root: Path) -> Iterator[None]:
    """Every folder a backend writes by default (XDG data/cache/state/config, unified's data dir) under `root`."""
    names = ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "UNIFIED_DATA_DIR")
    previous = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ[name] = str(root / name.lower())
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _options(
    server: FakeGemini | FakeAnthropic | FakeOpenAI, backend: str, root: Path, control: DemoControl
) -> dict[str, object]:
    from unified._cli.install import spec_of
    from unified.testing import backend_options_for

    options = backend_options_for(server, backend, cli_home=root / backend / "home")
    if backend in control.binaries:
        options[spec_of(backend).option] = str(control.binaries[backend])
    return options


async def run_demo(
    backends: tuple[str, ...], show: Callable[[str, UnifiedEvent], None], control: DemoControl, root: Path
) -> list[DemoRun]:
    """Run the task on each backend in turn under `root`, passing every event to `show` as it arrives.

    Starts no backend once `control.interrupted` is set; `control.stream` is the run in progress,
    `control.runs` the runs that ended (also returned).
    """
    from unified._execute import execute
    from unified.types import ExecuteParams

    runs = control.runs
    with _only_under(root / "writes"):
        for backend in backends:
            if control.interrupted:
                break
            workspace = root / backend / "project"
            workspace.mkdir(parents=True)
            (workspace / "README.md").write_text("# demo project\n")
            (workspace / "notes.txt").write_text(NOTES)
            events: list[UnifiedEvent] = []
            fake = {"claude-code": FakeAnthropic, "codex": FakeOpenAI}.get(backend, FakeGemini)
            async with fake(script(backend)) as server:
                params = ExecuteParams(
                    prompt=PROMPT,
                    backend=backend,
                    model={"claude-code": None, "codex": CODEX_MODEL}.get(backend, "gemini-2.5-flash"),
                    cwd=workspace,
                    approval_mode="default",
                    total_timeout_s=120,
                    backend_options=_options(server, backend, root, control),
                )
                async with execute(params) as stream:
                    control.stream = stream
                    try:
                        async for event in stream:
                            events.append(event)
                            show(backend, event)
                    finally:
                        control.stream = None
            runs.append(DemoRun(backend, events))
    return runs


# --- the summary --------------------------------------------------------------------------------------


def summary_table(runs: list[DemoRun]) -> Table:
    """One row per backend, narrow enough for 80 columns: the tool names and token figures are below it."""
    title = "the same task, " + (f"{len(runs)} backends" if len(runs) != 1 else "one backend")
    table = Table(title=title)
    for column in ("backend", "result", "turns", "events", "tools", "tokens", "time"):
        table.add_column(column, no_wrap=True, justify="left" if column in ("backend", "result") else "right")
    for run in runs:
        result = run.result
        style = "green" if result is not None and result.status == "success" else "red"
        table.add_row(
            run.backend,
            Text(result.status if result else "no result", style=style),
            str(result.turns) if result else "-",
            str(len(run.events)),
            str(len(run.tools)),
            str(result.usage.total_tokens) if result else "-",
            f"{result.duration_ms / 1000:.1f} s" if result else "-",
        )
    return table


def differences(runs: list[DemoRun]) -> list[str]:
    """What the table's figures mean and why they differ between backends, from the runs themselves."""
    finished = [run for run in runs if run.result is not None and run.result.status == "success"]
    if not finished:
        return []
    notes = []
    tools = {", ".join(run.tools) or "none" for run in finished}
    if len(tools) == 1:
        notes.append(f"tools: {tools.pop()}, on {'every backend' if len(finished) > 1 else finished[0].backend}.")
    else:
        notes.append("tools: " + "; ".join(f"{run.backend}: {', '.join(run.tools) or 'none'}" for run in finished))
    usage = {run.result.usage.model_dump_json() for run in finished if run.result is not None}
    first = finished[0].result
    assert first is not None
    from unified._cli.render import format_usage

    if len(usage) == 1:
        notes.append(f"tokens: the script's own figures, reported alike ({format_usage(first.usage)}).")
    most = max(run.result.turns for run in finished if run.result is not None)
    for run in finished:
        assert run.result is not None
        if run.result.turns < most:
            why = TURN_COUNTING.get(run.backend, f"it counts turns its own way (docs/backends/{run.backend}.md)")
            notes.append(f"turns: {run.backend} counts {run.result.turns} where the others count {most}, as {why}.")
    notes += _event_differences(finished)
    return notes


def _event_differences(runs: list[DemoRun]) -> list[str]:
    counts = {run.backend: Counter(event.type for event in run.events) for run in runs}
    kinds = sorted({kind for count in counts.values() for kind in count})
    notes = []
    for kind in kinds:
        per_backend = {backend: count[kind] for backend, count in counts.items()}
        if len(set(per_backend.values())) < 2:
            continue
        shown = ", ".join(f"{number} on {backend}" for backend, number in per_backend.items())
        notes.append(f"events: {kind} {shown}{_why(kind, runs)}.")
    return notes


def _and(backends: list[str]) -> str:
    """`a sends`, `a and b send`, `a, b and c send`."""
    names = " and ".join([", ".join(backends[:-1]), backends[-1]] if len(backends) > 1 else backends)
    return f"{names} {'sends' if len(backends) == 1 else 'send'}"


def _why(kind: str, runs: list[DemoRun]) -> str:
    """Why one backend has more events of `kind`, when the events show it."""
    if kind == "thinking":
        thoughts = {run.backend: [e for e in run.events if isinstance(e, Thinking)] for run in runs}
        fewest = min(len(each) for each in thoughts.values())
        more = {backend: each for backend, each in thoughts.items() if len(each) > fewest}
        alone = [backend for backend, each in more.items() if any(not e.text and e.signature for e in each)]
        pieces = [b for b, each in more.items() if b not in alone and any(e.text and not e.replace for e in each)]
        reasons = []
        if alone:
            reasons.append(f"{_and(alone)} a thought's signature in a thinking event of its own, without text")
        if pieces:
            reasons.append(f"{_and(pieces)} a thought in pieces, each extending it (replace=false)")
        if reasons:
            return f" ({'; '.join(reasons)})"
    if kind == "text_delta":
        return " (each backend streams the answer in the chunks its transport delivers)"
    return ""
