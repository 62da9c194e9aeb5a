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
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import re2

__all__ = [
    "CACHED_PATTERNS",
    "CACHED_PROGRAM_MAX",
    "CASE_RANGE_MAX",
    "MAX_MEMORY",
    "RULE_FALLBACK_TEXT_MAX",
    "Match",
    "Pattern",
    "PatternError",
    "RulePattern",
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


RULE_FALLBACK_TEXT_MAX = 2_000
"""Characters of the longest text a caller's pattern RE2 cannot express (`RulePattern`) is searched in with
Python's `re`; a longer text is not searched (the caller's rule is then read as unknown: `search` answers None)."""

_UNTRANSLATABLE = {
    "ASSERT",
    "ASSERT_NOT",
    "GROUPREF",
    "GROUPREF_EXISTS",
    "GROUPREF_IGNORE",
    "ATOMIC_GROUP",
    "POSSESSIVE_REPEAT",
}
_ONE_CHARACTER = {"LITERAL", "NOT_LITERAL", "ANY", "IN", "CATEGORY"}
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}


_CODED_CHARACTER = re.compile(r"\\[xuUN0-7]")
"""An escape that names a character by its code (`RulePattern.cased`); an escaped backslash before it is read so too
(never a miss)."""


class _Untranslatable(Exception):
    """A construct RE2 has no exact equivalent of (lookaround, backreference, Unicode `\\b`, a count over 1,000)."""


class RulePattern:
    """A regex the *caller* wrote (a policy rule's `argsPattern`), searched in text the model controls, with Python
    `re`'s meaning (what the docs promise: `\\w` and `\\s` are Unicode, `(?i)` folds as Python folds) but RE2's
    linear time. The pattern is parsed by Python's own parser and written out again as RE2 syntax, each one-character
    item (a class, `\\w`, `.`, a letter under `(?i)`) as the exact set of characters Python's `re` matches with it
    (found by letting `re` scan every code point once), so a sloppy `(a+)+$` or `.*secret.*` on a 1 MB argument
    takes milliseconds, not hours with the event loop held. What RE2 cannot express (lookaround, backreferences,
    Unicode `\\b`, atomic groups) is searched with `re` in texts of at most `RULE_FALLBACK_TEXT_MAX` characters,
    and such a pattern may not nest repeats (`(a+)+`: exponential in `re`); a longer text answers None (unknown),
    which the policy reads against the caller: an allow rule does not apply, a deny or ask rule is a doubt (asked)."""

    __slots__ = ("_caseless", "_linear", "_stand_in", "python")

    def __init__(self, source: str, *, caseless: bool = False) -> None:
        """`caseless`: the copy `caseless()` makes, which reads every letter of the pattern whatever its case."""
        self._caseless: RulePattern | None = self if caseless else None
        try:
            self.python: re.Pattern[str] = re.compile(source, re.IGNORECASE if caseless else 0)
        except re.error as exc:
            raise PatternError(str(exc)) from None
        except (OverflowError, RecursionError, MemoryError):
            raise PatternError("too large or too deeply nested") from None
        self._linear: Pattern | None
        self._stand_in = False
        try:
            self._linear = compile_pattern(_translated(source, caseless=caseless))
            self._stand_in = _fffd_stands_for_surrogates(source)
        except (_Untranslatable, PatternError):
            self._linear = None
            if _nests_repeats(source):
                raise PatternError(
                    "RE2 cannot read it (a lookaround, backreference, \\b or count over 1000) and it nests repeats, "
                    "which Python's re can take hours on: write it without one or the other"
                ) from None

    @property
    def pattern(self) -> str:
        return self.python.pattern

    @property
    def linear(self) -> bool:
        """Whether RE2 searches it (else `re`, in short texts only)."""
        return self._linear is not None

    @property
    def cased(self) -> bool:
        """Whether the pattern may name a letter in capitals: one written so (`Secrets/`; `\\S` too: a cheap test,
        never a miss) or by its code (`\\x53ecrets/`, `\\u0053`, `\\N{...}`, `\\123`)."""
        return self.pattern != self.pattern.lower() or _CODED_CHARACTER.search(self.pattern) is not None

    def caseless(self) -> RulePattern:
        """The pattern read whatever the case of the text's letters and its own, made once: what a deny or ask rule
        written in capitals (`Secrets/`) is searched with in the folded spellings of a call's paths, where
        `secrets/key` is the same file on a volume that folds case (round 40: it matched its own case only). Each
        letter becomes the class of its case forms (`[Ss]`, `k` with the Kelvin sign), found by `str` methods: a
        `(?i)` copy, translated as `RulePattern` translates one (`re` scanning every code point per letter), cost
        20-355 ms per rule (round 39)."""
        if self._caseless is None:
            self._caseless = RulePattern(self.pattern, caseless=True)
        return self._caseless

    def search(self, text: str) -> bool | None:
        """Whether the pattern occurs in `text`; None when that is not known (a text too long for `re`).

        A text with a lone surrogate (a model's JSON can carry `"\\ud800"`), which RE2 cannot take, is searched
        by RE2 with each surrogate as U+FFFD when the pattern cannot tell one from the other (`_stand_in`: every
        one-character item matches both or neither, as `.`, `\\W`, `[^/]`, `\\w` do): before, such a text past
        `RULE_FALLBACK_TEXT_MAX` characters was not searched, and a deny rule that names what it holds was asked."""
        if self._linear is not None and "\n" not in text:
            if _utf8(text):
                return self._linear.search(text) is not None
            if self._stand_in:
                return self._linear.search(_SURROGATE.sub("\ufffd", text)) is not None
        if len(text) > RULE_FALLBACK_TEXT_MAX:
            return None
        return self.python.search(text) is not None

    def __repr__(self) -> str:
        return f"RulePattern({self.pattern!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RulePattern) and other.pattern == self.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)


