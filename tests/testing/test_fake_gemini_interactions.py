"""The Interactions API as google-genai's own client parses it: streams, resume, polling, cancel, delete."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import _interactions as ierr
from google.genai import interactions as it
from pydantic import BaseModel

from unified._adapters.interactions._translate import translate
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import (
    CodeExecutionCall,
    CodeExecutionResult,
    Fault,
    FunctionCallStep,
    GoogleSearchCall,
    GoogleSearchResult,
    InteractionTurn,
    ModelTurn,
    TextStep,
    Thought,
    ThoughtStep,
    Usage,
)

ClientFactory = Callable[[FakeGemini], genai.Client]
MODEL = "gemini-3-flash-preview"

TOOL_TURN = InteractionTurn(
    steps=[
        ThoughtStep(summary=["Planning", "Checking the weather"], signature="sig-1"),
        TextStep(text="Let me look that up.", chunks=2, usage=Usage(output_tokens=5)),
        FunctionCallStep(name="get_weather", arguments={"city": "Paris"}, id="call-a"),
        FunctionCallStep(name="get_time", arguments={"tz": "CET"}, id="call-b", arguments_delta=True),
    ],
    usage=Usage(input_tokens=10, output_tokens=7, thinking_tokens=3),
)


def _resource(answer: object) -> it.Interaction:
    """The SDK's overloads leave a non-streaming answer typed as a union with the stream."""
    assert isinstance(answer, it.Interaction)
    return answer


def _kinds(events: list[Any]) -> list[str]:
    return [e.event_type for e in events]


def test_streamed_create_parses(client_for: ClientFactory) -> None:
    with FakeGemini([TOOL_TURN]) as server:
        events = list(client_for(server).interactions.create(model=MODEL, input="weather?", stream=True))
    assert not any(isinstance(e, it.UnknownInteractionSSEEvent) for e in events)
    assert _kinds(events)[:2] == ["interaction.created", "interaction.status_update"]
    assert _kinds(events)[-2:] == ["interaction.status_update", "interaction.completed"]
    assert len({e.event_id for e in events}) == len(events)
    starts = [e.step for e in events if isinstance(e, it.StepStart)]
    assert [s.type for s in starts] == ["thought", "model_output", "function_call", "function_call"]
    assert isinstance(starts[2], it.FunctionCallStep)
    assert starts[2].arguments == {"city": "Paris"}
    assert isinstance(starts[3], it.FunctionCallStep)
    assert starts[3].arguments == {}
    deltas = [e.delta for e in events if isinstance(e, it.StepDelta)]
    assert [d.type for d in deltas[:3]] == ["thought_summary", "thought_summary", "thought_signature"]
    assert "".join(d.text for d in deltas if isinstance(d, it.TextDelta)) == "Let me look that up."
    assert "".join(d.arguments or "" for d in deltas if isinstance(d, it.ArgumentsDelta)) == '{"tz": "CET"}'
    stops = [e for e in events if isinstance(e, it.StepStop)]
    assert stops[1].usage is not None
    assert stops[1].usage.total_output_tokens == 5
    done = events[-1]
    assert isinstance(done, it.InteractionCompletedEvent)
    assert done.interaction.status == "requires_action"
    assert done.interaction.usage is not None
    assert done.interaction.usage.total_tokens == 20


def test_non_streamed_create_and_chain(client_for: ClientFactory) -> None:
    with FakeGemini([TOOL_TURN, ModelTurn(text="Sunny.")]) as server:
        client = client_for(server)
        first = _resource(client.interactions.create(model=MODEL, input="weather?"))
        assert first.status == "requires_action"
        assert first.id is not None
        assert [s.type for s in first.steps or []] == ["thought", "model_output", "function_call", "function_call"]
        second = _resource(
            client.interactions.create(
                model=MODEL,
                previous_interaction_id=first.id,
                input=[{"type": "function_result", "call_id": "call-a", "name": "get_weather", "result": "sun"}],
            )
        )
        assert second.status == "completed"
        assert second.previous_interaction_id == first.id
        assert second.output_text == "Sunny."
        with pytest.raises(ierr.NotFoundError):
            client.interactions.create(model=MODEL, input="x", previous_interaction_id="nope")
    sent = server.requests_for("interactions.create")[1].body
    assert sent["input"][0]["call_id"] == "call-a"


