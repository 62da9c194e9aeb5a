"""Live subagent detail from the child chat files ACP does not show.

ACP shows an `invoke_agent` call as one tool call. The child's own conversation (its tool calls,
its text, its token usage) is written while it runs to `chats/<parentSessionId>/<agentId>.jsonl`.
We poll that directory while a subagent is open and turn new records into `tool_use` /
`tool_result` (with `subagent_task_id`) and `subagent_progress`; the child's tokens become the
`usage` of `subagent_completed`, so the run's total is honest. ACP does not say which file is
which call: files are matched to open `invoke_agent` calls in the order both appear (exact for
sequential calls; parallel delegations started in the same instant may swap).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from unified._adapters.gemini_cli._chat_tail import JsonlTail
from unified._adapters.gemini_cli._translate import BACKEND_ALLOWED
from unified.backends import RunContext
from unified.events import PermissionDecision, SubagentProgress, ToolResult, ToolUse, Usage

POLL_INTERVAL_S = 0.1


@dataclass(slots=True)
class _ChildFile:
    path: Path
    task_id: str
    agent_name: str | None
    tail: JsonlTail = field(init=False)
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    announced: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    said: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.tail = JsonlTail(self.path)

    def usage(self) -> Usage:
        total = Usage()
        for counts in self.tokens.values():
            total += Usage(
                input_tokens=int(counts.get("input") or 0),
                output_tokens=int(counts.get("output") or 0),
                thinking_tokens=int(counts.get("thoughts") or 0),
                cached_tokens=int(counts.get("cached") or 0),
                tool_use_tokens=int(counts.get("tool") or 0),
            )
        return total


def _tool_output(call: dict[str, Any]) -> Any:
    for part in call.get("result") or []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            return response.get("output", response.get("error", response))
    return call.get("resultDisplay") or None


class SubagentWatcher:
    """Tails the child chat files of one parent session while its subagents run."""

    def __init__(self, home: Path, parent_session_id: str, ctx: RunContext) -> None:
        self._pattern = f"tmp/*/chats/{parent_session_id}/*.jsonl"
        self._home = home
        self._ctx = ctx
        self._session_id = parent_session_id
        self._waiting: list[tuple[str, str | None]] = []
        self._files: dict[Path, _ChildFile] = {}
        self._by_task: dict[str, _ChildFile] = {}
        self._lock = anyio.Lock()

    def track(self, task_id: str, agent_name: str | None) -> None:
        self._waiting.append((task_id, agent_name))

    async def run(self) -> None:
        while True:
            await anyio.sleep(POLL_INTERVAL_S)
            if self._waiting or any(t for t in self._by_task.values()):
                await self.poll()

    async def poll(self) -> None:
        async with self._lock:
            if self._waiting:
                for path in sorted(self._home.glob(self._pattern), key=lambda p: p.stat().st_mtime):
                    if path not in self._files and self._waiting:
                        task_id, agent = self._waiting.pop(0)
                        child = _ChildFile(path, task_id, agent)
                        self._files[path] = child
                        self._by_task[task_id] = child
            for child in list(self._by_task.values()):
                await self._read(child)

    async def finish(self, task_id: str) -> Usage | None:
        """Read what is left of the task's file; its usage, then stop following it."""
        await self.poll()
        child = self._by_task.pop(task_id, None)
        self._waiting = [(t, a) for t, a in self._waiting if t != task_id]
        return child.usage() if child is not None else None

    async def _read(self, child: _ChildFile) -> None:
        try:
            records = child.tail.read()
        except OSError:
            return
        for record in records:
            if record.get("type") == "gemini":
                await self._message(child, record)

    async def _message(self, child: _ChildFile, record: dict[str, Any]) -> None:
        common: dict[str, Any] = {"session_id": self._session_id, "subagent_task_id": child.task_id}
        if isinstance(record.get("tokens"), dict) and isinstance(record.get("id"), str):
            child.tokens[record["id"]] = record["tokens"]
        text = record.get("content")
        if isinstance(text, str) and text.strip() and record.get("id") not in child.said:
            child.said.add(str(record.get("id")))
            await self._ctx.emit(
                SubagentProgress(task_id=child.task_id, agent_name=child.agent_name, message=text, **common)
            )
        for call in record.get("toolCalls") or []:
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                continue
            call_id = call["id"]
            if call_id not in child.announced:
                child.announced.add(call_id)
                args = call.get("args") if isinstance(call.get("args"), dict) else {}
                name = str(call.get("name"))
                await self._ctx.emit(ToolUse(tool_use_id=call_id, name=name, input=args, **common))
                # A subagent's calls are never put to the client: the CLI decided them itself.
                decision = PermissionDecision(
                    tool_use_id=call_id,
                    tool_name=name,
                    decision="allow",
                    decided_by="backend",
                    reason=BACKEND_ALLOWED,
                    **common,
                )
                await self._ctx.emit(decision)
            if call.get("status") in ("success", "error", "cancelled") and call_id not in child.answered:
                child.answered.add(call_id)
                await self._ctx.emit(
                    ToolResult(
                        tool_use_id=call_id, output=_tool_output(call), is_error=call["status"] != "success", **common
                    )
                )
