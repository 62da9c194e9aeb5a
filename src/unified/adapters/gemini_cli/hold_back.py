"""Holding a `tool_result` back until the session's chat file has the call's record (its real output).

ACP omits the output of reads and listings; the CLI writes it to the chat file a few milliseconds
after ACP's completed update (see `chat_tail.py`). A held result goes out with the record's
`functionResponse.response` and `args` once the record appears; nothing overtakes a held result,
so the stream keeps ACP's order, only a little later. Without a record in time (`FLUSH_GRACE_S`
once the stream must move on) it goes out as ACP gave it, with one warning if the chat file is
missing or unreadable.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from unified.adapters.gemini_cli.chat_tail import ChatTail, tool_response
from unified.adapters.gemini_cli.translate import Item
from unified.events import ToolResult

SETTLE_INTERVAL_S = 0.1
"""How often a held `tool_result` looks for its call's record in the chat file."""
FLUSH_GRACE_S = 1.0
"""How long a held `tool_result` may still wait for its record when the stream must move on."""

Deliver = Callable[[Item, Any], Awaitable[None]]
Warn = Callable[[str, str], Awaitable[None]]


class ToolOutputHold:
    """Orders the delivery of one prompt's items, holding chat-file-backed results until settled."""

    def __init__(self, chat: ChatTail, deliver_now: Deliver, warn: Warn) -> None:
        self.chat = chat
        self._deliver_now = deliver_now
        self._warn = warn
        self._held: list[tuple[ToolResult, Any]] = []
        self._lock = anyio.Lock()
        self._warned = False

    @property
    def holding(self) -> int:
        return len(self._held)

    async def deliver(self, item: Item, raw: Any, *, hold: bool) -> None:
        """Deliver `item` in order; `hold`: it is a result whose output the chat file should supply."""
        async with self._lock:
            if hold and isinstance(item, ToolResult):
                self._held.append((item, raw))
                await self._settle()
                return
            if self._held:
                await self._flush(wait=True)
            await self._deliver_now(item, raw)

    async def settle_loop(self) -> None:
        """Run beside the prompt: release held results as their records arrive."""
        while True:
            await anyio.sleep(SETTLE_INTERVAL_S)
            if self._held:
                async with self._lock:
                    await self._settle()

    async def flush(self, *, wait: bool = True) -> None:
        """Deliver every held result (at the prompt's end, or at once when `wait` is False: cancellation)."""
        async with self._lock:
            await self._flush(wait=wait)

    async def _settle(self, *, rescan: bool = False) -> None:
        """Emit, in order, the held results whose call record has reached the chat file, with its output."""
        while self._held:
            result, raw = self._held[0]
            record = self.chat.lookup(result.tool_use_id, rescan=rescan)
            answer = tool_response(record) if record is not None else None
            if record is None or answer is None:
                return
            self._held.pop(0)
            output, is_error = answer
            args = record.get("args")
            update = {"output": output, "is_error": is_error, "input": args if isinstance(args, dict) else None}
            await self._deliver_now(result.model_copy(update=update), raw)

    async def _flush(self, *, wait: bool) -> None:
        if not self._held:
            return
        await self._settle(rescan=True)
        if wait and self.chat.tails:
            with anyio.move_on_after(FLUSH_GRACE_S):
                while self._held:
                    await anyio.sleep(SETTLE_INTERVAL_S / 2)
                    await self._settle()
        if not self._held:
            return
        held, self._held = self._held, []
        if not self._warned and (self.chat.unreadable or not self.chat.tails):
            self._warned = True
            await self._warn(
                "tool_output_unavailable",
                f"the session's chat file could not be read ({self.chat.unreadable or 'no file found'}); "
                "tool results carry only what ACP reports (no output for reads and listings)",
            )
        for result, raw in held:
            await self._deliver_now(result, raw)
