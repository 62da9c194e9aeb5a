"""Bad input round 9: each case failed in Python's words, or late, or not at all; now a typed error names what is
wrong where and what to do.

- generate-content: a streamed call's `willContinue` (or a `partialArgs` piece's `willContinue`/`boolValue`) sent
  as the text "false" was read as true; now it is the chunk-shape `backend_error` naming the field.
- a codex rollout whose `function_call.arguments` (or a reasoning `summary`, or a message's `content`) is of a
  type Codex never writes: the export said "(TypeError: the JSON object must be str, bytes or bytearray, not
  int)"; now it names the file, the line and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from unified.errors import CorruptSession

THREAD = "019a0000-0000-7000-8000-000000000001"


def _rollout(tmp_path: Path, *items: dict[str, Any]) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "codex-home" / "sessions" / "2026" / "11" / "29"
    folder.mkdir(parents=True)
    meta = {"type": "session_meta", "payload": {"id": THREAD, "cwd": "/p", "timestamp": "2026-11-29T10:00:00Z"}}
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    lines = [meta, {"type": "response_item", "payload": said}]
    lines += [{"type": "response_item", "payload": item} for item in items]
    path = folder / f"rollout-2026-11-29T10-00-00-{THREAD}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path, {"UNIFIED_CODEX_HOME": str(tmp_path / "codex-home")}


@pytest.mark.parametrize(
    ("item", "words"),
    [
        (
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": 5},
            "function_call 'shell''s arguments is a number, not a string of JSON",
        ),
        (
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": {"cmd": "ls"}},
            "function_call 'shell''s arguments is an object, not a string of JSON",
        ),
        ({"type": "reasoning", "summary": 5}, "a reasoning item's summary is a number, not a list"),
        ({"type": "message", "role": "assistant", "content": True}, "an assistant message's content"),
    ],
)
def test_a_codex_rollout_item_of_a_wrong_type_is_named_by_file_line_and_field(
    tmp_path: Path, item: dict[str, Any], words: str
) -> None:
    from unified._adapters.codex._sessions import CodexSessionLocator

    path, env = _rollout(tmp_path, {"type": "message", "role": "assistant", "content": []}, item)
    before = path.read_bytes()
    with pytest.raises(CorruptSession) as raised:
        anyio.run(CodexSessionLocator(env=env).export, THREAD)
    message = raised.value.message
    assert f"line 4 of {path}" in message, message
    assert words in message, message
    for python in ("TypeError", "JSON object must be", "'int' object", "not iterable"):
        assert python not in message, message
    assert raised.value.hint is not None
    assert "fix or remove that line" in raised.value.hint
    assert raised.value.details["line"] == 4
    assert path.read_bytes() == before


def test_a_codex_call_whose_arguments_are_not_json_is_still_exported_as_the_text_it_holds(tmp_path: Path) -> None:
    from unified._adapters.codex._sessions import CodexSessionLocator
    from unified.conversations import ToolCallPart

    _, env = _rollout(tmp_path, {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{oops"})
    conversation = anyio.run(CodexSessionLocator(env=env).export, THREAD)
    [call] = [p for t in conversation.turns for p in t.parts if isinstance(p, ToolCallPart)]
    assert call.arguments == {"arguments": "{oops"}


# --- generate-content: a streamed call's flag sent as the text "false" ----------------------------------------

_CALL_PATH = "`candidates[0].content.parts[0].functionCall"
FLAGS = {
    "call willContinue 'false'": (
        {"name": "read_file", "args": {"file_path": "a"}, "willContinue": "false"},
        f"{_CALL_PATH}.willContinue` is a string ('false'), not a boolean",
    ),
    "call willContinue 0": (
        {"name": "read_file", "args": {"file_path": "a"}, "willContinue": 0},
        f"{_CALL_PATH}.willContinue` is a number (0), not a boolean",
    ),
    "piece willContinue 'false'": (
        {"name": "plan", "partialArgs": [{"jsonPath": "$.a", "stringValue": "x", "willContinue": "false"}]},
        f"{_CALL_PATH}.partialArgs[0].willContinue` is a string ('false'), not a boolean",
    ),
    "piece boolValue 'false'": (
        {"name": "plan", "partialArgs": [{"jsonPath": "$.a", "boolValue": "false"}]},
        f"{_CALL_PATH}.partialArgs[0].boolValue` is a string ('false'), not a boolean",
    ),
    "piece that is a number": (
        {"name": "plan", "partialArgs": [5]},
        f"{_CALL_PATH}.partialArgs[0]` is a number (5), not an object",
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("case", list(FLAGS))
async def test_a_streamed_call_flag_of_the_wrong_type_is_a_backend_error_naming_it(tmp_path: Path, case: str) -> None:
    """`"willContinue": "false"` was read as Python reads a non-empty string, true (more pieces to come), and a
    `boolValue` of "false" became a `true` argument: no error, the calls ran until the loop guard stopped the
    run (`runaway_loop`). Now each is the chunk-shape error every other wrong-typed chunk field gives
    (`_shapes`): the API's JSON sends these flags as booleans, so a string is the server's (or a proxy's) fault."""
    from unified import ExecuteParams, execute
    from unified.events import ErrorEvent, Result, ToolUse
    from unified.testing import FakeGemini, RecordedTurn

    call, words = FLAGS[case]
    chunk = {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "finishReason": "STOP"}]}
    turns = [RecordedTurn(method="generateContentStream", response=[chunk])] * 4  # a retry gets the same
    options = {"api_key": "test-key", "retry_delay_scale": 0.001}
    with FakeGemini(turns) as fake:
        params = ExecuteParams(
            prompt="go",
            backend="generate-content",
            cwd=tmp_path,
            backend_options={**options, "base_url": fake.base_url},
        )
        async with execute(params) as stream:
            events = [event async for event in stream]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["backend_error"], [(e.code, e.message) for e in errors]
    assert "does not fit its schema" in errors[0].message
    assert words in errors[0].message, errors[0].message
    assert not [e for e in events if isinstance(e, ToolUse)]
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
