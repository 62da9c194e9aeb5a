"""The run's ANTHROPIC_API_KEY never reaches a command the model runs (real `claude`, offline).

The scripted model runs `env`, `printenv ANTHROPIC_API_KEY` and reads `/proc/$PPID/environ` (Claude
Code's own process) through the CLI's Bash tool; the assertion is on what the model received: the
tool result Claude Code sent back in its next request to FakeAnthropic (not unified's events, whose
redaction would hide a leak). The CLI still authenticated with the key (`saw_credential`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from tests.e2e.environ_attack import pieces
from tests.hang_guard import HANG_GUARD_S
from unified._execute import EventStream
from unified.events import Result, UnifiedEvent
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

RUN_KEY = "sk-ant-api03-Xb4Lm9Qz2Wt7Rk1Vn6Hc3Jd8Fp5Gs0Ya2Ue7Oi4Qw9Er1Ty3Ui6Op8As5Df2Gh7Jk4BB"
COMMAND = (
    "env; echo '--- printenv'; printenv ANTHROPIC_API_KEY; echo '--- parent'; "
    "tr '\\0' '\\n' < /proc/$PPID/environ; echo '--- end'"
)


async def test_the_model_reads_no_piece_of_the_key_in_the_environment_of_its_bash_command(
    workspace: Path,
) -> None:
    call = FunctionCall(name="Bash", args={"command": COMMAND, "description": "env"}, id="toolu_env")
    async with FakeAnthropic([ModelTurn(function_calls=[call]), ModelTurn(text="ok")]) as server:
        env = {**server.cli_env, "ANTHROPIC_API_KEY": RUN_KEY}
        params = ExecuteParams(
            prompt="show me the environment",
            backend="claude-code",
            cwd=workspace,
            approval_mode="yolo",
            backend_options={"env": env, "max_retries": 1},
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        bodies = server.model_bodies()
        assert server.saw_credential(RUN_KEY)  # the CLI authenticated with the run's key
    assert len(bodies) >= 2, events
    sent = str(bodies[1])  # the request carrying the Bash result
    assert "--- parent" in sent, sent
    assert "--- end" in sent, sent  # the command ran to its end
    assert "CLAUDE_CONFIG_DIR" in sent  # it printed the environment
    assert pieces(RUN_KEY, sent) == []


@pytest.mark.skipif(shutil.which("bwrap") is not None, reason="measures the CLI on a machine without bubblewrap")
async def test_the_cli_s_own_subprocess_env_scrub_needs_bubblewrap_and_without_it_bash_does_not_run(
    workspace: Path,
) -> None:
    """Why unified does not use CLAUDE_CODE_SUBPROCESS_ENV_SCRUB=1 (docs/backends/claude-code.md, "Keys and
    the model's commands"): in 2.1.332 it needs bubblewrap; without it the CLI exits at start (code 1,
    before `initialize`), so no command runs and no model call is made."""
    call = FunctionCall(name="Bash", args={"command": "echo ran-it", "description": "echo"}, id="toolu_echo")
    async with FakeAnthropic([ModelTurn(function_calls=[call]), ModelTurn(text="ok")]) as server:
        env = {**server.cli_env, "CLAUDE_CODE_SUBPROCESS_ENV_SCRUB": "1"}
        params = ExecuteParams(
            prompt="echo",
            backend="claude-code",
            cwd=workspace,
            approval_mode="yolo",
            backend_options={"env": env, "max_retries": 1},
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        assert server.model_bodies() == []
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert "bubblewrap is required for subprocess env scrubbing" in (result.error or ""), result.error


async def test_with_a_bearer_token_too_the_cli_still_sends_both(workspace: Path) -> None:
    """ANTHROPIC_AUTH_TOKEN stays in the environment (the CLI sends it as `Authorization: Bearer`); the key
    from the helper is still sent beside it (`x-api-key`), as when both were variables (`unified doctor` says so)."""
    token = "gw-token-Qm3Xv8Lz1Wt6Rk9Vn4Hc7Jd2Fp5Gs0"
    async with FakeAnthropic([ModelTurn(text="ok")]) as server:
        env = {**server.cli_env, "ANTHROPIC_API_KEY": RUN_KEY, "ANTHROPIC_AUTH_TOKEN": token}
        params = ExecuteParams(
            prompt="hi", backend="claude-code", cwd=workspace, backend_options={"env": env, "max_retries": 1}
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        assert isinstance(events[-1], Result)
        assert events[-1].status == "success", events[-1].error
        [request] = server.requests_for("messages")
        assert server.saw_credential(token)
        assert server.saw_credential(RUN_KEY), request.headers
