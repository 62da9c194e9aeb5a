"""Bad input round 17, the line framing: a stream that ends in the middle of a line. The line was dropped without a
word (`gemini -p` exits before a pipe has taken what it wrote past 64 KiB, its answer with it: the run said only
"ended without a result"); now `LineFramer.end` gives it as a `MalformedLine` (`framing.CUT_OFF`), which the process
raises from `receive` at the stream's end, a warning like any other dropped line (the stream-json run, told it was
its answer, says so: tests/e2e/gemini_cli/test_gemini_cli_bad_input_round17.py)."""

from __future__ import annotations

import pytest

from unified._binary.framing import CUT_OFF, LineFramer


def test_a_line_the_stream_ended_in_is_given_at_the_end_with_its_size_and_head() -> None:
    framer = LineFramer()
    assert list(framer.feed(b'{"a":1}\n{"type":"message","content":"cut')) == ['{"a":1}']
    cut = framer.end()
    assert cut is not None
    assert (cut.reason, cut.size, cut.head) == (CUT_OFF, 32, '{"type":"message","content":"cut')
    assert framer.end() is None  # once


@pytest.mark.parametrize("rest", [b"", b"  \r", b"{}\n"])
def test_a_stream_that_ended_after_its_line_or_in_blanks_has_nothing_cut(rest: bytes) -> None:
    framer = LineFramer()
    list(framer.feed(b'{"a":1}\n' + rest))
    assert framer.end() is None


def test_a_line_over_the_cap_the_stream_ended_in_is_given_with_its_whole_size() -> None:
    framer = LineFramer(limit=16)
    assert list(framer.feed(b'{"type":"message"' + b"x" * 30)) == []
    cut = framer.end()
    assert cut is not None
    assert (cut.reason, cut.size) == (CUT_OFF, 47)
    assert cut.head.startswith('{"type":"message"')
