"""Files written whole and atomically (`unified._files`): what the binaries' homes and unified's cache hold."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from unified._files import write_atomically


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder of the test's own (the isolated home is in `tmp_path` too)."""
    path = tmp_path / "folder"
    path.mkdir()
    return path


def test_text_and_bytes_replace_the_file_whole_with_the_mode_given(folder: Path) -> None:
    target = folder / "auth.json"
    target.write_text("old")
    write_atomically(target, "néw")
    assert target.read_text(encoding="utf-8") == "néw"
    write_atomically(target, b"\x00secret", mode=0o600)
    assert target.read_bytes() == b"\x00secret"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in folder.iterdir()] == ["auth.json"], "no temporary file is left"


def test_writers_at_once_in_one_process_never_take_each_others_file(folder: Path) -> None:
    """With a temporary name per process alone, one thread's rename took another's file away
    (FileNotFoundError); every write here must land, and the file is always one writer's whole text."""
    target = folder / "projects.json"
    failures: list[BaseException] = []
    start = threading.Barrier(8)

    def writer(n: int) -> None:
        start.wait()
        try:
            for i in range(40):
                write_atomically(target, f"{n}:{i}" * 100)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    text = target.read_text()
    assert text == text[: len(text) // 100] * 100, "one writer's whole text"
    assert [p.name for p in folder.iterdir()] == ["projects.json"]


def test_a_write_that_fails_leaves_no_temporary_file(folder: Path) -> None:
    target = folder / "chats"
    target.mkdir()  # a rename over a directory fails
    with pytest.raises(IsADirectoryError):
        write_atomically(target, "x")
    assert [p.name for p in folder.iterdir()] == ["chats"]
