"""Every real recording of both corpora plays true through the generate-content backend (FakeGemini in-process),
and the fidelity checker itself catches what it exists to catch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.fidelity import (
    IMAGES_DROPPED_BY_CLI,
    STREAMED_ARGUMENTS_UNKNOWN_TO_CLI,
    Expected,
    Recording,
    Verdict,
    check_run,
    corpus,
    declared_differences,
    expected_of,
    play,
    render_report,
)
from tests.harness.recordings import real_recordings, real_recordings_manifest, recordings
from unified.events import (
    ErrorEvent,
    ImageOutput,
    Result,
    SessionStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    Usage,
    WarningEvent,
)
from unified.testing._scenario import RecordedTurn, Script

CORPUS = corpus()
BY_NAME = {r.name: r for r in CORPUS}
ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""The whole corpus once: the trio path of the same loop is covered by the sample below."""


def test_both_corpora_ship_with_their_manifest_and_licence_note() -> None:
    assert len(recordings()) == 16
    assert len(real_recordings()) == 94
    assert all(path.is_file() for path in real_recordings())
    assert {entry["licence"] for entry in real_recordings_manifest()} == {"Apache-2.0"}
    readme = (real_recordings()[0].parents[1] / "README.md").read_text()
    assert "Apache-2.0" in readme
    assert len(CORPUS) == 110


@ASYNCIO_ONLY
@pytest.mark.anyio
@pytest.mark.parametrize("name", list(BY_NAME))
async def test_recording_plays_true_on_generate_content(name: str, tmp_path: Path) -> None:
    verdict = await play(BY_NAME[name], "generate-content", tmp_path)
    assert verdict.problems == []
    assert verdict.served == verdict.turns > 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name",
    [
        "js-genai/Client_Tests_generateContentStream_partial_function_calling_Vertex_AI_should_stream_generate_content_enabled_streamFunctionCallArguments",
        "js-genai/Client_Tests_server_side_MCP_server_ML_Dev_should_call_server_side_MCP_server__stream",
    ],
)
async def test_a_sample_plays_true_on_both_event_loops(name: str, tmp_path: Path) -> None:
    verdict = await play(BY_NAME[name], "generate-content", tmp_path)
    assert verdict.problems == []


PARTIAL = (
    "js-genai/MCP_related_client_Tests_generateContentStream_with_streamFunctionCallingArguments_enabled_Vertex_AI_"
    "should_stream_arguments_when_afc_is_disabled_explicitly"
)
ECHOED = "js-genai/Chats_Tests_chats_function_calling_Vertex_AI_with_streaming_function_calling_arguments_stream"
MCP = "js-genai/Chats_Tests_sendMessage_multiple_messages_with_server_side_MCP_tools_stream"
IMAGE = "js-genai/Client_Tests_generateContentStream_ML_Dev_should_stream_generate_content_with_image_output"
EMPTY = (
    "js-genai/Client_Tests_generateContentStream_ML_Dev_should_return_the_headers_in_the_sdkHttpResponse_for_each_chunk"
)


def _events(verdict_events: list[list[UnifiedEvent]]) -> list[UnifiedEvent]:
    return [e for run in verdict_events for e in run]


@pytest.mark.anyio
async def test_streamed_arguments_become_one_call_with_all_its_arguments(tmp_path: Path) -> None:
    verdict = await play(BY_NAME[PARTIAL], "generate-content", tmp_path)
    uses = [e for e in _events(verdict.events) if isinstance(e, ToolUse)]
    assert [(u.name, u.input) for u in uses] == [("greet", {"greeting": "Hello", "name": "jone smith"})]


@pytest.mark.anyio
async def test_streamed_arguments_echo_back_and_the_next_turn_plays(tmp_path: Path) -> None:
    verdict = await play(BY_NAME[ECHOED], "generate-content", tmp_path)
    events = _events(verdict.events)
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert [(e.name, e.input) for e in events if isinstance(e, ToolUse)] == [
        ("customDivide", {"denominator": 2, "numerator": 100})
    ]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "The result of 100/2 is 51."
    assert verdict.served == 2


