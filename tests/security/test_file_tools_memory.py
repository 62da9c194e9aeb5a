"""read_file and search hold bounded memory on a 200 MB file (issue 11, finding 4).

Each measurement runs in a child process, so its peak RSS (`ru_maxrss`) is the tool's alone: the
child warms the tools up on a small file, notes its peak, runs one call and reports the growth.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from unified.tools import _safe_io

MiB = 1024 * 1024
SIZE = 200 * MiB
GROWTH_LIMIT_KIB = 64 * 1024
LINE = b"".join(b"%09d " % i + b"y" * 989 + b"\n" for i in range(1024))
"""1 MiB of 1,000-byte numbered lines."""

CHILD = textwrap.dedent(
    """
    import asyncio, json, resource, sys
    from pathlib import Path
    from unified.tools import ToolCall, ToolRuntime

    async def main() -> None:
        runtime = ToolRuntime(Path(sys.argv[1]), approval_mode="yolo")
        warm = [ToolCall("r", "read_file", {"file_path": "small.txt"}), ToolCall("s", "search", {"query": "y"})]
        await runtime.run_batch(warm)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        [outcome] = await runtime.run_batch([ToolCall("c", sys.argv[2], json.loads(sys.argv[3]))])
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({"growth_kib": after - before, "response": outcome.response}))

    asyncio.run(main())
    """
)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A workspace holding `one-line.txt` (200 MB, no newline), `lines.txt` (200 MB of lines) and a
    200 MB file that starts like a PNG; deleted after the module."""
    ws = tmp_path_factory.mktemp("big")
    (ws / "small.txt").write_text("x\n")
    with (ws / "one-line.txt").open("wb") as f:
        for _ in range(SIZE // MiB):
            f.write(b"x" * MiB)
    with (ws / "lines.txt").open("wb") as f:
        for _ in range(SIZE // MiB):
            f.write(LINE)
    with (ws / "image.png").open("wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.truncate(SIZE)
    yield ws
    for name in ("one-line.txt", "lines.txt", "image.png"):
        (ws / name).unlink()


def measure(ws: Path, tool: str, **args: Any) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ws), tool, json.dumps(args)], capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout)
    return int(report["growth_kib"]), dict(report["response"])


@pytest.mark.e2e  # runs a real subprocess
def test_read_file_one_200_mb_line(big: Path) -> None:
    growth, response = measure(big, "read_file", file_path="one-line.txt")
    assert growth < GROWTH_LIMIT_KIB, f"peak RSS grew {growth} KiB"
    assert response["output"] == (
        "x" * 2000 + f"... [line cut, {SIZE - 2000} more chars]\n[1 line(s) longer than 2000 characters were cut]"
    )


@pytest.mark.e2e  # runs a real subprocess
def test_read_file_200_mb_of_lines_counts_them_all(big: Path) -> None:
    lines = 1024 * (SIZE // MiB)
    growth, response = measure(big, "read_file", file_path="lines.txt")
    assert growth < GROWTH_LIMIT_KIB, f"peak RSS grew {growth} KiB"
    text = response["output"]
    assert text.startswith("000000000 y")
    assert text.endswith(
        f"[read stopped at the 256 KiB byte ceiling]\n[showing lines 1-262 of {lines}; continue with offset: 263]"
    )
    growth, response = measure(big, "read_file", file_path="lines.txt", offset=lines - 1)
    assert growth < GROWTH_LIMIT_KIB, f"peak RSS grew {growth} KiB"
    assert response["output"].splitlines()[0].startswith("000001022 y")
    assert response["output"].endswith(f"[showing lines {lines - 1}-{lines} of {lines}]")


@pytest.mark.parametrize(("name", "query"), [("one-line.txt", "z"), ("one-line.txt", "x"), ("lines.txt", "z")])
@pytest.mark.e2e  # runs a real subprocess
def test_search_streams_a_200_mb_file(big: Path, name: str, query: str) -> None:
    growth, response = measure(big, "search", query=query, path=name)
    assert growth < GROWTH_LIMIT_KIB, f"peak RSS grew {growth} KiB"
    if query == "z":
        assert response["output"] == f'No matches found for pattern "z" in path "{name}".'
    else:
        assert response["output"].splitlines()[1] == f"{name}:1: " + "x" * 200 + f" ({SIZE - 200} more chars...)"


@pytest.mark.e2e  # runs a real subprocess
def test_search_stops_at_the_match_limit(big: Path) -> None:
    growth, response = measure(big, "search", query="y", path="lines.txt", limit=3)
    assert growth < GROWTH_LIMIT_KIB, f"peak RSS grew {growth} KiB"
    assert response["output"].splitlines()[1:] == [
        "lines.txt:1: 000000000 " + "y" * 190 + " (799 more chars...)",
        "lines.txt:2: 000000001 " + "y" * 190 + " (799 more chars...)",
        "lines.txt:3: 000000002 " + "y" * 190 + " (799 more chars...)",
        "[limit of 3 matches reached; the list may be cut: narrow the query or the path]",
    ]


@pytest.mark.e2e  # runs a real subprocess
def test_a_huge_image_is_measured_not_read(big: Path) -> None:
    growth, response = measure(big, "read_file", file_path="image.png")
    assert growth < GROWTH_LIMIT_KIB, f"peak RSS grew {growth} KiB"
    assert response["output"] == f"Image image.png (image/png, {SIZE:,} bytes) is over the 8 MiB limit; not attached."


def _whole_file_lines(data: bytes, keep: int) -> list[tuple[int, str, int, bool, bool]]:
    """What streaming must equal: decode the whole file, split on `\\n`, drop one final `\\r`."""
    parts = data.decode("utf-8", errors="replace").split("\n")
    lines = []
    for number, part in enumerate(parts, 1):
        ended = number < len(parts)
        if not ended and not part:
            break
        body = part.removesuffix("\r")
        lines.append((number, body[:keep], len(body), body != part, ended))
    return lines


def test_streamed_lines_equal_the_whole_file_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines, CRs, multibyte and invalid UTF-8 cut across chunk edges: tiny chunks, random files."""
    rng = random.Random(11)
    pieces = [b"a", b"\n", b"\r", b"\r\n", "é".encode(), "😀".encode(), b"\xff", b"\xe2\x82", b"xyz" * 5]
    path = tmp_path / "f"
    for _ in range(800):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 60)))
        path.write_bytes(data)
        keep = rng.randint(1, 12)
        first = rng.randint(1, 8)
        last = rng.choice([None, first + rng.randint(0, 5)])
        monkeypatch.setattr(_safe_io, "CHUNK", rng.randint(1, 9))
        fd = os.open(path, os.O_RDONLY)
        try:
            stream = _safe_io.LineStream(fd, _safe_io.StopFlag(), keep)
            got = [(x.number, x.text, x.length, x.cr, x.ended) for x in stream.lines(first, last)]
        finally:
            os.close(fd)
        expected = _whole_file_lines(data, keep)
        assert got == [e for e in expected if e[0] >= first and (last is None or e[0] <= last)], (data, keep)
        assert stream.total == len(expected)
