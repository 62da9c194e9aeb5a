"""Reading a prompt's tool calls, function responses and tokens from the session's chat file as it is written.

The incremental reading itself (`JsonlFollower`) is tested with the layer, in tests/binary/.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from unified._adapters.gemini_cli._chat_records import ChatRecords, tool_calls_of, tool_response
from unified.events import Usage

SESSION = "2c2d3ac7-996e-4646-87d6-13776bec6cd4"
READ_ID = "read_file__read_file_1795994544707_0"


def call(call_id: str, status: str, response: dict[str, Any], **args: Any) -> dict[str, Any]:
    name = call_id.partition("__")[0]
    return {
        "id": call_id,
        "name": name,
        "args": args,
        "result": [{"functionResponse": {"id": call_id, "name": name, "response": response}}],
        "status": status,
        "resultDisplay": "shown",
    }


def message(*calls: dict[str, Any], message_id: str = "m1") -> dict[str, Any]:
    return {"id": message_id, "type": "gemini", "content": "", "toolCalls": list(calls)}


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record).encode() + b"\n"


def test_tool_response_of_success_error_and_unfinished() -> None:
    ok = call(READ_ID, "success", {"output": "hello notes\n"}, file_path="notes.txt")
    assert tool_response(ok) == ({"output": "hello notes\n"}, False)
    failed = call(READ_ID, "error", {"error": "File not found: x"})
    assert tool_response(failed) == ({"error": "File not found: x"}, True)
    assert tool_response({**ok, "status": "executing"}) is None
    assert tool_response({"id": READ_ID, "status": "success", "resultDisplay": "done"}) == ("done", False)


def test_tool_calls_of_messages_and_checkpoints() -> None:
    first = call(READ_ID, "success", {"output": "x"})
    assert tool_calls_of(message(first)) == [first]
    assert tool_calls_of({"$set": {"messages": [{"type": "user"}, message(first)]}}) == [first]
    assert tool_calls_of({"$set": {"lastUpdated": "t"}}) == []
    assert tool_calls_of({"type": "gemini", "toolCalls": [{"no": "id"}]}) == []


def chat_file(home: Path, session_id: str = SESSION, minute: str = "2026-11-29T10-00") -> Path:
    chats = home / ".gemini" / "tmp" / "ws" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-{minute}-{session_id[:8]}.jsonl"
    path.write_bytes(line({"sessionId": session_id, "projectHash": "h", "kind": "main"}))
    return path


def test_chat_records_finds_the_last_record_and_ignores_older_ones(tmp_path: Path) -> None:
    home = tmp_path / ".gemini"
    path = chat_file(tmp_path)
    old = call(READ_ID, "success", {"output": "from an earlier prompt"})
    with path.open("ab") as handle:
        handle.write(line(message(old, message_id="old")))
    tail = ChatRecords(home, SESSION)
    tail.start()  # from the current end: the earlier prompt's record is not this prompt's
    assert tail.lookup(READ_ID) is None
    list_id = "list_directory__list_directory_1_1"
    first = call(READ_ID, "success", {"output": "hello notes\n"}, file_path="notes.txt")
    with path.open("ab") as handle:
        handle.write(line(message(first)))
        handle.write(line(message(first, call(list_id, "success", {"output": "Directory listing"}))))
    record = tail.lookup(READ_ID)
    assert record is not None
    assert record["args"] == {"file_path": "notes.txt"}
    assert tool_response(record) == ({"output": "hello notes\n"}, False)
    listing = tail.lookup(list_id)
    assert listing is not None
    assert tool_response(listing) == ({"output": "Directory listing"}, False)


def test_chat_records_follows_a_file_that_appears_later_and_only_its_session(tmp_path: Path) -> None:
    home = tmp_path / ".gemini"
    tail = ChatRecords(home, SESSION)
    tail.start()
    assert tail.lookup(READ_ID) is None
    other = chat_file(tmp_path, session_id="ffffffff-other")
    with other.open("ab") as handle:
        handle.write(line(message(call(READ_ID, "success", {"output": "not ours"}))))
    path = chat_file(tmp_path, minute="2026-11-29T10-05")
    with path.open("ab") as handle:
        handle.write(line(message(call(READ_ID, "success", {"output": "ours"}))))
    record = tail.lookup(READ_ID, rescan=True)
    assert record is not None
    assert tool_response(record) == ({"output": "ours"}, False)
    assert tail.unreadable is None


def test_chat_records_without_a_file_finds_nothing(tmp_path: Path) -> None:
    tail = ChatRecords(tmp_path / "nowhere", SESSION)
    tail.start()
    assert tail.lookup(READ_ID, rescan=True) is None
    assert not tail.tails


def test_usage_is_the_sum_of_this_prompts_per_call_tokens(tmp_path: Path) -> None:
    path = chat_file(tmp_path)
    home = tmp_path / ".gemini"
    earlier = {"id": "old", "type": "gemini", "tokens": {"input": 999, "output": 9}}
    with path.open("ab") as handle:
        handle.write(line(earlier))  # an earlier prompt's call: not this run's
    tail = ChatRecords(home, SESSION)
    tail.start()
    first = {"input": 12778, "output": 24, "cached": 0, "thoughts": 60, "tool": 0, "total": 12862}
    second = {"input": 12939, "output": 3, "cached": 12203, "thoughts": 0, "tool": 17, "total": 12959}
    with path.open("ab") as handle:
        handle.write(line({"id": "a", "type": "gemini", "content": "", "tokens": first}))
        handle.write(line({**message(call(READ_ID, "success", {"output": "x"}), message_id="a"), "tokens": first}))
        handle.write(line({"id": "b", "type": "gemini", "content": "done", "tokens": second}))
        handle.write(line({"$set": {"messages": [earlier]}}))
    tail.poll()
    assert tail.usage() == Usage(
        input_tokens=12778 + 12939, output_tokens=27, thinking_tokens=60, cached_tokens=12203, tool_use_tokens=17
    )


def test_usage_without_token_records_is_unknown(tmp_path: Path) -> None:
    chat_file(tmp_path)
    tail = ChatRecords(tmp_path / ".gemini", SESSION)
    tail.start()
    tail.poll()
    assert tail.usage() is None


def test_function_responses_of_this_prompt_are_collected(tmp_path: Path) -> None:
    path = chat_file(tmp_path)
    tail = ChatRecords(tmp_path / ".gemini", SESSION)
    tail.start()
    missing = {"id": "customDivide__customDivide_1_0", "name": "customDivide", "response": {"error": "Tool not found"}}
    with path.open("ab") as handle:
        handle.write(line({"id": "u1", "type": "user", "content": [{"functionResponse": missing}]}))
        handle.write(line({"id": "u2", "type": "user", "content": [{"text": "a prompt"}]}))
    tail.poll()
    assert tail.answered == {"customDivide__customDivide_1_0": missing}


def test_a_calls_record_without_text_is_not_the_answer_of_the_text_shown_before_it(tmp_path: Path) -> None:
    """0.61 records a model call's text, then (once its calls ran) a record of its calls with `content: ""`. A read
    that finished before unified saw ACP's `tool_call` (a loaded machine) has both on file when the text's message
    ends: the kept answer is the text, not "" (which warned that the CLI kept nothing; a flaky CI failure)."""
    from unified._adapters.gemini_cli._replays import Folding
    from unified.events import TextDelta

    path = chat_file(tmp_path)
    chat = ChatRecords(tmp_path / ".gemini", SESSION)
    chat.start()
    lead = "Let me read the notes file now."
    folding = Folding(chat)
    shown = [folding.text(TextDelta(text=part, session_id="s")) for part in ("Let me read", " the notes file now.")]
    assert [item.text for items in shown for item in items if isinstance(item, TextDelta)] == [
        "Let me read",
        " the notes file now.",
    ]
    with path.open("ab") as handle:
        handle.write(line({"id": "u1", "type": "user", "content": [{"text": "hi"}]}))
        handle.write(line({"id": "g1", "type": "gemini", "content": lead}))
        handle.write(line(message(call(READ_ID, "success", {"output": "alpha\n"}), message_id="g2")))
    items, kept_nothing = folding.end(final=False)
    assert (items, kept_nothing) == ([], False)
    assert chat.answers == {"g1": lead}


def test_answers_read_ahead_of_the_acp_stream_are_left_for_the_messages_they_end(tmp_path: Path) -> None:
    """Read later still (a loaded machine), the file holds the next model call's answer too when the first message
    ends at its `tool_call`: that answer is the final message's, which must not end as if the CLI kept none (the
    flaky `test_a_retried_stream_before_a_tool_call_shows_its_text_once[acp]`). A call-only model call recorded
    before (kept "") is passed over."""
    from unified._adapters.gemini_cli._replays import Folding
    from unified.events import TextDelta

    path = chat_file(tmp_path)
    chat = ChatRecords(tmp_path / ".gemini", SESSION)
    chat.start()
    lead, final = "Let me read the notes file now.", "It says alpha."
    folding = Folding(chat)
    with path.open("ab") as handle:
        handle.write(line({"id": "u1", "type": "user", "content": [{"text": "hi"}]}))
        handle.write(line({"id": "g0", "type": "gemini", "content": ""}))  # a model call with calls only
        handle.write(line(message(call(READ_ID, "success", {"output": "x\n"}), message_id="g0")))
    folding.text(TextDelta(text=lead, session_id="s"))
    with path.open("ab") as handle:
        handle.write(line({"id": "g1", "type": "gemini", "content": lead}))
        handle.write(line(message(call(READ_ID, "success", {"output": "alpha\n"}), message_id="g2")))
        handle.write(line({"id": "g3", "type": "gemini", "content": final}))
    assert folding.end(final=False) == ([], False)
    shown = folding.text(TextDelta(text=final, session_id="s"))
    items, kept_nothing = folding.end(final=True)
    assert not kept_nothing
    assert [item.text for item in [*shown, *items] if isinstance(item, TextDelta)] == [final]
    assert not [item for item in items if not isinstance(item, TextDelta)]
