"""read_file, write_file, edit_file, list_dir, tree and glob (seeds 000 and 002).

All disk work goes through `_safe_io` in cancellable worker threads: confined opens that never
follow a link, special files refused, text streamed in chunks (docs/tools.md, "Limits").
"""

from __future__ import annotations

import heapq
import os
import re
import stat
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from unified import _limits as limits
from unified.tools import _safe_io
from unified.tools._base import InlineData, Params, Progress, ToolError, ToolOutput
from unified.tools._ignore import WALK_VETO, Budget, BudgetSpent, IgnoreRules, Veto, WalkedFile, scan, walk_files
from unified.tools._paths import Workspace, echoed, quoted, shown_name
from unified.tools._regex import Pattern, PatternError, compile_pattern, matchable
from unified.tools._safe_io import StopFlag

__all__ = [
    "EDIT_MAX_BYTES",
    "GLOB_MAX_RESULTS",
    "JUDGED_PATH",
    "LIST_DIR_IGNORE_MAX_CHARS",
    "LIST_DIR_MAX_IGNORE",
    "MAX_IMAGE_BYTES",
    "MAX_LINE_CHARS",
    "READ_BYTE_CEILING",
    "TREE_MAX_BYTES",
    "TREE_MAX_DEPTH",
    "TREE_MAX_LINES",
    "EditFileParams",
    "FileConfig",
    "GlobParams",
    "ListDirParams",
    "ReadFileParams",
    "ReadMode",
    "TreeParams",
    "Unresolved",
    "WriteFileParams",
    "edit_file",
    "find_placeholder",
    "glob",
    "glob_regex",
    "image_mime",
    "list_dir",
    "read_file",
    "read_file_limit_text",
    "render_tree",
    "tree",
    "write_file",
]

ReadMode = Literal["unlimited", "default-cap"]
"""What a read_file call without `limit` returns: the rest of the file, or `line_cap` lines."""

READ_BYTE_CEILING = 256 * 1024
MAX_LINE_CHARS = 2000
MAX_IMAGE_BYTES = 8 * 1024 * 1024
EDIT_MAX_BYTES = 16 * 1024 * 1024
"""Largest file edit_file edits (it holds the file in memory) and largest content write_file writes."""
TREE_MAX_LINES = 1000
TREE_MAX_BYTES = 16 * 1024
TREE_MAX_DEPTH = 10
GLOB_MAX_RESULTS = 1000
LIST_DIR_MAX_IGNORE = 100
"""list_dir's `ignore` globs: each is tried on every entry, and list_dir has no time budget (5,000
globs over 3,000 entries took over a minute)."""
LIST_DIR_IGNORE_MAX_CHARS = 1024
"""Characters of one `ignore` glob. Each is compiled on the event loop, holding the GIL: 100 globs of 40,000 `?`
(a name has at most 255 bytes) stopped every task of the host for 66 s and held 825 MB (round 35); 100 of 1,024
compile in well under a second."""

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
class Unresolved:
    """A write's path the protected-path check could not resolve (it led outside the roots, or was too
    long): nothing was judged, so the write must not run even if the path resolves by then."""

    reason: str
    """The refusal `Workspace.resolve` gave when the call was judged."""


JUDGED_PATH: ContextVar[Path | Unresolved | None] = ContextVar("unified_judged_path", default=None)
"""The real path the runtime's protected-path check judged for this write (set around the call by
`ToolRuntime`): the path a write_file or edit_file call must still resolve to when it runs."""


def _still_judged(path: Path, shown: str) -> None:
    """Refuses a write whose path resolves elsewhere than when it was judged: a link swapped in
    meanwhile (a background command racing the call) could lead an approved write into `.git/`.
    A path that did not resolve then (a link leading outside, re-pointed at `.git` since) was never
    judged at all, so no path it resolves to now is the judged one."""
    judged = JUDGED_PATH.get()
    if isinstance(judged, Unresolved):
        raise ToolError(
            f"{shown} changed after the call was judged (it did not resolve then: {judged.reason}); "
            "nothing was written. Check the path and call again."
        )
    if judged is not None and path != judged:
        raise ToolError(
            f"{shown} changed after the call was judged (a link now leads it elsewhere: {shown_name(str(path))}); "
            "nothing was written."
        )


@dataclass(frozen=True)
class FileConfig:
    workspace: Workspace
    read_mode: ReadMode = "default-cap"
    line_cap: int = 2000


# --- read_file ---------------------------------------------------------------------------------


