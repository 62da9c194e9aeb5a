"""The shared agent loop's behaviour, run as the same scenario on both API backends against FakeGemini."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import httpx
import pytest

import unified
from tests.hang_guard import HANG_GUARD_S
from unified._internal import genai_client, http
from unified._sessions.config import default_store
from unified._sessions.stores import MemorySessionStore
from unified.events import ErrorEvent, Result, SessionStarted, TextDelta, ToolResult, UnifiedEvent, WarningEvent
from unified.sessions import StoredSession
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import Fault, FunctionCall, InteractionTurn, ModelTurn, TextStep, Usage
from unified.types import ExecuteParams, ThinkingConfig

pytestmark = pytest.mark.anyio

MODEL = "gemini-3-flash-preview"
ClientT = TypeVar("ClientT", httpx.AsyncClient, httpx.Client)


def params(backend: str, fake: FakeGemini, workspace: Path, prompt: str = "hi", **fields: Any) -> ExecuteParams:
    options = {"api_key": "test-key", "base_url": fake.base_url, "retry_delay_scale": 0.001}
    options.update(fields.pop("backend_options", {}))
    fields.setdefault("model", MODEL)
    return ExecuteParams(prompt=prompt, backend=backend, cwd=workspace, backend_options=options, **fields)


async def collect(p: ExecuteParams) -> list[UnifiedEvent]:
    async with unified.execute(p) as stream:
        return [event async for event in stream]


def result(events: list[UnifiedEvent]) -> Result:
    last = events[-1]
    assert isinstance(last, Result)
    return last


def warnings(events: list[UnifiedEvent], code: str) -> list[WarningEvent]:
    return [e for e in events if isinstance(e, WarningEvent) and e.code == code]


def request_bodies(fake: FakeGemini, backend: str) -> list[Any]:
    method = "generateContentStream" if backend == "generate-content" else "interactions.create"
    return [r.body for r in fake.requests_for(method)]


def read_notes(call_id: str = "c1") -> ModelTurn:
    return ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"}, id=call_id)])


async def load_stored(backend: str, ref: str) -> StoredSession:
    """The session `ref` names, read back from the default store the runs wrote to."""
    store = default_store()
    return await store.load(backend, (await store.resolve(backend, ref)).session_id)


async def test_max_turns_counts_requests_and_does_not_run_the_last_calls(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(ModelTurn(function_calls=[FunctionCall(name="write_file", args={"file_path": "x.txt", "content": "x"})]))
    events = await collect(params(backend, fake, workspace, max_turns=1, approval_mode="yolo"))
    assert (result(events).status, result(events).turns) == ("max_turns", 1)
    (answer,) = [e for e in events if isinstance(e, ToolResult)]
    assert answer.is_error
    assert not (workspace / "x.txt").exists()
    assert len(request_bodies(fake, backend)) == 1


async def test_rate_limit_waits_as_the_server_asks(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(ModelTurn(text="after waiting"))
    fake.inject(Fault(kind="rate_limit", retry_delay="2s"), at_request=0)
    events = await collect(params(backend, fake, workspace))
    (warning,) = warnings(events, "retrying")
    assert "retry 1/3 in 0.002s (the server asked 2s; retry_delay_scale=0.001)" in warning.message
    assert result(events).final_text == "after waiting"


async def test_server_error_is_retried_with_backoff(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(ModelTurn(text="recovered"))
    fake.inject(Fault(kind="server_error"), at_request=0)
    fake.inject(Fault(kind="unavailable"), at_request=1)
    events = await collect(params(backend, fake, workspace))
    retries = warnings(events, "retrying")
    assert [w.message.split("; ")[-1][:9] for w in retries] == ["retry 1/3", "retry 2/3"]
    assert not any("as the server asked" in w.message for w in retries)
    assert result(events).final_text == "recovered"


async def test_retries_that_run_out_say_what_was_tried(backend: str, fake: FakeGemini, workspace: Path) -> None:
    for index in range(3):
        fake.inject(Fault(kind="server_error"), at_request=index)
    events = await collect(params(backend, fake, workspace, backend_options={"max_retries": 2}))
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert "gave up after 3 attempts" in error.message
    assert "max_retries=2" in error.message
    assert result(events).status == "error"


async def test_runaway_loop_is_stopped(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(*[read_notes(f"c{n}") for n in range(3)])
    events = await collect(params(backend, fake, workspace, backend_options={"loop_threshold": 3}))
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "runaway_loop"
    assert result(events).turns == 3
    assert [e.is_error for e in events if isinstance(e, ToolResult)] == [False, False, True]


async def test_an_empty_answer_is_asked_again(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(ModelTurn(text="never seen", fault=Fault(kind="empty_stream")), ModelTurn(text="second try"))
    events = await collect(params(backend, fake, workspace))
    (warning,) = warnings(events, "malformed_turn")
    assert "empty" in warning.message
    assert (result(events).status, result(events).final_text) == ("success", "second try")


async def test_empty_answers_that_keep_coming_are_a_clear_error(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(*[ModelTurn(text="x", fault=Fault(kind="empty_stream")) for _ in range(2)])
    events = await collect(params(backend, fake, workspace, backend_options={"max_retries": 1}))
    assert result(events).status == "error"
    assert result(events).error is not None
    assert "malformed 2 times" in str(result(events).error)
    assert result(events).final_text == ""


async def test_the_tool_round_reaches_the_model_after_a_failed_request_and_a_resume(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(read_notes())
    fake.inject(Fault(kind="bad_request", message="refused"), at_request=1)
    first = await collect(params(backend, fake, workspace, "read the notes"))
    assert result(first).status == "error"
    short_id = result(first).short_id
    assert short_id
    fake.add(ModelTurn(text="the notes say alpha"))
    second = await collect(params(backend, fake, workspace, "go on", resume=short_id))
    assert result(second).final_text == "the notes say alpha"
    sent = json.dumps(request_bodies(fake, backend)[-1])
    assert "alpha" in sent  # the tool's output, kept on disk before the failed request went out
    assert '"c1"' in sent


async def test_stored_sessions_carry_the_usage_the_result_reported(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(read_notes(), ModelTurn(text="done", usage=Usage(input_tokens=7, output_tokens=3)))
    events = await collect(params(backend, fake, workspace))
    reported = result(events)
    stored = await load_stored(backend, str(reported.short_id))
    assert stored.turns == reported.turns == 2
    assert stored.usage.input_tokens == reported.usage.input_tokens
    assert stored.usage.output_tokens == reported.usage.output_tokens > 0


async def test_a_stalled_stream_times_out_per_attempt(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(ModelTurn(text="one two three", text_chunks=3, fault=Fault(kind="stall", after=1)))
    events = await collect(params(backend, fake, workspace, backend_options={"timeout_s": 0.5}))
    if backend == "generate-content":  # part of the answer was shown: the turn cannot be asked again
        error = next(e for e in events if isinstance(e, ErrorEvent))
        assert result(events).status == "error"
        assert "sent nothing for timeout_s=0.5s" in error.message
    else:  # the interaction goes on server-side: reconnect from the last event seen
        (warning,) = warnings(events, "stream_resumed")
        assert "sent nothing for timeout_s=0.5s" in warning.message
        assert result(events).final_text == "one two three"


async def test_a_server_that_never_answers_exhausts_the_request_budget(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    for index in range(10):
        fake.inject(Fault(kind="no_headers"), at_request=index)
    options = {"timeout_s": 0.3, "request_deadline_s": 0.5, "max_retries": 9, "retry_delay_scale": 0.0}
    events = await collect(params(backend, fake, workspace, backend_options=options))
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert "request_deadline_s=0.5" in error.message
    assert "timeout_s=0.3 per attempt" in error.message
    assert len(fake.requests) < 10  # the budget, not max_retries, ended it


async def test_the_guard_idle_timeout_catches_what_the_http_timeout_does_not(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(ModelTurn(text="one two", text_chunks=2, fault=Fault(kind="stall", after=1)))
    events = await collect(params(backend, fake, workspace, idle_timeout_s=0.5))
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "idle_timeout"
    assert "0.5s" in error.message


_CHILD = """
import anyio, sys, unified
from unified.types import ExecuteParams, ThinkingConfig

