"""The chat-file locator on hand-made files in the CLI's 0.61 layout."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from unified._adapters.gemini_cli._chat_files import (
    ChatFiles,
    ResumeGuard,
    read_chat,
    replay_count,
    session_files,
    summarize,
)
from unified.errors import AmbiguousSession, CorruptSession, SessionNotFound


def write_session(home: Path, slug: str, session_id: str, prompt: str, extra: list[object]) -> Path:
    chats = home / ".gemini" / "tmp" / slug / "chats"
    chats.mkdir(parents=True, exist_ok=True)
    path = chats / f"session-2026-11-29T10-00-{session_id[:8]}.jsonl"
    records = [
        {"sessionId": session_id, "projectHash": "h", "startTime": "2026-11-29T10:00:00Z", "kind": "main"},
        {"id": "u1", "type": "user", "content": [{"text": prompt}]},
        *extra,
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_list_resolve_and_replay(isolated_home: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (isolated_home / ".gemini").mkdir()
    (isolated_home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(ws): "ws"}}))
    path = write_session(
        isolated_home,
        "ws",
        "abcdef12-0000",
        "first prompt",
        [
            {"id": "g1", "type": "gemini", "content": "a"},
            {"id": "g1", "type": "gemini", "content": "a", "toolCalls": [{"id": "t"}]},
            {"$set": {"lastUpdated": "2026-11-29T11:00:00Z", "summary": "did a thing"}},
            "not json",
        ],
    )
    with path.open("a") as handle:
        handle.write("{broken\n")
    write_session(isolated_home, "ws", "abcdff34-0000", "second", [])
    locator = ChatFiles()
    sessions = locator.list_sessions(str(ws))
    assert {s.short_id for s in sessions} == {"abcdef12", "abcdff34"}
    info = locator.resolve("abcdef", str(ws))
    assert info.summary == "did a thing"
    assert info.first_prompt == "first prompt"
    with pytest.raises(AmbiguousSession):
        locator.resolve("abcd", str(ws))
    with pytest.raises(SessionNotFound):
        locator.resolve("zzz", str(ws))
    chat = read_chat(path)
    assert [m["id"] for m in chat.messages] == ["u1", "g1"]
    assert chat.messages[1].get("toolCalls")
    assert chat.bad_lines == 2


def test_corrupt_file_is_reported_not_deleted(isolated_home: Path) -> None:
    chats = isolated_home / ".gemini" / "tmp" / "ws" / "chats"
    chats.mkdir(parents=True)
    bad = chats / "session-2026-11-29T10-00-deadbeef.jsonl"
    bad.write_text("garbage\n")
    locator = ChatFiles()
    assert locator.list_sessions() == []
    assert locator.problems
    assert bad.exists()


def test_a_file_cut_inside_its_prompt_is_corrupt_not_a_session_that_does_not_exist(isolated_home: Path) -> None:
    """Was hidden like a session with no prompt yet, so its resume said "no gemini-cli session matches" although
    the file named for it is there (e2e: test_gemini_cli_bad_input.py). A session with no prompt yet stays hidden."""
    path = write_session(isolated_home, "ws", "cut00000-1", "a prompt cut short", [])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 12])
    waiting = write_session(isolated_home, "ws", "new00000-1", "", [])
    locator = ChatFiles()
    with pytest.raises(CorruptSession, match=r"named for 'cut00000' but cannot be read: .* no prompt that can be read"):
        locator.resolve("cut00000")
    assert path.read_bytes() == data[: len(data) - 12]
    with pytest.raises(SessionNotFound):
        locator.resolve("new00000")
    assert waiting.exists()


def test_checkpoint_and_rewind(isolated_home: Path) -> None:
    path = write_session(
        isolated_home,
        "ws",
        "11112222-x",
        "p",
        [
            {"id": "g1", "type": "gemini", "content": "a"},
            {"id": "u2", "type": "user", "content": [{"text": "again"}]},
            {"$rewindTo": "u2"},
            {"$set": {"messages": [{"id": "u9", "type": "user", "content": "only"}]}},
        ],
    )
    assert [m["id"] for m in read_chat(path).messages] == ["u9"]


def test_resume_guard_restores_and_removes_empty_duplicate(isolated_home: Path) -> None:
    real = write_session(isolated_home, "ws", "cafe0000-1", "keep me", [{"id": "g1", "type": "gemini", "content": "a"}])
    guard = ResumeGuard(isolated_home / ".gemini", "cafe0000-1")
    guard.before()
    original = real.read_text()
    # What the CLI's bugs leave behind: a bare checkpoint, and an empty twin of the session.
    real.write_text(real.read_text().splitlines()[0] + '\n{"$set": {"messages": []}}\n')
    twin = real.with_name("session-2026-11-29T10-01-cafe0000.jsonl")
    twin.write_text(json.dumps({"sessionId": "cafe0000-1", "kind": "main"}) + "\n")
    repairs = guard.after()
    # Bad input round 16: the duplicate, which every resume makes, is removed unsaid (2 repairs said, before).
    assert repairs == [f"restored {real.name}: the CLI had dropped messages from it"]
    assert real.read_text() == original
    assert not twin.exists()


def test_resume_guard_moves_a_same_minute_file_out_of_the_clis_way(isolated_home: Path) -> None:
    real = write_session(isolated_home, "ws", "beef0000-1", "keep me", [{"id": "g1", "type": "gemini", "content": "a"}])
    now = datetime.now(UTC)
    same_minute = real.rename(real.with_name(f"session-{now:%Y-%m-%dT%H-%M}-beef0000.jsonl"))
    ResumeGuard(isolated_home / ".gemini", "beef0000-1").before()
    [moved] = session_files(isolated_home / ".gemini", "beef0000-1")
    assert moved != same_minute
    assert moved.name < same_minute.name
    assert read_chat(moved).messages[0]["content"] == [{"text": "keep me"}]


def test_replay_count_mirrors_the_clis_history_replay() -> None:
    messages: list[dict[str, Any]] = [
        {"type": "user", "content": [{"text": "<session_context>..."}]},
        {"type": "user", "content": [{"text": "hi"}]},
        {"type": "gemini", "content": "", "thoughts": [{"subject": "s"}], "toolCalls": [{"id": "1"}, {"id": "2"}]},
        {"type": "gemini", "content": "done"},
        {"type": "info", "content": "ignored"},
        {"type": "user", "content": [{"text": "  "}]},
    ]
    assert replay_count(messages) == 6


def test_resolve_reads_only_the_files_that_can_match(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import unified._adapters.gemini_cli._chat_files as sessions

    for n in range(40):
        write_session(isolated_home, "ws", f"{n:08x}-1111-4000-8000-000000000000", f"prompt {n}", [])
    write_session(isolated_home, "ws", "abcd0001-2222", "twin one", [])
    write_session(isolated_home, "ws", "abcd0002-3333", "twin two", [])
    read: list[str] = []
    real = sessions.summarize

    def counting(path: Path, project: str | None) -> Any:
        read.append(path.name)
        return real(path, project)

    monkeypatch.setattr(sessions, "summarize", counting)
    locator = ChatFiles()
    assert locator.resolve("0000001f").first_prompt == "prompt 31"
    assert read == ["session-2026-11-29T10-00-0000001f.jsonl"]
    read.clear()
    assert locator.resolve("ABCD0002-3333").session_id == "abcd0002-3333"  # a full id, any case
    assert len(read) == 1
    read.clear()
    with pytest.raises(AmbiguousSession, match="abcd0001"):
        locator.resolve("abcd")
    assert len(read) == 2
    with pytest.raises(SessionNotFound, match="recent sessions"):  # only a miss reads the whole listing
        locator.resolve("ffff")
    with pytest.raises(SessionNotFound):
        locator.resolve("../../etc")


def test_a_listed_session_carries_its_usage_and_turns_as_the_api_backends_do(
    isolated_home: Path, tmp_path: Path
) -> None:
    """The exact per-call tokens the CLI records, summed: a call's tool-call record (no `tokens`) is no turn,
    a message recorded again keeps one count, a checkpoint replaces what came before."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (isolated_home / ".gemini").mkdir()
    (isolated_home / ".gemini" / "projects.json").write_text(json.dumps({"projects": {str(ws): "ws"}}))
    tokens = {"input": 100, "output": 5, "cached": 10, "thoughts": 7, "tool": 2, "total": 124}
    write_session(
        isolated_home,
        "ws",
        "abcdef12-0000",
        "count me",
        [
            {"id": "early", "type": "gemini", "content": "x", "tokens": {"input": 5000}},
            {"$set": {"messages": [{"id": "old", "type": "gemini", "content": "x", "tokens": {"input": 900}}]}},
            {"id": "u1", "type": "user", "content": [{"text": "count me"}]},
            {"id": "g1", "type": "gemini", "content": "", "tokens": tokens, "model": "gemini-2.5-flash"},
            {"id": "g1", "type": "gemini", "content": "", "tokens": tokens, "model": "gemini-2.5-flash"},
            {"id": "g2", "type": "gemini", "content": "", "toolCalls": [{"id": "t", "name": "read_file"}]},
            {"id": "g3", "type": "gemini", "content": "done", "tokens": None, "model": "gemini-2.5-flash"},
        ],
    )
    (info,) = ChatFiles().list_sessions(str(ws))
    assert info.extra["turns"] == 3  # old, g1, g3
    assert info.extra["usage"] == {
        "input_tokens": 1000,
        "output_tokens": 5,
        "thinking_tokens": 7,
        "cached_tokens": 10,
        "tool_use_tokens": 2,
        "estimated": False,
        "cache_creation_tokens": 0,  # the Gemini CLI records none
        "cost_usd": None,
    }
    assert ChatFiles().show("abcdef12", str(ws))["session"]["extra"] == info.extra


def test_a_chat_file_whose_lines_are_json_but_no_records_says_so(tmp_path: Path) -> None:
    """Lines of JSON that are no object (`[1, 2]`, `"garbage"`, `7`) were said to be "not JSON (cut short?)"."""
    path = tmp_path / "session-2026-11-29T10-00-e5.jsonl"
    path.write_text('{"sessionId": "e5eeeeee-0", "kind": "main"}\n[1, 2]\n"garbage"\n7\n')
    with pytest.raises(CorruptSession) as refused:
        summarize(path, None)
    assert refused.value.message == (
        f"{path} has no prompt that can be read: 3 of its lines are no JSON object (cut short, or not the CLI's "
        "records: a list, a number, a string)"
    )
