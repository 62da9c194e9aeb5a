"""Regular expressions a model (or a file it wrote) supplies: RE2, never Python's `re`.

Python's `re` backtracks, so a pattern like `(a+)+$` on a long line runs for hours, holding the GIL
the whole time: no timeout, no cancellation and no other task of the host runs meanwhile. RE2
(the `google-re2` package) matches in time linear in the text, in bounded memory, and its syntax
is the one the tools document (the Rust `regex` crate's, which ripgrep and the Gemini CLI use:
`(?<name>..)`, `\\z`, `[[:alpha:]]`, `\\p{L}`, `(?i)`; no backreferences or lookaround). search,
glob, list_dir's ignore patterns and the ignore files' patterns (through pathspec's re2 backend) all
compile here.
"""

from __future__ import annotations

import functools
from typing import Protocol

import re2

__all__ = ["MAX_MEMORY", "Match", "Pattern", "PatternError", "compile_pattern", "matchable"]

MAX_MEMORY = 64 * 1024 * 1024
"""What one compiled pattern may use for its automata; a larger one fails to compile (an error)."""


class Match(Protocol):
    def group(self, index: int | str = 0) -> str | None: ...


class Pattern(Protocol):
    def search(self, text: str) -> Match | None: ...

    def fullmatch(self, text: str) -> Match | None: ...

    def match(self, text: str) -> Match | None: ...


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message says why."""


@functools.cache
def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every syntax error on stderr
    options.max_mem = MAX_MEMORY
    return options


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Pattern:
    """The compiled pattern; `PatternError` with RE2's reason when it is not a valid one."""
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError as exc:  # RE2 takes UTF-8 only: a lone surrogate (`"\ud800"` in JSON)
        raise PatternError(f"not valid Unicode text (a lone surrogate at character {exc.start})") from None
    try:
        compiled: Pattern = re2.compile(pattern, options=_options())
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        raise PatternError(reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)) from None
    return compiled


def matchable(text: str) -> str:
    """`text` as RE2 (and pathspec's RE2 backend) can take it. A file name that is not UTF-8 reaches
    Python with its bytes as surrogate escapes (`b"bad\\xff"` is `"bad\\udcff"`), which RE2 refuses
    (UnicodeEncodeError) for the whole walk; each such byte becomes U+FFFD, one character, as `?` expects."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text