def test_resume_with_last_event_id(client_for: ClientFactory) -> None:
    turn = TOOL_TURN.model_copy(update={"fault": Fault(kind="cut_stream", after=5)})
    with FakeGemini([turn]) as server:
        client = client_for(server)
        seen: list[Any] = []
        with pytest.raises(ierr.APIConnectionError):
            seen.extend(client.interactions.create(model=MODEL, input="weather?", stream=True))
        assert len(seen) == 5
        first = seen[0]
        assert isinstance(first, it.InteractionCreatedEvent)
        rest = list(client.interactions.get(first.interaction.id, stream=True, last_event_id=seen[-1].event_id))
        full = list(client.interactions.get(first.interaction.id, stream=True))
    assert [e.event_id for e in seen + rest] == [e.event_id for e in full]
    assert server.requests[1].query == {"stream": "true", "last_event_id": seen[-1].event_id}


def test_background_polling_cancel_and_delete(client_for: ClientFactory) -> None:
    agent_turn = InteractionTurn(steps=[TextStep(text="Report.")], background_polls=2)
    with FakeGemini([agent_turn, agent_turn]) as server:
        client = client_for(server)
        created = client.interactions.create(
            agent="deep-research-pro-preview-12-2025", input="research", background=True
        )
        assert created.status == "queued"
        assert created.id is not None
        statuses = [client.interactions.get(created.id).status for _ in range(4)]
        assert statuses == ["in_progress", "in_progress", "completed", "completed"]
        assert client.interactions.get(created.id).output_text == "Report."

        other = client.interactions.create(agent="deep-research-pro-preview-12-2025", input="r", background=True)
        assert other.id is not None
        assert client.interactions.cancel(other.id).status == "cancelled"
        assert client.interactions.get(other.id).status == "cancelled"
        with pytest.raises(ierr.BadRequestError):
            client.interactions.cancel(created.id)

        client.interactions.delete(created.id)
        with pytest.raises(ierr.NotFoundError):
            client.interactions.get(created.id)
    assert [r.api_method for r in server.requests][-3:] == [
        "interactions.cancel",
        "interactions.delete",
        "interactions.get",
    ]
    assert server.requests[-3].path.endswith(f"/interactions/{created.id}/cancel")


def test_server_side_steps(client_for: ClientFactory) -> None:
    turn = InteractionTurn(
        steps=[
            GoogleSearchCall(id="s1", queries=["paris weather"]),
            GoogleSearchResult(call_id="s1", search_suggestions="<div/>"),
            CodeExecutionCall(id="c1", code="print(1)"),
            CodeExecutionResult(call_id="c1", result="1\n"),
            TextStep(text="Done."),
        ]
    )
    with FakeGemini([turn]) as server:
        events = list(client_for(server).interactions.create(model=MODEL, input="x", stream=True))
    steps = [e.step for e in events if isinstance(e, it.StepStart)]
    assert [type(s).__name__ for s in steps] == [
        "GoogleSearchCallStep",
        "GoogleSearchResultStep",
        "CodeExecutionCallStep",
        "CodeExecutionResultStep",
        "ModelOutputStep",
    ]
    done = events[-1]
    assert isinstance(done, it.InteractionCompletedEvent)
    assert done.interaction.status == "completed"


def test_model_turn_renders_as_interaction(client_for: ClientFactory) -> None:
    turn = ModelTurn(thoughts=[Thought(text="hmm", signature="s")], text="Hi", text_chunks=2)
    with FakeGemini([turn]) as server:
        answer = _resource(client_for(server).interactions.create(model=MODEL, input="x"))
    assert [s.type for s in answer.steps or []] == ["thought", "model_output"]
    assert answer.output_text == "Hi"


