"""Following JSONL files as a binary appends to them: only new bytes, files found late, bad lines skipped."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.harness.not_regular import NOT_REGULAR, not_a_regular_file, still_there
from unified._binary.follow import JsonlFollower, JsonlTail, split_records
from unified._files import NotRegularFile


def line(record: dict[str, Any]) -> bytes:
    return json.dumps(record).encode() + b"\n"


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def test_split_records_keeps_the_unfinished_line() -> None:
    records, rest = split_records(b"", line({"a": 1}) + b"not json\n[1]\n" + b'{"b": ')
    assert (records, rest) == ([{"a": 1}], b'{"b": ')
    assert split_records(rest, b"2}\n") == ([{"b": 2}], b"")


def test_a_tail_reads_only_new_bytes_and_starts_over_when_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(line({"n": 1}) + b'{"n": ')
    tail = JsonlTail(path)
    assert tail.read() == [{"n": 1}]
    append(path, b"2}\n" + line({"n": 3}))
    assert tail.read() == [{"n": 2}, {"n": 3}]
    assert tail.read() == []
    path.write_bytes(line({"n": 9}))  # rewritten shorter
    assert tail.read() == [{"n": 9}]


def test_files_there_at_start_are_read_from_their_end_new_ones_from_their_start(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"
    old.write_bytes(line({"old": 0}))
    follower = JsonlFollower(lambda: sorted(tmp_path.glob("*.jsonl")), rescan_interval=None)
    follower.start()
    append(old, line({"old": 1}))
    new = tmp_path / "new.jsonl"
    new.write_bytes(line({"new": 1}))
    assert follower.poll() == [(old, {"old": 1})]  # no rescan asked: the new file is not known yet
    assert follower.poll(rescan=True) == [(new, {"new": 1})]
    assert list(follower.tails) == [old, new]


def test_new_files_come_in_the_order_they_were_written(tmp_path: Path) -> None:
    follower = JsonlFollower(lambda: sorted(tmp_path.glob("*.jsonl")), rescan_interval=None)
    follower.start()
    first, second = tmp_path / "b.jsonl", tmp_path / "a.jsonl"  # names sort the other way
    first.write_bytes(line({"n": 1}))
    second.write_bytes(line({"n": 2}))
    os.utime(first, (1_000, 1_000))
    os.utime(second, (2_000, 2_000))
    assert [record["n"] for _, record in follower.poll(rescan=True)] == [1, 2]


def test_a_rescan_interval_finds_late_files_without_being_asked(tmp_path: Path) -> None:
    follower = JsonlFollower(lambda: sorted(tmp_path.glob("*.jsonl")), rescan_interval=0.0)
    follower.start()
    (tmp_path / "late.jsonl").write_bytes(line({"late": True}))
    assert follower.poll() == [(tmp_path / "late.jsonl", {"late": True})]


def test_an_unreadable_file_is_dropped_with_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"")
    follower = JsonlFollower(lambda: [path], rescan_interval=None)
    follower.start()
    path.unlink()
    assert follower.poll() == []
    assert follower.unreadable is not None
    assert str(path) in follower.unreadable
    assert follower.tails == {}


def test_a_listing_that_fails_is_reported_not_raised(tmp_path: Path) -> None:
    def broken() -> list[Path]:
        raise PermissionError("denied")

    follower = JsonlFollower(broken)
    follower.start()
    assert follower.poll(rescan=True) == []
    assert follower.unreadable == "cannot list the files: denied"


@pytest.mark.parametrize("kind", NOT_REGULAR)
def test_a_fifo_or_a_device_among_the_files_is_dropped_not_waited_on(tmp_path: Path, kind: str) -> None:
    """A FIFO (no writer: a plain open waits forever) or a device named by `discover()` is refused on
    the open descriptor: its reason is kept, the other files go on being followed."""
    good = tmp_path / "good.jsonl"
    good.write_bytes(b"")
    hostile = tmp_path / "hostile.jsonl"
    with not_a_regular_file(hostile, kind):
        follower = JsonlFollower(lambda: [hostile, good], rescan_interval=None)
        follower.start()
        append(good, line({"n": 1}))
        assert follower.poll() == [(good, {"n": 1})]
        assert follower.unreadable is not None
        assert f"{hostile} is not a regular file" in follower.unreadable
        assert list(follower.tails) == [good]
        with pytest.raises(NotRegularFile):
            JsonlTail(hostile).read()
    assert still_there(hostile, kind)


def test_a_link_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "real.jsonl"
    target.parent.mkdir()
    target.write_bytes(line({"n": 1}))
    link = tmp_path / "f.jsonl"
    link.symlink_to(target)
    tail = JsonlTail(link)
    assert tail.read() == [{"n": 1}]
    append(target, line({"n": 2}))
    assert tail.read() == [{"n": 2}]