async def main() -> None:
    params = ExecuteParams(prompt="remember the plan", backend=sys.argv[1], cwd=sys.argv[2], model=sys.argv[4],
                           backend_options={"api_key": "test-key", "base_url": sys.argv[3]})
    async with unified.execute(params) as stream:
        async for event in stream:
            if event.type == "session_started":
                print(event.short_id, flush=True)

anyio.run(main)
"""


async def test_a_session_killed_right_after_it_was_announced_can_be_resumed(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(ModelTurn(text="never finished", fault=Fault(kind="stall", after=0)), ModelTurn(text="resumed fine"))
    short_id = await anyio.to_thread.run_sync(_announced_then_killed, backend, fake, workspace)
    assert short_id
    stored = await load_stored(backend, short_id)
    assert stored.first_prompt == "remember the plan"
    events = await collect(params(backend, fake, workspace, "and now?", resume=short_id))
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert (started.resumed, started.short_id) == (True, short_id)
    assert result(events).final_text == "resumed fine"
    sent = json.dumps(fake.requests[-1].body)
    assert "remember the plan" in sent  # the first prompt reached the model, once, before the new one
    assert sent.count("remember the plan") == 1
    assert sent.index("remember the plan") < sent.index("and now?")


def _announced_then_killed(backend: str, fake: FakeGemini, workspace: Path) -> str:
    """The short id a child run printed from session_started; the child is SIGKILLed while its request hangs."""
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, backend, str(workspace), fake.base_url, MODEL],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(Path(unified.__file__).parent.parent)},
        text=True,
    )
    assert child.stdout is not None
    short_id = child.stdout.readline().strip()
    hang_guard = time.monotonic() + 60
    while not fake.requests and time.monotonic() < hang_guard:  # its first request, held by the stall
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    return short_id


async def test_runs_share_their_loop_s_http_clients_and_every_one_is_closed(
    backend: str, fake: FakeGemini, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second run (and one that fails) finds the first one's clients warm; the loop's end closes
    them (`close_idle_clients` here, as the loop's runner does: tests/foundation/test_genai_client.py)."""
    opened: list[httpx.AsyncClient | httpx.Client] = []

    def recording(make: Callable[[float], ClientT]) -> Callable[[float], ClientT]:
        def make_and_record(timeout_s: float) -> ClientT:
            client = make(timeout_s)
            opened.append(client)
            return client

        return make_and_record

    monkeypatch.setattr(genai_client, "async_client", recording(http.async_client))
    monkeypatch.setattr(genai_client, "sync_client", recording(http.sync_client))
    fake.add(ModelTurn(text="ok"))
    fake.inject(Fault(kind="bad_request"), at_request=1)
    await genai_client.close_idle_clients()  # what earlier tests of this loop left
    opened.clear()
    await collect(params(backend, fake, workspace))
    await collect(params(backend, fake, workspace))  # a run that fails leaves them open for the next too
    assert len(opened) == 2
    assert not any(client.is_closed for client in opened)
    await genai_client.close_idle_clients()
    assert all(client.is_closed for client in opened)


