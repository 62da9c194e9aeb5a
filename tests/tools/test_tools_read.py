"""read_file: paging, both read modes, the window footer, ceilings, images."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from unified.tools import ReadMode, ToolCall, ToolOutcome, ToolRuntime

pytestmark = pytest.mark.anyio
Get = Callable[[ToolOutcome], str]
Call = Callable[..., Awaitable[ToolOutcome]]

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


async def read(ws: Path, mode: ReadMode = "default-cap", cap: int = 2000, **args: Any) -> ToolOutcome:
    rt = ToolRuntime(ws, approval_mode="yolo", read_mode=mode, line_cap=cap)
    [outcome] = await rt.run_batch([ToolCall("r", "read_file", args)])
    return outcome


@pytest.mark.parametrize("mode", ["unlimited", "default-cap"])
async def test_file_shorter_than_cap_reads_byte_for_byte(ws: Path, ok: Get, mode: ReadMode) -> None:
    text = "alpha\r\n\tbeta  \n\ngamma without newline"
    (ws / "f.txt").write_bytes(text.encode())
    assert ok(await read(ws, mode, cap=10, file_path="f.txt")) == text


async def test_limit_covering_file_reads_whole_file_without_note(ws: Path, ok: Get) -> None:
    (ws / "f.txt").write_text(numbered(30))
    assert ok(await read(ws, cap=10, file_path="f.txt", limit=30)) == numbered(30)


async def test_default_cap_windows_and_names_continuation(ws: Path, ok: Get) -> None:
    (ws / "f.txt").write_text(numbered(25))
    text = ok(await read(ws, cap=10, file_path="f.txt"))
    assert text == numbered(10) + "[showing lines 1-10 of 25; continue with offset: 11]"


async def test_unlimited_reads_to_end_from_offset(ws: Path, ok: Get) -> None:
    (ws / "f.txt").write_text(numbered(25))
    text = ok(await read(ws, "unlimited", cap=10, file_path="f.txt", offset=21))
    assert text == "".join(f"line {i}\n" for i in range(21, 26)) + "[showing lines 21-25 of 25]"


async def test_limit_beyond_cap_is_honoured(ws: Path, ok: Get) -> None:
    (ws / "f.txt").write_text(numbered(50))
    text = ok(await read(ws, cap=10, file_path="f.txt", offset=5, limit=20))
    assert text.endswith("line 24\n[showing lines 5-24 of 50; continue with offset: 25]")
    assert text.startswith("line 5\n")


async def test_offset_past_end_names_length(ws: Path, err: Get) -> None:
    (ws / "f.txt").write_text(numbered(3))
    assert err(await read(ws, file_path="f.txt", offset=4)) == "offset 4 is past the end of f.txt, which has 3 lines."


async def test_empty_file(ws: Path, ok: Get, err: Get) -> None:
    (ws / "e.txt").write_text("")
    assert ok(await read(ws, file_path="e.txt")) == ""
    assert "which has 0 lines" in err(await read(ws, file_path="e.txt", offset=2))


async def test_missing_file_and_directory(ws: Path, err: Get) -> None:
    (ws / "d").mkdir()
    assert err(await read(ws, file_path="nope.txt")) == "File not found: nope.txt"
    assert err(await read(ws, file_path="d")) == "Path is a directory, not a file: d"


async def test_invalid_offset_is_a_parameter_error(ws: Path, err: Get) -> None:
    (ws / "f.txt").write_text("x\n")
    message = err(await read(ws, file_path="f.txt", offset=0))
    assert message.startswith("Invalid parameters provided to read_file. Reason: offset:")


async def test_long_lines_are_cut(ws: Path, ok: Get) -> None:
    (ws / "f.txt").write_text("a" * 2500 + "\nshort\n")
    text = ok(await read(ws, file_path="f.txt"))
    assert text.startswith("a" * 2000 + "... [line cut, 500 more chars]\nshort\n")
    assert text.endswith("[1 line(s) longer than 2000 characters were cut]")


async def test_byte_ceiling_stops_the_read(ws: Path, ok: Get) -> None:
    line = "x" * 1000 + "\n"
    (ws / "big.txt").write_text(line * 400)
    text = ok(await read(ws, "unlimited", file_path="big.txt"))
    assert text.count(line) == 262144 // 1001
    assert text.endswith(
        "[read stopped at the 256 KiB byte ceiling]\n[showing lines 1-261 of 400; continue with offset: 262]"
    )


async def test_binary_file_is_refused(ws: Path, err: Get) -> None:
    (ws / "b.bin").write_bytes(b"abc\0def")
    assert err(await read(ws, file_path="b.bin")) == "Cannot display content of binary file: b.bin"


async def test_image_detected_by_magic_number_not_name(ws: Path, ok: Get) -> None:
    (ws / "shot.dat").write_bytes(PNG)
    outcome = await read(ws, file_path="shot.dat", offset=1)
    assert ok(outcome) == f"Image shot.dat (image/png, {len(PNG)} bytes) attached."
    assert [(p.mime_type, p.data) for p in outcome.inline_data] == [("image/png", PNG)]
    (ws / "fake.png").write_text("not an image\n")
    plain = await read(ws, file_path="fake.png")
    assert ok(plain) == "not an image\n"
    assert plain.inline_data == ()


async def test_webp_gif_jpeg_detected(ws: Path) -> None:
    samples = {
        "a": (b"RIFF\x10\0\0\0WEBPVP8 " + b"\0" * 8, "image/webp"),
        "b": (b"GIF89a" + b"\0" * 8, "image/gif"),
        "c": (b"\xff\xd8\xff\xe0" + b"\0" * 8, "image/jpeg"),
    }
    for name, (data, _) in samples.items():
        (ws / name).write_bytes(data)
    for name, (_, mime) in samples.items():
        assert [p.mime_type for p in (await read(ws, file_path=name)).inline_data] == [mime]


async def test_huge_image_is_described_not_attached(ws: Path, ok: Get) -> None:
    (ws / "big.png").write_bytes(PNG + b"\0" * (8 * 1024 * 1024))
    outcome = await read(ws, file_path="big.png")
    assert ok(outcome).endswith("is over the 8 MiB limit; not attached.")
    assert outcome.inline_data == ()


def test_limit_description_follows_mode(ws: Path) -> None:
    def limit_text(mode: ReadMode) -> str:
        [decl] = [d for d in ToolRuntime(ws, read_mode=mode, line_cap=7).declarations() if d["name"] == "read_file"]
        return str(decl["parameters"]["properties"]["limit"]["description"])

    assert "at most 7 lines" in limit_text("default-cap")
    assert "to its end" in limit_text("unlimited")


def test_line_cap_must_be_positive(ws: Path) -> None:
    with pytest.raises(ValueError, match="line_cap must be at least 1"):
        ToolRuntime(ws, line_cap=0)