@pytest.mark.anyio
async def test_server_side_mcp_calls_are_server_side_tool_use(tmp_path: Path) -> None:
    verdict = await play(BY_NAME[MCP], "generate-content", tmp_path)
    events = _events(verdict.events)
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [(u.name, u.server_side, u.input["location"]) for u in uses] == [
        ("weather_server_get_weather", True, "San Francisco"),
        ("weather_server_get_weather", True, "Boston"),
    ]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert all(r.server_side and not r.is_error for r in results)
    assert all(
        "call_tool_result_json" in (r.data or {}) or "call_tool_result_json" in (r.output or "") for r in results
    )


@pytest.mark.anyio
async def test_a_generated_image_reaches_the_caller_with_its_bytes(tmp_path: Path) -> None:
    verdict = await play(BY_NAME[IMAGE], "generate-content", tmp_path)
    [image] = [e for e in _events(verdict.events) if isinstance(e, ImageOutput)]
    assert image.mime_type == "image/png"
    assert image.data is not None
    assert image.data.startswith(b"\x89PNG\r\n\x1a\n")  # the recording's PNG, decoded
    assert image.size_bytes == len(image.data)
    assert not [e for e in _events(verdict.events) if isinstance(e, WarningEvent) and e.code == "output_not_shown"]


@pytest.mark.anyio
async def test_an_empty_stream_is_warned_retried_then_a_clear_error(tmp_path: Path) -> None:
    verdict = await play(BY_NAME[EMPTY], "generate-content", tmp_path)
    events = _events(verdict.events)
    assert any(isinstance(e, WarningEvent) and e.code == "malformed_turn" and "empty" in e.message for e in events)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"


# --- the checker catches what it must ---------------------------------------------------------------


def _run(*events: UnifiedEvent) -> list[UnifiedEvent]:
    stream = [SessionStarted(backend="x"), *events]
    return [e.model_copy(update={"seq": i}) for i, e in enumerate(stream)]


def _recorded(*chunks: dict[str, object]) -> RecordedTurn:
    return RecordedTurn(method="generateContentStream", response=list(chunks))


TURN = _recorded(
    {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "plan", "thought": True}, {"text": "hello"}]},
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 100,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 7,
            "cachedContentTokenCount": 60,
        },
    }
)
USAGE = Usage(input_tokens=100, output_tokens=5, thinking_tokens=7, cached_tokens=60)


def test_a_faithful_run_has_no_problem() -> None:
    events = _run(Thinking(text="plan", replace=True), TextDelta(text="hello"), Result(status="success", usage=USAGE))
    assert check_run(events, expected_of([TURN])) == []


def test_dropped_text_is_caught() -> None:
    events = _run(Thinking(text="plan", replace=True), TextDelta(text="hel"), Result(status="success", usage=USAGE))
    assert check_run(events, expected_of([TURN])) == ["text differs: got 3 chars, the recording has 5"]


def test_wrong_or_unflagged_usage_is_caught() -> None:
    lost_cache = USAGE.model_copy(update={"cached_tokens": 0})
    events = _run(
        Thinking(text="plan", replace=True), TextDelta(text="hello"), Result(status="success", usage=lost_cache)
    )
    assert check_run(events, expected_of([TURN])) == ["usage cached_tokens=0, recording says 60"]
    guessed = USAGE.model_copy(update={"estimated": True})
    events = _run(Thinking(text="plan", replace=True), TextDelta(text="hello"), Result(status="success", usage=guessed))
    assert check_run(events, expected_of([TURN])) == [
        "usage flagged estimated although the recording reports every figure"
    ]


def test_missing_thinking_unanswered_calls_and_internal_errors_are_caught() -> None:
    events = _run(
        TextDelta(text="hello"),
        ToolUse(tool_use_id="a", name="read_file"),
        ErrorEvent(code="internal_error", message="boom"),
        Result(status="success", usage=USAGE),
    )
    problems = check_run(events, expected_of([TURN]))
    assert "thought text not shown" in problems
    assert "tool_use not answered exactly once: ['a']" in problems
    assert "internal_error: boom" in problems
    assert any(p.startswith("tool calls differ") for p in problems)


