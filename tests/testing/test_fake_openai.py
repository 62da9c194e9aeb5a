"""FakeOpenAI: the scenario vocabulary as the OpenAI Responses API speaks it, its faults and its request log.

Real HTTP on 127.0.0.1 (the unit tier allows loopback servers); the real codex binary on it is in
tests/e2e/codex and the conformance suite."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from unified.testing import (
    FAKE_OPENAI_KEY,
    FakeOpenAI,
    Fault,
    FaultKind,
    FunctionCall,
    ModelTurn,
    ResponsesTurn,
    Script,
    ServerTool,
    Thought,
    Usage,
    codex_call,
)

AUTH = {"Authorization": f"Bearer {FAKE_OPENAI_KEY}"}


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def ask(
    server: FakeOpenAI, body: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/responses", json=body or {"model": "gpt-5.5", "input": []}, headers=headers or AUTH
    )


def test_a_model_turn_streams_as_responses_events() -> None:
    turn = ModelTurn(
        thoughts=[Thought(text="Think first.", signature="sig")],
        text="Hello there",
        text_chunks=2,
        function_calls=[FunctionCall(name="read_file", args={"file_path": "a b.txt"}, id="call_1")],
        usage=Usage(input_tokens=10, cached_tokens=4, output_tokens=3, thinking_tokens=2),
    )
    with FakeOpenAI([turn]) as server:
        response = ask(server)
    assert response.headers["content-type"] == "text/event-stream"
    events = events_of(response)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created"
    assert kinds[-1] == "response.completed"
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == ["Hello ", "there"]
    done = events[-1]["response"]
    reasoning, message, call = done["output"]
    assert reasoning["encrypted_content"] == "c2ln"  # the signature, base64 as signatures travel
    assert message["content"][0]["text"] == "Hello there"
    assert (call["name"], json.loads(call["arguments"]), call["call_id"]) == (
        "exec_command",
        {"cmd": "cat 'a b.txt'"},
        "call_1",
    )
    assert done["usage"] == {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 15,
    }
    added = next(e for e in events if e["type"] == "response.output_item.added")
    assert added["item"]["summary"] == [], "an item starts empty, as the API sends it"


@pytest.mark.parametrize(
    ("call", "rendered"),
    [
        (
            FunctionCall(name="write_file", args={"file_path": "n.txt", "content": "a\nb\n"}),
            {
                "type": "custom_tool_call",
                "name": "apply_patch",
                "input": "*** Begin Patch\n*** Add File: n.txt\n+a\n+b\n*** End Patch\n",
            },
        ),
        (
            FunctionCall(name="mcp__echo__echo", args={"text": "hi"}),
            {"type": "function_call", "namespace": "mcp__echo", "name": "echo", "arguments": {"text": "hi"}},
        ),
        (
            FunctionCall(name="invoke_agent", args={"agent_name": "x", "prompt": "Do"}),
            {
                "type": "function_call",
                "namespace": "multi_agent_v1",
                "name": "spawn_agent",
                "arguments": {"message": "Do"},
            },
        ),
        (
            FunctionCall(name="complete_task", args={"result": {"response": "done"}}),
            {"type": "message", "text": "done"},
        ),
        (
            FunctionCall(name="run_shell_command", args={"command": "ls -l"}),
            {"type": "function_call", "name": "exec_command", "arguments": {"cmd": "ls -l"}},
        ),
        (
            FunctionCall(name="exec_command", args={"cmd": "pwd"}),
            {"type": "function_call", "name": "exec_command", "arguments": {"cmd": "pwd"}},
        ),
    ],
)
def test_scenario_calls_become_codexs_tools(call: FunctionCall, rendered: dict[str, Any]) -> None:
    assert codex_call(call) == rendered


def test_it_refuses_a_request_without_the_key_as_the_api_does() -> None:
    with FakeOpenAI([ModelTurn(text="x")], api_key="sk-right") as server:
        missing = ask(server, headers={})
        wrong = ask(server, headers={"Authorization": "Bearer sk-wrong"})
        right = ask(server, headers={"Authorization": "Bearer sk-right"})
        logged = server.requests
    assert (missing.status_code, wrong.status_code, right.status_code) == (401, 401, 200)
    assert wrong.json()["error"]["code"] == "invalid_api_key"
    assert all(r.headers["authorization"] == "<redacted>" for r in logged if "authorization" in r.headers)


@pytest.mark.parametrize(
    ("kind", "status", "code"),
    [
        ("rate_limit", 429, "rate_limit_exceeded"),
        ("quota_exceeded", 429, "insufficient_quota"),
        ("unauthenticated", 401, "invalid_api_key"),
        ("server_error", 500, None),
        ("not_found", 404, "model_not_found"),
    ],
)
def test_http_faults_answer_instead_of_the_turn_and_leave_it_queued(
    kind: FaultKind, status: int, code: str | None
) -> None:
    with FakeOpenAI([ModelTurn(text="after the fault", fault=Fault(kind=kind, retry_delay="7s"))]) as server:
        failed = ask(server)
        served = ask(server)
        assert not server.problems
    assert failed.status_code == status
    assert failed.json()["error"]["code"] == code
    if kind == "rate_limit":
        assert failed.headers["retry-after"] == "7"
    assert events_of(served)[-1]["response"]["output"][0]["content"][0]["text"] == "after the fault"


def test_stream_faults_and_recorded_turns() -> None:
    turns = [
        ModelTurn(text="cut me", text_chunks=5, fault=Fault(kind="cut_stream", after=3)),
        ModelTurn(text="fails", fault=Fault(kind="mid_stream_error", after=2)),
        ModelTurn(text="unfinished", fault=Fault(kind="no_finish")),
        ResponsesTurn(events=[{"type": "response.completed", "response": {"id": "r", "output": []}}]),
    ]
    with FakeOpenAI(Script(turns=turns)) as server:
        cut = events_of(ask(server))
        failed = events_of(ask(server))
        unfinished = events_of(ask(server))
        recorded = events_of(ask(server))
        exhausted = ask(server)
        assert server.problems == ["FakeOpenAI script exhausted: no turn left for POST /v1/responses"]
    assert len(cut) == 3
    assert failed[-1]["type"] == "response.failed"
    assert "response.completed" not in [e["type"] for e in unfinished]
    assert recorded == [{"type": "response.completed", "response": {"id": "r", "output": []}, "sequence_number": 0}]
    assert exhausted.status_code == 500


def test_a_subagents_turns_go_to_the_new_thread_and_the_notification_takes_none() -> None:
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="invoke_agent", args={"prompt": "child task"})]),
        ModelTurn(text="child works"),
        ModelTurn(function_calls=[FunctionCall(name="complete_task", args={"result": {"response": "child done"}})]),
        ModelTurn(text="parent goes on"),
    ]

    def text_of(response: httpx.Response) -> list[str]:
        final = events_of(response)[-1]["response"]["output"]
        return [part["text"] for item in final if item["type"] == "message" for part in item["content"]]

    with FakeOpenAI(turns) as server:
        parent = {**AUTH, "thread-id": "parent"}
        child = {**AUTH, "thread-id": "child"}
        assert events_of(ask(server, headers=parent))[-1]["response"]["output"][0]["name"] == "spawn_agent"
        assert text_of(ask(server, headers=parent)) == ["parent goes on"]
        assert text_of(ask(server, headers=child)) == ["child works"]
        assert text_of(ask(server, headers=child)) == ["child done"]
        notice = {
            "model": "gpt-5.5",
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "<subagent_notification>\n{}\n</subagent_notification>"}
                    ],
                }
            ],
        }
        assert text_of(ask(server, notice, headers=parent)) == []
        assert not server.unplayed
        assert not server.problems


def test_a_google_search_server_tool_is_openais_hosted_web_search_and_other_tools_are_refused() -> None:
    search = ServerTool(tool="google_search", id="s1", arguments={"queries": ["unified", "other"]})
    maps = ServerTool(tool="google_maps", id="m1", arguments={"query": "cafe"})
    with FakeOpenAI([ModelTurn(server_tools=[search], text="Found it."), ModelTurn(server_tools=[maps])]) as server:
        events = events_of(ask(server))
        refused = ask(server)
        problems = server.problems
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert [(i["type"], i["status"]) for i in added] == [("web_search_call", "in_progress"), ("message", "in_progress")]
    search_done, message = events[-1]["response"]["output"]
    assert search_done == {
        "id": search_done["id"],
        "type": "web_search_call",
        "action": {"type": "search", "query": "unified"},
        "status": "completed",
    }
    assert message["content"][0]["text"] == "Found it."
    assert refused.status_code == 500
    assert problems == ["FakeOpenAI has no Responses API counterpart for the server tool 'google_maps'"]
