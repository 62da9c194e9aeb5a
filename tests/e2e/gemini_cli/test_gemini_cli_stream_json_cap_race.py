"""stream-json's `max_turns` when unified loses its race with the CLI (`_stream_json` module docstring): headless, the
CLI runs the calls of request `max_turns` once its stream ends and sends the next request unasked, so a kill that
lands late finds the calls already run. They are reported as they ran, never as "not run"; what the CLI wrote after
them (the next request's answer) is not shown.

The CLI here is a stand-in that prints what 0.61 prints in that order (the lines of `test_gemini_cli_stream_json`),
all of it at once before it waits to be killed: whatever unified reads first, the capped call's result is already
written, which is the race lost on purpose."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from unified import ExecuteParams, execute
from unified.events import PermissionDecision, Result, TextDelta, ToolResult, UnifiedEvent

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SESSION = "5c71pted-0000-4000-8000-0000000000c2"


def _call(n: int) -> dict[str, object]:
    return {
        "type": "tool_use",
        "tool_name": "run_shell_command",
        "tool_id": f"run_shell_command__run_shell_command_1796428415411_{n}",
        "parameters": {"command": f"echo {n}"},
    }


def _result(n: int) -> dict[str, object]:
    return {
        "type": "tool_result",
        "tool_id": f"run_shell_command__run_shell_command_1796428415411_{n}",
        "status": "success",
        "output": f"{n}",
    }


def _stand_in(tmp_path: Path, lines: list[dict[str, object]]) -> Path:
    """A `gemini` (0.61 to the version probe) that reads its prompt, writes `lines` in one write, then waits for
    its end (it is killed)."""
    script = tmp_path / "gemini"
    text = "".join(json.dumps(line) + "\n" for line in lines)
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, signal, sys\n"
        "if '--version' in sys.argv:\n"
        "    sys.exit(print('0.61.0'))\n"
        "sys.stdin.read()\n"
        f"os.write(1, {text.encode()!r})\n"
        "signal.pause()\n"
    )
    script.chmod(0o755)
    return script


async def _run(tmp_path: Path, lines: list[dict[str, object]], max_turns: int) -> list[UnifiedEvent]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    params = ExecuteParams(
        backend="gemini-cli",
        prompt="Echo for ever.",
        cwd=workspace,
        approval_mode="yolo",
        max_turns=max_turns,
        backend_options={
            "transport": "stream-json",
            "gemini_binary": str(_stand_in(tmp_path, lines)),
            "env": {"GEMINI_API_KEY": "k-stand-in", "GEMINI_CLI_TRUST_WORKSPACE": "true"},
        },
    )
    async with execute(params) as stream:
        return [event async for event in stream]


def _pids_in(folder: Path) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == str(folder):
                    found.add(int(entry))
            except OSError:
                continue
    return found


async def test_a_capped_call_the_cli_ran_before_the_kill_is_reported_as_run(tmp_path: Path) -> None:
    init: dict[str, object] = {"type": "init", "session_id": SESSION, "model": "gemini-2.5-flash"}
    past: dict[str, object] = {"type": "message", "role": "assistant", "content": "past the cap", "delta": True}
    lines = [init, _call(0), _result(0), _call(1), _result(1), past, _call(2)]
    events = await _run(tmp_path, lines, max_turns=2)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "max_turns"
    assert result.error is not None
    assert "1 of the last turn's calls had run" in result.error
    capped = "run_shell_command__run_shell_command_1796428415411_1"
    decisions = [e.decision for e in events if isinstance(e, PermissionDecision) and e.tool_use_id == capped]
    results = [e for e in events if isinstance(e, ToolResult) and e.tool_use_id == capped]
    assert decisions == ["allow"]
    assert [(r.is_error, r.output) for r in results] == [(False, "1")]
    assert not [e for e in events if isinstance(e, TextDelta) and "past the cap" in e.text]
    assert not [e for e in events if isinstance(e, ToolResult) and e.tool_use_id.endswith("_2")]
    assert not _pids_in(tmp_path / "ws")


async def test_a_capped_call_the_kill_stopped_in_time_is_not_run(tmp_path: Path) -> None:
    init: dict[str, object] = {"type": "init", "session_id": SESSION, "model": "gemini-2.5-flash"}
    lines = [init, _call(0), _result(0), _call(1)]
    events = await _run(tmp_path, lines, max_turns=2)
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.error) == (
        "max_turns",
        "stopped after max_turns=2 model requests; the last turn's calls were not run",
    )
    capped = [e for e in events if isinstance(e, ToolResult) and e.tool_use_id.endswith("_1")]
    assert [(r.is_error, r.output) for r in capped] == [(True, "not run: the run reached max_turns=2")]
