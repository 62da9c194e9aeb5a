"""The cross-backend conformance suite: every scenario against every backend, one expected shape.

Each (backend, scenario) pair runs through `unified.execute` with the real adapter against one
FakeGemini (the gemini CLI reaches it through GOOGLE_GEMINI_BASE_URL with a dummy API key). The
normalised stream must equal the scenario's shape, or its declared alternative where the capability
matrix says `none`; the capabilities the scenario observes must show their evidence. The HTTP
backends run on asyncio and trio; the gemini CLI (a subprocess, ~2 s a run) on asyncio only: its
trio coverage lives in tests/e2e/gemini_cli.

`test_every_declared_capability_is_observed` is the coverage rule: every `full` or `partial` cell
of the matrix for a driven backend needs a scenario that observes it on that backend;
`test_every_declared_difference_is_observed` the same for the matrix's declared differences, whose texts
(tool outputs, thoughts) the scenarios compare across backends.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import os
import sys
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path

import anyio
import pytest

from tests.e2e.conformance import mcp_echo_server
from tests.e2e.conformance.conformance_harness import (
    COLUMNS,
    NOT_DRIVEN,
    PROVED_ELSEWHERE,
    RUN_TIMEOUT_S,
    Column,
    Run,
    Shape,
    answering,
    call_names,
    execute_once,
    model_calls,
    normal_form_problems,
    shape_of,
    texts_of,
)
from tests.e2e.conformance.conformance_scenarios import CAPABILITY_CHECKS, SCENARIOS, PNG_1x1, Scenario
from tests.harness.warm_cli import WarmCli
from unified import EventStream, capabilities
from unified.events import Result, SessionStarted, Thinking, ToolResult, ToolUse, UnifiedEvent, UserInputRequest
from unified.testing import FunctionCall, ModelTurn, Turn
from unified.types import ExecuteParams, HttpMcpServer, ImageInput, McpServer, SseMcpServer, StdioMcpServer

pytestmark = pytest.mark.anyio


MCP_SERVER = Path(__file__).with_name("mcp_echo_server.py")


def _cases() -> Iterator[object]:
    for scenario in SCENARIOS:
        for column in COLUMNS:
            loops = ("asyncio",) if column.needs_cli or column.binary else ("asyncio", "trio")
            marks = [pytest.mark.claude_code if column.backend == "claude-code" else pytest.mark.gemini_cli]
            marks = marks if column.needs_cli else []
            if column.name in scenario.known_gaps:
                marks.append(pytest.mark.xfail(strict=True, reason=scenario.known_gaps[column.name]))
            for loop in loops:
                yield pytest.param(loop, column, scenario, id=f"{column.name}-{scenario.name}-{loop}", marks=marks)


def expected_shape(scenario: Scenario, column: Column) -> tuple[Shape, str | None]:
    """The scenario's shape for this backend, and the capability whose `none` chose an alternative."""
    return scenario.expected(column.name, column.level)


def _ready(column: Column, request: pytest.FixtureRequest) -> WarmCli | None:
    """The column's binary made ready; for the ACP column, the module's warm CLI its scenarios share (each
    scenario is a new session with its own workspace, as an orchestrator's runs in one pooled process)."""
    if not column.needs_cli:
        return None
    request.getfixturevalue("claude_ready" if column.backend == "claude-code" else "cli_ready")
    if column.name == "gemini-cli":
        warm = request.getfixturevalue("warm_cli")
        assert isinstance(warm, WarmCli)
        return warm
    return None


def binary_ready(column: Column) -> None:
    """A column that drives a pinned binary other than gemini (codex): it must be installed."""
    if column.binary and not Path(os.environ.get(column.binary, "")).exists():
        pytest.fail(f"{column.binary} names no installed binary: run scripts/setup (scripts/test does)")


