"""A stored session resumed on its own backend reaches the model in the order every provider takes.

A session's store is the caller's (`SessionStore`: a file, a database another tool writes) and its file may have
been edited, so a stored history can hold a tool result far from its call, or a call no result answers, in the
middle. A caller's `history` and a failover's are put in order (`Conversation.with_results_after_calls`) before
they reach a provider; a resumed session was sent as stored, and the Gemini API refuses it (HTTP 400: "function
response turn comes immediately after a function call turn"). Now the API backends put a resumed session in that
order too (a session already in order is sent exactly as stored).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conversations.test_failover import Lab, lab  # noqa: F401 (a fixture)
from unified import MemorySessionStore
from unified.events import Result, SessionStarted, UnifiedEvent
from unified.testing import FunctionCall
from unified.testing import ModelTurn as ScriptTurn

pytestmark = pytest.mark.anyio

CALL = {"function_call": {"id": "far", "name": "read_file", "args": {"file_path": "notes.txt"}}}
NEVER = {"function_call": {"id": "never", "name": "read_file", "args": {"file_path": "other.txt"}}}
FAR_RESULT = {"function_response": {"id": "far", "name": "read_file", "response": {"output": "FAR"}}}


def _started(events: list[UnifiedEvent]) -> SessionStarted:
    return next(e for e in events if isinstance(e, SessionStarted))


def _success(events: list[UnifiedEvent]) -> Result:
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    return result


async def _out_of_order_session(
    lab: Lab,  # noqa: F811
    sessions: MemorySessionStore,
    backend: str,
    **options: Any,
) -> str:
    """A session of `backend` whose stored history holds a result far from its call and a call never answered,
    with turns between (a file edited, a store written by another tool)."""
    lab.server.add(ScriptTurn(text="first answer"))
    params = lab.params(backend, prompt="first", session_store=sessions)
    params = params.model_copy(update={"backend_options": lab.options(**options)})
    session_id = str(_started(await lab.run(params)).session_id)
    stored = await sessions.load(backend, session_id)
    if backend == "generate-content":
        stored.state["contents"] += [
            {"role": "model", "parts": [CALL, NEVER]},
            {"role": "user", "parts": [{"text": "in between"}]},
            {"role": "model", "parts": [{"text": "noted"}]},
            {"role": "user", "parts": [FAR_RESULT]},
        ]
    else:
        stored.state["steps"] += [
            {"type": "function_call", "id": "far", "name": "read_file", "arguments": {"file_path": "notes.txt"}},
            {"type": "function_call", "id": "never", "name": "read_file", "arguments": {"file_path": "other.txt"}},
            {"type": "user_input", "content": [{"type": "text", "text": "in between"}]},
            {"type": "model_output", "content": [{"type": "text", "text": "noted"}]},
            {"type": "function_result", "call_id": "far", "name": "read_file", "result": "FAR"},
        ]
    await sessions.save(stored)
    return session_id


async def test_a_generate_content_session_out_of_order_is_resumed_in_order(lab: Lab) -> None:  # noqa: F811
    store = MemorySessionStore()
    session_id = await _out_of_order_session(lab, store, "generate-content")
    lab.server.add(ScriptTurn(text="continued"))
    events = await lab.run(lab.params("generate-content", prompt="go on", resume=session_id[:8], session_store=store))
    _success(events)  # FakeGemini refuses (400) a history the Gemini API refuses
    contents = lab.server.requests[-1].body["contents"]
    at = next(i for i, c in enumerate(contents) if any("functionCall" in p for p in c["parts"]))
    answers = [p["functionResponse"] for p in contents[at + 1]["parts"]]
    assert (answers[0]["id"], answers[0]["response"]) == ("far", {"output": "FAR"})
    assert answers[1]["id"] == "never"
    assert "not run" in json.dumps(answers[1])
    rest = json.dumps(contents[at + 2 :])
    assert "in between" in rest
    assert "noted" in rest
    assert "go on" in json.dumps(contents[-1])
    lab.server.assert_done()


async def test_a_session_in_order_is_sent_exactly_as_stored(lab: Lab) -> None:  # noqa: F811
    """Every session this backend wrote is in order: it goes to the model part for part as stored (written again
    from a `Conversation`, a signature on a part of its own would become an empty thought's)."""
    store = MemorySessionStore()
    lab.server.add(ScriptTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]))
    lab.server.add(ScriptTurn(text="first answer"))
    first = await lab.run(lab.params("generate-content", prompt="first", session_store=store))
    session_id = str(_started(first).session_id)
    stored = await store.load("generate-content", session_id)
    stored.state["contents"][-1]["parts"].append({"thought_signature": "c2lnbmF0dXJl"})
    await store.save(stored)
    lab.server.add(ScriptTurn(text="continued"))
    _success(await lab.run(lab.params("generate-content", prompt="go on", resume=session_id[:8], session_store=store)))
    contents = lab.server.requests[-1].body["contents"]
    assert {"thoughtSignature": "c2lnbmF0dXJl"} in contents[-2]["parts"]
    lab.server.assert_done()


async def test_an_interactions_session_without_store_out_of_order_is_resumed_in_order(lab: Lab) -> None:  # noqa: F811
    """Without `store` every request sends the session's steps (with it, the server holds the history)."""
    store = MemorySessionStore()
    session_id = await _out_of_order_session(lab, store, "interactions", store=False)
    lab.server.add(ScriptTurn(text="continued"))
    _success(await lab.run(lab.params("interactions", prompt="go on", resume=session_id[:8], session_store=store)))
    steps = lab.server.requests[-1].body["input"]
    kinds = [(s["type"], s.get("call_id") or s.get("id")) for s in steps if "function" in s["type"]]
    assert kinds == [
        ("function_call", "far"),
        ("function_call", "never"),
        ("function_result", "far"),
        ("function_result", "never"),
    ]
    at = next(i for i, s in enumerate(steps) if s["type"] == "function_result" and s["call_id"] == "never")
    assert "not run" in json.dumps(steps[at])
    rest = json.dumps(steps[at + 1 :])
    assert "in between" in rest
    assert "noted" in rest
    assert "go on" in json.dumps(steps[-1])
