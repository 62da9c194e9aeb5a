"""Blocks of a text that print bytes in a form the redactor cannot read as written (round 32): compressed data in
base64 (`gzip | base64`, `H4sI...`; zlib, bzip2 and xz too) or gzip in hex (`gzip | xxd -p`), ascii85 between `<~`
and `~>` (`base64.a85encode(..., adobe=True)`, PostScript, PDF), and `uuencode`'s `begin 644 name` lines
(`begin-base64` too). A command the model chooses prints a key it can read in any of them; `Redactor` decodes each
block and replaces it whole when what it holds shows a key.

Bounded: a block decodes to at most `BLOCK_MAX` bytes and one text's blocks to `BUDGET` together, so a
decompression bomb (a megabyte of gzip that inflates to a gigabyte) costs a millisecond, not the host's memory. A
block that cannot be read within those bounds, or whose compressed data is corrupt, is given as None: the redactor
replaces it (fail closed: the key may be past where reading stopped, or behind the byte that broke it). The common
text has none of the markers (`may_hold`: substring tests), and costs nothing more.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib

__all__ = ["BLOCK_MAX", "BUDGET", "decoded_blocks", "may_hold"]

BLOCK_MAX = 1 << 20
"""The most bytes one block decodes (and decompresses) to; one that would give more is not read (None)."""

BUDGET = 4 << 20
"""The most bytes the blocks of one text decode to together; the blocks past it are not read (None)."""

_CHARS_MAX = 2 * BLOCK_MAX
"""A block longer than this decodes to more than `BLOCK_MAX` in any of its encodings: not decoded at all (None)."""

_ZLIB_FAST = ("eAE", "eAF", "eAG", "eAH", "eF4", "eF5", "eF6", "eF7")
"""How base64 of zlib at levels 0 and 1 (78 01: `zlib.compress(data, 1)`, `pigz -z -1`) and 2 to 5 (78 5e) begins: the
third character holds the rest of the header's second byte (round 39: a key compressed at level 1 passed unredacted).
Three characters, not two: `eA` and `eF` stand in camelCase (`typeAlias`, `someFunction`) where `eJ` and `eN` seldom
do; each run found is decoded, and inflated only when its header checks out (`_expanded`)."""
_COMPRESSED = ("H4sI", "eJ", "eN", *_ZLIB_FAST, "Qlpo", "/Td6WFo")
"""How base64 of compressed data begins: gzip (1f 8b 08), zlib at its default level and the highest (78 9c, 78 da:
`zlib.compress`, `pigz -z`) and the fast ones (`_ZLIB_FAST`), bzip2 (`BZh`), xz (fd 37 7a 58 5a 00)."""
_SHORTEST = 40
"""A text shorter than this holds no block that shows a key (a streamed text piece): the shortest, ascii85 of a key
of `ANYWHERE_LENGTH` characters between `<~` and `~>`, is 29; gzip's header and trailer alone are 24 in base64."""

_BASE64_RUN = re.compile(r"(?:[A-Za-z0-9+/_\-\r\n]|\\[nr]){12,}={0,2}")
"""A base64 run from a marker of `_COMPRESSED` on: wrapped onto lines (`base64`'s 76 columns; `\\n` too, as a JSON
string writes them: `jq -Rs`), or URL-safe. Alternatives that begin with different characters: linear."""
_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_GZIP_HEX = ("1f8b08", "1F8B08")
"""How the hex of gzip begins (`gzip | xxd -p`, `od -An -tx1` with its spaces taken out: `hexdump -ve '1/1 "%02x"'`)."""
_HEX_RUN = re.compile(r"(?:[0-9A-Fa-f\r\n]|\\[nr]){12,}")
_HEX_CHARS = frozenset("0123456789abcdefABCDEF")
_BREAKS = re.compile(r"[\r\n]|\\[nr]")
"""A line break in a run, as written or as a JSON escape."""
_UU_BEGIN = re.compile(r"begin(-base64)? [0-7]{3,4} [^\n]*\n")
_UU_LINE = re.compile(r"[ -`]{1,62}")
_A85_CHARS = re.compile(r"[!-uz]+")