class ReadFileParams(Params):
    file_path: str = Field(description="Path of the file, relative to the workspace root or absolute.")
    offset: int = Field(default=1, ge=1, description="1-based line to start reading from.")
    limit: int | None = Field(default=None, ge=1, description="How many lines to read.")


def read_file_limit_text(config: FileConfig) -> str:
    if config.read_mode == "default-cap":
        return f"How many lines to read. Left out, at most {config.line_cap} lines are returned."
    return "How many lines to read. Left out, the file is read to its end."


def _render(line: _safe_io.Line) -> str:
    body = line.text
    if line.cut:
        body += f"... [line cut, {line.length - MAX_LINE_CHARS} more chars]"
    return body + ("\r" if line.cr else "") + ("\n" if line.ended else "")


def _read_image(fd: int, size: int, mime: str, shown: str, stop: StopFlag) -> ToolOutput:
    label = f"Image {shown} ({mime}, {size:,} bytes)"
    if size <= MAX_IMAGE_BYTES:
        os.lseek(fd, 0, os.SEEK_SET)
        data = _safe_io.read_at_most(fd, MAX_IMAGE_BYTES + 1, stop)
        label = f"Image {shown} ({mime}, {len(data):,} bytes)"
        if len(data) <= MAX_IMAGE_BYTES:
            return ToolOutput(f"{label} attached.", (InlineData(mime, data),))
    return ToolOutput(f"{label} is over the 8 MiB limit; not attached.")


def _read_text(
    fd: int, config: FileConfig, p: ReadFileParams, shown: str, stop: StopFlag, size: int | None = None
) -> ToolOutput:
    """The window of lines asked for, streamed: only the lines returned are held."""
    if p.limit is not None:
        count: int | None = p.limit
    elif config.read_mode == "default-cap":
        count = config.line_cap
    else:
        count = None
    stream = _safe_io.LineStream(fd, stop, MAX_LINE_CHARS, size)
    out: list[str] = []
    used = 0
    cut_lines = 0
    stopped_at_ceiling = False
    try:
        for line in stream.lines(p.offset, None if count is None else p.offset + count - 1):
            rendered = _render(line)
            size = len(rendered.encode("utf-8"))
            if used + size > READ_BYTE_CEILING and out:
                stopped_at_ceiling = True
                stream.last = line.number - 1
                continue
            out.append(rendered)
            used += size
            cut_lines += line.cut
    except _safe_io.BinaryContent:
        raise ToolError(f"Cannot display content of binary file: {shown}") from None
    total = stream.total
    if p.offset > max(total, 1):
        raise ToolError(f"offset {p.offset} is past the end of {shown}, which has {total} lines.")
    start = p.offset - 1
    end = start + len(out)
    text = "".join(out)
    notes: list[str] = []
    if stopped_at_ceiling:
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


async def read_file(config: FileConfig, p: ReadFileParams, progress: Progress) -> ToolOutput:
    path = await config.workspace.resolve(p.file_path)
    shown = echoed(config.workspace.display(path))

    def read(stop: StopFlag) -> ToolOutput:
        fd, info = _safe_io.open_file(config.workspace, path, shown, "read")
        try:
            mime = image_mime(os.read(fd, 16))
            if mime is not None:
                return _read_image(fd, info.st_size, mime, shown, stop)
            os.lseek(fd, 0, os.SEEK_SET)
            return _read_text(fd, config, p, shown, stop, _safe_io.size_at_open(info))
        finally:
            os.close(fd)

    return await _safe_io.in_worker(read)


# --- write_file --------------------------------------------------------------------------------

_COMMENT_OPENING = re.compile(r"\s*(?://+|#+|/\*+|\*+|<!--|--|;+)?\s*")
_COMMENT_CLOSINGS = ("*/", "-->")


def _comment_body(line: str) -> str:
    """`line` without the comment marks around it and the blanks beside them. The closing mark is
    taken off with string methods: as a regex (`\\s*(?:\\*/|-->)?\\s*$`, tried at every position by
    `sub`) a line of `...` and 5,000 spaces took 232 s (cubic), on the event loop, GIL held."""
    body = line[_COMMENT_OPENING.match(line).end() :].rstrip()  # type: ignore[union-attr]  # matches ""
    for closing in _COMMENT_CLOSINGS:
        if body.endswith(closing):
            return body.removesuffix(closing).rstrip()
    return body


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
        core = _comment_body(line).replace("…", "...").strip()
        words = core.replace("...", " ").strip()
        if words and _PLACEHOLDER.fullmatch(words) and len(core) < 100:
            return number, line.strip()
    return None


