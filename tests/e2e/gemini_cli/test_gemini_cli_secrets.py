"""Red team (secrets) on the real `gemini` binary: what a shell command the model runs can read of the
environment of the Gemini CLI's process, and of unified's own, and what of it reaches the events.

The attack: `env`, then `/proc/$PPID/environ` (the process that started the shell, up to the CLI,
which holds GEMINI_API_KEY), then `/proc/<unified's pid>/environ`. The OpenAI and Anthropic keys of
unified's environment never reach the CLI's process; the Gemini key is replaced in every event."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.environ_attack import check_no_key_out, environ_command
from tests.e2e.gemini_cli.gemini_cli_helpers import call, stream_line, text
from unified.events import UnifiedEvent

pytestmark = pytest.mark.anyio

GEMINI_KEY = "AIzaSyB-g4Tz9Lq2Wm7Xc1Vn5Kb8Hd3Jf6Sp0Ye"
OPENAI_KEY = "sk-proj-Gm5Xq1Zr8Lm3Vt6Kb9Wc2Hd7Jp0Gs4Ya1Ue6Oi3Qw8Er2Ty7Ui5Op9T3BlbkFJAs1Df4Gh7Jk"
ANTHROPIC_KEY = "sk-ant-api03-Pw2Ez7Rt4Yu9Io1Pa6Sd3Fg8Hj5Kl0Zx2Cv7Bn4Mq9Wr1Et6Yu3Io8Pa5Sd0Fg2AA"


async def test_a_shell_command_reading_the_environ_of_the_cli_and_of_unified_gets_no_key_out(
    run_gemini: Callable[..., Awaitable[list[UnifiedEvent]]],
    responses: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    command = environ_command(keys_only=True)  # the CLI cuts a long output
    fake = responses(stream_line(call("run_shell_command", command=command)), stream_line(text("ok")))
    events = await run_gemini(fake, approval_mode="yolo")
    output = check_no_key_out(events, (GEMINI_KEY, OPENAI_KEY, ANTHROPIC_KEY))
    assert "OPENAI_API_KEY" not in output, "the CLI's process never gets another provider's key"
    assert "ANTHROPIC_API_KEY" not in output
