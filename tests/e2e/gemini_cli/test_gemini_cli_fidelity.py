"""A sample of the real recordings through the real `gemini` binary, behind FakeGemini (`tests.harness.fidelity`).

The whole corpus is `scripts/fidelity`'s job (docs/fidelity.md); this sample covers what the gemini-cli
adapter must get right on real data: tools, thoughts, cached and tool-use tokens from the chat file, a
tool the CLI lacks, a subagent delegation, and a retry the CLI hides (a declared difference).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.fidelity import HELPER_CALLS_BY_CLI, RETRIED_BY_CLI, Verdict, corpus, expected_of, play
from tests.harness.warm_cli import WarmCli
from unified.events import Result, ToolResult, ToolUse, UnifiedEvent

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]
"""The adapter's trio path is covered by the other gemini-cli tests."""

BY_NAME = {r.name: r for r in corpus()}


async def _play(name: str, workspace: Path, warm: WarmCli) -> Verdict:
    """The recording's runs on the module's warm CLI process (each ends with its result, the next plays its own)."""
    return await play(BY_NAME[name], "gemini-cli", workspace, warm=warm)


def _results(verdict: Verdict) -> list[Result]:
    return [e for run in verdict.events for e in run if isinstance(e, Result)]


def _all(verdict: Verdict) -> list[UnifiedEvent]:
    return [e for run in verdict.events for e in run]


async def test_usage_is_the_chat_files_exact_counts(workspace: Path, warm_cli: WarmCli) -> None:
    name = "gemini-cli/hooks-system.after-tool-context"  # a tool call, thoughts, a cached prompt
    verdict = await _play(name, workspace, warm_cli)
    assert verdict.problems == []
    assert verdict.declared == []
    [result] = _results(verdict)
    assert result.usage == expected_of(BY_NAME[name].model_turns()).usage
    assert result.usage.thinking_tokens > 0
    assert result.usage.cached_tokens > 0
    assert not result.usage.estimated


async def test_the_clis_own_helper_calls_are_a_declared_difference(workspace: Path, warm_cli: WarmCli) -> None:
    name = "gemini-cli/flicker-detector.max-height"  # the CLI's web search makes its own model call
    verdict = await _play(name, workspace, warm_cli)
    assert verdict.problems == []
    assert verdict.declared
    assert all(HELPER_CALLS_BY_CLI in d for d in verdict.declared)
    [result] = _results(verdict)
    assert result.usage == expected_of(BY_NAME[name].model_turns()).usage  # the main chat's calls, exactly


async def test_a_tool_the_cli_lacks_is_visible(workspace: Path, warm_cli: WarmCli) -> None:
    verdict = await _play(
        "js-genai/Chats_Tests_chats_function_calling_Vertex_AI_with_function_calling", workspace, warm_cli
    )
    assert verdict.problems == []
    events = _all(verdict)
    uses = [e for e in events if isinstance(e, ToolUse)]
    assert [u.name for u in uses] == ["customDivide", "customDivide"]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.tool_use_id for r in results] == [u.tool_use_id for u in uses]
    assert all(r.is_error and "not found" in (r.output or "") for r in results)


async def test_a_delegating_session_plays_every_turn(workspace: Path, warm_cli: WarmCli) -> None:
    verdict = await _play("gemini-cli/browser-agent.persistent-session", workspace, warm_cli)
    assert verdict.problems == []
    assert verdict.served == verdict.turns == 26
    [result] = _results(verdict)
    assert result.usage == expected_of(BY_NAME[verdict.recording].model_turns()).usage


async def test_a_retry_the_cli_hides_is_a_declared_difference(workspace: Path, warm_cli: WarmCli) -> None:
    verdict = await _play("gemini-cli-responses/context-compress-interactive.compress", workspace, warm_cli)
    assert verdict.problems == []
    assert verdict.declared
    assert all(RETRIED_BY_CLI in d for d in verdict.declared)
    [result] = _results(verdict)
    assert result.status == "success"
    assert 0 < result.usage.input_tokens < expected_of(BY_NAME[verdict.recording].model_turns()).usage.input_tokens
