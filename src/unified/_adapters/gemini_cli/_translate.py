"""ACP messages from `gemini --acp` → UnifiedEvents. Pure: no I/O, no process, easy to replay.

What the 0.61 binary sends (see docs/backends/gemini-cli.md for the whole table):
- `agent_message_chunk` is a piece of the answer, except `[MODE_UPDATE] <mode>`, which announces a
  mode change and is not text;
- `agent_thought_chunk` is a whole thought summary (`**Subject**\\nbody`), never a continuation, so
  it becomes `thinking(replace=True)`;
- tool calls carry no name and no arguments: the name is the prefix of `toolCallId`
  (`read_file__read_file_<ts>_<n>`); the input is `rawInput` when ACP sends it, else empty: the
  adapter fills in the model's arguments from the chat file (`_hold_back.py`). A permission request
  comes before the CLI records the call, so its arguments are read from what the request shows, per
  tool (`request_args`: the shell's title is its command, an edit's diff its path and content, an
  MCP call's explanation the JSON of its arguments);
- a call first seen in a `tool_call` update was allowed by the CLI itself (a call needing approval is
  first seen in `session/request_permission`): its `permission_decision` says `decided_by="backend"`;
- a completed read or listing carries no output: the result's output here is ACP's (often null) and
  the adapter replaces it with the chat file's record (`_chat_records.py`) when it has one;
- a call that needs approval is first seen in `session/request_permission`, and a call denied by
  policy or refused as invalid (a path outside the workspace) is first seen as a failed `tool_call_update`:
  each synthesizes the `tool_use`, the last two with a `deny` (nothing ran);
- `invoke_agent` is a `tool_call` titled `Delegating to agent '<name>'` (kind `think`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from unified._binary.jsonrpc import as_list
from unified._internal.counts import positive_int
from unified._redaction import clip
from unified.events import (
    DecidedBy,
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
    _event_builder,
)

# The events this module builds per native message, each by a builder written for the fields it is given
# (`_event_builder`).
_text_delta = _event_builder(TextDelta.model_construct, "text", "session_id")
_thinking = _event_builder(Thinking.model_construct, "text", "replace", "subject", "session_id")
_tool_use = _event_builder(ToolUse.model_construct, "tool_use_id", "name", "input", "session_id")
_tool_result = _event_builder(ToolResult.model_construct, "tool_use_id", "output", "is_error", "session_id")
_permission_decision = _event_builder(
    PermissionDecision.model_construct, "tool_use_id", "tool_name", "decision", "decided_by", "reason", "session_id"
)
_tool_progress = _event_builder(ToolProgress.model_construct, "tool_use_id", "status", "message", "session_id")


__all__ = [
    "BACKEND_ALLOWED",
    "AcpTranslator",
    "Item",
    "TurnBoundary",
    "denial_text",
    "refused_unrun",
    "request_args",
    "tool_name_from_call_id",
    "usage_from_prompt_result",
]

MODE_UPDATE_PREFIX = "[MODE_UPDATE]"
_AGENT_TITLE = re.compile(r"^Delegating to agent '(?P<name>[^']+)'")
_SUBJECT = re.compile(r"^\s*\*\*(?P<subject>[^*\n]+)\*\*\s*\n?(?P<body>.*)$", re.DOTALL)
_POLICY_DENIAL = re.compile(r"denied by policy", re.IGNORECASE)
_SHELL_CONTEXT = re.compile(
    r"^(?:\[in (?P<dir>.+?)\]|\[current working directory [^\]]*\])"
    r"(?: \((?P<description>.*)\))?(?P<background> \[background\])?$",
    re.DOTALL,
)
"""What the CLI's shell prompt explains besides the command: `[in <dir_path>] (<description>) [background]`; a
call without a `dir_path` says `[current working directory <its process's cwd>]`, which is not the session's."""
_EDIT_TITLE = re.compile(r"^(?P<path>.+?): (?P<old>.*) => (?P<new>.*)$", re.DOTALL)
_TRUNCATED = "..."


def denial_text(tool_name: str) -> str:
    """What the CLI 0.61 tells the model about a call the client rejected (its `Cancel` outcome)."""
    return f'Tool "{tool_name}" was canceled by the user.'


@dataclass(frozen=True, slots=True)
class TurnBoundary:
    """A new model turn starts: the adapter closes the current assistant message and counts a turn."""


