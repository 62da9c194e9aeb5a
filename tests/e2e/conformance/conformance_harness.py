"""The machinery of the conformance suite: backend columns, the run of one scenario, the normaliser.

A scenario (see `conformance_scenarios.py`) is data; this module turns it into a script for the
column's fake server (FakeGemini for the Google backends, FakeAnthropic for claude-code, FakeOpenAI
for codex, all playing the one scenario vocabulary), `ExecuteParams` for one backend, a run through
`unified.execute`, and a normalised *shape* of the event stream that can be compared across backends.

The shape keeps what every backend must agree on and drops what legitimately differs:
- `session_started`, `assistant_message` (the guard makes it), `tool_progress` and `warning`s
  (retry notices, option notes) are dropped; the first event is checked separately;
- a run of `text_delta`s is one `text`, a run of `thinking`s is one `thinking`;
- a tool call is one item at the position of its `tool_use`: `tool <name> ok|error`, its name
  mapped through `unified.tools.ALIASES` (the CLI's `list_directory` is our `list_dir`) and the
  column's own names (Claude Code's `Read` is `read_file`, see `Column.tools`; a Codex `exec_command` is
  the script's call whose command line it shows, see `call_names`), our MCP
  names `mcp__<server>__<tool>` written as the CLI's `mcp_<server>_<tool>`, with
  `[ask <source>]` for a `user_input_request` about it and `[<decision> by user]` or `[deny]` for a
  permission decision that matters (automatic allows by a read-only policy are not reported by
  every backend, so they are dropped);
- a subagent is one item, `subagent <name> <status>: (<inner shape>)`, right after its parent's
  tool item (or where it started, if no tool call started it); events carrying its
  `subagent_task_id` make up the inner shape;
- `error <code> [fatal]` and `result <status>` end it. Inputs and outputs are not part of the shape:
  `normal_form_problems` checks them against the scenario's script instead (see there).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from tests.hang_guard import HANG_GUARD_S
from unified import capabilities
from unified._cli.render import Renderer, preview
from unified._execute import EventStream
from unified.events import (
    ErrorEvent,
    PermissionDecision,
    Result,
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
)
from unified.testing import (
    CODEX_MODEL,
    FakeAnthropic,
    FakeGemini,
    FakeOpenAI,
    FunctionCall,
    ModelTurn,
    RecordedRequest,
    Turn,
    codex_call,
)
from unified.testing._wiring import backend_options_for
from unified.tools import ALIASES
from unified.types import BackendName, ExecuteParams

Shape = tuple[str, ...]
MODEL = "gemini-2.5-flash"
"""One concrete model for every backend: the CLI needs one (with `auto` it would spend a turn routing)."""
RUN_TIMEOUT_S = HANG_GUARD_S
"""A hang guard only (tests/hang_guard.py): a run normally ends in seconds, and a loaded machine must not trip it."""


FakeServer = FakeGemini | FakeAnthropic | FakeOpenAI
"""A fake model server of the test kit: each plays the same scenario vocabulary on its own wire."""


@dataclass(frozen=True)
class Column:
    """A column of the capability matrix that the suite drives: a backend and how to point it at its fake server."""

    name: str
    backend: BackendName
    options: Callable[[Any], dict[str, object]]
    needs_cli: bool = False
    server: Callable[[list[Turn]], FakeServer] = FakeGemini
    """The fake that plays the scenarios for this backend (FakeGemini; FakeAnthropic, FakeOpenAI)."""
    model: str | None = MODEL
    """The run's model (None: the fake server's default for the CLI)."""
    tools: Mapping[str, str] = field(default_factory=dict)
    """unified's tool name → this backend's, for the calls a shared script makes (the shape maps them back)."""
    binary: str | None = None
    """The environment variable naming the pinned binary the column drives (checked before it runs)."""
    tool_names: Mapping[str, str] = field(default_factory=dict)
    """The backend's names for the scenarios' calls (as its fake renders them) → the scenarios' names."""
    calls: Callable[[str, dict[str, Any]], tuple[str, dict[str, Any]] | None] | None = None
    """A scenario call (name, arguments) → what the backend's `tool_use` carries for it (None: the backend
    shows no call for it); None: the scenario's own."""

    def level(self, capability: str) -> str:
        return capabilities.level(self.name, capability)

    @property
    def aliases(self) -> dict[str, str]:
        """This backend's tool names → unified's, for the shape and the normal form."""
        return {**{theirs: ALIASES.get(ours, ours) for ours, theirs in self.tools.items()}, **self.tool_names}

    def adapt(self, turn: Turn) -> Turn:
        """A shared script's turn with this backend's tool names."""
        if not self.tools or not isinstance(turn, ModelTurn) or not turn.function_calls:
            return turn
        calls = [
            FunctionCall(name=self.tools.get(c.name, c.name), args=c.args, id=c.id, signature=c.signature)
            for c in turn.function_calls
        ]
        return turn.model_copy(update={"function_calls": calls})


