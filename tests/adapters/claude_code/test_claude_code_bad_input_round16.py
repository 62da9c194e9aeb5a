"""Bad input round 16, the claude CLI's errors: a crash's message quoted the last stderr line, which is most often the
note 2.1 writes on every run with a model name it does not know ("[claude-code:unrecognized_model]"), unrelated to
the crash: the line that says what happened is quoted now, the noise skipped, the whole tail still in the
details."""

from __future__ import annotations

import pytest

from unified._adapters.claude_code._outcome import error_from_exit

pytestmark = pytest.mark.unit

NOISE = '[claude-code:unrecognized_model] {"model":"claude-fake-model","query_source":"sdk"}'


def test_a_crash_quotes_the_line_that_says_what_happened_not_the_model_note() -> None:
    tail = f"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n{NOISE}\n"
    error = error_from_exit(134, tail, "during the run")
    assert error.message.endswith(": FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory")
    assert "unrecognized_model" not in error.message
    assert error.details["stderr_tail"] == tail.strip()  # the whole tail


def test_a_crash_with_only_the_note_on_stderr_quotes_nothing() -> None:
    error = error_from_exit(-9, NOISE, "during the run")
    assert "unrecognized_model" not in error.message, error.message
    assert error.message.endswith("during the run")
