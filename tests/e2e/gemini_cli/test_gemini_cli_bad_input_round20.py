"""Bad input round 20, gemini-cli (the real binary, recorded responses): a prompt of 10 MB. Pin: the CLI counts its
tokens and sends nothing, and the run ends `bad_request` saying what to do (claude-code said "the CLI failed" for the
same: tests/e2e/claude_code/test_claude_code_bad_input_round20.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.bad_binaries import the_error
from tests.e2e.gemini_cli.gemini_cli_helpers import Run, stream_line, text

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_prompt_of_10_mb_is_a_bad_request_saying_what_to_do(
    run_gemini: Run, responses: Callable[..., Path]
) -> None:
    prompt = ("ten megabytes of words " * 500_000)[: 10 << 20]
    events = await run_gemini(responses(stream_line(text("never"))), prompt=prompt)
    error = the_error(events)
    assert (error.code, error.retryable) == ("bad_request", False)
    assert "larger than the model's context window" in error.message
    assert "send a shorter prompt" in error.message
