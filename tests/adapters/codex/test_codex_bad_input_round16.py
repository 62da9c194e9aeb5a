"""Bad input round 16, codex's errors: a crash's message quoted the last stderr line, which is most often the warning
0.171 writes on every run with its home under /tmp ("could not create PATH aliases"), unrelated to the crash: the
line that says what happened is quoted now, the noise skipped, the whole tail still in the details. And a text delta
Codex skipped unread is warned of."""

from __future__ import annotations

import pytest

from tests.adapters.codex.test_codex_translate import note, translator
from unified._adapters.codex._outcome import error_from_exit
from unified.events import TextDelta, WarningEvent

pytestmark = pytest.mark.unit

NOISE = (
    "WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries under "
    'temporary dir "/tmp" (codex_home: AbsolutePathBuf("/tmp/x/codex-home"))'
)


def test_a_crash_quotes_the_line_that_says_what_happened_not_the_path_aliases_warning() -> None:
    tail = f"thread 'main' panicked at core/src/lib.rs:7:\ncalled `Option::unwrap()` on a `None` value\n{NOISE}\n"
    error = error_from_exit(134, tail, "codex app-server exited during the run")
    assert "called `Option::unwrap()` on a `None` value" in error.message, error.message
    assert "PATH aliases" not in error.message
    assert error.details["stderr_tail"] == tail.strip()  # the whole tail


def test_a_crash_with_only_the_warning_on_stderr_quotes_nothing() -> None:
    error = error_from_exit(-9, NOISE, "codex app-server exited during the run")
    assert "PATH aliases" not in error.message, error.message
    assert "killed by signal 9 (SIGKILL" in error.message
    assert error.details["stderr_tail"] == NOISE


def test_an_answer_streamed_without_a_piece_of_its_completed_text_is_warned_of() -> None:
    """Codex skips a text delta whose JSON the model stream cut (the real binary: tests/e2e/codex/
    test_codex_bad_input_round16.py); its item's end carries the whole text. A streamed text that is a prefix of it
    is completed silently, as before (a guard)."""
    t = translator()
    note(t, "item/agentMessage/delta", itemId="msg_1", delta="wo three")
    [warning] = note(t, "item/completed", item={"type": "agentMessage", "id": "msg_1", "text": "one two three"})
    assert isinstance(warning, WarningEvent)
    assert warning.code == "malformed_line"
    assert "codex streamed 8 characters of an answer it completed with 13" in warning.message
    note(t, "item/agentMessage/delta", itemId="msg_2", delta="one ")
    [rest] = note(t, "item/completed", item={"type": "agentMessage", "id": "msg_2", "text": "one two"})
    assert isinstance(rest, TextDelta)
    assert rest.text == "two"
