"""Claude Code's stream-json output → UnifiedEvents; pure (no I/O, no clock), one instance per run.

`StreamTranslator.line(message)` turns one stdout line into items: events to emit, plus the
markers the run acts on (`Started`, `EndTurn`, `EndMessage`, `Retry`, `TurnResult`). What comes
from where (docs/backends/claude-code.md, "Mapping"):

- the main agent's text and thinking from its `stream_event` deltas (the SSE events passed
  through: append semantics, `thinking.replace=False`; a `signature_delta` is a `thinking` event
  with the signature and no text); a subagent's from its `assistant` lines (it has no partials);
- a tool call from the `assistant` line of its block (the model's arguments, whole), its result
  from the `user` line that carries the `tool_result`; the CLI's own decision for a call it did not
  put to the client from that line's `tool_result_meta` (`decided_by="backend"`);
- subagents from `system/task_started` / `task_progress` / `task_notification` (`local_agent`
  tasks), their events tagged by the `agent_id` (== task id) the CLI puts on every inner line;
- one main-agent model call ends at its `message_stop`: `EndTurn` with the usage of its
  `message_delta` (what the server reported for that call);
- a cut stream: the CLI prints the failed attempt's deltas, then a `message_stop` with
  `abandoned_blocks`, and asks the model again, which answers from the start. The answer that
  follows is matched against what was shown: a repeated prefix is not shown twice, only what is
  new; an answer that differs closes the shown message, warns (`stream_resumed`), and shows the
  new answer whole (its first thought with `replace=True`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from unified._binary.jsonrpc import as_list
from unified._internal.counts import positive_int
from unified._redaction import clip
from unified.events import (
    JsonValue,
    PermissionDecision,
    SubagentCompleted,
    SubagentProgress,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolProgress,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    Usage,
    WarningEvent,
)

__all__ = [
    "EndMessage",
    "EndTurn",
    "Item",
    "Retry",
    "Started",
    "StreamTranslator",
    "TurnResult",
    "as_object",
    "tool_result_text",
    "usage_from_anthropic",
    "usage_from_model_usage",
]

Message = Mapping[str, Any]
SYNTHETIC = "<synthetic>"
"""The model the CLI names on a message it made itself (an API error's text, an interruption note)."""


@dataclass(frozen=True, slots=True)
class Started:
    """The first `system/init`: the session is live (its model and tools are known)."""

    session_id: str | None
    model: str | None
    cwd: str | None


@dataclass(frozen=True, slots=True)
class EndTurn:
    """One model call of the main agent finished, with the usage the server reported for it."""

    usage: Usage


@dataclass(frozen=True, slots=True)
class EndMessage:
    """Close the current assistant message of one agent (None: the main agent)."""

    subagent_task_id: str | None


@dataclass(frozen=True, slots=True)
class Retry:
    """The CLI will ask the model again after a failed request (`system/api_retry`)."""

    attempt: int
    max_retries: int
    delay_s: float
    status: int | None
    error: str


@dataclass(frozen=True, slots=True)
class TurnResult:
    """A `result` line: the CLI's turn ended (not necessarily the run: a background agent may run on)."""

    raw: Message


Item = UnifiedEvent | Started | EndTurn | EndMessage | Retry | TurnResult


def as_object(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object (a copy), else an empty one: lines are read defensively."""
    return dict(value) if isinstance(value, dict) else {}


def usage_from_anthropic(usage: object) -> Usage:
    """An Anthropic `usage` object as unified counts it: `input_tokens` are every prompt token
    (fresh, read from the cache, written to it); `output_tokens` exclude the thinking ones."""
    if not isinstance(usage, Mapping):
        return Usage()
    fresh = positive_int(usage.get("input_tokens"))
    read = positive_int(usage.get("cache_read_input_tokens"))
    created = positive_int(usage.get("cache_creation_input_tokens"))
    output = positive_int(usage.get("output_tokens"))
    details = usage.get("output_tokens_details")
    thinking = min(output, positive_int(details.get("thinking_tokens"))) if isinstance(details, Mapping) else 0
    return Usage(
        input_tokens=fresh + read + created,
        cached_tokens=read,
        cache_creation_tokens=created,
        output_tokens=output - thinking,
        thinking_tokens=thinking,
    )


def usage_from_model_usage(model_usage: object) -> Usage:
    """The sum of a `result`'s per-model usage (`model_usage_since_last_result`), with its cost."""
    total = Usage()
    if not isinstance(model_usage, Mapping):
        return total
    for entry in model_usage.values():
        if not isinstance(entry, Mapping):
            continue
        fresh, read = positive_int(entry.get("inputTokens")), positive_int(entry.get("cacheReadInputTokens"))
        created, output = positive_int(entry.get("cacheCreationInputTokens")), positive_int(entry.get("outputTokens"))
        thinking = min(output, positive_int(entry.get("thinkingTokens")))
        total = total + Usage(
            input_tokens=fresh + read + created,
            cached_tokens=read,
            cache_creation_tokens=created,
            output_tokens=output - thinking,
            thinking_tokens=thinking,
            cost_usd=_cost(entry.get("costUSD")),
        )
    return total


def _delay_s(milliseconds: object) -> float:
    """An `api_retry`'s `retry_delay_ms` in seconds: 0 for no number (NaN, below 0), infinity for an integer
    too large for a float (the division would raise OverflowError): it is then more than any wait allowed."""
    if not isinstance(milliseconds, int | float) or isinstance(milliseconds, bool):
        return 0.0
    try:
        seconds = milliseconds / 1000
    except OverflowError:
        return math.inf
    return seconds if seconds >= 0 else 0.0


def _cost(value: object) -> float | None:
    """A `costUSD` as a float; None unless it is a finite number of dollars, 0 or more (an integer too
    large for a float, NaN or Infinity is a broken count, not a cost)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        cost = float(value)
    except OverflowError:
        return None
    return cost if math.isfinite(cost) and cost >= 0 else None


def tool_result_text(content: object) -> tuple[str | None, list[dict[str, Any]]]:
    """(the text the model read, image blocks without their bytes) of a `tool_result`'s content."""
    if content is None or isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False, default=str), []
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "image":
            source = block.get("source")
            data = source.get("data") if isinstance(source, Mapping) else None
            images.append(
                {
                    "type": "image",
                    "media_type": source.get("media_type") if isinstance(source, Mapping) else None,
                    "bytes": len(data) * 3 // 4 if isinstance(data, str) else None,
                }
            )
    return "\n".join(texts), images


@dataclass
class _Block:
    kind: str
    text: str = ""
    signature: str | None = None


@dataclass
class _Call:
    name: str
    input: dict[str, Any]
    task: str | None


@dataclass
class _Task:
    name: str
    tool_use_id: str | None
    status: str = "running"
    done: bool = False


_MOVES = {"EnterWorktree": "worktreePath", "ExitWorktree": "restoredCwd"}
"""The CLI's tools that move its working folder, and the key of their structured result naming the folder it then
works in (measured with 2.1.332)."""

_TERMINAL_TASK = {
    "completed": "completed",
    "failed": "failed",
    "error": "failed",
    "killed": "cancelled",
    "stopped": "cancelled",
    "cancelled": "cancelled",
}


@dataclass
class _Replay:
    """What a consumer saw of an abandoned answer, matched against the answer that replaces it."""

    shown: list[_Block]
    diverged: bool = False


@dataclass
class StreamTranslator:
    """Translates one run's stdout lines (see the module docstring)."""

    session_id: str | None = None
    include_thoughts: bool = True
    tools: dict[str, _Call] = field(default_factory=dict)
    decided: set[str] = field(default_factory=set)
    """Calls whose `permission_decision` went out (the permission bridge's, or ours)."""
    answered: set[str] = field(default_factory=set)
    """Calls whose `tool_result` went out: a second result of one call is the CLI's slip, not shown."""
    stopped: set[str] = field(default_factory=set)
    """Calls the caller stopped the run at: their (rejection) result is not shown."""
    ran_with: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Calls that ran with another input than the model's (the caller changed it)."""
    moved_to: dict[str, str | None] = field(default_factory=dict)
    """The folder the CLI says it works in after each `EnterWorktree` / `ExitWorktree` call that succeeded (its
    result's `worktreePath` / `restoredCwd`; None when the result names none): the permission bridge judges the
    paths of later calls from there. A call that failed moved nothing and has no entry."""
    tasks: dict[str, _Task] = field(default_factory=dict)
    background: set[str] = field(default_factory=set)
    """`local_agent` tasks the CLI lists as running in the background."""
    model: str | None = None
    _started: bool = False
    _blocks: dict[int, _Block] = field(default_factory=dict)
    _message_id: str | None = None
    _usage: Usage | None = None
    _replay: _Replay | None = None
    _streamed: set[str] = field(default_factory=set)

    # --- what the run asks ---------------------------------------------------------------------

    def tool(self, tool_use_id: str) -> _Call | None:
        return self.tools.get(tool_use_id)

    def task_of(self, agent_id: object) -> str | None:
        """The subagent task an `agent_id` names, if it was announced (else the main agent's)."""
        return agent_id if isinstance(agent_id, str) and agent_id in self.tasks else None

    def agents_running(self) -> bool:
        """Whether a subagent (foreground or background) still runs: the run is not over yet."""
        return bool(self.background) or any(not task.done for task in self.tasks.values())

    def unfinished_tasks(self) -> list[SubagentCompleted]:
        """`subagent_completed` for every task still open when the run ends (killed with the CLI)."""
        done: list[SubagentCompleted] = []
        for task_id, task in self.tasks.items():
            if not task.done:
                task.done = True
                status = _TERMINAL_TASK.get(task.status, "cancelled")
                done.append(SubagentCompleted(task_id=task_id, agent_name=task.name, status=status))
        self.background.clear()
        return done

    def use_for(self, tool_use_id: str, name: str, tool_input: dict[str, Any], task: str | None) -> ToolUse | None:
        """The `tool_use` of a call first seen in a permission request (None when it was announced)."""
        if tool_use_id in self.tools:
            return None
        self.tools[tool_use_id] = _Call(name, tool_input, task)
        return ToolUse(tool_use_id=tool_use_id, name=name, input=tool_input, subagent_task_id=task)

    # --- lines ---------------------------------------------------------------------------------

    def line(self, message: Message) -> list[Item]:
        kind = message.get("type")
        if kind == "stream_event":
            return self._stream_event(message)
        if kind == "assistant":
            return self._assistant(message)
        if kind == "user":
            return self._user(message)
        if kind == "system":
            return self._system(message)
        if kind == "result":
            return [TurnResult(message)]
        if kind == "tool_progress":
            return self._tool_progress(message)
        return []  # control lines are the run's; rate_limit_event, keep_alive and unknown kinds carry nothing

    # --- the main agent's partial messages ----------------------------------------------------------

    def _stream_event(self, message: Message) -> list[Item]:
        if message.get("parent_tool_use_id"):
            return []  # partials are the main agent's only; a subagent's text comes whole
        event = message.get("event")
        if not isinstance(event, Mapping):
            return []
        kind = event.get("type")
        if kind == "message_start":
            inner = event.get("message")
            self._blocks = {}
            self._usage = None
            self._message_id = inner.get("id") if isinstance(inner, Mapping) else None
            if isinstance(self._message_id, str):
                self._streamed.add(self._message_id)
            return []
        if kind == "content_block_start":
            block = event.get("content_block")
            index = event.get("index")
            if isinstance(index, int) and isinstance(block, Mapping):
                self._blocks[index] = _Block(str(block.get("type")))
            return []
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_stop":
            return self._block_stop(event.get("index"))
        if kind == "message_delta":
            self._usage = usage_from_anthropic(event.get("usage"))
            return []
        if kind == "message_stop":
            return self._message_stop(message.get("abandoned_blocks") or event.get("abandoned_blocks"))
        return []

    def _delta(self, event: Message) -> list[Item]:
        index, delta = event.get("index"), event.get("delta")
        if not isinstance(index, int) or not isinstance(delta, Mapping):
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            return self._grow(index, "text", str(delta.get("text") or ""))
        if kind == "thinking_delta":
            return self._grow(index, "thinking", str(delta.get("thinking") or ""))
        if kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block = self._blocks.setdefault(index, _Block("thinking"))
            block.signature = delta["signature"]
            old = self._old(index)
            if old is not None and old.signature == block.signature:
                return []
            return [Thinking(text="", replace=False, signature=block.signature)] if self.include_thoughts else []
        return []  # input_json_delta: the call is shown whole from its `assistant` line

    def _old(self, index: int) -> _Block | None:
        replay = self._replay
        if replay is None or replay.diverged or index >= len(replay.shown):
            return None
        return replay.shown[index]

    def _grow(self, index: int, kind: str, chunk: str) -> list[Item]:
        block = self._blocks.setdefault(index, _Block(kind))
        before = len(block.text)
        block.text += chunk
        replay = self._replay
        if replay is not None and not replay.diverged and index < len(replay.shown):
            old = replay.shown[index]
            if old.kind != kind or not (old.text.startswith(block.text) or block.text.startswith(old.text)):
                return self._diverge()
            fresh = block.text[max(before, len(old.text)) :]
        else:
            fresh = chunk
        return self._show(kind, fresh)

    def _show(self, kind: str, text: str, *, replace: bool = False) -> list[Item]:
        if not text and not replace:
            return []
        if kind == "text":
            return [TextDelta(text=text)]
        if kind == "thinking" and self.include_thoughts:
            return [Thinking(text=text, replace=replace)]
        return []

    def _block_stop(self, index: object) -> list[Item]:
        old = self._old(index) if isinstance(index, int) else None
        block = self._blocks.get(index) if isinstance(index, int) else None
        if old is not None and block is not None and len(block.text) < len(old.text):
            return self._diverge()  # the new answer's block is shorter than what was shown
        return []

    def _diverge(self) -> list[Item]:
        """The answer after a cut differs from what was shown: close that, say so, show the new one whole."""
        assert self._replay is not None
        self._replay.diverged = True
        shown = sum(len(b.text) for b in self._replay.shown)
        items: list[Item] = [
            EndMessage(None),
            WarningEvent(
                code="stream_resumed",
                message=f"the model's answer was cut off after {shown} characters and the model answered again "
                "from the start; the new answer follows in full and replaces the cut one",
            ),
        ]
        first_thought = True
        for index in sorted(self._blocks):
            block = self._blocks[index]
            if block.kind == "thinking":
                items += self._show("thinking", block.text, replace=first_thought)
                first_thought = False
                if block.signature and self.include_thoughts:
                    items.append(Thinking(text="", replace=False, signature=block.signature))
            elif block.kind == "text":
                items += self._show("text", block.text)
        return items

    def _message_stop(self, abandoned: object) -> list[Item]:
        blocks = [self._blocks[i] for i in sorted(self._blocks)]
        if isinstance(abandoned, Mapping):
            # What the consumer has seen of each block: the old answer's text where the new one
            # has not caught up with it yet.
            seen: list[_Block] = []
            for index, block in enumerate(blocks):
                old = self._old(index)
                longer = old if old is not None and len(old.text) > len(block.text) else block
                seen.append(_Block(block.kind, longer.text, block.signature or (old.signature if old else None)))
            if self._replay is not None and not self._replay.diverged:
                seen += self._replay.shown[len(seen) :]
            self._replay = _Replay([b for b in seen if b.kind in ("text", "thinking")])
            self._blocks = {}
            return []
        items = self._replaced_whole()
        items.append(EndTurn(self._usage or Usage()))
        self._usage = None
        return items

    # --- whole messages ----------------------------------------------------------------------------

    def _assistant(self, message: Message) -> list[Item]:
        inner = message.get("message")
        if not isinstance(inner, Mapping) or inner.get("model") == SYNTHETIC:
            return []  # the CLI's own note in the model's place (an API error's text): the error says it
        task = self.task_of(message.get("agent_id")) or self._task_of_parent(message.get("parent_tool_use_id"))
        message_id = inner.get("id")
        streamed = task is None and isinstance(message_id, str) and message_id in self._streamed
        if isinstance(inner.get("model"), str) and task is None:
            self.model = inner["model"]
        items: list[Item] = []
        # The CLI's non-streaming fallback after a stream that failed (its `message_stop` names the abandoned
        # blocks, or never came): the whole answer is matched against what was shown, as a streamed retry is.
        answers_cut = task is None and not streamed and (self._replay is not None or self._cut_stream_shown())
        if answers_cut and self._replay is None:
            self._replay = _Replay([b for _, b in sorted(self._blocks.items()) if b.kind in ("text", "thinking")])
            self._blocks = {}
        for index, block in enumerate(as_list(inner.get("content"))):
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if answers_cut and kind in ("text", "thinking"):
                items += self._grow(index, str(kind), str(block.get(kind) or ""))
                items += self._block_stop(index)
                continue
            if kind == "tool_use" and isinstance(block.get("id"), str):
                call_id = block["id"]
                if call_id in self.tools:
                    continue
                arguments = as_object(block.get("input"))
                self.tools[call_id] = _Call(str(block.get("name")), arguments, task)
                items.append(
                    ToolUse(
                        tool_use_id=call_id, name=str(block.get("name")), input=dict(arguments), subagent_task_id=task
                    )
                )
            elif kind == "server_tool_use" and isinstance(block.get("id"), str):
                call_id = block["id"]
                if call_id not in self.tools:
                    arguments = as_object(block.get("input"))
                    self.tools[call_id] = _Call(str(block.get("name")), arguments, task)
                    items.append(
                        ToolUse(
                            tool_use_id=call_id,
                            name=str(block.get("name")),
                            input=dict(arguments),
                            server_side=True,
                            subagent_task_id=task,
                        )
                    )
            elif isinstance(kind, str) and kind.endswith("_tool_result") and isinstance(block.get("tool_use_id"), str):
                call_id = block["tool_use_id"]
                if call_id in self.tools and call_id not in self.answered:
                    self.answered.add(call_id)
                    items.append(
                        ToolResult(
                            tool_use_id=call_id,
                            output=json.dumps(block.get("content"), ensure_ascii=False, default=str),
                            data={"content": block.get("content")},
                            server_side=True,
                            subagent_task_id=task,
                        )
                    )
            elif streamed:
                continue  # the main agent's text and thinking came as deltas
            elif kind == "text" and isinstance(block.get("text"), str) and block["text"]:
                items.append(TextDelta(text=block["text"], subagent_task_id=task))
            elif kind == "thinking" and self.include_thoughts:
                signature = block.get("signature") if isinstance(block.get("signature"), str) else None
                items.append(
                    Thinking(
                        text=str(block.get("thinking") or ""), replace=False, signature=signature, subagent_task_id=task
                    )
                )
        if answers_cut:
            items += self._replaced_whole()
        return items

    def _cut_stream_shown(self) -> bool:
        """Whether a main-agent message was streamed in part and never ended (no `message_stop`: its stream
        failed), with text or thought shown: the next whole answer is the model's again, not more of it."""
        return any(b.kind in ("text", "thinking") and b.text for b in self._blocks.values())

    def _replaced_whole(self) -> list[Item]:
        """The end of a whole answer matched against the cut one (`_replay`): one shorter than what was shown
        diverges; then the match is over."""
        items: list[Item] = []
        replay = self._replay
        if replay is not None and not replay.diverged:
            texts = [b for _, b in sorted(self._blocks.items()) if b.kind in ("text", "thinking")]
            if len(texts) < len(replay.shown) or any(
                len(new.text) < len(old.text) for new, old in zip(texts, replay.shown, strict=False)
            ):
                items += self._diverge()
        self._replay = None
        self._blocks = {}
        return items

    def _task_of_parent(self, parent: object) -> str | None:
        if not isinstance(parent, str):
            return None
        return next((task_id for task_id, task in self.tasks.items() if task.tool_use_id == parent), None)

    def _user(self, message: Message) -> list[Item]:
        if message.get("isReplay"):
            return []
        inner = message.get("message")
        content = inner.get("content") if isinstance(inner, Mapping) else None
        if not isinstance(content, list):
            return []
        meta = {
            entry.get("id"): entry.get("permission_decision")
            for entry in as_list(message.get("tool_result_meta"))
            if isinstance(entry, Mapping) and isinstance(entry.get("id"), str)
        }
        structured = message.get("tool_use_result")
        items: list[Item] = []
        for block in content:
            if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                continue
            call_id = block.get("tool_use_id")
            if (
                not isinstance(call_id, str)
                or call_id not in self.tools
                or call_id in self.stopped
                or call_id in self.answered
            ):
                continue
            self.answered.add(call_id)
            call = self.tools[call_id]
            text, images = tool_result_text(block.get("content"))
            is_error = block.get("is_error") is True
            if call_id not in self.decided:
                items.append(self._backend_decision(call_id, call, meta.get(call_id), is_error, text))
            data: dict[str, JsonValue] | None = None
            if isinstance(structured, dict) and len(content) == 1:
                data = dict(structured)
            elif isinstance(structured, str) and structured != text:
                data = {"value": structured}
            if images:
                data = {**(data or {}), "images": images}
            if call.name in _MOVES and not is_error:
                folder = (data or {}).get(_MOVES[call.name])
                self.moved_to[call_id] = folder if isinstance(folder, str) and folder else None
            items.append(
                ToolResult(
                    tool_use_id=call_id,
                    output=text,
                    data=data,
                    is_error=is_error,
                    input=self.ran_with.get(call_id),
                    subagent_task_id=call.task,
                )
            )
        return items

    def _backend_decision(
        self, call_id: str, call: _Call, meta: object, is_error: bool, text: str | None
    ) -> PermissionDecision:
        """The decision of a call the CLI settled itself (it never asked the client)."""
        self.decided.add(call_id)
        if isinstance(meta, Mapping):
            accepted = meta.get("decision") == "accept"
            how = ", ".join(str(meta[key]) for key in ("source", "reason_type") if meta.get(key))
            reason = f"the claude CLI {'allowed' if accepted else 'refused'} it ({how or 'its own rules'})"
        else:  # no decision recorded: the call could not run at all (an unknown tool, invalid input)
            accepted = not is_error
            reason = clip(text or "the claude CLI did not run it", 300) if is_error else "the claude CLI ran it"
        return PermissionDecision(
            tool_use_id=call_id,
            tool_name=call.name,
            decision="allow" if accepted else "deny",
            decided_by="backend",
            reason=reason,
            subagent_task_id=call.task,
        )

    def _tool_progress(self, message: Message) -> list[Item]:
        call_id = message.get("tool_use_id")
        parent = message.get("parent_tool_use_id")
        target = call_id if isinstance(call_id, str) and call_id in self.tools else parent
        if not isinstance(target, str) or target not in self.tools:
            return []
        elapsed = message.get("elapsed_time_seconds")
        text = f"running for {elapsed} s" if isinstance(elapsed, int | float) else None
        return [
            ToolProgress(tool_use_id=target, status="running", message=text, subagent_task_id=self.tools[target].task)
        ]

    # --- system lines ------------------------------------------------------------------------------

    def _system(self, message: Message) -> list[Item]:
        subtype = message.get("subtype")
        if subtype == "init":
            if isinstance(message.get("model"), str):
                self.model = message["model"]
            if self._started:
                return []
            self._started = True
            session = message.get("session_id")
            cwd = message.get("cwd")
            started: list[Item] = [
                Started(
                    session if isinstance(session, str) else None, self.model, cwd if isinstance(cwd, str) else None
                )
            ]
            return started  # its `mcp_servers` are the run's to judge (`_run.ClaudeRun._plan_mcp_look`)
        if subtype == "api_retry":
            status = message.get("error_status")
            delay = message.get("retry_delay_ms")
            return [
                Retry(
                    attempt=positive_int(message.get("attempt")),
                    max_retries=positive_int(message.get("max_retries")),
                    delay_s=_delay_s(delay),
                    status=status if isinstance(status, int) else None,
                    error=str(message.get("error") or "unknown"),
                )
            ]
        if subtype == "task_started":
            return self._task_started(message)
        if subtype == "task_progress":
            task_id = message.get("task_id")
            if not isinstance(task_id, str) or task_id not in self.tasks or self.tasks[task_id].done:
                return []
            last = message.get("last_tool_name")
            text = message.get("description")
            return [
                SubagentProgress(
                    task_id=task_id,
                    agent_name=self.tasks[task_id].name,
                    status="running",
                    message=f"{text} (last tool: {last})" if text and last else str(text or last or "") or None,
                )
            ]
        if subtype == "task_updated":
            task_id = message.get("task_id")
            patch = message.get("patch")
            if isinstance(task_id, str) and task_id in self.tasks and isinstance(patch, Mapping):
                status = patch.get("status")
                if isinstance(status, str):
                    self.tasks[task_id].status = status
                    if status in _TERMINAL_TASK:
                        self.background.discard(task_id)
            return []
        if subtype == "task_notification":
            return self._task_done(message)
        if subtype == "background_tasks_changed":
            tasks = message.get("tasks")
            if isinstance(tasks, list):
                self.background = {
                    t["task_id"]
                    for t in tasks
                    if isinstance(t, Mapping)
                    and t.get("task_type") in ("local_agent", "local_workflow")
                    and isinstance(t.get("task_id"), str)
                }
            return []
        return []  # status, thinking_tokens, hooks, informational notes: nothing for the stream

    def _task_started(self, message: Message) -> list[Item]:
        task_id = message.get("task_id")
        if message.get("task_type") not in ("local_agent", "local_workflow") or not isinstance(task_id, str):
            return []  # a local_bash task is a Bash call of its own (shown as that call)
        if task_id in self.tasks:
            return []
        name = str(message.get("subagent_type") or message.get("task_type") or "agent")
        parent = message.get("tool_use_id") if isinstance(message.get("tool_use_id"), str) else None
        self.tasks[task_id] = _Task(name, parent)
        if message.get("is_backgrounded") is True:
            self.background.add(task_id)
        description = message.get("description")
        return [
            SubagentStarted(
                task_id=task_id,
                agent_name=name,
                description=description if isinstance(description, str) else None,
                parent_tool_use_id=parent if parent in self.tools else None,
            )
        ]

    def _task_done(self, message: Message) -> list[Item]:
        task_id = message.get("task_id")
        if not isinstance(task_id, str) or task_id not in self.tasks or self.tasks[task_id].done:
            return []
        task = self.tasks[task_id]
        task.done = True
        self.background.discard(task_id)
        status = _TERMINAL_TASK.get(str(message.get("status") or task.status), "completed")
        summary = message.get("summary")
        return [
            EndMessage(task_id),
            SubagentCompleted(
                task_id=task_id,
                agent_name=task.name,
                status=status,
                result=summary if isinstance(summary, str) else None,
            ),
        ]
