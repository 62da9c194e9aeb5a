"""The stream-json transport's prompt, on the pinned binary: it goes to `gemini -p` on stdin, not on its command line.

On the command line a prompt was readable by every local user (`ps`, `/proc/<pid>/cmdline`) and by the model's
own commands; one over 128 KiB (Linux's longest argument) failed to start with "Argument list too long" and a hint
to reinstall the CLI; one holding a NUL byte could not start at all. The CLI itself ends without an answer once its
echo of the prompt is over 64 KiB (measured with 0.61; ACP takes such a prompt): that prompt is refused before the
run, naming the transport that takes it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import call, stream_line, text
from unified.events import ErrorEvent, Result, SessionStarted, ToolResult, UnifiedEvent

Run = Callable[..., Awaitable[list[UnifiedEvent]]]
Responses = Callable[..., Path]
STREAM_JSON = {"transport": "stream-json"}
MARKER = "prompt-marker-Qz8Xw3Lm6Vb1Nc"

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_the_prompt_is_not_on_the_command_line_the_model_s_commands_read(
    run_gemini: Run, responses: Responses
) -> None:
    fake = responses(
        stream_line(call("run_shell_command", command="echo '--- cmdline'; tr '\\0' ' ' < /proc/$PPID/cmdline")),
        stream_line(text("done")),
    )
    events = await run_gemini(
        fake, prompt=f"show me your command line {MARKER}", approval_mode="yolo", backend_options=STREAM_JSON
    )
    result = events[-1]
    assert isinstance(result, Result), events
    assert result.status == "success", result.error
    [shown] = [e.output or "" for e in events if isinstance(e, ToolResult)]
    assert "--- cmdline" in shown, shown
    assert "--output-format stream-json" in shown, shown  # it printed the CLI's command line
    assert MARKER not in shown, shown


@pytest.mark.parametrize("prompt", ["long " * 12_000, "a NUL\0in the middle"], ids=["60-KB", "nul-byte"])
async def test_a_prompt_the_command_line_could_not_carry_runs(
    run_gemini: Run, responses: Responses, prompt: str
) -> None:
    events = await run_gemini(responses(stream_line(text("ok"))), prompt=prompt, backend_options=STREAM_JSON)
    result = events[-1]
    assert isinstance(result, Result), events
    assert result.status == "success", result.error
    assert result.final_text == "ok"


@pytest.mark.parametrize("size", [70_000, 200_000], ids=["over-64-KiB", "over-128-KiB"])
async def test_a_prompt_the_cli_cannot_take_is_refused_naming_the_transport_that_can(
    run_gemini: Run, responses: Responses, size: int
) -> None:
    events = await run_gemini(responses(stream_line(text("ok"))), prompt="x" * size, backend_options=STREAM_JSON)
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "bad_request", error
    assert f"{size:,} bytes" in error.message
    assert "acp transport" in error.message
    assert not any(isinstance(e, SessionStarted) for e in events)  # refused before the CLI started
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
