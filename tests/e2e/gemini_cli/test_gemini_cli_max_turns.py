"""`max_turns` over ACP on the real gemini CLI (`_permissions.TurnCap`): every call asked, the first call of request
`max_turns` not run, and no request after it. The conformance suite (tests/e2e/conformance/test_max_turns.py) checks a
model that calls a tool for ever, with call ids the API gives; these check the CLI's own numbering of a request's calls
(0.61 names a call `<tool>__<tool>_<time>_<index>` when the API gives none)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.e2e.gemini_cli.test_gemini_cli_acp import result_of
from tests.hang_guard import HANG_GUARD_S
from tests.harness.warm_cli import WarmCli
from unified import ExecuteParams, execute
from unified._execute import EventStream
from unified.events import PermissionDecision, SubagentStarted, ToolResult, UnifiedEvent, WarningEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.testing._wiring import backend_options_for

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


def _reads(*paths: str) -> ModelTurn:
    return ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": p}) for p in paths])


async def _run(options: dict[str, object], workspace: Path, max_turns: int) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="read", backend="gemini-cli", cwd=workspace, max_turns=max_turns, backend_options=options
    )
    async with EventStream(params, strict=True) as stream:  # strict: a protocol slip fails the test
        return [event async for event in stream]


async def test_the_calls_of_one_request_all_run_before_the_cap(workspace: Path, tmp_path: Path) -> None:
    """Before, over ACP, `max_turns` was only a warning: the model's third request was sent. Now request 1's two calls
    run (the second is not taken for a new request), request 2's call is not run, and there is no request 3."""
    (workspace / "other.txt").write_text("gamma\n")
    turns = [_reads("notes.txt", "other.txt"), _reads("notes.txt"), ModelTurn(text="never")]
    async with FakeGemini(turns) as server:  # a process of its own: what if the CLI asked again after the run?
        options = backend_options_for(server, "gemini-cli", cli_home=tmp_path / "cli-home")
        events = await _run({**options, "pool_size": 0}, workspace, max_turns=2)
        requests = len(server.requests)
    result = result_of(events)
    assert (result.status, requests) == ("max_turns", 2)
    assert not [e for e in events if isinstance(e, WarningEvent) and "max_turns" in e.message]
    decisions = [e for e in events if isinstance(e, PermissionDecision)]
    assert [d.decision for d in decisions] == ["allow", "allow", "deny"]
    assert decisions[2].reason == "not run: the run reached max_turns=2"
    outputs = [str(e.output) for e in events if isinstance(e, ToolResult) and not e.is_error]
    assert any("alpha" in o for o in outputs)
    assert any("gamma" in o for o in outputs)


async def test_a_run_within_the_cap_ends_as_ever(workspace: Path, warm_cli: WarmCli) -> None:
    server = warm_cli.play([_reads("notes.txt"), ModelTurn(text="done")])
    events = await _run(warm_cli.backend_options, workspace, max_turns=2)
    requests = len(server.requests)
    assert (result_of(events).status, result_of(events).final_text, requests) == ("success", "done", 2)


@pytest.mark.parametrize("mode", ["default", "yolo"])
async def test_a_capped_run_starts_no_subagent_and_never_hangs(workspace: Path, warm_cli: WarmCli, mode: str) -> None:
    """Every call asked: 0.61's own check of a delegation is then a question, which it refuses, so no subagent starts
    (whose questions no ACP client could answer, and in yolo it would wait for ever); the model is told, and goes on."""
    turns = [
        ModelTurn(function_calls=[FunctionCall(name="invoke_agent", args={"agent_name": "generalist", "prompt": "x"})]),
        ModelTurn(text="done"),
    ]
    warm_cli.play(turns)
    params = ExecuteParams(
        prompt="delegate",
        backend="gemini-cli",
        cwd=workspace,
        max_turns=5,
        approval_mode=mode,
        backend_options={**warm_cli.backend_options, "fake_responses_strict": False},
    )
    with anyio.fail_after(HANG_GUARD_S):
        async with execute(params) as stream:
            events = [event async for event in stream]
    assert not [e for e in events if isinstance(e, SubagentStarted)]
    assert (result_of(events).status, result_of(events).final_text) == ("success", "done")
    [delegation] = [e for e in events if isinstance(e, PermissionDecision)]
    assert (delegation.tool_name, delegation.decision) == ("invoke_agent", "deny")