Item = UnifiedEvent | TurnBoundary


BACKEND_ALLOWED = "the Gemini CLI ran it without asking (its own policy allows it)"
REFUSAL_CHARS = 300
"""How much of the CLI's error a refusal's reason quotes (`refused_unrun`)."""


def refused_unrun(error: str) -> str:
    """The reason of the `deny` of a call the CLI refused before it ran or asked anyone: arguments that do not
    validate (a path outside the workspace, a required one missing). It was said `allow` (the CLI's own, or unified's
    rule auto-edit or yolo, `PermissionGate.relabel`) though nothing ran."""
    return f"the Gemini CLI refused it before running it: {clip(error.strip(), REFUSAL_CHARS, more='…')}"


@dataclass(slots=True)
class _Tool:
    name: str
    subagent: str | None = None
    done: bool = False
    decided: bool = False
    args: dict[str, Any] = field(default_factory=dict)


_UNREAD: Any = object()
"""A call's output not read yet (`AcpTranslator._finish`)."""


@dataclass(slots=True)
class AcpTranslator:
    """Turns the `session/update`s of one prompt (or several: it keeps state per session) into events."""

    session_id: str | None = None
    tools: dict[str, _Tool] = field(default_factory=dict)
    ask_user_tool: str | None = None
    """The CLI's name of unified's own ask_user (`mcp_<our server>_ask_user`, `_ask_server.py`): shown as
    `ask_user`, as the API backends show theirs, and each call is noted to `ask_user_noted`."""
    ask_user_noted: Callable[[str, dict[str, Any]], None] | None = None
    ask_user_calls: set[str] = field(default_factory=set)
    """The calls of unified's own ask_user (not a CLI's native one, which `_permissions` puts to the caller)."""
    _tools_since_text: bool = False
    _content_seen: bool = False

    # --- session/update -----------------------------------------------------------------------

    def update(self, update: Mapping[str, Any]) -> list[Item]:
        try:
            kind = update.get("sessionUpdate")
        except AttributeError:  # no object: what `session/update` sent is unreadable (as a line would be)
            return [_unreadable_update(update, self.session_id)]
        if kind == "agent_message_chunk":
            text = _text_of(update.get("content"))
            if text is None or text.startswith(MODE_UPDATE_PREFIX):
                return []
            # model_construct: the hot path, and `_text_of` guarantees the one field that could be wrong
            delta = _text_delta(text=text, session_id=self.session_id)
            return [delta] if self._content_seen and not self._tools_since_text else [*self._content_starts(), delta]
        if kind == "agent_thought_chunk":
            text = _text_of(update.get("content"))
            if not text:
                return []
            match = _SUBJECT.match(text)
            subject = match["subject"].strip() if match else None
            return [
                *self._content_starts(),
                _thinking(text=text, replace=True, subject=subject, session_id=self.session_id),
            ]
        if kind == "tool_call":
            return self._tool_call(update)
        if kind == "tool_call_update":
            return self._tool_call_update(update)
        # available_commands_update, current_mode_update, user_message_chunk (history replay), plan:
        # nothing a consumer of the run needs.
        return []

    def _content_starts(self) -> list[Item]:
        """Text or thoughts after tool results begin a new model turn."""
        items: list[Item] = []
        if self._tools_since_text or not self._content_seen:
            items.append(TurnBoundary())
        self._tools_since_text = False
        self._content_seen = True
        return items

    def _announce(self, call: Mapping[str, Any], cwd: str | None = None, *, allowed: bool = False) -> list[Item]:
        """A new call's `tool_use` (after a turn boundary if it begins content), and its subagent's start;
        `allowed`: the CLI runs it unasked, so its `permission_decision` (the CLI's own allow) follows the
        `tool_use` at once. Nothing for a call announced before."""
        call_id = str(call.get("toolCallId", ""))
        if call_id in self.tools:
            return []
        title = str(call.get("title") or "")
        name = tool_name_from_call_id(call_id, call.get("kind"))
        agent = _AGENT_TITLE.match(title)
        subagent = agent["name"] if agent else None
        if subagent is not None:
            name = "invoke_agent"
        elif self.ask_user_tool is not None and name == self.ask_user_tool:
            name = "ask_user"
            self.ask_user_calls.add(call_id)
        if call_id in self.ask_user_calls:  # its arguments' JSON is the call's content, in every mode
            tool_input = request_args(name, call, cwd or ".")
            if self.ask_user_noted is not None:
                self.ask_user_noted(call_id, dict(tool_input))
        else:
            tool_input = request_args(name, call, cwd) if cwd is not None else _input_of(call)
        self.tools[call_id] = _Tool(name=name, subagent=subagent, args=dict(tool_input))
        items: list[Item] = []
        if not self._content_seen:
            items.append(TurnBoundary())
            self._content_seen = True
        self._tools_since_text = True
        if subagent is not None:
            tool_input.setdefault("agent_name", subagent)
        items.append(_tool_use(tool_use_id=call_id, name=name, input=tool_input, session_id=self.session_id))
        if allowed:
            items.append(self.decided(call_id, "allow", "backend", BACKEND_ALLOWED))
        if subagent is not None:
            items.append(
                SubagentStarted.model_construct(
                    task_id=call_id,
                    agent_name=subagent,
                    description=title,
                    parent_tool_use_id=call_id,
                    session_id=self.session_id,
                )
            )
        return items

    def _tool_call(self, call: Mapping[str, Any]) -> list[Item]:
        items = self._announce(call, allowed=True)
        if call.get("status") in ("completed", "failed"):
            items += self._finish(call)
        return items

    def _tool_call_update(self, call: Mapping[str, Any]) -> list[Item]:
        call_id = str(call.get("toolCallId", ""))
        status = call.get("status")
        known = call_id in self.tools
        items = self._announce(call)
        if status in ("completed", "failed"):
            output = _output_of(call)
            if not known and status == "failed" and isinstance(output, str) and _POLICY_DENIAL.search(output):
                items.append(self.decided(call_id, "deny", "policy", output))
            elif not known and status == "failed":
                # First seen failed: 0.61 announces a call it runs (`tool_call`) or asks about before it runs, so this
                # one threw before either (its `build` or `shouldConfirmExecute`): refused, not run.
                refusal = refused_unrun(output if isinstance(output, str) else "its arguments were refused")
                items.append(self.decided(call_id, "deny", "backend", refusal))
            elif not known:
                items.append(self.decided(call_id, "allow", "backend", BACKEND_ALLOWED))
            return items + self._finish(call, output)
        if known and status:
            text = _output_of(call)
            items.append(
                _tool_progress(
                    tool_use_id=call_id,
                    status=str(status),
                    message=text if isinstance(text, str) else None,
                    session_id=self.session_id,
                )
            )
        return items

    def _finish(self, call: Mapping[str, Any], output: Any = _UNREAD) -> list[Item]:
        """The end of a call: its `tool_result` (and its subagent's end). `output` is `_output_of(call)`
        when the caller read it already."""
        call_id = str(call.get("toolCallId", ""))
        tool = self.tools[call_id]
        if tool.done:
            return []
        tool.done = True
        is_error = call.get("status") == "failed"
        if output is _UNREAD:
            output = _output_of(call)
        items: list[Item] = []
        if tool.subagent is not None:
            items.append(
                SubagentCompleted.model_construct(
                    task_id=call_id,
                    agent_name=tool.subagent,
                    status="failed" if is_error else "completed",
                    result=output if isinstance(output, str) else None,
                    session_id=self.session_id,
                )
            )
        items.append(_tool_result(tool_use_id=call_id, output=output, is_error=is_error, session_id=self.session_id))
        return items

    # --- permissions --------------------------------------------------------------------------

    def decided(
        self, call_id: str, decision: Literal["allow", "deny"], by: DecidedBy, reason: str | None
    ) -> PermissionDecision:
        """The one `permission_decision` of a call (the bridge's, the CLI policy's or the CLI's own allow)."""
        tool = self.tools.get(call_id)
        if tool is not None:
            tool.decided = True
        return _permission_decision(
            tool_use_id=call_id,
            tool_name=self.tool_name(call_id),
            decision=decision,
            decided_by=by,
            reason=reason,
            session_id=self.session_id,
        )

    def was_decided(self, call_id: str) -> bool:
        """Whether the call's `permission_decision` was emitted."""
        tool = self.tools.get(call_id)
        return tool is not None and tool.decided

    def mark_decided(self, call_id: str) -> None:
        """A decision made outside (the permission bridge's) was emitted for this call."""
        tool = self.tools.get(call_id)
        if tool is not None:
            tool.decided = True

    def permission_request(self, params: Mapping[str, Any], cwd: str = ".") -> list[Item]:
        """The `tool_use` of a call first seen when it asks for permission, with the arguments the request
        shows (`request_args`; `cwd` is the session's, against which the CLI resolves relative paths)."""
        call = params.get("toolCall")
        return self._announce(call, cwd) if isinstance(call, Mapping) else []

    def args_of(self, call_id: str) -> dict[str, Any]:
        """The arguments a call was announced with."""
        tool = self.tools.get(call_id)
        return dict(tool.args) if tool else {}

    def denied(self, call_id: str) -> list[Item]:
        """The result of a call the client refused (the CLI reports nothing more about it): what the CLI
        sends the model for it."""
        if call_id not in self.tools:
            return []
        return self._finish(
            {"toolCallId": call_id, "status": "failed", "rawOutput": denial_text(self.tool_name(call_id))}
        )

    def tool_name(self, call_id: str) -> str:
        tool = self.tools.get(call_id)
        return tool.name if tool else tool_name_from_call_id(call_id, None)

    def subagent_name(self, call_id: str) -> str | None:
        tool = self.tools.get(call_id)
        return tool.subagent if tool else None


