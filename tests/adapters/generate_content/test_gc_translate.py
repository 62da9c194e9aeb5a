"""The pure translator on the real recordings, and the pure pieces around it: no I/O."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.genai import errors, types

from tests.harness.recordings import recordings, recordings_dir
from unified._adapters.generate_content._failures import failure_from_exception
from unified._adapters.generate_content._options import plan_thinking
from unified._adapters.generate_content._translate import GenerateContentTranslator, split_subject
from unified._internal.api_errors import retry_delay
from unified.events import ErrorEvent, TextDelta, Thinking, ToolResult, ToolUse, UnifiedEvent, WarningEvent
from unified.types import ThinkingConfig

RECORDINGS = recordings_dir()


def streams(name: str) -> list[list[dict[str, Any]]]:
    lines = [json.loads(line) for line in (RECORDINGS / name).read_text().splitlines() if line.strip()]
    return [line["response"] for line in lines if line["method"] == "generateContentStream"]


def play(chunks: list[dict[str, Any]], turn: int = 1) -> tuple[GenerateContentTranslator, list[UnifiedEvent]]:
    translator = GenerateContentTranslator(turn=turn)
    events: list[UnifiedEvent] = []
    for chunk in chunks:
        events += translator.feed(types.GenerateContentResponse.model_validate(chunk))
    events += translator.finish()
    return translator, events


def test_each_thought_part_is_a_whole_summary() -> None:
    translator, events = play(streams("hooks-system.multiple-events.responses")[0])
    thoughts = [e for e in events if isinstance(e, Thinking)]
    assert [t.subject for t in thoughts] == ["Formulating a Plan", "Confirming the Procedure"]
    assert all(t.replace for t in thoughts)
    assert thoughts[0].text.startswith("**Formulating a Plan**")
    use = next(e for e in events if isinstance(e, ToolUse))
    assert use.name == "write_file"
    assert translator.calls[0].call_id is None  # Gemini 2.5 sends no call ids
    # usage comes from the last chunk; earlier chunks lack candidatesTokenCount
    assert translator.usage is not None
    assert (translator.usage.input_tokens, translator.usage.output_tokens, translator.usage.thinking_tokens) == (
        12622,
        28,
        91,
    )


def test_signatures_stay_on_the_parts_for_the_echo() -> None:
    translator, _ = play(streams("hooks-system.multiple-events.responses")[0])
    content = translator.content()
    signed = [p for p in content.parts or [] if p.thought_signature]
    assert len(signed) == 1
    assert signed[0].function_call is not None
    dumped = content.model_dump(mode="json", exclude_none=True)
    assert types.Content.model_validate(dumped) == content  # what the session stores round-trips exactly


def test_parallel_calls_get_distinct_ids() -> None:
    translator, events = play(streams("parallel-tools.responses")[0])
    ids = [e.tool_use_id for e in events if isinstance(e, ToolUse)]
    assert len(ids) == 5
    assert len(set(ids)) == 5
    assert [c.name for c in translator.calls] == ["read_file"] * 2 + ["write_file"] + ["read_file"] * 2
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "All waves completed successfully."


def test_malformed_function_call_is_marked_for_a_retry_with_its_reason() -> None:
    translator, events = play(streams("context-compress-interactive.compress.responses")[0])
    assert translator.malformed is not None
    assert "[finishReason MALFORMED_FUNCTION_CALL]" in translator.malformed
    assert translator.fatal is None
    assert not any(isinstance(e, WarningEvent) for e in events)  # the agent loop warns once it asks again


@pytest.mark.parametrize("path", recordings())
def test_every_recorded_stream_translates(path: Path) -> None:
    ids: set[str] = set()
    uses: list[str] = []
    for turn, chunks in enumerate(streams(path.name), start=1):
        translator = GenerateContentTranslator(turn=turn, taken_ids=ids)
        events = [e for c in chunks for e in translator.feed(types.GenerateContentResponse.model_validate(c))]
        events += translator.finish()
        uses += [e.tool_use_id for e in events if isinstance(e, ToolUse)]
        assert translator.finish_reason is not None
        parts = [
            part
            for c in chunks
            for cand in c.get("candidates", [])[:1]
            for part in cand.get("content", {}).get("parts", [])
        ]
        answer = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == answer  # not a character dropped
        thinking = [e.text for e in events if isinstance(e, Thinking)]
        for thought in (p["text"] for p in parts if p.get("thought") and p.get("text")):
            assert any(thought.strip() in text for text in thinking), thought
        calls = [p["functionCall"]["name"] for p in parts if "functionCall" in p]
        assert [e.name for e in events if isinstance(e, ToolUse)] == calls
    assert len(uses) == len(set(uses))


def test_subject_split() -> None:
    assert split_subject("**Plan**\n\nbody") == ("Plan", "**Plan**\n\nbody")
    assert split_subject("no heading") == (None, "no heading")


def chunk(parts: list[dict[str, Any]], **candidate: Any) -> types.GenerateContentResponse:
    return types.GenerateContentResponse.model_validate(
        {"candidates": [{"content": {"role": "model", "parts": parts}, **candidate}]}
    )


def test_code_execution_parts_are_server_side_tools() -> None:
    translator = GenerateContentTranslator(turn=1)
    events = translator.feed(
        chunk(
            [
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
            ],
            finishReason="STOP",
        )
    )
    use, result = events
    assert isinstance(use, ToolUse)
    assert isinstance(result, ToolResult)
    assert use.server_side
    assert result.server_side
    assert use.name == "code_execution"
    assert result.tool_use_id == use.tool_use_id
    assert result.data == {"outcome": "OUTCOME_OK", "output": "1\n"}  # protocol 2.0: structure in `data`
    assert not translator.calls


def test_grounding_metadata_reaches_the_consumer() -> None:
    translator = GenerateContentTranslator(turn=1)
    grounding = {
        "webSearchQueries": ["weather paris"],
        "groundingChunks": [{"web": {"uri": "https://example.com", "title": "Example"}}],
    }
    translator.feed(chunk([{"text": "Sunny."}], finishReason="STOP", groundingMetadata=grounding))
    use, result = translator.finish()
    assert isinstance(use, ToolUse)
    assert isinstance(result, ToolResult)
    assert (use.name, use.input, use.server_side) == ("google_search", {"queries": ["weather paris"]}, True)
    assert isinstance(result.output, str)  # protocol 2.0: output is text, the structure is in `data`
    assert result.data is not None
    assert result.data["grounding_chunks"][0]["web"]["uri"] == "https://example.com"


@pytest.mark.parametrize(
    ("reason", "kind"), [("SAFETY", ErrorEvent), ("MAX_TOKENS", WarningEvent), ("RECITATION", ErrorEvent)]
)
def test_finish_reasons_are_reported(reason: str, kind: type) -> None:
    translator = GenerateContentTranslator(turn=1)
    translator.feed(chunk([{"text": "x"}], finishReason=reason))
    (event,) = translator.finish()
    assert isinstance(event, kind)
    assert isinstance(event, ErrorEvent | WarningEvent)
    assert reason in event.message
    assert (translator.fatal is not None) is (kind is ErrorEvent)


def test_duplicate_model_call_ids_are_made_unique() -> None:
    taken: set[str] = set()
    first = GenerateContentTranslator(turn=1, taken_ids=taken)
    first.feed(chunk([{"functionCall": {"name": "f", "args": {}, "id": "c1"}}], finishReason="STOP"))
    first.finish()  # a call is announced once the next part, or the end of the stream, shows it is local
    second = GenerateContentTranslator(turn=2, taken_ids=taken)
    second.feed(chunk([{"functionCall": {"name": "f", "args": {}, "id": "c1"}}], finishReason="STOP"))
    second.finish()
    assert first.calls[0].tool_use_id == "c1"
    assert second.calls[0].tool_use_id != "c1"
    assert second.calls[0].call_id == "c1"  # the model's own id still answers the call


def error_from_status(code: int, message: str, details: list[dict[str, Any]] | None = None) -> errors.APIError:
    body = {"error": {"code": code, "message": message, "status": "X", "details": details or []}}
    return errors.APIError(code, body)


def test_retry_delay_is_read_from_retry_info() -> None:
    body = {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "15s"}]}}
    assert retry_delay(body) == 15.0
    assert retry_delay({"error": {}}) is None


@pytest.mark.parametrize(
    ("code", "message", "kind", "error_code"),
    [
        (429, "quota", "rate_limit", "rate_limited"),
        (503, "overloaded", "transient", "backend_error"),
        (400, "API key not valid. Please pass a valid API key.", "fatal", "auth_error"),
        (403, "permission denied", "fatal", "auth_error"),
        (
            400,
            "Function call is missing a thought_signature in functionCall parts.",
            "fatal",
            "missing_thought_signature",
        ),
        (404, "models/gemini-9 is not found for API version v1beta", "fatal", "model_not_found"),
        (400, "Invalid JSON payload", "fatal", "bad_request"),
    ],
)
def test_failures_say_what_to_fix(code: int, message: str, kind: str, error_code: str) -> None:
    failure = failure_from_exception(error_from_status(code, message), "gemini-9", 90.0)
    assert failure is not None
    assert failure.kind == kind
    assert failure.error.code == error_code
    assert failure.error.hint


def test_thinking_maps_per_model_family() -> None:
    pro25 = plan_thinking("gemini-2.5-pro", ThinkingConfig(budget=0))
    assert pro25 is not None
    assert pro25.budget == 128
    assert pro25.notes
    level3 = plan_thinking("gemini-3-flash-preview", ThinkingConfig(budget=20000))
    assert level3 is not None
    assert (level3.level, level3.budget) == ("high", None)
    assert level3.notes
    flash = plan_thinking("gemini-2.5-flash", ThinkingConfig(level="low"))
    assert flash is not None
    assert flash.budget == 1024
    exact = plan_thinking("gemini-2.5-flash", ThinkingConfig(budget=2048))
    assert exact is not None
    assert (exact.budget, exact.notes) == (2048, ())
    pro3 = plan_thinking("gemini-3-pro-preview", ThinkingConfig(level="medium"))
    assert pro3 is not None
    assert pro3.level == "high"
    assert plan_thinking("gemini-2.0-flash", None) is None
