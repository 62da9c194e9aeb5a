"""The stream-json fallback transport honours plan mode on the pinned binary (`--approval-mode plan`).

Nobody can be asked on stream-json: in plan mode the CLI itself keeps writes and commands from running
(write_file outside its plan files is "Access denied: plan path", the shell is not registered), while
a read still runs, so the model can look and plan."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import call, stream_line, text
from unified.events import Result, ToolResult, ToolUse, UnifiedEvent

Run = Callable[..., Awaitable[list[UnifiedEvent]]]
Responses = Callable[..., Path]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_plan_mode_on_stream_json_reads_but_never_writes_or_runs(
    run_gemini: Run, responses: Responses, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("alpha\n")
    fake = responses(
        stream_line(call("read_file", file_path=str(workspace / "notes.txt"))),
        stream_line(call("write_file", file_path=str(workspace / "plan.txt"), content="written")),
        stream_line(call("run_shell_command", command=f"touch {workspace / 'ran.txt'}")),
        stream_line(text("Here is the plan.")),
    )
    events = await run_gemini(fake, approval_mode="plan", backend_options={"transport": "stream-json"})
    assert not (workspace / "plan.txt").exists()
    assert not (workspace / "ran.txt").exists()
    uses = {e.tool_use_id: e.name for e in events if isinstance(e, ToolUse)}
    outcomes = {uses[e.tool_use_id]: (e.is_error, e.output or "") for e in events if isinstance(e, ToolResult)}
    read, write, shell = outcomes["read_file"], outcomes["write_file"], outcomes["run_shell_command"]
    assert read == (False, read[1])
    assert write == (True, write[1])
    assert "Access denied: plan path" in write[1]
    assert shell == (True, shell[1])
    assert "not found" in shell[1]
    result = events[-1]
    assert isinstance(result, Result), events
    assert result.status == "success", events