class WriteFileParams(Params):
    file_path: str = Field(description="Path of the file to create or overwrite.")
    content: str = Field(description="The complete new content of the file.")


def _encode(text: str, what: str, shown: str) -> bytes:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"{what} is not valid Unicode text (a lone surrogate at character {exc.start}); {shown} was not changed."
        ) from None
    if len(data) > EDIT_MAX_BYTES:
        raise ToolError(f"{what} is {len(data):,} bytes, over the 16 MiB limit; {shown} was not changed.")
    return data


def _wholly_crlf(fd: int, stop: StopFlag, size: int | None = None) -> bool:
    """Every line ending of the file is CRLF (and it has at least one)."""
    endings = crlf = 0
    previous = b""
    for chunk in _safe_io.chunks(fd, stop, size):
        endings += chunk.count(b"\n")
        crlf += chunk.count(b"\r\n") + (previous == b"\r" and chunk[:1] == b"\n")
        previous = chunk[-1:]
    return endings > 0 and crlf == endings


async def write_file(config: FileConfig, p: WriteFileParams, progress: Progress) -> ToolOutput:
    path = await config.workspace.resolve(p.file_path)
    shown = config.workspace.display(path)
    _still_judged(path, shown)
    found = find_placeholder(p.content)
    if found:
        raise ToolError(
            f"content holds an omission placeholder at line {found[0]} ({found[1]!r}); "
            "write_file replaces the whole file, so give its complete content."
        )
    _encode(p.content, "content", shown)

    def write(stop: StopFlag) -> str:
        parent = _safe_io.open_parent(config.workspace, path, shown, create=True)
        try:
            existing = _safe_io.lstat_in(parent, path.name)
            content = p.content
            mode = None
            if existing is not None:
                fd, opened = _safe_io.open_in(parent, path.name, shown, "write")
                try:
                    if _wholly_crlf(fd, stop, _safe_io.size_at_open(opened)):
                        content = content.replace("\r\n", "\n").replace("\n", "\r\n")
                finally:
                    os.close(fd)
                mode = opened.st_mode
            _safe_io.replace_file(parent, path.name, _encode(content, "content", shown), mode)
        finally:
            os.close(parent)
        if existing is not None:
            return f"Successfully overwrote file: {shown}."
        return f"Successfully created and wrote to new file: {shown}."

    return ToolOutput(await _safe_io.in_worker(write))


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


def _ending_at(text: str, at: int) -> str:
    """The line ending where a match starting at `at` lands: its own line's, else the one before."""
    newline = text.find("\n", at)
    if newline < 0:
        newline = text.rfind("\n", 0, at)
    return "\r\n" if newline > 0 and text[newline - 1] == "\r" else "\n"


def _grown_too_large(shown: str) -> ToolError:
    return ToolError(f"The edit would make {shown} larger than the 16 MiB limit of edit_file; {shown} was not changed.")


def _replace(text: str, p: EditFileParams, shown: str) -> tuple[str, int]:
    """`text` with `old_string` replaced, touching nothing else.

    `old_string` is matched as given; failing that, with LF endings, then (in a file with CRLF)
    with CRLF endings. The new text's line endings become those of the line it lands in.
    """
    as_lf = p.old_string.replace("\r\n", "\n")
    forms = [p.old_string, as_lf, as_lf.replace("\n", "\r\n") if "\r\n" in text else as_lf]
    target = next((form for form in forms if form in text), None)
    if target is None:
        raise ToolError(
            f"old_string was not found in {shown}. The file differs from what you expect: "
            "re-read it with read_file and copy the text to replace exactly, whitespace included."
        )
    count = text.count(target)
    if count > 1 and not p.allow_multiple:
        raise ToolError(
            f"old_string occurs {count} times in {shown}. Include more surrounding lines so it "
            "matches exactly one place, or set allow_multiple to true to replace every occurrence."
        )
    new_lf = p.new_string.replace("\r\n", "\n")
    # Every character is at least one byte: refuse before building a text over the limit (a
    # one-character old_string replaced everywhere by a long new_string multiplies the file).
    longest = len(new_lf) + new_lf.count("\n")
    if len(text) + count * (longest - len(target)) > EDIT_MAX_BYTES:
        raise _grown_too_large(shown)
    pieces: list[str] = []
    pos = 0
    while (at := text.find(target, pos)) >= 0:
        pieces += [text[pos:at], new_lf.replace("\n", _ending_at(text, at)) if "\n" in new_lf else new_lf]
        pos = at + len(target)
    pieces.append(text[pos:])
    return "".join(pieces), count


