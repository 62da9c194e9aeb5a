"""The model asks the person: unified's ask_user served to the real gemini 0.61 as an MCP server (`_ask_server.py`).

Offline, against FakeGemini: the scripted model calls the tool by the name the CLI gives it
(`mcp_<our server>_ask_the_user`, a glob in the script: the server's name is random per run), the
caller's `on_user_input` gets the question, and the model's next request carries the answer.
"""

from __future__ import annotations

import gc
import json
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.harness.warm_cli import WarmCli
from unified import ExecuteParams, UserInputRequest, UserInputResponse
from unified._adapters.gemini_cli import _run as run_module
from unified._adapters.gemini_cli._ask_server import AskUserServer, serve_ask_user
from unified._execute import EventStream
from unified.events import PermissionDecision, Result, ToolResult, ToolUse, UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.testing._wire import declared_functions
from unified.testing._wiring import backend_options_for

pytestmark = pytest.mark.anyio

ASK = "mcp_*_ask_the_user"
QUESTION = {"question": "Which colour?", "header": "Colour", "options": [{"label": "red"}, {"label": "blue"}]}
TURNS = [
    ModelTurn(function_calls=[FunctionCall(name=ASK, args={"questions": [QUESTION]})]),
    ModelTurn(text="Red it is."),
]


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> list[AskUserServer]:
    """Every ask_user server a run starts, kept to check its port once the run is over."""
    started: list[AskUserServer] = []

    @asynccontextmanager
    async def recording(*args: Any) -> AsyncIterator[AskUserServer]:
        async with serve_ask_user(*args) as server:
            started.append(server)
            yield server

    monkeypatch.setattr(run_module, "serve_ask_user", recording)
    return started


async def run(
    options: dict[str, object],
    workspace: Path,
    on_stream: Callable[[EventStream, UnifiedEvent], Awaitable[None]] | None = None,
    **fields: Any,
) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="pick a colour", backend="gemini-cli", cwd=workspace, backend_options=options, **fields
    )
    events: list[UnifiedEvent] = []
    async with EventStream(params, strict=True) as stream:
        async for event in stream:
            events.append(event)
            if on_stream is not None:
                await on_stream(stream, event)
    return events


async def port_refuses(port: int) -> bool:
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
    except OSError:
        return True
    await stream.aclose()
    return False


@pytest.mark.parametrize(
    ("anyio_backend", "mode"),
    # each mode once (each asks the CLI differently), and the default one on both loops: a gemini start
    # costs ~2 s of CPU, and the loop does not change what the CLI does in the other modes
    [("asyncio", "default"), ("trio", "default"), ("asyncio", "yolo"), ("trio", "plan")],
)
async def test_the_model_asks_and_its_next_request_carries_the_answer(
    workspace: Path, warm_cli: WarmCli, servers: list[AskUserServer], mode: str
) -> None:
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={"q1": "option-1"})

    fake = warm_cli.play(TURNS)
    events = await run(warm_cli.backend_options, workspace, on_user_input=answer, approval_mode=mode)
    requests = list(fake.requests)
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "Red it is."), result.error
    # the caller was asked, as the API backends ask: model-tool, the questions and options, the call it belongs to
    [request] = asked
    [use] = [e for e in events if isinstance(e, ToolUse)]
    assert (request.source, request.tool_name, request.tool_use_id) == ("model-tool", "ask_user", use.tool_use_id)
    assert [(q.prompt, q.header, [o.label for o in q.options]) for q in request.questions] == [
        ("Which colour?", "Colour", ["red", "blue"])
    ]
    # the stream shows it as generate-content shows its ask_user: tool_use, unified's allow, the question, the result
    assert (use.name, use.input) == ("ask_user", {"questions": [QUESTION]})
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert (decision.tool_name, decision.decision, decision.decided_by, decision.rule) == (
        "ask_user",
        "allow",
        "policy",
        "ask-user",
    )
    [done] = [e for e in events if isinstance(e, ToolResult)]
    assert done.tool_use_id == use.tool_use_id
    assert not done.is_error
    kinds = [e.type for e in events]
    assert kinds.index("tool_use") < kinds.index("permission_decision") < kinds.index("user_input_request")
    assert kinds.index("user_input_request") < kinds.index("tool_result") < kinds.index("text_delta")
    # the model saw exactly one tool of ours, named by the run's server, and got the answer back
    [server] = servers
    offered = [name for name in declared_functions(requests[0].body) if name.startswith("mcp_")]
    assert offered == [server.cli_tool_name]
    last = requests[-1].body["contents"][-1]["parts"][0]["functionResponse"]
    assert last["name"] == server.cli_tool_name
    assert json.loads(_untrusted(last["response"]["output"])) == {"answers": {"Which colour?": "red"}}
    # the token never shows on the stream nor in anything the CLI wrote, and the port is closed with the run
    assert all(server.token not in event.model_dump_json() for event in events)
    written = [p for p in warm_cli.home.rglob("*") if p.is_file()]  # the module's runs' too: no token of this run
    assert written  # the CLI's chat file at least
    assert not [p for p in written if server.token.encode() in p.read_bytes()]
    assert await port_refuses(server.port)


