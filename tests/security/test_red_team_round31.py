"""Red team, round 31: what the model's own patterns cost the host, and read-only shapes held.

Hole (each test marked SUCCEEDED before hangs on the code before its fix):

- Claude Code's Glob permission check (`_protected.glob_links_out`, round 26) turned the model's pattern into a
  Python `re` regex and fullmatched every entry of the workspace it walks with it. `re` backtracks: a pattern of
  16 `*a` in one folder against a folder named with 40 `a`s (and the file in it) ran for minutes (measured:
  `*a` x 8 took 5.8 s, x 10 took 71 s, each two more about ten times longer; 30 `*` or 20 `?*` alike), holding the GIL,
  so every task of the host stopped with it, and the worker thread could not be cancelled. Now RE2
  (`_regex.compile_pattern`), linear in the name: each of them takes under a millisecond; a pattern RE2 will not
  compile within its memory is asked (fail closed).

- every text the redactor looked at for a key's loose forms (a tool's output, each `tool_progress` piece, the events)
  read the lines after a hex offset (`00000000: `) with `_DUMP_TEXT` (`^(.*?)\\s*(?:\\|(.*)\\||>(.*)<)\\s*$|...`):
  quadratic in a line of `|`, `>` or spaces (20,000 `|` after an offset: 7.1 s a call, 5.5 s more for
  `fragment_spans`; the GIL held, so the host stopped). A model's command printing such a line froze the run. Now
  `_redaction._dump_columns` finds the same columns with `str` methods (no mismatch with the old expression over
  300,000 random lines) and `_XXD_TEXT`, which is linear.

Left, measured: `_redaction._URL_QUERY_SECRET` is cubic in a text of `?_?_...` (6,000 characters: 8.5 s) and
`_URL_PASSWORD` / `_URL_TOKEN_USER` quadratic in a run of letters (20,000: 1.4 s); they read the host's httpx log
records (only when it logs httpx at INFO) and option reprs, not a tool's output. `rg -z` and `file -z` stay unasked
reads though they start decompressors found through PATH (fixed names, no program of the model's).

Pins (held before and after): Codex's read-only commands whose options write, run a program or follow links are
asked (`_read_only.not_read_only`); the plain ones beside them stay unasked.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from tests.security.test_red_team_round7 import _claude_answer
from unified._redaction import REDACTED, _dump_columns, redactor
from unified.tools import _protected
from unified.tools._read_only import not_read_only

pytestmark = [pytest.mark.anyio, pytest.mark.unit]

LONG = "a" * 40
DEEP = 24


@pytest.fixture
def hostile_ws(tmp_path: Path) -> Path:
    """A workspace with a folder of a long name (the model may write one, or the repository holds one) with a file in
    it, and a chain of folders `DEEP` deep."""
    ws = tmp_path / "ws"
    (ws / LONG).mkdir(parents=True)
    (ws / LONG / "f.txt").write_text("x")
    chain = ws.joinpath(*(["d"] * DEEP))
    chain.mkdir(parents=True)
    (chain / "f.txt").write_text("x")
    return ws


BACKTRACKING = [
    pytest.param("*a" * 16 + "*b/x", id="star-a-x16"),
    pytest.param("*" * 30 + "b/x", id="thirty-stars"),
    pytest.param("?*" * 20 + "b/x", id="any-star-x20"),
    pytest.param("a*" * 16 + "/**/b/x", id="a-star-then-globstar"),
    pytest.param("*a" * 12 + "*/**/" * 4 + "b/x", id="mixed"),
    pytest.param("a" + "*a" * 16 + "*c/**/x", id="literal-start"),
    pytest.param("*a" * 16 + "*b/lnk/*", id="star-a-then-link-name"),
]


@pytest.mark.parametrize("pattern", BACKTRACKING)
def test_a_glob_pattern_that_backtracks_is_judged_in_linear_time(hostile_ws: Path, pattern: str) -> None:
    """SUCCEEDED before: the check ran for minutes (each killed at 15 s, measured outside pytest), the GIL held. No
    link is in the workspace, so the answer is None, as before, only now at once."""
    assert _protected.glob_links_out(hostile_ws, pattern, [hostile_ws]) is None


@pytest.mark.parametrize("pattern", BACKTRACKING[:4])
async def test_a_claude_code_glob_that_backtracks_is_answered(hostile_ws: Path, pattern: str) -> None:
    """SUCCEEDED before: the permission request for the Glob hung the host. Now it is answered, and allowed as a
    Glob past no link is (round 26's pin)."""
    body, decision = await _claude_answer(hostile_ws, "Glob", {"pattern": pattern})
    assert body == {"behavior": "allow"}, (pattern, decision.reason)


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param("*a" * 16 + "*/lnk/*", id="backtracking-star-folder"),
        pytest.param("**/" * 16 + "lnk/*", id="backtracking-globstar"),
        pytest.param("*/lnk/*", id="star"),
        pytest.param("[a]*/lnk/*", id="class"),
    ],
)
async def test_a_link_out_behind_such_a_pattern_is_still_asked(hostile_ws: Path, tmp_path: Path, pattern: str) -> None:
    """Pin of the fix: RE2 matches what `re` did; a link out of the workspace a wildcard folder leads to is asked."""
    (tmp_path / "elsewhere").mkdir()
    (hostile_ws / LONG / "lnk").symlink_to(tmp_path / "elsewhere")
    body, decision = await _claude_answer(hostile_ws, "Glob", {"pattern": pattern})
    assert body["behavior"] == "deny", (pattern, body)
    assert "link out of the workspace" in str(decision.reason)


