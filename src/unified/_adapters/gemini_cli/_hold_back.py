"""Holding a `tool_use` and its `tool_result` back until the session's chat file has the call's record.

ACP sends neither the model's arguments nor the output of reads and listings; the CLI writes both to
the chat file a few milliseconds after ACP's completed update (see `_chat_records.py`). A held
`tool_use` goes out with the record's `args` as its input, a held `tool_result` with the record's
function response as its output (normalised to text by the protocol). Nothing overtakes a held
item: later items queue behind it, so the stream keeps ACP's order, only later. Before a permission
prompt (`flush`), or when the chat file is missing, held items wait at most `FLUSH_GRACE_S` for
their record and then go out as ACP gave them (an empty input, ACP's output), with one warning if
the chat file is missing or unreadable. The CLI records a call only once it has finished, so a held
`tool_use` also goes out as ACP gave it after `TOOL_USE_GRACE_S`: a long-running call (a shell command)
is announced while it runs, and its arguments come on its `tool_result.input`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from unified._adapters.gemini_cli._chat_records import ChatRecords, tool_response
from unified._adapters.gemini_cli._replays import MessageEnd
from unified._adapters.gemini_cli._translate import Item
from unified.events import ToolResult, ToolUse

__all__ = ["ToolOutputHold"]

SETTLE_INTERVAL_S = 0.1
"""How often a held `tool_result` looks for its call's record in the chat file."""
FLUSH_GRACE_S = 1.0
"""How long a held `tool_result` may still wait for its record when the stream must move on."""
TOOL_USE_GRACE_S = 1.0
"""How long a `tool_use` waits for its call's record (its arguments) before it is announced without them."""

Held = Item | MessageEnd
Deliver = Callable[[Held, Any], Awaitable[None]]
Warn = Callable[[str, str], Awaitable[None]]


class ToolOutputHold:
    """Orders the delivery of one prompt's items, holding chat-file-backed calls until settled."""

    def __init__(self, chat: ChatRecords, deliver_now: Deliver, warn: Warn) -> None:
        self.chat = chat
        self._deliver_now = deliver_now
        self._warn = warn
        self._queue: list[tuple[Held, Any, bool, float]] = []
        """(item, raw, waits for its record, when it was queued), in arrival order."""
        self._shown: dict[str, dict[str, Any]] = {}
        """The input each call's `tool_use` went out with: its result repeats the recorded arguments only
        when they differ (a call shown before the CLI recorded it, or whose prompt showed other arguments)."""
        self._lock = anyio.Lock()
        self._warned = False

    @property
    def holding(self) -> int:
        return sum(1 for _, _, waits, _ in self._queue if waits)

    async def deliver(self, item: Held, raw: Any, *, hold: bool) -> None:
        """Deliver `item` in order; `hold`: a tool_use or tool_result the chat file should complete."""
        async with self._lock:
            waits = hold and isinstance(item, ToolUse | ToolResult)
            if not waits and not self._queue:
                await self._out(item, raw)
                return
            self._queue.append((item, raw, waits, anyio.current_time()))
            await self._settle()
            if self._queue and not self.chat.tails:
                self.chat.poll(rescan=True)
                if not self.chat.tails:  # no chat file at all: nothing to wait for
                    await self._flush(wait=False)

    async def tick(self) -> None:
        """One look, every `SETTLE_INTERVAL_S` while the prompt runs (`_binary.loops.every`): release the held
        items whose records have arrived."""
        if self._queue:
            async with self._lock:
                await self._settle()

    async def flush(self, *, wait: bool = True) -> None:
        """Deliver every queued item (before a permission prompt, at the prompt's end, or at once when
        `wait` is False: cancellation)."""
        async with self._lock:
            await self._flush(wait=wait)

    async def _settle(self, *, rescan: bool = False) -> None:
        """Emit, in order, the queued items up to the first whose record has not reached the chat file."""
        while self._queue:
            item, raw, waits, since = self._queue[0]
            if waits:
                completed = self._completed(item, rescan=rescan)
                if completed is None:
                    if not isinstance(item, ToolUse) or anyio.current_time() - since < TOOL_USE_GRACE_S:
                        return
                    completed = item  # still running: announce it now, its arguments come with its result
                item = completed
            self._queue.pop(0)
            await self._out(item, raw)

    def _completed(self, item: Held, *, rescan: bool) -> Held | None:
        """`item` completed from its call's record; None while the record is missing."""
        assert isinstance(item, ToolUse | ToolResult)
        record = self.chat.lookup(item.tool_use_id, rescan=rescan)
        if record is None:
            return None
        args = record.get("args")
        if isinstance(item, ToolUse):
            if not isinstance(args, dict):
                return item
            return item.model_copy(update={"input": args})
        answer = tool_response(record)
        if answer is None:
            return None
        output, is_error = answer
        late_input = args if isinstance(args, dict) and args != self._shown.get(item.tool_use_id) else None
        return ToolResult.model_validate(
            {**item.model_dump(), "output": output, "data": None, "is_error": is_error, "input": late_input}
        )

    async def _flush(self, *, wait: bool) -> None:
        if not self._queue:
            return
        await self._settle(rescan=True)
        if wait and self.chat.tails:
            with anyio.move_on_after(FLUSH_GRACE_S):
                while self.holding:
                    await anyio.sleep(SETTLE_INTERVAL_S / 2)
                    await self._settle()
        if not self._queue:
            return
        unsettled = self.holding
        queued, self._queue = self._queue, []
        if unsettled and not self._warned and (self.chat.unreadable or not self.chat.tails):
            self._warned = True
            await self._warn(
                "tool_output_unavailable",
                f"the session's chat file could not be read ({self.chat.unreadable or 'no file found'}); "
                "tool calls carry only what ACP reports (no arguments, no output for reads and listings)",
            )
        for item, raw, _, _ in queued:
            await self._out(item, raw)

    async def _out(self, item: Held, raw: Any) -> None:
        if isinstance(item, ToolUse):
            self._shown[item.tool_use_id] = dict(item.input)
        await self._deliver_now(item, raw)
