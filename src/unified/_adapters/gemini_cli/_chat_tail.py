"""Tool outputs ACP does not carry, read from the session's own chat file as the CLI writes it.

Over ACP, gemini 0.61 sends a tool call's title, kind and locations, never the model's arguments,
and `tool_call_update(completed)` has `content: []` for reads and listings. The CLI records both in
the session's chat file (`tmp/<slug>/chats/session-<minute>-<id8>.jsonl`): a `gemini` message record
whose `toolCalls[]` entry (`id` = ACP `toolCallId`) has `args`, `status` and
`result[].functionResponse.response` (`{"output": ...}` or `{"error": ...}`), appended again (same
message id) each time a call attaches. Measured on 0.61: a call is written only once it has finished
(already with its status and result), a few milliseconds AFTER ACP's completed update, and never
while ACP's `tool_call` is pending or in progress. So the arguments cannot be known when `tool_use`
is emitted; the output can be had for `tool_result` by waiting for the record.

The same file holds each model call's exact token counts: a `gemini` message record carries
`tokens` (`input`, `output`, `cached`, `thoughts`, `tool`), written once per API call (a record
appended again for the same message keeps its id). ACP's prompt result reports one call's input and
output only, so the run's usage is the sum of these records (`ChatTail.usage`).

`JsonlTail` reads only the bytes appended since its last read (a partial last line is kept for the
next read); `ChatTail` follows every file of one session (found by id, so a file renamed by
`ResumeGuard` or created late is picked up) from the sizes they had when the prompt started.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unified._adapters.gemini_cli._sessions import session_files
from unified.events import Usage

FINAL_STATUSES = frozenset({"success", "error", "cancelled"})
RESCAN_INTERVAL_S = 0.5
"""At most this often we look for new files of the session while a call's record is missing."""


def split_records(partial: bytes, data: bytes) -> tuple[list[dict[str, Any]], bytes]:
    """Complete JSONL lines of `partial + data` as objects (bad lines skipped) and the unfinished rest."""
    lines = (partial + data).split(b"\n")
    rest = lines.pop()
    records = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
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

    def read(self) -> list[dict[str, Any]]:
        """The records appended since the last read; raises OSError if the file cannot be read."""
        with self.path.open("rb") as handle:
            size = handle.seek(0, 2)
            if size < self.offset:  # rewritten from scratch: start over
                self.offset, self.partial = 0, b""
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        records, self.partial = split_records(self.partial, data)
        return records


def tool_calls_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The `toolCalls[]` entries a chat record carries (a message, or a `$set.messages` checkpoint)."""
    messages: list[Any] = [record]
    updates = record.get("$set")
    if isinstance(updates, dict) and isinstance(updates.get("messages"), list):
        messages = updates["messages"]
    return [
        call
        for message in messages
        if isinstance(message, dict) and message.get("type") == "gemini"
        for call in message.get("toolCalls") or []
        if isinstance(call, dict) and isinstance(call.get("id"), str)
    ]


def tool_response(call: dict[str, Any]) -> tuple[Any, bool] | None:
    """(what the tool returned to the model, is_error) of a finished call record; None while unfinished.

    The output is the `functionResponse.response` object as the model saw it (`{"output": ...}` or
    `{"error": ...}`); `resultDisplay` stands in when a call has no function response.
    """
    status = call.get("status")
    if status not in FINAL_STATUSES:
        return None
    output: Any = None
    for part in call.get("result") or []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            output = response
            break
    if output is None:
        output = call.get("resultDisplay") or None
    return output, status != "success"


@dataclass(slots=True)
class ChatTail:
    """The finished tool calls of one session, read incrementally from its chat file(s)."""

    home: Path
    session_id: str
    tails: dict[Path, JsonlTail] = field(default_factory=dict)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Finished calls by id, from this prompt's records and from any checkpoint read meanwhile."""
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Call id → the `functionResponse` this prompt sent the model (a `user` record), for every call the
    CLI answered: also those it never reported over ACP (a tool it lacks: "Tool not found")."""
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Message id → the `tokens` of one model call of this prompt."""
    unreadable: str | None = None
    _scanned_at: float = float("-inf")

    def start(self) -> None:
        """Follow the session's files from their current ends: only this prompt's records matter."""
        for path in self._files():
            try:
                size = path.stat().st_size
            except OSError:
                continue
            self.tails[path] = JsonlTail(path, offset=size)

    def lookup(self, call_id: str, *, rescan: bool = False) -> dict[str, Any] | None:
        """The finished record of `call_id`, reading what was appended since the last look."""
        if call_id not in self.calls:
            self.poll(rescan=rescan)
        return self.calls.get(call_id)

    def poll(self, *, rescan: bool = False) -> None:
        now = time.monotonic()
        if rescan or not self.tails or now - self._scanned_at >= RESCAN_INTERVAL_S:
            self._scanned_at = now
            for path in self._files():
                self.tails.setdefault(path, JsonlTail(path))
        for path, tail in list(self.tails.items()):
            try:
                records = tail.read()
            except OSError as exc:
                self.unreadable = f"cannot read {path}: {exc}"
                del self.tails[path]
                continue
            for record in records:
                for call in tool_calls_of(record):
                    if call.get("status") in FINAL_STATUSES:
                        self.calls[call["id"]] = call
                if record.get("type") == "user" and isinstance(record.get("content"), list):
                    for part in record["content"]:
                        response = part.get("functionResponse") if isinstance(part, dict) else None
                        if isinstance(response, dict) and isinstance(response.get("id"), str):
                            self.answered[response["id"]] = response
                counts = record.get("tokens")
                if record.get("type") == "gemini" and isinstance(counts, dict) and isinstance(record.get("id"), str):
                    self.tokens[record["id"]] = counts

    def usage(self) -> Usage | None:
        """The sum of this prompt's recorded per-call tokens; None when no call was recorded."""
        if not self.tokens:
            return None
        total = Usage()
        for counts in self.tokens.values():
            total += Usage(
                input_tokens=_count(counts.get("input")),
                output_tokens=_count(counts.get("output")),
                thinking_tokens=_count(counts.get("thoughts")),
                cached_tokens=_count(counts.get("cached")),
                tool_use_tokens=_count(counts.get("tool")),
            )
        return total

    def _files(self) -> list[Path]:
        try:
            return session_files(self.home, self.session_id)
        except OSError as exc:
            self.unreadable = f"cannot list the chat files: {exc}"
            return []


def _count(value: object) -> int:
    return value if isinstance(value, int) and value > 0 else 0
