"""The real `gemini` 0.61 binary over ACP, offline (`--fake-responses`)."""

from __future__ import annotations

import os
import secrets
import signal
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import anyio
import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import (
    RECORDINGS,
    Run,
    alive_in,
    call,
    cmdline,
    kinds,
    running_as,
    sessions_of,
    stream_line,
    text,
    thought,
)
from tests.hang_guard import HANG_GUARD_S
from tests.harness.pidfds import Holder, wait_exited
from unified import ExecuteParams, UserInputRequest, UserInputResponse
from unified._adapters.gemini_cli import AcpPool, default_pool
from unified._execute import EventStream, execute_sync
from unified.conversations import TextPart
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
)
from unified.sessions import export
from unified.types import StdioMcpServer

pytestmark = pytest.mark.anyio
ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""For tests whose trio path adds nothing (asyncio is the folder's default too, tests/e2e/gemini_cli/conftest.py):
text, a permission asked and answered, cancellation and the shared warm process run on both (`BOTH_LOOPS`)."""
BOTH_LOOPS = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])

Responses = Callable[..., Path]


def result_of(events: Sequence[object]) -> Result:
    last = events[-1]
    assert isinstance(last, Result)
    return last


@BOTH_LOOPS
async def test_text_and_thoughts(warm_gemini: Run, responses: Responses) -> None:
    fake = responses(stream_line(thought("**Planning**\nSay hi politely."), text("Hello "), text("there.")))
    events = await warm_gemini(fake)
    assert kinds(events) == ["session_started", "thinking", "text_delta", "assistant_message", "result"]
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.transport == "acp"
    assert started.short_id
    thinking = events[1]
    assert isinstance(thinking, Thinking)
    assert thinking.replace
    assert thinking.subject == "Planning"
    result = result_of(events)
    assert result.status == "success"
    assert result.final_text == "Hello there."
    assert result.usage.input_tokens == 100
    assert result.usage.output_tokens == 5


@ASYNCIO_ONLY
async def test_tool_call_then_answer(warm_gemini: Run, responses: Responses) -> None:
    fake = responses(stream_line(call("read_file", file_path="notes.txt")), stream_line(text("It says alpha.")))
    events = await warm_gemini(fake)
    use = next(e for e in events if isinstance(e, ToolUse))
    done = next(e for e in events if isinstance(e, ToolResult))
    assert use.name == "read_file"
    assert done.tool_use_id == use.tool_use_id
    assert not done.is_error
    assert result_of(events).turns == 2


@ASYNCIO_ONLY
async def test_parallel_calls(warm_gemini: Run, responses: Responses, workspace: Path) -> None:
    (workspace / "two.txt").write_text("two")
    fake = responses(
        stream_line(call("read_file", file_path="notes.txt"), call("read_file", file_path="two.txt")),
        stream_line(text("Both read.")),
    )
    events = await warm_gemini(fake)
    uses = [e for e in events if isinstance(e, ToolUse)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(uses) == 2
    assert {r.tool_use_id for r in results} == {u.tool_use_id for u in uses}


@ASYNCIO_ONLY
async def test_plan_mode_denies_write(warm_gemini: Run, responses: Responses, workspace: Path) -> None:
    fake = responses(stream_line(call("write_file", file_path="new.txt", content="x")), stream_line(text("Denied.")))
    events = await warm_gemini(fake, approval_mode="plan")
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    # The CLI asks (it would allow plan files itself); unified's plan mode denies, as on the API backends.
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "approval_mode", "plan-denies")
    assert next(e for e in events if isinstance(e, ToolResult)).is_error
    assert not (workspace / "new.txt").exists()


@pytest.mark.parametrize(("anyio_backend", "allow"), [("asyncio", True), ("asyncio", False), ("trio", True)])
async def test_permission_through_on_user_input(
    warm_gemini: Run, responses: Responses, workspace: Path, allow: bool
) -> None:
    fake = responses(stream_line(call("write_file", file_path="new.txt", content="x")), stream_line(text("ok")))
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow() if allow else UserInputResponse.deny()

    events = await warm_gemini(fake, on_user_input=answer)
    assert [r.source for r in asked] == ["permission"]
    assert asked[0].tool_name == "write_file"
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert (decision.decision, decision.decided_by) == ("allow" if allow else "deny", "user")
    assert (workspace / "new.txt").exists() is allow
    assert next(e for e in events if isinstance(e, ToolResult)).is_error is not allow
    assert "user_input_request" in kinds(events)


@ASYNCIO_ONLY
async def test_shell_in_default_mode_asks_the_caller_for_every_command(
    warm_gemini: Run, responses: Responses, workspace: Path
) -> None:
    """0.61's policy engine would run a command it deems safe (`echo hi`, `ls`) without asking anyone; unified's
    rule for the CLI (a shell rule with arguments, which its heuristics leave alone) makes it ask, so the
    caller decides every command, with the model's command in the prompt. One run makes the three calls (each
    asked on its own)."""
    commands = ["echo hi > out.txt", "echo hi", "ls"]
    fake = responses(*(stream_line(call("run_shell_command", command=c)) for c in commands), stream_line(text("ok")))
    asked: list[UserInputRequest] = []

    async def deny_all(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.deny()

    events = await warm_gemini(fake, on_user_input=deny_all)
    decisions = [e for e in events if isinstance(e, PermissionDecision)]
    assert [r.tool_name for r in asked] == ["run_shell_command"] * 3
    assert [r.details["args"] for r in asked] == [{"command": c} for c in commands]
    assert [r.details["cwd"] for r in asked] == [str(workspace)] * 3
    assert [(d.decision, d.decided_by) for d in decisions] == [("deny", "user")] * 3
    assert [e.input for e in events if isinstance(e, ToolUse)] == [{"command": c} for c in commands]
    results = [e.output for e in events if isinstance(e, ToolResult)]
    assert results == ['Tool "run_shell_command" was canceled by the user.'] * 3
    assert not (workspace / "out.txt").exists()


@ASYNCIO_ONLY
async def test_default_mode_without_handler_denies_visibly(warm_gemini: Run, responses: Responses) -> None:
    fake = responses(stream_line(call("write_file", file_path="new.txt", content="x")), stream_line(text("ok")))
    events = await warm_gemini(fake)
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "policy", "write-asks")
    assert decision.reason == "it needs approval and nobody can answer in this non-interactive run"


@ASYNCIO_ONLY
async def test_subagent_with_inner_tool_calls(warm_gemini: Run, responses: Responses) -> None:
    fake = responses(
        stream_line(call("invoke_agent", agent_name="generalist", prompt="read notes.txt")),
        stream_line(call("read_file", file_path="notes.txt"), prompt_tokens=50, output_tokens=7),
        stream_line(call("complete_task", result={"response": "alpha and beta"}), prompt_tokens=60, output_tokens=8),
        stream_line(text("The notes say alpha and beta.")),
    )
    events = await warm_gemini(fake, approval_mode="yolo")
    started = next(e for e in events if isinstance(e, SubagentStarted))
    inner = [e for e in events if isinstance(e, ToolUse) and e.subagent_task_id == started.task_id]
    assert started.agent_name == "generalist"
    assert [u.name for u in inner] == ["read_file", "complete_task"]
    completed = next(e for e in events if isinstance(e, SubagentCompleted))
    assert completed.status == "completed"
    assert completed.usage is not None
    assert completed.usage.input_tokens == 110
    assert completed.usage.output_tokens == 15
    assert kinds(events).index("subagent_completed") > max(events.index(u) for u in inner)


@ASYNCIO_ONLY
async def test_api_error_is_a_typed_error(warm_gemini: Run, responses: Responses) -> None:
    fake = responses(stream_line(call("read_file", file_path="notes.txt")))  # runs out: the model call fails
    events = await warm_gemini(fake)
    result = result_of(events)
    assert result.status == "error"
    assert "No more mock responses" in (result.error or "")
    assert kinds(events)[-2] == "error"


PLAYABLE = sorted(RECORDINGS.glob("*.responses"))
ENDS_WITHOUT_A_REPLY = {"parallel-tools.responses"}
"""Recordings whose last model turn asks for tools and holds no reply to their results: the run ends in an error."""


FAKE_RESPONSES_SAMPLE = [
    RECORDINGS / name
    for name in (
        "perf.asian-language.responses",  # text that is not ASCII
        "policy-headless-shell-denied.responses",  # the CLI's own policy refuses a call
        "context-compress-interactive.compress.responses",  # the CLI compresses and retries
        "memory.multi-function-call.responses",  # several calls in one turn, then an answer
        "parallel-tools.responses",  # ends without a reply: a typed error
    )
]
"""The `--fake-responses` wiring on a sample: every recording plays through the real binary (behind
FakeGemini, with every invariant checked) in `scripts/fidelity` (docs/fidelity.md), and a sample of
that in test_gemini_cli_fidelity.py; one cold start each is too dear to repeat all 16 here. Not
`perf.high-volume` (a million lines of `yes` through the CLI's pseudo-terminal: 30 s of a loaded run's worker,
the CLI's own work; `scripts/fidelity` plays it)."""


def test_the_recordings_are_all_there() -> None:
    assert len(PLAYABLE) >= 16
    assert set(FAKE_RESPONSES_SAMPLE) <= set(PLAYABLE)


@ASYNCIO_ONLY  # one cold start per recording, each its own test so that xdist spreads them
@pytest.mark.parametrize("recording", FAKE_RESPONSES_SAMPLE, ids=[r.name for r in FAKE_RESPONSES_SAMPLE])
async def test_sampled_recordings_play_through(warm_gemini: Run, recording: Path) -> None:
    events = await warm_gemini(
        recording,
        prompt="Please do the task.",
        approval_mode="yolo",
        backend_options={"fake_responses_strict": False},
    )
    assert isinstance(events[0], SessionStarted)
    result = result_of(events)
    if recording.name in ENDS_WITHOUT_A_REPLY:
        assert result.status == "error"
        assert "No more mock responses" in (result.error or "")
    else:
        assert result.status == "success", result.error


@pytest.mark.parametrize("ending", ["cancel", "sigkill"])
@pytest.mark.parametrize("transport", ["acp", "stream-json"])
@BOTH_LOOPS
async def test_a_cancelled_or_killed_run_leaves_no_process(
    responses: Responses, workspace: Path, transport: str, ending: str
) -> None:
    """The matrix's `cancellation: full` on both transports, and a CLI SIGKILLed mid-command: the run ends
    (`cancelled`; a typed error) and no process of it is left, neither the CLI's session (node) nor the
    command its shell runs (its `sleep` seen alive first). The CLI runs that command on a pseudo-terminal, a
    session of its own, and here it ignores the hang-up a closed terminal sends and the polite stop signals:
    only a kill ends it, which a killed CLI cannot give; the command still carries the marker of the process
    that started it, and is ended after it."""
    command = f"sleep 600.{secrets.randbelow(10**6):06d}"  # this test's own: xdist runs others beside it
    shell = f"trap '' HUP TERM INT; {command}"
    fake = responses(stream_line(call("run_shell_command", command=shell)), stream_line(text("done")))
    params = ExecuteParams(
        prompt="wait",
        backend="gemini-cli",
        cwd=workspace,
        approval_mode="yolo",
        backend_options={"fake_responses": str(fake), "pool_size": 0, "transport": transport},
    )
    seen: list[UnifiedEvent] = []
    sessions: set[int] = set()
    running: set[int] = set()
    async with EventStream(params) as stream:
        async for event in stream:
            seen.append(event)
            if event.type == "tool_use":
                sessions = sessions_of(str(fake))
                with anyio.fail_after(HANG_GUARD_S):
                    while not (running := running_as(command)):  # noqa: ASYNC110 -- polling /proc: no event to wait on
                        await anyio.sleep(0.02)
                if ending == "cancel":
                    stream.cancel()
                else:
                    for leader in sessions:
                        os.kill(leader, signal.SIGKILL)
    if ending == "cancel":
        assert result_of(seen).status == "cancelled", kinds(seen)
    else:
        assert result_of(seen).status == "error", kinds(seen)
        assert any(isinstance(e, ErrorEvent) for e in seen)
    assert sessions
    with anyio.fail_after(HANG_GUARD_S):
        while alive_in(sessions) or running_as(command) & running:  # noqa: ASYNC110 -- polling /proc
            await anyio.sleep(0.05)


@BOTH_LOOPS
async def test_two_concurrent_runs_share_one_warm_process(responses: Responses, workspace: Path) -> None:
    fake = responses(stream_line(text("one")), stream_line(text("two")), stream_line(text("three")))
    pool = AcpPool(size=1)
    try:
        finals: list[str] = []

        async def one(prompt: str) -> None:
            params = ExecuteParams(
                prompt=prompt,
                backend="gemini-cli",
                cwd=workspace,
                backend_options={"fake_responses": str(fake), "fake_responses_strict": False, "pool": pool},
            )
            async with EventStream(params, strict=True) as stream:
                events = [e async for e in stream]
            assert result_of(events).status == "success"
            finals.append(result_of(events).final_text)

        await one("warm up")
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "first")
            tg.start_soon(one, "second")
        assert pool.spawned == 1
        assert len(finals) == 3
    finally:
        await pool.aclose()
    assert not pool.pids()


