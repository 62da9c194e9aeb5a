"""The interactions translator's text citations (docs/api-tools.md): pure, over wire-shaped dicts."""

from __future__ import annotations

from typing import Any

from unified._adapters.interactions._translate import InteractionsTranslator
from unified.events import TextDelta, ToolResult, ToolUse


def events(*annotations: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"event_type": "interaction.created", "interaction": {"id": "i1", "status": "in_progress"}},
        {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}},
        {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "Answer."}},
        {
            "event_type": "step.delta",
            "index": 0,
            "delta": {"type": "text_annotation_delta", "annotations": list(annotations)},
        },
        {"event_type": "step.stop", "index": 0},
        {"event_type": "interaction.completed", "interaction": {"id": "i1", "status": "completed"}},
    ]


def feed(raw: list[dict[str, Any]]) -> list[Any]:
    translator = InteractionsTranslator()
    return [s for event in raw for s in translator.feed(event) if isinstance(s, TextDelta | ToolUse | ToolResult)]


FILE = {"type": "file_citation", "file_name": "oncall.md", "source": "Page the SRE.", "start_index": 0, "end_index": 6}
PLACE = {"type": "place_citation", "name": "Café X", "place_id": "places/abc"}
URL = {"type": "url_citation", "url": "https://e.x", "title": "E"}


def test_citations_are_one_server_side_pair_per_cited_tool() -> None:
    text, *rest = feed(events(FILE, PLACE, URL, {"type": "file_citation", "file_name": "b.md"}))
    assert isinstance(text, TextDelta)
    uses = [s for s in rest if isinstance(s, ToolUse)]
    results = {s.tool_use_id: s for s in rest if isinstance(s, ToolResult)}
    assert [u.name for u in uses] == ["file_search", "google_maps", "google_search"]
    assert all(u.server_side and u.input == {} for u in uses)
    file_result = results[uses[0].tool_use_id]
    assert file_result.server_side
    assert file_result.data == {"annotations": [FILE, {"type": "file_citation", "file_name": "b.md"}]}


def test_unknown_or_malformed_annotations_add_nothing() -> None:
    assert [type(s).__name__ for s in feed(events({"type": "speech_annotation"}))] == ["TextDelta"]
    assert [type(s).__name__ for s in feed(events())] == ["TextDelta"]
    odd = events()
    odd[3]["delta"]["annotations"] = [42, "file_citation", None, {"type": None}]
    assert [type(s).__name__ for s in feed(odd)] == ["TextDelta"]
