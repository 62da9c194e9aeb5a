"""Text that UTF-8 can carry: what comes in from outside made so once, where it comes in.

A Python `str` can hold a lone surrogate (U+D800-U+DFFF) that no UTF-8 can: JSON's `"\\ud83d"` escape
without its pair parses into one (a node CLI's `JSON.stringify` writes such an escape for half an emoji
cut by a `slice`; a hostile server may send one on purpose), and a file name that is not UTF-8 reads
as surrogate escapes (`os.fsdecode`). Such a string fails wherever it is encoded next: the request
that carries it back to the model, the session file that keeps it (the run ended `internal_error`,
its session unsaved), a consumer's `event.model_dump_json()`. Each is replaced by U+FFFD, as a
terminal shows a byte that is not UTF-8, where it enters: a binary's line (`_binary.framing`), an
API's event (the generate-content and interactions streams), a tool's output (`tools._runtime`), a
stored session's record and the CLIs' own session files as they are read (`loaded_well_formed`: a node
CLI writes its session files with the same `JSON.stringify`, and `unified sessions list` exited 70).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from unified._limits import MAX_JSON_DEPTH

__all__ = [
    "ACTING",
    "INVISIBLE",
    "choose_one_of",
    "escaped",
    "escapes_surrogates",
    "first_problem",
    "found_json",
    "json_type",
    "loaded_well_formed",
    "nearest",
    "one_line",
    "well_formed",
    "well_formed_json",
]

ACTING = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
"""Besides the C0 controls (each reader says which of those it keeps: a tab, a line feed), the characters a terminal or
a reader acts on instead of showing, as a regex class's ranges: DEL, the C1 controls, the Unicode line and paragraph
separators, the bidi marks (the Arabic letter mark U+061C too, round 33), overrides and isolates."""

INVISIBLE = (
    "\xa0\xad\u034f\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u202a-\u202f\u205f-\u206f\u3000\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
"""The characters that show as nothing, or as a space a reader takes for the ASCII one, as a regex class's ranges:
Unicode's default-ignorable code points (zero-width space, non-joiner and joiner, word joiner, soft hyphen, the
Hangul fillers, variation selectors, tags) and the other spaces (no-break, en, em, ideographic, ...). A name that
holds one looks like another: `.git<U+200D>/hooks` reads as `.git/hooks`, `conf<U+200B>ig.py` as `config.py` (round
36). Escaped where a person or the model must tell names apart (a listing, a permission prompt), not in answer text,
where a joiner and a variation selector make an emoji."""

_SURROGATE = re.compile("[\ud800-\udfff]")
"""A code point no UTF-8 holds. In a `str` every surrogate is alone: a JSON pair parses into one character."""


def well_formed(text: str) -> str:
    """`text` with each lone surrogate (a surrogate escape of a byte that is not UTF-8 included) replaced
    by U+FFFD. ASCII text, most text, is answered without a scan."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def escaped(text: str, pattern: re.Pattern[str]) -> str:
    """`text` with each character `pattern` finds written in place as a Python string literal writes it (`\\r`,
    `\\x1b`, `\\u200d`, `\\U000e0041`; a printable one it would leave, a Hangul filler, as `\\u3164`): what it holds is
    read, never obeyed and never missed. The one escape of the CLI's `visible`, the tools' `shown_text` and their
    permission prompts. A backslash already there is left as it is."""
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape_one, text)


def _escape_one(match: re.Match[str]) -> str:
    """One matched character as `escaped` writes it."""
    char = match[0]
    literal = repr(char)[1:-1]
    if literal != char:
        return literal
    code = ord(char)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def well_formed_json(value: Any, depth: int = MAX_JSON_DEPTH) -> Any:
    """`value` (parsed JSON) with every string, keys included, `well_formed`: a copy. Past `depth` levels it
    is left as it is (never a RecursionError): what nests that deep is refused wherever it is read
    (`limits.too_deep`)."""
    if isinstance(value, str):
        return well_formed(value)
    if depth <= 0:
        return value
    if isinstance(value, dict):
        return {well_formed_json(key, 0): well_formed_json(item, depth - 1) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [well_formed_json(item, depth - 1) for item in value]
    return value


def escapes_surrogates(raw: str) -> bool:
    """Whether JSON text `raw` may parse into a lone surrogate: only a `\\uD800`-`\\uDFFF` escape makes one
    (two substring scans in C, so the walk of `well_formed_json` runs only for the rare line that has one)."""
    return "\\ud" in raw or "\\uD" in raw


def loaded_well_formed(raw: str | bytes, value: Any) -> Any:
    """`value`, parsed from the JSON text `raw`, `well_formed_json` when `raw` escapes a surrogate; else `value`
    itself (no walk)."""
    escaped = (b"\\ud" in raw or b"\\uD" in raw) if isinstance(raw, bytes) else escapes_surrogates(raw)
    return well_formed_json(value) if escaped else value


def json_type(value: object) -> str:
    """The JSON type of a parsed value, as a message says it ("a number", "an array", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


def found_json(value: object) -> str:
    """A parsed JSON value as an error says it found it: a number, `true`, `false` or `null` as written (`1.0` where a
    version goes, `-3` for a count), any other by its type alone (`json_type`: a string may hold a key, never quoted).
    """
    if value is None or isinstance(value, bool | int | float):
        written = json.dumps(value)
        return written if len(written) <= 40 else f"{json_type(value)} of {len(written)} characters"
    return json_type(value)


def nearest(value: str, choices: Iterable[str]) -> str | None:
    """The one of `choices` that `value` most likely misspells (case and spaces aside), or None: what an error
    refusing a name offers back, so the reader need not spot it in a list."""
    import difflib  # only for the message: `import unified` stays without it

    folded = {choice.lower(): choice for choice in choices}
    near = difflib.get_close_matches(value.strip().lower(), list(folded), n=1)
    return folded[near[0]] if near else None


def choose_one_of(value: str, choices: Iterable[str]) -> str:
    """The hint of an error refusing `value` as no one of `choices`: the nearest first, then them all. An unknown
    backend (`claude`, `generate-contnet`) listed every backend and left the reader to spot the one meant (bad
    input round 21)."""
    listed = list(choices)
    near = nearest(value, listed)
    return f"{f'did you mean {near!r}? ' if near else ''}choose one of: {', '.join(listed)}"


def one_line(text: str) -> str:
    """`text` on one line: a message built for a log or a terminal (a list, a quoted stderr, an HTTP client's error
    that runs on over lines) joined with `; `, but for a line that introduces the next (ends with `:`), which a space
    follows ("matches 2 sessions:; 1a2b..." before round 21)."""
    joined = ""
    for line in filter(None, (line.strip() for line in text.splitlines())):
        joined += ((" " if joined.endswith(":") else "; ") + line) if joined else line
    return joined


def first_problem(exc: Exception) -> str:
    """What is wrong, in one line: a ValidationError's first line is only "1 validation error for Script", so its
    first error is named by where it is and what it says (`turns.0.model.text: Input should be a valid string`);
    another error's first line, or its type's name when it says nothing."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError) and exc.errors():
        errors = exc.errors(include_url=False)
        where = ".".join(str(part) for part in errors[0]["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"{where}: {errors[0]['msg']}{more}" if where else f"{errors[0]['msg']}{more}"
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
