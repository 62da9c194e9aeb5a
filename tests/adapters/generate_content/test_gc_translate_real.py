"""The pure translator on every model turn of the second corpus (`real_recordings()`): no I/O."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import types

from tests.harness.fidelity import Recording, corpus, expected_of
from unified._adapters.generate_content._failures import failure_from_exception
from unified._adapters.generate_content._translate import GenerateContentTranslator
from unified.errors import BackendError
from unified.events import ImageOutput, TextDelta, Thinking, ToolResult, ToolUse, UnifiedEvent
from unified.testing._scenario import RecordedTurn

REAL = [r for r in corpus() if not r.name.startswith("gemini-cli-responses/")]


def translate(turn: RecordedTurn, number: int, taken: set[str]) -> tuple[GenerateContentTranslator, list[UnifiedEvent]]:
    translator = GenerateContentTranslator(turn=number, taken_ids=taken)
    chunks = turn.response if isinstance(turn.response, list) else [turn.response]
    events: list[UnifiedEvent] = []
    for chunk in chunks:
        # parsed as google-genai parses a response body (it ignores keys it does not model, e.g. turnToken)
        events += translator.feed(types.GenerateContentResponse._from_response(response=chunk, kwargs={}))
    events += translator.finish()
    return translator, events


@pytest.mark.parametrize("recording", REAL, ids=[r.name for r in REAL])
def test_every_real_turn_translates_true(recording: Recording) -> None:
    taken: set[str] = set()
    for number, turn in enumerate(recording.model_turns(), start=1):
        translator, events = translate(turn, number, taken)
        expected = expected_of([turn])
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == expected.text
        assert any(isinstance(e, Thinking) for e in events) == expected.thoughts
        local = [e for e in events if isinstance(e, ToolUse) and not e.server_side]
        assert [(e.name, e.input) for e in local] == expected.calls
        assert [(c.name, c.args) for c in translator.calls] == expected.calls
        server = [e.tool_use_id for e in events if isinstance(e, ToolUse) and e.server_side]
        assert server == [e.tool_use_id for e in events if isinstance(e, ToolResult)]
        images = [e for e in events if isinstance(e, ImageOutput) and e.data]
        assert len(images) == expected.images
        for part in translator.content().parts or []:  # the history echoes no streaming pieces
            call = part.function_call
            assert call is None or (call.partial_args is None and call.will_continue is None and call.name)
        dumped = translator.content().model_dump(mode="json", exclude_none=True)
        assert types.Content.model_validate(dumped) == translator.content()


def _chunk(*parts: dict[str, object], finish: str | None = None) -> types.GenerateContentResponse:
    candidate: dict[str, object] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return types.GenerateContentResponse.model_validate({"candidates": [candidate]})


def test_streamed_pieces_of_nested_arguments_assemble() -> None:
    translator = GenerateContentTranslator(turn=1)
    pieces = [
        {"name": "plan", "willContinue": True},
        {
            "partialArgs": [{"jsonPath": "$.steps[1].title", "stringValue": "sec", "willContinue": True}],
            "willContinue": True,
        },
        {"partialArgs": [{"jsonPath": "$.steps[1].title", "stringValue": "ond"}], "willContinue": True},
        {"partialArgs": [{"jsonPath": "$.steps[0].done", "boolValue": True}], "willContinue": True},
        {"partialArgs": [{"jsonPath": "$.count", "numberValue": 2}], "willContinue": True},
        {},
    ]
    events: list[UnifiedEvent] = []
    for piece in pieces:
        events += translator.feed(_chunk({"functionCall": piece}))
    events += translator.feed(_chunk({"text": "done"}, finish="STOP"))
    events += translator.finish()
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [(u.name, u.input) for u in uses] == [("plan", {"steps": [{"done": True}, {"title": "second"}], "count": 2})]
    assert isinstance(events[0], ToolUse)  # announced before the text that followed it
    assert len(translator.calls) == 1


def test_a_function_response_without_its_call_is_still_a_well_formed_server_side_pair() -> None:
    translator = GenerateContentTranslator(turn=1)
    events = translator.feed(_chunk({"functionResponse": {"name": "lookup", "response": {"ok": 1}}}, finish="STOP"))
    events += translator.finish()
    assert [(type(e).__name__, e.server_side) for e in events if isinstance(e, ToolUse | ToolResult)] == [
        ("ToolUse", True),
        ("ToolResult", True),
    ]
    assert translator.calls == []


def test_a_request_google_genai_refuses_is_a_typed_backend_error() -> None:
    """What echoing an unassembled streaming piece to the Developer API did: the SDK raises before sending."""
    client = genai.Client(api_key="test-key", http_options=types.HttpOptions(base_url="http://127.0.0.1:9"))
    piece = types.Part(function_call=types.FunctionCall(name="greet", will_continue=True))
    with pytest.raises(ValueError, match="will_continue") as caught:
        client.models.generate_content(model="gemini-2.5-flash", contents=[types.Content(role="model", parts=[piece])])
    failure = failure_from_exception(caught.value, "gemini-2.5-flash", 30.0)
    assert failure is not None
    assert failure.kind == "fatal"
    assert isinstance(failure.error, BackendError)
    assert failure.error.code == "backend_error"
    assert "will_continue" in str(failure.error)
    assert (
        failure_from_exception(ValueError("a bug of ours"), "gemini-2.5-flash", 30.0) is None
    )  # still reported as a bug