def test_interaction_faults(client_for: ClientFactory) -> None:
    turn = InteractionTurn(steps=[TextStep(text="ok")])
    with FakeGemini([turn.model_copy(update={"fault": Fault(kind="rate_limit", retry_delay="7s")})]) as server:
        client = client_for(server)
        with pytest.raises(ierr.RateLimitError) as caught:
            client.interactions.create(model=MODEL, input="x")
        assert caught.value.status_code == 429
        assert "7s" in str(caught.value.body)
        assert _resource(client.interactions.create(model=MODEL, input="x")).status == "completed"
    with FakeGemini([turn.model_copy(update={"fault": Fault(kind="mid_stream_error", after=3)})]) as server:
        events = list(client_for(server).interactions.create(model=MODEL, input="x", stream=True))
        error = events[-1]
        assert isinstance(error, it.ErrorEvent)
        assert error.error is not None
        assert error.error.code == "INTERNAL"
        assert len(events) == 4
        iid = events[0].interaction.id if isinstance(events[0], it.InteractionCreatedEvent) else ""
        assert client_for(server).interactions.get(iid).status == "failed"


@pytest.mark.anyio
# google-genai's async Interactions client calls asyncio.to_thread in its hooks, so it cannot run on trio
# (the interactions backend uses the sync client in worker threads there: tests/e2e/interactions).
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_async_interactions(anyio_backend: str, client_for: ClientFactory) -> None:
    async with FakeGemini([TOOL_TURN, TOOL_TURN]) as server:
        client = client_for(server).aio
        stream = await client.interactions.create(model=MODEL, input="x", stream=True)
        assert not isinstance(stream, it.Interaction)
        events = [e async for e in stream]
        assert _kinds(events)[-1] == "interaction.completed"
        created = events[0]
        assert isinstance(created, it.InteractionCreatedEvent)
        resumed = await client.interactions.get(created.interaction.id, stream=True, last_event_id=events[-3].event_id)
        assert [e.event_id async for e in resumed] == [e.event_id for e in events[-2:]]
        second = await client.interactions.create(
            model=MODEL, input="x", previous_interaction_id=created.interaction.id
        )
        assert _resource(second).status == "requires_action"


def test_unknown_route_is_404() -> None:
    with FakeGemini() as server:
        response = httpx.get(f"{server.base_url}/v1beta/models")
    assert response.status_code == 404
    assert server.requests[0].api_method == "unknown"


def test_legacy_dialect_arrives_as_unknown_events(client_for: ClientFactory) -> None:
    turn = TOOL_TURN.model_copy(update={"dialect": "legacy", "id": "old-1"})
    with FakeGemini([turn]) as server:
        events = list(client_for(server).interactions.create(model=MODEL, input="weather?", stream=True))
        stored = server.interaction("old-1")
    assert all(isinstance(e, it.UnknownInteractionSSEEvent) for e in events)
    raw = [e.raw for e in events if isinstance(e, it.UnknownInteractionSSEEvent)]
    kinds = [r["event_type"] for r in raw]
    assert kinds[0] == "interaction.start"
    assert kinds[-1] == "interaction.complete"
    assert set(kinds[1:-1]) == {"content.start", "content.delta", "content.stop"}
    assert [r["content"]["type"] for r in raw if r["event_type"] == "content.start"] == [
        "thought",
        "text",
        "function_call",
        "function_call",
    ]
    deltas = [r["delta"] for r in raw if r["event_type"] == "content.delta"]
    assert deltas[0] == {"type": "thought_summary", "content": {"text": "Planning"}}
    assert "".join(d["text"] for d in deltas if d["type"] == "text") == "Let me look that up."
    calls = [d for d in deltas if d["type"] == "function_call"]
    assert calls[1] == {"type": "function_call", "id": "call-b", "name": "get_time", "arguments": {"tz": "CET"}}
    assert raw[-1]["interaction"]["status"] == "requires_action"
    assert raw[-1]["interaction"]["usage"]["total_tokens"] == 20
    # The stored interaction is the same resource whichever dialect streamed it.
    assert stored is not None
    assert [s["type"] for s in stored["steps"]] == ["thought", "model_output", "function_call", "function_call"]


