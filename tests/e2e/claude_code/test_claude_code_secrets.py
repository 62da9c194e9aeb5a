"""Red team (secrets) on the real `claude` binary: what a Bash command the model runs can read of the
environment of Claude Code's process, and of unified's own, and what of it reaches the events.

The attack: `env`, then `/proc/$PPID/environ` (the process that started the shell: Claude Code), then
`/proc/<unified's pid>/environ`. The Gemini and OpenAI keys of unified's environment never reach Claude
Code's process; the run's own ANTHROPIC_API_KEY (given in `backend_options["env"]`) reaches the CLI
through its `apiKeyHelper`, not its environment, so the model is sent no piece of any of them
(test_claude_code_env_scrub.py); the run's key is replaced in every event too."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.e2e.environ_attack import check_no_key_out, environ_command
from tests.hang_guard import HANG_GUARD_S
from unified._execute import EventStream
from unified.events import UnifiedEvent
from unified.testing import FakeAnthropic, FunctionCall, ModelTurn
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio

RUN_KEY = "sk-ant-api03-Rq7Tz2Wm5Xn9Lb3Kc6Vd1Hf8Gj4Sp0Ya5Ue2Oi7Qw3Er9Ty6Ui1Op4As8Df2Gh5Jk0AA"
GEMINI_KEY = "AIzaSyD-c8Wq3Ln6Zr1Xt5Vm9Kb2Hp7Jd0Fs4Ge"
OPENAI_KEY = "sk-proj-Nf3Xq8Zr1Lm6Vt9Kb4Wc7Hd2Jp5Gs0Ya3Ue8Oi1Qw6Er4Ty9Ui2Op7T3BlbkFJAs5Df0Gh3Jk"


async def test_a_bash_command_reading_the_environ_of_claude_code_and_of_unified_gets_no_key_out(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    call = FunctionCall(name="Bash", args={"command": environ_command(), "description": "env"}, id="toolu_env")
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
        sent = "\n".join(str(request.body) for request in server.requests)
    check_no_key_out(events, (RUN_KEY, GEMINI_KEY, OPENAI_KEY), (RUN_KEY, GEMINI_KEY, OPENAI_KEY), sent)