def _utf8(text: str) -> bool:
    """Whether RE2 can take `text` as it is (no lone surrogate, which a model's JSON can carry: `"\\ud800"`)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SURROGATE = re.compile("[\ud800-\udfff]")


def _fffd_stands_for_surrogates(source: str) -> bool:
    """Whether every one-character item of the pattern matches all of the surrogates and U+FFFD, or none of
    them: then a text's surrogates may be searched as U+FFFD with the same answer (`RulePattern.search`)."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    probe = _every_code_point()[0xD800:0xE000] + "\ufffd"
    parsed = _parser.parse(source)

    def same(op: Any, av: Any, flags: int) -> bool:
        sub = _parser.SubPattern(parsed.state, [(op, av)])
        matched = sum(1 for _ in _compiler.compile(sub, flags).finditer(probe))
        return matched in (0, len(probe))

    def walk(items: Any, flags: int) -> bool:
        for op, av in items:
            name = str(op)
            if name in _ONE_CHARACTER and not same(op, av, flags):
                return False
            if name in _REPEATS and not walk(av[2].data, flags):
                return False
            if name == "BRANCH" and not all(walk(branch.data, flags) for branch in av[1]):
                return False
            if name == "SUBPATTERN" and not walk(av[3].data, (flags | av[1]) & ~av[2]):
                return False
        return True

    return walk(parsed.data, parsed.state.flags)


def _translated(source: str, *, caseless: bool = False) -> str:
    from re import _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(source)
    return _emit(parsed.data, parsed.state.flags, parsed.state, caseless)


