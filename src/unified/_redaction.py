"""Keep secrets (the environment's, and those a run was given in code) out of anything `unified`
prints, logs, emits or records.

Error messages from SDKs and subprocesses sometimes quote a request URL or a header with the API
key in it; a shell command may print the environment; a model may echo a key it was shown. Every
event passes the stream guard, which replaces secret values; the CLI, the tool runtime, error
messages and the cassette recorders use the same `Redactor` (docs/protocol.md, "Secrets").

A run's secrets given in code (`run_secrets`: `api_key` options, a fallback's, MCP headers, ...) are
secrets of that run's task (`use_run_secrets`, a context variable the stream guard sets): every
`redactor()` built in it hides them too, so every cut (`clip`), error and tail of the run does.

What counts as a secret value of the environment:
- the value of a known credential variable (`GEMINI_API_KEY`, `GOOGLE_API_KEY`, ...) or of a
  variable whose name says it holds one (`*_TOKEN`, `*_SECRET`, `*_PASSWORD`, `*API_KEY`, ...);
- the value of any variable shaped like a credential (`AIza...`, `ya29....`, a private key);
- the value of any variable holding a URL with a password (`postgresql://user:PASSWORD@host/db`),
  and that password on its own (percent-decoded too), or with a token for its user (`https://<token>@host`);
- only if at least `MIN_SECRET_LENGTH` characters long: a shorter "secret" cannot be told apart from
  ordinary text (with `GEMINI_API_KEY=test`, hiding "test" would also mangle "latest").

A value shorter than `ANYWHERE_LENGTH` is replaced only where it stands whole, not inside a longer
word ("passwords" keeps its "s" when the password is "password"), but still inside URLs
(`?key=...&`), headers, JSON strings (`"\\n<key>"`), percent-encoded text (`%3D<key>`) and colored
terminal output (`ESC[1m<key>`). A longer value is replaced wherever it occurs: glued to other
characters it is still the secret (API keys and tokens are this long), never a coincidence.
"""

from __future__ import annotations

import base64
import bisect
import codecs
import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, TypeVar, cast
from urllib.parse import unquote_plus

from unified import _encoded
from unified._environ import PerEnvironment

__all__ = [
    "ANYWHERE_LENGTH",
    "KEY_SHAPES",
    "KNOWN_SECRET_VARIABLES",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "Redactor",
    "is_secret",
    "is_secret_name",
    "is_secret_query",
    "key_shapes_hidden",
    "redact",
    "redact_key_shapes",
    "redact_mapping",
    "redactor",
    "run_secrets",
    "secret_values",
    "secrets_in",
    "use_run_secrets",
]

REDACTED = "[REDACTED]"

T = TypeVar("T")

MIN_SECRET_LENGTH = 8
"""Shorter values are never treated as secrets, whatever their variable: too likely to be ordinary words."""

ANYWHERE_LENGTH = 20
"""Values this long are replaced even inside a longer word; shorter ones only where they stand whole."""

KNOWN_SECRET_VARIABLES = frozenset({"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_API_KEY", "GOOGLE_CLOUD_API_KEY"})
"""Always secret (at `MIN_SECRET_LENGTH` or longer)."""

_SECRET_NAME = re.compile(
    r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|PRIVATE_KEY|ACCESS_KEY|SIGNING_KEY|AUTH)$|BEARER_TOKEN",
    re.IGNORECASE,
)
"""Other variables whose names say they hold a secret. Round 37: Claude Code's Bedrock key `AWS_BEARER_TOKEN_BEDROCK`
(its environment's, which the CLI's Bash commands inherit), its client key's `CLAUDE_CODE_CLIENT_KEY_PASSPHRASE` and
`ANTHROPIC_WEBHOOK_SIGNING_KEY` were none, so a model's `env` showed them whole in the run's events."""

_HEADERS_NAME = re.compile(r"HEADERS$", re.IGNORECASE)
"""A variable listing HTTP headers (`ANTHROPIC_CUSTOM_HEADERS`, `OTEL_EXPORTER_OTLP_HEADERS`): see `_header_secrets`."""

_NOT_SECRET = frozenset({"GOOGLE_APPLICATION_CREDENTIALS"})
"""A path to a credentials file, not a credential: showing it helps diagnose auth problems."""

KEY_SHAPES = re.compile(
    r"AIza[0-9A-Za-z_\-]{30,}"  # Google API key
    r"|ya29\.[0-9A-Za-z_\-.]{10,}"  # Google OAuth access token
    r"|1//[0-9A-Za-z_\-]{20,}"  # Google OAuth refresh token
    r"|GOCSPX-[0-9A-Za-z_\-]{10,}"  # Google OAuth client secret
    r"|(?:ghp|gho|ghu|ghs|ghr|github_pat)_[0-9A-Za-z_]{30,}"  # GitHub tokens
    r"|AKIA[0-9A-Z]{16}"  # AWS access key id
    r"|xox[abpr]-[0-9A-Za-z\-]{10,}"  # Slack tokens
    # Anthropic: API (`sk-ant-api03-`), admin (`sk-ant-admin01-`) keys, OAuth access and refresh tokens
    # (`sk-ant-oat01-`, `sk-ant-ort01-`): 95 characters after the prefix; 20 or more is a key already.
    r"|sk-ant-(?:api|admin|oat|ort|sid)\d\d-[0-9A-Za-z_\-]{20,}"
    # OpenAI: project, service account, admin and user keys (`sk-proj-`, `sk-svcacct-`, `sk-admin-`,
    # `sk-None-`, 100+ characters after the prefix, mixed case and digits: a lowercase slug such as
    # `task-admin-settings-...` is none), and the legacy `sk-` with 48 letters and digits, nothing more.
    r"|sk-(?:proj|svcacct|admin|None)-(?=[0-9A-Za-z_\-]*[A-Z])(?=[0-9A-Za-z_\-]*[0-9])[0-9A-Za-z_\-]{40,}"
    r"|sk-[0-9A-Za-z]{48}(?![0-9A-Za-z_\-])"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
)
"""Strings that are credentials by their shape alone, wherever they appear."""

_URL_PASSWORD = re.compile(r"[^:/@\s]*:([^@/\s]+)@")
"""After a URL's `scheme://` (`_url_spans`), a password (`postgresql://user:PASSWORD@host/db`, as
UNIFIED_SESSION_STORE_URL may)."""

_URL_TOKEN_USER = re.compile(rf"([^:/@\s]{{{ANYWHERE_LENGTH},}})@")
"""After a URL's `scheme://` (`_url_spans`), a user that is a token, without a password (`https://ghp_...@github.com/o/r.git`,
`https://<key>@host`): a user name this long is none a person types (round 27: given in code, it was no secret of the
run)."""

_SCHEME_TAIL = re.compile(r"[A-Za-z0-9+.\-]*")
"""A URL scheme's characters, read backwards from its `://` (in the text reversed)."""
_LETTER = re.compile(r"[A-Za-z]")


def _url_spans(text: str, after: re.Pattern[str]) -> list[tuple[int, int]]:
    """Where group 1 of `after` stands in each URL of `text` it matches right after `scheme://` (the scheme a letter,
    then letters, digits, `+`, `.`, `-`), left to right, not overlapping: what `re` found with
    `[A-Za-z][A-Za-z0-9+.\\-]*://` and `after` as one expression, found from each `://` (round 32: that expression,
    tried at every letter of a run of them, was quadratic in it: 20,000 letters, 1.4 to 2.5 s; each `re` call holds the
    GIL)."""

    def after_scheme(begin: int, at: int) -> re.Match[str] | None:
        return after.match(text, at + 3) if _LETTER.search(text, begin, at) is not None else None

    return _anchored_spans(text, "://", _SCHEME_TAIL, after_scheme, 1)