PID_MCP_SERVER = '''
import os
import sys
from mcp.server.mcpserver import MCPServer

with open(sys.argv[1], "w") as pid:
    pid.write(str(os.getpid()))
server = MCPServer("srv")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


server.run()
'''


@ASYNCIO_ONLY
async def test_a_run_with_mcp_servers_takes_its_warm_process_and_its_servers_with_it(
    responses: Responses, workspace: Path, tmp_path: Path
) -> None:
    """0.61 cannot end an ACP session (its agent has no `session/close`), and a session's MCP servers stay connected,
    a stdio server's process running, for as long as its process lives: kept warm in a pool (200 runs, 5 idle
    minutes), every run's servers outlived it (seen: the conformance's stdio echo server still running under the
    warm process, an HTTP server's connection held open). A run given MCP servers retires its process: it ends with
    the run, and the servers with it; a run without leaves its process warm."""
    script = tmp_path / "pid_server.py"
    script.write_text(PID_MCP_SERVER)
    pid_file = tmp_path / "mcp.pid"
    server = StdioMcpServer(name="srv", command=sys.executable, args=(str(script), str(pid_file)))
    fake = responses(stream_line(text("answer")))
    pool = AcpPool(size=1)
    holder = Holder()

    async def one(**fields: object) -> None:
        options = {"fake_responses": str(fake), "fake_responses_strict": False, "pool": pool}
        params = ExecuteParams(prompt="go", backend="gemini-cli", cwd=workspace, backend_options=options, **fields)
        async with EventStream(params, strict=True) as stream:
            events = [e async for e in stream]
        assert result_of(events).status == "success", kinds(events)

    try:
        await one()
        assert len(pool.pids()) == 1, "a run without MCP servers leaves its process warm"
        await one(mcp_servers=(server,))
        assert pool.spawned == 1, "the run with servers took the warm process"
        assert not pool.pids(), "the process that connected the run's MCP servers was left warm"
        mcp = holder.hold_if(int(pid_file.read_text()), lambda pid: str(script).encode() in cmdline(pid))
        if mcp is not None:  # ending: its stdin closed with the CLI's end
            wait_exited([mcp], "the run's stdio MCP server")
    finally:
        holder.release()
        await pool.aclose()


