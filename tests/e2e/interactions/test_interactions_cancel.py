"""Cancelling a run while its foreground interaction is still streaming, over real HTTP to FakeGemini."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import unified
from tests.e2e.interactions.interactions_harness import Params
from tests.hang_guard import HANG_GUARD_S
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import InteractionTurn, TextStep

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_cancel_during_a_foreground_stream(fake: FakeGemini, params: Params) -> None:
    # 40 text pieces 0.05 s apart: the stream would take over 2 s; the run is cancelled at the first.
    fake.add(InteractionTurn(steps=[TextStep(text="word " * 40, chunks=40)], chunk_delay=0.05))
    seen: list[Any] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with unified.execute(params("write a long answer")) as events:
            async for event in events:
                seen.append(event)
                if event.type == "text_delta" and [e.type for e in seen].count("text_delta") == 1:
                    events.cancel()
    assert [e.type for e in seen].count("text_delta") < 40
    cancels = fake.requests_for("interactions.cancel")
    assert len(cancels) == 1
    assert cancels[0].status == 200
    assert cancels[0].path.endswith("/interactions/fake-interaction-1/cancel")
    stored = fake.interaction("fake-interaction-1")
    assert stored is not None
    assert stored["status"] == "cancelled"
    assert not fake.problems
    assert seen[-1].type == "result"
    assert seen[-1].status == "cancelled"
