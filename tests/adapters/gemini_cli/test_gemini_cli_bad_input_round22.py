"""Bad input round 22, the gemini CLI's stream-json lines with fields of another kind: an `init` whose session_id is
an object, calls announced without a `tool_id`, counts that are no counts."""

from __future__ import annotations

from typing import Any

import pytest

from unified._adapters.gemini_cli._stream_json import StreamJsonTranslator
from unified.events import SessionStarted, ToolUse, Usage, WarningEvent

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("given", [{"a": 1}, 12345, ["x"], ""], ids=["object", "number", "array", "empty"])
def test_an_init_whose_session_id_is_no_text_names_no_session(given: Any) -> None:
    """FAILED before for object, number and array: `str()` made them the session's id ("{'a': 1}", "12345")."""
    [started] = StreamJsonTranslator().event({"type": "init", "session_id": given, "model": "gemini-x"})
    assert isinstance(started, SessionStarted)
    assert (started.session_id, started.short_id) == (None, None)


def test_calls_without_a_tool_id_are_warned_of_not_read_as_one() -> None:
    """FAILED before: the first became a call of id "" and the second was dropped unsaid as "announced already"."""
    translator = StreamJsonTranslator()
    translator.event({"type": "init", "session_id": "s-round22"})
    items = [
        item
        for name in ("read_file", "write_file")
        for item in translator.event({"type": "tool_use", "tool_name": name, "parameters": {}})
    ]
    assert not [item for item in items if isinstance(item, ToolUse)]
    assert [w.message for w in items if isinstance(w, WarningEvent)] == [
        f"the Gemini CLI announced a call of {name} without a tool_id; it is left out of the stream"
        for name in ("read_file", "write_file")
    ]
    assert translator.event({"type": "tool_result", "status": "success", "output": "x"}) == []  # it names no call


def test_result_counts_that_are_no_counts_are_0() -> None:
    """Pin: -4, "9" and true are no token counts."""
    translator = StreamJsonTranslator()
    translator.event({"type": "result", "stats": {"input_tokens": -4, "output_tokens": "9", "cached": True}})
    assert translator.usage == Usage()
