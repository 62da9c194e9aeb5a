"""Bad input round 20, the CLI: a cassette (`unified replay`) or a fake's script (`unified serve`) that is there but
is no regular file said "no such file" (a FIFO, a link that loops, a link that leads nowhere): the reader went
looking for a file that was there. Now what is there; the cases that were right stay (a folder, a missing file)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.harness.cli_main import in_process

_MAKE: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (os.mkfifo, "is a FIFO"),
    "loop": (lambda path: os.symlink(path.name, path), "is a symbolic link that loops (it leads back to itself)"),
    "dangling": (lambda path: os.symlink("/nonexistent/cassette", path), "is a symbolic link to '/nonexistent/"),
    "folder": (lambda path: path.mkdir(), "is a directory"),
    "missing": (lambda path: None, "no such file"),
}


@pytest.mark.parametrize("kind", list(_MAKE))
def test_replay_of_what_is_no_file_says_what_is_there(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before for fifo, loop and dangling ("no such file"); the folder and the missing file are pins."""
    make, said = _MAKE[kind]
    path = tmp_path / "run.yaml"
    make(path)
    _assert_one_error_line(in_process(capsys, "replay", str(path)), EXIT_BAD_INPUT, f"run.yaml: {said}")


@pytest.mark.parametrize("kind", ["fifo", "loop", "dangling"])
def test_serve_of_a_script_that_is_no_file_says_what_is_there(
    tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before ("no such file"); no server starts."""
    make, said = _MAKE[kind]
    path = tmp_path / "script.json"
    make(path)
    _assert_one_error_line(in_process(capsys, "serve", str(path)), EXIT_BAD_INPUT, f"script.json: {said}")