def may_hold(text: str) -> bool:
    """Whether `text` may hold a block: substring tests, each behind a test of one rare character of its marker (a
    search for one character is a `memchr`; one for `eJ` in prose stops at every `e`: 7 us for 4 KB), none for a text
    too short to hold one. A `uuencode` block begins a line."""
    return len(text) >= _SHORTEST and (
        ("4" in text and "H4sI" in text)
        or ("8" in text and ("1f8b08" in text or "1F8B08" in text))
        or _after(text, "~", "<")
        or _after(text, "J", "e")
        or _after(text, "N", "e")
        or _after(text, "F", "e", "4567")
        or _after(text, "A", "e", "EFGH")
        or ("Q" in text and "Qlpo" in text)
        or ("W" in text and "/Td6WFo" in text)
        or text.startswith("begin")
        or "\nbegin" in text
    )


def _after(text: str, char: str, before: str, then: str = "") -> bool:
    """Whether `char` stands in `text` right after `before` (and before one of `then`, when given): looked for from each
    `char` (the rarer: `J`, `N`, `~`), not from each `before` (`e`, `<`), as a search for the two would."""
    at = text.find(char, 1)
    while at > 0:
        if text[at - 1] == before and (not then or (at + 1 < len(text) and text[at + 1] in then)):
            return True
        at = text.find(char, at + 1)
    return False


def decoded_blocks(text: str) -> list[tuple[int, int, str | None]]:
    """Each block of `text` (where it begins and ends) with the bytes it decodes to as text (latin-1: a byte a
    character, so an ASCII key reads as itself), or None when it could not be read within the bounds. Found with
    `str.find` from each marker (a regular expression of them all took 120 us over 4 KB of prose)."""
    found: list[tuple[int, int, bytes | None]] = []
    budget = [BUDGET]
    for markers, chars, runs, decode in _RUNS:
        end = 0
        for at in _starts(text, markers, chars):
            run = runs.match(text, at) if at >= end else None
            if run is not None:
                block = run[0]
                while block.endswith(("\n", "\r", "\\n", "\\r")):  # the line break after the block is none of it
                    block = block[: -2 if block[-2:-1] == "\\" else -1]
                end = at + len(block)
                found.append((at, end, _expanded(decode(block) if len(block) <= _CHARS_MAX else None, budget)))
    at = text.find("<~")
    while at >= 0:
        end = text.find("~>", at + 2)
        if end < 0:
            break
        data = _a85(text[at + 2 : end]) if end - at <= _CHARS_MAX else None
        found.append((at, end + 2, _expanded(data, budget)))
        at = text.find("<~", end + 2)
    at = text.find("begin")
    while at >= 0:
        begin = _UU_BEGIN.match(text, at) if not at or text[at - 1] == "\n" else None
        if begin is None:
            at = text.find("begin", at + 1)
            continue
        end, data = _uu(text, begin.end(), begin[1] is not None)
        found.append((at, end, _expanded(data, budget)))
        at = text.find("begin", max(end, at + 1))  # another may begin the line after this one's `end`
    return [(start, end, None if data is None else data.decode("latin-1")) for start, end, data in found]


def _starts(text: str, markers: tuple[str, ...], chars: frozenset[str]) -> list[int]:
    """Where in `text` a marker begins a run: no character of the run's (`chars`) before it."""
    starts: set[int] = set()
    for marker in markers:
        at = text.find(marker)
        while at >= 0:
            if not at or text[at - 1] not in chars:
                starts.add(at)
            at = text.find(marker, at + 1)
    return sorted(starts)


def _base64(run: str) -> bytes:
    """The bytes of a base64 run: its line breaks out, URL-safe read as standard, cut to whole groups of four."""
    chars = _BREAKS.sub("", run).rstrip("=").translate(_URLSAFE)
    return base64.b64decode(chars[: len(chars) - len(chars) % 4])


def _unhexed(run: str) -> bytes:
    """The bytes of a hex run: its line breaks out, cut to whole bytes."""
    digits = _BREAKS.sub("", run)
    return bytes.fromhex(digits[: len(digits) - len(digits) % 2])


_URLSAFE = str.maketrans("-_", "+/")


