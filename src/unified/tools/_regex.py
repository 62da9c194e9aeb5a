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
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

import re2

__all__ = [
    "CACHED_PATTERNS",
    "CACHED_PROGRAM_MAX",
    "MAX_MEMORY",
    "Match",
    "Pattern",
    "PatternError",
    "compile_pattern",
    "matchable",
]

MAX_MEMORY = 8 * 1024 * 1024
"""What one compiled pattern may use for its automata; a larger one fails to compile (an error). RE2's
own default, near ripgrep's 10 MB: compiling holds the GIL, and at 64 MiB the nine characters
`\\pL{1000}` compiled to 1.2 million instructions in 1.5 s, every task of the host stopped meanwhile
(now refused in 0.1 s; the largest pattern that compiles takes about 0.4 s)."""

CACHED_PATTERNS = 256
"""Compiled patterns kept for reuse (a search repeated, the same ignore globs on every call)."""
CACHED_PROGRAM_MAX = 20_000
"""Instructions of the largest compiled pattern kept, and characters of the longest: a larger one is
compiled for its call and freed after (each `\\pL{N}` of a series held 9 MB in the cache: 256 of them,
over 2 GB). Patterns people write are a few hundred at most."""


class Match(Protocol):
    def group(self, index: int | str = 0) -> str | None: ...


class Pattern(Protocol):
    @property
    def programsize(self) -> int: ...

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


_REGEXP: Callable[[str, re2.Options], Pattern] = getattr(re2, "_Regexp", re2.compile)
"""The compiled pattern's class, not `re2.compile`: that keeps the last 128 patterns compiled whatever their
size (a cache of its own, beside `_cache`). `_Regexp` is the bindings' private name (google-re2 1.1); a
version without it still works through `re2.compile`, only with that second cache."""

_cache: OrderedDict[str, Pattern] = OrderedDict()
_cache_lock = threading.Lock()


def compile_pattern(pattern: str) -> Pattern:
    """The compiled pattern; `PatternError` with RE2's reason when it is not a valid one. The last
    `CACHED_PATTERNS` small ones (`CACHED_PROGRAM_MAX`) are kept, as `functools.lru_cache` would."""
    with _cache_lock:
        found = _cache.get(pattern)
        if found is not None:
            _cache.move_to_end(pattern)
            return found
    compiled = _compiled(pattern)
    if compiled.programsize <= CACHED_PROGRAM_MAX and len(pattern) <= CACHED_PROGRAM_MAX:
        with _cache_lock:
            _cache[pattern] = compiled
            while len(_cache) > CACHED_PATTERNS:
                _cache.popitem(last=False)
    return compiled


def _compiled(pattern: str) -> Pattern:
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError as exc:  # RE2 takes UTF-8 only: a lone surrogate (`"\ud800"` in JSON)
        raise PatternError(f"not valid Unicode text (a lone surrogate at character {exc.start})") from None
    try:
        compiled: Pattern = _REGEXP(pattern, _options())
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