# --- the prompt's result ------------------------------------------------------------------------


def usage_from_prompt_result(result: Mapping[str, Any]) -> Usage | None:
    """`_meta.quota.token_count` of a `session/prompt` result (main chat only, no subagents)."""
    meta = result.get("_meta")
    quota = meta.get("quota") if isinstance(meta, Mapping) else None
    counts = quota.get("token_count") if isinstance(quota, Mapping) else None
    if not isinstance(counts, Mapping):
        return None
    return Usage(
        input_tokens=positive_int(counts.get("input_tokens")),
        output_tokens=positive_int(counts.get("output_tokens")),
        thinking_tokens=positive_int(counts.get("thoughts_tokens", counts.get("thinking_tokens"))),
        cached_tokens=positive_int(counts.get("cached_tokens", counts.get("cached_content_tokens"))),
    )


# --- helpers ------------------------------------------------------------------------------------


def tool_name_from_call_id(call_id: str, kind: object) -> str:
    """`read_file__read_file_1795990988374_0` → `read_file`; MCP and odd ids fall back to the id."""
    head, sep, _ = call_id.partition("__")
    if sep and head:
        return head
    return str(kind) if kind else call_id


def _text_of(content: object) -> str | None:
    # A JSON message's objects are dicts: `isinstance(x, Mapping)` alone is an ABC check, 10x the cost.
    if (type(content) is dict or isinstance(content, Mapping)) and content.get("type") == "text":
        text = content.get("text")
        return text if isinstance(text, str) else None
    return None


