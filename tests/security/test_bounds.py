"""Bounded everything (issue 24, "Resource exhaustion"; docs/tools.md, "Limits").

The attacker makes a tool produce or walk something huge: a directory of 200,000 entries, a tree
1,500 levels deep, a regular expression that backtracks for hours, a background command writing
gigabytes, an MCP server answering tens of megabytes or nesting its reply 10,000 levels. Every
case must end with a bounded answer that says what was cut, in bounded memory (tracemalloc's peak
of Python allocations, which the buffers at stake are), and must not block the event loop.
"""

from __future__ import annotations

import json
import os
import sys
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.harness import hostile_mcp_server
from tests.harness.loop_turns import counting_turns
from unified import _limits as limits
from unified.tools import ToolCall, ToolOutcome, ToolRuntime
from unified.types import StdioMcpServer

pytestmark = pytest.mark.anyio
MiB = 1024 * 1024
T = TypeVar("T")


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "ws"
    root.mkdir()
    yield root
    _remove_deep(root)  # pytest's own clean-up (shutil.rmtree) recurses and fails on a tree this deep


def _remove_deep(root: Path) -> None:
    """Remove the `d/d/...` chain `_deep` made, bottom up, one level at a time through descriptors."""
    fds = [os.open(root, os.O_RDONLY | os.O_DIRECTORY)]
    try:
        while True:
            try:
                fds.append(os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fds[-1]))
            except FileNotFoundError:
                break
        while len(fds) > 1:
            bottom = fds.pop()
            for name in os.listdir(bottom):
                os.unlink(name, dir_fd=bottom)
            os.close(bottom)
            os.rmdir("d", dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


async def _peak(step: Callable[[], Awaitable[T]]) -> tuple[T, int]:
    """`step()`'s result and the peak of Python memory allocated while it ran (bytes)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = await step()
        return result, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


async def _call(ws: Path, name: str, **args: Any) -> ToolOutcome:
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        [outcome] = await tools.run_batch([ToolCall("1", name, args)])
    return outcome


# --- list_dir, deep trees ---------------------------------------------------------------------------


def _many(directory: Path, count: int) -> None:
    directory.mkdir()
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for index in range(count):
            os.close(os.open(f"f{index:06d}", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the loop is not what it tests
async def test_list_dir_of_50k_entries_is_capped_in_output_and_memory(ws: Path) -> None:
    """50,000 entries (were 200,000: 115 s on a loaded machine, most of it making the files): the listing holds the
    first 2,000 only, 2.55 MiB traced; every entry kept and sorted (`sorted` for `heapq.nsmallest`) traced 6.0-8.1."""
    _many(ws / "big", 50_000)
    outcome, peak = await _peak(lambda: _call(ws, "list_dir", dir_path="big"))
    output = outcome.response["output"]
    lines = output.splitlines()
    assert lines[0] == "Directory listing for big:"
    assert lines[1:3] == ["f000000", "f000001"]
    assert (
        lines[-1]
        == f"[listing cut at {limits.LIST_DIR_MAX_ENTRIES:,} of 50,000 entries; list a subdirectory or use glob]"
    )
    assert len(lines) == limits.LIST_DIR_MAX_ENTRIES + 2
    assert len(output) < 64 * 1024
    assert peak < 4 * MiB


def _deep(root: Path, levels: int) -> Path:
    """`levels` nested directories `d/d/...` made through descriptors (no path-length limit), with
    a `needle.txt` at the bottom; the bottom directory's path."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(levels):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        needle = os.open("needle.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
        os.write(needle, b"the needle\n")
        os.close(needle)
    finally:
        os.close(fd)
    return root.joinpath(*["d"] * levels)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the walks run in a worker thread (`_safe_io.in_worker`)
@pytest.mark.parametrize("levels", [1_500, 3_000])
async def test_a_tree_thousands_of_levels_deep_is_walked_to_the_bottom(ws: Path, levels: int) -> None:
    _deep(ws, levels)
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        search, glob, tree = await tools.run_batch(
            [
                ToolCall("s", "search", {"query": "needle"}),
                ToolCall("g", "glob", {"pattern": "**/needle.txt"}),
                ToolCall("t", "tree", {"depth": 10}),
            ]
        )
    assert not search.is_error, search.response
    assert "/needle.txt:1: the needle" in search.response["output"]
    assert not glob.is_error, glob.response
    assert glob.response["output"].splitlines()[1].endswith("/d/needle.txt")
    assert not tree.is_error


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the walk runs in a worker thread, not on the loop
async def test_a_search_rooted_deep_down_reads_its_ignore_rules_one_level_at_a_time(ws: Path) -> None:
    bottom = _deep(ws, 1_500)
    (ws / ".gitignore").write_text("*.log\n")
    relative = bottom.relative_to(ws).as_posix()
    outcome = await _call(ws, "search", query="needle", path=relative)
    assert "needle.txt:1: the needle" in outcome.response["output"]


# --- regular expressions ------------------------------------------------------------------------------

CATASTROPHIC = ["(a+)+$", "(a|aa)+$", "(a|a?)+$", "^(a+)+b", "(.*a){25}", "^(\\w+\\s?)*$", "(x+x+)+y"]


@pytest.mark.parametrize("query", CATASTROPHIC)
async def test_catastrophic_patterns_match_in_linear_time_without_blocking_the_loop(ws: Path, query: str) -> None:
    """Python's `re` would backtrack for hours holding the GIL on these lines; the loop must keep
    running meanwhile (a ticker task advances) and the search must finish."""
    line = "a" * 30_000 + "!" + " ".join(["w"] * 5_000) + "x" * 3_000
    (ws / "f.txt").write_text(line + "\n" + line + "\n")
    with anyio.fail_after(HANG_GUARD_S):  # hang guard only
        async with counting_turns() as turns:
            outcome = await _call(ws, "search", query=query)
    assert not outcome.is_error, outcome.response
    assert turns.count > 0


async def test_a_pathological_ignore_file_cannot_stall_a_walk(ws: Path) -> None:
    (ws / ".gitignore").write_text("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n**/**/**/**/**/**/**/**/z\n")
    for index in range(50):
        (ws / ("a" * 200 + str(index))).write_text("needle\n")
    with anyio.fail_after(HANG_GUARD_S):
        outcome = await _call(ws, "search", query="needle", limit=200)
    assert outcome.response["output"].startswith("Found 50 match(es)")


@pytest.mark.parametrize(
    ("setting", "value", "note"),
    [
        ("SEARCH_TIME_BUDGET_S", -1.0, "it ran for -1 s"),
        ("WALK_MAX_ENTRIES", 10, "it visited 10 directory entries"),
        ("SEARCH_MAX_BYTES", 100, "it read 0 MiB"),
    ],
)
async def test_search_and_glob_stop_at_their_budget_and_say_so(
    ws: Path, monkeypatch: pytest.MonkeyPatch, setting: str, value: float, note: str
) -> None:
    for index in range(40):
        (ws / f"f{index:02d}.txt").write_text("needle\n" * 10)
    monkeypatch.setattr(limits, setting, value)
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        search, glob = await tools.run_batch(
            [ToolCall("s", "search", {"query": "needle", "limit": 200}), ToolCall("g", "glob", {"pattern": "*.txt"})]
        )
    assert f"[search stopped early: {note};" in search.response["output"]
    if setting != "SEARCH_MAX_BYTES":  # glob reads no content
        assert f"[glob stopped early: {note};" in glob.response["output"]


# --- tool outputs of any size -------------------------------------------------------------------------


async def test_a_custom_tool_returning_100_mb_is_cut_with_a_notice(ws: Path) -> None:
    def flood() -> str:
        """Returns 100 MB."""
        return "z" * (100 * MiB)

    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        tools.register(flood)
        [outcome] = await tools.run_batch([ToolCall("1", "flood", {})])
    output = outcome.response["output"]
    assert len(output) < limits.MAX_TOOL_OUTPUT_CHARS + 200
    assert output.endswith(
        f"[output cut at 262,144 characters: {100 * MiB - limits.MAX_TOOL_OUTPUT_CHARS:,} more not shown]"
    )


@pytest.mark.e2e  # runs bash
async def test_a_flooding_shell_command_is_tailed_in_bounded_memory(ws: Path) -> None:
    command = "head -c 100000000 /dev/zero | tr '\\0' x; echo; echo THE-END"
    outcome, peak = await _peak(lambda: _call(ws, "run_shell_command", command=command))
    output = outcome.response["output"]
    assert output.startswith("Output: [output cut: the first ")
    assert "THE-END" in output
    assert len(output) < 40 * 1024
    assert peak < 16 * MiB


@pytest.mark.e2e  # runs bash
async def test_background_output_is_capped_on_disk_and_in_every_answer(ws: Path) -> None:
    command = "head -c 40000000 /dev/zero | tr '\\0' y; echo; echo BG-END"
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        [started] = await tools.run_batch(
            [ToolCall("b", "run_shell_command", {"command": command, "is_background": True, "delay_ms": 300})]
        )
        first = started.response["output"]
        pid = int(first.split("PID ")[1].split(",")[0])
        logs = tools._shell.log_dir()
        with anyio.fail_after(HANG_GUARD_S):
            while True:  # ordered by what the process reports, not by time
                [read] = await tools.run_batch(
                    [ToolCall("r", "read_background_output", {"pid": pid, "lines": 5, "delay_ms": 50})]
                )
                if "EXITED" in read.response["output"] and "BG-END" in read.response["output"]:
                    break
        on_disk = sum(p.stat().st_size for p in logs.iterdir() if p.name.startswith("bg-"))
        [long_read] = await tools.run_batch([ToolCall("l", "read_background_output", {"pid": pid, "lines": 100000})])
    assert len(first) < 40 * 1024
    assert on_disk <= limits.BACKGROUND_LOG_MAX_BYTES
    assert len(long_read.response["output"]) < 70 * 1024


# --- MCP replies --------------------------------------------------------------------------------------


@pytest.fixture
def hostile_server() -> StdioMcpServer:
    return StdioMcpServer(
        name="hostile", command=sys.executable, args=(str(hostile_mcp_server.SCRIPT),), timeout_s=HANG_GUARD_S
    )


@pytest.mark.e2e  # starts an MCP server
async def test_hostile_mcp_replies_fail_fast_with_a_typed_reason_in_bounded_memory(
    ws: Path, hostile_server: StdioMcpServer
) -> None:
    """The call timeout is the hang guard itself: an answer must come from the caps, not from it."""
    async with ToolRuntime(ws, approval_mode="yolo") as tools:
        assert await tools.connect_mcp([hostile_server]) == []

        async def calls() -> list[ToolOutcome]:
            names = ["huge", "fine", "deep", "fine", "broken", "fine", "wide"]
            results = []
            for name in names:  # one after another: each failure must leave the session usable
                [outcome] = await tools.run_batch([ToolCall(name, f"mcp__hostile__{name}", {})])
                results.append(outcome)
            return results

        with anyio.fail_after(HANG_GUARD_S):
            outcomes, peak = await _peak(calls)
    huge, fine1, deep, fine2, broken, fine3, wide = outcomes
    assert huge.is_error
    assert "over 8 MiB" in huge.response["error"]
    assert deep.is_error
    assert "nest" in deep.response["error"]
    assert broken.is_error
    assert wide.is_error
    assert "nested deeper than 64 levels" in json.dumps(wide.response)
    assert [o.response for o in (fine1, fine2, fine3)] == [{"output": "fine"}] * 3
    assert peak < 48 * MiB  # a 40 MiB answer: at most the 8 MiB line cap of it is held


# --- the depth bound itself ----------------------------------------------------------------------


def _nested(depth: int, shape: str) -> Any:
    """A value `depth` levels deep, its deep branch behind a shallow sibling (the walk must not stop early)."""
    value: Any = "leaf"
    for level in range(depth):
        kind = shape if shape != "mixed" else ("dict", "list", "tuple")[level % 3]
        if kind == "dict":
            value = {"first": 1, "deep": value}
        elif kind == "list":
            value = [1, value]
        else:
            value = (1, value)
    return value


@pytest.mark.parametrize("shape", ["dict", "list", "tuple", "mixed"])
def test_the_depth_bound_counts_every_level_exactly(shape: str) -> None:
    for depth in (0, 1, 2, 3, 4, limits.MAX_JSON_DEPTH, limits.MAX_JSON_DEPTH + 1, 10_000):
        value = _nested(depth, shape)
        assert limits.too_deep(value) == (depth > limits.MAX_JSON_DEPTH), depth
        assert limits.too_deep(value, 3) == (depth > 3), depth
