"""write_file and edit_file (alias `replace`): creation, CRLF, placeholders, exact matching."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from unified.tools import ToolOutcome

pytestmark = pytest.mark.anyio
Get = Callable[[ToolOutcome], str]
Call = Callable[..., Awaitable[ToolOutcome]]


async def test_write_creates_parents_then_overwrites(ws: Path, call: Call, ok: Get) -> None:
    first = await call("write_file", file_path="a/b/c.txt", content="one\n")
    assert ok(first) == "Successfully created and wrote to new file: a/b/c.txt."
    second = await call("write_file", file_path="a/b/c.txt", content="two\n")
    assert ok(second) == "Successfully overwrote file: a/b/c.txt."
    assert (ws / "a/b/c.txt").read_bytes() == b"two\n"


async def test_write_keeps_crlf_of_existing_file(ws: Path, call: Call, ok: Get) -> None:
    (ws / "w.txt").write_bytes(b"old\r\nlines\r\n")
    ok(await call("write_file", file_path="w.txt", content="new\nbody\r\nend\n"))
    assert (ws / "w.txt").read_bytes() == b"new\r\nbody\r\nend\r\n"
    ok(await call("write_file", file_path="lf.txt", content="a\nb\n"))
    assert (ws / "lf.txt").read_bytes() == b"a\nb\n"


async def test_write_refuses_directory(ws: Path, call: Call, err: Get) -> None:
    (ws / "d").mkdir()
    assert err(await call("write_file", file_path="d", content="x")) == "Path is a directory, not a file: d"


@pytest.mark.parametrize(
    "line",
    [
        "// ... rest of code unchanged",
        "    # ... existing code ...",
        "rest of methods ...",
        "/* … remaining cases … */",
    ],
)
async def test_write_refuses_omission_placeholders(ws: Path, call: Call, err: Get, line: str) -> None:
    (ws / "f.py").write_text("keep\n")
    message = err(await call("write_file", file_path="f.py", content=f"def f():\n{line}\n"))
    assert message.startswith("content holds an omission placeholder at line 2")
    assert (ws / "f.py").read_text() == "keep\n"


@pytest.mark.parametrize("line", ['print("loading...")', "# the rest is history", "x = a[...]", "# ..."])
async def test_write_accepts_ordinary_ellipses(ws: Path, call: Call, ok: Get, line: str) -> None:
    ok(await call("write_file", file_path="f.py", content=line + "\n"))
    assert (ws / "f.py").read_text() == line + "\n"


async def test_edit_replaces_unique_text(ws: Path, call: Call, ok: Get) -> None:
    (ws / "e.py").write_text("a = 1\nb = 2\n")
    out = ok(await call("edit_file", file_path="e.py", old_string="b = 2", new_string="b = 3"))
    assert out == "Successfully modified file: e.py (1 replacement)."
    assert (ws / "e.py").read_text() == "a = 1\nb = 3\n"


async def test_edit_absent_and_ambiguous_are_distinct_and_leave_file(ws: Path, call: Call, err: Get) -> None:
    (ws / "e.py").write_text("x = 1\nx = 1\n")
    absent = err(await call("edit_file", file_path="e.py", old_string="y = 1", new_string="y = 2"))
    assert absent.startswith("old_string was not found in e.py.")
    assert "re-read it with read_file" in absent
    ambiguous = err(await call("edit_file", file_path="e.py", old_string="x = 1", new_string="x = 2"))
    assert ambiguous.startswith("old_string occurs 2 times in e.py.")
    assert "set allow_multiple to true" in ambiguous
    assert (ws / "e.py").read_text() == "x = 1\nx = 1\n"


async def test_edit_allow_multiple(ws: Path, call: Call, ok: Get) -> None:
    (ws / "e.py").write_text("x = 1\nx = 1\n")
    out = ok(await call("edit_file", file_path="e.py", old_string="x = 1", new_string="x = 2", allow_multiple=True))
    assert out == "Successfully modified file: e.py (2 replacements)."
    assert (ws / "e.py").read_text() == "x = 2\nx = 2\n"


async def test_edit_identical_strings_is_error(ws: Path, call: Call, err: Get) -> None:
    (ws / "e.py").write_text("x\n")
    message = err(await call("edit_file", file_path="e.py", old_string="x", new_string="x"))
    assert message == "old_string and new_string are identical; nothing would change in e.py."


async def test_edit_keeps_crlf(ws: Path, call: Call, ok: Get) -> None:
    (ws / "c.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    ok(await call("edit_file", file_path="c.txt", old_string="one\ntwo", new_string="1\n2"))
    assert (ws / "c.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_empty_old_string_creates_or_refuses(ws: Path, call: Call, ok: Get, err: Get) -> None:
    assert ok(await call("edit_file", file_path="n/new.txt", old_string="", new_string="hi\n")) == (
        "Created new file: n/new.txt."
    )
    assert (ws / "n/new.txt").read_text() == "hi\n"
    message = err(await call("edit_file", file_path="n/new.txt", old_string="", new_string="x"))
    assert message.startswith("old_string is empty but n/new.txt already exists")


async def test_edit_missing_file_and_directory(ws: Path, call: Call, err: Get) -> None:
    (ws / "d").mkdir()
    assert err(await call("edit_file", file_path="no.txt", old_string="a", new_string="b")) == "File not found: no.txt"
    assert err(await call("edit_file", file_path="d", old_string="a", new_string="b")) == (
        "Path is a directory, not a file: d"
    )


async def test_replace_is_an_alias_of_edit_file(ws: Path, call: Call, ok: Get) -> None:
    (ws / "e.py").write_text("a\n")
    outcome = await call("replace", file_path="e.py", old_string="a", new_string="b")
    assert outcome.name == "replace"
    ok(outcome)
    assert (ws / "e.py").read_text() == "b\n"
