"""How `unified run` shows an event stream to a person: one event in, a piece of rich Text out.

Kept free of I/O so it can be tested with events built by hand. A `Renderer` remembers only what
a terminal needs to place the next piece: whether a streamed line (answer text or thought) is
still open, and whose it is, so interleaved main-agent and subagent output never runs together.
Every string passes through `redact()` first: model output and error messages may quote a key; then
`visible()`: a control character the model wrote (an escape sequence, a bidi override) is shown, never
obeyed by the terminal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.text import Text

from unified._redaction import Redactor, redactor
from unified._text import ACTING, INVISIBLE, escaped
from unified.events import (
    ErrorEvent,
    Failover,
    ImageOutput,
    PermissionDecision,
    Result,
    SessionStarted,
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
    UserInputRequest,
    WarningEvent,
)

__all__ = ["INDENT", "PREVIEW_CHARS", "STDERR_LINES", "STYLES", "Renderer", "format_usage", "preview", "visible"]

_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f{ACTING}]")
"""Characters a terminal acts on instead of showing (escape sequences, bidi overrides and marks), line breaks and
tabs aside."""

_UNSEEN = re.compile(f"[\x00-\x08\x0b-\x1f{ACTING}{INVISIBLE}]")
"""`_CONTROLS`, and the characters that show as nothing or as a plain space (`INVISIBLE`)."""


def visible(text: str, *, unseen: bool = False) -> str:
    """`text` with every character a terminal would act on `escaped` (`\\x1b`, `\\u202e`; rich passes ESC
    through): model output, a command to approve above all, cannot erase or hide what a person reads. `unseen`: what
    shows as nothing is escaped too (`.git\\u200d/hooks`), for what a person approves or a tool's input names; not
    for answer text, where a joiner and a variation selector make an emoji."""
    return escaped(text, _UNSEEN if unseen else _CONTROLS)


INDENT = "  │ "
"""Prefix of every line a subagent produced."""

PREVIEW_CHARS = 400
"""Tool inputs and outputs are cut to this length: the JSON stream has them whole."""

STDERR_LINES = 20
"""How much of a failed agent CLI's stderr (any binary backend's) an error shows (the JSON stream has all the
adapter kept)."""

STYLES = {
    "session": "bold cyan",
    "thinking": "dim italic",
    "tool": "bold yellow",
    "server_tool": "bold blue",
    "result_ok": "green",
    "result_error": "red",
    "progress": "dim",
    "allow": "green",
    "deny": "bold red",
    "subagent": "magenta",
    "question": "bold yellow",
    "warning": "yellow",
    "error": "bold red",
    "usage": "dim",
    "image": "bold green",
}


def format_usage(usage: Usage) -> str:
    """The final usage line, saying "estimated" when any figure was guessed."""
    parts = [f"input {usage.input_tokens}"]
    if usage.cached_tokens:
        parts[0] += f" (cached {usage.cached_tokens})"
    parts.append(f"output {usage.output_tokens}")
    if usage.thinking_tokens:
        parts.append(f"thinking {usage.thinking_tokens}")
    if usage.tool_use_tokens:
        parts.append(f"tool use {usage.tool_use_tokens}")
    parts.append(f"total {usage.total_tokens}")
    line = "usage: " + " · ".join(parts)
    return line + " (estimated)" if usage.estimated else line


def preview(value: object) -> str:
    """`value` as one short text (JSON for structures), cut at `PREVIEW_CHARS`."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = visible(text.strip(), unseen=True)  # a tool's input names paths: `.git<U+200D>/hooks` must not pass
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"… ({len(text)} chars)"


