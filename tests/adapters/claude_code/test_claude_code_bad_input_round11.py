"""Bad input round 11, Claude Code's session files: a file whose first line starts with a UTF-8 byte order mark (an
editor's save) lost that line unsaid (`json.loads` refuses the mark: one more skipped line), and with it the
session's first prompt; the claude CLI drops it too, so a resume lost it unsaid. The line is read now, the listing
warns, and a resume removes the mark first (a `session_repaired` warning), so the CLI reads the prompt."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import anyio
import pytest

from tests.adapters.claude_code.test_claude_code_run import FakeClaude, starter, text_turn
from tests.adapters.claude_code.test_claude_code_sessions import A, session_lines
from unified import EventStream, ExecuteParams
from unified._adapters.claude_code._session_files import SessionFiles, parse_session, project_dir_name
from unified.events import Result, SessionStarted, WarningEvent


def saved(home: Path, *, bom: bool) -> Path:
    lines = session_lines(A, "first prompt", "an answer", "/w")[1:]  # the user line first, as an editor keeps it
    path = home / ".claude" / "projects" / project_dir_name("/w") / f"{A}.jsonl"
    path.parent.mkdir(parents=True)
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    path.write_bytes((codecs.BOM_UTF8 if bom else b"") + body)
    return path


def test_a_first_line_after_a_byte_order_mark_is_read_not_skipped(tmp_path: Path) -> None:
    parsed = parse_session(saved(tmp_path, bom=True))
    assert parsed.first_prompt == "first prompt"
    assert parsed.bad_lines == 0
    assert parsed.conversation_lines()[0]["message"]["content"] == "first prompt"


def test_the_listing_warns_that_the_claude_cli_drops_a_marked_line(tmp_path: Path) -> None:
    path = saved(tmp_path, bom=True)
    [info] = SessionFiles(tmp_path).list_sessions()
    assert info.first_prompt == "first prompt"
    assert "skipped_lines" not in info.extra
    [warning] = info.extra["warnings"]
    assert str(path) in warning
    assert "byte order mark" in warning
    assert "a resume by unified removes the 3 bytes first" in warning


def test_a_file_without_the_mark_has_no_warning(tmp_path: Path) -> None:
    saved(tmp_path, bom=False)
    [info] = SessionFiles(tmp_path).list_sessions()
    assert info.first_prompt == "first prompt"
    assert "warnings" not in info.extra


async def _resumed(home: Path, tmp_path: Path) -> list[object]:
    keep: list[FakeClaude] = []
    params = ExecuteParams(
        prompt="go on",
        backend="claude-code",
        cwd=tmp_path,
        resume=A[:8],
        backend_options={"home": home, "start_process": starter([text_turn("Done.")], keep)},
    )
    with anyio.fail_after(30):
        async with EventStream(params, strict=True) as stream:
            return [event async for event in stream]


@pytest.mark.anyio
async def test_a_resume_removes_the_mark_first_and_says_so(tmp_path: Path) -> None:
    path = saved(tmp_path / "home", bom=True)
    body = path.read_bytes()[3:]
    events = await _resumed(tmp_path / "home", tmp_path)
    [warning] = [e for e in events if isinstance(e, WarningEvent)]
    assert warning.code == "session_repaired"
    assert str(path) in warning.message
    assert "byte order mark" in warning.message
    assert path.read_bytes() == body  # the 3 bytes gone, every line kept
    assert any(isinstance(e, SessionStarted) and e.resumed for e in events)
    assert isinstance(events[-1], Result)


@pytest.mark.anyio
async def test_a_resume_of_a_file_without_the_mark_leaves_it_unchanged(tmp_path: Path) -> None:
    path = saved(tmp_path / "home", bom=False)
    body = path.read_bytes()
    events = await _resumed(tmp_path / "home", tmp_path)
    assert not any(isinstance(e, WarningEvent) for e in events)
    assert path.read_bytes() == body
