"""JSON Lines on an agent's pipes: a byte stream split into lines under a cap, and messages as lines.

Every binary driven today writes one JSON value per stdout line (JSON-RPC for ACP and Codex's
app-server, stream-json and its control protocol for Claude Code). A line longer than the cap is
dropped without being buffered, and a line that is not UTF-8 is dropped too: each becomes a
`MalformedLine` in the stream of lines, which the process raises from `receive` for that line
only, so a bad line is a warning for the run, never a crash nor unbounded memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any, cast

from unified import _limits as limits
from unified._redaction import clip
from unified._text import escapes_surrogates, well_formed_json
from unified.backends import MalformedLine
from unified.errors import BackendError

__all__ = ["CUT_OFF", "MAX_LINE_BYTES", "LineFramer", "answer_over_cap", "json_line", "parse_object"]

MAX_LINE_BYTES = limits.MAX_EVENT_BYTES
"""The longest line read (a tool output can be large); a longer one is dropped with a `MalformedLine`."""
HEAD_CHARS = 512
"""How much of an unreadable line is kept (`MalformedLine.head`)."""
QUOTE_CHARS = 200
"""How much of a line that is not a JSON object `parse_object` quotes."""
_BOM = b"\xef\xbb\xbf"
"""UTF-8's byte order mark: a line of it alone (and blanks) is blank. A binary or launcher writing "UTF-8 with BOM"
can put one on an otherwise empty line, and each became a `malformed_line` warning quoting a character no terminal
shows ("not JSON: '\\ufeff'")."""


class LineFramer:
    """Splits a byte stream into text lines; blank lines (a byte order mark alone among them) are skipped, an
    unfinished last line is kept for the next `feed` (and at the end of the stream, a process that ended mid-line,
    told by `end`)."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = MAX_LINE_BYTES if limit is None else limit
        """The longest line read: `MAX_LINE_BYTES` as it is when the framer is made (a test lowers it to reach the
        cap with a real binary in a fraction of the time)."""
        self._buffer = bytearray()
        self._skipping = 0
        """Bytes of an oversized line dropped so far (0: not inside one)."""
        self._head = b""
        """The first bytes of the oversized line being dropped."""

    def feed(self, data: bytes) -> Iterator[str | MalformedLine]:
        """The lines `data` completes, each as text or, when it cannot be read, a `MalformedLine`. Read by position:
        cutting off each line's rest copied it, and a 64 KiB read of 10-byte lines copied some 200 MB."""
        start = 0
        while start < len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            part, start = data[start:end], end + 1
            if self._skipping:
                self._skipping += len(part)
            elif len(self._buffer) + len(part) > self.limit:
                self._skipping = len(self._buffer) + len(part)
                self._head = (bytes(self._buffer[:HEAD_CHARS]) + part[:HEAD_CHARS])[:HEAD_CHARS]
                self._buffer.clear()
            else:
                self._buffer += part
            if newline < 0:
                return
            if self._skipping:
                head = self._head.decode("utf-8", "replace")
                yield MalformedLine(f"over the {self.limit}-byte cap", self._skipping, head)
                self._skipping = 0
                self._head = b""
            elif (content := self._buffer.strip()) and content != _BOM:
                try:
                    yield self._buffer.decode("utf-8").rstrip("\r")
                except UnicodeDecodeError as exc:  # with its head: an answer to a request fails that request now
                    head = bytes(self._buffer[:HEAD_CHARS]).decode("utf-8", "replace")  # (it waited forever)
                    yield MalformedLine(f"not UTF-8 ({exc.reason} at byte {exc.start})", len(self._buffer), head)
            self._buffer.clear()

    def end(self) -> MalformedLine | None:
        """The line the stream ended in the middle of, dropped (None: it ended after a line). The gemini CLI's
        `-p` exits before a pipe has taken all it wrote (0.61: what is past 64 KiB is lost), and the line it was
        writing, its answer, was dropped without a word: the run said only "ended without a result"."""
        size = self._skipping or len(self._buffer)
        head = self._head if self._skipping else bytes(self._buffer[:HEAD_CHARS])
        self._skipping = 0
        self._head = b""
        self._buffer.clear()
        if head.strip() in (b"", _BOM):
            return None
        return MalformedLine(CUT_OFF, size, head.decode("utf-8", "replace"))


CUT_OFF = "cut off: the stream ended before its newline"
"""The reason of the `MalformedLine` of a line the stream ended in (`LineFramer.end`)."""


def answer_over_cap(binary: str) -> BackendError:
    """The error of a run whose answer text came on a line over the cap, dropped unread: the binary reports the
    turn done, but the answer is lost, so the run must not end `success` (it did, with an empty final text). The
    session is kept as the binary left it: a resume goes on from there."""
    return BackendError(
        f"{binary}'s answer was larger than unified reads: it came on a line over "
        f"{MAX_LINE_BYTES // (1024 * 1024)} MiB (limits.MAX_EVENT_BYTES), dropped unread, so the answer is lost",
        hint="resume the session and ask for a shorter answer, or for the text written to a file in the workspace",
    )


def json_line(message: Mapping[str, Any]) -> str:
    """`message` as one line of compact JSON (no raw newline can occur in it)."""
    return json.dumps(message, separators=(",", ":"))


def parse_object(line: str) -> dict[str, Any] | str:
    """The JSON object on `line`, or why it is none (for a warning): not JSON, not an object, or nested
    deeper than `limits.MAX_JSON_DEPTH` (refused before it can cost a RecursionError downstream)."""
    try:
        value = json.loads(line)
    except RecursionError:
        return "nested too deeply to parse"
    except ValueError:
        # What a terminal would show of it: the text after its last carriage return (a launcher's "Loading...\r"
        # before the binary's first line), without a byte order mark (a launcher's, or the first line of a
        # stream written as UTF-8 "with BOM"). Either lost that line: the answer to initialize, waited for 60 s.
        shown = line.rpartition("\r")[2].removeprefix("\ufeff")
        return parse_object(shown) if shown != line else f"not JSON: {_quoted(line)}"
    if not isinstance(value, dict):
        return f"JSON that is not an object: {_quoted(line)}"
    # Nesting deeper than the limit takes more opening brackets than that (counted in C, strings included:
    # the count can only be too high), so most lines skip the walk.
    if line.count("{") + line.count("[") > limits.MAX_JSON_DEPTH and limits.too_deep(value):
        return f"nested deeper than {limits.MAX_JSON_DEPTH} levels"
    if escapes_surrogates(line):  # half an emoji a CLI's `slice` cut, escaped by its JSON.stringify
        return cast("dict[str, Any]", well_formed_json(value))
    return value


def _quoted(line: str) -> str:
    """The start of `line` for a warning, the environment's secrets replaced before the cut (`clip`)."""
    return repr(clip(line, QUOTE_CHARS))