def _input_of(call: Mapping[str, Any]) -> dict[str, Any]:
    """The model's arguments if ACP sends them (`rawInput`); else empty, for the chat file to fill in."""
    raw = call.get("rawInput")
    return dict(raw) if type(raw) is dict or isinstance(raw, Mapping) else {}


def _texts(call: Mapping[str, Any]) -> list[str]:
    return [
        text
        for item in as_list(call.get("content"))
        if (type(item) is dict or isinstance(item, Mapping)) and item.get("type") == "content"
        for text in [_text_of(item.get("content"))]
        if text is not None
    ]


def _unreadable_update(update: object, session_id: str | None) -> WarningEvent:
    return WarningEvent.model_construct(
        code="malformed_line",
        message=f"the Gemini CLI sent a session/update whose `update` is {type(update).__name__}, not an object; "
        "it was ignored",
        session_id=session_id,
    )


def _model_path(shown: str | None, absolute: str, cwd: str) -> str:
    """The path as the model gave it: the title's (relative) when it is not cut and, relative to the
    session's cwd, is the diff's file; or when the diff's file lies outside the cwd and ends with the
    title's path (a recording's cwd replayed elsewhere; plan mode writing into the CLI's plans
    directory); else the diff's absolute path. Never a title that merely ends like a file inside the cwd
    (`settings.json` for `.claude/settings.json`): unified's policy judges this path."""
    if shown and _TRUNCATED not in shown:
        try:
            target, root = Path(absolute).resolve(), Path(cwd).resolve()
            if (root / shown).resolve() == target:
                return shown
        except (OSError, ValueError):
            return absolute
        inside = target == root or root in target.parents
        if not inside and Path(absolute).parts[-len(Path(shown).parts) :] == Path(shown).parts:
            return shown
    return absolute


