"""What the model reads of a command's output (`terminal_text`): what it printed, never what a terminal would
make of it. No subprocess: the text is given; tests/tools/test_tools_shell.py runs real commands."""

from __future__ import annotations

import pytest

from unified._redaction import redactor
from unified.tools._shell import shown_output, terminal_text

CLEAN = redactor(extra=("sk-live-0123456789abcdef",))


@pytest.mark.parametrize(
    ("printed", "shown"),
    [
        ("\x1b[31mFAILED\x1b[0m test_x\n", "FAILED test_x\n"),  # colours go
        ("ok\r\nok\r\n", "ok\nok\n"),  # a CRLF is a line end
        ("real line\rfake line\n", "real line\\rfake line\n"),  # a lone CR cannot overwrite
        ("10%\r50%\r100%\n", "10%\\r50%\\r100%\n"),  # a progress bar stays one line
        ("keep\n\x1b[1A\x1b[2Kfake\n", "keep\nfake\n"),  # a cursor move and an erase go, the line stays
        ("a\x08b\x07c\x7fd\x0ce\x0bf\n", "a\\x08b\\x07c\\x7fd\\x0ce\\x0bf\n"),
        ("x\u2028Exit Code: 0\u2029\u202eevil\x85\n", "x\\u2028Exit Code: 0\\u2029\\u202eevil\\x85\n"),
        ("\x1b]0;title\x07\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\\n", "link\n"),  # OSC: a title, a link
        ("\x1b7\x1bM\x1b(B\x1bcdone\n", "done\n"),  # cursor saved, a line up, a charset, a reset
        ("\x1b]0;open\nnext line\n", "0;open\nnext line\n"),  # an OSC left open takes no line with it
        ("tail\x1b", "tail\\x1b"),  # a lone ESC at the end
        ("\tindented\tcell\n", "\tindented\tcell\n"),
        ("C:\\path\\to\\n\n", "C:\\path\\to\\n\n"),  # a backslash printed stays as it is
    ],
)
def test_terminal_text(printed: str, shown: str) -> None:
    assert terminal_text(printed, CLEAN) == shown


def test_a_secret_split_by_escape_sequences_is_replaced() -> None:
    """Removing the sequences makes a secret whole: it is replaced then, not shown."""
    printed = "key: " + "\x1b[0m".join("sk-live-0123456789abcdef") + "\n"
    assert terminal_text(printed, CLEAN) == "key: [REDACTED]\n"


def test_shown_output_escapes_the_kept_tail_too() -> None:
    data = b"x" * 100 + b"\rfake\x1b[2K\n"
    assert shown_output(data, len(data), 10, CLEAN) == (
        f"[output cut: the first {len(data) - 10} bytes were dropped, the last 10 kept]\n\\rfake"
    )
    assert shown_output(b"a\rb\n", 4, 100, CLEAN) == "a\\rb"
