"""search: a per-line regex scan of the workspace under the ignore rules (seed 002, "Searching").

Files are streamed line by line through `_safe_io` (confined, special files refused, bounded lines),
and the scan stops at the match limit. The pattern is RE2 (`_regex`: linear time, so no pattern can
freeze the host), and the whole scan runs under a `Budget` (time, entries visited, bytes read): a
search that spends it returns what it found with a note saying it stopped.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pydantic import Field

from unified._redaction import clip
from unified.tools import _safe_io
from unified.tools._base import Params, Progress, ToolError, ToolOutput
from unified.tools._files import FileConfig
from unified.tools._ignore import WALK_VETO, Budget, BudgetSpent, IgnoreRules, Veto, WalkedFile, walk_files
from unified.tools._paths import Workspace, echoed, quoted, shown_line
from unified.tools._regex import Pattern, PatternError, compile_pattern
from unified.tools._safe_io import StopFlag

__all__ = [
    "SEARCH_DEFAULT_LIMIT",
    "SEARCH_LINE_CHARS",
    "SEARCH_MATCH_CHARS",
    "SEARCH_MAX_LIMIT",
    "Hit",
    "SearchParams",
    "search",
]

SEARCH_DEFAULT_LIMIT = 50
SEARCH_MAX_LIMIT = 200
SEARCH_LINE_CHARS = 200
SEARCH_MATCH_CHARS = 64 * 1024
"""A line is tried on its first 64 Ki characters; the rest of a longer line is not searched."""


class SearchParams(Params):
    query: str = Field(
        description="Regular expression (Rust syntax: `foo|bar`, `fn\\s+update`, `(?i)todo`), "
        "tried against each line on its own."
    )
    path: str = Field(default=".", description="Directory or file to search; the workspace root if left out.")
    limit: int = Field(
        default=SEARCH_DEFAULT_LIMIT,
        ge=1,
        description=f"Most matches to return; at most {SEARCH_MAX_LIMIT}.",
    )


Hit = tuple[Path, int, str, int]
"""File, line number, the line's first `SEARCH_LINE_CHARS` characters, the line's length."""


def _scan_file(fd: int, path: Path, rx: Pattern, hits: list[Hit], limit: int, stop: StopFlag, budget: Budget) -> None:
    """Appends the file's matching lines; a file with a NUL byte adds none. The budget's bytes are spent as the
    file is read, chunk by chunk, not line by line: a line may be gigabytes long. Its clock and the stop flag are
    read again each time about one longest line (`SEARCH_MATCH_CHARS`) was searched: a pattern RE2's DFA cannot
    hold runs thread by thread (`(?:a|b)` 3,000 times took 5.5 s a line of 60,000 characters), and read only per
    chunk, a chunk's lines ran minutes past the time budget and a cancelled call (round 35)."""
    before = len(hits)
    searched = 0
    try:
        for line in _safe_io.LineStream(fd, stop, SEARCH_MATCH_CHARS, spend=budget.bytes).lines():
            searched += len(line.text)
            if searched > SEARCH_MATCH_CHARS:
                searched = 0
                stop.check()
                budget.clock()
            if rx.search(line.text):
                hits.append((path, line.number, clip(line.text, SEARCH_LINE_CHARS), line.length))
                if len(hits) >= limit:
                    return
    except _safe_io.BinaryContent:
        del hits[before:]


def _open_walked(workspace: Workspace, found: WalkedFile) -> int | None:
    """A read fd for a file met in a walk, or None to skip it silently (special, a link leading out)."""
    try:
        if not found.is_link:
            fd, _ = _safe_io.open_in(found.dir_fd, found.name, found.name, "search")
            return fd
        real = Path(os.path.realpath(found.path))
        if not workspace.contains(real):
            return None
        fd, _ = _safe_io.open_file(workspace, real, found.name, "search")
        return fd
    except (ToolError, OSError):
        return None


def _scan(
    workspace: Workspace, root: Path, shown: str, rx: Pattern, limit: int, stop: StopFlag, veto: Veto | None = None
) -> tuple[list[Hit], str | None]:
    """The hits, and why the scan stopped early if its budget ran out."""
    hits: list[Hit] = []
    budget = Budget()
    mode = _safe_io.entry_mode(workspace, root, shown)
    if mode is None:
        raise ToolError(f"Path not found: {shown}")
    try:
        if not stat.S_ISDIR(mode):
            if veto is not None and veto.left_out(root, False, False):
                return hits, None  # named directly, yet the policy refuses it as read (a rule for read_file)
            fd, _ = _safe_io.open_file(workspace, root, shown, "search")
            try:
                _scan_file(fd, root, rx, hits, limit, stop, budget)
            finally:
                os.close(fd)
            return hits, None
        fd = _safe_io.open_directory(workspace, root, shown)
        try:
            rules = IgnoreRules.for_directory(workspace, root, budget)
            reopen = _safe_io.reopener(workspace)
            for found in walk_files(fd, root, rules, stop, budget=budget, reopen=reopen, veto=veto):
                file = _open_walked(workspace, found)
                if file is None:
                    continue
                try:
                    _scan_file(file, found.path, rx, hits, limit, stop, budget)
                finally:
                    os.close(file)
                if len(hits) >= limit:
                    break
        finally:
            os.close(fd)
    except BudgetSpent as spent:
        return hits, str(spent)
    return hits, None


async def search(config: FileConfig, p: SearchParams, progress: Progress) -> ToolOutput:
    if not p.query.strip():
        raise ToolError("query must not be empty.")
    try:
        rx = compile_pattern(p.query)
    except PatternError as exc:
        raise ToolError(f"Invalid regular expression {quoted(p.query)}: {echoed(str(exc))}") from None
    workspace = config.workspace
    root = await workspace.resolve(p.path)
    shown = echoed(workspace.display(root))
    limit = min(p.limit, SEARCH_MAX_LIMIT)
    veto = WALK_VETO.get()
    hits, spent = await _safe_io.in_worker(lambda stop: _scan(workspace, root, shown, rx, limit, stop, veto))
    stopped = f"[search stopped early: {spent}; the list may be incomplete: narrow the query or the path]"
    left = veto.note() if veto is not None else None
    if not hits:
        empty = f'No matches found for pattern "{echoed(p.query)}" in path "{shown}".'
        return ToolOutput("\n".join([empty, *([stopped] if spent else []), *([left] if left else [])]))
    rows = [f'Found {len(hits)} match(es) for pattern "{echoed(p.query)}" in path "{shown}":']
    for file, number, text, length in hits:
        line = shown_line(text)
        if length > SEARCH_LINE_CHARS:
            line = f"{line} ({length - SEARCH_LINE_CHARS} more chars...)"
        rows.append(f"{workspace.display(file)}:{number}: {line}")
    if len(hits) == limit:
        rows.append(f"[limit of {limit} matches reached; the list may be cut: narrow the query or the path]")
    if spent:
        rows.append(stopped)
    if left:
        rows.append(left)
    return ToolOutput("\n".join(rows))
