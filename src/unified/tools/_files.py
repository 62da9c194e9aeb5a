"""read_file, write_file, edit_file, list_dir, tree and glob (seeds 000 and 002).

All disk work happens in worker threads (`anyio.to_thread`), so a slow disk never stalls the loop.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio.to_thread
from pydantic import Field

from unified.tools._base import InlineData, Params, Progress, ToolError, ToolOutput
from unified.tools._ignore import IgnoreRules, scan, walk_files
from unified.tools._paths import Workspace

ReadMode = Literal["unlimited", "default-cap"]
"""What a read_file call without `limit` returns: the rest of the file, or `line_cap` lines."""

READ_BYTE_CEILING = 256 * 1024
MAX_LINE_CHARS = 2000
MAX_IMAGE_BYTES = 8 * 1024 * 1024
TREE_MAX_LINES = 1000
TREE_MAX_BYTES = 16 * 1024
TREE_MAX_DEPTH = 10
GLOB_MAX_RESULTS = 1000

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime(head: bytes) -> str | None:
    """The image type by magic number, never by file name (seed 002)."""
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True)
class FileConfig:
    workspace: Workspace
    read_mode: ReadMode = "default-cap"
    line_cap: int = 2000


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept, split on `\\n` only (so `\\r\\n` and form feeds survive)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


async def _read_bytes(path: Path, shown: str) -> bytes:
    def read() -> bytes:
        if not path.exists():
            raise ToolError(f"File not found: {shown}")
        if path.is_dir():
            raise ToolError(f"Path is a directory, not a file: {shown}")
        return path.read_bytes()

    return await anyio.to_thread.run_sync(read)


# --- read_file ---------------------------------------------------------------------------------


class ReadFileParams(Params):
    file_path: str = Field(description="Path of the file, relative to the workspace root or absolute.")
    offset: int = Field(default=1, ge=1, description="1-based line to start reading from.")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read.")


def read_file_limit_text(config: FileConfig) -> str:
    if config.read_mode == "default-cap":
        return f"How many lines to read. Left out, at most {config.line_cap} lines are returned."
    return "How many lines to read. Left out, the file is read to its end."


async def read_file(config: FileConfig, p: ReadFileParams, progress: Progress) -> ToolOutput:
    path = await config.workspace.resolve(p.file_path)
    shown = config.workspace.display(path)
    data = await _read_bytes(path, shown)
    mime = image_mime(data[:16])
    if mime is not None:
        label = f"Image {shown} ({mime}, {len(data):,} bytes)"
        if len(data) > MAX_IMAGE_BYTES:
            return ToolOutput(f"{label} is over the 8 MiB limit; not attached.")
        return ToolOutput(f"{label} attached.", (InlineData(mime, data),))
    if b"\0" in data:
        raise ToolError(f"Cannot display content of binary file: {shown}")
    lines = split_lines(data.decode("utf-8", errors="replace"))
    total = len(lines)
    if p.offset > max(total, 1):
        raise ToolError(f"offset {p.offset} is past the end of {shown}, which has {total} lines.")
    if p.limit is not None:
        count = p.limit
    elif config.read_mode == "default-cap":
        count = config.line_cap
    else:
        count = total
    start = p.offset - 1
    window = lines[start : start + count]
    out: list[str] = []
    used = 0
    cut_lines = 0
    for line in window:
        body = line.rstrip("\r\n")
        if len(body) > MAX_LINE_CHARS:
            line = (
                f"{body[:MAX_LINE_CHARS]}... [line cut, {len(body) - MAX_LINE_CHARS} more chars]" + (line[len(body) :])
            )
            cut_lines += 1
        size = len(line.encode("utf-8"))
        if used + size > READ_BYTE_CEILING and out:
            break
        out.append(line)
        used += size
    end = start + len(out)
    text = "".join(out)
    notes: list[str] = []
    if len(out) < len(window):
        notes.append("[read stopped at the 256 KiB byte ceiling]")
    if cut_lines:
        notes.append(f"[{cut_lines} line(s) longer than {MAX_LINE_CHARS} characters were cut]")
    if end < total:
        notes.append(f"[showing lines {start + 1}-{end} of {total}; continue with offset: {end + 1}]")
    elif start > 0:
        notes.append(f"[showing lines {start + 1}-{end} of {total}]")
    if notes:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "\n".join(notes)
    return ToolOutput(text)


# --- write_file --------------------------------------------------------------------------------

_COMMENT_EDGES = re.compile(r"^\s*(?://+|#+|/\*+|\*+|<!--|--|;+)?\s*|\s*(?:\*/|-->)?\s*$")
_PLACEHOLDER = re.compile(
    r"(?:rest|remainder|remaining|existing|other|previous|unchanged|same)\b[\w\s,()'/-]*", re.IGNORECASE
)


def find_placeholder(content: str) -> tuple[int, str] | None:
    """The first line that stands in for omitted code (`// ... rest of code unchanged`), if any.

    Only lines that are nothing but an ellipsis and such words count, so real code mentioning
    "rest" or an ellipsis in a string passes.
    """
    for number, line in enumerate(content.splitlines(), 1):
        if "..." not in line and "…" not in line:
            continue
        core = _COMMENT_EDGES.sub("", line).replace("…", "...").strip()
        words = core.replace("...", " ").strip()
        if words and _PLACEHOLDER.fullmatch(words) and len(core) < 100:
            return number, line.strip()
    return None


class WriteFileParams(Params):
    file_path: str = Field(description="Path of the file to create or overwrite.")
    content: str = Field(description="The complete new content of the file.")


async def write_file(config: FileConfig, p: WriteFileParams, progress: Progress) -> ToolOutput:
    path = await config.workspace.resolve(p.file_path)
    shown = config.workspace.display(path)
    found = find_placeholder(p.content)
    if found:
        raise ToolError(
            f"content holds an omission placeholder at line {found[0]} ({found[1]!r}); "
            "write_file replaces the whole file, so give its complete content."
        )

    def write() -> str:
        if path.is_dir():
            raise ToolError(f"Path is a directory, not a file: {shown}")
        existed = path.exists()
        content = p.content
        if existed and b"\r\n" in path.read_bytes():
            content = content.replace("\r\n", "\n").replace("\n", "\r\n")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8"))
        if existed:
            return f"Successfully overwrote file: {shown}."
        return f"Successfully created and wrote to new file: {shown}."

    return ToolOutput(await anyio.to_thread.run_sync(write))


# --- edit_file ---------------------------------------------------------------------------------


class EditFileParams(Params):
    file_path: str = Field(description="Path of the file to edit.")
    old_string: str = Field(
        description="The exact literal text to replace, including whitespace and indentation. Empty creates a new file."
    )
    new_string: str = Field(description="The exact literal text to put in its place.")
    allow_multiple: bool = Field(
        default=False, description="Replace every occurrence instead of requiring exactly one."
    )


async def edit_file(config: FileConfig, p: EditFileParams, progress: Progress) -> ToolOutput:
    path = await config.workspace.resolve(p.file_path)
    shown = config.workspace.display(path)
    if p.old_string == p.new_string:
        raise ToolError(f"old_string and new_string are identical; nothing would change in {shown}.")

    def edit() -> str:
        if path.is_dir():
            raise ToolError(f"Path is a directory, not a file: {shown}")
        if not path.exists():
            if p.old_string:
                raise ToolError(f"File not found: {shown}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(p.new_string.encode("utf-8"))
            return f"Created new file: {shown}."
        if not p.old_string:
            raise ToolError(
                f"old_string is empty but {shown} already exists; give the text to replace, "
                "or use write_file to overwrite the whole file."
            )
        raw = path.read_bytes().decode("utf-8", errors="replace")
        crlf = "\r\n" in raw
        text = raw.replace("\r\n", "\n")
        old = p.old_string.replace("\r\n", "\n")
        count = text.count(old)
        if count == 0:
            raise ToolError(
                f"old_string was not found in {shown}. The file differs from what you expect: "
                "re-read it with read_file and copy the text to replace exactly, whitespace included."
            )
        if count > 1 and not p.allow_multiple:
            raise ToolError(
                f"old_string occurs {count} times in {shown}. Include more surrounding lines so it "
                "matches exactly one place, or set allow_multiple to true to replace every occurrence."
            )
        new = text.replace(old, p.new_string.replace("\r\n", "\n"))
        if crlf:
            new = new.replace("\n", "\r\n")
        path.write_bytes(new.encode("utf-8"))
        return f"Successfully modified file: {shown} ({count} replacement{'s' if count > 1 else ''})."

    return ToolOutput(await anyio.to_thread.run_sync(edit))


# --- list_dir ----------------------------------------------------------------------------------


class ListDirParams(Params):
    dir_path: str = Field(default=".", description="Directory to list; the workspace root if left out.")
    ignore: list[str] = Field(default_factory=list, description="Glob patterns of entry names to leave out.")


async def _directory(config: FileConfig, raw: str) -> tuple[Path, str]:
    path = await config.workspace.resolve(raw)
    shown = config.workspace.display(path)
    if not await anyio.Path(path).exists():
        raise ToolError(f"Path not found: {shown}")
    if not await anyio.Path(path).is_dir():
        raise ToolError(f"Path is not a directory: {shown}")
    return path, shown


async def list_dir(config: FileConfig, p: ListDirParams, progress: Progress) -> ToolOutput:
    path, shown = await _directory(config, p.dir_path)
    entries = await anyio.to_thread.run_sync(scan, path, None)
    patterns = [glob_regex(g) for g in p.ignore]
    kept = [e for e in entries if not any(rx.fullmatch(e.name) for rx in patterns)]
    if not kept:
        suffix = f" ({len(entries)} ignored)" if entries else ""
        return ToolOutput(f"Directory {shown} is empty.{suffix}")
    names = [e.name + "/" if e.is_dir() else e.name for e in kept]
    names.sort(key=lambda n: (not n.endswith("/"), n))
    ignored = len(entries) - len(kept)
    tail = f"\n({ignored} ignored)" if ignored else ""
    return ToolOutput(f"Directory listing for {shown}:\n" + "\n".join(names) + tail)


# --- tree --------------------------------------------------------------------------------------


class TreeParams(Params):
    path: str = Field(default=".", description="Directory to root the tree at; the workspace root if left out.")
    depth: int = Field(
        default=2,
        description=f"Levels below the root: 1 lists the root's entries, 2 adds their contents. "
        f"At most {TREE_MAX_DEPTH}.",
    )


def render_tree(root: Path, depth: int, top: Path) -> str:
    lines: list[str] = []
    size = 0
    cut: str | None = None

    def emit(line: str) -> bool:
        nonlocal size, cut
        if len(lines) >= TREE_MAX_LINES:
            cut = f"{TREE_MAX_LINES} lines"
        elif size + len(line.encode("utf-8")) + 1 > TREE_MAX_BYTES:
            cut = "16 KiB"
        if cut:
            return False
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
        return True

    def visit(directory: Path, rules: IgnoreRules, level: int) -> bool:
        for entry in scan(directory, rules):
            indent = "  " * (level - 1)
            if not entry.is_dir(follow_symlinks=False):
                if not emit(f"{indent}{entry.name}"):
                    return False
                continue
            child = Path(entry.path)
            child_rules = rules.child(child)
            if level == depth:
                hidden = len(scan(child, child_rules))
                note = f" ({hidden} entries not shown)" if hidden else ""
                if not emit(f"{indent}{entry.name}/{note}"):
                    return False
            elif not emit(f"{indent}{entry.name}/") or not visit(child, child_rules, level + 1):
                return False
        return True

    visit(root, IgnoreRules.for_directory(root, top), 1)
    if not lines:
        return "(empty directory)"
    if cut:
        lines.append(f"[tree cut at {cut}; ask for a smaller depth or root the tree deeper]")
    return "\n".join(lines)


async def tree(config: FileConfig, p: TreeParams, progress: Progress) -> ToolOutput:
    if p.depth < 1:
        raise ToolError("depth must be at least 1.")
    path, _ = await _directory(config, p.path)
    depth = min(p.depth, TREE_MAX_DEPTH)
    return ToolOutput(await anyio.to_thread.run_sync(render_tree, path, depth, config.workspace.root))


# --- glob --------------------------------------------------------------------------------------


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob (`**`, `*`, `?`, `[...]`, `{a,b}`) as a regex over `/`-separated relative paths."""
    out: list[str] = []
    i = 0
    depth = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            close = pattern.find("]", i + 2)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : close].replace("\\", "\\\\")
                out.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
                i = close
        elif c == "{":
            out.append("(?:")
            depth += 1
        elif c == "}" and depth:
            out.append(")")
            depth -= 1
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out) + ")" * depth)
    except re.error as exc:
        raise ToolError(f"Invalid glob pattern {pattern!r}: {exc}") from exc


