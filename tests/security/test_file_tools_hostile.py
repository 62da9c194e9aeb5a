"""The file tools under hostile input (issue 11, findings 2, 3 and 5).

Links and paths leading out of the workspace (including one swapped in while a tool runs), special
files (FIFOs, sockets, devices) and edits that must leave every other byte alone. Each escape case
runs every file tool and asserts the secret beside the workspace never reaches an output.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from tests.security.file_tool_calls import SECRET, Call, call, error, output, outside, text_of
from unified.tools import ToolCall, ToolRuntime
from unified.tools._paths import Workspace

__all__ = ["call", "outside"]

pytestmark = pytest.mark.anyio

HANG_GUARD_S = 60.0
"""Hang guard only: every call here returns in well under a second; a FIFO that blocked would hang."""

MARKER = "OUTSIDE-MARKER.txt"
"""A file name only the outside directory has: a listing that shows it looked outside."""


def _link(link: Path, target: str | Path, arg: str = "") -> str:
    """Makes the link; returns `arg`, the path a case names."""
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return arg


def _chain(ws: Path, out: Path) -> str:
    _link(ws / "b", out / "secret.txt")
    _link(ws / "a", ws / "b")
    return "a"


ESCAPES: dict[str, Callable[[Path, Path], str]] = {
    "file link": lambda ws, out: _link(ws / "link.txt", out / "secret.txt", "link.txt"),
    "relative file link": lambda ws, out: _link(ws / "rel.txt", "../outside/secret.txt", "rel.txt"),
    "file through a dir link": lambda ws, out: _link(ws / "dirlink", out, "dirlink/secret.txt"),
    "dir link": lambda ws, out: _link(ws / "dirlink", out, "dirlink"),
    "chain of links": _chain,
    "nested link": lambda ws, out: _link(ws / "sub/deep/l", out / "secret.txt", "sub/deep/l"),
    "dangling link": lambda ws, out: _link(ws / "dangling", out / "new.txt", "dangling"),
    "link to the parent": lambda ws, out: _link(ws / "up", "..", "up/outside/secret.txt"),
    "link to /": lambda ws, out: _link(ws / "slash", "/", f"slash{out}/secret.txt"),
    "dot-dot": lambda ws, out: "../outside/secret.txt",
    "dot-dot through a subdir": lambda ws, out: _link(ws / "sub/l", "x", "sub/../../outside/secret.txt"),
    "absolute path": lambda ws, out: str(out / "secret.txt"),
    "file:// URL": lambda ws, out: (out / "secret.txt").as_uri(),
    "/proc/self/root": lambda ws, out: f"/proc/self/root{out}/secret.txt",
    "NUL bytes": lambda ws, out: "..\0/outside\0/secret.txt",
    "@ prefix": lambda ws, out: "@../outside/secret.txt",
}


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir()}


@pytest.mark.parametrize("case", list(ESCAPES))
async def test_no_tool_reads_lists_or_writes_outside(ws: Path, outside: Path, call: Call, case: str) -> None:
    (outside / MARKER).write_text("x\n")
    (ws / "inside.txt").write_text("harmless\n")
    arg = ESCAPES[case](ws, outside)
    before = _snapshot(outside)
    calls: list[tuple[str, dict[str, object]]] = [
        ("read_file", {"file_path": arg}),
        ("search", {"query": "root:", "path": arg}),
        ("search", {"query": "root:"}),
        ("glob", {"pattern": "**/*"}),
        ("list_dir", {"dir_path": arg}),
        ("tree", {"path": arg, "depth": 5}),
        ("tree", {"depth": 5}),
        ("edit_file", {"file_path": arg, "old_string": "root:", "new_string": "pwned:"}),
        ("write_file", {"file_path": arg, "content": "pwned\n"}),
        ("edit_file", {"file_path": arg, "old_string": "", "new_string": "pwned\n"}),
    ]
    for name, args in calls:
        seen = text_of(await call(name, **args))
        assert SECRET not in seen, (name, args, seen)
        assert MARKER not in seen, (name, args, seen)
    assert _snapshot(outside) == before


async def test_search_skips_links_out_in_a_walk_and_refuses_one_named(ws: Path, outside: Path, call: Call) -> None:
    _link(ws / "link.txt", outside / "secret.txt")
    (ws / "own.txt").write_text("root:mine\n")
    found = output(await call("search", query="^root:"))
    assert found.splitlines() == ['Found 1 match(es) for pattern "^root:" in path ".":', "own.txt:1: root:mine"]
    assert error(await call("search", query="^root:", path="link.txt")).startswith(
        'Path not in workspace: "link.txt" resolves to'
    )


async def test_plan_mode_search_cannot_read_through_a_link(ws: Path, outside: Path) -> None:
    _link(ws / "link", outside / "secret.txt")
    runtime = ToolRuntime(ws, approval_mode="plan")
    [outcome] = await runtime.run_batch([ToolCall("s", "search", {"query": "root:"})])
    assert output(outcome) == 'No matches found for pattern "root:" in path ".".'


async def test_glob_names_links_out_that_it_left_out(ws: Path, outside: Path, call: Call) -> None:
    _link(ws / "out.txt", outside / "secret.txt")
    (ws / "in.txt").write_text("x")
    _link(ws / "alias.txt", ws / "in.txt")
    text = output(await call("glob", pattern="*.txt"))
    assert text.splitlines()[1:] == [  # same mtime (the link's is its target's): path order
        str(ws / "alias.txt"),
        str(ws / "in.txt"),
        "[1 link(s) pointing outside the workspace left out: out.txt]",
    ]


async def test_listings_show_a_link_out_by_name_only(ws: Path, outside: Path, call: Call) -> None:
    (outside / MARKER).write_text("x")
    _link(ws / "away", outside)
    (ws / "home").mkdir()
    _link(ws / "alias", ws / "home")
    assert output(await call("list_dir")) == "Directory listing for .:\nalias/\nhome/\naway"
    assert output(await call("tree", depth=3)) == "alias\naway\nhome/"


# --- races: a component swapped for a link after the path was checked ----------------------------


@pytest.fixture
def swap_after_resolve(monkeypatch: pytest.MonkeyPatch) -> list[Callable[[], None]]:
    """Swaps run right after `Workspace.resolve` checked a path, i.e. between the check and the open."""
    swaps: list[Callable[[], None]] = []
    checked = Workspace._resolve_sync

    def resolve_then_swap(self: Workspace, raw: str) -> Path:
        real = checked(self, raw)
        for swap in swaps:
            swap()
        swaps.clear()
        return real

    monkeypatch.setattr(Workspace, "_resolve_sync", resolve_then_swap)
    return swaps


def _swap_for_link(path: Path, target: Path) -> Callable[[], None]:
    def swap() -> None:
        path.rename(path.with_name(path.name + ".moved"))
        path.symlink_to(target)

    return swap


RACED_CALLS: list[tuple[str, dict[str, object]]] = [
    ("read_file", {"file_path": "d/f.txt"}),
    ("search", {"query": "root:", "path": "d/f.txt"}),
    ("search", {"query": "root:", "path": "d"}),
    ("search", {"query": "root:"}),
    ("glob", {"pattern": "**/*", "dir_path": "d"}),
    ("list_dir", {"dir_path": "d"}),
    ("tree", {"path": "d"}),
    ("edit_file", {"file_path": "d/f.txt", "old_string": "root:", "new_string": "pwned:"}),
    ("write_file", {"file_path": "d/f.txt", "content": "pwned\n"}),
    ("write_file", {"file_path": "d/new/n.txt", "content": "pwned\n"}),
]


@pytest.mark.parametrize(("tool", "args"), RACED_CALLS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(RACED_CALLS)])
@pytest.mark.parametrize("component", ["directory", "file"])
async def test_a_link_swapped_in_after_the_check_is_not_followed(
    ws: Path,
    outside: Path,
    call: Call,
    swap_after_resolve: list[Callable[[], None]],
    tool: str,
    args: dict[str, object],
    component: str,
) -> None:
    (outside / "f.txt").write_text(f"root:{SECRET}\n")
    (outside / MARKER).write_text("x")
    (ws / "d").mkdir()
    (ws / "d/f.txt").write_text("root:harmless\n")
    if component == "directory":
        swap_after_resolve.append(_swap_for_link(ws / "d", outside))
    else:
        swap_after_resolve.append(_swap_for_link(ws / "d/f.txt", outside / "f.txt"))
    before = _snapshot(outside)
    outcome = await call(tool, **args)
    seen = text_of(outcome)
    assert SECRET not in seen, seen
    assert MARKER not in seen, seen
    assert _snapshot(outside) == before
    named = str(args.get("file_path", args.get("path", args.get("dir_path", "."))))
    if outcome.is_error and named != ".":
        assert "Refusing to follow a symbolic link" in seen or "not found" in seen.lower(), seen


async def test_a_thread_swapping_a_link_in_a_loop_never_leaks(ws: Path, outside: Path, call: Call) -> None:
    """A shell racing the tools: `d` flips between a real directory and a link to the outside."""
    (outside / "f.txt").write_text(f"root:{SECRET}\n")
    real = ws / "d.real"
    real.mkdir()
    (real / "f.txt").write_text("root:harmless\n")
    (ws / "d.link").symlink_to(outside)
    done = threading.Event()
    flips = 0

    def flip() -> None:
        nonlocal flips
        while not done.is_set():
            for source in (real, ws / "d.link"):
                try:
                    source.rename(ws / "d")
                    (ws / "d").rename(source)
                except OSError:
                    continue
                flips += 1

    swapper = threading.Thread(target=flip)
    swapper.start()
    seen: list[str] = []
    try:
        for _ in range(60):
            for name, args in [
                ("read_file", {"file_path": "d/f.txt"}),
                ("search", {"query": "root:"}),
                ("search", {"query": "root:", "path": "d"}),
                ("edit_file", {"file_path": "d/f.txt", "old_string": "root:", "new_string": "root:"}),
                ("write_file", {"file_path": "d/f.txt", "content": "root:harmless\n"}),
                ("tree", {}),
            ]:
                seen.append(text_of(await call(name, **args)))
    finally:
        done.set()
        await anyio.to_thread.run_sync(swapper.join)
    assert flips > 0
    assert not [s for s in seen if SECRET in s]
    assert (outside / "f.txt").read_text() == f"root:{SECRET}\n"
    assert sorted(os.listdir(outside)) == ["f.txt", "secret.txt"]


async def test_a_workspace_root_replaced_after_the_check_is_refused(
    ws: Path, outside: Path, call: Call, swap_after_resolve: list[Callable[[], None]]
) -> None:
    (ws / "secret.txt").write_text("root:harmless\n")
    swap_after_resolve.append(_swap_for_link(ws, outside))
    outcome = await call("read_file", file_path="secret.txt")
    assert SECRET not in text_of(outcome)
    assert error(outcome) == f"The workspace directory {ws} was replaced after the session started; refusing to use it."


# --- special files ---------------------------------------------------------------------------------


def _mknod(path: Path, kind: int, device: int) -> None:
    try:
        os.mknod(path, 0o600 | kind, device)
    except PermissionError:
        pytest.skip("creating device nodes needs CAP_MKNOD")


def _fifo(ws: Path) -> str:
    os.mkfifo(ws / "pipe")
    return "pipe"


def _socket(ws: Path) -> str:
    server = socket.socket(socket.AF_UNIX)
    cwd = os.getcwd()
    os.chdir(ws)  # AF_UNIX paths are limited to ~100 bytes; tmp_path can be longer
    try:
        server.bind("sock")
    finally:
        os.chdir(cwd)
    return "sock"


def _char_device(ws: Path) -> str:
    _mknod(ws / "zero", stat.S_IFCHR, os.makedev(1, 5))
    return "zero"


def _char_device_via_link(ws: Path) -> str:
    _mknod(ws / "zero", stat.S_IFCHR, os.makedev(1, 5))
    (ws / "zlink").symlink_to(ws / "zero")
    return "zlink"


def _block_device(ws: Path) -> str:
    _mknod(ws / "loop", stat.S_IFBLK, os.makedev(7, 0))
    return "loop"


SPECIALS: dict[str, tuple[Callable[[Path], str], str]] = {
    "fifo": (_fifo, "a FIFO"),
    "socket": (_socket, "a socket"),
    "char device": (_char_device, "a character device"),
    "char device via a link": (_char_device_via_link, "a character device"),
    "block device": (_block_device, "a block device"),
}


@pytest.mark.parametrize("case", list(SPECIALS))
async def test_special_files_are_refused_by_name_and_skipped_in_walks(ws: Path, call: Call, case: str) -> None:
    make, kind = SPECIALS[case]
    name = make(ws)
    shown = "zero" if name == "zlink" else name  # messages name the resolved path
    (ws / "plain.txt").write_text("needle\n")
    with anyio.fail_after(HANG_GUARD_S):
        for tool, args, verb in [
            ("read_file", {"file_path": name}, "read"),
            ("write_file", {"file_path": name, "content": "x"}, "write"),
            ("edit_file", {"file_path": name, "old_string": "a", "new_string": "b"}, "edit"),
            ("edit_file", {"file_path": name, "old_string": "", "new_string": "b"}, "edit"),
            ("search", {"query": "needle", "path": name}, "search"),
        ]:
            message = error(await call(tool, **args))
            assert message == f"{shown} is {kind}, not a regular file; refusing to {verb} it.", (tool, message)
        walked = output(await call("search", query="needle"))
        assert walked.splitlines() == ['Found 1 match(es) for pattern "needle" in path ".":', "plain.txt:1: needle"]
        assert name in output(await call("list_dir")).splitlines()
        assert name in output(await call("tree")).splitlines()
        assert str(ws / name) in output(await call("glob", pattern="*"))
    assert stat.S_ISREG((ws / "plain.txt").stat().st_mode)
    assert not stat.S_ISREG(os.stat(ws / name).st_mode)


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/stdin"])
async def test_links_to_devices_are_outside_the_workspace(ws: Path, call: Call, device: str) -> None:
    (ws / "dev").symlink_to(device)
    with anyio.fail_after(HANG_GUARD_S):
        for tool, args in [
            ("read_file", {"file_path": "dev"}),
            ("write_file", {"file_path": "dev", "content": "x"}),
            ("edit_file", {"file_path": "dev", "old_string": "a", "new_string": "b"}),
            ("search", {"query": "x", "path": "dev"}),
        ]:
            assert error(await call(tool, **args)).startswith('Path not in workspace: "dev" resolves to')
        assert output(await call("search", query="x")) == 'No matches found for pattern "x" in path ".".'


async def test_a_fifo_ignore_file_does_not_hang_the_walkers(ws: Path, call: Call) -> None:
    os.mkfifo(ws / ".gitignore")
    (ws / "sub").mkdir()
    os.mkfifo(ws / "sub/.ignore")
    (ws / "sub/a.txt").write_text("needle\n")
    with anyio.fail_after(HANG_GUARD_S):
        assert "sub/a.txt:1: needle" in output(await call("search", query="needle"))
        assert output(await call("tree")) == ".gitignore\nsub/\n  .ignore\n  a.txt"
        assert str(ws / "sub/a.txt") in output(await call("glob", pattern="**/*.txt"))


# --- edit_file and write_file keep every byte they were not asked to change ------------------------

EDITS: dict[str, tuple[bytes, str, str, bytes]] = {
    "invalid UTF-8 elsewhere": (b"caf\xe9 \xff\xfe\nx = 1\n", "x = 1", "x = 2", b"caf\xe9 \xff\xfe\nx = 2\n"),
    "invalid UTF-8 on the same line": (b"\x80x = 1\x81\n", "x = 1", "y", b"\x80y\x81\n"),
    "mixed endings": (b"a\r\nb\nc\r\nd\n", "b", "B", b"a\r\nB\nc\r\nd\n"),
    "mixed endings, new lines in an LF part": (b"a\r\nb\nc\r\n", "b", "b1\nb2", b"a\r\nb1\nb2\nc\r\n"),
    "mixed endings, new lines in a CRLF part": (b"a\r\nb\nc\r\n", "c", "c1\nc2", b"a\r\nb\nc1\r\nc2\r\n"),
    "CRLF file, old_string with LF": (b"one\r\ntwo\r\nthree\r\n", "one\ntwo", "1\n2", b"1\r\n2\r\nthree\r\n"),
    "LF file, old_string with CRLF": (b"one\ntwo\n", "one\r\ntwo", "1\r\n2", b"1\n2\n"),
    "BOM": (b"\xef\xbb\xbfhello\nworld\n", "hello", "HELLO", b"\xef\xbb\xbfHELLO\nworld\n"),
    "no trailing newline": (b"a\nb", "b", "c", b"a\nc"),
    "no trailing newline, CRLF": (b"x\r\ny", "y", "1\n2", b"x\r\n1\r\n2"),
    "lone CR kept": (b"a\rb\nc\n", "c", "C", b"a\rb\nC\n"),
    "trailing spaces and tabs": (b"\tx  \n y\t\n", "y", "z", b"\tx  \n z\t\n"),
}


@pytest.mark.parametrize("case", list(EDITS))
async def test_edit_changes_only_the_replaced_span(ws: Path, call: Call, case: str) -> None:
    before, old, new, after = EDITS[case]
    (ws / "f").write_bytes(before)
    output(await call("edit_file", file_path="f", old_string=old, new_string=new))
    assert (ws / "f").read_bytes() == after


async def test_edit_allow_multiple_uses_each_places_ending(ws: Path, call: Call) -> None:
    (ws / "f").write_bytes(b"k\r\nk\n")
    output(await call("edit_file", file_path="f", old_string="k", new_string="k1\nk2", allow_multiple=True))
    assert (ws / "f").read_bytes() == b"k1\r\nk2\r\nk1\nk2\n"


async def test_edit_refuses_binary_and_leaves_it(ws: Path, call: Call) -> None:
    data = b"head\0\xff\nx = 1\n"
    (ws / "b.bin").write_bytes(data)
    assert error(await call("edit_file", file_path="b.bin", old_string="x = 1", new_string="x = 2")) == (
        "Cannot edit binary file: b.bin"
    )
    assert (ws / "b.bin").read_bytes() == data


async def test_edit_and_write_refuse_lone_surrogates(ws: Path, call: Call) -> None:
    (ws / "f").write_bytes(b"a\n")
    message = error(await call("edit_file", file_path="f", old_string="a", new_string="\udc80"))
    assert message == "new_string is not valid Unicode text (a lone surrogate at character 0); f was not changed."
    message = error(await call("write_file", file_path="f", content="ok\ud800"))
    assert message == "content is not valid Unicode text (a lone surrogate at character 2); f was not changed."
    assert (ws / "f").read_bytes() == b"a\n"


async def test_edit_refuses_files_over_the_cap(ws: Path, call: Call) -> None:
    big = ws / "big.txt"
    with big.open("wb") as f:
        f.truncate(16 * 1024 * 1024 + 1)
    message = error(await call("edit_file", file_path="big.txt", old_string="a", new_string="b"))
    assert message == "big.txt is over the 16 MiB limit of edit_file; change it with a shell command instead."
    assert big.stat().st_size == 16 * 1024 * 1024 + 1


async def test_write_converts_only_a_wholly_crlf_file(ws: Path, call: Call) -> None:
    (ws / "crlf").write_bytes(b"a\r\nb\r\n")
    (ws / "mixed").write_bytes(b"a\r\nb\n")
    output(await call("write_file", file_path="crlf", content="x\ny\n"))
    output(await call("write_file", file_path="mixed", content="x\ny\r\n"))
    assert (ws / "crlf").read_bytes() == b"x\r\ny\r\n"
    assert (ws / "mixed").read_bytes() == b"x\ny\r\n"


async def test_writes_replace_the_file_keeping_its_mode(ws: Path, outside: Path, call: Call) -> None:
    """A hard link's other name keeps the old content: a write replaces, it never writes through (an edit, which
    reads the file, refuses a file with other names: round 26)."""
    script = ws / "run.sh"
    script.write_text("echo a\n")
    script.chmod(0o751)
    output(await call("edit_file", file_path="run.sh", old_string="a", new_string="b"))
    assert script.read_text() == "echo b\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    os.link(script, outside / "hard")
    output(await call("write_file", file_path="run.sh", content="echo c\n"))
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert (outside / "hard").read_text() == "echo b\n"
    assert os.listdir(ws) == ["run.sh"]


async def test_links_inside_the_workspace_still_work(ws: Path, call: Call) -> None:
    (ws / "real").mkdir()
    (ws / "real/f.txt").write_text("needle one\n")
    _link(ws / "alias.txt", "real/f.txt")
    _link(ws / "dir", ws / "real")
    assert output(await call("read_file", file_path="dir/f.txt")) == "needle one\n"
    assert "alias.txt:1: needle one" in output(await call("search", query="needle"))
    assert output(await call("list_dir", dir_path="dir")) == "Directory listing for real:\nf.txt"
    output(await call("edit_file", file_path="alias.txt", old_string="one", new_string="two"))
    assert (ws / "alias.txt").is_symlink()
    assert (ws / "real/f.txt").read_text() == "needle two\n"
    _link(ws.parent / "ws-link", ws)
    rooted = ToolRuntime(ws.parent / "ws-link", approval_mode="yolo")
    [outcome] = await rooted.run_batch([ToolCall("r", "read_file", {"file_path": "alias.txt"})])
    assert output(outcome) == "needle two\n"