def _anchored_spans(
    text: str,
    anchor: str,
    tail: re.Pattern[str],
    found_at: Callable[[int, int], re.Match[str] | None],
    group: int,
) -> list[tuple[int, int]]:
    """Where group `group` of `found_at(begin, at)` stands for each `anchor` in `text` at `at` where it matches, left
    to right, not overlapping; `begin` is where the characters `tail` takes before the anchor begin (read backwards,
    in the text reversed, never into the match before). Linear: each character is read by at most one tail and one
    match, where a regular expression anchored on the tail's characters was tried at each of them (`_url_spans`,
    `_query_secret_spans`)."""
    spans: list[tuple[int, int]] = []
    position = 0
    at = text.find(anchor)
    backwards = text[::-1] if at >= 0 else ""
    size = len(text)
    while at >= 0:
        before = tail.match(backwards, size - at, size - position)
        found = found_at(at - len(before[0]) if before else at, at)
        if found is not None:
            spans.append(found.span(group))
            position = found.end()
            at = text.find(anchor, position)
        else:
            at = text.find(anchor, at + 1)
    return spans


_WORD = re.compile(r"\w")
_BEFORE = (
    r"(?:(?<!\w)"  # not preceded by a letter, digit or underscore...
    r"|(?<=\\[nrtbfv0])|(?<=\\u[0-9A-Fa-f]{4})"  # ...unless that ends a JSON/C escape,
    r"|(?<=%[0-9A-Fa-f]{2})"  # a percent-encoded byte,
    + "".join(rf"|(?<=\x1b\[[0-9;]{{{n}}}[A-Za-z])" for n in range(8))  # or a terminal color code
    + ")"
)
_AFTER = r"(?!\w)"


