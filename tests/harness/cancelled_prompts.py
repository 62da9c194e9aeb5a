"""A caller that cancels the run from inside its permission answer: it then never answers (`never`), or answers
allow right after the cancel (`after`), an answer that came once the run was cancelled."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from unified._execute import EventStream
from unified.events import PermissionDecision, Result, ToolUse, UnifiedEvent, UserInputRequest, UserInputResponse

WHEN = ("never", "after")


class _Streams(list[EventStream]):
    """Where the test puts the run's stream; the answer waits until it is there (a run may ask before)."""

    def __init__(self) -> None:
        super().__init__()
        self.handed = anyio.Event()

    def append(self, stream: EventStream) -> None:
        super().append(stream)
        self.handed.set()


def cancelling(when: str) -> tuple[Callable[[UserInputRequest], Awaitable[UserInputResponse]], list[EventStream]]:
    """The `on_user_input` answer, and the list to put the run's stream in (the answer cancels it). Must be called
    inside the test's event loop."""
    streams = _Streams()

    async def answer(request: UserInputRequest) -> UserInputResponse:
        await streams.handed.wait()
        streams[0].cancel()
        if when == "never":
            await anyio.sleep_forever()
        return UserInputResponse.allow()

    return answer, streams


def check_denied(events: list[UnifiedEvent], ran: bool) -> None:
    """The cancelled run's call: one `deny` by the user, before the `cancelled` result, and it never ran."""
    [use] = [e for e in events if isinstance(e, ToolUse)]
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.tool_use_id == use.tool_use_id
    assert (decision.decision, decision.decided_by) == ("deny", "user"), decision
    assert "did not run" in (decision.reason or "")
    last = events[-1]
    assert isinstance(last, Result)
    assert last.status == "cancelled"
    assert not ran