def _a85(block: str) -> bytes | None:
    """The bytes of an ascii85 block (white space out); empty when a character is none of ascii85's (no decoder
    reads it: `a <~ b ~> c` in Scala), None when a decoder stops inside it (a group over 2**32, a `z` inside a group:
    what comes before may show a key)."""
    chars = "".join(block.split())
    if _A85_CHARS.fullmatch(chars) is None:
        return b""
    try:
        return base64.a85decode(chars)
    except ValueError:
        return None


def _uu(text: str, at: int, base64_lines: bool) -> tuple[int, bytes]:
    """Where `uuencode`'s lines that begin at `at` end (after `end`, or the first line that is none of them), and
    their bytes; `begin-base64` (`uuencode -m`): base64 lines up to `====`."""
    parts: list[bytes] = []
    size = 0
    while at < len(text) and size <= BLOCK_MAX:
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        line = text[at:end].rstrip("\r")
        if line in ("end", "===="):
            return min(end + 1, len(text)), b"".join(parts)
        try:
            part = base64.b64decode(line) if base64_lines else binascii.a2b_uu(line)
        except (binascii.Error, ValueError):
            break
        if not base64_lines and _UU_LINE.fullmatch(line) is None:
            break
        parts.append(part)
        size += len(part)
        at = end + 1
    return at, b"".join(parts)


_RUNS = ((_COMPRESSED, _BASE64_CHARS, _BASE64_RUN, _base64), (_GZIP_HEX, _HEX_CHARS, _HEX_RUN, _unhexed))
"""Each kind of run: the markers that begin one, its characters, its expression, its decoder."""


def _expanded(data: bytes | None, budget: list[int]) -> bytes | None:
    """`data`, decompressed when it is gzip, zlib, bzip2 or xz, within `BLOCK_MAX` and what is left of `budget`;
    None when it would give more, or its bzip2 or xz data is corrupt (fail closed: their signatures are long, no
    ordinary text begins so). A stream cut short gives what it holds so far (a block shown before its end); gzip and
    zlib, what a streaming reader (`gzip -dc`) prints before the byte that breaks it (`_inflated`: zlib's header is two
    base64 characters, which words begin with too, so a break is no reason to replace a block)."""
    limit = min(BLOCK_MAX, budget[0])
    if data is None or len(data) > limit:
        return None
    head = data[:6]
    out: bytes | None
    if head[:2] == b"\x1f\x8b" or (head[:1] == b"\x78" and int.from_bytes(head[:2], "big") % 31 == 0):
        out = _inflated(data, limit)
    elif head[:3] == b"BZh" or head == b"\xfd7zXZ\x00":
        out = _unpacked(data, limit)
    else:
        out = data
    if out is None or len(out) > limit:
        return None
    budget[0] -= len(out)
    return out


def _unpacked(data: bytes, limit: int) -> bytes | None:
    """bzip2 or xz `data` (by its signature) decompressed, at most `limit` bytes; None past it or when it is corrupt."""
    import bz2  # only for a block that is one of theirs: 1.5 ms of imports kept out of every start
    import lzma

    unpacker = bz2.BZ2Decompressor() if data[:3] == b"BZh" else lzma.LZMADecompressor()
    try:
        out = unpacker.decompress(data, limit + 1)
    except (OSError, EOFError, lzma.LZMAError):
        return None
    return None if not unpacker.eof and not unpacker.needs_input else out


_CHUNK = 4096
"""The compressed bytes `_inflated` gives zlib at a time: a copy of its state before each (a few ms for a MiB)."""


def _inflated(data: bytes, limit: int) -> bytes | None:
    """gzip or zlib `data` inflated (by its header), at most `limit` bytes (None past it): on a corrupt byte, what came
    before it (the chunk it is in read again a byte at a time from the state before the chunk)."""
    inflater = zlib.decompressobj(wbits=47)
    out = bytearray()
    for at in range(0, len(data), _CHUNK):
        before = inflater.copy()
        try:
            out += inflater.decompress(data[at : at + _CHUNK], limit + 1 - len(out))
        except zlib.error:
            for byte in range(at, min(at + _CHUNK, len(data))):
                try:
                    out += before.decompress(data[byte : byte + 1], limit + 1 - len(out))
                except zlib.error:
                    break
                if len(out) > limit or before.unconsumed_tail:
                    return None
            break
        if len(out) > limit or inflater.unconsumed_tail:
            return None
        if inflater.eof:
            break
    return bytes(out)