@dataclass(frozen=True, eq=False)
class Redactor:
    """Replaces one set of secret values; build it with `redactor()`, which caches it."""

    values: tuple[str, ...]
    """Longest first, so a secret containing another is replaced whole; the secrets and their other forms."""
    pattern: re.Pattern[str] | None
    held: tuple[str, ...] = ()
    """The secrets themselves (no base64 form): what a stream holds back the beginning of (`partial_suffix`)."""
    forms: tuple[str, ...] = ()
    """The base64 and printed forms of the secrets (`_base64_forms`, `_printed_forms`), looked for only in a text as
    long as the shortest."""
    forms_from: int = 0
    forms_pattern: re.Pattern[str] | None = None
    """The forms `loose` does not find, as one alternation of literals: one pass over a text (the 29 forms of three
    keys in 4 KB: 21 us, where a substring test each took 153 us)."""
    loose: tuple[str, ...] = ()
    """The secrets of `ANYWHERE_LENGTH` or more, their hex, base64 and base64-of-base64 forms, folded (`_fold`:
    lower-cased, all but letters and digits taken out): looked for in a text so folded (`_loose_in`), and in the
    columns of a hex dump in it (`_dump_views`), where a key re-cased at random, wrapped onto lines (`fold -w10`,
    `xxd -p`, `base64`'s 76 columns, a terminal's wrap: round 27), or printed with any separator between its
    characters (tabs, commas, a colour code each, `%` before each byte, `xxd` or `od -c` with offsets: round 29) is the
    key to anyone who reads it."""
    loose_from: int = 0
    """The shortest text that can hold a `loose` form (`_loose_forms`): `_loose_in` folds none shorter. A base85 form
    folds to less than its text (ascii85's punctuation), and a text holds it whole or it is no print of the key."""

    def __bool__(self) -> bool:
        return bool(self.values)

    def streamed(self) -> Redactor:
        """This Redactor with every form (base64, printed) held back as a secret is: a stream's pieces
        (`SplitGuard`), where a hex or upper-cased key printed half in one piece and half in the next is
        one form only once both are read (round 18: the guard held back only the plain secret's
        beginning, and each half of a form reached the events)."""
        return _plain(self.values, self.loose, self.loose_from) if self.forms else self

    def found_in(self, text: str) -> bool:
        """Whether any secret occurs in `text`, even inside a word, in a base64 form, or written with
        JSON `\\u` escapes, or in an encoded block (`_encoded`): the cheap test before a replace (one substring
        search for the usual one secret in the usual short text)."""
        return self._found_as_text(text) or (_encoded.may_hold(text) and bool(self._blocks_holding(text)))

    def _found_as_text(self, text: str) -> bool:
        """Whether a secret occurs in `text` as written, `\\u`-escaped or in a `loose` form (`found_in` but its
        blocks)."""
        return self._exact_in(text) or (bool(self.loose) and self._loose_in(text))

    def _blocks_holding(self, text: str, depth: int = 0, *, fragments: bool = False) -> list[tuple[int, int]]:
        """Where `text`'s encoded blocks (`_encoded.decoded_blocks`: `gzip | base64`, ascii85, uuencode) stand whose
        bytes show a secret (with `fragments`, a piece of one: a block still streaming, cut short, decodes to the
        key's first characters), or that could not be read within their bounds (fail closed), or that hold blocks
        more than `_NESTED_MAX` deep (gzip in base64 in gzip...: each layer is read at most that deep)."""
        if not self.values or not _encoded.may_hold(text):
            return []
        return [
            (begin, end)
            for begin, end, decoded in _encoded.decoded_blocks(text)
            if decoded is None
            or self._found_as_text(decoded)
            or (fragments and bool(self.fragment_spans(decoded)))
            or (
                _encoded.may_hold(decoded)
                and (depth + 1 >= _NESTED_MAX or bool(self._blocks_holding(decoded, depth + 1, fragments=fragments)))
            )
        ]

    def _exact_in(self, text: str) -> bool:
        """Whether a secret or a form of it occurs in `text` as written, or with its JSON `\\u` escapes decoded."""
        return self._plain_in(text) or ("\\u" in text and self._plain_in(_unescaped(text)[0]))

    def _loose_in(self, text: str) -> bool:
        """Whether a `loose` form occurs in `text` folded (`_fold`: JSON escapes of a line break or tab taken out too,
        as `unified sessions show --json` or a cassette writes a wrapped key), or in a hex dump's columns of it."""
        if len(text) < self.loose_from:
            return False
        if self._holds_loose(_fold(text)):
            return True
        return any(self._holds_loose(view) for view, _, _ in _dump_views(text))

    def _holds_loose(self, folded: str) -> bool:
        """Whether the folded text holds a `loose` form: first a look-up of its `_GRAM`-character pieces every `step`
        characters (any form, `step + _GRAM - 1` or more long, covers one of them), then, on a hit, a search for each
        form (round 30: 58 forms a key; 47 searched one by one over 4 KB of prose took 79 us, the look-ups 10)."""
        grams, step, lengths = self._loose_index
        # a short text: a search for each form costs less than the look-ups
        if len(folded) >= _GRAMS_FROM and grams.isdisjoint(
            [folded[at : at + _GRAM] for at in range(0, len(folded) - _GRAM + 1, step)]
        ):
            return False
        fitting = self.loose[bisect.bisect_left(lengths, -len(folded)) :]  # none longer than the text
        return any(map(folded.__contains__, fitting))

    @functools.cached_property
    def _loose_index(self) -> tuple[frozenset[str], int, list[int]]:
        """Every `_GRAM`-character piece of the `loose` forms, the step `_holds_loose` reads a text's pieces at, and
        the forms' lengths, negated (ascending, as the forms are longest first)."""
        grams = frozenset(form[at : at + _GRAM] for form in self.loose for at in range(len(form) - _GRAM + 1))
        return grams, len(self.loose[-1]) - _GRAM + 1, [-len(form) for form in self.loose]

    @functools.cached_property
    def _fragment_grams(self) -> frozenset[str]:
        """Every `FRAGMENT_MIN`-character piece of the `loose` forms: what `fragment_spans` looks for."""
        return frozenset(
            form[at : at + FRAGMENT_MIN] for form in self.loose for at in range(len(form) - FRAGMENT_MIN + 1)
        )

    def fragment_spans(self, text: str) -> list[tuple[int, int]]:
        """Where `text` shows a piece of a `loose` form `FRAGMENT_MIN` folded characters long or longer, as written or
        down a hex dump's columns (then its lines whole): a key's output still streaming (round 30: `xxd` of a key, a
        line a `tool_progress` piece, showed its first lines, a third of the key in hex and as text, before the line
        that completed it; only the whole key was replaced)."""
        if not self.loose or len(text) < FRAGMENT_MIN:
            return []
        spans: list[tuple[int, int]] = []
        runs = self._fragment_runs(_fold(text))
        if runs:  # rare: where its characters stand
            _, starts = _folded_view(text)
            spans += [(starts[begin], starts[end - 1] + 1) for begin, end in runs]
        for view, starts, _ in _dump_views(text):
            for begin, end in self._fragment_runs(view):
                first, last = starts[begin], starts[end - 1] + 1
                spans.append((text.rfind("\n", 0, first) + 1, _line_end(text, last)))
        return spans

    def _fragment_runs(self, folded: str) -> list[tuple[int, int]]:
        """The runs of `folded` (begin, end) made of pieces `FRAGMENT_MIN` long of the `loose` forms. Looked for at
        every fifth position by its `_GRAM`-character piece (`_loose_index`: any run covers one there), and only where
        one is found position by position: 1.3 MB of build output without any, 50 ms (a set of every 12-character
        piece took 1.2 s)."""
        grams, sampled = self._fragment_grams, self._loose_index[0]
        runs: list[tuple[int, int]] = []
        covered = 0
        for sample in range(0, len(folded) - _GRAM + 1, FRAGMENT_MIN - _GRAM + 1):
            if sample < covered or folded[sample : sample + _GRAM] not in sampled:
                continue
            for at in range(max(sample - FRAGMENT_MIN + _GRAM, covered), sample + 1):
                if folded[at : at + FRAGMENT_MIN] in grams:
                    end = at + 1
                    while folded[end : end + FRAGMENT_MIN] in grams:  # a piece cut by the text's end is none
                        end += 1
                    covered = end + FRAGMENT_MIN - 1
                    runs.append((at, covered))
                    break
        return runs

    @functools.cached_property
    def _loose_secrets(self) -> Redactor:
        """The `loose` forms as secrets to hold back the beginning of, in a text folded (`_fold`)."""
        return _plain(self.loose)

    def loose_hold(self, text: str, shown: int) -> int:
        """How much of `text`'s end to hold back because, folded (`_fold`), it begins a `loose` form (round 27:
        `fold -w10` of a key, one line a `tool_progress` piece, showed every line but the last before the last
        arrived; round 29: a key re-cased at random, or with a tab after each character, split anywhere, showed its
        first half); at most what was not shown before (`shown` characters were). Looked for in the last six times the
        longest form's length: room for a separator of up to five characters after each of its characters (`['A',
        'I', ...]`, `od -c`'s columns)."""
        if not self.loose:
            return 0
        start = max(len(text) - 6 * len(self.loose[0]), shown)
        folded = _fold(text[start:])
        size = self._loose_secrets.partial_suffix(folded, SPLIT_HOLD_MIN)
        if not size:
            return 0
        _, starts = _folded_view(text[start:])  # where the held form begins (rare: a hold)
        return len(text) - start - starts[len(folded) - size]

    def _plain_in(self, text: str) -> bool:
        held = self.held
        if len(held) == 1:  # the usual case (one API key): one substring search, no iterator
            if held[0] in text:
                return True
        elif any(map(text.__contains__, held)):
            return True
        if len(text) < self.forms_from:  # a base64 form is a third longer than its secret: most pieces are shorter
            return False
        return self.forms_pattern is not None and self.forms_pattern.search(text) is not None

    def __call__(self, text: str, replacement: str = REDACTED) -> str:
        """`text` with every whole occurrence of a secret replaced (its base64 forms, its JSON
        `\\u`-escaped forms and its `loose` ones too: `_compiled`, `_replace_escaped`, `_replace_loose`)."""
        if self.pattern is None:
            return text
        blocks = self._blocks_holding(text)
        if blocks:
            text = _spliced(text, blocks, 0, replacement)
        text = self._replace(text, replacement)
        if self.loose and self._loose_in(text):
            text = self._replace_loose(text, replacement)
        return text

    def _replace_loose(self, text: str, replacement: str) -> str:
        """`text` with each `loose` form replaced where its characters stand in `text` (the separators inside it go
        with it; in a hex dump, the lines that show it)."""
        return _spliced(text, self._loose_spans(text), 0, replacement)

    def _loose_spans(self, text: str) -> list[tuple[int, int]]:
        """Where in `text` each `loose` form stands: from its first character to its last in the folded text, or the
        whole lines of a hex dump whose columns show it (the text column of `xxd` or `hexdump -C` repeats the key)."""
        spans: list[tuple[int, int]] = []
        views = [(*_folded_view(text), False)]
        views += _dump_views(text)
        for folded, starts, whole_lines in views:
            for value in self.loose:  # longest first
                at = folded.find(value)
                while at >= 0:
                    begin, end = starts[at], starts[at + len(value) - 1] + 1
                    if whole_lines:
                        begin, end = text.rfind("\n", 0, begin) + 1, _line_end(text, end)
                    spans.append((begin, end))
                    at = folded.find(value, at + len(value))
        return spans

    def _replace(self, text: str, replacement: str) -> str:
        """`text` with the secrets and forms found as written (or `\\u`-escaped) replaced."""
        assert self.pattern is not None
        if not self._plain_in(text):
            if "\\u" not in text:
                return text
            text = self._replace_escaped(text, replacement)
            if not self._plain_in(text):
                return text
        elif "\\u" in text:
            text = self._replace_escaped(text, replacement)
        for _ in self.values:  # a short secret glued to a long one stands whole once the long one is replaced
            replaced = self.pattern.sub(replacement, text)
            if replaced == text or not self._exact_in(replaced):
                return replaced
            text = replaced
        return text

    def _replace_escaped(self, text: str, replacement: str) -> str:
        """`text` with each secret written with JSON `\\u` escapes (some or all of its characters:
        `\\u0041IzaSy...`) replaced: found in the text with those escapes decoded, and replaced in
        `text` where its characters stand."""
        assert self.pattern is not None
        decoded, starts = _unescaped(text)
        if decoded is text or not self._plain_in(decoded):
            return text
        out: list[str] = []
        position = 0
        for match in self.pattern.finditer(decoded):
            begin, end = starts[match.start()], starts[match.end()]
            if begin < position:
                continue
            out += [text[position:begin], replacement]
            position = end
        out.append(text[position:])
        return "".join(out)

    def window(self, text: str, start: int, replacement: str = REDACTED, *, fragments: bool = False) -> str:
        """`text[start:]` with its secrets replaced, counting those that begin before `start`: a
        secret that straddles `start` is replaced whole (its replacement opens the result). The
        tool of a bounded buffer: the text before `start` is context that is not shown again.
        With `fragments`, every piece of a `loose` form too (`fragment_spans`): a tool's output still streaming."""
        if self.pattern is None:
            return text[start:]
        spans = self.fragment_spans(text) if fragments else []
        spans += self._blocks_holding(text, fragments=fragments)  # one begun before `start` too
        if not spans and not self._found_as_text(text):
            return text[start:]
        spans += [match.span() for match in self.pattern.finditer(text)]
        if self.loose and self._loose_in(text):  # a loose form begun before `start` too (round 29)
            spans += self._loose_spans(text)
        return self(_spliced(text, spans, start, replacement), replacement)

    def partial_suffix(self, text: str, least: int = 1) -> int:
        """The length of the longest end of `text` that begins some secret (without being all of
        it): what a stream must hold back until the next piece shows whether the secret follows;
        0 when that end is shorter than `least`. With `least` of `SPLIT_HOLD_MIN` or more, such an end
        finishes with `SPLIT_HOLD_MIN` characters of a secret, looked up (`_ends`): one look-up a piece,
        where a search for the secrets' first characters took 15 us a streamed delta of 125 characters
        against a key's 69 `loose` forms (`loose_hold`), and skipped an end that began inside a failed
        match (a key of `aaaaB...` after `zaaaaaaB` was not held: round 38)."""
        if least >= SPLIT_HOLD_MIN and self.held:
            size = len(text)
            for length, value in self._ends.get(text[-SPLIT_HOLD_MIN:], ()):  # longest first
                if length < least:
                    return 0
                if length <= size and text.startswith(value[:length], size - length):
                    return length
            return 0
        best = 0
        for value in self.held:
            reach = min(len(value) - 1, len(text))
            at = text.find(value[0], len(text) - reach)
            while 0 <= at < len(text):
                if len(text) - at <= best:
                    break
                if value.startswith(text[at:]):
                    best = len(text) - at
                    break
                at = text.find(value[0], at + 1)
        return best if best >= least else 0

    @functools.cached_property
    def _ends(self) -> dict[str, tuple[tuple[int, str], ...]]:
        """Each `SPLIT_HOLD_MIN` characters that end a beginning of a held secret (that long or longer, not all of it),
        with the length of each such beginning and its secret, longest first: what `partial_suffix` looks a text's end
        up in. Kept with the Redactor, as `_loose_index` is (a key's 69 `loose` forms: about 5,000 entries)."""
        ends: dict[str, list[tuple[int, str]]] = {}
        for value in self.held:
            for length in range(SPLIT_HOLD_MIN, len(value)):
                ends.setdefault(value[length - SPLIT_HOLD_MIN : length], []).append((length, value))
        return {end: tuple(sorted(found, key=lambda item: -item[0])) for end, found in ends.items()}

    def partial_prefix(self, text: str) -> int:
        """The length of the longest beginning of `text` that ends some secret (without being all of
        it): what a text cut out of the end of a longer one must not show, the rest of a secret the
        cut went through (`partial_suffix`'s twin, for a tail)."""
        best = 0
        for value in self.held:
            for size in range(min(len(value) - 1, len(text)), best, -1):
                if value.endswith(text[:size]):
                    best = size
                    break
        return best

    def json(self, value: T, replacement: str = REDACTED) -> T:
        """`value` (JSON-like: str, dict, list, tuple, and pydantic models of them: an event, a
        `Conversation`) with secrets replaced in every string, keys included. Containers and models
        are copied, never changed in place.

        Returns `value` itself when nothing changed, so callers can tell by identity.
        """
        return cast("T", self._json(value, replacement)) if self.values else value

    def _json(self, value: object, replacement: str) -> object:
        if isinstance(value, str):
            return self(value, replacement) if self.found_in(value) else value
        copy = getattr(value, "model_copy", None)  # a pydantic model (not imported: `unified --help` loads none)
        if copy is not None and not isinstance(value, type):
            changes = {k: new for k, v in value.__dict__.items() if (new := self._json(v, replacement)) is not v}
            return copy(update=changes) if changes else value
        if isinstance(value, dict):
            items = [(self._json(k, replacement), self._json(v, replacement)) for k, v in value.items()]
            if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
                return value
            return dict(items)
        if isinstance(value, (list, tuple)):
            parts = [self._json(item, replacement) for item in value]
            if all(new is old for new, old in zip(parts, value, strict=True)):
                return value
            return type(value)(parts)
        return value