def test_both_dialects_translate_alike(client_for: ClientFactory) -> None:
    """The adapter's translator is the reference for the legacy shapes: it must read the same run."""
    legacy = TOOL_TURN.model_copy(update={"dialect": "legacy", "id": "same"})
    current = TOOL_TURN.model_copy(update={"id": "same"})
    with FakeGemini([legacy, current]) as server:
        client = client_for(server)
        runs: list[list[dict[str, Any]]] = []
        for _ in range(2):
            stream = client.interactions.create(model=MODEL, input="weather?", stream=True)
            assert not isinstance(stream, it.Interaction)
            runs.append(
                [e.raw if isinstance(e, it.UnknownInteractionSSEEvent) else e.model_dump(mode="json") for e in stream]
            )
    legacy_signals, current_signals = (
        [s.model_dump(exclude={"timestamp"}) if isinstance(s, BaseModel) else s for s in translate(run)] for run in runs
    )
    assert legacy_signals == current_signals
    assert len(legacy_signals) > 5


@pytest.mark.parametrize("dialect", ["current", "legacy"])
def test_cancel_while_the_create_stream_is_sent(client_for: ClientFactory, dialect: str) -> None:
    turn = InteractionTurn(steps=[TextStep(text="x" * 30, chunks=30)], chunk_delay=0.02, dialect=dialect)
    with FakeGemini([turn]) as server:
        client = client_for(server)
        stream = client.interactions.create(model=MODEL, input="long", stream=True)
        assert not isinstance(stream, it.Interaction)
        raw: list[dict[str, Any]] = []
        for event in stream:
            raw.append(event.raw if isinstance(event, it.UnknownInteractionSSEEvent) else event.model_dump(mode="json"))
            if len(raw) == 5:
                iid = raw[0]["interaction"]["id"]
                running = server.interaction(iid)
                assert running is not None
                assert running["status"] == "in_progress"
                cancelled = client.interactions.cancel(iid)
                assert cancelled.status == "cancelled"
        stored = server.interaction(iid)
        replay = [
            e.raw["event_id"] if isinstance(e, it.UnknownInteractionSSEEvent) else e.event_id
            for e in client.interactions.get(iid, stream=True)
        ]
    assert len(raw) < 30
    kinds = [e["event_type"] for e in raw]
    if dialect == "current":
        assert kinds[-2:] == ["interaction.status_update", "interaction.completed"]
        assert raw[-2]["status"] == "cancelled"
    else:
        assert kinds[-1] == "interaction.complete"
        assert "interaction.status_update" not in kinds
    assert raw[-1]["interaction"]["status"] == "cancelled"
    assert stored is not None
    assert stored["status"] == "cancelled"
    assert [s["type"] for s in stored["steps"]] == ["model_output"]
    assert replay == [e["event_id"] for e in raw]  # a resume sees the same cancelled stream
    assert [r.status for r in server.requests_for("interactions.cancel")] == [200]


def test_a_streamed_interaction_is_in_progress_until_sent(client_for: ClientFactory) -> None:
    turn = InteractionTurn(steps=[TextStep(text="abc", chunks=3)], chunk_delay=0.01)
    with FakeGemini([turn]) as server:
        events = list(client_for(server).interactions.create(model=MODEL, input="x", stream=True))
        stored = server.interaction("fake-interaction-1")
        with pytest.raises(ierr.BadRequestError):
            client_for(server).interactions.cancel("fake-interaction-1")
    assert isinstance(events[-1], it.InteractionCompletedEvent)
    assert stored is not None
    assert stored["status"] == "completed"
