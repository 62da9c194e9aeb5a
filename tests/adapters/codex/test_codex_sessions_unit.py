"""Codex rollouts on disk, short ids, the conversation both ways and the error mapping: pure, no process.

Hostile input is normal here: a malformed line, a huge line, a file that is not a rollout, a stored
session naming paths; each is a typed problem, never a crash."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from unified._adapters.codex._conversation import (
    conversation_from_rollout,
    rollout_from_conversation,
    uuid7,
)
from unified._adapters.codex._outcome import error_from_exit, error_from_turn_error
from unified._adapters.codex._rollouts import MAX_LINE_BYTES, Rollouts, codex_short_id, read_rollout, rollout_name
from unified._adapters.codex._shared_sessions import stored_files
from unified.conversations import (
    Conversation,
    ImagePart,
    ModelTurn,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.errors import AmbiguousSession, CorruptSession, SessionNotFound
from unified.sessions import StoredSession

T0 = 1796139949320


def write(home: Path, thread_id: str, conversation: Conversation, ms: int = T0, cwd: str = "/p") -> Path:
    text = rollout_from_conversation(conversation, thread_id=thread_id, cwd=cwd, provider="unified", now_ms=ms)
    return Rollouts(home).write(thread_id, datetime.fromtimestamp(ms / 1000, UTC), text)


def said(question: str, answer: str = "ok") -> Conversation:
    return Conversation(turns=[UserTurn(parts=[TextPart(text=question)]), ModelTurn(parts=[TextPart(text=answer)])])


def test_uuid7_carries_its_time_and_short_ids_its_random_tail() -> None:
    first, second = uuid7(T0), uuid7(T0)
    assert first[:13] == second[:13] == "01a23248-9d08"
    assert first[14] == "7"
    assert int(first.replace("-", "")[:12], 16) == T0
    assert codex_short_id(first) == first.replace("-", "")[-8:]
    assert codex_short_id(first) != codex_short_id(second)


def test_threads_listed_and_resolved_by_short_id_a_prefix_or_the_full_id(tmp_path: Path) -> None:
    ids = [
        "01a23248-9d08-7a31-8b3c-0000000aaaa1",
        "01a23248-9d0a-7c02-9d4e-0000000bbbb2",
        "01a23249-8fb7-7d10-a1f2-0000000cccc3",
    ]
    for number, thread_id in enumerate(ids):
        write(tmp_path, thread_id, said(f"question {number}"), ms=T0 + number * 61_000)
    rollouts = Rollouts(tmp_path)
    listing = {s.short_id: s for s in rollouts.list_sessions()}
    assert set(listing) == {"0aaaa1"[-6:].rjust(8, "0"), "0bbbb2".rjust(8, "0"), "0cccc3".rjust(8, "0")}
    assert listing["000aaaa1"].first_prompt == "question 0"
    assert listing["000aaaa1"].cwd == "/p"
    assert rollouts.resolve("000bbbb2").session_id == ids[1]
    assert rollouts.resolve(ids[2]).session_id == ids[2]
    assert rollouts.resolve("01a23249").session_id == ids[2]
    with pytest.raises(AmbiguousSession):
        rollouts.resolve("01a23248")  # two threads of the same 65 s share their first eight characters
    with pytest.raises(SessionNotFound):
        rollouts.resolve("deadbeef")
    assert rollouts.list_sessions(cwd="/elsewhere") == []


def test_hostile_rollouts_are_problems_not_crashes(tmp_path: Path) -> None:
    good = write(tmp_path, "01a23248-9d08-7a31-8b3c-0000000aaaa1", said("fine"))
    with good.open("a") as handle:
        handle.write("not json\n")
        handle.write('"a string"\n')
        handle.write("x" * (MAX_LINE_BYTES + 10) + "\n")
    rollout = read_rollout(good)
    assert rollout.bad_lines == 3
    assert conversation_from_rollout(rollout).turns[0].parts == [TextPart(text="fine")]
    folder = good.parent
    (folder / rollout_name("01a23248-9d08-7a31-8b3c-0000000ffff1", datetime.now(UTC))).write_text(
        '{"type": "event_msg"}\n'
    )
    (folder / rollout_name("01a23248-9d08-7a31-8b3c-0000000eeee1", datetime.now(UTC))).write_text("")
    other = folder / rollout_name("01a23248-9d08-7a31-8b3c-0000000dddd1", datetime.now(UTC))
    other.write_text(good.read_text().split("\n", 1)[0] + "\n")  # the metadata of another thread
    listing = {s.short_id: s for s in Rollouts(tmp_path).list_sessions()}
    assert {k for k, s in listing.items() if s.problem is not None} == {
        "0000ffff1"[-8:],
        "0000eeee1"[-8:],
        "0000dddd1"[-8:],
    }
    with pytest.raises(CorruptSession):
        Rollouts(tmp_path).resolve("000ffff1")


def test_a_rollout_of_binary_bytes_is_said_to_be_unreadable_not_empty(tmp_path: Path) -> None:
    path = write(tmp_path, "01a23248-9d08-7a31-8b3c-0000000aaaa1", said("fine"))
    path.write_bytes(b"\x00\xff\x8b" * 100 + b"\n" + b"\x1f\x8b" * 50)  # a binary blob: 2 lines, no JSON
    with pytest.raises(CorruptSession, match="has no line that is JSON \\(2 unreadable\\)") as caught:
        read_rollout(path)
    assert "empty" not in caught.value.message
    [info] = Rollouts(tmp_path).list_sessions()
    assert info.problem is not None
    assert "has no line that is JSON" in info.problem.message
    path.write_bytes(b"")
    with pytest.raises(CorruptSession, match="is empty"):
        read_rollout(path)


def test_subagent_rollouts_are_not_listed_and_go_with_their_parent(tmp_path: Path) -> None:
    parent = "01a23248-9d08-7a31-8b3c-0000000aaaa1"
    child = "01a23248-9d09-7a31-8b3c-0000000aaaa2"
    write(tmp_path, parent, said("parent"))
    path = write(tmp_path, child, said("child"))
    lines = path.read_text().splitlines()
    meta = json.loads(lines[0])
    meta["payload"]["parent_thread_id"] = parent
    path.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    rollouts = Rollouts(tmp_path)
    assert [s.session_id for s in rollouts.list_sessions()] == [parent]
    rollouts.delete(parent)
    assert list(rollouts.files()) == []


def test_a_conversation_round_trips_through_a_rollout(tmp_path: Path) -> None:
    png = bytes.fromhex("89504e470d0a1a0a")
    conversation = Conversation(
        system_instruction="Be brief.",
        turns=[
            UserTurn(parts=[TextPart(text="Fix it"), ImagePart(mime_type="image/png", data=png)]),
            ModelTurn(
                parts=[
                    ThinkingPart(text="Look first.", signature="enc-openai"),
                    ToolCallPart(id="c1", name="exec_command", arguments={"cmd": "ls"}),
                    ToolCallPart(id="c2", name="apply_patch", arguments={"input": "*** Begin Patch\n*** End Patch\n"}),
                    ToolCallPart(id="c3", name="mcp__echo__echo", arguments={"text": "hi"}),
                ],
                provider="openai",
            ),
            UserTurn(
                parts=[
                    ToolResultPart(call_id="c1", name="exec_command", output="a.txt"),
                    ToolResultPart(call_id="c2", name="apply_patch", output="Success."),
                    ToolResultPart(call_id="c3", name="mcp__echo__echo", output="hi"),
                ]
            ),
            ModelTurn(parts=[TextPart(text="Done.")], provider="openai"),
        ],
    )
    path = write(tmp_path, "01a23248-9d08-7a31-8b3c-0000000aaaa1", conversation)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    items = [r["payload"] for r in records if r["type"] == "response_item"]
    assert {i["type"] for i in items} >= {
        "message",
        "reasoning",
        "function_call",
        "custom_tool_call",
        "custom_tool_call_output",
    }
    mcp = next(i for i in items if i.get("call_id") == "c3" and i["type"] == "function_call")
    assert (mcp["namespace"], mcp["name"]) == ("mcp__echo", "echo")
    back = conversation_from_rollout(read_rollout(path))
    assert back.system_instruction == "Be brief."
    user, model, results, answer = back.turns
    assert user.parts == [TextPart(text="Fix it"), ImagePart(mime_type="image/png", data=png)]
    assert isinstance(model, ModelTurn)
    assert model.parts == conversation.turns[1].parts
    assert results.parts == conversation.turns[2].parts
    assert answer.parts == [TextPart(text="Done.")]


def test_another_providers_signature_is_dropped_its_summary_kept(tmp_path: Path) -> None:
    conversation = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="q")]),
            ModelTurn(
                parts=[ThinkingPart(text="thought", signature="gemini-sig"), ThinkingPart(signature="only-a-sig")],
                provider="google",
            ),
        ]
    )
    text = rollout_from_conversation(conversation, thread_id=uuid7(T0), cwd="/p", provider="unified", now_ms=T0)
    reasoning = [json.loads(line)["payload"] for line in text.splitlines() if '"reasoning"' in line]
    assert len(reasoning) == 1, "a signature alone with no text does not cross"
    assert reasoning[0]["encrypted_content"] is None
    assert reasoning[0]["summary"] == [{"type": "summary_text", "text": "thought"}]
    assert "gemini-sig" not in text


def test_a_stored_session_may_not_name_other_paths() -> None:
    thread = "01a23248-9d08-7a31-8b3c-0000000aaaa1"
    good = rollout_from_conversation(said("q"), thread_id=thread, cwd="/p", provider="unified", now_ms=T0)
    name = rollout_name(thread, datetime.fromtimestamp(T0 / 1000, UTC))
    assert stored_files(StoredSession(backend="codex", session_id=thread, state={"rollouts": {name: good}}))
    for files in ({"../../etc/passwd": good}, {name: "not json"}, {}, {name.replace("aaaa1", "bbbb1"): good}):
        with pytest.raises(CorruptSession):
            stored_files(StoredSession(backend="codex", session_id=thread, state={"rollouts": files}))


@pytest.mark.parametrize(
    ("info", "code", "retryable"),
    [
        ({"responseTooManyFailedAttempts": {"httpStatusCode": 429}}, "rate_limited", True),
        ("usageLimitExceeded", "rate_limited", False),
        ("rateLimitExceeded", "rate_limited", True),
        ({"httpConnectionFailed": {"httpStatusCode": 401}}, "auth_error", False),
        ("unauthorized", "auth_error", False),
        ({"httpConnectionFailed": {"httpStatusCode": 404}}, "model_not_found", False),
        ("modelNotFound", "model_not_found", False),  # a 404 on 0.171 (e2e: test_codex_bad_input.py)
        ("contextWindowExceeded", "bad_request", False),
        ("internalServerError", "backend_error", True),
        ({"responseStreamDisconnected": {"httpStatusCode": None}}, "stream_interrupted", True),
        ("other", "backend_error", False),
        (None, "backend_error", False),
    ],
)
def test_codex_errors_have_the_registrys_codes(info: object, code: str, retryable: bool) -> None:
    error = error_from_turn_error({"message": "m", "codexErrorInfo": info}, where="the provider")
    assert (error.code, error.retryable) == (code, retryable)


@pytest.mark.parametrize(
    ("message", "code"),
    [
        ('{"error": {"message": "Invalid request.", "type": "invalid_request_error", "param": null}}', "bad_request"),
        ('{"error": {"message": "Boom.", "type": "server_error"}}', "backend_error"),
        ('{"error": "not an object"}', "backend_error"),
        ("[" * 5000, "backend_error"),
    ],
)
def test_a_400_body_codex_passes_on_as_its_message_is_a_bad_request_in_the_providers_words(
    message: str, code: str
) -> None:
    """Codex 0.171 reports a provider's 400 as `other` with no status, the body verbatim as its message."""
    error = error_from_turn_error({"message": message, "codexErrorInfo": "other"}, where="the provider")
    assert error.code == code
    if code == "bad_request":
        assert error.message == "the provider refused the request: Invalid request."
        assert not error.retryable


