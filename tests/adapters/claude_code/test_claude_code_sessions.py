"""Claude Code's session files, read and written without the binary: listing, short ids, hostile files,
export to a portable conversation and back, retry's cut."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from unified._adapters.claude_code._backend import ClaudeCodeBackend
from unified._adapters.claude_code._conversation import (
    REDACTED_PREFIX,
    conversation_from_lines,
    lines_from_conversation,
    message_content,
)
from unified._adapters.claude_code._run import RunPlan
from unified._adapters.claude_code._session_files import (
    SessionFiles,
    is_prompt,
    parse_session,
    project_dir_name,
    write_lines,
)
from unified.conversations import (
    Conversation,
    ImagePart,
    ModelTurn,
    ServerToolCallPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.errors import AmbiguousSession, CorruptSession, SessionNotFound
from unified.types import ExecuteParams

A = "536f72c5-73b2-43a2-93b4-ea679570dd03"
B = "536f72d9-f8db-4b8c-836f-e674427fc1e5"
C = "d354e6e1-f8db-4b8c-836f-e674427fc1e5"


def session_lines(session_id: str, prompt: str, answer: str, cwd: str) -> list[dict[str, Any]]:
    return [
        {"type": "queue-operation", "operation": "enqueue", "sessionId": session_id},
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "sessionId": session_id,
            "cwd": cwd,
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": prompt},
        },
        {"type": "attachment", "uuid": "a1", "parentUuid": "u1", "attachment": {"type": "date"}},
        {
            "type": "assistant",
            "uuid": "m1",
            "parentUuid": "a1",
            "sessionId": session_id,
            "cwd": cwd,
            "timestamp": "2026-12-01T10:00:01.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [{"type": "thinking", "thinking": "Hmm.", "signature": "SIG"}],
                "usage": {"input_tokens": 5, "output_tokens": 2},
            },
        },
        {
            "type": "assistant",
            "uuid": "m2",
            "parentUuid": "m1",
            "sessionId": session_id,
            "timestamp": "2026-12-01T10:00:02.000Z",
            "message": {
                "id": "msg_1",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "n.txt"}}],
                "usage": {"input_tokens": 5, "output_tokens": 9},
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "parentUuid": "m2",
            "sessionId": session_id,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "alpha", "is_error": False}],
            },
        },
        {
            "type": "assistant",
            "uuid": "m3",
            "parentUuid": "u2",
            "sessionId": session_id,
            "message": {
                "id": "msg_2",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [{"type": "text", "text": answer}],
            },
        },
        {"type": "last-prompt", "lastPrompt": prompt, "sessionId": session_id},
    ]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    write_lines(projects / project_dir_name("/work/a_b") / f"{A}.jsonl", session_lines(A, "first", "one", "/work/a_b"))
    write_lines(projects / project_dir_name("/work/c") / f"{B}.jsonl", session_lines(B, "second", "two", "/work/c"))
    write_lines(projects / project_dir_name("/work/c") / f"{C}.jsonl", session_lines(C, "third", "three", "/work/c"))
    return home


def test_the_project_folder_is_the_cwd_with_every_other_character_a_dash() -> None:
    assert project_dir_name("/work/scratch/claude/work/s09_A") == "-work-scratch-claude-work-s09-A"


def test_sessions_are_listed_from_every_project_and_resolved_by_prefix(home: Path) -> None:
    files = SessionFiles(home)
    listed = files.list_sessions()
    assert {s.session_id for s in listed} == {A, B, C}
    assert {s.session_id for s in files.list_sessions("/work/c")} == {B, C}
    info = files.resolve("d354", cwd="/elsewhere")
    assert (info.session_id, info.first_prompt, info.model, info.cwd) == (C, "third", "claude-opus-5-5", "/work/c")
    assert files.resolve(A.upper()).session_id == A
    with pytest.raises(AmbiguousSession):
        files.resolve("536f72")
    with pytest.raises(SessionNotFound):
        files.resolve("ffff")


def test_a_file_without_a_prompt_is_hidden_and_one_without_a_readable_line_is_listed_as_corrupt(home: Path) -> None:
    projects = home / ".claude" / "projects" / "-work-x"
    projects.mkdir(parents=True)
    empty = "0e7d9c33-0000-4000-8000-000000000001"
    (projects / f"{empty}.jsonl").write_text(json.dumps({"type": "queue-operation"}) + "\n")
    broken = "0e7d9c33-0000-4000-8000-000000000002"
    (projects / f"{broken}.jsonl").write_bytes(b"\x00\xff garbage\n{not json\n")
    (projects / "notes.jsonl").write_text("not a session file name\n")
    listed = {s.session_id: s for s in SessionFiles(home).list_sessions()}
    assert empty not in listed
    assert listed[broken].problem is not None
    with pytest.raises(CorruptSession):
        SessionFiles(home).resolve(broken)


def test_an_empty_file_is_listed_as_corrupt_not_hidden(home: Path) -> None:
    """Was hidden like a session without a prompt, so its resume said "no claude-code session matches" although
    the file named for it is right there (e2e: test_claude_code_bad_input.py)."""
    projects = home / ".claude" / "projects" / "-work-x"
    projects.mkdir(parents=True)
    session_id = "0e7d9c33-0000-4000-8000-000000000003"
    (projects / f"{session_id}.jsonl").write_bytes(b"")
    with pytest.raises(CorruptSession, match="is empty"):
        SessionFiles(home).resolve(session_id[:8])
    assert (projects / f"{session_id}.jsonl").read_bytes() == b""


def test_bad_lines_are_skipped_and_counted(home: Path) -> None:
    path = next(SessionFiles(home).files())
    path.write_text(path.read_text() + "{half a line\n[1, 2]\n")
    parsed = parse_session(path)
    assert parsed.bad_lines == 2
    info = SessionFiles(home).info(path)
    assert info is not None
    assert info.extra == {"skipped_lines": 2}


def test_delete_removes_the_file_and_its_subagents(home: Path) -> None:
    files = SessionFiles(home)
    path = Path(str(files.resolve(A).path))
    side = path.with_suffix("") / "subagents"
    side.mkdir(parents=True)
    (side / "agent-x.jsonl").write_text("{}\n")
    files.delete(A[:8])
    assert not path.exists()
    assert not side.exists()
    with pytest.raises(SessionNotFound):
        files.resolve(A)


def test_export_merges_the_lines_of_one_message_and_keeps_signatures(home: Path) -> None:
    parsed = parse_session(Path(str(SessionFiles(home).resolve(A).path)))
    conversation = conversation_from_lines(parsed.lines, origin=None)
    roles = [t.role for t in conversation.turns]
    assert roles == ["user", "model", "user", "model"]
    model = conversation.turns[1]
    assert isinstance(model, ModelTurn)
    assert model.provider == "anthropic"
    assert [type(p).__name__ for p in model.parts] == ["ThinkingPart", "ToolCallPart"]
    thinking = model.parts[0]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.signature == "SIG"
    assert model.usage is not None
    assert model.usage.output_tokens == 9, "the message's usage, from its last line"
    result = conversation.turns[2].parts[0]
    assert isinstance(result, ToolResultPart)
    assert (result.call_id, result.name, result.output) == ("toolu_1", "Read", "alpha")


def test_a_conversation_becomes_compact_chained_lines_the_cli_resumes() -> None:
    conversation = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="hi"), ImagePart(mime_type="image/png", data=b"\x89PNG")]),
            ModelTurn(
                provider="anthropic",
                model="claude-opus-5-5",
                parts=[
                    ThinkingPart(text="own thought", signature="ANTHROPIC-SIG"),
                    ThinkingPart(text="", signature=REDACTED_PREFIX + "opaque"),
                    ToolCallPart(id="toolu_1", name="Bash", arguments={"command": "ls"}),
                ],
            ),
            UserTurn(parts=[ToolResultPart(call_id="toolu_1", name="Bash", output="a.txt")]),
        ]
    )
    lines = lines_from_conversation(conversation, session_id=A, cwd="/w", model=None)
    assert [line["parentUuid"] for line in lines[1:]] == [line["uuid"] for line in lines[:-1]]
    assert lines[0]["parentUuid"] is None
    assert all(line["sessionId"] == A for line in lines)
    blocks = lines[1]["message"]["content"]
    assert blocks[0] == {"type": "thinking", "thinking": "own thought", "signature": "ANTHROPIC-SIG"}
    assert blocks[1] == {"type": "redacted_thinking", "data": "opaque"}
    assert lines[0]["message"]["content"][1]["source"]["media_type"] == "image/png"
    back = conversation_from_lines(lines, origin=None)
    assert back.turns[1].parts == conversation.turns[1].parts


def test_another_providers_signatures_never_cross_and_their_thought_text_stays() -> None:
    google = ModelTurn(
        provider="google",
        parts=[
            ThinkingPart(text="Gemini's thought.", signature="GOOGLE"),
            TextPart(text="Answer.", signature="GOOGLE-TEXT"),
            ToolCallPart(id="gc-1-1", name="read_file", arguments={"file_path": "a"}, signature="GOOGLE-CALL"),
            ServerToolCallPart(id="s1", name="google_search", arguments={"q": "x"}),
        ],
    )
    content = message_content(google)
    text = json.dumps(content)
    assert "GOOGLE" not in text
    assert content[0] == {"type": "text", "text": "[thinking] Gemini's thought."}
    assert content[2] == {"type": "tool_use", "id": "gc-1-1", "name": "read_file", "input": {"file_path": "a"}}
    assert content[3]["text"].startswith("[server tool google_search was called with")


def _retry_plan(home: Path, cwd: Path) -> RunPlan:
    """What a retry of session A plans (nothing started)."""
    params = ExecuteParams(
        prompt="",
        backend="claude-code",
        cwd=cwd,
        resume=A[:8],
        retry=True,
        backend_options={"home": home, "start_process": lambda *a: None},
    )
    return ClaudeCodeBackend(params)._plan()


def test_retry_cuts_the_session_before_its_last_prompt(home: Path, tmp_path: Path) -> None:
    path = Path(str(SessionFiles(home).resolve(A).path))
    lines = parse_session(path).lines
    write_lines(
        path,
        [*lines, {"type": "user", "uuid": "u9", "parentUuid": "m3", "message": {"role": "user", "content": "again?"}}],
    )
    plan = _retry_plan(home, tmp_path)
    assert (plan.session_id, plan.resume, plan.content) == (A, True, "again?")
    kept = parse_session(path)
    assert [line["message"]["content"] for line in kept.lines if is_prompt(line)] == ["first"]
    assert len(kept.lines) == len(lines)


def test_retry_of_a_linked_session_file_cuts_the_file_it_names_and_keeps_the_link(home: Path, tmp_path: Path) -> None:
    """A session file that is a link (a synced or shared transcript) is cut where it lives: the retry replaced the
    link by a cut copy, and the file it named kept the prompt being answered again (bad input round 12's noticed)."""
    path = Path(str(SessionFiles(home).resolve(A).path))
    lines = parse_session(path).lines
    elsewhere = tmp_path / "synced" / path.name
    elsewhere.parent.mkdir()
    again = {"type": "user", "uuid": "u9", "parentUuid": "m3", "message": {"role": "user", "content": "again?"}}
    write_lines(elsewhere, [*lines, again])
    path.unlink()
    path.symlink_to(elsewhere)
    plan = _retry_plan(home, tmp_path)
    assert plan.content == "again?"
    assert path.is_symlink()
    assert len(parse_session(elsewhere).lines) == len(lines)