_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
_SKIPPED = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\\[rnt]")
"""What `_fold` takes out of a text besides the characters that are no ASCII letter or digit: a terminal colour code
(`ESC[31m`: its digits and letter are none of a key's), a line break or tab written as a JSON (or C) escape."""
_FOLDED_OUT = bytes(b for b in range(256) if not (0x30 <= b <= 0x39 or 0x61 <= b <= 0x7A))
"""The bytes `_fold` takes out of a text lower-cased: all but ASCII digits and small letters (one `bytes.translate`:
4 us for 4 KB, where a regular expression took 100)."""
_SHAPE = bytes(
    ord("h") if chr(b) in "0123456789abcdefABCDEF" else b if chr(b) in " \n:" else ord(" ") if b == 9 else ord(".")
    for b in range(256)
)
"""A text's bytes as `_dump_lines` reads them: hex digits `h`, a tab a space, a space, line break and colon as they
are, anything else `.` (a text encoded with one `?` for each character that is no ASCII: its positions stay)."""
_KEPT = re.compile(r"[0-9A-Za-z]+")
_LOOSE_MIN = 16
"""A folded form shorter than this is not looked for: a secret of punctuation mostly folds to too little to tell."""
_GRAM = 8
"""The length of the pieces of the `loose` forms `Redactor._holds_loose` looks up before it searches for them."""
_GRAMS_FROM = 36
"""A folded text this long is looked up by its pieces first (`Redactor._holds_loose`); a shorter one searched. Since
round 32 a key has 69 forms (the base85 family's fold to 28 characters and more): a folded text of 36 to 64 characters,
a streamed delta's, searched for each form that fits took 1.5-3 us, looked up 0.7-1.5 (round 38)."""
_NESTED_MAX = 3
"""How deep `Redactor._blocks_holding` reads blocks inside blocks; one deeper still is replaced (fail closed)."""
_XXD_TEXT = re.compile(r"([0-9A-Fa-f]{2,}(?: [0-9A-Fa-f]{2,})*) {2,}(.+)")
"""A dump line's bytes and its text column after two spaces (`xxd`); `_dump_columns` finds the framed ones."""
_FRAMES = {"|": "|", "<": ">"}
"""A text column's closing character and its opening one: `hexdump -C`'s `|...|`, `od -tx1z`'s `>...<`."""


def _dump_columns(line: str) -> tuple[tuple[str, int], tuple[str, int]] | None:
    """A dump line's bytes and its text column, each with where it begins in `line`, or None. A framed column ends the
    line (spaces after it), opens at the first opening character before its end; else `xxd`'s, after two spaces.
    Found with `str` methods: a regular expression of it (`^(.*?)\\s*\\|(.*)\\|\\s*$`) backtracked over a line of
    `|` or of spaces, quadratic in its length (20,000 characters after an offset: 7 s for every text redacted, the
    GIL held: round 31)."""
    end = len(line.rstrip())
    opening = _FRAMES.get(line[end - 1 : end])
    at = line.find(opening, 0, end - 1) if opening is not None else -1
    if at >= 0:
        return (line[: len(line[:at].rstrip())], 0), (line[at + 1 : end - 1], at + 1)
    parts = _XXD_TEXT.fullmatch(line)
    return None if parts is None else ((parts[1], 0), (parts[2], parts.start(2)))


def _fold(text: str) -> str:
    """`text` lower-cased with all but ASCII letters and digits taken out (colour codes and escaped line breaks too):
    where `Redactor.loose` looks for its forms."""
    if "\x1b" in text or "\\" in text:
        text = _SKIPPED.sub("", text)
    return text.encode("ascii", "ignore").lower().translate(None, _FOLDED_OUT).decode("ascii")


def _dump_lines(text: str) -> list[tuple[int, int]]:
    """Where the lines of a hex dump in `text` (`xxd`, `hexdump -C`, `od -c`, `od -tx1`) show their bytes: after an
    offset (six or more hex digits, at a line's beginning or after a space: `printf 'k: '; xxd`, then `:` or not, then
    spaces), to the line's end. Found on `_SHAPE`, with substring searches (most text has no six hex digits in a row:
    one `bytes.translate` and one search; a regular expression took 300 us for 4 KB). An `xxd` offset (eight hex
    digits, `:`, a space) inside such a line begins another (round 30: `xxd | paste -s`, `xxd | tr -d '\\n'` joined
    the lines, and the offsets then cut the key in one line)."""
    if "\n" not in text and ": " not in text:  # one line and no xxd offset: none cuts a key the folded text shows
        return []
    shape = text.encode("ascii", "replace").translate(_SHAPE)
    size = len(shape)
    found: list[tuple[int, int]] = []
    at = shape.find(b"hhhhhh")
    while at >= 0:
        begin, end = at, at + 6
        while begin and shape[begin - 1] == 0x68:
            begin -= 1
        while end < size and shape[end] == 0x68:
            end += 1
        rest = end + (end < size and shape[end] == 0x3A)
        if (not begin or shape[begin - 1] in b" \n") and rest < size and shape[rest] == 0x20:
            while rest < size and shape[rest] == 0x20:
                rest += 1
            line_end = shape.find(b"\n", rest)
            line_end = size if line_end < 0 else line_end
            joined = shape.find(b"hhhhhhhh: ", rest, line_end)
            while joined >= 0:
                if rest < joined:
                    found.append((rest, joined))
                rest = joined + 10
                while rest < line_end and shape[rest] == 0x20:
                    rest += 1
                joined = shape.find(b"hhhhhhhh: ", rest, line_end)
            if rest < line_end:
                found.append((rest, line_end))
            end = line_end
        at = shape.find(b"hhhhhh", end)
    return found