async def run_scenario(
    column: Column, scenario: Scenario, workspace: Path, warm: WarmCli | None = None
) -> tuple[Run, list[UserInputRequest]]:
    """The scenario's run(s) on `column`; with `warm`, on the module's shared server and warm CLI process."""
    first_turns = scenario.first_run.turns if scenario.first_run else ()
    asked: list[UserInputRequest] = []
    options = scenario.options_for.get(column.name, {})
    binary_ready(column)
    turns = [column.adapt(turn) for turn in (*first_turns, *scenario.script(column.name))]
    with contextlib.ExitStack() as serving:
        mcp: tuple[McpServer, ...] = ()
        if scenario.mcp == "stdio":
            mcp = (StdioMcpServer(name="echo", command=sys.executable, args=(str(MCP_SERVER),), timeout_s=20),)
        elif scenario.mcp is not None:
            heard = len(mcp_echo_server.heard)
            url = serving.enter_context(mcp_echo_server.serving(scenario.mcp))
            kind = HttpMcpServer if scenario.mcp == "http" else SseMcpServer
            mcp = (kind(name="echo", url=url, timeout_s=20),)
        run = await _run_with(column, scenario, workspace, turns, options, mcp, asked, warm)
    if scenario.mcp in ("http", "sse") and run.result.status == "success":
        played = [turn for turn in scenario.script(column.name) if isinstance(turn, ModelTurn)]
        said = [call.args["text"] for turn in played for call in turn.function_calls]
        if column.level("mcp") == "none":  # the column connects no server: nothing may have reached it
            said = []
        assert mcp_echo_server.heard[heard:] == said, f"the MCP server was not called over {scenario.mcp} as scripted"
    return run, asked


async def _run_with(
    column: Column,
    scenario: Scenario,
    workspace: Path,
    turns: list[Turn],
    options: Mapping[str, object],
    mcp: tuple[McpServer, ...],
    asked: list[UserInputRequest],
    warm: WarmCli | None,
) -> Run:
    serving = contextlib.nullcontext(warm.play(turns)) if warm is not None else column.server(turns)
    pooled: dict[str, object] = {} if warm is None else {"pool": warm.pool}
    async with serving as server:
        first: Run | None = None
        resume: str | None = None
        if scenario.first_run is not None:
            events = await execute_once(column, server, workspace, prompt=scenario.first_run.prompt, options=pooled)
            first = Run(column, events, server.requests, workspace, 0.0)
            resume = first.started.short_id
            assert first.result.status == "success", shape_of(events)
        seen = len(server.requests)
        events = await execute_once(
            column,
            server,
            workspace,
            prompt=scenario.prompt,
            approval_mode=scenario.approval_modes_for.get(column.name, scenario.approval_mode),
            on_user_input=answering(scenario.answer, asked) if scenario.answer else None,
            resume=resume,
            images=(ImageInput(mime_type="image/png", data=PNG_1x1),) if scenario.images else (),
            cancel_after_first_event=scenario.cancel_after_first_event,
            options={**options, **pooled},
            mcp_servers=mcp,
        )
        seconds = (events[-1].timestamp - events[0].timestamp).total_seconds()
        run = Run(column, events, server.requests[seen:], workspace, seconds, first)
        assert not server.problems, (
            f"the backend asked its fake server for more than the script holds: {server.problems}"
        )
    return run


