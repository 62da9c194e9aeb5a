"""Live subagent detail from the child chat files ACP does not show.

ACP shows an `invoke_agent` call as one tool call. The child's own conversation (its tool calls,
its text, its token usage) is written while it runs to `chats/<parentSessionId>/<agentId>.jsonl`.
We follow that directory (the layer's `JsonlFollower`) while a subagent is open and turn new
records into `tool_use` / `tool_result` (with `subagent_task_id`) and `subagent_progress`; the
child's tokens become the `usage` of `subagent_completed`, so the run's total is honest. ACP does
not say which file is which call: files are matched to open `invoke_agent` calls in the order both
appear (exact for sequential calls; parallel delegations started in the same instant may swap).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from unified._adapters.gemini_cli._chat_records import FINAL_STATUSES, usage_from_tokens
from unified._adapters.gemini_cli._launch import DENIAL_RULE, cli_denials
from unified._adapters.gemini_cli._translate import BACKEND_ALLOWED
from unified._binary.follow import JsonlFollower
from unified.backends import RunContext, refusal
from unified.errors import BackendError
from unified.events import PermissionDecision, SubagentProgress, ToolResult, ToolUse, Usage

if TYPE_CHECKING:
    from unified.tools import Policy

__all__ = ["SubagentWatcher"]

POLL_INTERVAL_S = 0.1


@dataclass(slots=True)
class _Child:
    task_id: str
    agent_name: str | None
    finished: bool = False
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    announced: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    said: set[str] = field(default_factory=set)


def _tool_output(call: dict[str, Any]) -> Any:
    for part in call.get("result") or []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            return response.get("output", response.get("error", response))
    return call.get("resultDisplay") or None


def _decision(call: dict[str, Any], call_id: str, name: str, common: dict[str, Any]) -> PermissionDecision:
    """A subagent's call is never put to the client: the CLI decided it itself. A call the CLI refused by one of
    unified's `--policy` rules for the caller's policy (`_launch.subagent_rules`, `policy_denials`: recorded ended,
    its error quoting the rule) is that rule's denial; any other was allowed."""
    refused = None
    if call.get("status") in FINAL_STATUSES and call.get("status") != "success":
        refused = DENIAL_RULE.search(str(_tool_output(call)))
    if refused is not None:
        reason = "a subagent cannot be asked, and the caller's policy may not allow this call"
        return refusal(call_id, name, reason, decided_by="policy", rule=refused["rule"], **common)
    return PermissionDecision(
        tool_use_id=call_id, tool_name=name, decision="allow", decided_by="backend", reason=BACKEND_ALLOWED, **common
    )