def _emit(items: list[tuple[Any, Any]], flags: int, state: Any, caseless: bool = False) -> str:
    from re import _constants  # type: ignore[attr-defined]

    out: list[str] = []
    for op, av in items:
        name = str(op)
        if name in _UNTRANSLATABLE:
            raise _Untranslatable(name)
        if name in _ONE_CHARACTER:
            out.append(_character_set(op, av, flags, state, caseless))
        elif name == "SUBPATTERN":
            _group, add, delete, inner = av
            out.append(f"(?:{_emit(inner.data, (flags | add) & ~delete, state, caseless)})")
        elif name == "BRANCH":
            out.append("(?:" + "|".join(_emit(branch.data, flags, state, caseless) for branch in av[1]) + ")")
        elif name in _REPEATS:
            low, high, inner = av
            if (high != _constants.MAXREPEAT and high > 1000) or low > 1000:
                raise _Untranslatable("count")
            count = (
                "*"
                if (low, high) == (0, _constants.MAXREPEAT)
                else (
                    "+"
                    if (low, high) == (1, _constants.MAXREPEAT)
                    else (f"{{{low},}}" if high == _constants.MAXREPEAT else f"{{{low},{high}}}")
                )
            )
            lazy = "?" if name == "MIN_REPEAT" else ""
            out.append(f"(?:{_emit(inner.data, flags, state, caseless)}){count}{lazy}")
        elif name == "AT":
            at = str(av)
            multiline = bool(flags & re.MULTILINE)
            if at == "AT_BEGINNING_STRING" or (at == "AT_BEGINNING" and not multiline):
                out.append(r"\A")
            elif at == "AT_BEGINNING":
                out.append("(?m:^)")
            elif at == "AT_END_STRING":
                out.append(r"\z")
            elif at == "AT_END":
                # Python's `$` also matches before a last "\n"; `RulePattern.search` sends RE2 no text with one
                out.append("(?m:$)" if multiline else r"\z")
            elif at in ("AT_BOUNDARY", "AT_NON_BOUNDARY") and flags & re.ASCII:
                out.append(r"\b" if at == "AT_BOUNDARY" else r"\B")
            else:
                raise _Untranslatable(at)
        else:
            raise _Untranslatable(name)
    return "".join(out)


def _character_set(op: Any, av: Any, flags: int, state: Any, caseless: bool = False) -> str:
    """One one-character item as RE2 reads it; `caseless` (`RulePattern.caseless`): with each letter's case forms."""
    ignoring = flags & re.IGNORECASE
    if str(op) == "LITERAL" and not (ignoring and chr(av).lower() != chr(av).upper()):
        forms = _case_forms(av) if caseless else [av]
        return _escaped(av) if len(forms) == 1 else f"[{''.join(_escaped(form) for form in forms)}]"
    if str(op) == "IN" and not ignoring and {str(kind) for kind, _ in av} <= {"LITERAL", "RANGE", "NEGATE"}:
        # letters and ranges alone mean the same to both (`[^/]` matches "\n" in both): no scan
        negate = "^" if av and str(av[0][0]) == "NEGATE" else ""
        items = [
            _escaped(value) if str(kind) == "LITERAL" else f"{_escaped(value[0])}-{_escaped(value[1])}"
            for kind, value in av
            if str(kind) != "NEGATE"
        ]
        if caseless:
            items += [_escaped(form) for form in _class_case_forms(av)]
        if items and not any(_has_surrogate(kind, value) for kind, value in av):  # RE2 reads no surrogate
            return f"[{negate}{''.join(items)}]"
    if caseless and str(op) in ("NOT_LITERAL", "IN"):
        flags |= re.IGNORECASE  # rare (`[^S]`, `[\\dA-F]`): `re` scans every code point once, as for a `(?i)`
    return _code_point_class(op, av, flags & (re.IGNORECASE | re.DOTALL | re.ASCII | re.UNICODE), state)


CASE_RANGE_MAX = 4_096
"""The widest range of a class whose letters' other cases `RulePattern.caseless` adds one by one (`[A-Z]` gets
`a-z`); a wider one (`[\\x00-\\uffff]`) holds both cases of most letters already."""


def _case_forms(code: int) -> list[int]:
    """The code points `re`'s `(?i)` takes for `code`: its lower, upper, title and folded forms, and the ones `re`
    adds (`re._casefix`: the Kelvin sign for `k`, the long s for `s`), `code` first."""
    from re import _casefix  # type: ignore[attr-defined]

    char = chr(code)
    found = [code]
    for other in (char.lower(), char.upper(), char.title(), char.casefold()):
        if len(other) == 1 and ord(other) not in found:
            found.append(ord(other))
    for form in list(found):
        found += [extra for extra in _casefix._EXTRA_CASES.get(form, ()) if extra not in found]
    return found