def test_a_name_that_is_not_utf8_is_matched_not_raised(tmp_path: Path) -> None:
    """Pin: a folder name with a byte that is not UTF-8 (RE2 takes only UTF-8) is matched as `?` reads it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "elsewhere").mkdir()
    odd = ws / "bad\udcff"
    odd.mkdir()
    (odd / "lnk").symlink_to(tmp_path / "elsewhere")
    assert "link out of the workspace" in str(_protected.glob_links_out(ws, "bad?/lnk/*", [ws]))


def test_a_pattern_too_large_to_compile_is_asked(tmp_path: Path) -> None:
    """Fail closed: a pattern whose regex RE2 refuses to build within its memory is answered with a reason (asked),
    not passed over and not raised."""
    ws = tmp_path / "ws"
    (ws / "a").mkdir(parents=True)
    pattern = "/".join(["a*"] * 600) + "/x"
    assert "too large to check" in str(_protected.glob_links_out(ws, pattern, [ws]))


# Pins: Codex's read-only commands (run unasked when Codex and unified both call them reads)

ASKED = [
    "sort -ox f",
    "sort --out=x f",
    "sort --comp=sh f",
    "rg --pre=sh x",
    "rg -j1 --pre=x y",
    "rg --hostname-b=./x y",
    "grep --dereference-rec x .",
    "tree -ox .",
    "tree --out=x .",
    "tree --fromf x",
    "git grep --open=vim x",
    "git grep -Ovim x",
    "git grep --textc x",
    "git grep x -- :/",
    "sed -n 1p --in=x f",
    "sed -n 1w f",
    "sed -n -e1p f",
    "wc --files0=x",
    "du --files0=x",
    "fd --exec-b touch",
    "fdfind -xtouch",
    "fd -Lx touch",
    "find . -delete",
    "find . -fprint0 x",
    "find . -okdir x ;",
    "find -L .",
    "ls -lL .",
    "du -Lc .",
    "echo hi >| x",
    "echo hi &> x",
    "cat f 2>/dev/tty",
    "cat <(touch x)",
    "cat a|tee x",
]


@pytest.mark.parametrize("command", ASKED)
def test_a_read_only_program_s_writing_or_running_option_is_asked(command: str) -> None:
    """Pin: each writes, runs a program or follows links, whatever its spelling (abbreviated, in a cluster,
    attached)."""
    assert not_read_only(command) is not None


@pytest.mark.parametrize(
    "command", ["sed -n '$p' f", "sed -n 1,2p f g", "grep -rn x .", "find . -name '*.py' -print", "rg -n x", "ls -R ."]
)
def test_plain_reads_stay_unasked(command: str) -> None:
    """Pin: the same programs reading only run unasked."""
    assert not_read_only(command) is None


# The redactor's hex dump columns

KEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
SIZE = 200_000
"""Characters of a hostile line: about 12 minutes of backtracking before the fix (20,000 took 7 s, quadratic)."""

HOSTILE_LINES = [
    pytest.param("00000000: " + "|" * SIZE + "x\n", id="bars"),
    pytest.param("00000000: x" + " " * SIZE + "y\n", id="spaces"),
    pytest.param("00000000: " + "| " * (SIZE // 2) + "x\n", id="bars-and-spaces"),
    pytest.param("00000000: " + ">" * SIZE + "x\n", id="openings"),
]


@pytest.mark.parametrize("text", HOSTILE_LINES)
def test_a_dump_line_that_backtracked_is_read_in_linear_time(text: str) -> None:
    """SUCCEEDED before: each call backtracked for minutes (quadratic in the line), the GIL held: a command's output
    froze the host. It holds no key: it comes back as it was."""
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert clean(text) == text
    assert clean.fragment_spans(text) == []


def test_a_key_in_a_hexdump_text_column_is_still_replaced() -> None:
    """Pin of the fix: `hexdump -C` of a key (its text column framed by `|`) is replaced, as before."""
    data = f"key={KEY}\n".encode()
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{at:08x}  {' '.join(f'{b:02x}' for b in chunk):<47}  |{shown}|")
    text = "\n".join(lines) + "\n"
    assert KEY[:12] not in redactor({"GEMINI_API_KEY": KEY})(text).replace("\n", "")
    assert REDACTED in redactor({"GEMINI_API_KEY": KEY})(text)


OLD_DUMP_TEXT = re.compile(r"^(.*?)\s*(?:\|(.*)\||>(.*)<)\s*$|^([0-9A-Fa-f]{2,}(?: [0-9A-Fa-f]{2,})*) {2,}(.+)$")
"""The expression `_dump_columns` replaced: the reference it must agree with."""


def _old_columns(line: str) -> tuple[tuple[str, int], tuple[str, int]] | None:
    parts = OLD_DUMP_TEXT.match(line)
    if parts is None:
        return None
    if parts[4] is not None:
        return (parts[4], parts.start(4)), (parts[5], parts.start(5))
    which = 2 if parts[2] is not None else 3
    return (parts[1], 0), (parts[which], parts.start(which))


def test_the_columns_are_those_the_old_expression_found() -> None:
    """Pin of the fix: on 20,000 short lines of the characters that matter (seeded), the same columns at the same
    places."""
    chars = "| ><ab0f \t\r\x0b\u2028\u3000."
    rnd = random.Random(31)
    lines = ["".join(rnd.choice(chars) for _ in range(rnd.randint(0, 14))) for _ in range(20_000)]
    lines += ["00 11 22  ab|cd|", "41 42  AB", "x |abc|  ", " >a<", "|", "||", "a|b", "  |x|", "6b 65  key >k<"]
    assert [_dump_columns(line) for line in lines] == [_old_columns(line) for line in lines]
