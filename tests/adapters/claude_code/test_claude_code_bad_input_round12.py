"""Bad input round 12, Claude Code: a session file whose byte order mark cannot be removed before a resume (a
read-only file, a folder no file can be written in) was replaced by a writable file, or failed as
`backend_unavailable` not naming the mark; now a `corrupt_session` error says what is wrong and what to do, the
file untouched, no CLI started (it would drop the first prompt unsaid). And a session's listing showed its last
prompt as its summary, where every other backend's shows its first."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from tests.adapters.claude_code.test_claude_code_bad_input_round11 import _resumed, saved
from tests.adapters.claude_code.test_claude_code_sessions import A, session_lines
from unified import _limits as limits
from unified._adapters.claude_code import _session_files
from unified._adapters.claude_code._session_files import SessionFiles, project_dir_name, write_lines
from unified._sessions.records import _describe
from unified.events import ErrorEvent, Result, SessionStarted, WarningEvent


def _refused(events: list[object], path: Path) -> ErrorEvent:
    assert not any(isinstance(e, SessionStarted) for e in events)
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "corrupt_session"
    assert str(path) in error.message
    assert "byte order mark" in error.message
    assert "remove its first 3 bytes (EF BB BF) by hand" in error.message  # the hint
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    return error


@pytest.mark.anyio
async def test_a_mark_in_a_read_only_file_is_a_clear_error_and_the_file_is_untouched(tmp_path: Path) -> None:
    path = saved(tmp_path / "home", bom=True)
    path.chmod(0o400)
    body = path.read_bytes()
    events = await _resumed(tmp_path / "home", tmp_path)
    error = _refused(events, path)
    assert "read-only" in error.message
    assert path.read_bytes() == body
    assert path.stat().st_mode & 0o777 == 0o400


@pytest.mark.anyio
async def test_a_mark_that_cannot_be_written_away_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = saved(tmp_path / "home", bom=True)
    body = path.read_bytes()

    def read_only_folder(*args: object, **kwargs: object) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", str(path) + ".tmp")

    monkeypatch.setattr(_session_files, "write_atomically", read_only_folder)
    events = await _resumed(tmp_path / "home", tmp_path)
    error = _refused(events, path)
    assert "Permission denied" in error.message
    assert path.read_bytes() == body


def test_a_listing_shows_the_first_prompt_as_the_other_backends_do(tmp_path: Path) -> None:
    """`summary` is a backend's own summary of a session (the Gemini CLI writes one; Codex, the API backends and
    Claude Code none), and a listing shows it or else the first prompt: Claude Code's was its last prompt."""
    lines = session_lines(A, "the first prompt", "an answer", "/w")
    later = [{**line, "uuid": f"{line.get('uuid')}-2"} for line in session_lines(A, "a later prompt", "more", "/w")[1:]]
    write_lines(tmp_path / ".claude" / "projects" / project_dir_name("/w") / f"{A}.jsonl", [*lines, *later])
    [info] = SessionFiles(tmp_path).list_sessions()
    assert info.first_prompt == "the first prompt"
    assert info.summary is None
    assert "the first prompt" in _describe([info])
    assert "a later prompt" not in _describe([info])


@pytest.mark.anyio
async def test_a_marked_file_behind_a_link_is_repaired_where_it_is_and_the_link_kept(tmp_path: Path) -> None:
    """A session file that is a link (a synced or shared transcript): the repair replaced the link by a copy,
    leaving the file it named with its mark."""
    path = saved(tmp_path / "home", bom=True)
    elsewhere = tmp_path / "synced" / path.name
    elsewhere.parent.mkdir()
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    body = elsewhere.read_bytes()[3:]
    events = await _resumed(tmp_path / "home", tmp_path)
    assert any(isinstance(e, WarningEvent) and e.code == "session_repaired" for e in events)
    assert path.is_symlink()
    assert elsewhere.read_bytes() == body


def test_a_listing_keeps_a_pasted_first_prompt_as_every_store_keeps_it(tmp_path: Path) -> None:
    """A listed session's first prompt is clipped to `limits.MAX_SESSION_PROMPT_CHARS` whatever the backend
    (`records.clipped_prompt`): Claude Code's (and Codex's) gave it whole, so `unified sessions list --json`
    printed a pasted 200,000-character prompt in full for each such session."""
    pasted = "lorem ipsum " * 20_000
    write_lines(
        tmp_path / ".claude" / "projects" / project_dir_name("/w") / f"{A}.jsonl", session_lines(A, pasted, "ok", "/w")
    )
    [info] = SessionFiles(tmp_path).list_sessions()
    assert info.first_prompt is not None
    assert len(info.first_prompt) == limits.MAX_SESSION_PROMPT_CHARS
    assert info.first_prompt.startswith("lorem ipsum lorem")


@pytest.mark.parametrize("gone", [FileNotFoundError, PermissionError])
def test_a_file_gone_or_shut_while_it_was_listed_is_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, gone: type[OSError]
) -> None:
    """A session file whose lines say no time is listed with the file's own time, read after parsing it: a file
    deleted in between (a `sessions delete` beside the listing) or shut to its reader raised from the listing."""
    undated = [{k: v for k, v in line.items() if k != "timestamp"} for line in session_lines(A, "hi", "ok", "/w")]
    path = tmp_path / ".claude" / "projects" / project_dir_name("/w") / f"{A}.jsonl"
    write_lines(path, undated)
    parse = _session_files.parse_session

    def parsed_then_gone(*args: object, **kwargs: object) -> object:
        result = parse(*args, **kwargs)  # type: ignore[arg-type]
        if gone is FileNotFoundError:
            path.unlink()
        else:
            monkeypatch.setattr(Path, "stat", lambda self, **_: (_ for _ in ()).throw(PermissionError(13, "denied")))
        return result

    monkeypatch.setattr(_session_files, "parse_session", parsed_then_gone)
    listed = SessionFiles(tmp_path).list_sessions()
    if gone is FileNotFoundError:
        assert listed == []
    else:
        [info] = listed
        assert info.problem is not None
        assert "denied" in info.problem.message