async def edit_file(config: FileConfig, p: EditFileParams, progress: Progress) -> ToolOutput:
    path = await config.workspace.resolve(p.file_path)
    shown = config.workspace.display(path)
    _still_judged(path, shown)
    if p.old_string == p.new_string:
        raise ToolError(f"old_string and new_string are identical; nothing would change in {shown}.")
    created = _encode(p.new_string, "new_string", shown)

    def edit(stop: StopFlag) -> str:
        parent = _safe_io.open_parent(config.workspace, path, shown, create=not p.old_string)
        try:
            existing = _safe_io.lstat_in(parent, path.name)
            if existing is None:
                if p.old_string:
                    raise ToolError(f"File not found: {shown}")
                _safe_io.replace_file(parent, path.name, created, None)
                return f"Created new file: {shown}."
            _safe_io.check_regular(existing, shown, "edit")
            if not p.old_string:
                raise ToolError(
                    f"old_string is empty but {shown} already exists; give the text to replace, "
                    "or use write_file to overwrite the whole file."
                )
            fd, opened = _safe_io.open_in(parent, path.name, shown, "edit")
            try:
                raw = b"" if opened.st_size > EDIT_MAX_BYTES else _safe_io.read_at_most(fd, EDIT_MAX_BYTES + 1, stop)
            finally:
                os.close(fd)
            if opened.st_size > EDIT_MAX_BYTES or len(raw) > EDIT_MAX_BYTES:
                raise ToolError(
                    f"{shown} is over the 16 MiB limit of edit_file; change it with a shell command instead."
                )
            if b"\0" in raw:
                raise ToolError(f"Cannot edit binary file: {shown}")
            text, count = _replace(raw.decode("utf-8", errors="surrogateescape"), p, shown)
            data = text.encode("utf-8", errors="surrogateescape")
            if len(data) > EDIT_MAX_BYTES:
                raise _grown_too_large(shown)
            _safe_io.replace_file(parent, path.name, data, opened.st_mode)
        finally:
            os.close(parent)
        return f"Successfully modified file: {shown} ({count} replacement{'s' if count > 1 else ''})."

    return ToolOutput(await _safe_io.in_worker(edit))


# --- list_dir ----------------------------------------------------------------------------------


class ListDirParams(Params):
    dir_path: str = Field(default=".", description="Directory to list; the workspace root if left out.")
    ignore: list[str] = Field(
        default_factory=list,
        max_length=LIST_DIR_MAX_IGNORE,
        description=f"Glob patterns of entry names to leave out (at most {LIST_DIR_MAX_IGNORE}, "
        f"of {LIST_DIR_IGNORE_MAX_CHARS} characters each).",
    )


def _shows_as_dir(workspace: Workspace, directory: Path, entry: os.DirEntry[str]) -> bool:
    """A directory, or a link to one inside the workspace (a link leading outside is not looked through)."""
    if entry.is_dir(follow_symlinks=False):
        return True
    if not entry.is_symlink():
        return False
    real = Path(os.path.realpath(directory / entry.name))
    return workspace.contains(real) and real.is_dir()


async def list_dir(config: FileConfig, p: ListDirParams, progress: Progress) -> ToolOutput:
    path = await config.workspace.resolve(p.dir_path)
    shown = config.workspace.display(path)
    long = next((g for g in p.ignore if len(g) > LIST_DIR_IGNORE_MAX_CHARS), None)
    if long is not None:
        raise ToolError(
            f"An ignore glob may have at most {LIST_DIR_IGNORE_MAX_CHARS} characters (a name has at most 255 bytes); "
            f"{quoted(long)} has {len(long):,}: give a shorter one."
        )
    patterns = [glob_regex(g) for g in p.ignore]
    cap = limits.LIST_DIR_MAX_ENTRIES

    def listing(stop: StopFlag) -> tuple[list[str], int, int]:
        """The first `cap` names in display order (`heapq.nsmallest` keeps only those: memory does
        not grow with the directory), how many entries were listed in all, and how many ignored."""
        fd = _safe_io.open_directory(config.workspace, path, shown)
        counts = [0, 0]

        def keys(entries: Iterator[os.DirEntry[str]]) -> Iterator[tuple[bool, str]]:
            for entry in entries:
                if not sum(counts) % 4096:
                    stop.check()
                if any(rx.fullmatch(matchable(entry.name)) for rx in patterns):
                    counts[1] += 1
                    continue
                counts[0] += 1
                is_dir = _shows_as_dir(config.workspace, path, entry)
                name = shown_name(entry.name)
                yield (not is_dir, name + "/" if is_dir else name)

        try:
            with os.scandir(fd) as entries:
                kept = heapq.nsmallest(cap, keys(entries))
        except OSError:
            kept = []  # an unreadable directory reads as empty
        finally:
            os.close(fd)
        return [name for _, name in kept], counts[0], counts[1]

    names, count, ignored = await _safe_io.in_worker(listing)
    if not names:
        suffix = f" ({ignored} ignored)" if ignored else ""
        return ToolOutput(f"Directory {shown} is empty.{suffix}")
    tail = f"\n({ignored} ignored)" if ignored else ""
    if count > len(names):
        tail += f"\n[listing cut at {len(names):,} of {count:,} entries; list a subdirectory or use glob]"
    return ToolOutput(f"Directory listing for {shown}:\n" + "\n".join(names) + tail)