@pytest.mark.e2e
@pytest.mark.parametrize(("anyio_backend", "column", "scenario"), list(_cases()))
async def test_scenario(
    anyio_backend: str, column: Column, scenario: Scenario, workspace: Path, request: pytest.FixtureRequest
) -> None:
    warm = _ready(column, request)
    existed = {path: (workspace / path).exists() for path in scenario.files}
    run, asked = await run_scenario(column, scenario, workspace, warm)
    shape, substituted = expected_shape(scenario, column)
    aliases = {**column.aliases, **scenario.aliases}
    played = [column.adapt(turn) for turn in scenario.script(column.name)]
    got = shape_of(run.events, aliases, call_names(played, column.calls))
    kinds = [e.type for e in run.events]
    assert got == shape, f"{column.name} / {scenario.name}: shape {got}, expected {shape}; events {kinds}"
    if not shape[0].startswith("error "):  # a run refused before it starts has no session
        assert isinstance(next(e for e in run.events if e.type != "warning"), SessionStarted), kinds
    if scenario is SCENARIOS[0]:  # `session_started.capabilities` is the matrix's row: a consumer reads the levels
        assert run.started.capabilities == capabilities.snapshot(column.name)  # routing uses (was a run of its own)
    if scenario.final_text is not None:
        assert run.result.final_text == scenario.final_text
    for path, exists in scenario.files.items():
        # Under an alternative the capability that would have made a file is missing: nothing new may appear,
        # and what the scenario protects must stay.
        exists = exists if substituted is None else exists and existed[path]
        assert (workspace / path).exists() is exists, f"{path} exists={not exists} after the run"
    if scenario.answer is not None and substituted is None:
        assert asked, "on_user_input was never called"
    normal = normal_form_problems(column, run.events, played, aliases)
    assert not normal, f"{column.name} / {scenario.name}: contents differ from the normal form: {normal}"
    for expectation in scenario.texts if substituted is None else ():
        difference, wanted = expectation.expected(column.name)
        if difference is not None:
            assert difference in capabilities.column(column.name).differences, f"{difference} is not in the matrix"
        calls = [args for _, args in model_calls(played, aliases, column.calls)]
        texts = texts_of(expectation.kind, run.events, workspace, calls)
        assert texts == wanted, f"{column.name} / {scenario.name}: {expectation.kind} texts {texts}, expected {wanted}"
    problems = {
        capability: problem
        for capability in scenario.observes
        if capability != substituted and capability in CAPABILITY_CHECKS
        if (problem := CAPABILITY_CHECKS[capability](run)) is not None
    }
    assert not problems, f"{column.name} / {scenario.name}: capability evidence missing: {problems}"


def _freed_cases() -> Iterator[object]:
    for column in COLUMNS:
        marks = [pytest.mark.claude_code if column.backend == "claude-code" else pytest.mark.gemini_cli]
        loops = ("asyncio",) if column.needs_cli or column.binary else ("asyncio", "trio")
        for loop in loops:
            yield pytest.param(loop, column, id=f"{column.name}-{loop}", marks=marks if column.needs_cli else [])


@pytest.mark.e2e
@pytest.mark.parametrize(("anyio_backend", "column"), list(_freed_cases()))
async def test_a_finished_run_is_freed_at_once_not_left_to_the_cycle_collector(
    anyio_backend: str, column: Column, workspace: Path, request: pytest.FixtureRequest
) -> None:
    """An orchestrator runs thousands: once a run (here a tool call and an answer) has ended and its stream is
    dropped, its guard and its backend (the adapter's run, translator, connection, session setup) are gone, with
    the cycle collector off. A background ticker cancelled at the run's end (its CancelledError's traceback
    holding the run's frames) and a method of an object handed to an object it holds made such cycles on the
    gemini-cli, codex and interactions backends. The servers' and the SDKs' own objects are not looked at."""
    _ready(column, request)
    binary_ready(column)
    scenario = next(s for s in SCENARIOS if s.name == "one_tool_call")
    turns = [column.adapt(turn) for turn in scenario.script(column.name)]
    async with column.server(turns) as server:
        params = ExecuteParams(
            prompt=scenario.prompt,
            backend=column.backend,
            model=column.model,
            cwd=workspace,
            approval_mode="yolo",
            backend_options=column.options(server),
        )
        gc.collect()
        gc.disable()
        try:
            stream = EventStream(params, strict=True)
            given = weakref.ref(params)  # held by whatever the run made of it (its options, its turns)
            del params
            with anyio.fail_after(RUN_TIMEOUT_S):
                async with stream:
                    events = [event async for event in stream]
            assert isinstance(events[-1], Result)
            assert events[-1].status == "success", events[-1]
            guard = weakref.ref(stream._stream.guard)
            backend = weakref.ref(stream._stream.guard.backend)
            del stream
            assert guard() is None, f"{column.name}: the run's guard waits for the cycle collector"
            assert backend() is None, f"{column.name}: the backend waits for the cycle collector"
            assert given() is None, f"{column.name}: what the run made of its parameters waits for the collector"
        finally:
            gc.enable()


