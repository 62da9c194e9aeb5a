"""Faults surface in google-genai as the real errors would; the request log shows what a client sent."""

from __future__ import annotations

import base64
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from google import genai
from google.genai import errors, types
from google.genai import interactions as it
from google.oauth2.credentials import Credentials

from tests.hang_guard import HANG_GUARD_S
from unified.testing import REDACTED, FakeGemini
from unified.testing._scenario import (
    Fault,
    FunctionCall,
    InteractionTurn,
    ModelTurn,
    Script,
    TextStep,
    Thought,
    Usage,
)

ClientFactory = Callable[[FakeGemini], genai.Client]
MODEL = "gemini-2.5-flash"
TEXT = ModelTurn(text="abcdef", text_chunks=3, usage=Usage(input_tokens=4, output_tokens=2))


def _output_text(answer: object) -> str | None:
    assert isinstance(answer, it.Interaction)
    return answer.output_text


def _stream_text(client: genai.Client, seen: list[str] | None = None) -> str:
    out = seen if seen is not None else []
    for chunk in client.models.generate_content_stream(model=MODEL, contents="hi"):
        out.append(chunk.text or "")
    return "".join(out)


def test_model_turn_streams_and_merges(client_for: ClientFactory) -> None:
    turn = ModelTurn(
        thoughts=[Thought(text="thinking", signature="sig-t")],
        text="Reading both.",
        text_chunks=2,
        function_calls=[FunctionCall(name="read", args={"p": "a"}, signature="sig-f"), FunctionCall(name="read")],
        usage=Usage(input_tokens=10, output_tokens=5, thinking_tokens=2),
    )
    with FakeGemini([turn, turn]) as server:
        client = client_for(server)
        chunks = list(client.models.generate_content_stream(model=MODEL, contents="hi"))
        merged = client.models.generate_content(model=MODEL, contents="hi")
    assert len(chunks) == 4
    first = chunks[0].candidates[0].content.parts[0]  # type: ignore[index,union-attr]
    assert first.thought is True
    assert first.thought_signature == b"sig-t"
    assert chunks[-1].function_calls is not None
    assert [c.name for c in chunks[-1].function_calls] == ["read", "read"]
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP  # type: ignore[index]
    assert chunks[-1].usage_metadata is not None
    assert chunks[-1].usage_metadata.total_token_count == 17
    assert merged.text == "Reading both."
    assert len(merged.candidates[0].content.parts) == 5  # type: ignore[arg-type,index,union-attr]


def test_rate_limit_carries_retry_info_and_keeps_the_turn(client_for: ClientFactory) -> None:
    with FakeGemini([TEXT.model_copy(update={"fault": Fault(kind="rate_limit", retry_delay="15s")})]) as server:
        client = client_for(server)
        with pytest.raises(errors.ClientError) as caught:
            _stream_text(client)
        assert _stream_text(client) == "abcdef"
    error = caught.value
    assert error.code == 429
    assert error.status == "RESOURCE_EXHAUSTED"
    details = error.details["error"]["details"]
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "15s"} in details
    assert any(d["@type"].endswith("QuotaFailure") for d in details)
    assert [r.status for r in server.requests] == [429, 200]
    assert server.requests[0].fault == "rate_limit"


@pytest.mark.parametrize(("kind", "code"), [("server_error", 500), ("unavailable", 503)])
def test_server_errors(kind: str, code: int, client_for: ClientFactory) -> None:
    with FakeGemini([TEXT]) as server:
        server.inject(Fault.model_validate({"kind": kind}))
        client = client_for(server)
        with pytest.raises(errors.ServerError) as caught:
            client.models.generate_content(model=MODEL, contents="hi")
        assert caught.value.code == code
        assert client.models.generate_content(model=MODEL, contents="hi").text == "abcdef"


def test_mid_stream_error_raises_during_iteration(client_for: ClientFactory) -> None:
    seen: list[str] = []
    with (
        FakeGemini([TEXT.model_copy(update={"fault": Fault(kind="mid_stream_error", after=2)})]) as server,
        pytest.raises(errors.ServerError),
    ):
        _stream_text(client_for(server), seen)
    assert seen == ["ab", "cd"]


