"""Bad input round 11, Claude Code's session files: a file whose first line starts with a UTF-8 byte order mark (an
editor's save) lost that line unsaid (`json.loads` refuses the mark: one more skipped line), and with it the
session's first prompt. The line is read now, and the listing warns that the claude CLI still drops it."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

from tests.adapters.claude_code.test_claude_code_sessions import A, session_lines
from unified._adapters.claude_code._session_files import SessionFiles, parse_session, project_dir_name


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
    assert "remove the 3 bytes EF BB BF" in warning


def test_a_file_without_the_mark_has_no_warning(tmp_path: Path) -> None:
    saved(tmp_path, bom=False)
    [info] = SessionFiles(tmp_path).list_sessions()
    assert info.first_prompt == "first prompt"
    assert "warnings" not in info.extra
