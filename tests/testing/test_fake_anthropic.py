"""FakeAnthropic speaks the Messages API as Claude Code reads it: SSE, JSON, Vertex and Bedrock paths, faults.

Driven here over plain HTTP (httpx), in process: the test kit's contract, independent of the CLI.
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import httpx
import pytest

from unified.testing import AGENT_HEADER, REDACTED, FakeAnthropic, Fault, FunctionCall, ModelTurn, Thought, Usage

pytestmark = pytest.mark.anyio

HEADERS = {"x-api-key": "sk-ant-api03-kit-test-0000000000", "anthropic-version": "2023-06-01"}


def body(stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-x",
        "max_tokens": 10,
        "stream": stream,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def sse(text: str) -> list[dict[str, Any]]:
    events = []
    for chunk in text.split("\n\n"):
        data = [line[6:] for line in chunk.splitlines() if line.startswith("data: ")]
        if data:
            events.append(json.loads(data[0]))
    return events


async def post(server: FakeAnthropic, path: str = "/v1/messages?beta=true", **kwargs: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.base_url, timeout=30) as client:
        return await client.post(path, **{"headers": HEADERS, "json": body(), **kwargs})


async def test_a_model_turn_streams_as_one_message_with_its_blocks_and_usage() -> None:
    turn = ModelTurn(
        thoughts=[Thought(text="Think.", signature="SIG")],
        text="Hello world.",
        text_chunks=2,
        function_calls=[FunctionCall(name="Read", args={"file_path": "a"}, id="toolu_a")],
        usage=Usage(input_tokens=100, cached_tokens=30, cache_creation_tokens=20, output_tokens=7, thinking_tokens=3),
    )
    async with FakeAnthropic([turn]) as server:
        response = await post(server)
        [request] = server.requests_for("messages")
    assert response.headers["content-type"] == "text/event-stream"
    events = sse(response.text)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start"
    assert kinds[-2:] == ["message_delta", "message_stop"]
    deltas = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert [d["type"] for d in deltas] == [
        "thinking_delta",
        "signature_delta",
        "text_delta",
        "text_delta",
        "input_json_delta",
    ]
    assert "".join(d.get("text", "") for d in deltas) == "Hello world."
    assert deltas[1]["signature"] == "SIG"
    assert json.loads(deltas[-1]["partial_json"]) == {"file_path": "a"}
    final = events[-2]
    assert final["delta"]["stop_reason"] == "tool_use"
    assert final["usage"] == {
        "input_tokens": 50,
        "cache_read_input_tokens": 30,
        "cache_creation_input_tokens": 20,
        "output_tokens": 10,
        "output_tokens_details": {"thinking_tokens": 3},
    }
    assert request.headers["x-api-key"] == REDACTED
    assert request.body["messages"] == [{"role": "user", "content": "hi"}]


async def test_a_request_that_is_not_streamed_gets_the_whole_message() -> None:
    async with FakeAnthropic([ModelTurn(text="Whole.")]) as server:
        response = await post(server, json=body(stream=False))
    message = response.json()
    assert message["content"] == [{"type": "text", "text": "Whole."}]
    assert message["stop_reason"] == "end_turn"


async def test_subagent_requests_are_routed_by_the_agent_header() -> None:
    turns = [ModelTurn(text="sub", subagent=True), ModelTurn(text="main", subagent=False)]
    async with FakeAnthropic(turns) as server:
        main = await post(server, json=body(stream=False))
        sub = await post(server, json=body(stream=False), headers={**HEADERS, AGENT_HEADER: "agent-1"})
        assert not server.problems
    assert main.json()["content"][0]["text"] == "main"
    assert sub.json()["content"][0]["text"] == "sub"


async def test_http_faults_answer_instead_of_the_turn_and_leave_it_queued() -> None:
    faults = {
        "rate_limit": (429, "rate_limit_error"),
        "overloaded": (529, "overloaded_error"),
        "server_error": (500, "api_error"),
        "unauthenticated": (401, "authentication_error"),
        "bad_request": (400, "invalid_request_error"),
        "not_found": (404, "not_found_error"),
    }
    for kind, (status, error_type) in faults.items():
        async with FakeAnthropic([ModelTurn(text="After.", fault=Fault(kind=kind, retry_delay="7s"))]) as server:
            failed = await post(server)
            retried = await post(server, json=body(stream=False))
        assert failed.status_code == status, kind
        assert failed.json()["error"]["type"] == error_type
        if kind == "rate_limit":
            assert failed.headers["retry-after"] == "7"
        assert retried.json()["content"][0]["text"] == "After."


async def test_stream_faults_break_the_stream_after_some_events() -> None:
    async with FakeAnthropic(
        [ModelTurn(text="abcdef", text_chunks=3, fault=Fault(kind="mid_stream_error", after=3))]
    ) as server:
        broken = sse((await post(server)).text)
    assert [e["type"] for e in broken] == ["message_start", "content_block_start", "content_block_delta", "error"]
    async with FakeAnthropic([ModelTurn(text="abc", fault=Fault(kind="no_finish"))]) as server:
        unfinished = sse((await post(server)).text)
    assert not {"message_delta", "message_stop"} & {e["type"] for e in unfinished}
    async with FakeAnthropic([ModelTurn(text="abc", text_chunks=3, fault=Fault(kind="cut_stream", after=2))]) as server:
        with pytest.raises(httpx.HTTPError):
            await post(server)


async def test_a_first_party_request_without_credentials_is_refused() -> None:
    async with FakeAnthropic([ModelTurn(text="never")]) as server:
        response = await post(server, headers={"anthropic-version": "2023-06-01"})
        assert len(server.unplayed) == 1
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


async def test_vertex_and_bedrock_paths_serve_the_same_turns() -> None:
    vertex = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-x:streamRawPredict"
    async with FakeAnthropic([ModelTurn(text="From Vertex."), ModelTurn(text="From Bedrock.")]) as server:
        vertex_events = sse((await post(server, vertex, headers={}, json={"messages": []})).text)
        bedrock = await post(server, "/model/us.anthropic.claude-x/invoke-with-response-stream", headers={}, json={})
        profiles = (await httpx.AsyncClient(base_url=server.base_url).get("/inference-profiles")).json()
        models = [r.model for r in server.requests_for("messages")]
    assert (
        "".join(e["delta"].get("text", "") for e in vertex_events if e["type"] == "content_block_delta")
        == "From Vertex."
    )
    assert bedrock.headers["content-type"] == "application/vnd.amazon.eventstream"
    events = []
    data = bedrock.content
    while data:
        total, header_length = struct.unpack(">II", data[:8])
        payload = data[12 + header_length : total - 4]
        events.append(json.loads(base64.b64decode(json.loads(payload)["bytes"])))
        data = data[total:]
    assert "".join(e["delta"].get("text", "") for e in events if e["type"] == "content_block_delta") == "From Bedrock."
    assert profiles == {"inferenceProfileSummaries": []}
    assert models == ["claude-x", "us.anthropic.claude-x"]


async def test_an_exhausted_script_is_a_problem_the_test_sees() -> None:
    async with FakeAnthropic([]) as server:
        response = await post(server)
        assert server.problems == ["FakeAnthropic script exhausted: no turn left for a main agent's request"]
    assert response.status_code == 500
    with pytest.raises(AssertionError):
        server.assert_done()


async def test_count_tokens_and_hello_answer_without_a_turn() -> None:
    async with FakeAnthropic([]) as server, httpx.AsyncClient(base_url=server.base_url) as client:
        counted = await client.post("/v1/messages/count_tokens?beta=true", json=body(), headers=HEADERS)
        hello = await client.head("/api/hello")
        assert not server.problems
    assert counted.json()["input_tokens"] > 0
    assert hello.status_code == 200


async def test_saw_credential_says_which_credentials_requests_carried_and_keeps_none() -> None:
    token = "gw-token-kit-test-0000000000"
    async with FakeAnthropic([ModelTurn(text="a"), ModelTurn(text="b")]) as server:
        await post(server)
        await post(server, headers={"authorization": f"Bearer {token}", "anthropic-version": "2023-06-01"})
        assert server.saw_credential(HEADERS["x-api-key"])
        assert server.saw_credential(token)
        assert server.saw_credential(f"Bearer {token}")
        assert not server.saw_credential("sk-ant-api03-never-sent")
        assert not server.saw_credential(HEADERS["x-api-key"][:-1])
        recorded = repr(server.requests) + repr(vars(server))
    assert HEADERS["x-api-key"] not in recorded
    assert token not in recorded
    assert all(r.headers.get("x-api-key", REDACTED) == REDACTED for r in server.requests)


@pytest.mark.parametrize("kind", ["mid_stream_error", "empty_stream", "no_finish"])
async def test_a_stream_fault_on_a_request_that_is_not_streamed_answers_it_as_a_whole(kind: str) -> None:
    """Claude Code's fallback after a broken stream asks again without streaming. Before, a stream fault on
    such a request hung it until the server stopped (only `cut_stream` dropped it): the fallback waited."""
    async with FakeAnthropic([ModelTurn(text="Whole.", fault=Fault(kind=kind))]) as server:
        response = await post(server, json=body(stream=False))
        [request] = server.requests_for("messages")
    assert request.fault == kind
    if kind == "mid_stream_error":
        assert (response.status_code, response.json()["error"]["type"]) == (529, "overloaded_error")
        return
    message = response.json()
    assert response.status_code == 200
    assert message["stop_reason"] is None
    assert message["content"] == ([] if kind == "empty_stream" else [{"type": "text", "text": "Whole."}])


async def test_a_mid_stream_error_on_a_request_that_is_not_streamed_carries_its_http_fault() -> None:
    fault = Fault(kind="mid_stream_error", carries="rate_limit", retry_delay="3s")
    async with FakeAnthropic([ModelTurn(text="Whole.", fault=fault)]) as server:
        response = await post(server, json=body(stream=False))
    assert (response.status_code, response.json()["error"]["type"]) == (429, "rate_limit_error")
    assert response.headers["retry-after"] == "3"
