"""Bad input round 12, Claude Code: a session file whose byte order mark cannot be removed before a resume (a
read-only file, a folder no file can be written in) stopped the run with the OSError of the write, an
`internal_error`; now a `corrupt_session` error says what is wrong and what to do, the file untouched, no CLI
started (it would drop the first prompt unsaid)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from tests.adapters.claude_code.test_claude_code_bad_input_round11 import _resumed, saved
from unified._adapters.claude_code import _session_files
from unified.events import ErrorEvent, Result, SessionStarted


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
