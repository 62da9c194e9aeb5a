"""Each Gemini API built-in tool of docs/api-tools.md on both API backends: the real google-genai SDK
over real HTTP to an in-process FakeGemini. Each test asserts what the server received (tools,
toolConfig / tool_choice, the echoed history) and the server-side tool events of the stream."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import unified
from unified.events import Result, SessionStarted, TextDelta, ToolResult, ToolUse, UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn, ServerTool
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

BACKENDS = ("generate-content", "interactions")
GEMINI_3 = "gemini-3-flash-preview"
CREATE = {"generate-content": "generateContentStream", "interactions": "interactions.create"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.fixture
def server() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n", encoding="utf-8")
    return root


def params(server: FakeGemini, workspace: Path, backend: str, model: str, **options: Any) -> ExecuteParams:
    base: dict[str, object] = {"api_key": "test-key", "base_url": server.base_url, "retry_delay_scale": 0.001}
    if backend == "interactions":
        base["store"] = False  # every request resends the conversation: the echo is on the wire
    resume = options.pop("resume", None)
    return ExecuteParams(
        prompt=options.pop("prompt", "go"),
        backend=backend,
        model=model,
        cwd=workspace,
        resume=resume,
        backend_options={**base, **options},
    )


async def run(p: ExecuteParams) -> list[UnifiedEvent]:
    async with unified.execute(p) as stream:
        events = [event async for event in stream]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    return events


def bodies(server: FakeGemini, backend: str) -> list[dict[str, Any]]:
    return [r.body for r in server.requests_for(CREATE[backend])]


def builtin_tools(body: dict[str, Any], backend: str) -> list[Any]:
    """The request's tools other than the function declarations."""
    if backend == "generate-content":
        return [t for t in body.get("tools", []) if "functionDeclarations" not in t]
    return [t for t in body.get("tools", []) if t.get("type") != "function"]


def server_pairs(events: list[UnifiedEvent]) -> list[tuple[ToolUse, ToolResult]]:
    """Each server-side tool_use with its one tool_result, in stream order."""
    results = {e.tool_use_id: e for e in events if isinstance(e, ToolResult) and e.server_side}
    uses = [e for e in events if isinstance(e, ToolUse) and e.server_side]
    assert set(results) == {u.tool_use_id for u in uses}
    return [(u, results[u.tool_use_id]) for u in uses]


