"""Red team (secrets) on the real `gemini` binary: what a shell command the model runs can read of the
environment of the Gemini CLI's process, and of unified's own, and what of it reaches the events.

The attack: `env`, then `/proc/$PPID/environ` (the process that started the shell, up to the CLI,
which holds GEMINI_API_KEY), then `/proc/<unified's pid>/environ`. The OpenAI and Anthropic keys of
unified's environment never reach the CLI's process; the Gemini key is replaced in every event."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import call, stream_line, text
from unified.events import Result, ToolResult, UnifiedEvent

pytestmark = pytest.mark.anyio

GEMINI_KEY = "AIzaSyB-g4Tz9Lq2Wm7Xc1Vn5Kb8Hd3Jf6Sp0Ye"
OPENAI_KEY = "sk-proj-Gm5Xq1Zr8Lm3Vt6Kb9Wc2Hd7Jp0Gs4Ya1Ue6Oi3Qw8Er2Ty7Ui5Op9T3BlbkFJAs1Df4Gh7Jk"
ANTHROPIC_KEY = "sk-ant-api03-Pw2Ez7Rt4Yu9Io1Pa6Sd3Fg8Hj5Kl0Zx2Cv7Bn4Mq9Wr1Et6Yu3Io8Pa5Sd0Fg2AA"


def _pieces(secret: str, text: str, size: int = 8) -> list[str]:
    return sorted({secret[i : i + size] for i in range(len(secret) - size + 1) if secret[i : i + size] in text})


async def test_a_shell_command_reading_the_environ_of_the_cli_and_of_unified_gets_no_key_out(
    run_gemini: Callable[..., Awaitable[list[UnifiedEvent]]],
    responses: Callable[..., Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    command = (  # the lines that name a key or token only: the CLI cuts a long output
        "{ env; echo '--- parent'; tr '\\0' '\\n' < /proc/$PPID/environ; "
        f"echo '--- unified'; tr '\\0' '\\n' < /proc/{os.getpid()}/environ; }} | grep -a -i -E 'key|token|---'; "
        "echo '--- end'"
    )
    fake = responses(stream_line(call("run_shell_command", command=command)), stream_line(text("ok")))
    events = await run_gemini(fake, approval_mode="yolo")
    assert isinstance(events[-1], Result)
    output = next(e for e in events if isinstance(e, ToolResult)).output or ""
    assert "--- end" in output, output
    shown = "\n".join(e.model_dump_json() for e in events)
    for secret in (GEMINI_KEY, OPENAI_KEY, ANTHROPIC_KEY):
        assert _pieces(secret, shown) == [], secret
    assert "OPENAI_API_KEY" not in output, "the CLI's process never gets another provider's key"
    assert "ANTHROPIC_API_KEY" not in output