@ASYNCIO_ONLY
async def test_text_delta_only_for_real_text_after_mode_switch(warm_gemini: Run, responses: Responses) -> None:
    events = await warm_gemini(responses(stream_line(text("fine"))), approval_mode="auto_edit")
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["fine"]


def test_runs_in_successive_event_loops_take_the_default_pools_warm_process(
    responses: Responses, workspace: Path
) -> None:
    """`execute_sync` runs each call in a new event loop (a blocking portal's), and a script may `anyio.run` each
    task: once a run's loop has ended, the next loop's run takes over the `gemini --acp` process it left warm in
    the default (process-wide) pool, on either backend, instead of starting another and leaving that one idle."""
    fake = responses(stream_line(text("answer")))  # read from its start by each session, warm process or not
    pool = default_pool()
    spawned, before = pool.spawned, set(pool.pids())

    def params(prompt: str) -> ExecuteParams:
        options = {"fake_responses": str(fake), "fake_responses_strict": False}
        return ExecuteParams(prompt=prompt, backend="gemini-cli", cwd=workspace, backend_options=options)

    async def in_trio(prompt: str) -> list[UnifiedEvent]:
        async with EventStream(params(prompt), strict=True) as stream:
            return [e async for e in stream]

    runs: list[list[UnifiedEvent]] = []
    try:
        runs.append(list(execute_sync(params("first"))))
        mine = set(pool.pids()) - before
        assert len(mine) == 1, (pool.pids(), before)
        runs.append(list(execute_sync(params("second"))))
        runs.append(anyio.run(in_trio, "third", backend="trio"))
        assert pool.spawned - spawned == 1, "a run started its own gemini --acp"
        assert set(pool.pids()) - before == mine
        assert [result_of(events).status for events in runs] == ["success"] * 3
        assert [result_of(events).final_text for events in runs] == ["answer"] * 3
        assert not [e for events in runs for e in events if isinstance(e, ErrorEvent)]
        ids = [next(e for e in events if isinstance(e, SessionStarted)).session_id for events in runs]
        assert len(set(ids)) == 3, "each run has a session of its own"
        # ... and a conversation of its own: the warm process carried nothing of the runs before it over
        for session_id, prompt in zip(ids, ("first", "second", "third"), strict=True):
            assert session_id is not None
            conversation = anyio.run(partial(export, session_id, backend="gemini-cli", cwd=str(workspace)))
            texts = [(t.role, p.text) for t in conversation.turns for p in t.parts if isinstance(p, TextPart)]
            assert texts == [("user", prompt), ("model", "answer")], (session_id, conversation.turns)
    finally:
        pool.close_now()