def text_of(events: list[UnifiedEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


# -- google_search, and server-side tool invocations round-tripped -----------------------------------

SEARCH = ServerTool(
    tool="google_search",
    id="srch-1",
    arguments={"queries": ["weather in Paris"]},
    response={"search_suggestions": "<div>weather</div>"},
    interaction_result="<div>weather</div>",
    signature="sig-search",
)
WEB_GROUNDING = {
    "webSearchQueries": ["weather in Paris"],
    "groundingChunks": [{"web": {"uri": "https://example.org/paris", "title": "Paris weather"}}],
}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_google_search_invocations_are_echoed_and_resumed(
    server: FakeGemini, workspace: Path, backend: str
) -> None:
    server.add(
        ModelTurn(
            server_tools=[SEARCH],
            function_calls=[FunctionCall(name="read_file", args={"file_path": "a.txt"}, id="c1", signature="sig-c")],
            grounding=WEB_GROUNDING,
        ),
        ModelTurn(text="Sunny, and a.txt says alpha."),
        ModelTurn(text="Still sunny."),
    )
    events = await run(params(server, workspace, backend, GEMINI_3, google_search=True))
    pairs = server_pairs(events)
    search = pairs[0]
    assert (search[0].tool_use_id, search[0].name) == ("srch-1", "google_search")
    assert search[0].input["queries"] == ["weather in Paris"]
    assert "weather" in str(search[1].output)
    local = [e for e in events if isinstance(e, ToolUse) and not e.server_side]
    assert [(u.name, u.tool_use_id) for u in local] == [("read_file", "c1")]
    first, second = bodies(server, backend)
    if backend == "generate-content":
        assert builtin_tools(first, backend) == [{"googleSearch": {}}]
        assert first["toolConfig"] == {"includeServerSideToolInvocations": True}
        grounded = pairs[1]  # groundingMetadata: a pair of its own, the chunks in the result's data
        assert grounded[0].name == "google_search"
        assert grounded[1].data is not None
        assert grounded[1].data["grounding_chunks"] == [
            {"web": {"uri": "https://example.org/paris", "title": "Paris weather"}}
        ]
        model_turn = second["contents"][1]
        assert model_turn["role"] == "model"
        call, response, function_call = model_turn["parts"]
        # google-genai writes the echoed part's fields in snake case; the API reads both casings
        assert call["toolCall"] == {"id": "srch-1", "tool_type": "GOOGLE_SEARCH_WEB", "args": SEARCH.arguments}
        assert call["thoughtSignature"] == b64("sig-search")
        assert response["toolResponse"]["id"] == "srch-1"
        assert function_call["functionCall"]["id"] == "c1"
        assert function_call["thoughtSignature"] == b64("sig-c")
    else:
        assert builtin_tools(first, backend) == [{"type": "google_search"}]
        steps = second["input"]
        call = next(s for s in steps if s["type"] == "google_search_call")
        assert (call["id"], call["signature"], call["arguments"]) == ("srch-1", b64("sig-search"), SEARCH.arguments)
        result = next(s for s in steps if s["type"] == "google_search_result")
        assert (result["call_id"], result["signature"]) == ("srch-1", b64("sig-search"))
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.short_id is not None

    await run(params(server, workspace, backend, GEMINI_3, google_search=True, resume=started.short_id, prompt="again"))
    resumed = bodies(server, backend)[2]
    if backend == "generate-content":
        parts = [p for c in resumed["contents"] for p in c["parts"]]
        echoed = next(p for p in parts if "toolCall" in p)
        assert (echoed["toolCall"]["id"], echoed["thoughtSignature"]) == ("srch-1", b64("sig-search"))
        assert any(p.get("toolResponse", {}).get("id") == "srch-1" for p in parts)
    else:
        steps = resumed["input"]
        echoed = next(s for s in steps if s["type"] == "google_search_call")
        assert (echoed["id"], echoed["signature"]) == ("srch-1", b64("sig-search"))
    server.assert_done()


async def test_no_invocation_parts_without_function_calling(server: FakeGemini, workspace: Path) -> None:
    """Built-in tools alone need no invocations: none is asked for, and (as the API) none comes back."""
    server.add(ModelTurn(server_tools=[SEARCH], text="Sunny.", grounding=WEB_GROUNDING))
    events = await run(params(server, workspace, "generate-content", GEMINI_3, google_search=True, local_tools=False))
    (body,) = bodies(server, "generate-content")
    assert "toolConfig" not in body
    assert [u.name for u, _ in server_pairs(events)] == ["google_search"]  # from the grounding only


# -- google_maps with the user's location ------------------------------------------------------------

MAPS = ServerTool(
    tool="google_maps",
    id="map-1",
    arguments={"queries": ["cafe near me"]},
    response={"places": [{"place_id": "places/abc"}]},
    interaction_result=[
        {"places": [{"name": "Café X", "place_id": "places/abc", "url": "https://maps.google.com/?cid=1"}]}
    ],
)
MAPS_GROUNDING = {
    "webSearchQueries": ["cafe near me"],
    "groundingChunks": [
        {"maps": {"uri": "https://maps.google.com/?cid=1", "title": "Café X", "placeId": "places/abc"}}
    ],
    "googleMapsWidgetContextToken": "widget-1",
}
PLACE_CITATION = {
    "type": "place_citation",
    "name": "Café X",
    "place_id": "places/abc",
    "url": "https://maps.google.com/?cid=1",
    "start_index": 4,
    "end_index": 11,
}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_google_maps_with_location_and_widget(server: FakeGemini, workspace: Path, backend: str) -> None:
    server.add(
        ModelTurn(server_tools=[MAPS], text="Try Café X.", grounding=MAPS_GROUNDING, annotations=[PLACE_CITATION])
    )
    options = {
        "google_maps": {"enable_widget": True},
        "user_location": {"latitude": 48.8566, "longitude": 2.3522},
        "local_tools": False,
    }
    events = await run(params(server, workspace, backend, "gemini-2.5-flash", **options))
    pairs = server_pairs(events)
    use, result = pairs[0]
    assert use.name == "google_maps"
    assert use.input["queries"] == ["cafe near me"]
    assert result.data is not None
    (body,) = bodies(server, backend)
    if backend == "generate-content":
        assert len(pairs) == 1  # no invocations asked: the grounding metadata is all there is
        assert builtin_tools(body, backend) == [{"googleMaps": {"enableWidget": True}}]
        assert body["toolConfig"] == {"retrievalConfig": {"lat_lng": {"latitude": 48.8566, "longitude": 2.3522}}}
        assert result.data["grounding_chunks"][0]["maps"]["place_id"] == "places/abc"
        assert result.data["google_maps_widget_context_token"] == "widget-1"
    else:
        assert builtin_tools(body, backend) == [
            {"type": "google_maps", "enable_widget": True, "latitude": 48.8566, "longitude": 2.3522}
        ]
        assert use.tool_use_id == "map-1"
        assert "places/abc" in str(result.output)
        cited_use, cited = pairs[1]  # the text's place citations, as a pair of their own
        assert cited_use.name == "google_maps"
        assert cited.data == {"annotations": [PLACE_CITATION]}
    assert text_of(events) == "Try Café X."


# -- url_context --------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
async def test_url_context(server: FakeGemini, workspace: Path, backend: str) -> None:
    fetch = ServerTool(
        tool="url_context",
        id="url-1",
        arguments={"urls": ["https://example.org/"]},
        response={"url_metadata": [{"retrieved_url": "https://example.org/", "status": "success"}]},
        interaction_result=[{"url": "https://example.org/", "status": "success"}],
        signature="sig-url",
    )
    server.add(ModelTurn(server_tools=[fetch], text="The page says hello."))
    events = await run(params(server, workspace, backend, GEMINI_3, url_context=True))
    ((use, result),) = server_pairs(events)
    assert (use.tool_use_id, use.name, use.input) == ("url-1", "url_context", {"urls": ["https://example.org/"]})
    assert "https://example.org/" in str(result.output)
    (body,) = bodies(server, backend)
    expected: list[dict[str, Any]] = (
        [{"urlContext": {}}] if backend == "generate-content" else [{"type": "url_context"}]
    )
    assert builtin_tools(body, backend) == expected


# -- code_execution -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
async def test_code_execution(server: FakeGemini, workspace: Path, backend: str) -> None:
    code = ServerTool(
        tool="code_execution",
        id="code-1",
        arguments={"code": "print(6 * 7)"},
        response={"outcome": "OUTCOME_OK", "output": "42\n"},
    )
    server.add(ModelTurn(server_tools=[code], text="It is 42."))
    events = await run(params(server, workspace, backend, "gemini-2.5-flash", code_execution=True, local_tools=False))
    ((use, result),) = server_pairs(events)
    assert (use.tool_use_id, use.name) == ("code-1", "code_execution")
    assert use.input["code"] == "print(6 * 7)"
    assert "42" in str(result.output)
    assert not result.is_error
    (body,) = bodies(server, backend)
    expected: list[dict[str, Any]] = (
        [{"codeExecution": {}}] if backend == "generate-content" else [{"type": "code_execution"}]
    )
    assert builtin_tools(body, backend) == expected


# -- file_search --------------------------------------------------------------------------------------

FILE_SEARCH = {"store_names": ["fileSearchStores/handbook-1"], "metadata_filter": 'team = "infra"', "top_k": 3}
RETRIEVED = {
    "groundingChunks": [
        {
            "retrievedContext": {
                "title": "oncall.md",
                "text": "Page the SRE on call.",
                "fileSearchStore": "fileSearchStores/handbook-1",
            }
        }
    ],
    "groundingSupports": [{"segment": {"endIndex": 12, "text": "Page the SRE"}, "groundingChunkIndices": [0]}],
}
FILE_CITATION = {
    "type": "file_citation",
    "file_name": "oncall.md",
    "source": "Page the SRE on call.",
    "custom_metadata": {"team": "infra"},
    "start_index": 0,
    "end_index": 12,
}


@pytest.mark.parametrize("backend", BACKENDS)
async def test_file_search_with_function_calling(server: FakeGemini, workspace: Path, backend: str) -> None:
    """Gemini 3 may combine File Search with function calling (not with other built-in tools)."""
    lookup = ServerTool(tool="file_search", id="fs-1", arguments={"query": "who to page"}, signature="sig-fs")
    server.add(
        ModelTurn(server_tools=[lookup], text="Page the SRE on call.", grounding=RETRIEVED, annotations=[FILE_CITATION])
    )
    events = await run(params(server, workspace, backend, GEMINI_3, file_search=FILE_SEARCH))
    pairs = server_pairs(events)
    assert pairs[0][0].tool_use_id == "fs-1"
    assert pairs[0][0].name == "file_search"
    (body,) = bodies(server, backend)
    if backend == "generate-content":
        assert builtin_tools(body, backend) == [
            {
                "fileSearch": {
                    "file_search_store_names": ["fileSearchStores/handbook-1"],
                    "metadata_filter": 'team = "infra"',
                    "top_k": 3,
                }
            }
        ]
        assert body["toolConfig"] == {"includeServerSideToolInvocations": True}
        grounded_use, grounded = pairs[1]
        assert (grounded_use.name, grounded_use.input) == ("file_search", {"stores": ["fileSearchStores/handbook-1"]})
        assert grounded.data is not None
        chunk = grounded.data["grounding_chunks"][0]["retrieved_context"]
        assert (chunk["title"], chunk["text"]) == ("oncall.md", "Page the SRE on call.")
    else:
        assert builtin_tools(body, backend) == [
            {
                "type": "file_search",
                "file_search_store_names": ["fileSearchStores/handbook-1"],
                "metadata_filter": 'team = "infra"',
                "top_k": 3,
            }
        ]
        cited_use, cited = pairs[1]
        assert cited_use.name == "file_search"
        assert cited.data == {"annotations": [FILE_CITATION]}


# -- function-calling modes ---------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("mode", "names"), [("auto", ()), ("none", ()), ("any", ("read_file",)), ("validated", ("read_file", "glob"))]
)
async def test_function_calling_mode_reaches_the_wire(
    server: FakeGemini, workspace: Path, backend: str, mode: str, names: tuple[str, ...]
) -> None:
    server.add(ModelTurn(text="done"))
    calling = {"mode": mode, "allowed_function_names": list(names)}
    await run(params(server, workspace, backend, GEMINI_3, function_calling=calling))
    (body,) = bodies(server, backend)
    if backend == "generate-content":
        expected: dict[str, Any] = {"mode": mode.upper()}
        if names:
            expected["allowedFunctionNames"] = list(names)
        assert body["toolConfig"] == {"functionCallingConfig": expected}
    else:
        choice = body["generation_config"]["tool_choice"]
        assert choice == ({"allowed_tools": {"mode": mode, "tools": list(names)}} if names else mode)


# -- Vertex AI: no server-side tool invocations -------------------------------------------------------


@pytest.mark.parametrize("how", ["option", "environment"])
async def test_vertex_sends_builtins_with_functions_without_invocations(
    server: FakeGemini, workspace: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """google-genai refuses includeServerSideToolInvocations on Vertex AI: it is left out, with a warning."""
    server.add(ModelTurn(text="Sunny."))
    options: dict[str, Any] = {"google_search": True}
    if how == "option":
        options["vertexai"] = True
    else:
        monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "true")
    events = await run(params(server, workspace, "generate-content", GEMINI_3, **options))
    warnings = [e.message for e in events if e.type == "warning"]
    assert any("[rule builtins_with_functions_on_vertex]" in w for w in warnings)
    (request,) = server.requests_for("generateContentStream")
    assert request.path.startswith("/v1beta1/publishers/google/models/")  # Vertex AI express mode
    assert builtin_tools(request.body, "generate-content") == [{"googleSearch": {}}]
    assert "toolConfig" not in request.body