async def test_an_answer_that_never_says_it_ended_is_not_a_success(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(ModelTurn(text="half an answer", fault=Fault(kind="no_finish")))
    events = await collect(params(backend, fake, workspace))
    if backend == "generate-content":  # shown, so not asked again: an error that says so
        error = next(e for e in events if isinstance(e, ErrorEvent))
        assert error.code == "stream_incomplete"
        assert "without a finishReason" in error.message
        assert result(events).status == "error"
    else:  # the interaction's own record says how it ended: reconnect and read it
        (warning,) = warnings(events, "stream_resumed")
        assert "ended before the interaction did" in warning.message
        assert (result(events).status, result(events).final_text) == ("success", "half an answer")


async def test_budget_zero_is_sent_as_the_same_level_on_both_backends(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(ModelTurn(text="ok"))
    events = await collect(params(backend, fake, workspace, thinking=ThinkingConfig(budget=0)))
    assert result(events).status == "success"
    (body,) = request_bodies(fake, backend)
    if backend == "generate-content":
        level = body["generationConfig"]["thinkingConfig"]["thinking_level"].lower()
    else:
        level = body["generation_config"]["thinking_level"]
    assert level == "minimal"
    (note,) = warnings(events, "unsupported_option")
    assert "budget 0 sent as minimal" in note.message


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"typo_key": 1}, "backend_options.typo_key: unknown option"),
        ({"max_retries": "3"}, "backend_options.max_retries: Input should be a valid integer"),
        ({"api_version": "v9"}, "backend_options.api_version: Input should be 'v1', 'v1beta', 'v1alpha' or 'v1beta1'"),
        ({"timeout_s": 0}, "backend_options.timeout_s: Input should be greater than or equal to 0.001"),
    ],
)
async def test_a_bad_option_is_the_same_configuration_error_before_anything_starts(
    backend: str, fake: FakeGemini, workspace: Path, options: dict[str, object], problem: str
) -> None:
    events = await collect(params(backend, fake, workspace, backend_options=options))
    assert not any(isinstance(e, SessionStarted) for e in events)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "configuration_error"
    assert error.message.startswith(f"invalid backend_options for {backend}: {problem}")
    assert "test-key" not in error.message
    assert fake.requests == []