def _class_case_forms(av: Any) -> list[int]:
    """The other case forms of a simple class's letters and of each letter of its ranges (`CASE_RANGE_MAX`)."""
    codes: list[int] = []
    for kind, value in av:
        if str(kind) == "LITERAL":
            codes.append(value)
        elif str(kind) == "RANGE" and value[1] - value[0] <= CASE_RANGE_MAX:
            codes.extend(range(value[0], value[1] + 1))
    return [form for code in codes for form in _case_forms(code)[1:] if not 0xD800 <= form <= 0xDFFF]


def _has_surrogate(kind: Any, value: Any) -> bool:
    if str(kind) == "LITERAL":
        return bool(0xD800 <= value <= 0xDFFF)
    return str(kind) == "RANGE" and value[0] <= 0xDFFF and value[1] >= 0xD800


def _code_point_class(op: Any, av: Any, flags: int, state: Any) -> str:
    """The RE2 class of exactly the code points Python's `re` matches with this one-character item, found by
    letting `re` scan every code point (each run of them is one range)."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    key = (str(op), repr(av), flags)
    with _cache_lock:
        found = _classes.get(key)
    if found is None:
        sub = _parser.SubPattern(state, [(op, av)])
        runs = _parser.SubPattern(state, [(_parser.MAX_REPEAT, (1, _parser.MAXREPEAT, sub))])
        spans = [run.span() for run in _compiler.compile(runs, flags).finditer(_every_code_point())]
        found = _ranges_class([(start, end - 1) for start, end in spans])
        with _cache_lock:
            _classes[key] = found
            while len(_classes) > CACHED_PATTERNS:
                _classes.popitem(last=False)
    return found


_classes: OrderedDict[tuple[str, str, int], str] = OrderedDict()


def _ranges_class(ranges: list[tuple[int, int]]) -> str:
    parts: list[str] = []
    for start, end in ranges:
        # RE2 reads UTF-8: no surrogates (texts with one go to `re`: `RulePattern.search`)
        for low, high in ((start, min(end, 0xD7FF)), (max(start, 0xE000), end)):
            if low <= high:
                parts.append(_escaped(low) if low == high else f"{_escaped(low)}-{_escaped(high)}")
    return f"[{''.join(parts)}]" if parts else r"[^\x00-\x{10FFFF}]"


def _escaped(code: int) -> str:
    return f"\\x{{{code:X}}}"


@functools.cache
def _every_code_point() -> str:
    import array

    return array.array("I", range(0x110000)).tobytes().decode("utf-32-le", "surrogatepass")


def _nests_repeats(source: str) -> bool:
    """Whether a repeat of more than one holds another repeat or an alternation (`(a+)+`, `(a|a)*`): the
    shapes on which Python's `re` backtracks exponentially."""
    from re import _parser  # type: ignore[attr-defined]

    def walk(items: Any, inside: bool) -> bool:
        for op, av in items:
            name = str(op)
            if name in _REPEATS:
                if inside and av[1] > 1:
                    return True
                if walk(av[2].data, inside or av[1] > 1):
                    return True
            elif name == "BRANCH":
                if inside:
                    return True
                if any(walk(branch.data, inside) for branch in av[1]):
                    return True
            elif name in ("SUBPATTERN",):
                if walk(av[3].data, inside):
                    return True
            elif name in ("ASSERT", "ASSERT_NOT", "ATOMIC_GROUP"):
                if walk((av[1] if name != "ATOMIC_GROUP" else av).data, inside):
                    return True
            elif name == "GROUPREF_EXISTS" and any(
                branch is not None and walk(branch.data, inside) for branch in av[1:]
            ):
                return True
        return False

    return walk(_parser.parse(source).data, False)
