"""The generate-content translator's built-in tool pieces (docs/api-tools.md): pure, no I/O."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from unified._adapters.generate_content._translate import GenerateContentTranslator, grounding_sources, server_tool_name
from unified.events import ToolResult, ToolUse


def chunk(parts: list[dict[str, Any]], **candidate: Any) -> types.GenerateContentResponse:
    return types.GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"role": "model", "parts": parts}, **candidate}]}
    )


def grounding(**meta: Any) -> types.GroundingMetadata:
    return types.GroundingMetadata.model_validate(meta)


@pytest.mark.parametrize(
    ("tool_type", "name"),
    [
        ("GOOGLE_SEARCH_WEB", "google_search"),
        ("GOOGLE_SEARCH_IMAGE", "google_search"),
        ("GOOGLE_MAPS", "google_maps"),
        ("URL_CONTEXT", "url_context"),
        ("FILE_SEARCH", "file_search"),
        ("MEDIA_PROCESSING", "media_processing"),
        (None, "server_tool"),
    ],
)
def test_invocation_parts_are_named_as_their_options(tool_type: str | None, name: str) -> None:
    assert server_tool_name(types.ToolType(tool_type) if tool_type else None) == name


def test_an_invocation_pair_keeps_its_id_and_its_part_for_the_echo() -> None:
    translator = GenerateContentTranslator(turn=1)
    call = {
        "toolCall": {"id": "t1", "toolType": "GOOGLE_MAPS", "args": {"queries": ["cafe"]}},
        "thoughtSignature": "c2ln",
    }
    response = {"toolResponse": {"id": "t1", "toolType": "GOOGLE_MAPS", "response": {"places": []}}}
    use, result = translator.feed(chunk([call, response], finishReason="STOP"))
    assert isinstance(use, ToolUse)
    assert isinstance(result, ToolResult)
    assert (use.tool_use_id, use.name, use.input, use.server_side) == ("t1", "google_maps", {"queries": ["cafe"]}, True)
    assert (result.tool_use_id, result.server_side) == ("t1", True)
    echoed = translator.content().model_dump(mode="json", by_alias=True, exclude_none=True)["parts"]
    assert echoed[0]["thoughtSignature"] == "c2ln"
    assert echoed[0]["toolCall"]["id"] == "t1"
    assert echoed[1]["toolResponse"]["id"] == "t1"


def test_each_grounding_source_is_its_own_pair() -> None:
    meta = grounding(
        webSearchQueries=["coffee paris"],
        groundingChunks=[
            {"web": {"uri": "https://e.x", "title": "E"}},
            {"maps": {"title": "Café X", "placeId": "places/abc"}},
            {"retrievedContext": {"title": "menu.md", "text": "espresso", "fileSearchStore": "fileSearchStores/s1"}},
        ],
    )
    sources = grounding_sources(meta)
    assert [(name, args) for name, args, _ in sources] == [
        ("google_search", {"queries": ["coffee paris"]}),
        ("google_maps", {"queries": ["coffee paris"]}),
        ("file_search", {"stores": ["fileSearchStores/s1"]}),
    ]
    assert all(len(output["grounding_chunks"]) == 3 for _, _, output in sources)  # supports' indices stay valid


@pytest.mark.parametrize(
    ("meta", "names"),
    [
        ({"webSearchQueries": ["q"]}, ["google_search"]),
        ({"googleMapsWidgetContextToken": "w"}, ["google_maps"]),
        ({"groundingChunks": [{"retrievedContext": {"text": "no store named"}}]}, ["file_search"]),
        ({}, []),
    ],
)
def test_grounding_without_chunks_of_every_kind(meta: dict[str, Any], names: list[str]) -> None:
    sources = grounding_sources(grounding(**meta))
    assert [name for name, _, _ in sources] == names
    if names == ["file_search"]:
        assert sources[0][1] == {}  # no store cited: no store guessed


def test_grounding_pairs_come_at_the_end_of_the_turn() -> None:
    translator = GenerateContentTranslator(turn=1)
    meta = {"groundingChunks": [{"maps": {"title": "Café X", "placeId": "places/abc"}}]}
    assert [
        type(e).__name__
        for e in translator.feed(chunk([{"text": "Try it."}], finishReason="STOP", groundingMetadata=meta))
    ] == ["TextDelta"]
    use, result = translator.finish()
    assert isinstance(use, ToolUse)
    assert isinstance(result, ToolResult)
    assert (use.name, result.tool_use_id) == ("google_maps", use.tool_use_id)
    assert result.data is not None
    assert result.data["grounding_chunks"][0]["maps"]["place_id"] == "places/abc"
