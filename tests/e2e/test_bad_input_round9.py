"""Bad input round 9 through the real binaries (see tests/sessions/test_bad_input_round9.py for the in-process
cases).

- A folder setting that names a regular file (`UNIFIED_DATA_DIR` for codex's home, `XDG_DATA_HOME` for claude-code's,
  `XDG_CACHE_HOME` for gemini-cli's settings file): each run failed with `internal_error` ("NotADirectoryError ...
  This is a bug in unified"), gemini-cli's before its stream even started; now `backend_unavailable` naming the
  file, the setting that names it and what to do.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from unified import ExecuteParams, execute
from unified.events import ErrorEvent, Result

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

FOLDER_SETTINGS = {
    "codex": ("UNIFIED_DATA_DIR", {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}),
    "claude-code": ("XDG_DATA_HOME", {"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}),
    "gemini-cli": ("XDG_CACHE_HOME", {"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"}),
}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("backend", list(FOLDER_SETTINGS))
async def test_a_folder_setting_that_names_a_file_is_backend_unavailable_naming_it(
    backend: str, binaries: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    setting, credentials = FOLDER_SETTINGS[backend]
    blocker = tmp_path / "notes.txt"
    blocker.write_text("not a folder")
    monkeypatch.setenv(setting, str(blocker))
    for name, value in credentials.items():
        monkeypatch.setenv(name, value)
    work = tmp_path / "work"
    work.mkdir()
    async with execute(ExecuteParams(prompt="hi", backend=backend, cwd=work)) as stream:
        events = [event async for event in stream]
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_unavailable", error.message
    assert f"{blocker} is a file, not a folder" in error.message, error.message
    assert f"{setting} names that file: point {setting} at a folder" in error.message, error.message
    assert "NotADirectoryError" not in error.message
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
    assert blocker.read_text() == "not a folder"