class SubagentWatcher:
    """Follows the child chat files of one parent session while its subagents run."""

    def __init__(
        self,
        home: Path,
        parent_session_id: str,
        ctx: RunContext,
        policy: Policy | None = None,
        silence_s: float | None = None,
    ) -> None:
        pattern = f"tmp/*/chats/{parent_session_id}/*.jsonl"
        self._follower = JsonlFollower(lambda: home.glob(pattern), rescan_interval=None)
        self._ctx = ctx
        self._session_id = parent_session_id
        self._waiting: list[tuple[str, str | None]] = []
        self._before: set[Path] = set()
        """Child files of earlier prompts: never this prompt's subagents."""
        self._children: dict[Path, _Child] = {}
        self._unclaimed: dict[Path, list[dict[str, Any]]] = {}
        """Records of a file that appeared before its `invoke_agent` call was tracked."""
        self._by_task: dict[str, _Child] = {}
        self._lock = anyio.Lock()
        self._silence_s = silence_s
        self._heard: dict[str, tuple[float, str | None]] = {}
        """Each running subagent's task id -> when its file last grew (or it started) and its agent's name."""
        self._denials = {tool: rule for tool, (rule, _modes) in cli_denials(policy).items()}
        """The tools the CLI does not offer for the caller's policy (`_launch.cli_denials`) -> the caller's rule."""

    def start(self) -> None:
        self._follower.start()
        self._before = set(self._follower.tails)

    def track(self, task_id: str, agent_name: str | None) -> None:
        self._waiting.append((task_id, agent_name))
        self._heard[task_id] = (anyio.current_time(), agent_name)

    async def tick(self) -> None:
        """One look, every `POLL_INTERVAL_S` while the prompt runs (`_binary.loops.every`): a poll while a
        subagent is awaited or running, and the bound on a subagent's silence (`subagent_silence_s`)."""
        if self._waiting or self._by_task:
            await self.poll()
        if self._silence_s is None:
            return
        now = anyio.current_time()
        for task_id, (heard, agent) in self._heard.items():
            if now - heard > self._silence_s:
                raise BackendError(
                    f"the Gemini CLI's subagent {agent or '?'} ({task_id}) wrote nothing for {self._silence_s:g}s: "
                    "it may be waiting on a question a subagent cannot put to a client, which 0.61 waits on for ever",
                    hint="deny the tool in the policy, or raise backend_options.subagent_silence_s for a subagent "
                    "that runs one command that long",
                    details={"task_id": task_id, "agent_name": agent, "subagent_silence_s": self._silence_s},
                )

    async def poll(self) -> None:
        async with self._lock:
            records = self._follower.poll(rescan=bool(self._waiting))
            for path, record in records:
                if path not in self._before:
                    self._unclaimed.setdefault(path, []).append(record)
            for path in self._follower.tails:
                if path not in self._children and path not in self._before and self._waiting:
                    task_id, agent = self._waiting.pop(0)
                    self._children[path] = self._by_task[task_id] = _Child(task_id, agent)
            for path, child in self._children.items():
                if path in self._unclaimed and child.task_id in self._heard:
                    self._heard[child.task_id] = (anyio.current_time(), child.agent_name)
                for record in self._unclaimed.pop(path, []):
                    if not child.finished and record.get("type") == "gemini":
                        await self._message(child, record)
                    elif not child.finished and record.get("type") == "user":
                        await self._refused(child, record)

    async def finish(self, task_id: str) -> Usage | None:
        """Read what is left of the task's file; its usage, then stop following it."""
        await self.poll()
        child = self._by_task.pop(task_id, None)
        self._heard.pop(task_id, None)
        self._waiting = [(t, a) for t, a in self._waiting if t != task_id]
        if child is None:
            return None
        child.finished = True
        return usage_from_tokens(child.tokens)

    async def _refused(self, child: _Child, record: dict[str, Any]) -> None:
        """A function response for a call the child's records never showed: the subagent called a tool it does not
        have, which the CLI answers without running anything ("Unauthorized tool call: ... is not available to this
        agent"), as it does for a tool it was told not to offer for the caller's policy (`_launch.cli_denials`): a
        denial, that rule's where there is one."""
        common: dict[str, Any] = {"session_id": self._session_id, "subagent_task_id": child.task_id}
        for part in record.get("content") or []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if not isinstance(response, dict) or not isinstance(response.get("id"), str):
                continue
            call_id, name = response["id"], str(response.get("name"))
            if call_id in child.announced:
                continue
            child.announced.add(call_id)
            child.answered.add(call_id)
            rule = self._denials.get(name)
            output = response.get("response")
            if isinstance(output, dict):
                output = output.get("error", output.get("output", output))
            await self._ctx.emit(ToolUse(tool_use_id=call_id, name=name, input={}, **common))
            reason = (
                f"the subagent has no tool named {name!r}"
                if rule is None
                else f"the caller's policy rule {rule} does not allow it, so the Gemini CLI does not offer it"
            )
            await self._ctx.emit(
                refusal(call_id, name, reason, decided_by="backend" if rule is None else "policy", rule=rule, **common)
            )
            await self._ctx.emit(ToolResult(tool_use_id=call_id, output=output, is_error=True, **common))

    async def _message(self, child: _Child, record: dict[str, Any]) -> None:
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
                await self._ctx.emit(_decision(call, call_id, name, common))
            if call.get("status") in FINAL_STATUSES and call_id not in child.answered:
                child.answered.add(call_id)
                await self._ctx.emit(
                    ToolResult(
                        tool_use_id=call_id, output=_tool_output(call), is_error=call["status"] != "success", **common
                    )
                )
