"""Files written whole and atomically (`unified._files`): what the binaries' homes and unified's cache hold;
and files read from there only when they are regular files (a FIFO or a device refused, never waited on)."""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.harness.not_regular import NOT_REGULAR, not_a_regular_file, still_there
from unified._files import NotRegularFile, append_line, open_regular, read_regular, read_regular_text, write_atomically


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


def test_a_secret_is_never_readable_by_others_not_even_in_the_temporary(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temporary is created with the mode asked for: it was written with the umask's mode (0644 here) and
    narrowed only before the rename, so another user could open it, key inside, and keep reading."""
    created: list[int] = []
    real_open = os.open

    def spy(path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if str(path).endswith(".tmp"):
            created.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return fd

    monkeypatch.setattr(os, "open", spy)
    previous = os.umask(0o022)
    try:
        write_atomically(folder / "auth.json", "key", mode=0o600)
        write_atomically(folder / "config.toml", "x")
    finally:
        os.umask(previous)
    assert created == [0o600, 0o644]
    assert stat.S_IMODE((folder / "auth.json").stat().st_mode) == 0o600


def test_parents_makes_a_missing_directory_and_only_with_it(folder: Path) -> None:
    target = folder / "ab" / "record.json"
    with pytest.raises(FileNotFoundError):
        write_atomically(target, "x")
    written = write_atomically(target, "xy", parents=True, sync=True)
    assert target.read_text() == "xy"
    assert (written.st_ino, written.st_size) == (target.stat().st_ino, 2), "the status of the file now there"


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


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_what_is_not_a_regular_file_is_refused_on_open_never_waited_on(folder: Path, kind: str) -> None:
    """A FIFO with no writer would make a plain open wait forever, a device be read (without end, for
    /dev/zero): every reader of the binaries' homes refuses them with NotRegularFile, an OSError naming
    the path, what it is and what to do."""
    path = folder / "session.jsonl"
    with not_a_regular_file(path, kind):
        for read in (open_regular, read_regular, read_regular_text):
            with pytest.raises(NotRegularFile) as caught:
                read(path)
            assert isinstance(caught.value, OSError)
            assert caught.value.errno == errno.EINVAL
            assert caught.value.filename == str(path)
            what = "a character device" if kind == "link to a device" else "a FIFO"
            assert str(caught.value).startswith(f"{path} is not a regular file but {what}; ")
            assert "move it away" in str(caught.value)
        with pytest.raises(NotRegularFile):
            append_line(path, b"{}\n")
    assert still_there(path, kind)


def test_a_directory_and_a_missing_file_keep_their_own_errors(folder: Path) -> None:
    with pytest.raises(NotRegularFile) as caught:
        read_regular(folder)
    assert caught.value.errno == errno.EISDIR
    with pytest.raises(FileNotFoundError):
        read_regular(folder / "missing")


def test_a_link_to_a_regular_file_is_followed_and_read(folder: Path) -> None:
    """The binaries' homes may be the user's own, with links of their own: a link is followed, its
    target checked."""
    target = folder / "real.json"
    target.write_bytes(b'{"a": 1}\r\n')
    link = folder / "projects.json"
    link.symlink_to(target)
    with open_regular(link) as handle:
        assert handle.read() == b'{"a": 1}\r\n'
    assert read_regular(link) == b'{"a": 1}\r\n'
    assert read_regular_text(link) == target.read_text()  # newlines as Path.read_text gives them
    with pytest.raises(OSError, match="more than unified reads"):
        read_regular(link, max_bytes=3)
    append_line(link, b'{"b": 2}\n')
    assert target.read_bytes() == b'{"a": 1}\r\n{"b": 2}\n'


def test_append_line_starts_a_line_of_its_own(folder: Path) -> None:
    path = folder / "chat.jsonl"
    path.write_bytes(b'{"a": 1}')  # a last line cut short
    append_line(path, b'{"b": 2}\n')
    append_line(path, b'{"c": 3}\n')
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n{"c": 3}\n'
    empty = folder / "empty.jsonl"
    empty.write_bytes(b"")
    append_line(empty, b"x\n")
    assert empty.read_bytes() == b"x\n"
