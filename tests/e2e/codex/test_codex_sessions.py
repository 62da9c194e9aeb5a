"""Codex sessions on the real binary: resume by short id from another directory and another process,
threads made close together (and, with ids made deterministically, a minute apart) told apart, a
reference that matches nothing, portable conversations in and out, retry, and the CLI's sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from tests.e2e.codex.conftest import codex_params, run_codex
from tests.e2e.conformance import mcp_echo_server
from tests.hang_guard import HANG_GUARD_S
from unified import sessions
from unified._adapters.codex._conversation import rollout_from_conversation
from unified._adapters.codex._launch import codex_home
from unified._adapters.codex._options import CodexOptions
from unified._adapters.codex._rollouts import Rollouts, codex_short_id
from unified._execute import EventStream
from unified.conversations import (
    Conversation,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.conversations import (
    ModelTurn as ConvModelTurn,
)
from unified.errors import AmbiguousSession, SessionInUse, SessionNotFound
from unified.events import (
    ErrorEvent,
    Result,
    SessionStarted,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
    WarningEvent,
)
from unified.testing import CODEX_MODEL, FAKE_OPENAI_KEY, FakeOpenAI, Fault, FunctionCall, ModelTurn, Thought
from unified.types import HttpMcpServer

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def started(events: list) -> SessionStarted:  # type: ignore[type-arg]
    return next(e for e in events if isinstance(e, SessionStarted))


def result(events: list) -> Result:  # type: ignore[type-arg]
    last = events[-1]
    assert isinstance(last, Result)
    return last


def home() -> Path:
    return codex_home(CodexOptions(), dict(os.environ))


def last_input(server: FakeOpenAI) -> str:
    return json.dumps(server.model_requests()[-1].body["input"])


def unified_cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unified", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )


async def test_resume_by_short_id_from_another_directory_and_process(tmp_path: Path) -> None:
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    project_a.mkdir()
    project_b.mkdir()
    async with FakeOpenAI([ModelTurn(text="Noted."), ModelTurn(text="You said 42.")]) as server:
        first = await run_codex(server, project_a, "Remember the number 42.")
        short = started(first).short_id
        assert short is not None
        # Another process, in another directory, reaching the server the way the OpenAI SDKs do.
        done = await anyio.to_thread.run_sync(
            lambda: unified_cli(
                "run",
                "What number did I say?",
                "--resume",
                short,
                "--json",
                "--model",
                CODEX_MODEL,
                cwd=project_b,
                env=server.env,
            )
        )
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert "Remember the number 42." in last_input(server)
        assert "What number did I say?" in last_input(server)
    begin = next(e for e in events if e["type"] == "session_started")
    assert (begin["backend"], begin["resumed"], begin["short_id"]) == ("codex", True, short)
    assert begin["cwd"] == str(project_a), "the thread keeps its own directory"
    assert events[-1]["type"] == "result"
    assert events[-1]["final_text"] == "You said 42."


async def test_auto_resumes_by_short_id_on_credentials_given_in_code(tmp_path: Path) -> None:
    """The key and base URL only in `backend_options` (none in the environment): `auto` finds the session's
    backend and continues it from another directory (it ended in no_backend, 'no usable credentials')."""
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    project_a.mkdir()
    project_b.mkdir()
    async with FakeOpenAI([ModelTurn(text="Noted."), ModelTurn(text="You said 42.")]) as server:
        short = started(await run_codex(server, project_a, "Remember the number 42.")).short_id
        params = codex_params(server, project_b, "What number did I say?", resume=short)
        again: list[UnifiedEvent] = []
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params.model_copy(update={"backend": "auto"}), strict=True) as stream:
                again = [event async for event in stream]
        assert "Remember the number 42." in last_input(server)
    assert not [e for e in again if isinstance(e, ErrorEvent)]
    assert (started(again).backend, started(again).resumed, started(again).short_id) == ("codex", True, short)
    assert (result(again).status, result(again).final_text) == ("success", "You said 42.")


async def test_threads_made_moments_apart_resolve_separately(workspace: Path) -> None:
    async with FakeOpenAI([ModelTurn(text="one"), ModelTurn(text="two"), ModelTurn(text="again one")]) as server:
        first = started(await run_codex(server, workspace, "first"))
        second = started(await run_codex(server, workspace, "second"))
        ids = [first.session_id, second.session_id]
        assert ids[0] is not None
        assert ids[1] is not None
        assert ids[0][:6] == ids[1][:6], "UUIDv7 ids made together share their leading time"
        assert first.short_id != second.short_id
        for info, ref in ((first, first.short_id), (second, second.short_id)):
            assert (await sessions.resolve(str(ref), backend="codex")).session_id == info.session_id
        again = await run_codex(server, workspace, "and now?", resume=first.short_id)
        assert started(again).session_id == first.session_id
        assert '"first"' in last_input(server)
        assert '"second"' not in last_input(server)


def _conversation(question: str, answer: str) -> Conversation:
    return Conversation(
        turns=[
            UserTurn(parts=[TextPart(text=question)]),
            ConvModelTurn(parts=[TextPart(text=answer)], provider="openai"),
        ]
    )


async def test_threads_a_minute_apart_share_their_first_characters_and_still_resolve(workspace: Path) -> None:
    """Ids made deterministically 61 s apart (UUIDv7's first eight hex digits change every 65.5 s) and
    two in the same second: their rollouts, written where Codex keeps them, resume by short id."""
    t0 = 1796139949320  # ms
    ids = {
        "01a23248-9d08-7a31-8b3c-0000000aaaa1": (t0, "Which colour? (one)", "Red."),
        "01a23248-9d0a-7c02-9d4e-0000000bbbb2": (t0 + 2, "Which colour? (two)", "Blue."),
        "01a23249-8fb7-7d10-a1f2-0000000cccc3": (t0 + 61_000, "Which colour? (three)", "Green."),
    }
    rollouts = Rollouts(home())
    for thread_id, (ms, question, answer) in ids.items():
        text = rollout_from_conversation(
            _conversation(question, answer), thread_id=thread_id, cwd=str(workspace), provider="unified", now_ms=ms
        )
        rollouts.write(thread_id, datetime.fromtimestamp(ms / 1000, UTC), text)
    assert {i[:8] for i in ids} == {"01a23248", "01a23249"}, "leading characters shared"
    listed = {s.short_id: s for s in (await sessions.list_sessions(backend="codex")).sessions}
    assert set(listed) == {codex_short_id(i) for i in ids}
    async with FakeOpenAI([ModelTurn(text=f"it was {a}") for _, _, a in ids.values()]) as server:
        for thread_id, (_, question, answer) in ids.items():
            events = await run_codex(server, workspace, "Say it again.", resume=codex_short_id(thread_id))
            assert started(events).session_id == thread_id
            assert result(events).status == "success"
            assert question in last_input(server)
            assert answer in last_input(server)
    with pytest.raises(AmbiguousSession):
        await sessions.resolve("01a23248", backend="codex")


async def test_a_reference_that_matches_nothing_is_not_a_new_thread(workspace: Path) -> None:
    async with FakeOpenAI([ModelTurn(text="never")]) as server:
        events = await run_codex(server, workspace, "hello", resume="nothing-like-it")
        assert not server.model_requests()
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "session_not_found"
    assert result(events).status == "error"
    assert not list(Rollouts(home()).files()), "no thread was made"


async def test_export_keeps_reasoning_encrypted_content_as_an_openai_signature(workspace: Path) -> None:
    turns = [
        ModelTurn(
            thoughts=[Thought(text="Read it first.", signature="enc-1")],
            function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"}, id="call_r")],
        ),
        ModelTurn(text="It says alpha."),
    ]
    async with FakeOpenAI(turns) as server:
        short = started(await run_codex(server, workspace, "What do the notes say?")).short_id
    conversation = await sessions.export(str(short))
    assert conversation.origin is not None
    assert conversation.origin.backend == "codex"
    user, model, results, answer = conversation.turns
    assert isinstance(user, UserTurn)
    assert user.parts == [TextPart(text="What do the notes say?")]
    assert isinstance(model, ConvModelTurn)
    assert model.provider == "openai"
    assert model.model == CODEX_MODEL
    thinking, call = model.parts
    assert isinstance(thinking, ThinkingPart)
    assert thinking.text == "Read it first."
    assert thinking.signature == "ZW5jLTE="
    assert isinstance(call, ToolCallPart)
    assert (call.id, call.name, call.arguments) == (
        "call_r",
        "exec_command",
        {"cmd": "cat notes.txt"},
    )
    assert isinstance(results, UserTurn)
    assert isinstance(results.parts[0], ToolResultPart)
    assert "alpha" in results.parts[0].output
    assert isinstance(answer, ConvModelTurn)
    assert answer.parts == [TextPart(text="It says alpha.")]


async def test_history_from_another_provider_continues_without_its_signatures(workspace: Path) -> None:
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="Remember the number 42.")]),
            ConvModelTurn(
                parts=[ThinkingPart(text="A number to keep.", signature="google-signature"), TextPart(text="Noted.")],
                provider="google",
                model="gemini-2.5-flash",
            ),
        ]
    )
    async with FakeOpenAI([ModelTurn(text="You said 42.")]) as server:
        events = await run_codex(server, workspace, "What number?", history=history)
        sent = last_input(server)
    assert result(events).final_text == "You said 42."
    assert not started(events).resumed
    assert "Remember the number 42." in sent
    assert "A number to keep." in sent
    assert "Noted." in sent
    assert "google-signature" not in sent
    # The new thread is a codex session of its own, naming where it came from.
    shown = await sessions.show(str(started(events).short_id))
    assert "continued_from" not in shown["meta"] or shown["meta"]["continued_from"]


async def test_retry_answers_the_last_user_turn_again(workspace: Path) -> None:
    # An HTTP fault answers instead of the turn and leaves it queued: the retry gets the turn itself.
    turns = [ModelTurn(text="Second try works.", fault=Fault(kind="server_error"))]
    async with FakeOpenAI(turns) as server:
        failed = await run_codex(server, workspace, "Please summarise.")
        assert result(failed).status == "error"
        events = await run_codex(server, workspace, "", resume=started(failed).short_id, retry=True)
        sent = last_input(server)
    assert result(events).final_text == "Second try works."
    assert sent.count("Please summarise.") == 1, "the last user turn is answered again, not repeated"


async def test_the_cli_lists_shows_exports_and_deletes_codex_sessions(workspace: Path) -> None:
    async with FakeOpenAI([ModelTurn(text="Listed.")]) as server:
        short = started(await run_codex(server, workspace, "List me")).short_id
    assert short is not None
    env: dict[str, str] = {}
    listing = await anyio.to_thread.run_sync(
        lambda: unified_cli("sessions", "list", "--backend", "codex", "--json", cwd=workspace, env=env)
    )
    assert listing.returncode == 0, listing.stderr
    (entry,) = [json.loads(line) for line in listing.stdout.splitlines()]  # JSON Lines
    assert (entry["short_id"], entry["first_prompt"], entry["cwd"]) == (short, "List me", str(workspace))
    shown = await anyio.to_thread.run_sync(lambda: unified_cli("sessions", "show", short, cwd=workspace, env=env))
    assert shown.returncode == 0
    assert "Listed." in shown.stdout
    exported = await anyio.to_thread.run_sync(lambda: unified_cli("sessions", "export", short, cwd=workspace, env=env))
    assert exported.returncode == 0, exported.stderr
    assert Conversation.from_json(exported.stdout).turns[-1].parts == [TextPart(text="Listed.")]
    deleted = await anyio.to_thread.run_sync(
        lambda: unified_cli("sessions", "delete", short, "--yes", cwd=workspace, env=env)
    )
    assert deleted.returncode == 0, deleted.stderr
    assert not list(Rollouts(home()).files())


async def test_sessions_travel_through_a_shared_store(workspace: Path, tmp_path: Path) -> None:
    """A worker whose Codex home never saw the thread resumes it from the shared store."""
    from unified.sessions import FileSessionStore

    store = FileSessionStore(tmp_path / "store")
    async with FakeOpenAI([ModelTurn(text="Noted."), ModelTurn(text="You said 7.")]) as server:
        first = await run_codex(server, workspace, "Remember 7.", session_store=store)
        short = started(first).short_id
        other_home = tmp_path / "other-worker-home"
        events = await run_codex(
            server,
            workspace,
            "What number?",
            resume=short,
            session_store=store,
            options={"codex_home": other_home, "api_key": FAKE_OPENAI_KEY},
        )
        assert "Remember 7." in last_input(server)
    assert started(events).resumed
    assert result(events).final_text == "You said 7."
    assert list(Rollouts(other_home).files())


async def test_a_long_foreign_call_id_and_a_far_result_reach_openai_in_the_order_and_shape_it_takes(
    workspace: Path,
) -> None:
    """OpenAI's Responses API refuses a `call_id` over 64 characters (string_above_max_length): such an id gets a
    stand-in, the same for the call and its output, and an output further on is moved right after its call;
    every message reaches the model."""
    long_id = "toolu:" + "x" * 300
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="Read the file.")]),
            ConvModelTurn(
                provider="anthropic",
                parts=[ToolCallPart(id=long_id, name="shell", arguments={"command": ["cat", "a.txt"]})],
            ),
            UserTurn(parts=[TextPart(text="A note while it ran.")]),
            ConvModelTurn(provider="anthropic", parts=[TextPart(text="Still reading.")]),
            UserTurn(parts=[ToolResultPart(call_id=long_id, name="shell", output="alpha-77")]),
        ]
    )
    async with FakeOpenAI([ModelTurn(text="It said alpha-77.")]) as server:
        events = await run_codex(server, workspace, "What did it say?", history=history)
        items = server.model_requests()[-1].body["input"]
    assert result(events).final_text == "It said alpha-77."
    sent = json.dumps(items)
    for said in ("Read the file.", "A note while it ran.", "Still reading.", "alpha-77", "What did it say?"):
        assert said in sent
    kinds = [item.get("type") for item in items]
    call = items[kinds.index("function_call")]
    assert 0 < len(call["call_id"]) <= 64
    output = items[kinds.index("function_call") + 1]
    assert output["type"] == "function_call_output"
    assert output["call_id"] == call["call_id"]
    assert "alpha-77" in json.dumps(output)


async def test_a_new_thread_is_refused_to_a_resume_while_its_first_run_goes_on(workspace: Path) -> None:
    """A new thread is leased from before its `session_started`, as a resumed one: a resume of it by id while its first
    run waits in an approval prompt ends `session_in_use`, and `sessions.delete` of it raises `SessionInUse`. Before,
    only a resumed run took the lease: the resume went on, a second app-server writing the rollout the first one was
    writing."""
    command = FunctionCall(name="run_shell_command", args={"command": "touch held.txt"})
    turns = [ModelTurn(function_calls=[command]), ModelTurn(text="Denied, fine.")]
    shorts: list[str] = []
    inside: list[list[UnifiedEvent]] = []
    refused: list[SessionInUse] = []

    async def meanwhile(request: UserInputRequest) -> UserInputResponse:
        # Codex writes its rollout in the background: a short id names nothing until it is there.
        with anyio.fail_after(HANG_GUARD_S):
            while True:
                try:
                    await sessions.resolve(shorts[0], backend="codex")
                    break
                except SessionNotFound:
                    await anyio.sleep(0.05)
        inside.append(await run_codex(server, workspace, "Me too.", resume=shorts[0]))
        with pytest.raises(SessionInUse) as caught:
            await sessions.delete(shorts[0], backend="codex")
        refused.append(caught.value)
        return UserInputResponse.deny()

    async with FakeOpenAI(turns) as server:
        first: list[UnifiedEvent] = []
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(codex_params(server, workspace, "Run it.", on_user_input=meanwhile)) as stream:
                async for event in stream:
                    first.append(event)
                    if isinstance(event, SessionStarted) and event.short_id:
                        shorts.append(event.short_id)
        assert len(server.model_requests()) == 2  # the refused run never reached the model
    assert [e.code for e in inside[0] if isinstance(e, ErrorEvent)] == ["session_in_use"]
    assert result(inside[0]).status == "error"
    assert refused
    assert result(first).status == "success"
    await sessions.delete(shorts[0], backend="codex")  # once the run is over, it may go


async def test_a_thread_a_run_continues_is_refused_to_a_second_run_and_to_delete(workspace: Path) -> None:
    """The second run resuming a thread still running (started from inside the first one's approval prompt, so
    the two overlap for sure) ends `session_in_use`, and `sessions.delete` of it raises `SessionInUse`."""
    command = FunctionCall(name="run_shell_command", args={"command": "touch held.txt"})
    turns = [ModelTurn(text="Noted."), ModelTurn(function_calls=[command]), ModelTurn(text="Denied, fine.")]
    async with FakeOpenAI(turns) as server:
        first = await run_codex(server, workspace, "Remember the number 42.")
        short = started(first).short_id
        assert short is not None
        inside: list[list[UnifiedEvent]] = []
        refused: list[SessionInUse] = []

        async def meanwhile(request: UserInputRequest) -> UserInputResponse:
            inside.append(await run_codex(server, workspace, "Me too.", resume=short))
            with pytest.raises(SessionInUse) as caught:
                await sessions.delete(short, backend="codex")
            refused.append(caught.value)
            return UserInputResponse.deny()

        second = await run_codex(server, workspace, "Run it.", resume=short, on_user_input=meanwhile)
        assert [e.code for e in inside[0] if isinstance(e, ErrorEvent)] == ["session_in_use"]
        assert result(inside[0]).status == "error"
        assert refused
        assert result(second).status == "success"
        await sessions.delete(short, backend="codex")  # once the run is over, it may go


async def test_a_resumed_thread_gets_the_run_s_mcp_servers(workspace: Path) -> None:
    """The run's MCP servers are the thread's (`thread/start` and `thread/resume` take them in `config`): a
    resumed thread starts them too, with their headers, though the first run had none."""
    token = "Bearer mcp-resume-Qz7Lk2Vx9Wm4"
    async with FakeOpenAI([ModelTurn(text="one"), ModelTurn(text="two")]) as server:
        first = started(await run_codex(server, workspace, "first"))
        with mcp_echo_server.serving("http") as url:
            heard = len(mcp_echo_server.headers)
            web = HttpMcpServer(name="web", url=url, headers={"Authorization": token}, timeout_s=20)
            again = await run_codex(server, workspace, "again", resume=first.short_id, mcp_servers=(web,))
            got = mcp_echo_server.headers[heard:]
    assert started(again).resumed
    assert result(again).status == "success", result(again).error
    assert not [e for e in again if isinstance(e, WarningEvent)]  # it ran (behind the resources relay)
    assert any(h.get("authorization") == token for h in got), got