def test_cut_stream_breaks_the_connection(client_for: ClientFactory) -> None:
    seen: list[str] = []
    with (
        FakeGemini([TEXT.model_copy(update={"fault": Fault(kind="cut_stream", after=9)})]) as server,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        _stream_text(client_for(server), seen)
    assert seen == ["ab", "cd"], "the last chunk never arrives"


def test_slow_chunks(client_for: ClientFactory) -> None:
    with FakeGemini([TEXT.model_copy(update={"chunk_delay": 0.1})]) as server:
        started = time.monotonic()
        assert _stream_text(client_for(server)) == "abcdef"
    assert time.monotonic() - started >= 0.3


@pytest.mark.anyio
async def test_async_fault_and_exhaustion(client_for: ClientFactory) -> None:
    async with FakeGemini([TEXT.model_copy(update={"fault": Fault(kind="mid_stream_error")})]) as server:
        client = client_for(server).aio
        stream = await client.models.generate_content_stream(model=MODEL, contents="hi")
        with pytest.raises(errors.ServerError):
            async for _ in stream:
                pass
        with pytest.raises(errors.ServerError) as caught:
            await client.models.generate_content(model=MODEL, contents="hi")
    message = "FakeGemini script exhausted: no turn left for POST /v1beta/models/gemini-2.5-flash:generateContent"
    assert caught.value.message == message
    assert server.problems == [message]
    with pytest.raises(AssertionError):
        server.assert_done()


def test_global_order_and_count_tokens_fallback(client_for: ClientFactory) -> None:
    script = Script(turns=[ModelTurn(method="generateContent", text="x"), TEXT], order="global")
    with FakeGemini(script) as server:
        client = client_for(server)
        assert client.models.count_tokens(model=MODEL, contents="hello").total_tokens
        with pytest.raises(errors.ServerError, match="script mismatch"):
            _stream_text(client)
        assert client.models.generate_content(model=MODEL, contents="hi").text == "x"
        assert _stream_text(client) == "abcdef"
    assert len(server.problems) == 1


def test_log_shows_echoed_signature_and_redacts_secrets(client_for: ClientFactory) -> None:
    call = ModelTurn(function_calls=[FunctionCall(name="ls", id="call-1", signature="sig-xyz")])
    with FakeGemini([call, ModelTurn(text="done")]) as server:
        client = client_for(server)
        first = client.models.generate_content(model=MODEL, contents="list")
        assert first.candidates is not None
        model_content = first.candidates[0].content
        assert model_content is not None
        result = types.Part(function_response=types.FunctionResponse(id="call-1", name="ls", response={"output": "a"}))
        history = [types.Content(role="user", parts=[types.Part(text="list")]), model_content]
        client.models.generate_content(model=MODEL, contents=[*history, types.Content(role="user", parts=[result])])
        httpx.post(f"{server.base_url}/v1beta/models/{MODEL}:countTokens?key=sk-secret", json={}, timeout=HANG_GUARD_S)
    second = server.requests[1].body["contents"]
    assert second[1]["parts"][0]["thoughtSignature"] == base64.b64encode(b"sig-xyz").decode()
    assert second[2]["parts"][0]["functionResponse"]["id"] == "call-1"
    assert server.requests[0].headers["x-goog-api-key"] == REDACTED
    assert server.requests[2].query["key"] == REDACTED
    assert "test-key" not in repr(server.requests)
    assert "sk-secret" not in repr(server.requests)


def test_vertex_paths(client_for: ClientFactory) -> None:
    with FakeGemini([TEXT, InteractionTurn(steps=[TextStep(text="v")])]) as server, httpx.Client() as http:
        client = genai.Client(
            vertexai=True,
            project="proj",
            location="us-central1",
            credentials=Credentials(token="ya29.secret"),  # type: ignore[no-untyped-call]
            http_options=types.HttpOptions(base_url=server.base_url, httpx_client=http),
        )
        assert _stream_text(client) == "abcdef"
        assert _output_text(client.interactions.create(model=MODEL, input="x")) == "v"
    paths = [r.path for r in server.requests]
    assert paths[0] == (
        f"/v1beta1/projects/proj/locations/us-central1/publishers/google/models/{MODEL}:streamGenerateContent"
    )
    assert paths[1] == "/v1beta1/projects/proj/locations/us-central1/interactions"
    assert server.requests[0].headers["authorization"] == REDACTED


def test_scenario_files(tmp_path: Path, client_for: ClientFactory) -> None:
    yaml_file = tmp_path / "s.yaml"
    yaml_file.write_text(
        "turns:\n"
        "  - kind: model\n    text: hello\n    text_chunks: 2\n"
        "  - kind: interaction\n    steps: [{type: model_output, text: hi}]\n"
        "request_faults:\n  0: {kind: rate_limit}\n"
    )
    json_file = tmp_path / "s.json"
    json_file.write_text(Script.from_file(yaml_file).model_dump_json())
    for path in (yaml_file, json_file):
        with FakeGemini(path) as server:
            client = client_for(server)
            with pytest.raises(errors.ClientError):
                _stream_text(client)
            assert _stream_text(client) == "hello"
            assert _output_text(client.interactions.create(model=MODEL, input="x")) == "hi"
            server.assert_done()


def test_play_serves_a_new_script_on_the_same_server_and_forgets_the_last(client_for: ClientFactory) -> None:
    """`play` is how runs one after another share one server (and the warm binary wired to it): the next script
    from its first turn, on the same URL and connection, with nothing of the last script's requests, faults,
    problems or stored interactions left."""
    first = TEXT.model_copy(update={"fault": Fault(kind="rate_limit", retry_delay="1s")})
    with FakeGemini([first]) as server:  # the 429 leaves its turn queued: the interaction takes it
        client = client_for(server)
        url = server.base_url
        with pytest.raises(errors.ClientError):
            _stream_text(client)
        stored = client.interactions.create(model=MODEL, input="hi", store=True)
        assert isinstance(stored, it.Interaction)
        assert stored.id is not None
        assert server.interaction(stored.id) is not None
        with contextlib.suppress(errors.APIError):
            _stream_text(client)  # no turn left: a problem
        assert server.problems
        assert server.requests
        server.play([ModelTurn(text="second script")])
        assert (server.requests, server.problems, server.base_url) == ([], [], url)
        assert server.interaction(stored.id) is None
        assert _stream_text(client) == "second script"
        assert [r.status for r in server.requests] == [200]
        server.assert_done()
