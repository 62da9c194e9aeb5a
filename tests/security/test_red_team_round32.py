"""Red team, round 32: what round 31 left open, and the forms of a key no redactor read.

Holes (each test marked SUCCEEDED before fails on the code before its fix; HUNG before: never finished on it):

- the redactor's URL scans were super-linear, each `re` call holding the GIL (measured at 10,000 and 20,000
  characters, four or five times as long for each doubling): `_URL_QUERY_SECRET` in `?_?_...` (20,000 characters:
  42 s; 8.5 s for 6,000 in round 31's measurement) and in `???...` (20,000: 74 s), `_URL_PASSWORD` /
  `_URL_TOKEN_USER` in a run of letters (20,000: 2.5 s), `is_secret_query` in `keykey...key ` (72,000: 21 s). They
  read option reprs, error messages, cassette names and the host's httpx log records. Now `_redaction._url_spans`,
  `_query_secret_spans` and `is_secret_query` find the same spans with `str.find` from each `://` or `=` (no mismatch
  with the old expressions over 100,000 seeded random texts, measured; the test reads 50,000), linear: 200,000
  characters in about 0.1 s;
- Codex's read-only commands ran unasked: `rg -z` / `rg --search-zip` and `file -z` / `file -Z` start a decompressor
  found through PATH, `fd -l` starts `ls` (it is `--exec-batch ls -l`). Now they are `unsafe` in `read_only.toml`
  (asked). Looked at and left: `rg --pre-glob` alone runs nothing; `git -c`/`--config-env`, `less`, `tar`, `diff` are
  no read-only programs (asked already); `sort --compress-program`, `find -exec`/`-fprintf` were `unsafe` already;
  Claude Code's Bash and unified's own `run_shell_command` have no read-only shortcut (every command is put to the
  policy, and under an allow rule the protected-path check asks `rg --pre`, `sort --compress-program`, `tar -I`,
  `git -c`, `fd -x`, `man -P`);
- a key printed compressed in base64 (`gzip | base64`, `H4sI...`; zlib, bzip2, xz; wrapped, URL-safe, or in a JSON
  string), gzip in hex (`gzip | xxd -p`), in ascii85 (`<~...~>`, or bare: `python -c 'base64.a85encode(...)'`),
  base85, z85, or uuencoded (`begin 644 k`, `begin-base64`) reached the tool's result and the events whole, and
  streamed in pieces (`tool_progress`) no piece held it as written. Now `_encoded` decodes each block (at most 1 MiB a
  block, 4 MiB a text: a decompression bomb is replaced, not inflated; one that cannot be read within those bounds is
  replaced: fail closed; gzip read up to a corrupt byte, as `gzip -dc` prints), a stream's blocks are replaced once
  they decode to a piece of the key, and the bare base85 forms are `loose` forms. Cost (best of 9, old and new in one
  process, load ~9): `found_in` of 4 KB of prose 25 -> 34 us, of code 51 -> 61 us, a 47-character delta 2.5 -> 3.3 us;
- Claude Code's WebFetch of a name that did not resolve here within the time ran unasked whenever ANY proxy variable
  was set, though the CLI fetches it without that proxy (the name in `NO_PROXY`, or an `http://` URL with only
  `HTTPS_PROXY`): resolving it itself, to whatever a slow name server answers then (127.0.0.1). Now only a proxy for
  the URL's scheme that does not exempt the host counts (`_urls._proxied`, which reads an entry with the port too).

Pins (held before and after): a name answering a public address first and 127.0.0.1 second (a resolver the test
controls: `socket.getaddrinfo` patched) is asked; Claude Code's Grep of a folder holding a hard link to an ordinary file
is allowed, a `glob` narrowing it to the link too (a pnpm `node_modules` or uv `.venv` is full of them, past what
`.gitignore` hides from a walk: round 28 measured 4,157 of 24,750 entries in one checkout; asking would refuse every
such project), of the hard link itself asked (round 26), and of a folder holding a hard link to a credential file asked
(by device and inode: rounds 18-20): no credential is read through a link, an ordinary file's other name may be.

Where unified itself connects (the API backends' base URLs, MCP servers, the proxy forwarder's upstream) the URL is the
caller's, never a model's: nothing there is decided by a host a model chose, so there is no address to pin.
"""

from __future__ import annotations

import base64
import binascii
import bz2
import gzip
import lzma
import os
import random
import re
import socket
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_red_team_round7 import _claude_answer, _codex_command
from unified import _redaction, _urls
from unified._redaction import REDACTED, SplitGuard, is_secret_query, redact_mapping, redactor
from unified.tools import Policy, _protected
from unified.tools._read_only import not_read_only

