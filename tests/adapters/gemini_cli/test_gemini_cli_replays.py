"""`Replays`: the chunks of a stream the gemini CLI retried mid-answer, folded (pure; the real binary's runs are in
tests/e2e/gemini_cli/test_gemini_cli_stream_retry.py)."""

from __future__ import annotations

from unified._adapters.gemini_cli._replays import MessageEnd, Replays, Shown
from unified.events import TextDelta, WarningEvent


def feed(replays: Replays, *chunks: str) -> str:
    out: list[Shown] = []
    for chunk in chunks:
        out += replays.text(TextDelta(text=chunk, session_id="s"))
    return "".join(i.text for i in out if isinstance(i, TextDelta))


def test_text_that_never_starts_over_goes_straight_out() -> None:
    replays = Replays()
    assert feed(replays, "The answer ", "is The answer.") == "The answer is The answer."
    assert replays.end("The answer is The answer.") == []


def test_a_retry_that_repeats_the_cut_answer_shows_only_what_is_new() -> None:
    replays = Replays()
    assert feed(replays, "Hello there, ", "my ") == "Hello there, my "
    assert feed(replays, "Hello there, ") == ""  # held: it repeats what was shown
    assert feed(replays, "my friend.") == "friend."
    assert replays.end("Hello there, my friend.") == []


def test_attempts_cut_inside_what_was_shown_are_dropped() -> None:
    replays = Replays()
    shown = feed(replays, "Hello there, ", "my ", "Hello there, ", "Hello there, ", "my ", "friend.")
    assert shown == "Hello there, my friend."
    assert replays.end("Hello there, my friend.") == []


def test_held_text_that_continues_the_answer_is_shown_at_its_end() -> None:
    replays = Replays()
    # the model may begin a sentence as it began its answer: held until the chat file's record decides
    assert feed(replays, "Hello there, ", "friend. ", "Hello there, ", "again.") == "Hello there, friend. "
    [rest] = replays.end("Hello there, friend. Hello there, again.")
    assert isinstance(rest, TextDelta)
    assert rest.text == "Hello there, again."


def test_held_text_is_shown_when_nothing_tells_what_the_cli_kept() -> None:
    replays = Replays()
    assert feed(replays, "Hello there, ", "friend. ", "Hello there, ", "again.") == "Hello there, friend. "
    [rest] = replays.end(None)
    assert isinstance(rest, TextDelta)
    assert rest.text == "Hello there, again."


def test_an_answer_that_differs_replaces_what_was_shown() -> None:
    replays = Replays()
    assert feed(replays, "Hello there, ", "Goodbye ", "now.") == "Hello there, Goodbye now."
    end, warning, text = replays.end("Goodbye now.")
    assert isinstance(end, MessageEnd)
    assert isinstance(warning, WarningEvent)
    assert warning.code == "stream_resumed"
    assert isinstance(text, TextDelta)
    assert (text.text, text.session_id) == ("Goodbye now.", "s")


def test_no_kept_answer_after_shown_text_warns() -> None:
    replays = Replays()
    feed(replays, "Hello there, ")
    [warning] = replays.end("")
    assert isinstance(warning, WarningEvent)
    assert "kept none" in warning.message


def test_a_record_that_differs_without_a_sign_of_a_retry_leaves_the_stream_alone() -> None:
    replays = Replays()
    feed(replays, "Hello there.")
    assert replays.end("something else") == []
