"""Bad input round 15, Codex's app-server on a stand-in (`FakeAgentProcess`): `turn/completed` repeats the turn's
items, so an answer over the framing's cap (8 MB: the real binary behind FakeOpenAI makes one) makes that line
over the cap too. It was dropped with a `malformed_line` warning and the run waited for the turn's end until its
idle timeout, forever without one (the real codex: no event for 100 s, then `idle_timeout`). Now the end is read
from the line's first fields, and the run ends at once with the text it streamed."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import anyio
import pytest

from tests.adapters.codex.test_codex_launch_and_run import THREAD, TURN, app_server, notify, run
from tests.hang_guard import HANG_GUARD_S
from unified.events import Result, TextDelta, WarningEvent
from unified.testing import FakeAgentProcess

pytestmark = pytest.mark.anyio

LIMIT = 4096
"""The stand-in's line cap: a turn's end repeating an answer of 5,000 characters is over it."""


def answered_over_the_cap(ended_turn: str = TURN) -> Iterable[str]:
    text = "y" * 5000
    items = [{"type": "agentMessage", "id": "m", "text": text}]
    over = {"method": "turn/completed", "params": {"threadId": THREAD, "turn": {"id": ended_turn, "items": items}}}
    return [
        *(notify("item/agentMessage/delta", itemId="m", delta=text[at : at + 1000]) for at in range(0, 5000, 1000)),
        notify("item/completed", item=items[0]),
        json.dumps(over),
    ]


def capped(lines: Iterable[str]) -> object:
    def after_turn(process: FakeAgentProcess) -> Iterable[str]:
        process.line_limit = LIMIT
        return lines

    return app_server(after_turn)


async def test_a_turn_end_over_the_cap_ends_the_turn_with_the_text_it_streamed(tmp_path: Path) -> None:
    with anyio.fail_after(HANG_GUARD_S):
        events = await run(tmp_path, capped(answered_over_the_cap()))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "y" * 5000
    warnings = [e.message for e in events if isinstance(e, WarningEvent) and e.code == "malformed_line"]
    assert len(warnings) == 2, warnings  # the item's end and the turn's, both over the cap
    assert f"read as the end of turn {TURN} from its first fields (status unread)" in warnings[-1]
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"


async def test_the_end_of_another_turn_over_the_cap_does_not_end_this_one(tmp_path: Path) -> None:
    """A late end of an earlier turn (another id) is not this turn's: the run goes on to its own end."""
    lines = [*answered_over_the_cap("an-earlier-turn"), notify("turn/completed", turn={"id": TURN, "status": "failed"})]
    with anyio.fail_after(HANG_GUARD_S):
        events = await run(tmp_path, capped(lines))
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error", final
