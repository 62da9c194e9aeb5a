"""The Interactions translator on synthesized native sequences: current dialect, legacy dialect, resume."""

from __future__ import annotations

import base64
from typing import Any

from unified._adapters.interactions._translate import (
    UNPARSED_ARGUMENTS,
    FunctionCall,
    InteractionsTranslator,
    StatusChange,
    StreamFailure,
    translate,
    usage_from_wire,
)
from unified.events import ImageOutput, TextDelta, Thinking, ToolResult, ToolUse, Usage, WarningEvent


def created(iid: str = "i1", status: str = "in_progress") -> dict[str, Any]:
    return {"event_type": "interaction.created", "interaction": {"id": iid, "status": status}, "event_id": "e0"}


def completed(status: str = "completed", usage: dict[str, int] | None = None) -> dict[str, Any]:
    interaction: dict[str, Any] = {"id": "i1", "status": status}
    if usage:
        interaction["usage"] = usage
    return {"event_type": "interaction.completed", "interaction": interaction}


def start(index: int, step: dict[str, Any]) -> dict[str, Any]:
    return {"event_type": "step.start", "index": index, "step": step}


def delta(index: int, data: dict[str, Any]) -> dict[str, Any]:
    return {"event_type": "step.delta", "index": index, "delta": data}


