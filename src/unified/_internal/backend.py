"""The contract between the stream guard and a backend adapter.

An adapter implements `Backend.run(ctx)`: it pushes UnifiedEvents through `ctx.emit`, ends each
model turn with `ctx.end_turn(usage)` (turn count, usage and assistant message in one call; or
reports usage alone with `ctx.add_usage`), bridges questions with `ctx.ask_user`, and returns a
`RunOutcome`. It never assigns `seq`, never emits `assistant_message` or `result`: the guard
does that, once, for every backend alike. Raising a `UnifiedError` ends the run with a typed
`error` event; any other exception is reported as a bug in the adapter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from unified.events import (
        JsonValue,
        ResultStatus,
        UnifiedEvent,
        Usage,
        UserInputRequest,
        UserInputResponse,
    )
    from unified.types import ExecuteParams


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How a run ended, as the adapter saw it. The guard turns it into the `result` event."""

    status: ResultStatus = "success"
    final_text: str | None = None
    """None: the guard uses the last top-level `assistant_message`."""
    error: str | None = None
    short_id: str | None = None


class RunContext(Protocol):
    """What the guard offers an adapter during one run."""

    @property
    def params(self) -> ExecuteParams: ...

    @property
    def session_id(self) -> str | None: ...

    turns: int
    """Model turns taken so far; the adapter counts them, the guard reports them."""

    async def emit(self, event: UnifiedEvent) -> None:
        """Send one event downstream (may wait while the consumer catches up)."""

    def add_usage(self, usage: Usage) -> None:
        """Add the main conversation's usage for the turn(s) just finished.

        If `usage.output_tokens` is 0 although the turn produced text, the guard replaces it by
        an estimate (`ceil(chars / 4)`) and flags the usage `estimated`.
        """

    async def end_turn(self, usage: Usage) -> Usage:
        """One model request of the main conversation finished: count it, add its usage (estimated
        as `add_usage` does), close its assistant message. Returns the usage as counted."""

    async def end_message(self, subagent_task_id: str | None = None) -> None:
        """Close the current assistant message (of the main agent or of one subagent)."""

    async def ask_user(self, request: UserInputRequest) -> UserInputResponse:
        """Emit `request`, wait for the caller's `on_user_input` answer (or its timeout).

        With no handler, or on timeout or a handler error, the answer is `cancelled=True` and a
        `warning` says why; the adapter then applies the approval mode.
        """

    def native(self, raw: JsonValue) -> JsonValue | None:
        """`raw` if the caller asked for native events, else None."""


class Backend(Protocol):
    """One adapter instance drives one run."""

    name: str

    async def run(self, ctx: RunContext) -> RunOutcome: ...

    def unsupported_options(self, params: ExecuteParams) -> list[tuple[str, str, bool]]:
        """(option, explanation, fatal) for each set option this backend cannot honour."""
        ...
