"""Codex app-server notifications → UnifiedEvents; pure (no I/O, no clock), so it is tested line by line.

One `AppServerTranslator` per run follows the run's main thread and the subagent threads it spawns
(`collabAgentToolCall` items name them; their notifications arrive on the same connection with their
own `threadId`). It returns events to emit and a few markers the run acts on:

- `ModelResponse`: a model response of some thread finished (`thread/tokenUsage/updated`, whose
  `last` is that response's usage): the main thread's ends a turn, a subagent's adds to its usage; a
  response that reported no usage is known by the `account/rateLimits/updated` that follows each
  response's token count with no `thread/tokenUsage/updated` before it (`_usage_less_response`);
- `TurnEnded`: a thread's turn ended (`turn/completed`), with its status and error;
- `Retrying`: Codex is retrying the provider (`error` with `willRetry`), which may last forever.

Mapping: message deltas → `text_delta`; reasoning summary deltas → `thinking(replace=False)` (each
summary part after the first starts on a new paragraph); `commandExecution`, `fileChange`,
`mcpToolCall`, `collabAgentToolCall`, ... items → `tool_use` at `item/started` and `tool_result` at
`item/completed` (`tool_call_of` and `tool_result_of` say with what); a call no approval request
asked about gets `permission_decision(allow, decided_by=backend)` before its result; a spawn's child
becomes a `subagent_started` (task id = the child's thread id) and its turn's end `subagent_completed`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from unified._binary.jsonrpc import as_dict, as_list
from unified._internal.counts import positive_int
from unified.events import (
    JsonValue,
    PermissionDecision,
    SubagentCompleted,
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
    "SERVER_SIDE_ITEMS",
    "TERMINAL_INPUT",
    "TOOL_ITEMS",
    "AppServerTranslator",
    "Item",
    "ModelResponse",
    "Retrying",
    "TurnEnded",
    "codex_usage",
    "tool_call_of",
    "tool_result_of",
    "unwrap_shell",
    "usage_from_breakdown",
]

TOOL_ITEMS = frozenset(
    {
        "commandExecution",
        "fileChange",
        "mcpToolCall",
        "collabAgentToolCall",
        "webSearch",
        "imageView",
        "dynamicToolCall",
    }
)
SERVER_SIDE_ITEMS = frozenset({"webSearch"})
"""Tools the provider runs (OpenAI's hosted web search): no client-side decision."""
TERMINAL_INPUT = "item/commandExecution/terminalInteraction"
"""What Codex 0.171 sends once it wrote the model's `write_stdin` input (`stdin`) to a process a command started
(`itemId`): no approval is asked first, in any mode (measured: `touch PWNED` typed into an allowed `bash` ran).
Reported as the call's `tool_progress` with status `input`; outside yolo it stops the run (`_run`)."""
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_COLLAB_NAMES = {
    "spawnAgent": "spawn_agent",
    "sendInput": "send_input",
    "resumeAgent": "resume_agent",
    "wait": "wait_agent",
    "closeAgent": "close_agent",
}
_BUBBLEWRAP = "could not find bubblewrap"


@dataclass(frozen=True, slots=True)
class ModelResponse:
    """One model response of a thread finished; `usage` is what it cost."""

    usage: Usage
    task_id: str | None
    """The subagent's task id (its thread id), or None for the main thread."""
    answered: bool = False
    """The main thread's response gave a message not marked `commentary`: Codex ends the turn with it unless it
    also made calls (`max_turns` does not interrupt a turn that is ending)."""


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """A thread's turn ended."""

    task_id: str | None
    status: str
    """`completed`, `failed` or `interrupted`."""
    error: dict[str, Any] | None
    turn_id: str


@dataclass(frozen=True, slots=True)
class Retrying:
    """Codex is retrying the provider (it may do so forever when nothing answers)."""

    message: str
    details: str | None


Item = UnifiedEvent | ModelResponse | TurnEnded | Retrying


def codex_usage(counts: Mapping[str, Any], keys: tuple[str, str, str, str, str]) -> Usage:
    """Codex's token counts as our Usage, read under `keys` (input, cached input, cache writes, output,
    reasoning: the app-server's `TokenUsageBreakdown` and the rollouts' records spell them apart). Codex's output
    count includes the reasoning tokens, ours does not; a count that is no whole number is 0, `true` too (the shared
    rule, `unified._internal.counts.positive_int`: this copy of it took `true` for 1 token, bad input round 22)."""

    def number(key: str) -> int:
        return positive_int(counts.get(key))

    input_key, cached_key, cache_write_key, output_key, reasoning_key = keys
    reasoning = number(reasoning_key)
    return Usage(
        input_tokens=number(input_key),
        cached_tokens=number(cached_key),
        cache_creation_tokens=number(cache_write_key),
        output_tokens=max(number(output_key) - reasoning, 0),
        thinking_tokens=reasoning,
    )


def usage_from_breakdown(breakdown: dict[str, Any]) -> Usage:
    """A `TokenUsageBreakdown` as our Usage, its cache writes (`cacheWriteInputTokens`) too."""
    keys = ("inputTokens", "cachedInputTokens", "cacheWriteInputTokens", "outputTokens", "reasoningOutputTokens")
    return codex_usage(breakdown, keys)


_UNREPORTED = Usage(estimated=True)
"""The usage of a model response that reported none (a server or proxy that sends none, or strips it from some
answers): flagged `estimated`, as the API backends flag one (`_internal.counts`), the guard estimating its output
from its text. Zeros unflagged read as measured when the response wrote no text (a tool call), before round 19."""


def _minus(after: Usage, before: Usage) -> Usage:
    return Usage(
        input_tokens=max(after.input_tokens - before.input_tokens, 0),
        cached_tokens=max(after.cached_tokens - before.cached_tokens, 0),
        cache_creation_tokens=max(after.cache_creation_tokens - before.cache_creation_tokens, 0),
        output_tokens=max(after.output_tokens - before.output_tokens, 0),
        thinking_tokens=max(after.thinking_tokens - before.thinking_tokens, 0),
    )


_WRAPPED = re.compile(r"""([^\s'"\\]+) (-l?c) (?:'([^']*)'|"([^"\\]*(?:\\.[^"\\]*)*)")""", re.S)
"""Codex's display of a command, `<shell> -lc '<cmd>'` (or `"<cmd>"` when it holds a `'`), read without `shlex`."""
_QUOTED_ESCAPE = re.compile(r'\\(["\\])')
_SPLIT_AT_MOST = 65_536
"""Longest display `shlex.split` reads when it is not in Codex's usual form: shlex takes about 1.5 us a character
(0.15 s for the 100,000 characters a fuzzed or hostile command may have, paid at its approval and again at its
item); a longer one is judged as displayed, the shell invocation that runs."""


def unwrap_shell(command: str) -> str:
    """The command the model gave, from Codex's display of it (`/bin/bash -lc '<cmd>'`): what `shlex.split`
    reads as three words, a shell, `-c`/`-lc` and the command. Codex's usual form is read by one regular
    expression (the same words `shlex` gives: in double quotes only `\\"` and `\\\\` are escapes).

    A script its shell may read otherwise than bash (`_shell_syntax.otherwise_read`: dash has no `$'...'` nor `[[`)
    is left wrapped: judged as displayed, the shell invocation makes it unknown, where taken off it was judged as
    bash and ran what bash would not."""
    wrapped = _WRAPPED.fullmatch(command)
    if wrapped is not None and PurePosixPath(wrapped[1]).name in _SHELLS:
        single, double = wrapped[3], wrapped[4]
        return _unwrapped(command, wrapped[1], single if single is not None else _QUOTED_ESCAPE.sub(r"\1", double))
    if len(command) > _SPLIT_AT_MOST:
        return command
    try:
        parts = shlex.split(command)
    except ValueError:
        return command
    if len(parts) == 3 and PurePosixPath(parts[0]).name in _SHELLS and parts[1] in ("-c", "-lc", "-l -c"):
        return _unwrapped(command, parts[0], parts[2])
    return command


def _unwrapped(command: str, shell: str, script: str) -> str:
    from unified.tools._shell_syntax import otherwise_read  # imported late, as the adapters import unified.tools

    return command if otherwise_read(PurePosixPath(shell).name, script) is not None else script


def _relative(path: str, cwd: str | None) -> str:
    if cwd:
        try:
            return str(PurePosixPath(path).relative_to(cwd))
        except ValueError:
            pass
    return path


def tool_call_of(item: dict[str, Any], cwd: str | None) -> tuple[str, dict[str, JsonValue]]:
    """The tool's name and the model's arguments for a tool item, as the app-server gives them:

    - `commandExecution`: `exec_command` with `{"cmd": <the command>}` (plus `workdir` when not the
      thread's cwd);
    - `fileChange`: `apply_patch` with `{"changes": [{"path", "kind", "diff"}]}` (paths relative to the
      thread's cwd when inside it): the parsed patch, since the app-server never shows the raw one;
    - `mcpToolCall`: `mcp__<server>__<tool>` with its arguments;
    - `collabAgentToolCall`: `spawn_agent` `{"message": <prompt>}`, `wait_agent` `{"targets"}`, ...
    """
    kind = item.get("type")
    if kind == "commandExecution":
        arguments: dict[str, JsonValue] = {"cmd": unwrap_shell(str(item.get("command") or ""))}
        workdir = item.get("cwd")
        if isinstance(workdir, str) and workdir and workdir != cwd:
            arguments["workdir"] = workdir
        return "exec_command", arguments
    if kind == "fileChange":
        changes: list[JsonValue] = []
        for change in as_list(item.get("changes")):
            change = as_dict(change)
            what = as_dict(change.get("kind"))
            entry: dict[str, JsonValue] = {
                "path": _relative(str(change.get("path") or ""), cwd),
                "kind": str(what.get("type") or "update"),
                "diff": str(change.get("diff") or ""),
            }
            if isinstance(what.get("move_path"), str):
                entry["move_path"] = _relative(what["move_path"], cwd)
            changes.append(entry)
        return "apply_patch", {"changes": changes}
    if kind == "mcpToolCall":
        given = item.get("arguments")
        return f"mcp__{item.get('server')}__{item.get('tool')}", given if isinstance(given, dict) else {}
    if kind == "collabAgentToolCall":
        tool = str(item.get("tool") or "collab")
        name = _COLLAB_NAMES.get(tool, tool)
        collab: dict[str, JsonValue] = {}
        if item.get("prompt"):
            collab["message"] = str(item["prompt"])
        receivers = [r for r in as_list(item.get("receiverThreadIds")) if isinstance(r, str)]
        if receivers and name != "spawn_agent":
            collab["targets"] = list(receivers)
        return name, collab
    if kind == "webSearch":
        return "web_search", {"query": str(item.get("query") or "")}
    if kind == "imageView":
        return "view_image", {"path": str(item.get("path") or "")}
    other = item.get("arguments")
    return str(item.get("tool") or kind or "tool"), other if isinstance(other, dict) else {}


_FILE_KIND = {"add": "A", "delete": "D", "update": "M"}


def tool_result_of(
    item: dict[str, Any], cwd: str | None = None
) -> tuple[str | None, bool, dict[str, JsonValue] | None]:
    """(output text, is_error, structured data) of a finished tool item (a patch's paths relative to `cwd`)."""
    kind = item.get("type")
    status = str(item.get("status") or "")
    failed = status in ("failed", "declined")
    if kind == "commandExecution":
        code = item.get("exitCode")
        output = item.get("aggregatedOutput")
        if status == "declined":
            return "rejected by the user", True, {"status": status}
        data: dict[str, JsonValue] = {"exit_code": code if isinstance(code, int) else None, "status": status}
        error = failed or (isinstance(code, int) and code != 0)
        return (output if isinstance(output, str) else None), error, data
    if kind == "fileChange":
        if status == "declined":
            return "patch rejected by the user", True, {"status": status}
        if failed:
            return "the patch could not be applied", True, {"status": status}
        lines = []
        for change in as_list(item.get("changes")):
            change = as_dict(change)
            what = str(as_dict(change.get("kind")).get("type") or "update")
            lines.append(f"{_FILE_KIND.get(what, 'M')} {_relative(str(change.get('path')), cwd)}")
        return "Success. Updated the following files:\n" + "\n".join(lines), False, {"status": status}
    if kind == "mcpToolCall":
        problem = as_dict(item.get("error"))
        if failed or problem:
            return str(problem.get("message") or "the MCP tool call failed"), True, None
        result = as_dict(item.get("result"))
        texts = [
            str(part.get("text"))
            for part in as_list(result.get("content"))
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        structured = result.get("structuredContent")
        return "\n".join(texts) or None, False, ({"structured": structured} if structured is not None else None)
    if kind == "collabAgentToolCall":
        states = as_dict(item.get("agentsStates"))
        receivers = [r for r in as_list(item.get("receiverThreadIds")) if isinstance(r, str)]
        summary = {"receivers": list(receivers), "states": json.loads(json.dumps(states))}
        return json.dumps(summary), failed, None
    if kind == "webSearch":
        action = item.get("action")
        return None, failed, {"action": action} if isinstance(action, dict) else None
    text = item.get("result") or item.get("output")
    return (text if isinstance(text, str) else None), failed, None


@dataclass
class _Thread:
    task_id: str | None
    parent: str | None = None
    """The task of the thread that spawned it (None: the main thread)."""
    turn_id: str | None = None
    last_text: str = ""
    usage: Usage = field(default_factory=Usage)
    total: Usage = field(default_factory=Usage)
    """The thread's total as last reported."""
    done: bool = False
    output: bool = False
    """An item of the model's was started since its last response was counted."""


@dataclass
class AppServerTranslator:
    """Notifications of one run's threads → events and markers (see the module docstring)."""

    main_thread: str
    cwd: str | None = None
    threads: dict[str, _Thread] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)
    """Announced call id → tool name."""
    decided: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    session_rules: dict[str, str] = field(default_factory=dict)
    """Command lines (and patch paths) the user allowed for the session → the rule's words."""
    _streamed: dict[str, str] = field(default_factory=dict)
    """Item id → the text streamed so far (agent messages, reasoning)."""
    _summary_parts: dict[str, int] = field(default_factory=dict)
    _items: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Call id → the item as last seen (for the approval bridge)."""
    not_run: dict[str, str] = field(default_factory=dict)
    """Call id → why unified did not run it, when that is not a user's refusal (`max_turns`): its `tool_result`."""
    main_responses: int = 0
    """The main thread's model responses counted in this run (its requests that ended)."""
    _request_of: dict[str, int] = field(default_factory=dict)
    """A main-thread call's id → the number of the model request that made it (`request_of`)."""
    _answered: bool = False
    """The main thread's current response gave an answer (`ModelResponse.answered`)."""
    _usage_seen: bool = False
    """A `thread/tokenUsage/updated` came in this run: from then on Codex sends one for every response (repeating
    the last figures for a response without usage), which counts it."""

    def __post_init__(self) -> None:
        self.threads.setdefault(self.main_thread, _Thread(None))

    def resumed_at(self, total: Usage) -> None:
        """The main thread's total before this run (a resumed thread's, `_rollouts.last_total`): its responses count
        from there, when Codex does not tell it first."""
        self.threads[self.main_thread].total = total

    # --- who is who ---------------------------------------------------------------------------------

    def task_of(self, thread_id: object) -> str | None:
        thread = self.threads.get(thread_id) if isinstance(thread_id, str) else None
        return thread.task_id if thread is not None else None

    def knows(self, thread_id: object) -> bool:
        return isinstance(thread_id, str) and thread_id in self.threads

    def start_turn(self, turn_id: str) -> None:
        self.threads[self.main_thread].turn_id = turn_id

    @property
    def spawned(self) -> bool:
        """Whether the run has spawned a subagent."""
        return any(t.task_id is not None for t in self.threads.values())

    def children_running(self) -> list[str]:
        """Subagent threads whose turn has not ended (the run waits for them)."""
        return [tid for tid, t in self.threads.items() if t.task_id is not None and not t.done]

    def item(self, call_id: str) -> dict[str, Any] | None:
        return self._items.get(call_id)

    def open_calls(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """Items announced and not finished (an MCP approval names no item: it is found among these)."""
        return [i for cid, i in self._items.items() if cid not in self.answered]

    # --- the notifications --------------------------------------------------------------------------

    def notification(self, method: str, params: dict[str, Any]) -> list[Item]:
        thread_id = params.get("threadId")
        if method in ("configWarning", "warning"):
            return self._warning(method, params)
        if method == "account/rateLimits/updated":
            return self._usage_less_response()
        if not self.knows(thread_id):
            return []
        task = self.task_of(thread_id)
        thread = self.threads[str(thread_id)]
        if method == "item/agentMessage/delta":
            return self._delta(params, task, thinking=False)
        if method in ("item/reasoning/summaryTextDelta", "item/reasoning/textDelta"):
            return self._delta(params, task, thinking=True)
        if method == "item/reasoning/summaryPartAdded":
            item_id = str(params.get("itemId"))
            index = params.get("summaryIndex")
            self._summary_parts[item_id] = index if isinstance(index, int) else 0
            return []
        if method == "item/started":
            item = as_dict(params.get("item"))
            thread.output = thread.output or item.get("type") != "userMessage"
            if task is None and isinstance(item.get("id"), str):
                self._request_of.setdefault(item["id"], self.main_responses + 1)
                if item.get("type") == "agentMessage" and item.get("phase") != "commentary":
                    self._answered = True
            return self._started(item, task)
        if method == "item/completed":
            return self._completed(as_dict(params.get("item")), task, thread)
        if method == "item/commandExecution/outputDelta":
            call_id = str(params.get("itemId"))
            if call_id in self.tools and call_id not in self.answered and isinstance(params.get("delta"), str):
                return [
                    ToolProgress(tool_use_id=call_id, status="output", message=params["delta"], subagent_task_id=task)
                ]
            return []
        if method == TERMINAL_INPUT:
            # the model's `write_stdin`, which Codex does without asking and reports only so: the input typed
            call_id, typed = str(params.get("itemId")), params.get("stdin")
            if call_id in self.tools and call_id not in self.answered and isinstance(typed, str):
                return [ToolProgress(tool_use_id=call_id, status="input", message=typed, subagent_task_id=task)]
            return []
        if method == "turn/started":
            turn = as_dict(params.get("turn"))
            if task is not None and isinstance(turn.get("id"), str):
                thread.turn_id = turn["id"]
                thread.done = False
            return []
        if method == "thread/tokenUsage/updated":
            self._usage_seen = True
            thread.output = False
            # `last` repeats the previous response's figures when a response reported none, so a
            # response's usage is what the thread's `total` grew by.
            total = usage_from_breakdown(as_dict(as_dict(params.get("tokenUsage")).get("total")))
            before, thread.total = thread.total, total
            if not self._this_turn(thread, params):
                return []  # a resumed thread's earlier usage (the baseline), or another turn's
            usage = _minus(total, before)
            if usage.is_empty():  # a response that reported none: its zeros are no measurement
                usage = _UNREPORTED
            thread.usage = thread.usage + usage
            if task is None:
                self.main_responses += 1
                answered, self._answered = self._answered, False
                return [ModelResponse(usage, None, answered)]
            return [ModelResponse(usage, task)]
        if method == "error":
            error = as_dict(params.get("error"))
            if params.get("willRetry") is True:
                details = error.get("additionalDetails")
                return [
                    Retrying(str(error.get("message") or "retrying"), details if isinstance(details, str) else None)
                ]
            return []
        if method == "turn/completed":
            return self._turn_completed(as_dict(params.get("turn")), task, thread)
        return []

    def _warning(self, method: str, params: dict[str, Any]) -> list[Item]:
        text = str(params.get("message") or params.get("summary") or "")
        if not text or _BUBBLEWRAP in text or (params.get("threadId") and not self.knows(params.get("threadId"))):
            return []  # the bundled bubblewrap is used; a warning of another thread is not ours
        return [WarningEvent(code="codex_warning", message=text, subagent_task_id=self.task_of(params.get("threadId")))]

    def _delta(self, params: dict[str, Any], task: str | None, *, thinking: bool) -> list[Item]:
        delta = params.get("delta")
        if not isinstance(delta, str) or not delta:
            return []
        item_id = str(params.get("itemId"))
        seen = self._streamed.get(item_id, "")
        if thinking:
            part = self._summary_parts.get(item_id, 0)
            key = f"{item_id}#{part}"
            if part > 0 and key not in self._streamed:
                delta = "\n\n" + delta
            self._streamed[key] = self._streamed.get(key, "") + delta
            self._streamed[item_id] = seen + delta
            return [Thinking(text=delta, replace=False, subagent_task_id=task)]
        self._streamed[item_id] = seen + delta
        return [TextDelta(text=delta, subagent_task_id=task)]

    def _usage_less_response(self) -> list[Item]:
        """Codex ends each model response with a token count: `thread/tokenUsage/updated` once it has usage to tell,
        then `account/rateLimits/updated`. In a run with no usage yet, the latter is a main-thread response that
        reported none (a server or proxy that sends none), counted as one with an empty usage flagged `estimated`
        (the guard estimates its output from the text); before, such a run counted 1 turn for any number of
        requests. It names no thread: once a subagent is spawned it could be the subagent's, and is not counted; nor
        is one with no item of the model's since the last count (a rate-limit notice of the account's, not a
        response's)."""
        main = self.threads[self.main_thread]
        if self._usage_seen or self.spawned or not main.output:
            return []
        main.output = False
        self.main_responses += 1
        answered, self._answered = self._answered, False
        return [ModelResponse(_UNREPORTED, None, answered)]

    @staticmethod
    def _this_turn(thread: _Thread, params: dict[str, Any]) -> bool:
        return thread.turn_id is not None and params.get("turnId") == thread.turn_id

    def ends_main_response(self, method: str, params: dict[str, Any]) -> bool:
        """Whether the notification, read but not yet handed to `notification`, will count a main-thread response
        there (its token count), as `request_of` will have by a call announced after it. A response with no usage
        (`_usage_less_response`) is not foreseen: this count may fall short of `notification`'s, never exceed it."""
        if method != "thread/tokenUsage/updated" or params.get("threadId") != self.main_thread:
            return False
        return self._this_turn(self.threads[self.main_thread], params)

    def request_of(self, call_id: str) -> int:
        """The number of the main thread's model request that made the call `call_id` (counted when Codex started its
        item, before it asks about it and before that response's token count): the request after those counted."""
        return self._request_of.get(call_id, self.main_responses + 1)

    def _started(self, item: dict[str, Any], task: str | None) -> list[Item]:
        kind = item.get("type")
        call_id = item.get("id")
        if not isinstance(kind, str) or kind not in TOOL_ITEMS or not isinstance(call_id, str) or call_id in self.tools:
            return []
        name, arguments = tool_call_of(item, self._cwd_of(task))
        self.tools[call_id] = name
        self._items[call_id] = item
        server_side = kind in SERVER_SIDE_ITEMS
        return [
            ToolUse(tool_use_id=call_id, name=name, input=arguments, server_side=server_side, subagent_task_id=task)
        ]

    def _completed(self, item: dict[str, Any], task: str | None, thread: _Thread) -> list[Item]:
        kind = item.get("type")
        item_id = item.get("id")
        if not isinstance(item_id, str):
            return []
        if kind == "agentMessage":
            text = item.get("text")
            if not isinstance(text, str):
                return []
            thread.last_text = text
            seen = self._streamed.pop(item_id, "")
            if text.startswith(seen) and len(text) > len(seen):
                return [TextDelta(text=text[len(seen) :], subagent_task_id=task)]  # the deltas Codex did not send
            if not text.startswith(seen):
                # Codex 0.171 skips a model stream event it cannot parse (its JSON cut) without a word to the client;
                # a text delta skipped so is missing from the streamed answer ("wo three"), not from this item's.
                said = (
                    f"codex streamed {len(seen):,} characters of an answer it completed with {len(text):,}: it skipped "
                    "a piece of the model's stream it could not read, so the text shown lacks it; the whole answer is "
                    "in the session (`unified sessions show`)"
                )
                return [WarningEvent(code="malformed_line", message=said, subagent_task_id=task)]
            return []
        if kind == "reasoning":
            seen = self._streamed.pop(item_id, "")
            summary = "\n\n".join(s for s in as_list(item.get("summary")) if isinstance(s, str))
            if summary and not seen:
                return [Thinking(text=summary, replace=False, subagent_task_id=task)]
            return []
        if not isinstance(kind, str) or kind not in TOOL_ITEMS:
            return []
        events: list[Item] = []
        if item_id not in self.tools:
            events += self._started(item, task)
        if item_id in self.answered:
            return events
        self._items[item_id] = item
        name = self.tools[item_id]
        server_side = kind in SERVER_SIDE_ITEMS
        if not server_side and item_id not in self.decided:
            self.decided.add(item_id)
            rule = self._session_rule(item)
            events.append(
                PermissionDecision(
                    tool_use_id=item_id,
                    tool_name=name,
                    decision="allow",
                    decided_by="policy" if rule else "backend",
                    rule=rule,
                    reason=None if rule else "Codex ran it without asking (it needs no approval)",
                    subagent_task_id=task,
                )
            )
        output, is_error, data = tool_result_of(item, self._cwd_of(task))
        if item_id in self.not_run:  # refused by unified for a reason of its own, not by a user
            output, is_error = self.not_run[item_id], True
        self.answered.add(item_id)
        events.append(
            ToolResult(
                tool_use_id=item_id,
                output=output,
                is_error=is_error,
                data=data,
                server_side=server_side,
                subagent_task_id=task,
            )
        )
        if kind == "collabAgentToolCall" and item.get("tool") == "spawnAgent":
            events += self._spawned(item, task)
        return events

    def _session_rule(self, item: dict[str, Any]) -> str | None:
        if item.get("type") == "commandExecution":
            return self.session_rules.get(str(item.get("command")))
        if item.get("type") == "fileChange":
            paths = [str(as_dict(c).get("path")) for c in as_list(item.get("changes"))]
            rules = [self.session_rules.get(p) for p in paths]
            return rules[0] if rules and all(rules) else None
        return None

    def _spawned(self, item: dict[str, Any], task: str | None) -> list[Item]:
        events: list[Item] = []
        for child in as_list(item.get("receiverThreadIds")):
            if not isinstance(child, str) or child in self.threads:
                continue
            self.threads[child] = _Thread(child, parent=task)
            events.append(
                SubagentStarted(
                    task_id=child,
                    agent_name=str(item.get("model") or "subagent"),
                    description=str(item.get("prompt") or "") or None,
                    parent_tool_use_id=str(item.get("id")),
                    subagent_task_id=task,
                )
            )
        return events

    def _turn_completed(self, turn: dict[str, Any], task: str | None, thread: _Thread) -> list[Item]:
        status = str(turn.get("status") or "completed")
        error = turn.get("error") if isinstance(turn.get("error"), dict) else None
        turn_id = str(turn.get("id") or "")
        if task is None and turn_id and thread.turn_id and turn_id != thread.turn_id:
            return []  # a late end of an earlier turn
        thread.done = True
        events: list[Item] = []
        if task is not None:
            state = {"completed": "completed", "interrupted": "cancelled"}.get(status, "failed")
            events.append(
                SubagentCompleted(
                    task_id=task,
                    status=state,
                    result=thread.last_text or None,
                    usage=thread.usage,
                    subagent_task_id=thread.parent,
                )
            )
        events.append(TurnEnded(task, status, error, turn_id))
        return events

    def _cwd_of(self, task: str | None) -> str | None:
        return self.cwd
