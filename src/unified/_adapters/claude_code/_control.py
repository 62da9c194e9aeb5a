"""Claude Code's stream-json lines and the envelope of its control protocol, over an `AgentProcess`.

Not JSON-RPC: every line is one JSON object with a `type`. Three carry the control protocol:

- `control_request` `{request_id, request: {subtype, ...}}`, both ways: ours (`initialize`,
  `interrupt`) get ids `req_<n>_<hex>`; the CLI's (`can_use_tool`) carry a UUID;
- `control_response` `{response: {subtype: "success"|"error", request_id, response|error}}`, the
  answer to a request of the other side;
- `control_cancel_request` `{request_id}`: the CLI withdraws a request of its own (a permission
  prompt made moot by an interrupt); it must not be answered any more.

Everything else (`system`, `stream_event`, `assistant`, `user`, `result`, ...) is the run's output,
read by the translator. One run reads the process (one session per process), so there is no
routing: `receive` returns the next line as a dict, or a `LineProblem` for a line that is not a
JSON object (the stream goes on), or None at the end of stdout. A spare's connection may read
ahead to its `initialize` answer before a run takes it (`read_ahead`): those lines are kept, and
`receive` returns them first. A transcript list, when given, receives every line both ways
(`{"dir": "send"|"recv", "msg"}`): what a cassette holds.

The connection also ends its process (`close`, `kill`), for a cold run and a spare alike, and then
removes the live-process entry the CLI may have left (`forget_entry`): the CLI writes
`<CLAUDE_CONFIG_DIR>/sessions/<pid>.json` (naming its session id) at its start and removes it when
it ends on SIGTERM or at the end of its input (checked with 2.1.332,
tests/e2e/claude_code/test_claude_code_spares.py and test_claude_code_failures.py), not when it is
SIGKILLed: `AgentSubprocess.close` once the CLI outlives its SIGTERM grace (a cancelled or timed-out
run whose CLI does not answer), `kill` (a spare at interpreter exit), or a CLI that died on its own.
Once the process is reaped, an entry of its pid that still names its session is stale; one naming
another session belongs to a later process given the same pid, and is left alone.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import secrets
from collections import deque
from pathlib import Path
from typing import Any

from unified._adapters.claude_code._key_file import KeyLease
from unified._binary.framing import CUT_OFF, json_line, parse_object
from unified._binary.jsonrpc import LineProblem
from unified._files import read_regular
from unified._internal.json_head import leading_fields
from unified.backends import AgentProcess, MalformedLine

__all__ = ["ClaudeConnection", "LineProblem", "control_response_of"]

Message = dict[str, Any]


_ANSWER = re.compile(
    r'\s*\{\s*"type"\s*:\s*"(?:stream_event"\s*,\s*"event"\s*:\s*\{\s*"type"\s*:\s*"content_block_delta"\s*,'
    r'\s*"index"\s*:\s*\d+\s*,\s*"delta"\s*:\s*\{\s*"type"\s*:\s*"text_delta"'
    r'|assistant"\s*,\s*"message"\s*:\s*\{.*"content"\s*:\s*\[\s*\{\s*"type"\s*:\s*"text")'
)
"""The start of a line carrying the model's answer text: a streamed text delta, or an assistant message whose
(one) content block is text. Over the cap, the answer is lost (`LineProblem.answer`); a tool call's block over it
(a 9 MB Write) is not the answer."""

_HEAD_FIELDS = ("type", "request_id", "duration_api_ms", "stop_reason", "session_id", "total_cost_usd")
"""What is read of a line over the cap from its start: a control request's id, or a result's first fields (2.1.332
writes them before its usage and `permission_denials`)."""


def control_response_of(message: Message) -> tuple[str, Message] | None:
    """(request id, the response) of a `control_response` line, else None."""
    if message.get("type") != "control_response":
        return None
    response = message.get("response")
    if not isinstance(response, dict) or not isinstance(response.get("request_id"), str):
        return None
    return response["request_id"], response


class ClaudeConnection:
    """The lines of one `claude` process, with our side of the control protocol."""

    def __init__(
        self,
        process: AgentProcess,
        session_id: str,
        *,
        transcript: list[dict[str, Any]] | None = None,
        entries: Path | None = None,
        key_lease: KeyLease | None = None,
    ) -> None:
        """`session_id`: the session the process was started with (`--session-id` or `--resume`);
        `entries`: the CLI's live-process entries folder (`<CLAUDE_CONFIG_DIR>/sessions`), None for a
        stand-in that writes none; `key_lease`: the process's hold on its key file (`_key_file`),
        given back once the process is gone."""
        self.process = process
        self.session_id = session_id
        self.transcript = transcript
        self.entries = entries
        self.key_lease = key_lease
        self._numbers = itertools.count(1)
        self.cancelled: set[str] = set()
        """Ids of the CLI's requests it withdrew (`control_cancel_request`)."""
        self._ahead: deque[Message | LineProblem | None] = deque()
        """Lines read by `read_ahead`, not yet returned by `receive`."""

    async def close(self) -> None:
        """End the process (`AgentProcess.close`: SIGTERM, SIGKILL after a grace), then `forget_entry`
        and `release_key`."""
        try:
            await self.process.close()
        finally:
            self.forget_entry()
            self.release_key()

    def kill(self) -> None:
        """SIGKILL the process (`AgentProcess.kill`, no grace), then `forget_entry` and `release_key`."""
        try:
            self.process.kill()
        finally:
            self.forget_entry()
            self.release_key()

    def release_key(self) -> None:
        """Give back the process's hold on its key file (the last hold removes the file: `_key_file`):
        after `close` or `kill` the CLI is gone or SIGKILLed, it runs its helper no more."""
        if self.key_lease is not None:
            with contextlib.suppress(OSError):
                self.key_lease.release()

    def forget_entry(self) -> None:
        """Remove the live-process entry the CLI left (`sessions/<pid>.json`: it could not when it was
        killed), once the process is gone (reaped: its pid may be another process's from then on),
        and only while the entry names this process's session (a later process given the same pid
        writes its own session there). Nothing when the CLI removed it itself, or never wrote it."""
        process = self.process
        pid = process.pid
        if self.entries is None or pid is None or process.returncode is None:
            return
        entry = self.entries / f"{pid}.json"
        try:
            named = json.loads(read_regular(entry)).get("sessionId")
        except (OSError, ValueError, RecursionError, AttributeError):
            return  # none (a polite exit removed it), or not one we can tell is ours
        if named == self.session_id:
            with contextlib.suppress(FileNotFoundError):
                entry.unlink()

    async def send(self, message: Message) -> None:
        if self.transcript is not None:
            self.transcript.append({"dir": "send", "msg": message})
        await self.process.send(json_line(message))

    async def receive(self) -> Message | LineProblem | None:
        if self._ahead:
            return self._ahead.popleft()
        return await self._read()

    async def read_ahead(self) -> None:
        """Read up to the answer to our `initialize`, our only request (or the end of output), keeping every line
        for `receive`: a spare's `initialize` seen answered before a run takes it. Any `control_response` is that
        answer: one under another id (which the run refuses, `_run._answered_under_another_id`) was read past, and
        the read went on for as long as the CLI ran."""
        while True:
            message = await self._read()
            self._ahead.append(message)
            if message is None or (isinstance(message, dict) and message.get("type") == "control_response"):
                return

    async def _read(self) -> Message | LineProblem | None:
        try:
            line = await self.process.receive()
        except MalformedLine as exc:
            problem = f"the claude CLI wrote an unreadable line: {exc}"
            head, _ = leading_fields(exc.head, _HEAD_FIELDS)
            whole = exc.reason != CUT_OFF  # not a line the CLI died writing: its end is the process's
            if whole and (head.get("type") == "result" or ("duration_api_ms" in head and "session_id" in head)):
                # The turn's end (2.1.332 writes its `type` late, after `permission_denials`, which repeat the
                # input of every call it denied: a denied 9 MB Write), read from its first fields, so the run ends
                # instead of waiting for it until its idle timeout. Its usage is not among them: estimated.
                ended = head.get("stop_reason") == "end_turn"
                self._ahead.append({**head, "type": "result", "subtype": "success", "is_error": not ended})
                return LineProblem(f"{problem}; read as the turn's result from its first fields (usage estimated)")
            request_id = head.get("request_id")
            if head.get("type") != "control_request" or not isinstance(request_id, str):
                return LineProblem(problem, answer=_ANSWER.match(exc.head) is not None)
            # The CLI waits for the answer (a permission request carrying a 9 MB Write waited until the run's
            # idle timeout): it is refused now, and the CLI goes on without it.
            with contextlib.suppress(ConnectionError):
                await self.respond_error(request_id, f"unified could not read this request: {exc}")
            return LineProblem(f"{problem}; its control request was refused unread")
        if line is None:
            return None
        parsed = parse_object(line)
        if isinstance(parsed, str):
            return LineProblem(f"the claude CLI wrote a line that is not a JSON object: {parsed}")
        if self.transcript is not None:
            self.transcript.append({"dir": "recv", "msg": parsed})
        if parsed.get("type") == "control_cancel_request" and isinstance(parsed.get("request_id"), str):
            self.cancelled.add(parsed["request_id"])
        return parsed

    def new_request_id(self) -> str:
        return f"req_{next(self._numbers)}_{secrets.token_hex(4)}"

    async def request(self, subtype: str, **fields: Any) -> str:
        """Send a control request of ours; returns its id (the answer arrives among the lines)."""
        request_id = self.new_request_id()
        await self.send(
            {"type": "control_request", "request_id": request_id, "request": {"subtype": subtype, **fields}}
        )
        return request_id

    async def initialize(self, forward_subagent_text: bool) -> str:
        """Our `initialize` (no hooks); returns its id. A run's, or a spare's sent ahead for its run."""
        return await self.request("initialize", hooks=None, forwardSubagentText=forward_subagent_text)

    async def respond(self, request_id: str, response: Message) -> None:
        """Answer a request of the CLI (unless it withdrew it)."""
        if request_id in self.cancelled:
            return
        await self.send(
            {
                "type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": response},
            }
        )

    async def respond_error(self, request_id: str | float, error: str) -> None:
        """An error answer to a request of the CLI (unless it withdrew it); `request_id` as the CLI sent it, a number
        too (`ClaudeRun._odd_request_id`)."""
        if request_id in self.cancelled:
            return
        await self.send(
            {"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": error}}
        )

    async def user(self, content: str | list[dict[str, Any]]) -> None:
        """A user message (the prompt, or one of later turns)."""
        await self.send(
            {
                "type": "user",
                "message": {"role": "user", "content": content},
                "parent_tool_use_id": None,
                "session_id": "default",
            }
        )