@dataclass
class Renderer:
    """Turns events into Text for a terminal; feed it every event of one run in order."""

    env: Mapping[str, str] | None = None
    """Whose secrets to hide (default: the process environment)."""
    _clean: Redactor = field(init=False)
    _open: tuple[str, str | None] | None = field(default=None, init=False)
    """The streamed line still open: ("text" | "thinking", subagent task id)."""
    _errors_shown: set[str] = field(default_factory=set, init=False)
    """Error messages already printed, so the result does not repeat them."""

    def __post_init__(self) -> None:
        self._clean = redactor(self.env)

    def render(self, event: UnifiedEvent) -> Text | None:
        """What to print for `event` (with its own line ends), or None when it adds nothing to show."""
        if isinstance(event, (TextDelta, Thinking)) and not (isinstance(event, Thinking) and event.replace):
            return self._stream(event)
        body = self._block(event)
        if body is None:
            return None
        out = Text()
        if self._open is not None:
            out.append("\n")
            self._open = None
        prefix = INDENT if event.subagent_task_id is not None else ""
        for line in body.split("\n"):
            out.append(prefix)
            out.append_text(line)
            out.append("\n")
        return out

    def _stream(self, event: TextDelta | Thinking) -> Text:
        kind = "thinking" if isinstance(event, Thinking) else "text"
        key = (kind, event.subagent_task_id)
        style = STYLES["thinking"] if kind == "thinking" else ""
        prefix = INDENT if event.subagent_task_id is not None else ""
        out = Text()
        if self._open != key:
            if self._open is not None:
                out.append("\n")
            out.append(prefix)
            if kind == "thinking":
                out.append("✻ ", style=style)
            self._open = key
        out.append(visible(self._clean(event.text)).replace("\n", "\n" + prefix), style=style)
        return out

    def _styled(self, text: str, style: str) -> Text:
        return Text(visible(self._clean(text)), style=STYLES[style])

    def _block(self, event: UnifiedEvent) -> Text | None:
        if isinstance(event, SessionStarted):
            facts = [event.backend, event.model, event.transport, "resumed" if event.resumed else None]
            shown = " · ".join(f for f in facts if f)
            return self._styled(f"● session {event.short_id or event.session_id or '?'} ({shown})", "session")
        if isinstance(event, Thinking):
            opening = event.text.split("\n", 1)[0]  # a summary usually opens with its own subject
            subject = f"{event.subject}: " if event.subject and event.subject not in opening else ""
            return self._styled(f"✻ {subject}{event.text}", "thinking")
        if isinstance(event, ToolUse):
            where = " [server]" if event.server_side else ""
            return self._styled(
                f"→ {event.name}{where} {preview(event.input)}", "server_tool" if event.server_side else "tool"
            )
        if isinstance(event, ImageOutput):
            size = f", {event.size_bytes:,} bytes" if event.size_bytes is not None else ""
            where = f" at {event.uri}" if event.uri and not event.data else ""
            return self._styled(f"▣ image ({event.mime_type}{size}){where}", "image")
        if isinstance(event, ToolProgress):
            return self._styled(f"… {event.status or ''} {event.message or ''}".rstrip(), "progress")
        if isinstance(event, ToolResult):
            mark = "✗ error" if event.is_error else "←"
            output = "" if event.output is None else " " + preview(event.output)
            return self._styled(f"{mark}{output}", "result_error" if event.is_error else "result_ok")
        if isinstance(event, PermissionDecision):
            allowed = event.decision == "allow"
            why = f" ({event.decided_by}{': ' + event.rule if event.rule else ''})"
            reason = f" {event.reason}" if event.reason else ""
            changed = f"\n  with input {preview(event.input)}" if event.input is not None else ""
            told = f"\n  message: {event.message}" if event.message else ""
            text = f"{'✓ allowed' if allowed else '✗ denied'} {event.tool_name}{why}{reason}{changed}{told}"
            return self._styled(text, "allow" if allowed else "deny")
        if isinstance(event, SubagentStarted):
            about = f": {event.description}" if event.description else ""
            return self._styled(f"▶ subagent {event.agent_name} [{event.task_id}]{about}", "subagent")
        if isinstance(event, SubagentProgress):
            return self._styled(f"  … {event.status or ''} {event.message or ''}".rstrip(), "progress")
        if isinstance(event, SubagentCompleted):
            usage = f" · {format_usage(event.usage)}" if event.usage else ""
            return self._styled(f"■ subagent {event.agent_name or event.task_id} {event.status}{usage}", "subagent")
        if isinstance(event, UserInputRequest):
            lines = [f"? {event.source} request{' for ' + event.tool_name if event.tool_name else ''}"]
            for q in event.questions:
                options = f" [{' / '.join(o.label for o in q.options)}]" if q.options else ""
                lines.append(f"  {q.prompt}{options}")
            return self._styled("\n".join(lines), "question")
        if isinstance(event, WarningEvent):
            return self._styled(f"warning [{event.code}]: {event.message}", "warning")
        if isinstance(event, Failover):  # else a cut answer ran on into the next backend's, nothing said (round 25)
            left = f"; its session {event.left_session} stays there" if event.left_session else ""
            return self._styled(
                f"↷ failover [{event.code}]: {event.from_backend} gave out ({event.message}){left}; the run goes on "
                f"on {event.to_backend}, which answers what was cut off again",
                "warning",
            )
        if isinstance(event, ErrorEvent):
            self._errors_shown.add(event.message)
            flags = ", ".join(f for f, on in (("fatal", event.fatal), ("retryable", event.retryable)) if on)
            text = f"error [{event.code}{', ' + flags if flags else ''}]: {event.message}"
            tail = event.details.get("stderr_tail")
            if isinstance(tail, str) and tail.strip() and tail.strip() not in event.message:
                text += "\nthe agent CLI's stderr (last lines):\n" + "\n".join(
                    "  " + line for line in tail.strip().splitlines()[-STDERR_LINES:]
                )
            return self._styled(text, "error")
        if isinstance(event, Result):
            return self._result(event)
        return None  # assistant_message: its text was shown as it streamed

    def _result(self, event: Result) -> Text:
        ok = event.status == "success"
        facts = [event.status, f"{event.turns} turn{'s' * (event.turns != 1)}", f"{event.duration_ms / 1000:.1f} s"]
        if event.short_id:
            facts.append(f"session {event.short_id}")
        out = self._styled(("✔ " if ok else "✘ ") + " · ".join(facts), "result_ok" if ok else "result_error")
        if event.error and event.error not in self._errors_shown:
            out.append("\n")
            out.append_text(self._styled(event.error, "error"))
        out.append("\n")
        out.append_text(self._styled(format_usage(event.usage), "usage"))
        return out
