"""`include_directories` on the real Codex 0.171: the model is told of each folder (a root of the environment
context's `<workspace_roots>`, from `sandbox_workspace_write.writable_roots`), and the approval bridge judges a path
in one as inside the workspace; a folder not included stays outside."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.codex.conftest import run_codex
from unified.events import PermissionDecision, Result, ToolUse, UnifiedEvent, WarningEvent
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """An included folder and one that is not, each beside the workspace, each with a file."""
    included, outside = tmp_path / "included", tmp_path / "outside"
    for folder in (included, outside):
        folder.mkdir()
        (folder / "data.txt").write_text("gamma\n")
    return Path(os.path.realpath(included)), Path(os.path.realpath(outside))


async def _run(workspace: Path, calls: list[FunctionCall], **fields: Any) -> tuple[list[UnifiedEvent], list[str]]:
    turns = ([ModelTurn(function_calls=calls)] if calls else []) + [ModelTurn(text="done")]
    async with FakeOpenAI(turns) as server:
        events = await run_codex(server, workspace, **fields)
        bodies = [json.dumps(request.body) for request in server.model_requests()]
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    return events, bodies


def _decisions(events: list[UnifiedEvent]) -> dict[str, PermissionDecision]:
    """Each call's decision, by the call's own id."""
    return {e.tool_use_id: e for e in events if isinstance(e, PermissionDecision)}


async def test_the_model_is_told_of_each_included_folder(workspace: Path, folders: tuple[Path, Path]) -> None:
    """Before: an `unsupported_option` warning, and no request named the folder."""
    included, outside = folders
    events, (body,) = await _run(workspace, [], include_directories=(included,))
    assert f"<root>{included.parent / workspace.name}</root><root>{included}</root>" in body
    assert str(outside) not in body
    assert not [e for e in events if isinstance(e, WarningEvent) and "include_directories" in e.message]


async def test_a_patch_in_an_included_folder_is_inside_the_workspace(
    workspace: Path, folders: tuple[Path, Path]
) -> None:
    """auto_edit writes a patch in the workspace unasked, and asks (nobody answers: denied) for one outside it."""
    included, outside = folders
    calls = [
        FunctionCall(
            name="apply_patch",
            args={"input": f"*** Begin Patch\n*** Add File: {folder / 'made.txt'}\n+x\n*** End Patch\n"},
            id=f"call_{name}",
        )
        for name, folder in (("included", included), ("outside", outside))
    ]
    events, _ = await _run(workspace, calls, approval_mode="auto_edit", include_directories=(included,))
    decisions = _decisions(events)
    assert (decisions["call_included"].decision, decisions["call_included"].decided_by) == ("allow", "approval_mode")
    assert (decisions["call_outside"].decision, decisions["call_outside"].rule) == ("deny", "protected-paths")
    assert (included / "made.txt").read_text() == "x\n"
    assert not (outside / "made.txt").exists()


async def test_a_read_in_an_included_folder_is_inside_the_workspace(
    workspace: Path, folders: tuple[Path, Path]
) -> None:
    """A read-only command runs unasked in the workspace; outside it, it is asked (nobody answers: denied)."""
    included, outside = folders
    calls = [
        FunctionCall(name="exec_command", args={"cmd": f"cat {folder / 'data.txt'}"}, id=f"call_{name}")
        for name, folder in (("included", included), ("outside", outside))
    ]
    events, _ = await _run(workspace, calls, approval_mode="default", include_directories=(included,))
    assert {e.tool_use_id for e in events if isinstance(e, ToolUse)} == {"call_included", "call_outside"}
    decisions = _decisions(events)
    assert (decisions["call_included"].decision, decisions["call_included"].decided_by) == ("allow", "policy")
    assert (decisions["call_outside"].decision, decisions["call_outside"].rule) == ("deny", "outside-workspace")


async def test_a_resumed_thread_is_told_of_a_folder_a_later_run_includes(
    workspace: Path, folders: tuple[Path, Path]
) -> None:
    """Before: Codex writes the environment context at a thread's first turn only, so the resumed run's request
    never named the folder; the write there, refused (asked, nobody answered) by the first run, is allowed after."""
    included, _ = folders

    def patch(call_id: str) -> FunctionCall:
        body = f"*** Begin Patch\n*** Add File: {included / (call_id + '.txt')}\n+x\n*** End Patch\n"
        return FunctionCall(name="apply_patch", args={"input": body}, id=call_id)

    async with FakeOpenAI([ModelTurn(function_calls=[patch("call_first")]), ModelTurn(text="done")]) as server:
        first = await run_codex(server, workspace, approval_mode="auto_edit")
    result = first[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert (_decisions(first)["call_first"].decision, _decisions(first)["call_first"].rule) == (
        "deny",
        "protected-paths",
    )
    turns = [ModelTurn(function_calls=[patch("call_again")]), ModelTurn(text="done")]
    async with FakeOpenAI(turns) as server:
        again = await run_codex(
            server,
            workspace,
            "Go on.",
            approval_mode="auto_edit",
            include_directories=(included,),
            resume=result.short_id,
        )
        bodies = [json.dumps(request.body) for request in server.model_requests()]
    resumed = again[-1]
    assert isinstance(resumed, Result)
    assert resumed.status == "success", resumed.error
    assert f"<root>{included}</root>" in bodies[0]
    assert (_decisions(again)["call_again"].decision, _decisions(again)["call_again"].decided_by) == (
        "allow",
        "approval_mode",
    )
    assert (included / "call_again.txt").read_text() == "x\n"
    assert not (included / "call_first.txt").exists()