def _replacement(title_old: str | None, title_new: str | None, old: str, new: str) -> tuple[str, str]:
    """An `old_string`/`new_string` pair that turns `old` into `new`: the title's snippets when they do (and
    are not cut), else the changed lines; the whole texts when those are ambiguous."""
    candidates: list[tuple[str, str]] = []
    whole = title_old is not None and title_new is not None
    if whole and not str(title_old).endswith(_TRUNCATED) and not str(title_new).endswith(_TRUNCATED):
        candidates.append((str(title_old), str(title_new)))
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[len(old) - 1 - end] == new[len(new) - 1 - end]:
        end += 1
    line_start = old.rfind("\n", 0, start) + 1
    line_end_old = old.find("\n", len(old) - end)
    line_end_new = new.find("\n", len(new) - end)
    tail_old = len(old) if line_end_old < 0 else line_end_old
    tail_new = len(new) if line_end_new < 0 else line_end_new
    candidates.append((old[line_start:tail_old], new[line_start:tail_new]))
    for before, after in candidates:
        if before and old.count(before) == 1 and old.replace(before, after, 1) == new:
            return before, after
    return old, new


def request_args(name: str, call: Mapping[str, Any], cwd: str) -> dict[str, Any]:
    """The model's arguments as a permission request of the CLI 0.61 shows them, per tool.

    ACP's request carries no arguments (`rawInput` is used when sent): the shell's title is its
    `command` and its explanation `[in <dir_path>] (<description>) [background]`; `write_file`'s diff
    has the path and the new `content`; `replace`'s diff the whole file before and after, so
    `old_string`/`new_string` are its title's snippets when they are whole and reproduce the diff, else
    the changed lines; an MCP tool's explanation is the JSON of its arguments (up to 500 characters). A
    relative path is kept as the title shows it when it names the diff's file; else the absolute one.
    Anything else: empty (the CLI's chat file gives the arguments once the call ran).
    """
    raw = _input_of(call)
    if raw:
        return raw
    title = str(call.get("title") or "")
    texts = _texts(call)
    if name == "run_shell_command" and title:
        args: dict[str, Any] = {"command": title}
        for text in texts:
            context = _SHELL_CONTEXT.match(text.strip())
            if context is None:
                continue
            if context["dir"]:
                args["dir_path"] = context["dir"]
            if context["description"]:
                args["description"] = context["description"]
            if context["background"]:
                args["is_background"] = True
        return args
    diffs = [d for d in _diffs_of(call) if isinstance(d.get("path"), str)]
    if diffs and name in ("write_file", "replace"):
        diff = diffs[0]
        old, new = str(diff.get("old_text") or ""), str(diff.get("new_text") or "")
        if name == "write_file":
            shown = title.removeprefix("Writing to ") if title.startswith("Writing to ") else None
            return {"file_path": _model_path(shown, diff["path"], cwd), "content": new}
        edit = _EDIT_TITLE.match(title)
        if title.startswith("Create ") and not old:
            return {
                "file_path": _model_path(title.removeprefix("Create "), diff["path"], cwd),
                "old_string": "",
                "new_string": new,
            }
        before, after = _replacement(edit["old"] if edit else None, edit["new"] if edit else None, old, new)
        path = _model_path(edit["path"] if edit else None, diff["path"], cwd)
        return {"file_path": path, "old_string": before, "new_string": after}
    for text in texts:
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except (ValueError, RecursionError):
                continue
            if isinstance(parsed, dict):
                return parsed
    return {}


def _diffs_of(call: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {"path": item.get("path"), "old_text": item.get("oldText"), "new_text": item.get("newText")}
        for item in as_list(call.get("content"))
        if (type(item) is dict or isinstance(item, Mapping)) and item.get("type") == "diff"
    ]


def _output_of(call: Mapping[str, Any]) -> Any:
    """Text blocks joined; else the diffs written; else None (ACP omits most read outputs)."""
    raw = call.get("rawOutput")
    if raw is not None:
        return raw
    texts = [
        text
        for item in as_list(call.get("content"))
        if (type(item) is dict or isinstance(item, Mapping)) and item.get("type") == "content"
        for text in [_text_of(item.get("content"))]
        if text is not None
    ]
    if texts:
        return "\n".join(texts)
    diffs = _diffs_of(call)
    return {"diffs": diffs} if diffs else None