async def test_a_botched_turn_is_asked_again_and_kept_out_of_the_history(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    botched: ModelTurn | InteractionTurn
    if backend == "generate-content":
        botched = ModelTurn(text="oops", finish_reason="MALFORMED_FUNCTION_CALL")
    else:
        botched = InteractionTurn(steps=[TextStep(text="oops")], status="requires_action")
    fake.add(botched, ModelTurn(text="fixed"))
    events = await collect(params(backend, fake, workspace))
    (warning,) = warnings(events, "malformed_turn")
    assert "asking the model again" in warning.message
    assert (result(events).status, result(events).turns) == ("success", 2)
    retried = json.dumps(request_bodies(fake, backend)[-1])
    assert "oops" not in retried


async def test_typed_options_run_as_their_dict_does(backend: str, fake: FakeGemini, workspace: Path) -> None:
    fake.add(ModelTurn(text="typed"))
    typed = unified.GenerateContentOptions if backend == "generate-content" else unified.InteractionsOptions
    options = typed(api_key="test-key", base_url=fake.base_url, retry_delay_scale=0.001)
    events = await collect(
        ExecuteParams(prompt="hi", backend=backend, cwd=workspace, model=MODEL, backend_options=options)
    )
    assert result(events).final_text == "typed"
    assert "test-key" not in repr(options)


async def test_options_typed_for_another_backend_are_refused_before_any_request(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    other = unified.InteractionsOptions if backend == "generate-content" else unified.GenerateContentOptions
    options = other(api_key="test-key", base_url=fake.base_url)
    events = await collect(
        ExecuteParams(prompt="hi", backend=backend, cwd=workspace, model=MODEL, backend_options=options)
    )
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["configuration_error"]
    assert other.__name__ in errors[0].message
    assert fake.requests == []


class _SaveWatcher(MemorySessionStore):
    """A real in-memory store that holds the save after the first tool round until the next turn's answer shows.

    If the loop waited for that save before sending the next request, the answer would never come
    (the hang guard turns that into a failure): a run that ends proves the save ran while the
    request was in flight.
    """

    def __init__(self) -> None:
        super().__init__()
        self.saved_turns: list[int] = []
        self.next_answer_shown = anyio.Event()

    async def save(self, session: StoredSession) -> None:
        self.saved_turns.append(session.turns)
        if len(self.saved_turns) == 3:  # initial, after turn 1 (its calls run meanwhile), after the tool round
            with anyio.fail_after(HANG_GUARD_S):
                await self.next_answer_shown.wait()
        await super().save(session)


async def test_the_tool_round_is_saved_while_the_next_request_is_in_flight_and_durable_before_result(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    fake.add(read_notes(), ModelTurn(text="the notes say alpha"))
    store = _SaveWatcher()
    stored_at_result: StoredSession | None = None
    async with unified.execute(params(backend, fake, workspace, "read the notes", session_store=store)) as stream:
        async for event in stream:
            if isinstance(event, TextDelta):
                store.next_answer_shown.set()
            if isinstance(event, Result):
                found = await store.resolve(backend, str(event.short_id))
                stored_at_result = await store.load(backend, found.session_id)
    assert stored_at_result is not None
    assert stored_at_result.turns == 2  # the last turn was on the store before `result` was emitted
    if backend == "generate-content":  # the whole history; the interactions backend keeps the server's ids
        assert "the notes say alpha" in json.dumps(stored_at_result.state)
    else:
        assert len(stored_at_result.state["interactions"]) == 2
    assert store.saved_turns == [0, 1, 1, 2]  # the last turn is saved once, on the way out


def test_a_run_without_mcp_servers_never_imports_the_mcp_sdk(tmp_path: Path) -> None:
    script = """
import sys, anyio, unified
from unified.testing import FakeGemini, ModelTurn
async def main(base_url):
    p = unified.ExecuteParams(prompt="hi", backend="generate-content", model="gemini-2.5-flash", cwd=sys.argv[1],
        backend_options={"api_key": "k", "base_url": base_url})
    async with unified.execute(p) as stream:
        print([e.type async for e in stream][-1])
with FakeGemini() as fake:
    fake.add(ModelTurn(text="ok"))
    anyio.run(main, fake.base_url)
print(sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp.")))
"""
    env = {**os.environ, "PYTHONPATH": str(Path(unified.__file__).parent.parent)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, env=env, timeout=HANG_GUARD_S
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["result", "[]"]


async def test_the_announced_session_is_on_disk_when_session_started_arrives(
    backend: str, fake: FakeGemini, workspace: Path
) -> None:
    """The first save skips its fsync (docs/sessions.md), not its write: another process can resolve
    and read the announced id at once, while the run still holds it; the run's last save stands.

    The read at `session_started` may come after the run's later saves (the run goes on while the
    consumer reads: a fast fake answers within that time), so it may hold the first save or a later
    one; either way the last is no older (a strict `>` failed when both reads saw the last save)."""
    fake.add(ModelTurn(text="one two", text_chunks=2))
    seen: list[StoredSession] = []
    events: list[UnifiedEvent] = []
    async with unified.execute(params(backend, fake, workspace, prompt="remember me")) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, SessionStarted):
                seen.append(await load_stored(backend, str(event.short_id)))
    assert seen[0].first_prompt == "remember me"
    assert seen[0].session_id == events[0].session_id
    final = await load_stored(backend, str(result(events).short_id))
    assert final.turns == 1
    assert final.updated_at is not None
    assert seen[0].updated_at is not None
    assert final.updated_at >= seen[0].updated_at
    assert seen[0].turns in (0, 1)


async def test_a_tool_turn_s_calls_reach_the_consumer_before_the_tools_start(
    backend: str, fake: FakeGemini, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The calls are announced when the turn's stream ends; the consumer has them before the loop
    starts the tool runtime (and saves the turn), not after."""
    from unified import _agent_loop as agent_loop
    from unified.events import ToolUse
    from unified.tools import ToolRuntime

    seen: list[str] = []
    seen_at_start: list[list[str]] = []
    start = agent_loop.AgentLoop._runtime

    async def watched(self: agent_loop.AgentLoop) -> ToolRuntime:
        seen_at_start.append(list(seen))
        return await start(self)

    monkeypatch.setattr(agent_loop.AgentLoop, "_runtime", watched)
    fake.add(read_notes(), ModelTurn(text="the notes say alpha"))
    async with unified.execute(params(backend, fake, workspace, "read the notes")) as stream:
        async for event in stream:
            if isinstance(event, ToolUse):
                seen.append(event.name)
            if isinstance(event, Result):
                assert event.status == "success"
    assert seen_at_start == [["read_file"]]


async def test_a_turn_s_first_output_reaches_the_consumer_before_the_chunks_behind_it_are_translated(
    backend: str, fake: FakeGemini, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks that arrive together are translated in one go; the first output of the turn is not
    held back until they all are (up to the guard's 64-event buffer)."""
    from unified._internal.stream import StreamGuard

    accepted: list[str] = []
    accepted_when_shown: list[int] = []
    accept = StreamGuard.accept

    async def counted(self: StreamGuard, event: UnifiedEvent) -> None:
        accepted.append(event.type)
        await accept(self, event)

    monkeypatch.setattr(StreamGuard, "accept", counted)
    fake.add(ModelTurn(text="word " * 40, text_chunks=40))
    async with unified.execute(params(backend, fake, workspace, "talk")) as stream:
        async for event in stream:
            if isinstance(event, TextDelta) and not accepted_when_shown:
                accepted_when_shown.append(accepted.count("text_delta"))
            if isinstance(event, Result):
                assert event.status == "success"
    assert accepted_when_shown == [1]