def stop(index: int, usage: dict[str, int] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {"event_type": "step.stop", "index": index}
    if usage:
        event["usage"] = usage
    return event


def brief(signal: object) -> object:
    """Events without their timestamps, for comparison."""
    if isinstance(signal, (TextDelta, Thinking)):
        return (signal.type, signal.text, getattr(signal, "signature", None))
    return signal


def test_text_and_thinking_deltas_stream_in_order() -> None:
    signals = translate(
        [
            created(),
            start(0, {"type": "thought"}),
            delta(0, {"type": "thought_summary", "content": {"type": "text", "text": "Let me "}}),
            delta(0, {"type": "thought_summary", "content": {"type": "text", "text": "think."}}),
            delta(0, {"type": "thought_signature", "signature": "c2ln"}),
            stop(0),
            start(1, {"type": "model_output", "content": []}),
            delta(1, {"type": "text", "text": "Hel"}),
            delta(1, {"type": "text", "text": "lo"}),
            stop(1),
            completed(usage={"total_input_tokens": 7, "total_output_tokens": 2, "total_thought_tokens": 4}),
        ]
    )
    assert [brief(s) for s in signals] == [
        StatusChange("i1", "in_progress"),
        ("thinking", "Let me ", None),
        ("thinking", "think.", None),
        ("thinking", "", "c2ln"),
        ("text_delta", "Hel", None),
        ("text_delta", "lo", None),
        StatusChange("i1", "completed"),
    ]
    assert not any(s.replace for s in signals if isinstance(s, Thinking))


def test_usage_prefers_the_interaction_total_over_step_figures() -> None:
    translator = InteractionsTranslator()
    for event in [created(), start(0, {"type": "model_output"}), stop(0, usage={"total_output_tokens": 3})]:
        translator.feed(event)
    assert translator.usage.output_tokens == 3
    translator.feed(completed(usage={"total_input_tokens": 10, "total_output_tokens": 5, "total_cached_tokens": 4}))
    assert translator.usage == Usage(input_tokens=10, output_tokens=5, cached_tokens=4)


def test_step_usage_is_a_running_total_not_summed() -> None:
    translator = InteractionsTranslator()
    for event in [
        created(),
        start(0, {"type": "model_output"}),
        stop(0, usage={"total_input_tokens": 10, "total_output_tokens": 3}),
        start(1, {"type": "model_output"}),
        stop(1, usage={"total_input_tokens": 10, "total_output_tokens": 8}),
        completed(),
    ]:
        translator.feed(event)
    assert translator.usage == Usage(input_tokens=10, output_tokens=8)


def test_usage_from_wire_maps_every_field() -> None:
    wire = {
        "total_input_tokens": 1,
        "total_output_tokens": 2,
        "total_thought_tokens": 3,
        "total_cached_tokens": 4,
        "total_tool_use_tokens": 5,
        "total_tokens": 11,
    }
    assert usage_from_wire(wire) == Usage(
        input_tokens=1, output_tokens=2, thinking_tokens=3, cached_tokens=4, tool_use_tokens=5
    )
    assert usage_from_wire(None) == Usage()


def test_function_call_with_complete_arguments() -> None:
    signals = translate(
        [
            created(),
            start(0, {"type": "function_call", "id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}),
            stop(0),
            completed("requires_action"),
        ]
    )
    uses = [s for s in signals if isinstance(s, ToolUse)]
    assert [(u.tool_use_id, u.name, u.input, u.server_side) for u in uses] == [
        ("c1", "read_file", {"path": "a.txt"}, False)
    ]
    assert FunctionCall("c1", "read_file", {"path": "a.txt"}) in signals
    assert signals[-1] == StatusChange("i1", "requires_action")


def test_function_call_arguments_assembled_from_deltas() -> None:
    signals = translate(
        [
            created(),
            start(0, {"type": "function_call", "id": "c1", "name": "write_file", "arguments": {}}),
            delta(0, {"type": "arguments_delta", "arguments": '{"path": "a.t'}),
            delta(0, {"type": "arguments_delta", "arguments": 'xt", "content": "hi"}'}),
            stop(0),
            completed("requires_action"),
        ]
    )
    calls = [s for s in signals if isinstance(s, FunctionCall)]
    assert calls == [FunctionCall("c1", "write_file", {"path": "a.txt", "content": "hi"})]


def test_broken_argument_json_reaches_the_tool_as_data() -> None:
    signals = translate(
        [
            start(0, {"type": "function_call", "id": "c1", "name": "x"}),
            delta(0, {"type": "arguments_delta", "arguments": "{"}),
            stop(0),
        ]
    )
    call = next(s for s in signals if isinstance(s, FunctionCall))
    assert call.arguments == {UNPARSED_ARGUMENTS: "{"}


def test_parallel_calls_keep_their_order_and_ids() -> None:
    translator = InteractionsTranslator()
    for event in [
        created(),
        start(0, {"type": "function_call", "id": "a", "name": "ls", "arguments": {}}),
        start(1, {"type": "function_call", "id": "b", "name": "glob", "arguments": {"pattern": "*"}}),
        stop(0),
        stop(1),
        completed("requires_action"),
    ]:
        translator.feed(event)
    assert [c.id for c in translator.calls] == ["a", "b"]


def test_server_side_tools_become_server_side_tool_events() -> None:
    signals = translate(
        [
            created(),
            start(0, {"type": "google_search_call", "id": "s1", "arguments": {"queries": ["q"]}}),
            stop(0),
            start(1, {"type": "google_search_result", "call_id": "s1", "result": [{"url": "u", "title": "t"}]}),
            stop(1),
            start(
                2, {"type": "code_execution_call", "id": "x1", "arguments": {"code": "print(1)", "language": "python"}}
            ),
            stop(2),
            start(3, {"type": "code_execution_result", "call_id": "x1", "result": "1\n"}),
            stop(3),
            start(4, {"type": "url_context_call", "id": "u1", "arguments": {"urls": ["https://e.x"]}}),
            stop(4),
            start(
                5, {"type": "url_context_result", "call_id": "u1", "result": [{"url": "https://e.x", "status": "ok"}]}
            ),
            stop(5),
            start(
                6, {"type": "mcp_server_tool_call", "id": "m1", "name": "lookup", "server_name": "kb", "arguments": {}}
            ),
            stop(6),
            start(7, {"type": "mcp_server_tool_result", "call_id": "m1", "result": "found", "name": "lookup"}),
            stop(7),
            start(8, {"type": "file_search_call", "id": "f1"}),
            stop(8),
            start(9, {"type": "file_search_result", "call_id": "f1", "result": [{"text": "doc"}]}),
            stop(9),
            completed(),
        ]
    )
    tools = [s for s in signals if isinstance(s, (ToolUse, ToolResult))]
    assert all(t.server_side for t in tools)
    assert [(type(t).__name__, t.tool_use_id) for t in tools] == [
        ("ToolUse", "s1"),
        ("ToolResult", "s1"),
        ("ToolUse", "x1"),
        ("ToolResult", "x1"),
        ("ToolUse", "u1"),
        ("ToolResult", "u1"),
        ("ToolUse", "m1"),
        ("ToolResult", "m1"),
        ("ToolUse", "f1"),
        ("ToolResult", "f1"),
    ]
    names = [t.name for t in tools if isinstance(t, ToolUse)]
    assert names == ["google_search", "code_execution", "url_context", "kb/lookup", "file_search"]
    assert tools[0].input == {"queries": ["q"]}
    assert tools[3].output == "1\n"  # type: ignore[union-attr]
    assert not any(isinstance(s, FunctionCall) for s in signals)


def test_server_call_arguments_streamed_as_typed_deltas() -> None:
    signals = translate(
        [
            start(0, {"type": "google_search_call", "id": "s1", "arguments": {}}),
            delta(0, {"type": "google_search_call", "arguments": {"queries": ["a", "b"]}}),
            stop(0),
            start(1, {"type": "code_execution_result", "call_id": "s1", "result": ""}),
            delta(1, {"type": "code_execution_result", "result": "par"}),
            delta(1, {"type": "code_execution_result", "result": "tial"}),
            stop(1),
        ]
    )
    use = next(s for s in signals if isinstance(s, ToolUse))
    result = next(s for s in signals if isinstance(s, ToolResult))
    assert use.input == {"queries": ["a", "b"]}
    assert result.output == "partial"


def test_result_without_a_visible_call_is_announced_first() -> None:
    signals = translate([start(0, {"type": "google_search_result", "call_id": "s9", "result": []}), stop(0)])
    assert [type(s).__name__ for s in signals] == ["ToolUse", "ToolResult"]
    assert isinstance(signals[0], ToolUse)
    assert signals[0].server_side


def test_annotations_and_signatures_are_kept_in_the_model_steps() -> None:
    translator = InteractionsTranslator()
    citation = {"type": "url_citation", "url": "https://e.x", "start_index": 0, "end_index": 2}
    for event in [
        created(),
        start(0, {"type": "thought", "summary": []}),
        delta(0, {"type": "thought_signature", "signature": "U0lH"}),
        stop(0),
        start(1, {"type": "model_output", "content": []}),
        delta(1, {"type": "text", "text": "Hi"}),
        delta(1, {"type": "text_annotation_delta", "annotations": [citation]}),
        stop(1),
        completed(),
    ]:
        translator.feed(event)
    assert translator.model_steps() == [
        {"type": "thought", "summary": [], "signature": "U0lH"},
        {"type": "model_output", "content": [{"type": "text", "text": "Hi", "annotations": [citation]}]},
    ]


def test_error_event_is_a_failure_signal() -> None:
    signals = translate([created(), {"event_type": "error", "error": {"code": "internal", "message": "boom"}}])
    assert signals[-1] == StreamFailure("internal", "boom")
    envelope = {"error": {"code": 429, "message": "quota gone", "status": "RESOURCE_EXHAUSTED"}}
    assert translate([envelope])[-1] == StreamFailure("RESOURCE_EXHAUSTED", "quota gone")  # skipped before


def test_open_steps_are_closed_by_the_completed_event() -> None:
    signals = translate(
        [created(), start(0, {"type": "function_call", "id": "c1", "name": "ls"}), completed("requires_action")]
    )
    assert [type(s).__name__ for s in signals] == ["StatusChange", "ToolUse", "FunctionCall", "StatusChange"]


def test_unknown_event_kinds_are_ignored() -> None:
    assert translate([{"event_type": "interaction.future_thing", "x": 1}]) == []


def test_legacy_dialect_translates_like_the_current_one() -> None:
    signals = translate(
        [
            {"event_type": "interaction.start", "interaction": {"id": "old1", "status": "in_progress"}},
            {"event_type": "content.start", "index": 0, "content": {"type": "thought"}},
            {
                "event_type": "content.delta",
                "index": 0,
                "delta": {"type": "thought_summary", "content": {"text": "hm"}},
            },
            {"event_type": "content.stop", "index": 0},
            {"event_type": "content.start", "index": 1, "content": {"type": "text"}},
            {"event_type": "content.delta", "index": 1, "delta": {"type": "text", "text": "Hi"}},
            {"event_type": "content.stop", "index": 1},
            {"event_type": "content.start", "index": 2, "content": {"type": "function_call"}},
            {
                "event_type": "content.delta",
                "index": 2,
                "delta": {"type": "function_call", "id": "c1", "name": "ls", "arguments": {"dir": "."}},
            },
            {"event_type": "content.stop", "index": 2},
            {
                "event_type": "interaction.complete",
                "interaction": {"id": "old1", "status": "requires_action", "usage": {"total_output_tokens": 3}},
            },
        ]
    )
    kinds = [type(s).__name__ for s in signals]
    assert kinds == ["StatusChange", "Thinking", "TextDelta", "ToolUse", "FunctionCall", "StatusChange"]
    assert FunctionCall("c1", "ls", {"dir": "."}) in signals
    assert signals[-1] == StatusChange("old1", "requires_action")


def test_legacy_deltas_without_a_start() -> None:
    translator = InteractionsTranslator()
    signals = translator.feed({"event_type": "content.delta", "index": 0, "delta": {"type": "text", "text": "x"}})
    assert [type(s).__name__ for s in signals] == ["TextDelta"]
    assert translator.legacy


def test_a_polled_interaction_replays_only_new_steps() -> None:
    translator = InteractionsTranslator()
    first = translator.feed_interaction(
        {
            "id": "bg",
            "status": "in_progress",
            "steps": [{"type": "thought", "summary": [{"type": "text", "text": "plan"}]}],
        }
    )
    assert [type(s).__name__ for s in first] == ["StatusChange", "Thinking"]
    second = translator.feed_interaction(
        {
            "id": "bg",
            "status": "completed",
            "usage": {"total_output_tokens": 9},
            "steps": [
                {"type": "thought", "summary": [{"type": "text", "text": "plan"}]},
                {"type": "model_output", "content": [{"type": "text", "text": "report"}]},
            ],
        }
    )
    assert [type(s).__name__ for s in second] == ["TextDelta", "StatusChange"]
    assert translator.usage.output_tokens == 9


def test_status_updates_are_reported_once_each() -> None:
    translator = InteractionsTranslator()
    assert translator.feed(created()) == [StatusChange("i1", "in_progress")]
    update = {"event_type": "interaction.status_update", "interaction_id": "i1", "status": "in_progress"}
    assert translator.feed(update) == []
    cont = {**update, "status": "requires_continuation", "continuation_token": "tok"}
    assert translator.feed(cont) == [StatusChange("i1", "requires_continuation", "tok")]


PNG_DATA = base64.b64encode(b"\x89PNG" + bytes(66)).decode()  # 70 bytes, base64 with padding


def test_a_generated_image_is_an_image_output_in_either_dialect_and_other_media_a_warning() -> None:
    """An image reaches the caller with its bytes (or its uri), as on generate-content; media no event kind
    carries (audio), or an image whose base64 cannot be read, is an output_not_shown warning."""
    image = {"type": "image", "data": PNG_DATA, "mime_type": "image/png"}
    current = translate(
        [
            created(),
            start(0, {"type": "model_output"}),
            delta(0, {"type": "text", "text": "Here it is."}),
            delta(0, image),
            stop(0),
            start(1, {"type": "model_output", "content": [{"type": "image", "uri": "gs://b/cat.png"}]}),
            stop(1),
            start(2, {"type": "model_output"}),
            delta(2, {"type": "audio", "data": PNG_DATA, "mime_type": "audio/wav"}),
            delta(2, {"type": "image", "data": "not base64!", "mime_type": "image/png"}),
            stop(2),
            completed(),
        ]
    )
    legacy = translate(
        [
            {"event_type": "interaction.start", "interaction": {"id": "i1", "status": "in_progress"}},
            {"event_type": "content.start", "index": 0, "content": {"type": "image"}},
            {"event_type": "content.delta", "index": 0, "delta": image},
            {"event_type": "content.stop", "index": 0},
            {"event_type": "interaction.complete", "interaction": {"id": "i1", "status": "completed"}},
        ]
    )
    images = [(s.mime_type, s.data, s.uri, s.size_bytes) for s in current if isinstance(s, ImageOutput)]
    assert images == [
        ("image/png", base64.b64decode(PNG_DATA), None, 70),
        ("image", None, "gs://b/cat.png", None),
    ]
    said = [s.message for s in current if isinstance(s, WarningEvent) and s.code == "output_not_shown"]
    assert said == [
        "the model generated audio/wav (70 bytes), which no event carries: "
        "it is kept in the interaction on the server, not shown",
        "the model generated image/png (8 bytes), which no event carries: "
        "it is kept in the interaction on the server, not shown",
    ]
    assert [s.text for s in current if isinstance(s, TextDelta)] == ["Here it is."]
    assert [(s.mime_type, s.data) for s in legacy if isinstance(s, ImageOutput)] == [images[0][:2]]
