"""A FIFO, a link to a FIFO or a device where Claude Code keeps a session file or a live-process entry:
refused as an unreadable file (a listing's problem, a CorruptSession on resolve, an OSError where an
unreadable file raised one before), never waited on or read, never deleted. No binary: the readers
are called on hand-made files in the test's own CLI home."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.not_regular import NOT_REGULAR, not_a_regular_file, still_there
from unified._adapters.claude_code._control import ClaudeConnection
from unified._adapters.claude_code._session_files import SessionFiles, parse_session, project_dir_name, write_lines
from unified._adapters.claude_code._shared_sessions import stored_session
from unified._adapters.claude_code._spares import ClaudeSpare
from unified._files import NotRegularFile
from unified.errors import CorruptSession
from unified.testing import FakeAgentProcess

GOOD = "536f72c5-73b2-43a2-93b4-ea679570dd03"
HOSTILE = "d354e6e1-f8db-4b8c-836f-e674427fc1e5"


def lines(session_id: str, prompt: str) -> list[dict[str, object]]:
    return [
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": session_id,
            "cwd": "/work/c",
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": prompt},
        }
    ]


def project(home: Path) -> Path:
    return home / ".claude" / "projects" / project_dir_name("/work/c")


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_session_file_that_is_not_a_file_is_listed_as_corrupt_and_left_alone(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    write_lines(project(home) / f"{GOOD}.jsonl", lines(GOOD, "hello"))
    with not_a_regular_file(project(home) / f"{HOSTILE}.jsonl", kind) as hostile:
        files = SessionFiles(home)
        listed = {s.session_id: s for s in files.list_sessions()}
        assert listed[GOOD].problem is None
        problem = listed[HOSTILE].problem
        assert problem is not None
        assert problem.kind == "corrupt"
        assert f"{hostile} cannot be read: {hostile} is not a regular file" in problem.message
        with pytest.raises(CorruptSession, match="not a regular file"):
            files.resolve(HOSTILE[:8])
        with pytest.raises(CorruptSession, match="not a regular file"):
            files.show(HOSTILE[:8])
        with pytest.raises(NotRegularFile):
            parse_session(hostile)
        with pytest.raises(NotRegularFile):  # a run's file is not shared, as an unreadable one was not
            stored_session(home, HOSTILE, Path("/work/c"), None)
    assert still_there(hostile, kind)


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_live_process_entry_that_is_not_a_file_is_not_read_nor_removed(tmp_path: Path, kind: str) -> None:
    entries = tmp_path / "sessions"
    with not_a_regular_file(entries / "4321.json", kind) as entry:
        ClaudeSpare(ClaudeConnection(FakeAgentProcess(pid=4321), "ours", entries=entries), "init").kill()
    assert still_there(entry, kind)


def test_links_to_regular_files_are_read_as_before(tmp_path: Path) -> None:
    home = tmp_path / "home"
    elsewhere = tmp_path / "elsewhere.jsonl"
    write_lines(elsewhere, lines(GOOD, "hello"))
    project(home).mkdir(parents=True)
    link = project(home) / f"{GOOD}.jsonl"
    link.symlink_to(elsewhere)
    [info] = SessionFiles(home).list_sessions()
    assert (info.session_id, info.first_prompt, info.problem) == (GOOD, "hello", None)
    stored = stored_session(home, GOOD, Path("/work/c"), None)
    assert stored is not None
    assert stored.state["session_file"]["text"] == elsewhere.read_text()
    entries = tmp_path / "sessions"
    entries.mkdir()
    (tmp_path / "entry.json").write_text(json.dumps({"pid": 4321, "sessionId": "ours"}))
    (entries / "4321.json").symlink_to(tmp_path / "entry.json")
    ClaudeSpare(ClaudeConnection(FakeAgentProcess(pid=4321), "ours", entries=entries), "init").kill()
    assert not (entries / "4321.json").exists()
