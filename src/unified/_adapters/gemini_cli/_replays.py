"""The gemini CLI's silent mid-stream retries over ACP, shown as the other backends show a resumed stream.

When a model stream fails after it began (an error chunk, a stream without its finish reason, an empty
body), gemini 0.61 asks the model again (`MID_STREAM_RETRY_OPTIONS`: up to 4 attempts, 1 s, 2 s, 4 s
apart). Its ACP agent ignores the chat stream's `retry` event, so every attempt's chunks arrive as
`agent_message_chunk`: the failed attempt's partial text, then the next attempt's from its start. Nothing
marks the retry: no other `session/update`, nothing in the debug log; only the back-off gap. The chat
file records only the answer the CLI kept (its `gemini` record's `content`), once the attempt that
succeeded has ended.

`Replays` watches the main agent's text of one model call. A chunk that starts the message over (it
begins as the message began) is held: while the held text repeats what was shown nothing is shown, and
once it runs past that only the new part is (a repeated prefix is not shown twice). Held text that
differs from what was shown is ambiguous (a model may begin a sentence as it began its answer) and waits
for the message's end, where the chat file's kept answer decides: held text that continues the message
is shown; an answer that differs from what was shown (also one shown without a restart being seen: the
retry began with other words) closes the shown message (`MessageEnd`), warns `stream_resumed`, and is
shown whole, so the message's `assistant_message` and the run's final text are the kept answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from unified._adapters.gemini_cli._chat_records import ChatRecords
from unified._adapters.gemini_cli._translate import TurnBoundary
from unified.events import TextDelta, ToolUse, WarningEvent

__all__ = ["RESTART_MIN", "Folding", "MessageEnd", "Replays", "Shown"]

RESTART_MIN = 6
"""A chunk restarts the message when it begins with at least this much of it (all of it when shorter)."""


@dataclass(frozen=True, slots=True)
class MessageEnd:
    """The main agent's current assistant message closes here (its model call goes on)."""


Shown = TextDelta | WarningEvent | MessageEnd


def _restarts(shown: str, chunk: str) -> bool:
    n = min(len(shown), len(chunk))
    return n > 0 and n >= min(len(shown), RESTART_MIN) and chunk[:n] == shown[:n]


@dataclass(slots=True)
class Replays:
    """One main-agent message's text, with the CLI's retried attempts folded (see the module docstring)."""

    shown: str = ""
    """The message's text the caller has seen."""
    held: str = ""
    """Text not shown yet: from a chunk that started the message over."""
    diverged: bool = False
    """The held text stopped repeating what was shown: it waits for the message's end."""
    replayed: bool = False
    """A restart was folded into what was shown."""
    _last: TextDelta | None = None
    """The message's last chunk: what its replacement text copies (its session)."""

    @property
    def started(self) -> bool:
        return self._last is not None

    def text(self, delta: TextDelta) -> list[Shown]:
        """What to show of one chunk of the message (nothing while it is held)."""
        chunk = delta.text
        self._last = delta
        if not self.held:
            if not (self.shown and _restarts(self.shown, chunk)):
                self.shown += chunk
                return [delta]
            self.held = chunk
            return self._settle(delta)
        self.held += chunk
        return [] if self.diverged else self._settle(delta)  # once it differs, the message's end decides

    def _settle(self, delta: TextDelta) -> list[Shown]:
        held, shown = self.held, self.shown
        if shown.startswith(held):
            return []  # the retry repeats what was shown
        if held.startswith(shown):
            self.shown, self.held, self.replayed = held, "", True
            return [delta.model_copy(update={"text": held[len(shown) :]})]
        last = held[len(held) - len(delta.text) :]
        if len(last) < len(held) and _restarts(shown, last) and shown.startswith(held[: len(held) - len(last)]):
            self.held = last  # the held attempt was cut again, inside what was shown: the next one starts
            return self._settle(delta)
        self.diverged = True
        return []

    def end(self, kept: str | None) -> list[Shown]:
        """The message ends; `kept`: the answer the CLI recorded for its model call ("" when it recorded none,
        None when that is not known)."""
        held, shown, replayed, last = self.held, self.shown, self.replayed, self._last
        self.shown, self.held, self.diverged, self.replayed, self._last = "", "", False, False, None
        if last is None:
            return []
        if kept is None or kept == shown + held:
            return [last.model_copy(update={"text": held})] if held else []
        if not kept:
            return [
                self._warning(
                    last,
                    f"the model's answer was cut off after {len(shown)} characters shown and the Gemini CLI's "
                    "retries got no answer: it kept none (the text shown is not part of the conversation)",
                )
            ]
        if kept == shown or not (held or replayed or shown.endswith(kept)):
            return []  # the held text was a cut repeat; or nothing points at a retry: the stream stands
        return [
            MessageEnd(),
            self._warning(
                last,
                f"the model's answer was cut off and the Gemini CLI asked the model again: the {len(shown)} characters "
                "shown ran the attempts together; the answer it kept follows in full and replaces them",
            ),
            last.model_copy(update={"text": kept}),
        ]

    @staticmethod
    def _warning(last: TextDelta, message: str) -> WarningEvent:
        return WarningEvent(code="stream_resumed", message=message, session_id=last.session_id)


class Folding:
    """`Replays` with the chat file's kept answers, as both transports run the main agent's text through it: each
    main-agent `text_delta` goes through `text`; before an item that `ends_message` (a new model turn, a main-agent
    call: the model call's stream is over) and at the prompt's end, `end` gives what closes the message."""

    def __init__(self, chat: ChatRecords | None = None) -> None:
        self.chat = chat
        """The session's chat file during the prompt (None: not known yet, or not followed)."""
        self.replays = Replays()
        self._taken = 0
        """How many of the chat file's recorded model calls (`ChatRecords.answers`, in the order first recorded)
        belong to messages that have ended; the rest are the current message's call and, when unified reads
        behind the CLI, later ones (not read when the current message began: its record may be written before its
        first chunk is read)."""

    def text(self, delta: TextDelta) -> list[Shown]:
        return self.replays.text(delta)

    def ends_message(self, item: Any) -> bool:
        return self.replays.started and (
            isinstance(item, TurnBoundary) or (isinstance(item, ToolUse) and item.subagent_task_id is None)
        )

    def end(self, *, final: bool) -> tuple[list[Shown], bool]:
        """What closes the current message: its held text, or the CLI's kept answer in place of what was shown;
        `final`: the prompt ended well, so a model call the chat file has no record of kept no answer. Also whether
        it kept none after text was shown."""
        if not self.replays.started:
            return [], False
        kept: str | None = None
        chat = self.chat
        if chat is not None:
            chat.poll(rescan=final)
            recorded = list(chat.answers.values())[self._taken :]
            taken = len(recorded)
            if not final and recorded:
                # The CLI records a model call before it tells of anything after it (a call, the prompt's end), so
                # the first call on file with text is this message's; those before it ran tools only (kept ""). A
                # loaded machine reads the file late, with the calls after it already there: they are left for the
                # messages they end (taken as a whole, the final answer read early had the prompt end as if the CLI
                # kept none; a flaky CI failure). With none kept with text, the last one stands (a retry that
                # brought calls only: the text shown is not in the conversation).
                taken = next((at + 1 for at, text in enumerate(recorded) if text), taken)
            kept = recorded[taken - 1] if recorded else "" if final and chat.prompted else None
            self._taken += taken
        return self.replays.end(kept), kept == ""