pytestmark = [pytest.mark.anyio, pytest.mark.unit]

KEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
KEYED = f"export GEMINI_API_KEY={KEY}\n".encode()


# 1. The redactor's URL scans, linear

OLD_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:([^@/\s]+)@")
OLD_TOKEN_USER = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([^:/@\s]{20,})@")
OLD_NAME = r"[^=&;#\s]*(?:key|token|secret|pass|pwd|auth|credential|signature|sig|session|jwt|bearer)[^=&;#\s]*|code"
OLD_QUERY = re.compile(rf"[?&;#](?:{OLD_NAME})=([^&;#\s'\"]+)", re.IGNORECASE)
OLD_QUERY_NAME = re.compile(rf"(?:{OLD_NAME})", re.IGNORECASE)
"""The expressions round 32 replaced: the reference the new scans must agree with."""

SIZE = 200_000
HOSTILE = [
    pytest.param("?_" * (SIZE // 2), id="query-marks"),
    pytest.param("?" * SIZE, id="question-marks"),
    pytest.param("a" * SIZE, id="letters"),
    pytest.param("a" * SIZE + "://" + "b" * SIZE, id="letters-scheme-letters"),
]
LINEAR_ALREADY = [
    pytest.param("&key" * (SIZE // 4) + "x", id="key-names-without-value"),
    pytest.param("a://" * (SIZE // 4), id="schemes"),
    pytest.param("x://" + ":" * SIZE, id="colons"),
    pytest.param("=" * SIZE, id="equals"),
]


@pytest.mark.parametrize("text", HOSTILE)
def test_a_hostile_text_is_scanned_for_url_secrets_in_linear_time(text: str) -> None:
    """HUNG before: `redact_mapping` (option reprs, logs) ran the three expressions, super-linear in each (measured at
    10,000 and 20,000 characters, four or five times as long for each doubling): `?_` x 100,000 about an hour (killed
    at 120 s), 200,000 `?` hours, 200,000 letters about 4 minutes. Now at once, no secret in it."""
    assert redact_mapping(text) == text
    assert _redaction.given_secrets({"url": text, "base_url": text}, []) == []


@pytest.mark.parametrize("text", LINEAR_ALREADY)
def test_shapes_the_old_scans_read_in_linear_time_stay_so(text: str) -> None:
    """Pin: the shapes next to them, which the old expressions read in a few ms, stay linear in the new scans (a run
    of `://`, of `:`, of `=`, of names with no value)."""
    assert redact_mapping(text) == text


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("key" * (SIZE // 3) + " ", id="keys-then-space"),
        pytest.param("_" * SIZE + "key" + "&", id="pin-underscores"),
        pytest.param("k" * SIZE, id="pin-letters"),
    ],
)
def test_a_hostile_query_name_is_judged_in_linear_time(name: str) -> None:
    """HUNG before (the first: `keykey...key ` backtracked once per `key`, quadratic: 72,000 characters took 21 s,
    200,000 about three minutes; the two pins were linear): `is_secret_query` decides what a cassette replaces. None
    of them is a credential's name (a space or `&` in it, or no word of one)."""
    assert not is_secret_query(name)


def _corpus(seed: int, count: int) -> list[str]:
    pieces = [
        *"://@?&;#= \t\x0b\u3000'\"aZ1+.-_é",
        "://",
        "key",
        "KEY",
        "\u212aey",  # KELVIN SIGN: `re` folds it to `k`
        "ſig",  # LONG S: `re` folds it to `s`
        "code",
        "CoDe",
        "sig",
        "pass",
        "x" * 21,
        "http",
        "tok",
        "en",
    ]
    rnd = random.Random(seed)
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 30))) for _ in range(count)]


def test_the_url_scans_find_what_the_old_expressions_found() -> None:
    """Pin of the fix: over 50,000 seeded random texts of the characters that matter, the same spans (passwords,
    token users, query values), the same names judged secret, the same `redact_mapping`."""
    for text in _corpus(32, 50_000):
        assert _redaction._url_spans(text, _redaction._URL_PASSWORD) == [m.span(1) for m in OLD_PASSWORD.finditer(text)]
        assert _redaction._url_spans(text, _redaction._URL_TOKEN_USER) == [
            m.span(1) for m in OLD_TOKEN_USER.finditer(text)
        ]
        assert _redaction._query_secret_spans(text) == [m.span(1) for m in OLD_QUERY.finditer(text)], text
        assert is_secret_query(text) is (OLD_QUERY_NAME.fullmatch(text) is not None), text


def _old_mapping(value: str) -> str:
    value = _redaction.KEY_SHAPES.sub(REDACTED, value)
    value = OLD_QUERY.sub(lambda m: m[0][: m.start(1) - m.start()] + REDACTED, value)
    value = OLD_TOKEN_USER.sub(lambda m: m[0][: m.start(1) - m.start()] + REDACTED + "@", value)
    return OLD_PASSWORD.sub(lambda m: m[0][: m.start(1) - m.start()] + REDACTED + "@", value)


def test_redact_mapping_replaces_what_it_replaced() -> None:
    """Pin of the fix: the same text out of `redact_mapping` as the old substitutions gave, over 20,000 texts."""
    for text in _corpus(3200, 20_000):
        assert redact_mapping(text) == _old_mapping(text), text


# 2. Codex's read-only commands that start a program found through PATH

STARTS_A_PROGRAM = [
    "rg -z x",
    "rg -nz x .",
    "rg --search-zip x",
    "rg --search-z x",
    "file -z a.gz",
    "file -bz a.gz",
    "file -Z a.gz",
    "file --uncompress a.gz",
    "file --uncompress-noreport a.gz",
    "file --unc a.gz",
    "fd -l x",
    "fd --list-details x",
    "fdfind -Hl x",
]


@pytest.mark.parametrize("command", STARTS_A_PROGRAM)
def test_a_read_only_shape_that_starts_a_program_through_path_is_asked(command: str) -> None:
    """SUCCEEDED before, each: a decompressor (`gzip`, `xz`, `zstd`, ...) or `ls` is started by its name through PATH,
    where a folder the model may write can come first. A read-only command must start nothing."""
    assert not_read_only(command) is not None


@pytest.mark.parametrize(
    "command",
    ["git -c core.pager=sh grep x", "git --config-env=core.pager=P grep x", "less a", "tar -tf a.tar", "diff a b"],
)
def test_programs_read_only_does_not_list_stay_asked(command: str) -> None:
    """Pin: git with its own options, less (LESSOPEN), tar (`-I`), diff are no read-only programs at all."""
    assert not_read_only(command) is not None


@pytest.mark.parametrize(
    "command",
    ["rg -n x", "rg -S --hidden x .", "rg --pre-glob a.gz x", "file a.gz", "file -b a", "fd -H x", "fd -e py"],
)
def test_their_plain_reads_stay_unasked(command: str) -> None:
    """Pin: the same programs reading only run unasked; `--pre-glob` alone too (it says which files `--pre` runs on,
    and runs nothing without it: `tests/tools/test_read_only.py` holds it a read; beside `--pre`, `--pre` is asked)."""
    assert not_read_only(command) is None


# 3. A key printed in a form the redactor did not read


def _uu(data: bytes, *, name: str = "k") -> str:
    """What `uuencode k` prints (GNU sharutils: 45 bytes a line, a backquote for zero)."""
    lines = [f"begin 644 {name}"]
    chunks = [data[at : at + 45] for at in range(0, len(data), 45)]
    lines += [binascii.b2a_uu(chunk, backtick=True).decode().rstrip("\n") for chunk in chunks]
    return "\n".join([*lines, "`", "end"]) + "\n"


Z85 = str.maketrans(
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~",
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#",
)


def _z85(data: bytes) -> str:
    """ZeroMQ's z85 (RFC 32): base85's digits in its own alphabet (checked against pyzmq's `z85.encode`)."""
    return base64.b85encode(data).decode().translate(Z85)


FORMS = {
    "gzip-base64": base64.encodebytes(gzip.compress(KEYED)).decode(),
    "gzip-base64-one-line": base64.b64encode(gzip.compress(KEYED)).decode(),
    "gzip-base64-urlsafe": base64.urlsafe_b64encode(gzip.compress(KEYED)).decode(),
    "zlib-base64": base64.b64encode(zlib.compress(KEYED)).decode(),
    "zlib-9-base64": base64.b64encode(zlib.compress(KEYED, 9)).decode(),
    "bzip2-base64": base64.b64encode(bz2.compress(KEYED)).decode(),
    "xz-base64": base64.b64encode(lzma.compress(KEYED)).decode(),
    "ascii85-adobe-wrapped": base64.a85encode(KEYED, adobe=True, wrapcol=20).decode(),
    "ascii85-bare": base64.a85encode(KEYED).decode(),
    "ascii85-bytes-repr": repr(base64.a85encode(b"xy" + KEYED)),
    "base85": base64.b85encode(b"x" + KEYED).decode(),
    "z85": _z85(b"abc" + KEYED + b"\n\n\n"),
    "uuencode": _uu(KEYED),
    "uuencode-of-gzip": _uu(gzip.compress(KEYED)),
    "uuencode-base64": "begin-base64 644 k\n" + base64.encodebytes(gzip.compress(KEYED)).decode() + "====\n",
    "ascii85-of-gzip": base64.a85encode(gzip.compress(KEYED), adobe=True, wrapcol=30).decode(),
    "gzip-in-gzip": base64.b64encode(gzip.compress(base64.b64encode(gzip.compress(KEYED)))).decode(),
}


def _shows_key(text: str) -> bool:
    """Whether `text` shows the key in any of the forms, decoded as its reader would."""
    return KEY[:20] in text or any(KEY[:20] in _decoded(text, form) for form in FORMS)


def _decoded(text: str, form: str) -> str:
    try:
        if form == "ascii85-bare":
            return base64.a85decode(text.strip().encode()).decode("latin-1")
        if form == "gzip-base64":
            return gzip.decompress(base64.b64decode(text)).decode("latin-1")
    except (ValueError, OSError, EOFError):
        return ""
    return ""


@pytest.mark.parametrize("form", list(FORMS))
def test_a_key_in_an_encoded_form_is_replaced(form: str) -> None:
    """SUCCEEDED before: each form of the key came back as it was; the model (or a log) decodes it in one command.
    Now the block, or the key's run of it, is replaced."""
    text = f"$ cmd\n{FORMS[form]}done\n"
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert clean.found_in(text), form
    out = clean(text)
    assert REDACTED in out
    assert not _shows_key(out)
    assert out.startswith("$ cmd\n")
    if form == "gzip-base64":
        assert FORMS[form].split("\n", 1)[0] not in out


def test_a_key_in_the_form_as_written_is_decoded_by_its_reader() -> None:
    """The check of the test's own forms: each, decoded as its program would, is the key."""
    uu_lines = FORMS["uuencode"].splitlines()
    assert gzip.decompress(base64.b64decode(FORMS["gzip-base64"])) == KEYED
    assert base64.a85decode(FORMS["ascii85-adobe-wrapped"], adobe=True) == KEYED
    assert binascii.a2b_uu(uu_lines[1]) + binascii.a2b_uu(uu_lines[2]) == KEYED


ORDINARY = [
    pytest.param(base64.encodebytes(gzip.compress(b"hello, an ordinary archive\n" * 40)).decode(), id="gzip-no-key"),
    pytest.param("val p = a <~ ws ~> b ^^ { case x => x }\n" * 3, id="scala-parser-combinators"),
    pytest.param("begin\n  x := 1;\nend;\n" + "a" * 100, id="pascal-begin"),
    pytest.param("begin 644 notes\nthis line is no uuencode at all, only words\nend\n", id="uuencode-lookalike"),
    pytest.param("typeName = eNvironment.getName(); // eJect H4sIsland " * 4, id="markers-in-words"),
    pytest.param("see eJzebraStripesAreNiceToSeeInTheWild and more words here\n", id="zlib-header-in-a-word"),
    pytest.param(base64.a85encode(b"plain bytes, no key " * 10, adobe=True).decode(), id="ascii85-no-key"),
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_output_with_such_blocks_is_kept(text: str) -> None:
    """Pin of the fix: a block that decodes to no key, and text that only looks like one, come back as they were."""
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert not clean.found_in(text)
    assert clean(text) == text


def _bomb(compress: Any, size: int) -> str:
    return base64.b64encode(compress(b"\0" * size)).decode()


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(_bomb(gzip.compress, 64 << 20), id="gzip-64-MiB"),
        pytest.param(_bomb(bz2.compress, 64 << 20), id="bzip2-64-MiB"),
        pytest.param(_bomb(lzma.compress, 64 << 20), id="xz-64-MiB"),
        pytest.param(base64.a85encode(gzip.compress(b"\0" * (64 << 20)), adobe=True).decode(), id="ascii85-gzip"),
    ],
)
def test_a_decompression_bomb_is_replaced_not_inflated(text: str) -> None:
    """Bounded (fail closed): a block that inflates past `_encoded.BLOCK_MAX` is not read to its end (the key may be
    past where reading stopped): it is replaced. What it costs is at most a MiB of inflation."""
    clean = redactor({"GEMINI_API_KEY": KEY})
    out = clean(f"x\n{text}\n$ y")
    assert out == f"x\n{REDACTED}\n$ y"


def test_many_small_bombs_cost_the_budget_only() -> None:
    """Bounded: 40 blocks of 1 MiB each (past the 4 MiB a text) are each replaced; the first four read, the rest
    not (fail closed)."""
    from unified import _encoded

    block = _bomb(gzip.compress, (1 << 20) - 1)
    blocks = _encoded.decoded_blocks(" ".join([block] * 40))
    assert len(blocks) == 40
    assert sum(decoded is None for *_, decoded in blocks) >= 36


def test_blocks_nested_past_the_depth_are_replaced() -> None:
    """Fail closed: gzip in base64 in gzip..., deeper than `_NESTED_MAX`, is replaced without reading its core."""
    data = b"nothing here"
    for _ in range(_redaction._NESTED_MAX + 2):
        data = base64.b64encode(gzip.compress(data))
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert clean(data.decode()) == REDACTED


def test_a_corrupt_or_overflowing_block_is_replaced() -> None:
    """gzip that breaks after the key is read up to the break (what `gzip -dc` prints before it fails), and an ascii85
    group past 2**32 cannot be read whole (fail closed): each block is replaced."""
    broken = bytearray(gzip.compress(KEYED * 50))
    broken[-12:-8] = b"\xff\xff\xff\xff"  # the deflate stream's end, then a CRC that does not match
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert clean(base64.b64encode(bytes(broken)).decode()) == REDACTED
    assert clean("<~" + base64.a85encode(KEYED).decode() + "uuuuu~>") == REDACTED


def test_a_gzip_block_streamed_in_pieces_shows_no_piece_of_it() -> None:
    """SUCCEEDED before: `gzip | base64` of a key, a tool's output streamed in pieces of 24 characters, was shown whole
    (no piece holds the key as written). Now the pieces of the block are replaced once the block, decoded, shows a
    piece of the key: what was shown before does not decode to the key."""
    block = base64.b64encode(gzip.compress(KEYED)).decode()
    guard = SplitGuard(redactor(env={}, extra=[KEY]), fragments=True)
    text = f"$ gzip < .env | base64 -w0\n{block}\n$ done\n"
    shown = "".join([guard.feed(text[at : at + 24]) for at in range(0, len(text), 24)] + [guard.release()])
    assert REDACTED in shown
    visible = "".join(re.findall(r"[A-Za-z0-9+/=]{12,}", shown))
    for at in range(len(visible)):
        piece = visible[at:]
        data = base64.b64decode(piece[: len(piece) - len(piece) % 4] or b"", validate=False)
        try:
            out = zlib.decompressobj(wbits=47).decompress(data)
        except zlib.error:
            continue
        assert KEY[:12] not in out.decode("latin-1"), shown


def test_the_bare_base85_forms_are_found_wrapped_too() -> None:
    """Pin of the fix: base85 forms are `loose` forms: wrapped onto lines (`fold -w16`), still the key."""
    text = base64.b85encode(b"x" + KEYED).decode()
    wrapped = "\n".join(text[at : at + 16] for at in range(0, len(text), 16))
    out = redactor({"GEMINI_API_KEY": KEY})(wrapped)
    assert REDACTED in out


# 4. DNS: a name that resolves to this machine, with a proxy that does not carry the fetch

ALLOW_FETCH = '[[rule]]\ntoolName = "web_fetch"\ndecision = "allow"\npriority = 900\n'


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """`socket.getaddrinfo` answering from this table (a name not in it does not resolve), no proxy variable."""
    table: dict[str, list[str]] = {}

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port or 0))
            for a in table[name]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for name in (*_urls.PROXY_VARIABLES, "NO_PROXY", "no_proxy", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
    return table


async def _fetch(tmp_path: Path, url: str) -> tuple[dict[str, Any], Any]:
    return await _claude_answer(
        tmp_path, "WebFetch", {"url": url, "prompt": "x"}, Policy.default().with_toml(ALLOW_FETCH)
    )


@pytest.mark.parametrize("local", ["127.0.0.1", "169.254.169.254", "::1", "10.0.0.7"])
async def test_a_name_answering_public_then_local_is_asked(
    tmp_path: Path, resolver: dict[str, list[str]], local: str
) -> None:
    """Pin (round 22, through the resolver itself): every answer of the lookup is judged, the public first one
    does not pass the local second."""
    resolver["rebind.attacker.example"] = ["93.184.215.14", local]
    body, decision = await _fetch(tmp_path, "https://rebind.attacker.example/latest/meta-data")
    assert body["behavior"] == "deny"
    assert decision.rule == "local-network"
    assert local in str(decision.reason)


@pytest.mark.parametrize(
    ("variables", "url"),
    [
        pytest.param({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": ".attacker.example"}, "https", id="no-proxy"),
        pytest.param({"https_proxy": "http://proxy:3128", "no_proxy": "*"}, "https", id="no-proxy-all"),
        pytest.param({"HTTPS_PROXY": "http://proxy:3128"}, "http", id="https-proxy-for-http"),
        pytest.param({"HTTP_PROXY": "http://proxy:3128"}, "https", id="http-proxy-for-https"),
        pytest.param({"ALL_PROXY": "socks5://proxy:1080"}, "https", id="all-proxy"),
    ],
)
async def test_a_name_that_does_not_resolve_is_asked_when_no_proxy_carries_the_fetch(
    tmp_path: Path, resolver: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], url: str
) -> None:
    """SUCCEEDED before (allowed): any proxy variable set made a name that did not resolve here pass, though the CLI
    fetches this URL without that proxy and resolves the name itself (a name server that answers late, then
    127.0.0.1)."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    body, decision = await _fetch(tmp_path, f"{url}://slow.attacker.example/")
    assert body["behavior"] == "deny"
    assert "could not be resolved" in str(decision.reason)


@pytest.mark.parametrize(
    "variables",
    [{"HTTPS_PROXY": "http://proxy:3128"}, {"https_proxy": "http://proxy:3128", "NO_PROXY": "localhost,.corp"}],
)
async def test_behind_a_proxy_that_carries_the_fetch_it_still_runs(
    tmp_path: Path, resolver: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch, variables: dict[str, str]
) -> None:
    """Pin: the proxy of the URL's scheme, the host not exempted, resolves the name: no answer here asks nothing."""
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    body, _ = await _fetch(tmp_path, "https://example.com/")
    assert body == {"behavior": "allow"}


# 5. Claude Code's Grep and hard links


@pytest.fixture
def linked_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with `~/.netrc`; a workspace whose `docs` holds `notes`, a hard link to a file outside it that is no
    credential file (a pnpm store's file, `~/.bash_history`), and whose `keys` holds `n`, a hard link to `~/.netrc`."""
    home = tmp_path / "h"
    home.mkdir()
    (home / ".netrc").write_text("machine x login u password round32-netrc\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(_protected, "_credential_cache", None)
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "index.js").write_text("module.exports = 1\n")
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    os.link(tmp_path / "store" / "index.js", ws / "docs" / "notes")
    (ws / "docs" / "a.md").write_text("a\n")
    (ws / "keys").mkdir()
    os.link(home / ".netrc", ws / "keys" / "n")
    return ws


async def test_grep_of_a_folder_holding_a_hard_link_to_an_ordinary_file_is_allowed(linked_ws: Path) -> None:
    """Pin: a folder with files of other names (pnpm's `node_modules`) is searched unasked: asking for each would
    refuse every such project, and no credential file is among them (each is checked by device and inode)."""
    body, decision = await _claude_answer(linked_ws, "Grep", {"pattern": "x", "path": "docs"})
    assert body == {"behavior": "allow"}, decision.reason


async def test_grep_of_the_hard_link_itself_is_asked(linked_ws: Path) -> None:
    """Pin (round 26): the file itself, with other names, is read only when asked."""
    body, decision = await _claude_answer(linked_ws, "Grep", {"pattern": "x", "path": "docs/notes"})
    assert body["behavior"] == "deny"
    assert "hard links" in str(decision.reason)


@pytest.mark.parametrize("path", ["keys", ".", None])
async def test_grep_of_a_folder_holding_a_hard_link_to_a_credential_file_is_asked(
    linked_ws: Path, path: str | None
) -> None:
    """Pin (rounds 18-20): the credential file under another name in the folder searched is found by its inode."""
    body, decision = await _claude_answer(
        linked_ws, "Grep", {"pattern": "password", **({"path": path} if path else {})}
    )
    assert body["behavior"] == "deny", decision.reason
    assert ".netrc" in str(decision.reason)


# 6. Attacks of this round on what earlier rounds did not cover


def test_attack_gzip_in_hex_is_replaced() -> None:
    """SUCCEEDED before: `gzip < .env | xxd -p` (the key compressed, in hex, 60 digits a line) came back whole."""
    hexed = gzip.compress(KEYED).hex()
    text = "\n".join(hexed[at : at + 60] for at in range(0, len(hexed), 60))
    out = redactor({"GEMINI_API_KEY": KEY})(f"$ gzip < .env | xxd -p\n{text}\n$ done\n")
    assert out == f"$ gzip < .env | xxd -p\n{REDACTED}\n$ done\n"


def test_attack_gzip_base64_in_a_json_string_is_replaced() -> None:
    """SUCCEEDED before (and before the fix of the run, after the decoder): `gzip | base64 | jq -Rs .` prints the
    block as one JSON string, its line breaks as `\\n`: the block read up to the first escape decoded to part of the
    key only."""
    import json

    blob = json.dumps(base64.encodebytes(gzip.compress(b"#" * 40 + KEYED)).decode())
    out = redactor({"GEMINI_API_KEY": KEY})(f'{{"data": {blob}}}')
    assert out.startswith('{"data": "[REDACTED]')


async def test_attack_a_key_compressed_in_a_tool_result_reaches_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: through the stream guard, every event a backend emits: a tool's result holding the key as
    `gzip | base64` reached the consumer whole."""
    from unified import ExecuteParams
    from unified._execute import EventStream
    from unified.events import SessionStarted, ToolResult, ToolUse
    from unified.testing import ScriptedBackend

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    block = base64.encodebytes(gzip.compress(KEYED)).decode()
    script: list[Any] = [
        SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp"),
        ToolUse(tool_use_id="t1", name="run_shell_command", input={"command": "gzip < .env | base64"}),
        ToolResult(tool_use_id="t1", output=block),
    ]
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=ScriptedBackend(script)) as stream:
        events = [event async for event in stream]
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert block.split("\n", 1)[0] not in str(result.output)
    assert REDACTED in str(result.output)


async def test_attack_a_key_compressed_in_a_tool_call_s_input_reaches_no_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: the model writes the key it read, compressed, into a file (`write_file`'s content): the
    `tool_use` event's input showed it whole."""
    from unified import ExecuteParams
    from unified._execute import EventStream
    from unified.events import SessionStarted, ToolUse
    from unified.testing import ScriptedBackend

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    block = base64.b64encode(zlib.compress(KEYED)).decode()
    script: list[Any] = [
        SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp"),
        ToolUse(tool_use_id="t1", name="write_file", input={"file_path": "x.txt", "content": f"data = '{block}'\n"}),
    ]
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=ScriptedBackend(script)) as stream:
        events = [event async for event in stream]
    [use] = [e for e in events if isinstance(e, ToolUse)]
    assert use.input == {"file_path": "x.txt", "content": f"data = '{REDACTED}'\n"}


def test_attack_a_long_block_is_read_in_linear_time() -> None:
    """Bounded (fail closed): a zlib header then 3 MB of base64, and a `<~` block of 3 MB, each longer than any block
    of `_encoded.BLOCK_MAX`: not decoded at all (ascii85's decoder is Python, 1 s a MB), replaced."""
    run = "eJw" + "A" * 3_000_000
    a85 = "<~" + "!" * 3_000_000 + "~>"
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert clean(f"{run}\n{a85}") == REDACTED + "\n" + REDACTED


def test_attack_many_small_blocks_are_read_in_linear_time() -> None:
    """Bounded: 50,000 gzip headers, each a block that ends early (no key, nothing replaced), and 100,000 `<~` with
    no `~>`: each read once."""
    text = "H4sIAAAAAAAAA " * 50_000 + "<~ " * 100_000
    clean = redactor({"GEMINI_API_KEY": KEY})
    assert clean(text) == text


def test_attack_two_uuencoded_blocks_in_a_row_are_both_replaced() -> None:
    """A second `uuencode` block right after the first one's `end` (a fix of this round: the search for the next
    `begin` started past where the first ended, and passed it by)."""
    out = redactor({"GEMINI_API_KEY": KEY})(_uu(b"nothing at all, a plain file\n" * 3) + _uu(KEYED, name="env"))
    assert out.startswith("begin 644 k\n")
    assert out.endswith(REDACTED)


def test_attack_uuencode_with_crlf_lines_is_replaced() -> None:
    """`uuencode` output through a Windows tool: CRLF line ends. The block is still read."""
    out = redactor({"GEMINI_API_KEY": KEY})(_uu(KEYED).replace("\n", "\r\n"))
    assert REDACTED in out
    assert not any(line.startswith("M") and len(line) > 40 for line in out.splitlines())


@pytest.mark.parametrize("query", ["#\u212aey=", "&api_\u212aey=", "?ſig=", ";SESSION_ID="])
def test_attack_query_names_re_folded_are_still_secret(query: str) -> None:
    """Pin of the fix: `re`'s case folding (the Kelvin sign is `k`, the long s `s`) is kept by the new scan, as the
    old expression matched them."""
    value = "v4lu3-0f-a-s3cr3t-t0k3n"
    assert redact_mapping(f"https://h.example/cb{query}{value}&x=1") == f"https://h.example/cb{query}{REDACTED}&x=1"


async def test_attack_no_proxy_naming_the_host_with_its_port_is_asked(
    tmp_path: Path, resolver: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before (allowed behind the proxy): `NO_PROXY=slow.attacker.example:443`, an entry with the port,
    exempts the fetch on that port, and a host-only reading missed it."""
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    monkeypatch.setenv("NO_PROXY", "slow.attacker.example:443")
    body, decision = await _fetch(tmp_path, "HTTPS://slow.attacker.example/")
    assert body["behavior"] == "deny"
    assert "could not be resolved" in str(decision.reason)


async def test_attack_both_readings_of_a_url_are_resolved(tmp_path: Path, resolver: dict[str, list[str]]) -> None:
    """Pin: `http://public.example\\@rebind.attacker.example/` is one host to Node and another to urlsplit (round 30):
    each is looked up, and the one answering 127.0.0.1 asks."""
    resolver["public.example"] = ["93.184.215.14"]
    resolver["rebind.attacker.example"] = ["127.0.0.1"]
    body, decision = await _fetch(tmp_path, "http://public.example\\@rebind.attacker.example/")
    assert body["behavior"] == "deny"
    assert "127.0.0.1" in str(decision.reason)


@pytest.mark.parametrize(
    "command",
    ["file -m ../h/.netrc a", "file --magic-file=/proc/self/environ a", "rg --ignore-file ../h/.netrc x", "rg -z x"],
)
async def test_attack_codex_read_only_shapes_that_read_elsewhere_are_asked(linked_ws: Path, command: str) -> None:
    """Pin (the last SUCCEEDED before): a magic or ignore file's lines are printed in its warnings: one outside the
    workspace is asked as any read there; `rg -z` now too, whatever it reads (the workspace without its link to a
    credential file, which asks any search of the tree)."""
    (linked_ws / "keys" / "n").unlink()
    actions = [{"type": "search", "command": command, "query": "x", "path": None}]
    answer, decision = await _codex_command(linked_ws, command, linked_ws, actions)
    assert answer == "decline", decision.reason


async def test_attack_grep_with_a_glob_of_the_hard_link_in_a_folder(linked_ws: Path) -> None:
    """The decision pinned (round 32): Grep of a folder is a search of a tree, judged by the credential files it may
    hold (none here, by device and inode): a glob that narrows it to a hard link to an ordinary file is allowed, as
    the folder's search is (asking for every such folder would refuse pnpm projects); through the same glob a hard
    link to a credential file is asked."""
    body, decision = await _claude_answer(linked_ws, "Grep", {"pattern": ".", "path": "docs", "glob": "notes"})
    assert body == {"behavior": "allow"}, decision.reason
    body, decision = await _claude_answer(linked_ws, "Grep", {"pattern": ".", "path": "keys", "glob": "n"})
    assert body["behavior"] == "deny"


def test_a_streamed_delta_shorter_than_any_whole_base85_form_is_not_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reviewer's: the base85 forms fold to 30 characters (ascii85's punctuation taken out), and `_loose_in` folded
    and searched every text from the shortest folded form on, so each text delta of 30 to 41 characters cost 3.1 us
    where it had cost 0.4 (`found_in`, one process). A base85 print of the key holds its whole form (a print with the
    punctuation taken out decodes to nothing): a text shorter than that is not folded; one that holds it is found."""
    clean = redactor({"GEMINI_API_KEY": KEY})
    whole = min(len(form) for form in _redaction._base85_forms(KEY) if len(_redaction._fold(form)) >= 16)
    assert clean.loose_from > len(clean.loose[-1])  # the shortest folded form is a base85 one
    assert clean.loose_from <= whole
    folded: list[str] = []
    fold = _redaction._fold

    def counted(text: str) -> str:
        folded.append(text)
        return fold(text)

    monkeypatch.setattr(_redaction, "_fold", counted)
    delta = "the model says: here is what I found in it"[: clean.loose_from - 1]
    assert not clean.found_in(delta)
    assert folded == []
    monkeypatch.undo()
    encoded = base64.a85encode(KEY.encode()).decode()
    assert clean.found_in(f"ok {encoded} ok")
    assert KEY not in clean(f"{encoded[:20]}\n{encoded[20:]}")