def _cli_options(server: FakeGemini) -> dict[str, object]:
    return backend_options_for(server, "gemini-cli")  # HOME is the test's, prepared by the cli_ready fixture


def _claude_options(server: FakeAnthropic) -> dict[str, object]:
    return backend_options_for(server, "claude-code")  # its home is the test's XDG_DATA_HOME's


def _http_options(backend: BackendName) -> Callable[[FakeGemini], dict[str, object]]:
    # Retry waits shrunk a thousandfold: a scripted 429 asking for seconds takes milliseconds.
    return lambda server: {**backend_options_for(server, backend), "retry_delay_scale": 0.001}


CLAUDE_TOOLS: Mapping[str, str] = {
    "read_file": "Read",
    "write_file": "Write",
    "run_shell_command": "Bash",
    "replace": "Edit",
}
"""The scripts' tools under Claude Code's names (the same arguments: `file_path`, `content`, `command`,
`old_string`/`new_string`). Claude Code has no tool listing a directory: `list_directory` stays itself."""


def _codex_call(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """What the codex backend's tool_use shows for a scenario call, as FakeOpenAI renders it for Codex
    (its module docstring): exec_command's command line, apply_patch's parsed changes, spawn_agent's message,
    request_user_input's questions."""
    rendered = codex_call(FunctionCall(name=name, args=args))
    if rendered["type"] == "message":
        return None  # a subagent's complete_task is its final message, not a call
    if rendered.get("name") == "exec_command":
        return name, {"cmd": rendered["arguments"]["cmd"]}
    if rendered["type"] == "custom_tool_call" and name == "write_file":
        return name, {"changes": [{"path": args["file_path"], "kind": "add", "diff": args["content"]}]}
    if rendered.get("name") == "spawn_agent":
        return name, {"message": rendered["arguments"]["message"]}
    if rendered.get("name") == "request_user_input":  # the questions as Codex parsed them
        questions = rendered["arguments"]["questions"]
        flags = {"isOther": True, "isSecret": False}  # between the question and its options, as Codex orders them
        parsed = [
            {k: q[k] for k in ("id", "header", "question")} | flags | {"options": q["options"]} for q in questions
        ]
        return name, {"questions": parsed}
    return name, args


COLUMNS: tuple[Column, ...] = (
    Column(
        "gemini-cli",
        "gemini-cli",
        _cli_options,
        needs_cli=True,
        # unified's ask_user, served to the CLI as an MCP tool whose server's name is random per run
        tools={"ask_user": "mcp_unified-*_ask_the_user"},
    ),
    Column(
        "gemini-cli/stream-json",
        "gemini-cli",
        lambda server: {**_cli_options(server), "transport": "stream-json"},
        needs_cli=True,
    ),
    Column("generate-content", "generate-content", _http_options("generate-content")),
    Column("interactions", "interactions", _http_options("interactions")),
    Column(
        "claude-code",
        "claude-code",
        _claude_options,
        needs_cli=True,
        server=FakeAnthropic,
        model=None,
        tools={**CLAUDE_TOOLS, "invoke_agent": "Agent", "ask_user": "AskUserQuestion"},
    ),
    Column(
        "codex",
        "codex",
        lambda server: backend_options_for(server, "codex"),
        server=FakeOpenAI,
        model=CODEX_MODEL,
        binary="UNIFIED_CODEX_BIN",
        tool_names={
            "exec_command": "read_file",
            "apply_patch": "write_file",
            "spawn_agent": "invoke_agent",
            "request_user_input": "ask_user",
        },
        calls=_codex_call,
    ),
)
NOT_DRIVEN: Mapping[str, str] = {
    "scripted": "plays a script of UnifiedEvents, not a model: FakeGemini cannot drive it "
    "(its guarantees are tested in tests/foundation)",
}
"""Matrix columns the suite does not drive, and why; the coverage test names them rather than skipping silently."""

_GUARD = "tests/foundation/test_stream_guard.py"
PROVED_ELSEWHERE: Mapping[tuple[str, str], str] = {
    ("scripted", "streaming_text"): f"{_GUARD}::test_normal_run_aggregates_messages_usage_and_ids",
    ("scripted", "thinking"): f"{_GUARD}::test_normal_run_aggregates_messages_usage_and_ids",
    ("scripted", "user_input"): f"{_GUARD}::test_a_model_s_question_reaches_the_handler_and_its_answers_go_back",
    ("scripted", "permission_requests"): f"{_GUARD}::test_user_input_reaches_the_handler_and_back",
    ("scripted", "cancellation"): f"{_GUARD}::test_interrupt_is_its_own_status",
}
"""For a column in NOT_DRIVEN, the test that proves each of its `full` cells on that column (path::function)."""


# --- the normaliser ---------------------------------------------------------------------------------


@dataclass
class _Tool:
    name: str
    outcome: str = "no result"
    notes: list[str] = field(default_factory=list)
    subagents: list[_Subagent] = field(default_factory=list)
    """Subagents this call started; rendered right after it."""

    def render(self) -> list[str]:
        notes = "".join(f" [{n}]" for n in self.notes)
        return [f"tool {self.name} {self.outcome}{notes}", *(line for s in self.subagents for line in s.render())]


@dataclass
class _Subagent:
    name: str
    status: str = "not completed"
    inner: list[_Item] = field(default_factory=list)

    def render(self) -> list[str]:
        return [f"subagent {self.name} {self.status}: ({', '.join(_flatten(self.inner))})"]


_Item = _Tool | _Subagent | str


def _flatten(items: Sequence[_Item]) -> list[str]:
    return [line for item in items for line in ([item] if isinstance(item, str) else item.render())]


def tool_name(name: str, aliases: Mapping[str, str]) -> str:
    """Our runtime's name for a tool: the CLI's aliases, and `mcp__server__tool` written the CLI's way."""
    name = aliases.get(name, ALIASES.get(name, name))
    return name.replace("__", "_") if name.startswith("mcp__") else name


def shown_key(arguments: Mapping[str, Any]) -> str:
    """A call's arguments as the key `call_names` files it under."""
    return json.dumps(arguments, sort_keys=True, default=str)


def call_names(
    turns: Sequence[Turn], translate: Callable[[str, dict[str, Any]], tuple[str, dict[str, Any]] | None] | None
) -> dict[str, str]:
    """For a column whose tool_use shows another call than the script's (`Column.calls`): the shown arguments
    (`shown_key`) → the script's tool name. Codex runs reads, listings and shell commands all as exec_command:
    its `cmd` tells which of the script's calls it is (`cat notes.txt` is read_file, `ls .` list_directory)."""
    if translate is None:
        return {}
    names: dict[str, str] = {}
    for turn in turns:
        for call in (turn.function_calls or []) if isinstance(turn, ModelTurn) else []:
            shown = translate(call.name, dict(call.args or {}))
            if shown is not None:
                names.setdefault(shown_key(shown[1]), call.name)
    return names


def use_name(use: ToolUse, aliases: Mapping[str, str], names: Mapping[str, str]) -> str:
    """The normalised name of a tool_use: the script's name for its arguments (`call_names`), else its own."""
    return tool_name(names.get(shown_key(use.input), use.name), aliases)


def shape_of(
    events: Sequence[UnifiedEvent], aliases: Mapping[str, str] | None = None, names: Mapping[str, str] | None = None
) -> Shape:
    """The normalised shape of a stream (see the module docstring); `aliases` renames tools per scenario,
    `names` by their arguments (`call_names`)."""
    main: list[_Item] = []
    tools: dict[str, _Tool] = {}
    subagents: dict[str, _Subagent] = {}

    def scope(event: UnifiedEvent) -> list[_Item]:
        task = event.subagent_task_id
        return subagents[task].inner if task in subagents else main

    for event in events:
        items = scope(event)
        if isinstance(event, TextDelta | Thinking):
            kind = "text" if isinstance(event, TextDelta) else "thinking"
            if not items or items[-1] != kind:
                items.append(kind)
        elif isinstance(event, ToolUse):
            tools[event.tool_use_id] = _Tool(use_name(event, aliases or {}, names or {}))
            items.append(tools[event.tool_use_id])
        elif isinstance(event, ToolResult) and event.tool_use_id in tools:
            tools[event.tool_use_id].outcome = "error" if event.is_error else "ok"
        elif isinstance(event, PermissionDecision) and event.tool_use_id in tools:
            if event.decided_by == "user":
                tools[event.tool_use_id].notes.append(f"{event.decision} by user")
            elif event.decision == "deny" and event.decided_by != "backend":  # backend: the call could not run
                tools[event.tool_use_id].notes.append("deny")
        elif isinstance(event, UserInputRequest):
            if event.tool_use_id in tools:
                tools[event.tool_use_id].notes.append(f"ask {event.source}")
            else:
                items.append(f"ask {event.source}")
        elif isinstance(event, SubagentStarted):
            subagents[event.task_id] = _Subagent(event.agent_name)
            parent = tools.get(event.parent_tool_use_id or "")
            if parent is not None:
                parent.subagents.append(subagents[event.task_id])
            else:  # a task of its own (an Interactions background agent)
                items.append(subagents[event.task_id])
        elif isinstance(event, SubagentCompleted) and event.task_id in subagents:
            subagents[event.task_id].status = event.status
        elif isinstance(event, ErrorEvent):
            items.append(f"error {event.code}{' fatal' if event.fatal else ''}")
        elif isinstance(event, Result):
            items.append(f"result {event.status}")
    return tuple(_flatten(main))


# --- one run ----------------------------------------------------------------------------------------


@dataclass
class Run:
    """What a scenario run left behind: events, the requests FakeGemini saw, the workspace, timings."""

    column: Column
    events: list[UnifiedEvent]
    requests: list[RecordedRequest]
    workspace: Path
    seconds: float
    first: Run | None = None
    """For a resume scenario: the run that created the session."""

    @property
    def started(self) -> SessionStarted:
        started = next((e for e in self.events if isinstance(e, SessionStarted)), None)
        assert started is not None, f"no session_started in {[e.type for e in self.events]}"
        return started

    @property
    def result(self) -> Result:
        last = self.events[-1]
        assert isinstance(last, Result), f"the stream did not end with a result: {[e.type for e in self.events]}"
        return last

    def model_bodies(self) -> list[str]:
        """Every model request's JSON body, as text (generateContent family, interactions.create, Anthropic
        messages, OpenAI responses)."""
        wanted = ("generateContentStream", "generateContent", "interactions.create", "messages", "responses")
        return [json.dumps(r.body) for r in self.requests if r.api_method in wanted]


Answer = Literal["allow", "deny", "deny_with_message", "allow_changed_input", "stop", "allow_always_then_deny"]
DENIAL_MESSAGE = "Write to staging.txt instead."
CHANGED_INPUT = {"file_path": "new.txt", "content": "changed by the user\n"}
ANSWERS: Mapping[Answer, UserInputResponse] = {
    "allow": UserInputResponse.allow(),
    "deny": UserInputResponse.deny(),
    "deny_with_message": UserInputResponse.deny(DENIAL_MESSAGE),
    "allow_changed_input": UserInputResponse.allow(updated_input=CHANGED_INPUT),
    "stop": UserInputResponse.stop_run(),
}
"""One permission callback for every backend, written against docs/protocol.md ("Permissions")."""


def answering(
    answer: Answer, asked: list[UserInputRequest]
) -> Callable[[UserInputRequest], Awaitable[UserInputResponse]]:
    """An `on_user_input` handler that records each request, gives `answer` to every permission prompt and
    the first option to every question."""

    async def handler(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        if request.source != "permission":  # a question: pick each question's first option
            return UserInputResponse(answers={q.id: q.options[0].id if q.options else "yes" for q in request.questions})
        if answer == "allow_always_then_deny":  # the first prompt allows always; every later one is denied
            first = sum(r.source == "permission" for r in asked) == 1
            return UserInputResponse.allow(always=True) if first else UserInputResponse.deny()
        return ANSWERS[answer]

    return handler


# --- the normal form of contents ----------------------------------------------------------------------


def model_calls(
    turns: Sequence[Turn],
    aliases: Mapping[str, str],
    translate: Callable[[str, dict[str, Any]], tuple[str, dict[str, Any]] | None] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """(normalised name, arguments) of every function call a script makes the model send (as the backend
    shows it, through `translate`)."""
    found = []
    for turn in turns:
        if not isinstance(turn, ModelTurn):
            continue
        for call in turn.function_calls or []:
            shown = translate(call.name, dict(call.args or {})) if translate else (call.name, dict(call.args or {}))
            if shown is not None:
                found.append((tool_name(shown[0], aliases), shown[1]))
    return found


def _resolved_path_of(got: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """Whether `got` is `wanted` but for a `file_path` given as the absolute path the backend resolved the
    model's relative one to (the gemini CLI's prompt names it so when its title cuts the path: tool_use cell)."""
    shown, given = str(got.get("file_path", "")), str(wanted.get("file_path", ""))
    same_otherwise = {k: v for k, v in got.items() if k != "file_path"} == {
        k: v for k, v in wanted.items() if k != "file_path"
    }
    return same_otherwise and Path(shown).is_absolute() and Path(shown).name == Path(given).name != ""


def normal_form_problems(
    column: Column, events: Sequence[UnifiedEvent], turns: Sequence[Turn], aliases: Mapping[str, str]
) -> list[str]:
    """Where a stream's contents break the normal form (docs/protocol.md), beyond its shape.

    - every client-side `tool_use` carries the model's arguments, as the script sent them; where the
      matrix declares `tool_use: partial` (gemini-cli) a call shown before the backend knew them has
      `{}` there and the arguments on its `tool_result.input` (none if it never ran), and `invoke_agent`
      shows only `agent_name`;
    - the one renderer (`unified._cli.render`) shows each such call as `→ <name> <arguments>`;
    - every `tool_result.output` is text or null;
    - every client-side `tool_use` has exactly one `permission_decision`, after it;
    - a successful run reports usage.
    """
    problems: list[str] = []
    aliases = {**aliases, **column.tool_names}
    expected = model_calls(turns, aliases, column.calls)
    names = call_names(turns, column.calls)
    late = column.level("tool_use") == "partial"
    uses = [e for e in events if isinstance(e, ToolUse) and not e.server_side]
    results = {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}
    renderer = Renderer(env={})
    shown = {
        e.tool_use_id: text.plain for e in events if (text := renderer.render(e)) is not None and isinstance(e, ToolUse)
    }
    for use in uses:
        name = use_name(use, aliases, names)
        same = [args for n, args in expected if n == name]
        wanted = next((args for args in same if args == use.input), same[0] if same else None)
        if wanted is None:
            problems.append(f"{name}: a call the script never made")
            continue
        expected.remove((name, wanted))
        got = use.input
        result = results.get(use.tool_use_id)
        if late and not got and result is not None and result.input is not None:
            got = result.input
        denied = any(
            isinstance(e, PermissionDecision) and e.tool_use_id == use.tool_use_id and e.decision == "deny"
            for e in events
        )
        if late and not got and denied:  # asked, then never run: the backend never learnt the arguments
            got = wanted
        if late and denied and _resolved_path_of(got, wanted):
            got = wanted  # asked with the path the backend resolved (declared in the tool_use cell), never run
        if late and name == "invoke_agent" and got == {"agent_name": wanted.get("agent_name")}:
            got = wanted
        if got != wanted:
            problems.append(f"{name}: input {got}, the model sent {wanted}")
        if use.input == wanted and not shown.get(use.tool_use_id, "").strip().endswith(
            f"→ {use.name} {preview(wanted)}"
        ):
            problems.append(f"{name}: rendered as {shown.get(use.tool_use_id)!r}")
    for result in results.values():
        if not isinstance(result.output, str | None):
            problems.append(f"tool_result {result.tool_use_id}: output is {type(result.output).__name__}, not text")
    decisions: dict[str, int] = {}
    seen_uses: set[str] = set()
    for event in events:
        if isinstance(event, ToolUse):
            seen_uses.add(event.tool_use_id)
        elif isinstance(event, PermissionDecision):
            if event.tool_use_id not in seen_uses:
                problems.append(f"decision for {event.tool_use_id} before its tool_use")
            decisions[event.tool_use_id] = decisions.get(event.tool_use_id, 0) + 1
    for use in uses:
        if decisions.get(use.tool_use_id, 0) != 1:
            problems.append(f"{use.name}: {decisions.get(use.tool_use_id, 0)} permission decisions, not 1")
    final = events[-1]
    if isinstance(final, Result) and final.status == "success" and final.usage.is_empty():
        problems.append("a successful run reported no usage")
    return problems


async def execute_once(
    column: Column,
    server: FakeServer,
    workspace: Path,
    *,
    prompt: str,
    cancel_after_first_event: bool = False,
    options: Mapping[str, object] | None = None,
    **fields: Any,
) -> list[UnifiedEvent]:
    """One run of `column` against `server`, strict: a protocol slip by the adapter fails the test."""
    params = ExecuteParams(
        prompt=prompt,
        backend=column.backend,
        model=column.model,
        cwd=workspace,
        backend_options={**column.options(server), **(options or {})},
        **fields,
    )
    events: list[UnifiedEvent] = []
    with anyio.fail_after(RUN_TIMEOUT_S):
        async with EventStream(params, strict=True) as stream:
            async for event in stream:
                if cancel_after_first_event and not events:
                    stream.cancel()
                events.append(event)
    return events


def normal_text(text: str | None, workspace: Path) -> str | None:
    """A tool output or thought as the suite compares it: the run's workspace written `{cwd}`, a process group
    id written `N` (both differ from run to run, not from backend to backend)."""
    if text is None:
        return None
    return re.sub(r"PGID: \d+", "PGID: N", text.replace(str(workspace), "{cwd}"))


def texts_of(
    kind: str, events: Sequence[UnifiedEvent], workspace: Path, calls: Sequence[Mapping[str, Any]] = ()
) -> tuple[str | None, ...]:
    """The texts a `Texts` expectation compares: every tool_result's output, or every thought, in order; tool
    outputs in the order of the script's `calls` (their arguments as shown) when every tool_use is one of them."""
    if kind == "thinking":  # a thought continued (replace=False) right after its start is one text, as in the shape
        thoughts: list[str] = []
        last: UnifiedEvent | None = None
        for event in events:
            if isinstance(event, Thinking) and event.text:
                if not event.replace and isinstance(last, Thinking) and thoughts:
                    thoughts[-1] += event.text
                else:
                    thoughts.append(event.text)
                last = event
            elif not isinstance(event, Thinking):
                last = event
        return tuple(normal_text(t, workspace) for t in thoughts)
    # In the order of the calls, not of their ends: parallel calls may start and end in any order (codex runs
    # them at once).
    uses = [e for e in events if isinstance(e, ToolUse) and not e.server_side]
    script = [shown_key(args) for args in calls]
    if all(shown_key(u.input) in script for u in uses):
        order = {u.tool_use_id: script.index(shown_key(u.input)) for u in uses}
    else:
        order = {u.tool_use_id: i for i, u in enumerate(uses)}
    results = [e for e in events if isinstance(e, ToolResult) and not e.server_side]
    results.sort(key=lambda e: order.get(e.tool_use_id, len(order)))
    return tuple(normal_text(e.output, workspace) for e in results)


def b64(text: str) -> str:
    """Signatures travel base64-encoded; FakeGemini scripts hold them as plain text."""
    return base64.b64encode(text.encode()).decode()