def _untrusted(text: str) -> str:
    """The CLI wraps an MCP tool's output in `<untrusted_context>` before the model reads it."""
    return text.removeprefix("<untrusted_context>").removesuffix("</untrusted_context>").strip()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_without_on_user_input_no_server_and_no_tool(
    workspace: Path, warm_cli: WarmCli, servers: list[AskUserServer]
) -> None:
    fake = warm_cli.play(TURNS)
    events = await run(warm_cli.backend_options, workspace)
    requests = list(fake.requests)
    assert not servers
    assert not [name for name in declared_functions(requests[0].body) if name.startswith("mcp_")]
    assert not [e for e in events if isinstance(e, UserInputRequest)]
    [done] = [e for e in events if isinstance(e, ToolResult)]
    assert done.is_error
    assert "not found" in str(done.output)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_run_cancelled_while_the_person_is_asked_ends_cleanly_and_closes_the_port(
    workspace: Path, tmp_path: Path, servers: list[AskUserServer]
) -> None:
    async def never(request: UserInputRequest) -> UserInputResponse:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def cancel_when_asked(stream: EventStream, event: UnifiedEvent) -> None:
        if isinstance(event, UserInputRequest):
            stream.cancel()

    with anyio.fail_after(60):
        async with FakeGemini(TURNS) as fake:  # a process of its own: the cancelled turn's next request is no one's
            options = {**backend_options_for(fake, "gemini-cli", cli_home=tmp_path / "cli-home"), "pool_size": 0}
            events = await run(options, workspace, cancel_when_asked, on_user_input=never)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "cancelled"
    assert not [e for e in events if e.type in ("error", "warning")]
    [server] = servers
    assert await port_refuses(server.port)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_runs_in_a_warm_process_and_a_resumed_session_each_get_their_own_server(
    workspace: Path, warm_cli: WarmCli, servers: list[AskUserServer]
) -> None:
    """A warm process keeps the sessions of runs whose servers are closed; the next run's session (new, or
    loaded by `resume`) gets its own server, name and token, and asks through it (the module's warm process)."""
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={"q1": "option-1"})

    fake = warm_cli.play(TURNS * 3)
    spawned = warm_cli.pool.spawned
    results: list[Result] = []
    for resume in (None, None, "first"):
        params = ExecuteParams(
            prompt="pick a colour",
            backend="gemini-cli",
            cwd=workspace,
            backend_options=warm_cli.backend_options,
            on_user_input=answer,
            resume=results[0].short_id if resume else None,
        )
        async with EventStream(params, strict=True) as stream:
            events = [event async for event in stream]
        result = events[-1]
        assert isinstance(result, Result)
        assert (result.status, result.final_text) == ("success", "Red it is."), result.error
        results.append(result)
    requests = list(fake.requests)
    assert warm_cli.pool.spawned - spawned <= 1, "the three runs shared one process"
    assert len(asked) == 3
    assert results[2].short_id == results[0].short_id
    assert len({s.name for s in servers}) == len({s.token for s in servers}) == 3
    # each run's model called that run's tool and read the answer from it
    answered = [r.body["contents"][-1]["parts"][0]["functionResponse"]["name"] for r in requests[1::2]]
    assert answered == [s.cli_tool_name for s in servers]
    for server in servers:
        assert await port_refuses(server.port)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_settings_allowlist_blocks_the_server_and_the_run_says_so(
    workspace: Path, tmp_path: Path, servers: list[AskUserServer]
) -> None:
    """0.61 blocks an MCP server its settings' `mcp.allowed` does not name, without a word over ACP: the
    model is not offered the tool, and unified's warning is the only sign."""
    asked: list[UserInputRequest] = []

    async def answer(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={"q1": "option-1"})

    async with FakeGemini(TURNS) as fake:
        options = backend_options_for(fake, "gemini-cli", cli_home=tmp_path / "cli-home")
        settings = tmp_path / "cli-home" / ".gemini" / "settings.json"
        settings.write_text(json.dumps({**json.loads(settings.read_text()), "mcp": {"allowed": ["notes"]}}))
        params = ExecuteParams(
            prompt="pick a colour",
            backend="gemini-cli",
            cwd=workspace,
            backend_options={**options, "pool_size": 0},
            on_user_input=answer,
        )
        async with EventStream(params, strict=True) as stream:
            events = [event async for event in stream]
        requests = list(fake.requests)
    assert not [name for name in declared_functions(requests[0].body) if name.startswith("mcp_")]
    assert not asked
    [warning] = [e for e in events if e.type == "warning"]
    assert "mcp.allowed" in getattr(warning, "message", "")
    assert len(servers) == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_question_comes_after_the_calls_before_it(
    workspace: Path, warm_cli: WarmCli, servers: list[AskUserServer]
) -> None:
    """A read and the question in one turn: the question follows both calls' `tool_use` (the read's is held
    for its chat-file record; the question comes from the server, not the ACP pump)."""

    async def answer(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse(answers={"q1": "option-1"})

    turns = [
        ModelTurn(
            function_calls=[
                FunctionCall(name="read_file", args={"file_path": "notes.txt"}),
                FunctionCall(name=ASK, args={"questions": [QUESTION]}),
            ]
        ),
        ModelTurn(text="Red it is."),
    ]
    warm_cli.play(turns)
    events = await run(warm_cli.backend_options, workspace, on_user_input=answer, approval_mode="default")
    kinds = [(e.type, getattr(e, "name", None)) for e in events]
    asked = kinds.index(("user_input_request", None))
    assert kinds.index(("tool_use", "read_file")) < asked
    assert kinds.index(("tool_use", "ask_user")) < asked
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_run_that_asked_is_freed_at_once_not_left_to_the_cycle_collector(
    workspace: Path, warm_cli: WarmCli
) -> None:
    """As tests/e2e/conformance's test for every backend, with the ask_user server: it holds the run's methods,
    and the run must not hold it back once it has ended."""

    async def answer(request: UserInputRequest) -> UserInputResponse:
        return UserInputResponse(answers={"q1": "option-1"})

    warm_cli.play(TURNS)
    params = ExecuteParams(
        prompt="pick a colour",
        backend="gemini-cli",
        cwd=workspace,
        backend_options=warm_cli.backend_options,
        on_user_input=answer,
    )
    gc.collect()
    gc.disable()
    try:
        stream = EventStream(params, strict=True)
        del params
        with anyio.fail_after(60):
            async with stream:
                events = [event async for event in stream]
        result = events[-1]
        assert isinstance(result, Result)
        assert result.status == "success"
        assert [e for e in events if isinstance(e, UserInputRequest)]
        guard = weakref.ref(stream._stream.guard)
        backend = weakref.ref(stream._stream.guard.backend)
        del stream
        assert guard() is None, "the run's guard waits for the cycle collector"
        assert backend() is None, "the backend waits for the cycle collector"
    finally:
        gc.enable()
