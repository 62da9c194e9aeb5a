"""Bad input round 26, conversations: text parts with no text (a history's, a prompt of images only) were sent to the
providers as they were, which the Gemini API refuses ("an empty text parameter") and the Anthropic API too. Each case
says what happened before.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conversations.test_bad_input_round25 import API_BACKENDS, PNG, _continued
from tests.foundation.test_bad_input_round21 import _events
from unified import ExecuteParams, execute
from unified.conversations import Conversation, ModelTurn, TextPart, ToolCallPart, ToolResultPart, UserTurn
from unified.errors import ConfigurationError
from unified.events import Result, WarningEvent
from unified.testing import FakeGemini
from unified.testing import ModelTurn as ScriptTurn
from unified.types import ImageInput

_BLANK_TEXTS = ('{"text": ""}', '"text": " \\n"', '"text": ""')
"""How an empty text looks in a request body: generate-content's part, interactions' content."""


@pytest.mark.anyio
@pytest.mark.parametrize("backend", API_BACKENDS)
async def test_empty_texts_of_a_history_are_left_out_with_a_warning(tmp_path: Path, backend: str) -> None:
    """FAILED before: `{"text": ""}` (and a text of whitespace) went in the request as it was, with no word of it."""
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text=""), TextPart(text="first-words-1")]),
            ModelTurn(parts=[TextPart(text=" \n")]),
            ModelTurn(parts=[TextPart(text="second-words-2"), TextPart(text="")]),
            UserTurn(parts=[TextPart(text="")]),
        ]
    )
    async with FakeGemini([ScriptTurn(text="ok")]) as server:
        events = await _continued(tmp_path, server, backend, history)
        sent = json.dumps(server.requests[-1].body)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert not any(blank in sent for blank in _BLANK_TEXTS), sent
    assert [sent.count(word) for word in ("first-words-1", "second-words-2", "go on")] == [1, 1, 1]
    [warning] = [e for e in events if isinstance(e, WarningEvent) and e.message.startswith("history: ")]
    assert "4 empty text part(s) left out (turn 0, 1, 2, 3)" in warning.message


def test_a_history_of_nothing_but_empty_texts_is_refused(tmp_path: Path) -> None:
    """FAILED before: taken (then sent, for the API to refuse)."""
    history = Conversation(turns=[UserTurn(parts=[TextPart(text="")]), ModelTurn(parts=[TextPart(text="  ")])])
    with pytest.raises(ConfigurationError) as caught:
        execute(ExecuteParams(prompt="go on", backend="generate-content", cwd=tmp_path, history=history))
    assert "nothing but 2 empty text part(s)" in caught.value.message
    assert "leave the history out" in str(caught.value)


def test_a_signed_empty_text_and_calls_are_kept() -> None:
    """FAILED before: the turn kept its unsigned empty text. A Gemini model's empty text with a signature carries it
    back, and the call and its result (of an empty output) stay."""
    signed = TextPart(text="", signature="c2ln")
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="go")]),
            ModelTurn(parts=[signed, ToolCallPart(id="c1", name="read_file"), TextPart(text="")]),
            UserTurn(parts=[ToolResultPart(call_id="c1", name="read_file", output="")]),
        ]
    )
    kept = history.with_results_after_calls()
    model = kept.turns[1]
    assert model.parts == [signed, ToolCallPart(id="c1", name="read_file")]
    assert kept.turns[2].parts == history.turns[2].parts  # a result's empty output is a result


@pytest.mark.anyio
async def test_a_prompt_of_images_only_sends_no_empty_text_on_interactions(tmp_path: Path) -> None:
    """FAILED before: interactions sent `{"type": "text", "text": ""}` before the image (generate-content, codex and
    claude-code sent none)."""
    async with FakeGemini([ScriptTurn(text="a square")]) as server:
        events = await _events(
            ExecuteParams(
                prompt="",
                images=[ImageInput(mime_type="image/png", data=PNG)],
                backend="interactions",
                model="gemini-2.5-flash",
                cwd=tmp_path,
                backend_options={"api_key": "k", "base_url": server.base_url, "max_retries": 0},
            )
        )
        sent = json.dumps(server.requests[-1].body)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert '"text": ""' not in sent
    assert '"type": "image"' in sent


def test_a_prompt_of_images_only_has_no_empty_text_block_over_acp(tmp_path: Path) -> None:
    """FAILED before: gemini-cli's ACP prompt opened with `{"type": "text", "text": ""}`, which the CLI sent on."""
    from unified._adapters.gemini_cli._run import prompt_blocks

    image = ImageInput(mime_type="image/png", data=PNG)
    blocks = prompt_blocks(ExecuteParams(prompt="", images=[image], cwd=tmp_path))
    assert [block["type"] for block in blocks] == ["image"]
    assert [b["type"] for b in prompt_blocks(ExecuteParams(prompt="hi", images=[image], cwd=tmp_path))] == [
        "text",
        "image",
    ]
