"""search: a per-line regex scan of the workspace under the ignore rules (seed 002, "Searching")."""

from __future__ import annotations

import re
from pathlib import Path

import anyio.to_thread
from pydantic import Field

from unified.tools._base import Params, Progress, ToolError, ToolOutput
from unified.tools._files import FileConfig
from unified.tools._ignore import IgnoreRules, walk_files

SEARCH_DEFAULT_LIMIT = 50
SEARCH_MAX_LIMIT = 200
SEARCH_LINE_CHARS = 200

_POSIX_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": r"\s",
    "word": r"\w",
    "xdigit": "0-9A-Fa-f",
    "punct": r"!-/:-@\[-`{-~",
}


def translate_rust_regex(query: str) -> str:
    """The Rust-regex spellings Python's `re` lacks: `(?<name>`, `\\z`, `[[:class:]]`.

    Unicode classes (`\\p{L}`) have no `re` equivalent and are refused rather than mistranslated.
    """
    if re.search(r"(?<!\\)\\[pP]", query):
        raise ToolError(f"Invalid regular expression {query!r}: Unicode classes (\\p{{...}}) are not supported.")
    out = re.sub(r"\(\?<(?=[A-Za-z_])", "(?P<", query)
    out = re.sub(r"(?<!\\)\\z", r"\\Z", out)
    return re.sub(r"\[:(\w+):\]", lambda m: _POSIX_CLASSES.get(m.group(1), m.group(0)), out)


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


def _scan(root: Path, rx: re.Pattern[str], limit: int, workspace_root: Path) -> list[tuple[Path, int, str]]:
    if root.is_file():
        files: list[Path] = [root]
    else:
        files = list(walk_files(root, IgnoreRules.for_directory(root, workspace_root)))
    hits: list[tuple[Path, int, str]] = []
    for file in files:
        try:
            data = file.read_bytes()
        except OSError:
            continue
        if b"\0" in data:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
            line = line.removesuffix("\r")
            if rx.search(line):
                hits.append((file, number, line))
                if len(hits) >= limit:
                    return hits
    return hits


async def search(config: FileConfig, p: SearchParams, progress: Progress) -> ToolOutput:
    if not p.query.strip():
        raise ToolError("query must not be empty.")
    try:
        rx = re.compile(translate_rust_regex(p.query))
    except re.error as exc:
        raise ToolError(f"Invalid regular expression {p.query!r}: {exc}") from exc
    workspace = config.workspace
    root = await workspace.resolve(p.path)
    shown = workspace.display(root)
    if not await anyio.Path(root).exists():
        raise ToolError(f"Path not found: {shown}")
    limit = min(p.limit, SEARCH_MAX_LIMIT)
    hits = await anyio.to_thread.run_sync(_scan, root, rx, limit, workspace.root)
    if not hits:
        return ToolOutput(f'No matches found for pattern "{p.query}" in path "{shown}".')
    rows = [f'Found {len(hits)} match(es) for pattern "{p.query}" in path "{shown}":']
    for file, number, line in hits:
        if len(line) > SEARCH_LINE_CHARS:
            line = f"{line[:SEARCH_LINE_CHARS]} ({len(line) - SEARCH_LINE_CHARS} more chars...)"
        rows.append(f"{workspace.display(file)}:{number}: {line}")
    if len(hits) == limit:
        rows.append(f"[limit of {limit} matches reached; the list may be cut: narrow the query or the path]")
    return ToolOutput("\n".join(rows))