def test_a_retry_delay_is_kept_and_an_exit_is_explained() -> None:
    error = error_from_turn_error(
        {"message": "rate limit exceeded: Please try again in 1.5s.", "codexErrorInfo": "rateLimitExceeded"}, where="p"
    )
    assert error.details["retry_after_s"] == 1.5
    crashed = error_from_exit(-9, "line one\nthe reason\n", "codex app-server exited")
    assert "killed by signal 9 (SIGKILL" in crashed.message
    assert "the reason" in crashed.message


def test_last_total_is_the_last_token_count_with_figures(tmp_path: Path) -> None:
    """A resumed thread counts from it (`_run`): Codex does not tell it for a thread unified wrote from a history."""
    from unified._adapters.codex._rollouts import TAIL_BYTES, last_total

    def count(info: object) -> str:
        return json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": info}})

    figures = {"input_tokens": 18, "cached_input_tokens": 4, "output_tokens": 9, "reasoning_output_tokens": 2}
    rollout = tmp_path / "rollout.jsonl"
    lines = ["x" * TAIL_BYTES, count({"total_token_usage": {"input_tokens": 1}}), count({"total_token_usage": figures})]
    rollout.write_text("\n".join([*lines, count(None), '{"type": "event_msg", "payload": {"type": "task_complete"}}']))
    total = last_total(rollout)
    assert total is not None
    assert (total.input_tokens, total.cached_tokens, total.output_tokens, total.thinking_tokens) == (18, 4, 7, 2)
    rollout.write_text("\n".join([count({"total_token_usage": figures}), "y" * TAIL_BYTES]))  # beyond the tail read
    assert last_total(rollout) is None
    assert last_total(tmp_path / "missing.jsonl") is None


def test_a_written_conversation_keeps_each_model_turns_usage(tmp_path: Path) -> None:
    """LOST before: the rollout written for a history held no usage, so its export had none (docs/conversations.md)."""
    from unified.events import Usage

    used = Usage(input_tokens=111, output_tokens=22, thinking_tokens=5, cached_tokens=60, cache_creation_tokens=40)
    conversation = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="q1")]),
            ModelTurn(provider="anthropic", usage=used, parts=[TextPart(text="a1")]),
            UserTurn(parts=[TextPart(text="q2")]),
            ModelTurn(provider="google", parts=[TextPart(text="a2")]),
        ]
    )
    thread = uuid7(T0)
    read = conversation_from_rollout(read_rollout(write(tmp_path, thread, conversation)))
    usages = [turn.usage for turn in read.turns if isinstance(turn, ModelTurn)]
    assert usages == [used, None]