def _folded_view(text: str) -> tuple[str, list[int]]:
    """`_fold(text)`, and where each of its characters stands in `text`."""
    if "\x1b" in text or "\\" in text:  # blanked, not taken out: the positions stay those of `text`
        text = _SKIPPED.sub(lambda m: " " * len(m[0]), text)
    parts: list[str] = []
    starts: list[int] = []
    for match in _KEPT.finditer(text):
        parts.append(match[0])
        starts += range(match.start(), match.end())
    return "".join(parts).lower(), starts


def _dump_views(text: str) -> list[tuple[str, list[int], bool]]:
    """A hex dump's bytes and its text column, each read down its lines without the offsets (which cut the key's
    hex every 16 bytes in `xxd`, and the key every 16 characters in `od -c`), folded, with where each character stands
    in `text`; `True`: a match replaces the dump's lines whole. A line read as bytes and a text column is also read
    whole (round 30: `hexdump -d`'s `   25963   15737` is no text column after two spaces)."""
    lines = _dump_lines(text)
    if not lines:  # most text (every streamed delta, round 38): no columns to make and read
        return []
    columns: tuple[tuple[list[str], list[int]], ...] = (([], []), ([], []), ([], []))
    for rest, line_end in lines:
        line = text[rest:line_end]
        columns_of = _dump_columns(line)
        if columns_of is None:
            pieces = [(line, rest), ("", rest), (line, rest)]
        else:
            (data, data_at), (shown, shown_at) = columns_of
            pieces = [(data, rest + data_at), (shown, rest + shown_at), (line, rest)]
        for (chars, starts), (piece, at) in zip(columns, pieces, strict=False):
            for match in _KEPT.finditer(piece):
                chars.append(match[0].lower())
                starts += range(at + match.start(), at + match.end())
    return [("".join(chars), starts, True) for chars, starts in columns if chars]


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _spliced(text: str, spans: list[tuple[int, int]], start: int, replacement: str) -> str:
    """`text[start:]` with each span replaced, overlapping ones by one replacement; a span begun before `start` is
    replaced from there (its beginning is context not shown again)."""
    out: list[str] = []
    position = start
    for begin, end in sorted(spans):
        if end <= position:
            continue
        if begin >= position or not out:  # one that overlaps the one before extends its replacement
            out += [text[position : max(begin, position)], replacement]
        position = end
    out.append(text[position:])
    return "".join(out)


def _unescaped(text: str) -> tuple[str, list[int]]:
    """`text` with its JSON `\\uXXXX` escapes decoded (itself when it has none), and where each of
    its characters starts in `text` (one more entry: `len(text)`)."""
    if _ESCAPE.search(text) is None:
        return text, []
    out: list[str] = []
    starts: list[int] = []
    position = 0
    for match in _ESCAPE.finditer(text):
        out += [text[position : match.start()], chr(int(match[1], 16))]
        starts += [*range(position, match.start()), match.start()]
        position = match.end()
    out.append(text[position:])
    starts += [*range(position, len(text)), len(text)]
    return "".join(out), starts


