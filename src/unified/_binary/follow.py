"""Following the JSONL files an agent binary appends to (its session logs) while it writes them.

Agent CLIs record a session as JSON Lines on disk (Gemini CLI: `tmp/<project>/chats/*.jsonl`;
Claude Code: `projects/<cwd>/<uuid>.jsonl`; Codex: `sessions/YYYY/MM/DD/rollout-*.jsonl`), often
with more than their stdout says (arguments, outputs, exact token counts). `JsonlFollower` reads
what was appended since its last look, from every file the backend's `discover()` names; what the
records mean is the backend's business.

- A file known at `start()` is read from its end (only what is written from then on belongs to
  the run); a file found later, from its beginning. New files are taken in the order they were
  last modified, so records of files made one after the other come in that order.
- `discover()` runs at `start()`, on `poll(rescan=True)`, and otherwise at most every
  `rescan_interval` seconds (None: only when asked): a file can appear late or be renamed.
- A partial last line waits for the next poll; a line that is not a JSON object is skipped, and so is
  one longer than `MAX_RECORD_BYTES`, unbuffered (a line that never ends costs nothing); a file
  rewritten shorter than what was read is read again from its start.
- A file that cannot be read (or a `discover()` that fails) leaves the reason in `unreadable`; the
  file is dropped from the set, the others go on. A FIFO or a device (or a link to one) is such a
  file: it is opened by `unified._files.open_regular`, refused, never waited on or read without end.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unified._files import open_regular

__all__ = ["MAX_RECORD_BYTES", "JsonlFollower", "JsonlTail", "split_records"]

MAX_RECORD_BYTES = 64 * 1024 * 1024
"""The longest record followed (a tool's output can be large); a longer line is skipped, unbuffered."""
_CHUNK_BYTES = 1024 * 1024


def split_records(partial: bytes, data: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """The complete lines of `partial + data` as objects (other lines skipped), and the unfinished rest."""
    lines = (partial + data).split(b"\n")
    rest = lines.pop()
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(record, dict):
            records.append(record)
    return records, rest


@dataclass(slots=True)
class JsonlTail:
    """Incremental reader of one append-only JSONL file."""

    path: Path
    offset: int = 0
    partial: bytes = b""
    limit: int = MAX_RECORD_BYTES
    """The longest line kept while it is unfinished; a longer one is skipped to its line break."""
    skipping: bool = False
    """Inside a line over `limit`: what comes up to its line break is dropped, not kept."""

    def read(self) -> list[dict[str, Any]]:
        """The records appended since the last read; raises OSError if the file cannot be read. Read a
        chunk at a time: what is held is the records and one unfinished line of at most `limit` bytes,
        never a line that does not end (a binary writing one for as long as it runs)."""
        records: list[dict[str, Any]] = []
        with open_regular(self.path) as handle:
            size = handle.seek(0, 2)
            if size < self.offset:  # rewritten from scratch: start over
                self.offset, self.partial, self.skipping = 0, b"", False
            handle.seek(self.offset)
            while data := handle.read(_CHUNK_BYTES):
                self.offset += len(data)
                if self.skipping:
                    newline = data.find(b"\n")
                    if newline < 0:
                        continue
                    data, self.skipping = data[newline + 1 :], False
                found, rest = split_records(self.partial, data)
                records += found
                self.partial = rest
                if len(rest) > self.limit:
                    self.partial, self.skipping = b"", True
        return records


class JsonlFollower:
    """The records appended to a set of JSONL files, file by file (see the module docstring)."""

    def __init__(self, discover: Callable[[], Iterable[Path]], *, rescan_interval: float | None = 0.5) -> None:
        self._discover = discover
        self.rescan_interval = rescan_interval
        self.tails: dict[Path, JsonlTail] = {}
        """The files followed, in the order they were found."""
        self.unreadable: str | None = None
        """Why a file (or the listing) could not be read, the last time that happened."""
        self._scanned_at = float("-inf")

    def start(self) -> None:
        """Follow the files there are now from their ends: only what is appended from now on is read."""
        self._scanned_at = time.monotonic()
        for path in self._found():
            try:
                size = path.stat().st_size
            except OSError:
                continue
            self.tails.setdefault(path, JsonlTail(path, offset=size))

    def poll(self, *, rescan: bool = False) -> list[tuple[Path, dict[str, Any]]]:
        """Every record appended since the last poll, as `(file, record)`, in each file's order."""
        now = time.monotonic()
        interval = self.rescan_interval
        if rescan or (interval is not None and (not self.tails or now - self._scanned_at >= interval)):
            self._scanned_at = now
            self._add(self._found())
        found: list[tuple[Path, dict[str, Any]]] = []
        for path, tail in list(self.tails.items()):
            try:
                records = tail.read()
            except OSError as exc:
                self.unreadable = f"cannot read {path}: {exc}"
                del self.tails[path]
                continue
            found += [(path, record) for record in records]
        return found

    def _found(self) -> list[Path]:
        try:
            return list(self._discover())
        except OSError as exc:
            self.unreadable = f"cannot list the files: {exc}"
            return []

    def _add(self, paths: list[Path]) -> None:
        fresh = [path for path in paths if path not in self.tails]
        for path in sorted(fresh, key=_modified):
            self.tails[path] = JsonlTail(path)


def _modified(path: Path) -> tuple[float, str]:
    try:
        return path.stat().st_mtime, path.name
    except OSError:
        return float("inf"), path.name
