"""The function responses a resume of the CLI 0.61 would send twice (or without their call) are removed from its
chat file before the CLI loads it; the records are those the real binary writes (a read that ran, a write the
user denied)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from unified._adapters.gemini_cli._chat_files import (
    read_chat,
    repair_function_responses,
    repair_session,
    surplus_responses,
)
from unified._adapters.gemini_cli._conversation import messages_now, undo_cancel_rollback
from unified.testing._wire import history_problem

SESSION = "229f8d4b-5d33-4515-b621-9a127fcdee22"
READ = "read_file__read_file_1796144915921_0"
WRITE = "write_file__write_file_1796144943752_0"
HEADER = {"sessionId": SESSION, "projectHash": "h", "startTime": "2026-12-01T17:08:35Z", "kind": "main"}
PREAMBLE = {
    "id": "p0",
    "type": "user",
    "content": [{"text": "<session_context>\nThis is the Gemini CLI.</session_context>"}],
}


def _response(call_id: str, name: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"functionResponse": {"id": call_id, "name": name, "response": response}}


READ_RESPONSE = _response(READ, "read_file", {"output": "alpha\n"})
DENIED_RESPONSE = _response(WRITE, "write_file", {"error": 'Tool "write_file" was canceled by the user.'})
RAN: list[dict[str, Any]] = [
    {"id": "u1", "type": "user", "content": [{"text": "first"}]},
    {"id": "g1", "type": "gemini", "content": "", "thoughts": [], "tokens": None, "model": "gemini-2.5-flash"},
    {
        "id": "g2",
        "type": "gemini",
        "content": "",
        "toolCalls": [
            {
                "id": READ,
                "name": "read_file",
                "args": {"file_path": "notes.txt"},
                "result": [READ_RESPONSE],
                "status": "success",
            }
        ],
        "model": "gemini-2.5-flash",
    },
    {"id": "u2", "type": "user", "content": [READ_RESPONSE]},
    {"id": "g3", "type": "gemini", "content": "alpha it is", "model": "gemini-2.5-flash"},
]
DENIED: list[dict[str, Any]] = [
    {"id": "u1", "type": "user", "content": [{"text": "first"}]},
    {"id": "g1", "type": "gemini", "content": "", "thoughts": [], "tokens": None, "model": "gemini-2.5-flash"},
    {"id": "u2", "type": "user", "content": [DENIED_RESPONSE]},
    {"id": "g3", "type": "gemini", "content": "Not written.", "model": "gemini-2.5-flash"},
]


def _write(home: Path, records: list[dict[str, Any]], *, extra_lines: tuple[str, ...] = ()) -> Path:
    chats = home / ".gemini" / "tmp" / "ws" / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-2026-12-01T17-07-{SESSION[:8]}.jsonl"
    lines = [json.dumps(HEADER), json.dumps({"$set": {"messages": [PREAMBLE]}})]
    lines += [json.dumps(r) for r in records] + list(extra_lines)
    path.write_text("\n".join(lines) + "\n")
    return path


def _history(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The request the CLI 0.61 builds from these messages on a resume (its convertSessionToClientHistory),
    followed by a new prompt."""
    contents: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        parts = content if isinstance(content, list) else ([{"text": content}] if content else [])
        if message["type"] == "user":
            if parts and not str(parts[0].get("text", "")).startswith("<session_context>"):
                contents.append({"role": "user", "parts": parts})
            continue
        calls = message.get("toolCalls") or []
        model = [*parts, *({"functionCall": {"id": c["id"], "name": c["name"], "args": c["args"]}} for c in calls)]
        if model:
            contents.append({"role": "model", "parts": model})
        answers = [part for c in calls for part in c.get("result") or []]
        if answers:
            contents.append({"role": "user", "parts": answers})
    return {"contents": [*contents, {"role": "user", "parts": [{"text": "second"}]}]}