def _base64_forms(value: str) -> list[str]:
    """What base64 (standard and URL-safe) shows of `value` wherever it stands in the encoded bytes:
    for each of the 3 alignments, the characters its bytes alone decide (those it shares with the
    bytes around it differ with them, and are left out)."""
    data = value.encode()
    forms: list[str] = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        core = encoded[-(-8 * offset // 6) : 8 * (offset + len(data)) // 6]
        forms.append(core)
        urlsafe = core.replace("+", "-").replace("/", "_")
        if urlsafe != core:
            forms.append(urlsafe)
    return forms


_Z85 = str.maketrans(
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#",
)
"""base85's alphabet (`base64.b85encode`, RFC 1924) to z85's (ZeroMQ): the same digits of the same groups."""
_UU = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", "".join(map(chr, range(0x20, 0x60)))
)
"""base64's alphabet to uuencode's (`chr(32 + v)`; GNU writes a zero as a backquote: `_UU_ZERO`)."""
_UU_ZERO = str.maketrans(" ", "`")


def _base85_forms(value: str) -> list[str]:
    """What ascii85 (`base64.a85encode`), base85 (`base64.b85encode`, git's binary patches), z85 and uuencode's lines
    show of `value` wherever it stands in the encoded bytes (round 32): for each alignment, the characters its bytes
    alone decide (`_base64_forms`; uuencode's are base64's, in its alphabet). `loose` forms (`_loose_forms`): folded,
    their letters and digits alone are still 30 characters and more of a key's, found wrapped or re-cased too, at no
    cost a form of its own in the one pass would add (16 more literals there doubled `found_in` of 4 KB). A block
    between `<~` and `~>`, or of `uuencode`'s lines, is read decoded too (`_encoded`)."""
    data = value.encode()
    forms: list[str] = []
    for offset in range(4):
        whole = slice(5 * -(-offset // 4), 5 * ((offset + len(data)) // 4))
        a85 = base64.a85encode(b"\0" * offset + data).decode("ascii")[whole]
        b85 = base64.b85encode(b"\0" * offset + data).decode("ascii")[whole]
        forms += [a85, b85, b85.translate(_Z85)]
    for core in _base64_forms(value):
        if "-" not in core and "_" not in core:
            forms += [core.translate(_UU), core.translate(_UU).translate(_UU_ZERO)]
    return list(dict.fromkeys(forms))


def _printed_forms(value: str) -> list[str]:
    """The forms one short command prints a known secret in (`tr a-z A-Z`, `rev`, `xxd -p`, `sed 's/./& /g'`,
    `fold -w1`): upper and lower case, reversed, hex (both cases), a space or a line break after every character.
    Each is the secret to anyone who reads it and, at `ANYWHERE_LENGTH` characters or more, like a base64 form,
    ordinary text never holds it by chance. Mixed re-casing, any separator between the characters of the secret, its
    hex or its base64 (`fold`, `xxd -p`, tabs, commas, a colour code each, `%` before each byte), base64 of base64, and
    hex dumps with offsets (`xxd`, `hexdump -C`, `od -c`, `od -tx1`) are caught too (`Redactor.loose`, rounds 27
    and 29), and so are its bytes one by one in decimal, octal, hex with `x`, `0x` or `u00` before each, or in
    little-endian words (`_byte_forms`: `od -tu1`, `od -b`, `od -x`, `hexdump`, `xxd -i`, HTML entities, C escapes).
    Since round 30 also 16- to 64-bit words (`od -d`, `od -o`, `od -tx4`, `od -tx8`, `od -D`, `od -l`), rot13,
    base32, reversed and wrapped, UTF-16 (`_byte_forms`, `_text_forms`), and `xxd` with its lines joined
    (`_dump_lines`). Since round 32 also ascii85, base85, z85 and uuencode (`_base85_forms`), and compressed or
    encoded blocks decoded (`_encoded`). Not caught (measured): zlib at its low levels, zip, other ciphers and
    encodings of encodings: a command the model chooses can always print a secret it can read in a form no redactor
    knows; what keeps it safe is that the model's commands cannot read it (the child's environment,
    `hide_host_environment`)."""
    hexed = value.encode().hex()
    return [value.upper(), value.lower(), value[::-1], hexed, hexed.upper(), " ".join(value), "\n".join(value)]


def _byte_forms(data: bytes) -> list[str]:
    """What a dump or an escape prints of `data`'s bytes one by one, as `_fold` leaves it (round 29): decimal
    (`od -tu1`, `&#65;`), octal (`od -b`), each with `x`, `0x` or `u00` before its hex (`&#x41;`, `\\x41`, `xxd -i`,
    `\\u0041`), and hex in little-endian 16-bit words at either alignment (`od -x`, `hexdump`); since round 30 those
    words in decimal (`od -d`, as it prints them and as `hexdump -d` pads them to five digits) and octal (`od -o`,
    `hexdump -o`), and little-endian 32- and 64-bit words at each alignment in hex (`od -tx4`, `od -tx8`) and in
    decimal (`od -tu4`, `od -D`, `od -i`, `od -l`: a key's ASCII bytes make no negative word)."""
    words = _words(data, 2)
    return [
        "".join(map(str, data)),
        "".join(f"{b:03o}" for b in data),
        *("".join(f"{prefix}{b:02x}" for b in data) for prefix in ("x", "0x", "u00")),
        *("".join(f"{w:04x}" for w in aligned) for aligned in words),
        *("".join(f"{w:{pad}}" for w in aligned) for aligned in words for pad in ("", "05")),
        *("".join(f"{w:06o}" for w in aligned) for aligned in words),
        *("".join(f"{w:0{2 * size}x}" for w in aligned) for size in (4, 8) for aligned in _words(data, size)),
        *("".join(map(str, aligned)) for size in (4, 8) for aligned in _words(data, size)),
    ]


def _words(data: bytes, size: int) -> list[list[int]]:
    """`data`'s little-endian words of `size` bytes (as `od` and `hexdump` read them on this machine) at each
    alignment: the whole words its bytes alone decide, wherever it stands in what is dumped."""
    return [
        [int.from_bytes(data[at : at + size], "little") for at in range(start, len(data) - size + 1, size)]
        for start in range(size)
    ]


def _text_forms(value: str) -> list[str]:
    """Other spellings one short command prints a secret in (round 30): reversed (`rev | fold`, `fold -w1 | tac`),
    rot13 (`tr A-Za-z N-ZA-Mn-za-m`), base32 (`base32`, at each of its 5 alignments: the characters the secret's bytes
    alone decide, as `_base64_forms`), and the hex of its UTF-16 (`iconv -t utf-16le | xxd -p`), both byte orders."""
    data = value.encode()
    forms = [value[::-1], codecs.encode(value, "rot13")]
    for offset in range(5):
        encoded = base64.b32encode(b"\0" * offset + data).decode("ascii")
        forms.append(encoded[-(-8 * offset // 5) : 8 * (offset + len(data)) // 5])
    forms += [value.encode("utf-16-le").hex(), value.encode("utf-16-be").hex()]
    return forms


def _pattern(values: tuple[str, ...]) -> re.Pattern[str] | None:
    if not values:
        return None
    alternatives = []
    for value in values:
        whole = len(value) < ANYWHERE_LENGTH
        before = _BEFORE if whole and _WORD.match(value[0]) else ""
        after = _AFTER if whole and _WORD.match(value[-1]) else ""
        alternatives.append(f"{before}{re.escape(value)}{after}")
    return re.compile("|".join(alternatives))


@functools.lru_cache(maxsize=64)
def _plain(values: tuple[str, ...], loose: tuple[str, ...] = (), loose_from: int = 0) -> Redactor:
    return Redactor(values, _pattern(values), values, loose=loose, loose_from=loose_from)


def _loose_forms(values: tuple[str, ...]) -> tuple[tuple[str, ...], int]:
    """The `Redactor.loose` forms of `values`: each long one, its hex, its base64 forms and theirs (base64 of base64:
    each alignment of each alignment), folded (`_fold`), longest first; and the shortest text that can hold one
    (`Redactor.loose_from`): a form's folded length, but a base85 form's own (`_base85_forms`: ascii85 folds to two
    thirds of itself, and with it every text of 30 to 41 characters, a streamed delta, was folded and searched, 0.4 to
    3 us each; a base85 print with its punctuation taken out decodes to nothing)."""
    found: set[str] = set()
    shortest: list[int] = []
    for value in values:
        if len(value) >= ANYWHERE_LENGTH:
            inner = _base64_forms(value)  # a URL-safe one folds as its standard one does: only those are encoded
            outer = (form for core in inner if "-" not in core and "_" not in core for form in _base64_forms(core))
            forms = [value, value.encode().hex(), *inner, *outer, *_byte_forms(value.encode()), *_text_forms(value)]
            for whole, group in ((False, forms), (True, _base85_forms(value))):
                for form in group:
                    if len(folded := _fold(form)) >= _LOOSE_MIN:
                        found.add(folded)
                        shortest.append(len(form) if whole else len(folded))
    return tuple(sorted(found, key=lambda v: (-len(v), v))), min(shortest, default=0)


@functools.lru_cache(maxsize=64)
def _compiled(values: tuple[str, ...]) -> Redactor:
    """The Redactor of `values` and of the base64 and other printed forms (`_printed_forms`) of those at least
    `ANYWHERE_LENGTH` long (a shorter one's form could be a piece of any base64 text, or an ordinary word)."""
    held = values
    forms = tuple(
        dict.fromkeys(
            f for v in values if len(v) >= ANYWHERE_LENGTH for f in (*_base64_forms(v), *_printed_forms(v)) if f != v
        )
    )
    if forms:
        values = tuple(sorted({*values, *forms}, key=lambda v: (-len(v), v)))
    loose, loose_from = _loose_forms(held)
    # The forms `loose` finds too (upper, lower, hex in either case, base64, a space or line break after each
    # character) are left out of the one pass: `found_in` looks for them there (round 27: 11 forms a key in that pass,
    # then 6; round 29: 1, the reversed key).
    folded = set(loose)
    searched = [f for f in forms if _fold(f) not in folded]
    shortest = min((len(f) for f in searched), default=0)
    alternation = re.compile("|".join(map(re.escape, searched))) if searched else None
    return Redactor(values, _pattern(values), held, forms, shortest, alternation, loose, loose_from)


def is_secret(name: str, value: str) -> bool:
    """Whether environment variable `name` holding `value` is a secret (see the module docstring)."""
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH or name.upper() in _NOT_SECRET:
        return False
    upper = name.upper()
    return (
        upper in KNOWN_SECRET_VARIABLES
        or bool(_SECRET_NAME.search(upper))
        or bool(KEY_SHAPES.search(value))
        or bool(_url_spans(value, _URL_PASSWORD))
        or bool(_url_spans(value, _URL_TOKEN_USER))
        or bool(_header_secrets(upper, value))
    )


def _header_secrets(name: str, value: str) -> list[str]:
    """The credentials in a variable that lists HTTP headers (its name ends in HEADERS): Claude Code's
    `ANTHROPIC_CUSTOM_HEADERS` (`Name: value` lines, what a gateway's own `Authorization` or `X-Api-Key` goes in) and
    OpenTelemetry's `OTEL_EXPORTER_OTLP_HEADERS` (`name=value` pairs, comma-separated, percent-encoded): the value of
    each header whose name says it carries one (`secrets_in`: `Authorization`, `*-Api-Key`, `*-Token`, ...) and a
    bearer credential's token, `MIN_SECRET_LENGTH` or longer. Round 37: they were no secret (the variable's name says
    none, its whole value stands nowhere), so a model's `env` showed the gateway's token in the run's events."""
    if not _HEADERS_NAME.search(name):
        return []
    headers: dict[str, str] = {}
    for line in value.splitlines():
        head, colon, rest = line.partition(":")
        if colon and "=" not in head:
            headers[head.strip()] = rest.strip()
            continue
        for pair in line.split(","):
            key, equals, item = pair.partition("=")
            if equals:
                headers[key.strip()] = unquote_plus(item.strip())
    return [found for found in secrets_in(headers) if len(found) >= MIN_SECRET_LENGTH]


def _url_passwords(text: str) -> list[str]:
    """The passwords of the URLs in `text` long enough to be secrets (`MIN_SECRET_LENGTH`), as written and decoded,
    and the tokens standing as their user (`_URL_TOKEN_USER`)."""
    found = [text[a:b] for a, b in _url_spans(text, _URL_PASSWORD) if b - a >= MIN_SECRET_LENGTH]
    found += [text[a:b] for a, b in _url_spans(text, _URL_TOKEN_USER)]
    # as a driver's or client's error may quote it: percent-decoded too (`Hunter2%40x` is `Hunter2@x`)
    return found + [decoded for p in found if (decoded := unquote_plus(p)) != p]


_QUERY_WORD = re.compile(r"key|token|secret|pass|pwd|auth|credential|signature|sig|session|jwt|bearer", re.IGNORECASE)
"""A word in a URL query parameter's name that says it carries a credential (`?api_key=`, `&access_token=`, `?sig=`,
`?pwd=`, `?jwt=`); `code`, a name on its own (an OAuth `?code=`)."""
_QUERY_CODE = re.compile("code", re.IGNORECASE)
_QUERY_NAME_TAIL = re.compile(r"[^=&;#\s]*")
"""A query parameter's name's characters, read backwards from its `=` (in the text reversed)."""
_QUERY_VALUE = re.compile(r"[^&;#\s'\"]+")


def _query_secret_spans(text: str) -> list[tuple[int, int]]:
    """Where the value stands of each URL query parameter in `text` whose name says it carries a credential
    (`is_secret_query`), after `?`, `&`, `;` or `#` (in a fragment too, `#access_token=`, as OAuth's implicit flow sends
    it), as written (an HTTP client's error quotes the URL whole: `Client error '401' for url '...?token=...'`).
    Left to right, not overlapping: what `re` found with
    `[?&;#](?:[^=&;#\\s]*(?:key|...)[^=&;#\\s]*|code)=([^&;#\\s'"]+)`, found from each `=` (round 32: that
    expression was cubic in `?_?_...`, 6,000 characters took 8.5 s, the GIL held)."""

    def secret_value(begin: int, at: int) -> re.Match[str] | None:
        # the leftmost opening a name can follow: a `&;#` before the name's characters, or a `?` among them
        opening = begin - 1 if begin > 0 and text[begin - 1] in "&;#" else text.find("?", begin, at)
        secret = opening >= 0 and (
            _QUERY_WORD.search(text, opening + 1, at) is not None
            or (at - 5 >= opening and text[at - 5] in "?&;#" and _QUERY_CODE.fullmatch(text, at - 4, at) is not None)
        )
        return _QUERY_VALUE.match(text, at + 1) if secret else None

    return _anchored_spans(text, "=", _QUERY_NAME_TAIL, secret_value, 0)


def is_secret_query(name: str) -> bool:
    """Whether a URL's query parameter named `name` carries a credential (`_query_secret_spans`' names): what a
    cassette replaces whatever its value (round 27: only `key` and `access_token` were)."""
    if _QUERY_CODE.fullmatch(name) is not None:
        return True
    return _QUERY_NAME_TAIL.fullmatch(name) is not None and _QUERY_WORD.search(name) is not None


def is_secret_name(name: str) -> bool:
    """Whether an option, header or variable named `name` holds a secret (`_SECRET_KEY`: `x-api-key`,
    `X-Auth-Token`, `Cookie`, ...): what a cassette replaces whatever its value."""
    return _SECRET_KEY.search(name) is not None


def _url_query_secrets(text: str) -> list[str]:
    """The credential values in the queries of the URLs in `text` (`_query_secret_spans`), as written and decoded."""
    found = [text[a:b] for a, b in _query_secret_spans(text) if b - a >= MIN_SECRET_LENGTH]
    return found + [decoded for v in found if (decoded := unquote_plus(v)) != v]


def _secret_values(items: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    found: set[str] = set()
    for name, value in items:
        if is_secret(name, value):
            found.add(value.strip())
            # The password of a URL is secret on its own too (a driver's error may quote it alone), and a header's
            # credential in a list of headers.
            found.update(_url_passwords(value))
            found.update(_header_secrets(name, value))
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


_environ_secrets = PerEnvironment(lambda: _secret_values(os.environ.items()))
"""The process environment's secret values, worked out again only when the environment changed."""


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The secret values found in `env` (default: the process environment), longest first."""
    return list(_environ_secrets() if env is None else _secret_values(env.items()))


_RUN_SECRETS: ContextVar[tuple[str, ...]] = ContextVar("unified_run_secrets", default=())
"""The secrets the current run was given in code (`use_run_secrets`): its task's and those it starts."""


def use_run_secrets(values: Iterable[str]) -> None:
    """Make every `redactor()` of the current context hide `values` too: the stream guard calls it in
    the task that runs the backend, so each cut (`clip`), error message, stderr tail and tool output
    of that run knows the secrets given in its options, not only the environment's. A context of its
    own: another run, or the caller's code, never sees them (nor has them hidden)."""
    values = tuple(v.strip() for v in values if len(v.strip()) >= MIN_SECRET_LENGTH)
    if values:
        _RUN_SECRETS.set(tuple(dict.fromkeys((*_RUN_SECRETS.get(), *values))))


def redactor(env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> Redactor:
    """The (cached) Redactor for the secrets of `env` (default: the process environment) plus `extra`,
    plus those of the run it is built in (`use_run_secrets`).

    `extra` values shorter than `MIN_SECRET_LENGTH` are ignored like any other.
    """
    values = _environ_secrets() if env is None else _secret_values(env.items())
    run = _RUN_SECRETS.get()
    if run:
        extra = (*extra, *run)
    more = {v.strip() for v in extra if len(v.strip()) >= MIN_SECRET_LENGTH} - set(values)
    if more:
        values = tuple(sorted({*values, *more}, key=lambda v: (-len(v), v)))
    return _compiled(values)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """`text` with every secret value of `env` (default: the process environment) replaced by `[REDACTED]`."""
    return redactor(env)(text)


def clip(text: str, limit: int, clean: Redactor | None = None, *, more: str = "") -> str:
    """The first `limit` characters of `text`, with the secrets of `clean` (default: `redactor()`,
    the environment's and the run's) replaced *before* the cut: a cut through a secret leaves a piece
    of it that no redactor downstream recognizes (they replace whole secrets only). Every cut of a
    text that may quote a secret is made here. `more` ends a text that was cut (`"…"`), within `limit`."""
    clean = clean if clean is not None else redactor()
    longest = len(clean.values[0]) if clean.values else 0
    shown = clean(text[: limit + longest])
    if len(shown) <= limit and len(text) <= limit + longest:
        return shown
    return shown[: limit - len(more)] + more


def redact_key_shapes(text: str, replacement: str = REDACTED) -> str:
    """`text` with every credential-shaped string (`KEY_SHAPES`) replaced, whoever's it is."""
    return KEY_SHAPES.sub(replacement, text)


def key_shapes_hidden(value: object) -> object:
    """`value` (JSON: strings, lists, mappings, however deep) with every credential-shaped string replaced
    in its strings and keys; what holds none is returned as it is, not copied."""
    if isinstance(value, str):
        return KEY_SHAPES.sub(REDACTED, value)
    if isinstance(value, Mapping):
        items = [(key_shapes_hidden(k), key_shapes_hidden(v)) for k, v in value.items()]
        if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        hidden = [key_shapes_hidden(item) for item in value]
        return value if all(a is b for a, b in zip(hidden, value, strict=True)) else hidden
    return value


_SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|authorization|cookie|credential)", re.IGNORECASE)
"""Mapping keys (option names, header names, environment names) whose values are secrets."""


def redact_mapping(value: object) -> object:
    """`value` with every entry under a secret-looking key replaced, however deep, and in every other
    string a credential-shaped one (`KEY_SHAPES`) and a URL's password: for reprs and logs (an `env`
    entry `OPENAI_KEY=sk-proj-...`, a `base_url` of `https://user:PASSWORD@proxy`)."""
    if isinstance(value, Mapping):
        return {
            key: REDACTED if isinstance(key, str) and _SECRET_KEY.search(key) and item else redact_mapping(item)
            for key, item in value.items()
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact_mapping(item) for item in value)
    if isinstance(value, str):
        value = KEY_SHAPES.sub(REDACTED, value)
        value = _spliced(value, _query_secret_spans(value), 0, REDACTED)
        value = _spliced(value, _url_spans(value, _URL_TOKEN_USER), 0, REDACTED)
        return _spliced(value, _url_spans(value, _URL_PASSWORD), 0, REDACTED)
    return value


def secrets_in(value: object) -> list[str]:
    """Every string under a secret-looking key of `value` (options, headers, env given in code), however deep.

    A bearer credential (`Authorization: Bearer <token>`) gives the token as well as the header value.
    """
    found: list[str] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and _SECRET_KEY.search(key) and isinstance(item, str):
                found.append(item)
                scheme, _, credential = item.partition(" ")
                if credential and scheme.isalpha():
                    found.append(credential)
            else:
                found.extend(secrets_in(item))
    elif isinstance(value, (list, tuple)):
        for item in value:
            found.extend(secrets_in(item))
    return found


def _secrets_of_settings(value: object) -> list[str]:
    """The secrets of one mapping given in code (a backend's options, an MCP server): every string
    under a secret-looking key, every `env` value that is a secret by its name or shape
    (`is_secret`: `OPENAI_KEY=sk-proj-...`, `DATABASE_URL=postgresql://u:PASSWORD@h/db`), every
    `headers` value, and the password of any URL it holds (`base_url="https://u:PASSWORD@proxy"`) and the
    credentials of its query (`url="https://mcp.example/sse?token=..."`: `_url_query_secrets`)."""
    dump = value.model_dump() if hasattr(value, "model_dump") else value
    if not isinstance(dump, Mapping):
        return []
    found = secrets_in(dump)
    # google-auth credentials (`credentials=`): an object, left out of a model's dump
    given = getattr(value, "credentials", None) if hasattr(value, "model_dump") else dump.get("credentials")
    found += credential_secrets(given)
    env = dump.get("env")
    if isinstance(env, Mapping):
        found += _secret_values((str(k), v) for k, v in env.items() if isinstance(v, str))
    headers = dump.get("headers")
    if isinstance(headers, Mapping):
        found += [v for v in headers.values() if isinstance(v, str)]
    for item in dump.values():
        if isinstance(item, str) and "@" in item:
            found += _url_passwords(item)
        if isinstance(item, str) and ("?" in item or "#" in item):
            found += _url_query_secrets(item)
    return found


_CREDENTIAL_FIELDS = ("token", "refresh_token", "client_secret", "id_token")
"""The secret strings of a google-auth credentials object (user, service account, compute, external)."""


def credential_secrets(credentials: object) -> list[str]:
    """The secret strings of a google-auth credentials object given in code (`credentials=` of the
    generate-content and interactions backends): its access token, refresh token, client secret and
    ID token as they are now, and a service account's private key (as PEM, PKCS#8 and PKCS#1: the
    forms its key file holds). A token the client gets later by a refresh is not among them (its
    `ya29.` shape is caught in cassettes: `KEY_SHAPES`)."""
    if credentials is None or isinstance(credentials, (str, bytes, int, float, Mapping, list, tuple)):
        return []
    found: list[str] = []
    for name in _CREDENTIAL_FIELDS:
        try:
            item = getattr(credentials, name, None)
        except Exception:  # a property of a stranger's object: no secret of it
            continue
        if isinstance(item, str):
            found.append(item)
    signer = getattr(credentials, "_signer", None)
    signer = getattr(signer, "_impl", signer)  # google-auth 2.4x wraps the cryptography signer
    key = getattr(signer, "_key", None)
    if callable(getattr(key, "private_bytes", None)):
        found += _private_key_pems(key)
    return found


def _private_key_pems(key: object) -> list[str]:
    try:
        from cryptography.hazmat.primitives import serialization
    except ImportError:  # pragma: no cover - google-auth signs with cryptography when it is there
        return []
    pems: list[str] = []
    for form in (serialization.PrivateFormat.PKCS8, serialization.PrivateFormat.TraditionalOpenSSL):
        try:
            pem = key.private_bytes(serialization.Encoding.PEM, form, serialization.NoEncryption())  # type: ignore[attr-defined]
        except Exception:
            continue
        if isinstance(pem, bytes):
            pems.append(pem.decode("ascii", "replace"))
    return pems


def given_secrets(backend_options: object, mcp_servers: Iterable[object]) -> list[str]:
    """The secrets a run was given in code rather than in the environment: those of its
    `backend_options` (a mapping or an options model: `api_key`, headers, env, credentials, ...) and
    of each MCP server (`_secrets_of_settings`)."""
    found = _secrets_of_settings(backend_options)
    for server in mcp_servers:
        found += _secrets_of_settings(server)
    return found


class _Params(Protocol):
    """What `run_secrets` reads of `unified.types.ExecuteParams` (which imports this module)."""

    @property
    def mcp_servers(self) -> Iterable[object]: ...
    @property
    def fallback(self) -> Iterable[object]: ...
    @property
    def backend_options(self) -> object: ...


def run_secrets(params: _Params) -> list[str]:
    """Every secret a run was given in code (`given_secrets`), the options of each backend it may
    fail over to included (`Fallback.backend_options`, with their own `api_key`): the one list the
    stream guard, the tool runtime and the cassette recorders hide."""
    found = given_secrets(params.backend_options, params.mcp_servers)  # a mapping or an options model
    for fallback in params.fallback:
        options = getattr(fallback, "backend_options", None)
        if options:
            found += _secrets_of_settings(options)
    return found


SPLIT_HOLD_MIN = 4
"""A stream holds back the end of a piece that begins a secret only from this many characters on."""

FRAGMENT_MIN = 12
"""A tool's streamed output shows no piece this long (folded: `_fold`) of a `loose` form (`Redactor.fragment_spans`):
at 12, a piece of the decimal forms (`od -tu1`, ten digits each) in a text of digits is a chance of one in 10^12 for
each of a key's some 4,000 pieces; a shorter piece, 11 characters of a hex form or a key, may be shown."""

FRAGMENT_CONTEXT = 256
"""The characters a tool's output stream keeps of what it showed, to read a piece with (`SplitGuard`): the two or three
lines of a dump before it (`xxd`'s are 68 characters), whose text column, read down with the piece's, shows a piece of
the key that neither line shows alone."""


class SplitGuard:
    """Catches a secret split across the consecutive pieces of one text stream (text deltas,
    thinking deltas, a tool's progress messages), where redacting each piece alone would not.

    `feed(piece)` returns what to show now. The end of the stream's text so far is kept (at most
    the longest secret's length): a secret that straddles the pieces is replaced whole when its
    rest arrives. An end of a piece that begins a secret with `SPLIT_HOLD_MIN` or more characters
    is held back until the next piece (or `release()`), so it is never shown before the redactor
    can tell. The bound: at most `SPLIT_HOLD_MIN - 1` characters of a secret, its first ones, can
    be shown before the rest arrives; a secret shown in one piece, or split anywhere else, never.
    """

    def __init__(self, redactor: Redactor, *, fragments: bool = False) -> None:
        redactor = redactor.streamed()
        self._redactor = redactor
        self._fragments = fragments and bool(redactor.loose)
        """A tool's output (`tool_progress`): every piece of a `loose` form is replaced too (`fragment_spans`), with
        at least `FRAGMENT_CONTEXT` characters of what was shown kept as context (the dump lines before the piece)."""
        self._keep = max((len(v) for v in redactor.values), default=1)
        if self._fragments:
            self._keep = max(self._keep, FRAGMENT_CONTEXT)
        self._tail = ""
        self._held = ""

    def feed(self, piece: str) -> str:
        tail = self._tail
        combined = tail + self._held + piece
        hold = self._redactor.partial_suffix(combined, SPLIT_HOLD_MIN)
        # a beginning of a secret already shown (shorter than SPLIT_HOLD_MIN then) holds its rest
        hold = 0 if hold < SPLIT_HOLD_MIN else min(hold, len(combined) - len(tail))
        # what was shown is not held back again
        if not hold:
            hold = self._redactor.loose_hold(combined, len(tail))
        shown_until = len(combined) - hold
        visible = combined[:shown_until]  # all of it, not a copy, when nothing is held
        self._held = combined[shown_until:]
        self._tail = visible[-self._keep :]
        return self._redactor.window(visible, len(tail), fragments=self._fragments)

    def follow(self, other: SplitGuard) -> None:
        """This stream's next piece comes right after what `other`, another stream, showed last (a
        thought, then the text): when `other`'s end begins a secret and this stream's own end does
        not, the next piece is read as continuing `other`'s, so a key begun there and finished here
        is replaced whole (with the same bound). Called only when the stream changes."""
        if other._tail and other is not self:
            partial = self._redactor.partial_suffix
            if partial(other._tail) > partial(self._tail):
                self._tail = other._tail

    def release(self) -> str:
        """What is still held back (the stream ended or something else comes next): a beginning of
        a secret of `MIN_SECRET_LENGTH` or more characters is shown as the replacement."""
        held, self._held = self._held, ""
        if not held:
            return ""
        self._tail = (self._tail + held)[-self._keep :]
        return REDACTED if len(held) >= MIN_SECRET_LENGTH else held

    @property
    def holding(self) -> bool:
        return bool(self._held)
