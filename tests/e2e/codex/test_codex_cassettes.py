"""The committed codex cassettes are what the real binary does today: each is recorded again (the real
pinned binary against FakeOpenAI) and the committed one must replay to the same stream."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.cassette_scenarios import CASSETTES, SCENARIOS, CassetteScenario, record
from tests.e2e.conformance.conformance_harness import shape_of
from unified.events import Result, UnifiedEvent
from unified.testing import replay_events

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def summary(events: list[UnifiedEvent]) -> tuple[object, ...]:
    final = events[-1]
    assert isinstance(final, Result)
    return shape_of(events), final.status, final.final_text, final.usage


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_a_cassette_replays_as_the_binary_runs_today(
    anyio_backend: str, scenario: CassetteScenario, tmp_path: Path
) -> None:
    workspace = tmp_path / scenario.name
    workspace.mkdir()
    live = await record(scenario, tmp_path / "again.jsonl", workspace)
    committed = [event async for event in replay_events(CASSETTES / f"{scenario.name}.jsonl")]
    assert summary(committed) == summary(live)