def test_a_ran_calls_response_is_there_twice_and_the_repair_keeps_one(isolated_home: Path) -> None:
    assert history_problem(_history(RAN)) is not None  # what FakeGemini (and the real API) refuse
    assert surplus_responses(RAN) == {"u2": {READ}}
    path = _write(isolated_home, RAN)
    done = repair_function_responses(path)
    assert done is not None
    assert "removed 1 function response(s)" in done
    messages = read_chat(path).messages
    assert [m["id"] for m in messages] == ["p0", "u1", "g1", "g2", "g3"]
    assert history_problem(_history(messages)) is None
    assert messages[3]["toolCalls"][0]["result"] == [READ_RESPONSE]  # the call's own record is untouched


def test_a_denied_calls_response_without_its_call_is_dropped(isolated_home: Path) -> None:
    assert history_problem(_history(DENIED)) is not None
    path = _write(isolated_home, DENIED)
    assert repair_function_responses(path) is not None
    messages = read_chat(path).messages
    assert [m["id"] for m in messages] == ["p0", "u1", "g1", "g3"]
    assert history_problem(_history(messages)) is None


def test_a_response_whose_call_has_no_recorded_result_stays(isolated_home: Path) -> None:
    unanswered = [dict(RAN[2], toolCalls=[{**RAN[2]["toolCalls"][0], "result": None}])]
    records = [RAN[0], *unanswered, RAN[3], RAN[4]]
    assert surplus_responses(records) == {}
    path = _write(isolated_home, records)
    before = path.read_bytes()
    assert repair_function_responses(path) is None
    assert path.read_bytes() == before


def test_only_the_surplus_goes_every_other_line_is_kept_byte_for_byte(isolated_home: Path) -> None:
    odd = '{"$set":{"lastUpdated":"2026-12-01T17:08:36.830Z"}}'
    path = _write(isolated_home, RAN, extra_lines=("not json", odd))
    before = path.read_text().splitlines()
    repair_function_responses(path)
    after = path.read_text().splitlines()
    assert [line for line in before if '"id": "u2"' not in line] == after


def test_a_checkpoint_holding_the_surplus_is_rewritten(isolated_home: Path) -> None:
    path = _write(isolated_home, [])
    with path.open("a") as handle:
        handle.write(json.dumps({"$set": {"messages": [PREAMBLE, *RAN], "lastUpdated": "x"}}) + "\n")
    assert repair_function_responses(path) is not None
    assert [m["id"] for m in read_chat(path).messages] == ["p0", "u1", "g1", "g2", "g3"]
    assert read_chat(path).meta["lastUpdated"] == "x"


def test_a_repaired_file_needs_no_second_repair(isolated_home: Path) -> None:
    path = _write(isolated_home, RAN)
    assert repair_session(isolated_home / ".gemini", SESSION) != []
    assert repair_session(isolated_home / ".gemini", SESSION) == []
    assert not list(path.parent.glob(".*.repair"))  # the temporary file was renamed over the chat file


def test_a_cancel_that_left_no_prompt_puts_the_prompt_in(isolated_home: Path) -> None:
    """A prompt cancelled before the CLI recorded it leaves a file with its preamble alone, which the CLI cannot
    load ("No previous sessions found"): the prompt, images and all, becomes its turn; a file that holds a prompt
    is left byte for byte."""
    path = _write(isolated_home, [])
    blocks = [{"type": "text", "text": "first"}, {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}]
    undo_cancel_rollback(messages_now(isolated_home / ".gemini", SESSION), blocks)
    preamble, prompt = read_chat(path).messages
    assert preamble == PREAMBLE
    assert (prompt["type"], prompt["content"]) == (
        "user",
        [{"text": "first"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}],
    )
    assert isinstance(prompt["id"], str)
    kept = path.read_bytes()
    undo_cancel_rollback(messages_now(isolated_home / ".gemini", SESSION), blocks)
    assert path.read_bytes() == kept