def test_texts_follow_the_scripts_calls_and_join_a_continued_thought(tmp_path: Path) -> None:
    """Tool outputs compare in the script's call order (parallel calls end in any order) and a thought streamed
    as replace=false pieces is one text, as the shape counts it; a codex exec_command is named by its command."""
    codex = next(c for c in COLUMNS if c.name == "codex")
    turns = [ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": n}) for n in ("a", "b")])]
    calls = [args for _, args in model_calls(turns, codex.aliases, codex.calls)]
    tools: list[UnifiedEvent] = [
        ToolUse(tool_use_id="2", name="exec_command", input={"cmd": "cat b"}),
        ToolUse(tool_use_id="1", name="exec_command", input={"cmd": "cat a"}),
        ToolResult(tool_use_id="2", output="B"),
        ToolResult(tool_use_id="1", output="A"),
    ]
    assert texts_of("tool_output", tools, tmp_path, calls) == ("A", "B")
    assert texts_of("tool_output", tools, tmp_path) == ("B", "A")  # no script: the order of the tool_uses
    assert shape_of(tools, codex.aliases, call_names(turns, codex.calls)) == ("tool read_file ok",) * 2
    thoughts: list[UnifiedEvent] = [
        Thinking(text="**Plan**\n\nFir", replace=False),
        Thinking(text="st.", replace=False),
        Thinking(text="", replace=False, signature="c2ln"),
        Thinking(text="Next.", replace=True),
        ToolUse(tool_use_id="3", name="shell", input={}),
        Thinking(text="Again.", replace=False),
    ]
    assert texts_of("thinking", thoughts, tmp_path) == ("**Plan**\n\nFirst.", "Next.", "Again.")


def test_every_declared_capability_is_observed() -> None:
    """Every `full`/`partial` cell of a driven backend is observed by a scenario expected to pass there."""
    unaccounted = set(capabilities.BACKENDS) - {c.name for c in COLUMNS} - set(NOT_DRIVEN)
    assert not unaccounted, f"matrix columns neither driven by the suite nor listed in NOT_DRIVEN: {unaccounted}"
    named = {c for s in SCENARIOS for c in (*s.observes, *s.alternatives)}
    assert named <= set(capabilities.CAPABILITIES), f"unknown capabilities: {named - set(capabilities.CAPABILITIES)}"
    unobserved = [
        f"{column.name}/{capability} ({cell.level}: {cell.note})"
        for column in COLUMNS
        for capability, cell in capabilities.column(column.name).cells.items()
        if cell.level in ("full", "partial")
        if not any(
            capability in s.observes and column.name not in s.known_gaps and expected_shape(s, column)[1] != capability
            for s in SCENARIOS
        )
    ]
    assert not unobserved, "declared but observed by no scenario:\n" + "\n".join(unobserved)


def test_every_full_cell_of_a_column_not_driven_names_the_test_that_proves_it() -> None:
    """The rule above for the columns the suite does not drive: each `full` cell names its proof, which exists."""
    root = Path(__file__).resolve().parents[3]
    missing = [
        f"{name}/{capability}"
        for name in NOT_DRIVEN
        for capability, cell in capabilities.column(name).cells.items()
        if cell.level == "full" and (name, capability) not in PROVED_ELSEWHERE
    ]
    assert not missing, f"full cells of columns not driven, with no test named in PROVED_ELSEWHERE: {missing}"
    absent = []
    for (name, capability), proof in PROVED_ELSEWHERE.items():
        path, function = proof.split("::")
        source = root / path
        defined = source.is_file() and any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function
            for node in ast.walk(ast.parse(source.read_text()))
        )
        if not defined or name not in NOT_DRIVEN or capabilities.level(name, capability) == "none":
            absent.append(f"{name}/{capability}: {proof}")
    assert not absent, f"PROVED_ELSEWHERE names tests that do not exist (or cells that are none): {absent}"


def test_every_declared_difference_is_observed() -> None:
    """Every difference a driven column declares in the matrix is the expected text of a scenario on it, so a
    difference that disappears (or changes) fails the suite instead of staying declared."""
    unobserved = [
        f"{column.name}/{name} ({difference.cell}: {difference.note})"
        for column in COLUMNS
        for name, difference in capabilities.column(column.name).differences.items()
        if not any(
            t.declared.get(column.name, ("", ()))[0] == name and column.name not in s.known_gaps
            for s in SCENARIOS
            for t in s.texts
        )
    ]
    assert not unobserved, "declared but observed by no scenario:\n" + "\n".join(unobserved)
