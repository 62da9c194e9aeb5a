"""A harness driving the generate-content backend through `unified.execute` against FakeGemini."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from unified import execute
from unified.events import Result, UnifiedEvent
from unified.testing._fake_gemini import FakeGemini
from unified.types import ExecuteParams

FAST: dict[str, object] = {"api_key": "test-key", "retry_delay_scale": 0.001}
"""Options every run gets: a dummy key and retry waits shrunk a thousandfold."""


@dataclass
class Harness:
    server: FakeGemini
    workspace: Path

    def params(self, prompt: str = "hi", **fields: Any) -> ExecuteParams:
        options = {**FAST, "base_url": self.server.base_url, **fields.pop("backend_options", {})}
        fields.setdefault("model", "gemini-2.5-flash")
        return ExecuteParams(
            prompt=prompt, backend="generate-content", cwd=self.workspace, backend_options=options, **fields
        )

    async def run(self, prompt: str = "hi", **fields: Any) -> list[UnifiedEvent]:
        events: list[UnifiedEvent] = []
        async with execute(self.params(prompt, **fields)) as stream:
            async for event in stream:
                events.append(event)
        assert isinstance(events[-1], Result)
        return events

    def bodies(self) -> list[Any]:
        """The JSON bodies of every streamGenerateContent request, in order."""
        return [r.body for r in self.server.requests_for("generateContentStream")]


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with FakeGemini() as server:
        yield Harness(server, workspace)


def result_of(events: list[UnifiedEvent]) -> Result:
    last = events[-1]
    assert isinstance(last, Result)
    return last
