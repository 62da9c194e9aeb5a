"""Workspace confinement: relative paths, symlink escapes, NUL bytes, file:// URLs, extra roots."""

from __future__ import annotations

import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from unified.tools import ToolCall, ToolOutcome, ToolRuntime

pytestmark = pytest.mark.anyio
Get = Callable[[ToolOutcome], str]
Call = Callable[..., Awaitable[ToolOutcome]]


async def test_symlink_escape_is_refused(ws: Path, tmp_path: Path, call: Call, err: Get) -> None:
    (tmp_path / "outside.txt").write_text("secret\n")
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    message = err(await call("read_file", file_path="link.txt"))
    assert message.startswith('Path not in workspace: "link.txt" resolves to')
    (ws / "dirlink").symlink_to(tmp_path)
    assert err(await call("write_file", file_path="dirlink/new.txt", content="x")).startswith("Path not in workspace")
    assert not (tmp_path / "new.txt").exists()


async def test_dotdot_and_absolute_outside_refused(ws: Path, tmp_path: Path, call: Call, err: Get) -> None:
    (tmp_path / "o.txt").write_text("x")
    assert err(await call("read_file", file_path="../o.txt")).startswith("Path not in workspace")
    assert err(await call("read_file", file_path=str(tmp_path / "o.txt"))).startswith("Path not in workspace")


async def test_symlink_inside_workspace_is_fine(ws: Path, call: Call, ok: Get) -> None:
    (ws / "real.txt").write_text("hi\n")
    (ws / "alias.txt").symlink_to(ws / "real.txt")
    assert ok(await call("read_file", file_path="alias.txt")) == "hi\n"


async def test_nul_bytes_file_urls_and_at_prefix(ws: Path, call: Call, ok: Get) -> None:
    (ws / "my file.txt").write_text("content\n")
    assert ok(await call("read_file", file_path="my\0 file.txt")) == "content\n"
    assert ok(await call("read_file", file_path=(ws / "my%20file.txt").as_uri().replace("%2520", "%20"))) == "content\n"
    assert ok(await call("read_file", file_path="@my file.txt")) == "content\n"


async def test_empty_path_refused(call: Call, err: Get) -> None:
    assert err(await call("read_file", file_path="\0")) == "Path must not be empty."


async def test_include_directories_are_reachable(ws: Path, tmp_path: Path, ok: Get, err: Get) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "e.txt").write_text("extra\n")
    rt = ToolRuntime(ws, include_directories=[extra], approval_mode="yolo")
    [outcome] = await rt.run_batch([ToolCall("1", "read_file", {"file_path": str(extra / "e.txt")})])
    assert ok(outcome) == "extra\n"
    plain = ToolRuntime(ws, approval_mode="yolo")
    [refused] = await plain.run_batch([ToolCall("1", "read_file", {"file_path": str(extra / "e.txt")})])
    assert err(refused).startswith("Path not in workspace")


async def test_a_workspace_deleted_during_the_run_is_said_to_be_gone(ws: Path, call: Call, err: Get) -> None:
    """Every tool said something untrue of a workspace deleted under the run (`rm -rf "$PWD"` in a shell call):
    `Path not found: .`, `Path is not a directory: .`, and write_file "part of its path is a file". Now each says
    the workspace is gone and what to do. The shell refuses before it starts anything."""
    (ws / "a.txt").write_text("x\n")
    shutil.rmtree(ws)
    gone = (
        f"The workspace directory {ws} is gone: it was deleted, moved or replaced by a file after the session "
        "started, so no tool can read or write in it. Stop and tell the user; do not try to recreate it."
    )
    calls = [
        ("read_file", {"file_path": "a.txt"}),
        ("write_file", {"file_path": "b.txt", "content": "y"}),
        ("edit_file", {"file_path": "a.txt", "old_string": "x", "new_string": "y"}),
        ("list_dir", {}),
        ("tree", {}),
        ("search", {"query": "x"}),
        ("glob", {"pattern": "*"}),
        ("run_shell_command", {"command": "echo hi"}),
        ("run_shell_command", {"command": "echo hi", "dir_path": "sub"}),
    ]
    for name, args in calls:
        assert err(await call(name, **args)) == gone, name
    await anyio.Path(ws).write_text("a file where the workspace was")
    assert err(await call("list_dir")) == gone