class GlobParams(Params):
    pattern: str = Field(description="Glob pattern, e.g. `src/**/*.py` or `**/*.md`.")
    dir_path: str = Field(default=".", description="Directory to search in; the workspace root if left out.")
    respect_ignore_files: bool = Field(default=True, description="Leave out what .gitignore / .ignore files exclude.")


async def glob(config: FileConfig, p: GlobParams, progress: Progress) -> ToolOutput:
    if not p.pattern.strip():
        raise ToolError("pattern must not be empty.")
    root, shown = await _directory(config, p.dir_path)
    rx = glob_regex(p.pattern.removeprefix("./"))

    def find() -> list[Path]:
        rules = IgnoreRules.for_directory(root, config.workspace.root) if p.respect_ignore_files else None
        hits = [f for f in walk_files(root, rules) if rx.fullmatch(f.relative_to(root).as_posix())]

        def mtime(f: Path) -> float:
            try:
                return os.stat(f).st_mtime
            except OSError:
                return 0.0

        return sorted(hits, key=lambda f: (-mtime(f), str(f)))

    hits = await anyio.to_thread.run_sync(find)
    if not hits:
        return ToolOutput(f'No files found matching pattern "{p.pattern}" within {shown}')
    head = (
        f'Found {len(hits)} file(s) matching "{p.pattern}" within {shown}, sorted by modification time (newest first):'
    )
    body = [str(f) for f in hits[:GLOB_MAX_RESULTS]]
    if len(hits) > GLOB_MAX_RESULTS:
        body.append(f"[{len(hits) - GLOB_MAX_RESULTS} more not shown; narrow the pattern]")
    return ToolOutput("\n".join([head, *body]))