# --- tree --------------------------------------------------------------------------------------


class TreeParams(Params):
    path: str = Field(default=".", description="Directory to root the tree at; the workspace root if left out.")
    depth: int = Field(
        default=2,
        description=f"Levels below the root: 1 lists the root's entries, 2 adds their contents. "
        f"At most {TREE_MAX_DEPTH}.",
    )


def render_tree(
    workspace: Workspace, root: Path, root_fd: int, depth: int, stop: StopFlag, veto: Veto | None = None
) -> str:
    """The tree under an open directory; subdirectories are opened without following links, and an entry `veto`
    refuses is left out."""
    lines: list[str] = []
    size = 0
    cut: str | None = None
    budget = Budget()
    """Search's time and entry budget: every directory's ignore files are compiled as it is met."""

    def emit(line: str) -> bool:
        nonlocal size, cut
        if len(lines) >= TREE_MAX_LINES:
            cut = f"{TREE_MAX_LINES} lines"
        elif size + len(line.encode("utf-8", "surrogateescape")) + 1 > TREE_MAX_BYTES:
            cut = "16 KiB"
        if cut:
            return False
        lines.append(line)
        size += len(line.encode("utf-8", "surrogateescape")) + 1
        return True

    def visit(dir_fd: int, directory: Path, rules: IgnoreRules, level: int) -> bool:
        stop.check()
        for entry in scan(dir_fd, directory, rules):
            budget.entry()
            indent = "  " * (level - 1)
            is_dir = entry.is_dir(follow_symlinks=False)
            if veto is not None and veto.left_out(directory / entry.name, is_dir, not is_dir and entry.is_symlink()):
                continue
            child = _safe_io.open_child_dir(dir_fd, entry.name) if entry.is_dir(follow_symlinks=False) else None
            if child is None:
                if not emit(f"{indent}{shown_name(entry.name)}"):
                    return False
                continue
            try:
                path = directory / entry.name
                child_rules = rules.child(path, child, budget)
                if level == depth:
                    hidden = len(scan(child, path, child_rules))
                    note = f" ({hidden} entries not shown)" if hidden else ""
                    if not emit(f"{indent}{shown_name(entry.name)}/{note}"):
                        return False
                elif not emit(f"{indent}{shown_name(entry.name)}/") or not visit(child, path, child_rules, level + 1):
                    return False
            finally:
                os.close(child)
        return True

    spent: str | None = None
    try:
        visit(root_fd, root, IgnoreRules.for_directory(workspace, root, budget), 1)
    except BudgetSpent as exc:
        spent = str(exc)
    if spent:
        lines.append(f"[tree stopped early: {spent}; ask for a smaller depth or root the tree deeper]")
    left = veto.note() if veto is not None else None
    if not lines:
        return "\n".join(["(empty directory)", *([left] if left else [])])
    if cut:
        lines.append(f"[tree cut at {cut}; ask for a smaller depth or root the tree deeper]")
    if left:
        lines.append(left)
    return "\n".join(lines)


async def tree(config: FileConfig, p: TreeParams, progress: Progress) -> ToolOutput:
    if p.depth < 1:
        raise ToolError("depth must be at least 1.")
    path = await config.workspace.resolve(p.path)
    shown = config.workspace.display(path)
    depth = min(p.depth, TREE_MAX_DEPTH)
    veto = WALK_VETO.get()

    def render(stop: StopFlag) -> str:
        fd = _safe_io.open_directory(config.workspace, path, shown)
        try:
            return render_tree(config.workspace, path, fd, depth, stop, veto)
        finally:
            os.close(fd)

    return ToolOutput(await _safe_io.in_worker(render))


