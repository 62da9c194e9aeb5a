"""One connection pool per client: a multi-turn run reuses one TCP connection (FakeGemini counts them).

google-genai's own Interactions stream stops reading at the `[DONE]` sentinel, before the end of the
body, so httpx cannot return the connection to the pool and every request opened a new one (51 for
a 50-turn run); the adapter reads each stream to its end.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from unified import execute
from unified.events import Result, ToolResult, UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

TURNS = 5


async def run_tool_session(fake: FakeGemini, cwd: Path, backend: str) -> list[UnifiedEvent]:
    call = FunctionCall(name="read_file", args={"file_path": "a.txt"})
    fake.add(*[ModelTurn(function_calls=[call]) for _ in range(TURNS)], ModelTurn(text="done"))
    options = {"api_key": "test-key", "base_url": fake.base_url, "loop_threshold": TURNS + 1}
    params = ExecuteParams(prompt="go", backend=backend, cwd=cwd, backend_options=options, approval_mode="yolo")
    async with execute(params) as stream:
        events = [event async for event in stream]
    fake.assert_done()
    return events


@pytest.mark.parametrize("backend", ["interactions", "generate-content"])
async def test_a_multi_turn_run_uses_one_connection(tmp_path: Path, backend: str) -> None:
    (tmp_path / "a.txt").write_text("hello\n")
    with FakeGemini() as fake:
        events = await run_tool_session(fake, tmp_path, backend)
        result = events[-1]
        assert isinstance(result, Result)
        assert result.status == "success", result
        assert sum(isinstance(e, ToolResult) for e in events) == TURNS
        assert len(fake.requests) == TURNS + 1
        assert fake.connections == 1
