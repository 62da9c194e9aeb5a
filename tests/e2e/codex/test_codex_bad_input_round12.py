"""Bad input round 12 for codex, the real binary against FakeOpenAI: a Responses server that sends no usage (a
proxy that strips it, a local model server) made `result.turns` 1 for any number of model requests, where the
other backends count each: Codex tells the client of a response's end only by `thread/tokenUsage/updated`, which it
sends only with usage, and by `account/rateLimits/updated`, which follows every response's token count (usage or
none) and which unified had opted out of."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from unified.events import Result, TextDelta, ToolResult
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn, Usage

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.mark.parametrize("usage", [None, Usage(input_tokens=20, output_tokens=4)], ids=["no-usage", "usage"])
async def test_turns_count_the_model_requests_with_usage_or_without(workspace: Path, usage: Usage | None) -> None:
    read = FunctionCall(name="exec_command", args={"cmd": "cat notes.txt"})
    turns = [
        ModelTurn(function_calls=[read], usage=usage),
        ModelTurn(function_calls=[read], usage=usage),
        ModelTurn(text="Read it twice.", usage=usage),
    ]
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace)
        requests = len(server.model_requests())
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert sum(isinstance(e, ToolResult) for e in events) == 2
    assert requests == 3
    assert result.turns == 3
    assert result.usage.estimated == (usage is None)
    if usage is None:  # the estimate is of the text the model wrote, not zero
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Read it twice."
        assert result.usage.output_tokens > 0
    else:
        assert result.usage.input_tokens == 60