def test_seq_gaps_and_a_second_result_are_caught() -> None:
    events = _run(TextDelta(text="hello"), Result(status="success"))
    events[1] = events[1].model_copy(update={"seq": 5})
    events.append(Result(status="success", seq=3))
    problems = check_run(events, Expected(text="hello"))
    assert "seq has gaps or repeats" in problems
    assert "2 result events (one, last, expected)" in problems


def test_usage_the_recording_lacks_may_be_estimated_but_must_say_so() -> None:
    bare = _recorded(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
    )
    expected = expected_of([bare])
    assert expected.unreported == {"input_tokens", "output_tokens"}
    flagged = _run(TextDelta(text="hi"), Result(status="success", usage=Usage(output_tokens=1, estimated=True)))
    assert check_run(flagged, expected) == []
    unflagged = _run(TextDelta(text="hi"), Result(status="success", usage=Usage(output_tokens=1)))
    assert check_run(unflagged, expected) == ["usage output_tokens=1, recording says 0"]


def test_the_report_counts_each_backend() -> None:
    recording = CORPUS[0]
    verdicts = {
        (recording.name, "generate-content"): Verdict(recording.name, "generate-content"),
        (recording.name, "gemini-cli"): Verdict(recording.name, "gemini-cli", problems=["text differs | x"]),
    }
    report = render_report([recording], verdicts, ["generate-content", "gemini-cli"])
    assert "| generate-content | 1 | 0 | 0 |" in report
    assert "| gemini-cli | 0 | 0 | 1 |" in report
    assert "fail: text differs \\| x" in report
    verdicts[(recording.name, "gemini-cli")] = Verdict(recording.name, "gemini-cli", declared=["images dropped"])
    report = render_report([recording], verdicts, ["generate-content", "gemini-cli"])
    assert "| gemini-cli | 0 | 1 | 0 |" in report
    assert "declared: images dropped" in report


def test_a_difference_is_declared_only_for_the_backend_and_the_data_that_explain_it() -> None:
    image = _recorded(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": "here"}, {"inlineData": {"mimeType": "image/png"}}]}}
            ]
        }
    )
    problem = "1 generated image(s) neither shown nor warned about"
    assert declared_differences("generate-content", [image], [problem]) == ([problem], [])
    failures, declared = declared_differences("gemini-cli", [image], [problem])
    assert failures == []
    assert IMAGES_DROPPED_BY_CLI in declared[0]
    usage = "usage input_tokens=10, recording says 20"
    assert declared_differences("gemini-cli", [TURN], [usage]) == ([usage], [])  # no retry, no helper call
    empty = _recorded(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "\n"}]}, "finishReason": "STOP"}]}
    )
    assert declared_differences("gemini-cli", [empty, TURN], [usage])[0] == []
    assert declared_differences("gemini-cli", [TURN], [usage], helper_calls=True)[0] == []
    pieces = _recorded(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"functionCall": {"name": "f", "willContinue": True}}]}}
            ]
        }
    )
    calls = "tool calls differ: got [], the recording has [f]"
    failures, declared = declared_differences("gemini-cli", [pieces], [calls, "seq has gaps or repeats"])
    assert failures == ["seq has gaps or repeats"]  # never a broken invariant
    assert STREAMED_ARGUMENTS_UNKNOWN_TO_CLI in declared[0]
    above = "usage input_tokens=30, recording says 20"
    assert declared_differences("gemini-cli", [TURN], [above], helper_calls=True) == ([above], [])


def test_a_unary_recording_is_played_as_one_chunk_streams() -> None:
    unary = [r for r in CORPUS if r.unary_as_stream]
    assert len(unary) == 41
    turns = unary[0].model_turns()
    assert all(t.method == "generateContentStream" and len(t.response) == 1 for t in turns)
    assert unary[0].side_turns() == []


def test_cli_recording_lines_with_extra_keys_load(tmp_path: Path) -> None:
    line = {"method": "generateContentStream", "response": [], "request": {"contents": []}}
    path = tmp_path / "old.responses"
    path.write_text(json.dumps(line) + "\n")
    script = Script.from_file(path)
    assert [t.method for t in script.turns if isinstance(t, RecordedTurn)] == ["generateContentStream"]
    assert isinstance(Recording("old", path).model_turns()[0], RecordedTurn)