# --- glob --------------------------------------------------------------------------------------


def glob_regex(pattern: str) -> Pattern:
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
        return compile_pattern("".join(out) + ")" * depth)
    except PatternError as exc:
        raise ToolError(f"Invalid glob pattern {quoted(pattern)}: {echoed(str(exc))}") from None


class GlobParams(Params):
    pattern: str = Field(description="Glob pattern, e.g. `src/**/*.py` or `**/*.md`.")
    dir_path: str = Field(default=".", description="Directory to search in; the workspace root if left out.")
    respect_ignore_files: bool = Field(default=True, description="Leave out what .gitignore / .ignore files exclude.")


def _glob_mtime(found: WalkedFile) -> float | None:
    """Sort key of a glob hit; None leaves the entry out (a directory behind a link)."""
    try:
        if not found.is_link:
            return os.stat(found.name, dir_fd=found.dir_fd, follow_symlinks=False).st_mtime
        info = os.stat(os.path.realpath(found.path))
    except OSError:
        return 0.0
    return None if stat.S_ISDIR(info.st_mode) else info.st_mtime


async def glob(config: FileConfig, p: GlobParams, progress: Progress) -> ToolOutput:
    if not p.pattern.strip():
        raise ToolError("pattern must not be empty.")
    workspace = config.workspace
    root = await workspace.resolve(p.dir_path)
    shown = workspace.display(root)
    rx = glob_regex(p.pattern.removeprefix("./"))
    veto = WALK_VETO.get()

    def newest_first(hit: tuple[float, Path]) -> tuple[float, str]:
        return -hit[0], str(hit[1])

    def find(stop: StopFlag) -> tuple[list[Path], int, list[str], int, list[str]]:
        """The newest `GLOB_MAX_RESULTS` hits and how many there were: only those are kept (the list is cut back
        whenever it doubles), so a directory of a million matching entries costs no more memory than a thousand
        (it held every hit, ~0.4 KiB each: 300,000 entries added 170 MB to the process, per call)."""
        fd = _safe_io.open_directory(workspace, root, shown)
        hits: list[tuple[float, Path]] = []
        count = outside_count = 0
        try:
            outside: list[str] = []  # the first five of `outside_count`
            spent: list[str] = []
            try:
                budget = Budget()
                rules = IgnoreRules.for_directory(workspace, root, budget) if p.respect_ignore_files else None
                reopen = _safe_io.reopener(workspace)
                for found in walk_files(fd, root, rules, stop, budget=budget, reopen=reopen, veto=veto):
                    if not rx.fullmatch(matchable(found.path.relative_to(root).as_posix())):
                        continue
                    if found.is_link and not workspace.contains(Path(os.path.realpath(found.path))):
                        outside_count += 1
                        if len(outside) < 5:
                            outside.append(workspace.display(found.path))
                        continue
                    mtime = _glob_mtime(found)
                    if mtime is not None:
                        count += 1
                        hits.append((mtime, found.path))
                        if len(hits) >= 2 * GLOB_MAX_RESULTS:
                            hits = sorted(hits, key=newest_first)[:GLOB_MAX_RESULTS]
            except BudgetSpent as exc:
                spent.append(str(exc))
        finally:
            os.close(fd)
        return [f for _, f in sorted(hits, key=newest_first)[:GLOB_MAX_RESULTS]], count, outside, outside_count, spent

    hits, count, outside, outside_count, spent = await _safe_io.in_worker(find)
    note: list[str] = []
    if spent:
        note.append(
            f"[glob stopped early: {spent[0]}; the list may be incomplete: narrow the pattern or the directory]"
        )
    if outside:
        named = ", ".join(outside) + (", ..." if outside_count > len(outside) else "")
        note.append(f"[{outside_count} link(s) pointing outside the workspace left out: {named}]")
    left = veto.note() if veto is not None else None
    if left:
        note.append(left)
    if not hits:
        return ToolOutput("\n".join([f'No files found matching pattern "{echoed(p.pattern)}" within {shown}', *note]))
    head = (
        f'Found {count} file(s) matching "{echoed(p.pattern)}" within {shown}, '
        "sorted by modification time (newest first):"
    )
    body = [shown_name(str(f)) for f in hits]
    if count > len(hits):
        body.append(f"[{count - len(hits)} more not shown; narrow the pattern]")
    return ToolOutput("\n".join([head, *body, *note]))
