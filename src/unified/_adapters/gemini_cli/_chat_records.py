"""What the CLI writes to a session's chat file during one prompt, and ACP does not carry.

Over ACP, gemini 0.61 sends a tool call's title, kind and locations, never the model's arguments,
and `tool_call_update(completed)` has `content: []` for reads and listings. The CLI records both in
the session's chat file (`tmp/<slug>/chats/session-<minute>-<id8>.jsonl`): a `gemini` message record
whose `toolCalls[]` entry (`id` = ACP `toolCallId`) has `args`, `status` and
`result[].functionResponse.response` (`{"output": ...}` or `{"error": ...}`), appended again (same
message id) each time a call attaches. Measured on 0.61: a call is written only once it has finished
(already with its status and result), a few milliseconds AFTER ACP's completed update, and never
while ACP's `tool_call` is pending or in progress. So the arguments cannot be known when `tool_use`
is emitted; the output can be had for `tool_result` by waiting for the record (`_hold_back.py`).

The same file holds each model call's exact token counts: a `gemini` message record carries
`tokens` (`input`, `output`, `cached`, `thoughts`, `tool`), written once per API call (a record
appended again for the same message keeps its id). ACP's prompt result reports one call's input and
output only, so the run's usage is the sum of these records (`ChatRecords.usage`).

`ChatRecords` follows every file of one session (found by id, so a file renamed by `ResumeGuard`
or created late is picked up) with the layer's `JsonlFollower`, from the sizes they had when the
prompt started. `TranscriptCapture` puts every chat record the CLI writes into a cassette's
transcript, between the JSON-RPC messages it was written among.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unified._adapters.gemini_cli._chat_files import session_files, usage_from_tokens
from unified._binary.follow import JsonlFollower, JsonlTail
from unified.events import Usage

__all__ = [
    "FINAL_STATUSES",
    "ChatRecords",
    "TranscriptCapture",
    "kept_text",
    "tool_calls_of",
    "tool_response",
    "usage_from_tokens",
]

FINAL_STATUSES = frozenset({"success", "error", "cancelled"})
RESCAN_INTERVAL_S = 0.5
"""At most this often we look for new files of the session while a call's record is missing."""


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


def kept_text(record: dict[str, Any]) -> str | None:
    """The text of a `gemini` chat record (its `content`: a string, or parts with `text`)."""
    content = record.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")
        )
    return None


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
class ChatRecords:
    """The finished tool calls, function responses and token counts of one prompt of one session."""

    home: Path
    session_id: str
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Finished calls by id, from this prompt's records and from any checkpoint read meanwhile."""
    answered: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Call id → the `functionResponse` this prompt sent the model (a `user` record), for every call the
    CLI answered: also those it never reported over ACP (a tool it lacks: "Tool not found")."""
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Message id → the `tokens` of one model call of this prompt."""
    answers: dict[str, str] = field(default_factory=dict)
    """Message id → the text of one model call of this prompt as the CLI kept it (its last record), in the
    order the calls were first recorded: after a retried stream, the attempt that succeeded (`_replays`)."""
    prompted: bool = False
    """The prompt's own record was read: the CLI records this prompt (its answers too)."""
    follower: JsonlFollower = field(init=False)

    def __post_init__(self) -> None:
        # The session's files found by its home and id as given, not by a function of `self`: the follower
        # is this object's, and a lambda on `self` made a reference cycle that outlived every run.
        self.follower = JsonlFollower(
            functools.partial(session_files, self.home, self.session_id), rescan_interval=RESCAN_INTERVAL_S
        )

    @property
    def tails(self) -> dict[Path, JsonlTail]:
        """The session's files being followed (none: the CLI wrote no chat file, or it is unreadable)."""
        return self.follower.tails

    @property
    def unreadable(self) -> str | None:
        return self.follower.unreadable

    def start(self) -> None:
        """Follow the session's files from their current ends: only this prompt's records matter."""
        self.follower.start()

    def lookup(self, call_id: str, *, rescan: bool = False) -> dict[str, Any] | None:
        """The finished record of `call_id`, reading what was appended since the last look."""
        if call_id not in self.calls:
            self.poll(rescan=rescan)
        return self.calls.get(call_id)

    def poll(self, *, rescan: bool = False) -> None:
        for _, record in self.follower.poll(rescan=rescan):
            for call in tool_calls_of(record):
                if call.get("status") in FINAL_STATUSES:
                    self.calls[call["id"]] = call
            if record.get("type") == "user" and isinstance(record.get("content"), list):
                for part in record["content"]:
                    response = part.get("functionResponse") if isinstance(part, dict) else None
                    if isinstance(response, dict) and isinstance(response.get("id"), str):
                        self.answered[response["id"]] = response
            if record.get("type") == "gemini":
                text = kept_text(record)
                # A record with calls and no text is written once the calls have run, apart from the record of the
                # text the same model call streamed before them (0.61): it is not that call's answer (read as one,
                # a read finished before ACP's `tool_call` was seen made the shown text read as never kept).
                if text is not None and (text or not tool_calls_of(record)):
                    # a record without an id (not the CLI's) counts as a call of its own
                    key = record.get("id")
                    self.answers[key if isinstance(key, str) else f"#{len(self.answers)}"] = text
            if record.get("type") == "user" and not self.prompted:
                self.prompted = any(isinstance(p, dict) and "text" in p for p in record.get("content") or [])
            counts = record.get("tokens")
            if record.get("type") == "gemini" and isinstance(counts, dict) and isinstance(record.get("id"), str):
                self.tokens[record["id"]] = counts

    def usage(self) -> Usage | None:
        """The sum of this prompt's recorded per-call tokens; None when no call was recorded."""
        return usage_from_tokens(self.tokens) if self.tokens else None


class TranscriptCapture:
    """The `acp_transcript` hook: JSON-RPC messages go to the caller's list, each after the chat records
    (`{"dir": "chat", "file": <path under the CLI home>, "record": {...}}`) written since the last one.

    Every chat file under the CLI home is followed (the session's, its subagents', and the process's
    own startup session: the recorder keeps the run's); files that exist when the capture starts are
    read from their end.
    """

    def __init__(self, target: list[dict[str, Any]], home: Path) -> None:
        self.target = target
        self.home = home
        self._follower = JsonlFollower(self._files, rescan_interval=None)
        self._follower.start()

    def _files(self) -> list[Path]:
        return sorted((self.home / "tmp").glob("*/chats/**/*.jsonl"))

    def observe(self, direction: str, message: dict[str, Any]) -> None:
        self.collect()
        self.target.append({"dir": direction, "msg": message})

    def collect(self) -> None:
        """Take in the chat records written since the last look."""
        for path, record in self._follower.poll(rescan=True):
            self.target.append({"dir": "chat", "file": path.relative_to(self.home).as_posix(), "record": record})
