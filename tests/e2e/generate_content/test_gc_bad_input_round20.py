"""Bad input round 20, generate-content: the run's working directory deleted by the model's own command. The tools
after it tell the model the workspace is gone (as before); the caller is now told too, by a `warning(cwd_gone)`
before the result (the run ended a plain success, saying nothing)."""

from __future__ import annotations

import pytest

from tests.e2e.generate_content.gc_harness import Harness, harness, result_of
from unified.events import ToolResult, WarningEvent
from unified.testing import FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

__all__ = ["harness"]  # the generate-content tests' fixture


async def test_a_cwd_the_model_deleted_is_told_to_the_model_and_to_the_caller(harness: Harness) -> None:
    """FAILED before (no warning)."""
    workspace = harness.workspace
    harness.server.add(
        ModelTurn(function_calls=[FunctionCall(name="run_shell_command", args={"command": f"rm -rf {workspace}"})])
    )
    harness.server.add(ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]))
    harness.server.add(ModelTurn(text="done"))
    events = await harness.run("go", approval_mode="yolo")
    read = [e for e in events if isinstance(e, ToolResult)][-1]
    assert read.is_error
    assert f"The workspace directory {workspace} is gone" in str(read.output)
    [gone] = [e for e in events if isinstance(e, WarningEvent) and e.code == "cwd_gone"]
    assert events.index(gone) == len(events) - 2
    assert result_of(events).status == "success"


async def test_a_run_whose_cwd_stays_says_nothing_of_it(harness: Harness) -> None:
    """Pin: no `cwd_gone` when the folder is still there."""
    harness.server.add(ModelTurn(text="done"))
    events = await harness.run("go")
    assert not [e for e in events if isinstance(e, WarningEvent)]
