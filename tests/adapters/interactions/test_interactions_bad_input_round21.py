"""Bad input round 21, the Interactions API: a resume whose interaction the server no longer holds.

A request continuing interaction `previous_interaction_id` that the server answers 404 read as `model_not_found`
"the Gemini API does not serve the requested model ... check the model name" unless the server's words said
"interaction" (Google's own 404 says "Requested entity was not found."; a proxy's "Not Found"): the model was fine,
and nothing said the interaction was gone. Now `interaction_not_found` naming it, with what to do; the session is
kept. A 404 on a new session (no interaction continued) is still the model's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.foundation.test_bad_input_round21 import _answers, _events, _options
from tests.harness.raw_http import Answering
from unified import ExecuteParams
from unified.events import ErrorEvent, Result, UnifiedEvent
from unified.sessions import MemorySessionStore

pytestmark = pytest.mark.anyio


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + b"\r\n\r\n" for event in events)


ANSWER = _sse(
    {"event_type": "interaction.created", "interaction": {"id": "i-round21", "status": "in_progress"}},
    {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
    {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "hi"}},
    {"event_type": "step.stop", "index": 0},
    {
        "event_type": "interaction.completed",
        "interaction": {"id": "i-round21", "status": "completed", "usage": {"total_input_tokens": 3}},
    },
)

NOT_FOUND: dict[str, bytes] = {
    "google": json.dumps(
        {"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND"}}
    ).encode(),
    "proxy": b"Not Found",
}


async def _run(server: Answering, cwd: Path, store: MemorySessionStore, resume: str | None) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="go on",
        backend="interactions",
        model="gemini-2.5-flash",
        cwd=cwd,
        session_store=store,
        resume=resume,
        backend_options=_options(server),
    )
    return await _events(params)


def _error(events: list[UnifiedEvent]) -> ErrorEvent:
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1, errors
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
    return errors[0]


async def _started(tmp_path: Path, store: MemorySessionStore) -> str:
    with _answers([(200, ANSWER)]) as server:
        final = (await _run(server, tmp_path, store, None))[-1]
    assert isinstance(final, Result)
    assert final.status == "success", final.error
    assert final.short_id is not None
    return final.short_id


@pytest.mark.parametrize("said", list(NOT_FOUND))
async def test_a_404_continuing_an_interaction_says_it_is_gone(tmp_path: Path, said: str) -> None:
    """FAILED before: `model_not_found`, "does not serve the requested model ... check the model name"."""
    store = MemorySessionStore()
    short_id = await _started(tmp_path, store)
    with _answers([(404, NOT_FOUND[said])] * 2) as server:
        error = _error(await _run(server, tmp_path, store, short_id))
    assert len(server.asked) == 1  # not asked again: it will not come back
    assert error.code == "interaction_not_found"
    assert "the Interactions API no longer holds interaction i-round21, which this session continues (404)" in (
        error.message
    )
    assert "start a new session, or carry this one's history into one (`unified sessions export REF`" in error.message
    assert "does not serve" not in error.message
    assert error.details["previous_interaction_id"] == "i-round21"
    kept = await store.load("interactions", (await store.resolve("interactions", short_id)).session_id)
    assert kept.state["steps"]  # the session is kept: its history can still be carried over


async def test_a_404_that_names_the_interaction_keeps_its_own_words(tmp_path: Path) -> None:
    """Pin: the server's message naming the interaction was read so already."""
    store = MemorySessionStore()
    short_id = await _started(tmp_path, store)
    body = {"error": {"code": 404, "message": "Interaction i-round21 not found", "status": "NOT_FOUND"}}
    with _answers([(404, body)]) as server:
        error = _error(await _run(server, tmp_path, store, short_id))
    assert error.code == "interaction_not_found"
    assert "Interaction i-round21 not found" in error.message


async def test_a_404_on_a_new_session_is_still_the_models(tmp_path: Path) -> None:
    """FAILED before (the message only): with no interaction continued, a 404 is the model that is not served,
    named (it said "the requested model", where generate-content names it)."""
    with _answers([(404, NOT_FOUND["google"])]) as server:
        error = _error(await _run(server, tmp_path, MemorySessionStore(), None))
    assert error.code == "model_not_found"
    assert "does not serve model 'gemini-2.5-flash'" in error.message
