"""Bad input round 19, codex behind FakeOpenAI: a model response that reports no usage (a proxy that strips it from
some answers) beside ones that do. Such a response was counted with zero tokens and, when it wrote no text (a tool
call), the run's usage was not flagged `estimated`: its zeros read as measured. The API backends flag a response
without usage `estimated` (`_internal.counts`); codex now does too, before the first usage and after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from unified.events import Result, ToolResult
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn, Usage

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

READ = FunctionCall(name="exec_command", args={"cmd": "cat notes.txt"})
MEASURED = Usage(input_tokens=20, output_tokens=4)


@pytest.mark.parametrize(
    "usages",
    [(None, MEASURED), (MEASURED, None, MEASURED), (MEASURED, MEASURED, MEASURED)],
    ids=["none-first", "none-between", "all-measured"],
)
async def test_a_tool_call_response_without_usage_flags_the_usage_estimated(
    workspace: Path, usages: tuple[Usage | None, ...]
) -> None:
    turns = [ModelTurn(function_calls=[READ], usage=usage) for usage in usages[:-1]]
    turns.append(ModelTurn(text="Read.", usage=usages[-1]))
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace)
        assert len(server.model_requests()) == len(usages)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert sum(isinstance(e, ToolResult) for e in events) == len(usages) - 1
    assert result.turns == len(usages)
    measured = sum(usage is not None for usage in usages)
    assert result.usage.input_tokens == 20 * measured
    assert result.usage.estimated == (measured < len(usages))
