"""Bad input round 17, the gemini CLI's calls it refuses before running them: arguments that do not validate (a path
outside the workspace, a required one missing). 0.61 never announces such a call over ACP (no `tool_call`, no
permission request: its `build` throws) and says only a failed `tool_call_update`; headless its result's error is
`invalid_tool_params`. Both said `allow` (the CLI's own, or unified's rule auto-edit or yolo), though nothing ran:
now `deny` by the backend, its reason the CLI's error. A call it ran and that failed stays allowed. The real CLI:
tests/e2e/gemini_cli/test_gemini_cli_bad_input_round17.py."""

from __future__ import annotations

from typing import Any

from unified._adapters.gemini_cli._stream_json import StreamJsonTranslator
from unified._adapters.gemini_cli._translate import AcpTranslator
from unified.events import PermissionDecision

OUTSIDE = 'Path not in workspace: Attempted path "/etc/x" resolves outside the allowed workspace directories: /ws'
WRITE = "write_file__write_file_1796508436784_0"
READ = "read_file__read_file_1796508436784_1"


def _failed(call_id: str, text: str) -> dict[str, Any]:
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed",
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
        "kind": "edit",
    }


def _decisions(items: list[Any]) -> list[PermissionDecision]:
    return [item for item in items if isinstance(item, PermissionDecision)]


def test_an_acp_call_first_seen_failed_was_refused_not_allowed() -> None:
    translator = AcpTranslator()
    [decision] = _decisions(translator.update(_failed(WRITE, OUTSIDE)))
    assert (decision.decision, decision.decided_by, decision.tool_name) == ("deny", "backend", "write_file")
    assert decision.reason == f"the Gemini CLI refused it before running it: {OUTSIDE}"


def test_an_acp_refusal_s_reason_quotes_at_most_300_characters_of_the_error() -> None:
    [decision] = _decisions(AcpTranslator().update(_failed(WRITE, "params must have " + "x" * 5000)))
    assert decision.reason is not None
    assert decision.reason.endswith("…")
    assert len(decision.reason) == len("the Gemini CLI refused it before running it: ") + 300


def test_an_acp_call_that_ran_and_failed_stays_allowed() -> None:
    translator = AcpTranslator()
    started = {"sessionUpdate": "tool_call", "toolCallId": READ, "status": "in_progress", "title": "x", "kind": "read"}
    [allowed] = _decisions(translator.update(started))
    assert _decisions(translator.update(_failed(READ, "File not found."))) == []
    assert allowed.decision == "allow"


def _stream_call(error_type: str, message: str) -> list[Any]:
    translator = StreamJsonTranslator()
    translator.event({"type": "tool_use", "tool_name": "write_file", "tool_id": WRITE, "parameters": {}})
    error = {"type": error_type, "message": message}
    return translator.event({"type": "tool_result", "tool_id": WRITE, "status": "error", "error": error})


def test_a_stream_json_call_with_invalid_params_was_refused_not_allowed() -> None:
    [decision] = _decisions(_stream_call("invalid_tool_params", OUTSIDE))
    assert (decision.decision, decision.decided_by) == ("deny", "backend")
    assert decision.reason == f"the Gemini CLI refused it before running it: {OUTSIDE}"


def test_a_stream_json_call_that_ran_and_failed_stays_allowed() -> None:
    [decision] = _decisions(_stream_call("file_write_failure", "EACCES"))
    assert decision.decision == "allow"
