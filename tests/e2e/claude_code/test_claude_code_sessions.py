"""Sessions of the real `claude`: resume by short id from another directory and another process, the
session listing, export, a conversation continued from another provider, retry, the shared store."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from tests.e2e.claude_code.claude_code_helpers import claude_home, model_bodies, run_claude
from tests.hang_guard import HANG_GUARD_S
from unified import MemorySessionStore, sessions
from unified.conversations import (
    Conversation,
    ModelTurn,
    Origin,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.errors import SessionInUse, SessionNotFound
from unified.events import ErrorEvent, Result, SessionStarted, UnifiedEvent, UserInputRequest, UserInputResponse
from unified.testing import FakeAnthropic, Fault, FunctionCall
from unified.testing import ModelTurn as Turn

pytestmark = pytest.mark.anyio


def started(events: Sequence[object]) -> SessionStarted:
    return next(e for e in events if isinstance(e, SessionStarted))


def last_request(server: FakeAnthropic) -> str:
    return json.dumps(server.model_bodies()[-1])


async def test_resume_by_short_id_from_another_directory_and_another_process(workspace: Path, tmp_path: Path) -> None:
    """The session resumed by another process (`unified run --resume`), then by this one by a prefix of its short
    id, then by `auto` on credentials given in code only (none in the environment): `auto` finds the session's
    backend and continues it from another directory (it ended in no_backend, 'no usable credentials')."""
    other = tmp_path / "elsewhere"
    other.mkdir()
    turns = [Turn(text="Noted."), Turn(text="You said 42."), Turn(text="Still 42."), Turn(text="42 again.")]
    async with FakeAnthropic(turns) as server:
        first = await run_claude(server, workspace, "Remember the number 42.")
        short = started(first).short_id
        assert short is not None
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": server.base_url,
            "ANTHROPIC_API_KEY": "fake-anthropic-key",
            "ANTHROPIC_MODEL": "claude-fake-model",
        }
        command = [sys.executable, "-m", "unified", "run", "What number did I say?", "--resume", short, "--json"]
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                command, cwd=other, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S, check=False
            )
        )
        assert done.returncode == 0, done.stderr
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        assert lines[0]["type"] == "session_started"
        assert lines[0]["resumed"] is True
        assert lines[0]["backend"] == "claude-code"
        assert lines[0]["short_id"] == short
        assert lines[-1]["type"] == "result"
        assert lines[-1]["final_text"] == "You said 42."
        assert "Remember the number 42." in last_request(server), "the resumed request carries the history"
        third = await run_claude(server, other, "And now?", resume=short[:6])
        costs = [e.usage.cost_usd for e in (first[-1], third[-1]) if isinstance(e, Result)]
        assert costs[0] == costs[1], "a resumed run reports its own cost, not the session's running total"
        assert started(third).resumed
        assert started(third).session_id == started(first).session_id
        assert "What number did I say?" in last_request(server)
        again = await run_claude(server, other, "Once more?", backend="auto", resume=short)
        assert "Remember the number 42." in last_request(server)
    assert not [e for e in again if isinstance(e, ErrorEvent)]
    assert (started(again).backend, started(again).resumed, started(again).short_id) == ("claude-code", True, short)
    final = again[-1]
    assert isinstance(final, Result)
    assert (final.status, final.final_text) == ("success", "42 again.")
    where = str(workspace.resolve())  # noqa: ASYNC240 - a path computed once, no I/O worth a thread
    [info] = (await sessions.list_sessions(backend="claude-code")).sessions
    assert info.short_id == short
    assert info.first_prompt == "Remember the number 42."
    assert info.cwd == where
    listed_here = await sessions.list_sessions(backend="claude-code", cwd=where)
    assert [s.short_id for s in listed_here.sessions] == [short]
    conversation = await sessions.export(short)
    assert conversation.origin is not None
    assert conversation.origin.backend == "claude-code"
    texts = [p.text for t in conversation.turns for p in t.parts if isinstance(p, TextPart)]
    assert texts == [
        "Remember the number 42.",
        "Noted.",
        "What number did I say?",
        "You said 42.",
        "And now?",
        "Still 42.",
        "Once more?",
        "42 again.",
    ]
    assert all(t.provider == "anthropic" for t in conversation.turns if isinstance(t, ModelTurn))
    shown = await sessions.show(short)
    assert [m["type"] for m in shown["messages"]] == ["user", "assistant"] * 4
    await sessions.delete(short)
    assert not (await sessions.list_sessions(backend="claude-code")).sessions
    left = await anyio.to_thread.run_sync(lambda: list(claude_home().rglob(f"{info.session_id}.jsonl")))
    assert not left


async def test_a_conversation_from_another_provider_continues_as_message_blocks(workspace: Path) -> None:
    history = Conversation(
        origin=Origin(backend="generate-content", session_id="gc-session-1", short_id="gc-sessi"),
        turns=[
            UserTurn(parts=[TextPart(text="What is in notes.txt?")]),
            ModelTurn(
                provider="google",
                model="gemini-2.5-flash",
                parts=[
                    ThinkingPart(text="Read the file first.", signature="GOOGLE-SIGNATURE"),
                    ToolCallPart(
                        id="gc-1-1", name="read_file", arguments={"file_path": "notes.txt"}, signature="GSIG2"
                    ),
                ],
            ),
            UserTurn(parts=[ToolResultPart(call_id="gc-1-1", name="read_file", output="alpha\nbeta\n")]),
            ModelTurn(provider="google", parts=[TextPart(text="It says alpha and beta.")]),
        ],
    )
    async with FakeAnthropic([Turn(text="Continued on Claude.")]) as server:
        events = await run_claude(server, workspace, "And the first word?", history=history)
        body = server.model_bodies()[0]
    assert not started(events).resumed
    messages = [m for m in body["messages"] if m["role"] != "system"]
    text = json.dumps(messages)
    assert "GOOGLE-SIGNATURE" not in text, "Google's signatures never reach Anthropic"
    assert "GSIG2" not in text
    assert "[thinking] Read the file first." in text, "the thought's text is kept"
    assistant = [m for m in messages if m["role"] == "assistant"]
    blocks = [b for m in assistant for b in m["content"]]
    assert {"type": "tool_use", "id": "gc-1-1", "name": "read_file", "input": {"file_path": "notes.txt"}} in [
        {k: b.get(k) for k in ("type", "id", "name", "input")} for b in blocks if b["type"] == "tool_use"
    ]
    results = [b for m in messages if m["role"] == "user" for b in m["content"] if isinstance(b, dict)]
    assert any(b.get("type") == "tool_result" and b.get("tool_use_id") == "gc-1-1" for b in results)
    assert "And the first word?" in json.dumps(messages[-1])
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    short = started(events).short_id or ""
    exported = await sessions.export(short)
    assert [t.role for t in exported.turns] == ["user", "model"] * 3
    info = await sessions.resolve(short)
    assert info.extra["continued_from"]["session_id"] == "gc-session-1", "the record names where it came from"


async def test_retry_answers_the_last_user_turn_again(workspace: Path) -> None:
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="Say one.")]),
            ModelTurn(provider="anthropic", parts=[TextPart(text="One.")]),
            UserTurn(parts=[TextPart(text="Say two.")]),
        ]
    )
    async with FakeAnthropic([Turn(text="Two."), Turn(text="Two, again.")]) as server:
        events = await run_claude(server, workspace, "", history=history, retry=True)
        body = server.model_bodies()[0]
        users = [m for m in body["messages"] if m["role"] == "user"]
        assert "Say two." in json.dumps(users[-1])
        assert "Say one." in json.dumps(users[0])
        assert json.dumps(body).count("Say two.") == 1
        short = started(events).short_id
        again = await run_claude(server, workspace, "", resume=short, retry=True)
        second = server.model_bodies()[1]
        assert json.dumps(second).count("Say two.") == 1
        assert "Two." not in json.dumps(second["messages"])
    assert isinstance(again[-1], Result)
    assert again[-1].final_text == "Two, again."


async def test_retry_of_a_session_whose_first_prompt_failed_answers_it_in_the_same_session(workspace: Path) -> None:
    """Cut before its only prompt, the session held no conversation, and the CLI refused to resume it ("No
    conversation found"): the most common retry (the first request rate limited) failed. Now the session starts
    anew under its own id, and the prompt is answered once."""
    limited = Fault(kind="rate_limit", retry_delay="3600s")  # longer than unified waits: the run fails at once
    async with FakeAnthropic([Turn(text="Hello back.", fault=limited)]) as server:
        failed = await run_claude(server, workspace, "Hello there.")
        assert isinstance(failed[-1], Result)
        assert failed[-1].status == "error"
        short = started(failed).short_id or ""
        again = await run_claude(server, workspace, "", resume=short, retry=True)
        sent = last_request(server)
    result = again[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text, result.short_id) == ("success", "Hello back.", short), result.error
    assert sent.count("Hello there.") == 1
    exported = await sessions.export(short)
    assert [t.role for t in exported.turns] == ["user", "model"]


async def test_the_session_store_shares_a_session_with_a_worker_that_never_ran_it(
    workspace: Path, tmp_path: Path
) -> None:
    store = MemorySessionStore()
    async with FakeAnthropic([Turn(text="Noted."), Turn(text="You said 7.")]) as server:
        first = await run_claude(
            server, workspace, "Remember 7.", session_store=store, options={"home": tmp_path / "worker-a"}
        )
        short = started(first).short_id or ""
        assert [s.short_id for s in await store.list_sessions("claude-code")] == [short]
        second = await run_claude(
            server, workspace, "What did I say?", resume=short, session_store=store, options={"home": tmp_path / "b"}
        )
        assert "Remember 7." in last_request(server)
    assert started(second).resumed
    assert isinstance(second[-1], Result)
    assert second[-1].final_text == "You said 7."
    saved = await store.load("claude-code", started(first).session_id or "")
    assert "What did I say?" in json.dumps(saved.state)


async def test_another_providers_ids_and_a_far_result_reach_claude_in_the_order_and_shape_it_takes(
    workspace: Path,
) -> None:
    """Anthropic refuses a `tool_use.id` outside ^[a-zA-Z0-9_-]+$ and a `tool_result` that is not first in the
    message right after its `tool_use` (HTTP 400): ids of other providers get stand-ins, the same for the call
    and its result, and a result further on is moved right after its call; every message reaches the model."""
    long_id = "call/" + "x" * 300
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="Read both files.")]),
            ModelTurn(
                provider="openai",
                parts=[
                    ToolCallPart(id="fc/abc.def", name="read_file", arguments={"file_path": "a.txt"}),
                    ToolCallPart(id=long_id, name="read_file", arguments={"file_path": "b.txt"}),
                ],
            ),
            UserTurn(parts=[TextPart(text="(a note written while they ran)")]),
            ModelTurn(provider="openai", parts=[TextPart(text="Still reading.")]),
            UserTurn(
                parts=[
                    ToolResultPart(call_id=long_id, name="read_file", output="BBB"),
                    ToolResultPart(call_id="fc/abc.def", name="read_file", output="AAA"),
                ]
            ),
        ]
    )
    async with FakeAnthropic([Turn(text="Both read.")]) as server:
        events = await run_claude(server, workspace, "What did they say?", history=history)
        body = server.model_bodies()[0]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    messages = [m for m in body["messages"] if m["role"] != "system"]
    text = json.dumps(messages)
    for said in ("Read both files.", "(a note written while they ran)", "Still reading.", "What did they say?"):
        assert said in text
    index = next(
        n
        for n, m in enumerate(messages)
        if m["role"] == "assistant" and any(isinstance(b, dict) and b.get("type") == "tool_use" for b in m["content"])
    )
    uses = [b for b in messages[index]["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
    assert len(uses) == 2
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", b["id"]) for b in uses), [b["id"] for b in uses]
    after = messages[index + 1]
    assert after["role"] == "user"
    first = [b for b in after["content"][:2] if isinstance(b, dict)]
    outputs = {b.get("tool_use_id"): json.dumps(b.get("content")) for b in first if b.get("type") == "tool_result"}
    assert set(outputs) == {b["id"] for b in uses}, "each result first in the message right after its call"
    assert "AAA" in outputs[uses[0]["id"]]
    assert "BBB" in outputs[uses[1]["id"]]


async def test_a_new_session_is_refused_to_a_resume_while_its_first_run_goes_on(workspace: Path) -> None:
    """A new session is leased from before its `session_started`, as a resumed one: a resume of it by id while its first
    run waits in a permission prompt ends `session_in_use`, and `sessions.delete` of it raises `SessionInUse`. Before,
    only a resumed run took the lease: a second `claude --resume` appended its turns to the file the first run wrote."""
    call = FunctionCall(name="Bash", args={"command": "echo hi > hi.txt", "description": "d"}, id="toolu_hold")
    turns = [Turn(function_calls=[call]), Turn(text="Denied, fine.")]
    shorts: list[str] = []
    inside: list[list[UnifiedEvent]] = []
    refused: list[SessionInUse] = []

    async def note(event: UnifiedEvent, stream: object) -> None:
        if isinstance(event, SessionStarted) and event.short_id:
            shorts.append(event.short_id)

    async def meanwhile(request: UserInputRequest) -> UserInputResponse:
        # The CLI writes its session file in the background: a short id names nothing until it is there.
        with anyio.fail_after(HANG_GUARD_S):
            while True:
                try:
                    await sessions.resolve(shorts[0], backend="claude-code")
                    break
                except SessionNotFound:
                    await anyio.sleep(0.05)
        inside.append(await run_claude(server, workspace, "Me too.", resume=shorts[0]))
        with pytest.raises(SessionInUse) as caught:
            await sessions.delete(shorts[0], backend="claude-code")
        refused.append(caught.value)
        return UserInputResponse.deny()

    async with FakeAnthropic(turns) as server:
        first = await run_claude(server, workspace, "Run it.", answer=meanwhile, on_event=note)
        assert len(model_bodies(server)) == 2  # the refused run never reached the model
    assert [e.code for e in inside[0] if isinstance(e, ErrorEvent)] == ["session_in_use"]
    assert isinstance(inside[0][-1], Result)
    assert inside[0][-1].status == "error"
    assert refused
    assert isinstance(first[-1], Result)
    assert first[-1].status == "success"
    await sessions.delete(shorts[0], backend="claude-code")  # once the run is over, it may go


async def test_a_session_a_run_continues_is_refused_to_a_second_run_and_to_delete(workspace: Path) -> None:
    """The second run resuming a session still running (started from inside the first one's permission prompt,
    so the two overlap for sure) ends `session_in_use`, and `sessions.delete` of it raises `SessionInUse`,
    instead of a second `claude --resume` appending its own turns to the same session file."""
    call = FunctionCall(name="Bash", args={"command": "echo hi > hi.txt", "description": "d"}, id="toolu_hold")
    turns = [Turn(text="Noted."), Turn(function_calls=[call]), Turn(text="Denied, fine.")]
    async with FakeAnthropic(turns) as server:
        first = await run_claude(server, workspace, "Remember the number 42.")
        short = started(first).short_id
        assert short is not None
        inside: list[list[UnifiedEvent]] = []
        refused: list[SessionInUse] = []

        async def meanwhile(request: UserInputRequest) -> UserInputResponse:
            inside.append(await run_claude(server, workspace, "Me too.", resume=short))
            with pytest.raises(SessionInUse) as caught:
                await sessions.delete(short, backend="claude-code")
            refused.append(caught.value)
            return UserInputResponse.deny()

        second = await run_claude(server, workspace, "Run it.", resume=short, answer=meanwhile)
        assert [e.code for e in inside[0] if isinstance(e, ErrorEvent)] == ["session_in_use"]
        assert isinstance(inside[0][-1], Result)
        assert inside[0][-1].status == "error"
        assert refused
        assert isinstance(second[-1], Result)
        assert second[-1].status == "success"
        assert len(model_bodies(server)) == 3  # the refused run never reached the model
        await sessions.delete(short, backend="claude-code")  # once the run is over, it may go
