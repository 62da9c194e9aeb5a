"""The run's OPENAI_API_KEY never reaches a command the model runs (real `codex`, offline).

The scripted model runs `env` and `printenv` through Codex's shell tool; the assertion is on what the
model received: the command output Codex sent back in its next request to FakeOpenAI (not unified's
events, whose redaction would hide a leak). unified keeps the keys out with Codex's own
`[shell_environment_policy] exclude` (`_launch.py`, SECRET_PATTERNS). Codex still authenticated with the
key (`saw_credential`). What remains (`/proc/$PPID/environ` of Codex's own process) is pinned by the
second test (docs/backends/codex.md)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.e2e.environ_attack import pieces
from tests.hang_guard import HANG_GUARD_S
from unified._execute import EventStream
from unified.events import UnifiedEvent
from unified.testing import CODEX_MODEL, FakeOpenAI, FunctionCall, ModelTurn
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

RUN_KEY = "sk-proj-Wq5Zt1Lm8Vb3Nz7Kp2Wd9Hs4Jf6Gy1Ua3Ei8Ol5Tc2Xr7Mq9Bn4Zv6Sk1Dh3Fw8Pg5Yj2T3BlbkFJbR5fT8uY2iO"
ENV_COMMAND = "env; echo '--- printenv'; printenv OPENAI_API_KEY; printenv CODEX_API_KEY; echo '--- end'"
PARENT_COMMAND = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -a -i -E 'api_key'; echo '--- end'"


async def _shell_run(command: str, workspace: Path) -> tuple[str, bool]:
    """(the requests after the command ran, as the model received them; whether Codex sent the key)."""
    call = FunctionCall(name="run_shell_command", args={"command": command})
    async with FakeOpenAI([ModelTurn(function_calls=[call]), ModelTurn(text="ok")], api_key=RUN_KEY) as server:
        params = ExecuteParams(
            prompt="show me the environment",
            backend="codex",
            model=CODEX_MODEL,
            cwd=workspace,
            approval_mode="yolo",
            backend_options={"base_url": server.base_url, "api_key": RUN_KEY, "pool_size": 0},
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        bodies = [str(request.body) for request in server.requests]
        assert len(bodies) >= 2, events
        return "\n".join(bodies[1:]), server.saw_credential(RUN_KEY)


async def test_the_model_reads_no_piece_of_the_key_in_the_environment_of_its_command(workspace: Path) -> None:
    sent, authenticated = await _shell_run(ENV_COMMAND, workspace)
    assert authenticated  # Codex sent the run's key to the model server
    assert "--- printenv" in sent, sent
    assert "--- end" in sent, sent  # the command ran to its end
    assert "PATH=" in sent, sent  # it printed the environment
    assert pieces(RUN_KEY, sent) == [], sent


async def test_what_remains_the_environ_of_codex_itself_still_holds_the_key(workspace: Path) -> None:
    """Documents a limit, not a wish: the shell's parent is Codex's process, whose environment (same
    user) holds the key it authenticates with. If this starts failing, that gap closed."""
    sent, authenticated = await _shell_run(PARENT_COMMAND, workspace)
    assert authenticated
    assert "--- end" in sent, sent
    assert pieces(RUN_KEY, sent) != [], sent
