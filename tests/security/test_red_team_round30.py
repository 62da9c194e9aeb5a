"""Red team, round 30: the forms round 29 left (measured there), and a tool's output shown before its key completes.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a key printed as 16-bit decimal words (`od -d`, `hexdump -d`), 16-bit octal words (`od -o`, `hexdump -o`), 32- or
  64-bit words in hex or decimal (`od -tx4`, `od -tx8`, `od -D`, `od -l`), rot13, base32, reversed and wrapped (`rev |
  fold`), the hex of its UTF-16, or an `xxd` dump whose lines were joined (`xxd | paste -s`, `xxd | tr -d '\\n'`)
  reached the tool's result and the events whole. Now `_redaction._byte_forms`, `_text_forms`, and `_dump_lines`
  reading an `xxd` offset inside a line; a dump's lines are read whole too (`_dump_views`: `hexdump -d`'s columns,
  two spaces and more apart, are no text column);
- a dump streamed line by line (`xxd`, `od -c`, `hexdump -C`, `od -x`) showed its first lines, a third of the key in
  hex and as text, in `tool_progress` events before the line that completed it (the result was redacted whole), and
  the shell's own progress line showed each line of `xxd`, `fold -w8` or `base64 -w12` of a key. Now a tool's
  output stream shows no piece of a key form `FRAGMENT_MIN` (12) folded characters long (`Redactor.fragment_spans`).

- under a user's rule allowing every shell command, what checks that a command writes no protected path missed code
  it runs from settings it was given: `LESS=--lesskey-src=k less a` (less's options from the environment: a key file
  whose `#env` section sets `LESSOPEN`, a command less runs, with no terminal too), `SHELL=./x flock l -c true`
  (`flock -c`, `script`, `parallel` run `$SHELL`), `MANOPT`, `SYSTEMD_PAGER`, `PARALLEL_SHELL`; less's `+` commands
  (`less '+!touch .envrc' a`, on a terminal: the Gemini CLI's shell may be one); and bash's `source x.sh` / `. x.sh`,
  where `bash x.sh` was already asked. Now they are code variables (`_shell_syntax.CODE_VARIABLES`), an `unsafe_words`
  pattern of less, and `[[input_writer]]` names;
- Claude Code's WebFetch of `http://169.254.169.254\\@example.com/` or `http://127.0.0.1\\u00ad/` ran unasked under a
  rule allowing web_fetch: urlsplit read example.com (the backslash in the user name) and NFKC kept the soft hyphen,
  where Node's parser, which fetches it, reads a backslash as a slash and takes out what IDNA ignores. Now
  `_urls._hosts` judges both readings.

Left, measured: compression (`gzip | base64`), ascii85, z85, uuencode, every other
character, a key's characters doubled: a command the model chooses can still print a secret it can read in a form no
redactor knows.
"""

from __future__ import annotations

import base64
import codecs
from typing import Any

import pytest

from unified._redaction import FRAGMENT_MIN, REDACTED, SplitGuard, redactor
from unified.tools import Decision, Policy, ToolCall, ToolRuntime, _protected
from unified.tools import _shell_syntax as syntax

pytestmark = [pytest.mark.anyio, pytest.mark.unit]

KEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
LONG = "sk-ant-api03-" + "Qw3rTy7Ui9Op1As5Df8Gh2Jk4Lz6Xc0Vb" * 3 + "-AA"
_KEYED = f"key={KEY}\n".encode()


def _words(data: bytes, size: int) -> list[int]:
    data += b"\0" * (-len(data) % size)
    return [int.from_bytes(data[at : at + size], "little") for at in range(0, len(data), size)]


def _od(data: bytes, size: int, form: str, width: int, *, offsets: bool = True) -> str:
    """What `od` prints with words of `size` bytes in `form` (checked against GNU od 8.32: `-d`, `-An -d`, `-o`,
    `-An -tx4`, `-An -tx8` print exactly this)."""
    lines = []
    for at in range(0, len(data), 16):
        body = "".join(f" {format(word, form):>{width}}" for word in _words(data[at : at + 16], size))
        lines.append((f"{at:07o}" if offsets else "") + body)
    return "\n".join([*lines, f"{len(data):07o}"] if offsets else lines) + "\n"


def _hexdump(data: bytes, form: str) -> str:
    """What `hexdump -d` (`05d`) and `hexdump -o` (`06o`) print (checked against util-linux 2.37)."""
    lines = []
    for at in range(0, len(data), 16):
        pad = "   " if form == "05d" else "  "
        line = f"{at:07x}" + "".join(f"{pad}{format(w, form)}" for w in _words(data[at : at + 16], 2))
        lines.append(line.ljust(71))
    return "\n".join([*lines, f"{len(data):07x}"]) + "\n"


def _xxd(data: bytes) -> str:
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        hexed = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{at:08x}: {hexed:<39}  {shown}")
    return "\n".join(lines) + "\n"


def _fold(text: str, width: int) -> str:
    return "\n".join(text[at : at + width] for at in range(0, len(text), width)) + "\n"


_TEXT = _KEYED.decode()
FORMS = {
    "od -d": _od(_KEYED, 2, "d", 5),
    "od -An -d": _od(_KEYED, 2, "d", 5, offsets=False),
    "od -d, the key at an odd offset": _od(b"k" + _KEYED, 2, "d", 5),
    "od -o": _od(_KEYED, 2, "06o", 6),
    "od -An -tx4": _od(_KEYED, 4, "08x", 8, offsets=False),
    "od -An -tx8": _od(_KEYED, 8, "016x", 16, offsets=False),
    "od -D (32-bit decimal words)": _od(_KEYED, 4, "d", 10),
    "od -l (64-bit decimal words)": _od(_KEYED, 8, "d", 20),
    "od -An -tu4": _od(_KEYED, 4, "d", 10, offsets=False),
    "hexdump -d": _hexdump(_KEYED, "05d"),
    "hexdump -o": _hexdump(_KEYED, "06o"),
    "rot13": codecs.encode(_TEXT, "rot13"),
    "base32": base64.b32encode(_KEYED).decode() + "\n",
    "base32, wrapped": _fold(base64.b32encode(b"the key: " + _KEYED).decode(), 76),
    "rev | fold -w5": _fold(KEY[::-1], 5),
    "fold -w1 | tac": "\n".join(KEY[::-1]) + "\n",
    "UTF-16LE hex": _TEXT.encode("utf-16-le").hex(),
    "UTF-16BE hex": _TEXT.encode("utf-16-be").hex(),
    "xxd | paste -s": _xxd(_KEYED).rstrip("\n").replace("\n", "\t") + "\n",
    "xxd | tr -d '\\n'": _xxd(_KEYED).replace("\n", ""),
    "xxd | paste -sd ' '": _xxd(b"export TOKEN=" + _KEYED).rstrip("\n").replace("\n", " ") + "\n",
}


@pytest.mark.parametrize("form", list(FORMS))
def test_a_key_printed_in_another_form_is_replaced(form: str) -> None:
    """SUCCEEDED before: each form reached the tool output and the events whole."""
    printed = FORMS[form]
    clean = redactor(env={}, extra=[KEY])
    assert clean.found_in(f"out: {printed} end")
    shown = clean(f"out: {printed} end")
    assert REDACTED in shown
    squeezed = shown.replace(" ", "").replace("\n", "").replace("\t", "")
    for piece in (KEY[4:16], KEY[20:32], KEY.encode().hex()[16:40]):
        assert piece not in squeezed, shown
    assert squeezed.count(REDACTED) <= 3  # replaced where it stands, not the whole text over and over


@pytest.mark.parametrize("form", ["rot13", "base32", "od -d", "xxd | paste -s"])
def test_a_long_key_in_the_new_forms_is_replaced(form: str) -> None:
    """SUCCEEDED before: an Anthropic key (115 characters) rot13, in base32, as `od -d` words or a joined dump."""
    keyed = f"key={LONG}\n".encode()
    printed = {
        "rot13": codecs.encode(keyed.decode(), "rot13"),
        "base32": base64.b32encode(keyed).decode(),
        "od -d": _od(keyed, 2, "d", 5),
        "xxd | paste -s": _xxd(keyed).replace("\n", "\t"),
    }[form]
    assert REDACTED in redactor(env={}, extra=[LONG])(printed)


@pytest.mark.parametrize(
    "text",
    [
        "0000000 25963 15737 18753 24954 31059 11588 29753 29267\n0000020 25963 12855\n",  # od -d of other text
        "00000000: 6865 6c6c 6f20 776f 726c 640a  hello world.\t00000010: 6865 6c6c  hello",
        "NBSWY3DPEB3W64TMMQ======\n",  # base32 of "hello world"
        "uryyb jbeyq, n ebg13 zrffntr\n",
        "2026-12-06T03:40:03Z 1733456403 8224 25963 31059 ok\n" * 20,
        '{"a": 1, "b": "x: y"}',
    ],
)
def test_ordinary_text_is_left_as_it_is(text: str) -> None:
    """Pin: text holding no form of the key is unchanged, read as a joined dump or as words."""
    assert redactor(env={}, extra=[KEY, LONG])(text) == text


# 2. a tool's output streamed line by line

_NEWLINE = "\\n"  # as `od -c` shows a line break

STREAMED = {
    "xxd": _xxd(_KEYED),
    "od -c": "".join(
        f"{at:07o}" + "".join(f"{_NEWLINE if b == 10 else chr(b):>4}" for b in _KEYED[at : at + 16]) + "\n"
        for at in range(0, len(_KEYED), 16)
    ),
    "od -x": _od(_KEYED, 2, "04x", 4),
    "hexdump -C": "".join(
        f"{at:08x}  "
        + f"{' '.join(f'{b:02x}' for b in _KEYED[at : at + 8]):<23}  "
        + f"{' '.join(f'{b:02x}' for b in _KEYED[at + 8 : at + 16]):<23}  "
        + "|"
        + "".join(chr(b) if 32 <= b < 127 else "." for b in _KEYED[at : at + 16])
        + "|\n"
        for at in range(0, len(_KEYED), 16)
    ),
    "xxd -c 8": "".join(
        f"{at:08x}: {' '.join(_KEYED[i : i + 2].hex() for i in range(at, min(at + 8, len(_KEYED)), 2)):<19}  "
        + "".join(chr(b) if 32 <= b < 127 else "." for b in _KEYED[at : at + 8])
        + "\n"
        for at in range(0, len(_KEYED), 8)
    ),
}


def _pieces_of(key: str) -> list[str]:
    """The key's pieces `FRAGMENT_MIN` long, as text and in hex: none may be shown before the key completes."""
    hexed = key.encode().hex()
    return [key[at : at + FRAGMENT_MIN] for at in range(len(key) - FRAGMENT_MIN + 1)] + [
        hexed[at : at + FRAGMENT_MIN] for at in range(0, len(hexed) - FRAGMENT_MIN + 1, 2)
    ]


def _squeezed(text: str) -> str:
    """`text` as its folded reader sees it, cased as written: no spaces, offsets' colons or dump bars."""
    return "".join(c for c in text if c.isalnum() or c in "-_")


@pytest.mark.parametrize("dump", list(STREAMED))
def test_a_dump_streamed_line_by_line_shows_no_piece_of_the_key(dump: str) -> None:
    """SUCCEEDED before: the first lines of the dump (a third of the key, in hex and as text) were shown by a tool's
    output stream before the line that completed the key."""
    guard = SplitGuard(redactor(env={}, extra=[KEY]), fragments=True)
    shown = [guard.feed(line) for line in STREAMED[dump].splitlines(keepends=True)] + [guard.release()]
    joined = "\n".join(_squeezed(piece) for piece in shown)
    for piece in _pieces_of(KEY):
        assert piece not in joined, (piece, shown)
    assert REDACTED in "".join(shown)


def test_a_short_key_s_dump_streamed_line_by_line_shows_no_piece() -> None:
    """SUCCEEDED before: with a key of 20 characters, the stream kept 40 of what it showed: the text column of the
    dump's first line, held back, then shown with the second line whose offset cut it from the rest."""
    key = "AIzaSyD-9tSrke72PouQ"
    keyed = f"key={key}\n".encode()
    guard = SplitGuard(redactor(env={}, extra=[key]), fragments=True)
    shown = [guard.feed(line) for line in _xxd(keyed).splitlines(keepends=True)] + [guard.release()]
    joined = "\n".join(_squeezed(piece) for piece in shown)
    for piece in _pieces_of(key):
        assert piece not in joined, (piece, shown)


async def test_tool_progress_events_of_a_dump_show_no_piece_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: a backend's `tool_progress` messages (Codex's command output deltas), a dump's line each,
    showed its first lines whole."""
    from unified import ExecuteParams
    from unified._execute import EventStream
    from unified.events import SessionStarted, ToolProgress, ToolUse
    from unified.testing import ScriptedBackend

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    started = SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp")
    use = ToolUse(tool_use_id="t1", name="run_shell_command", input={"command": "xxd k"})
    lines = STREAMED["xxd"].splitlines(keepends=True)
    events: list[Any] = [started, use, *(ToolProgress(tool_use_id="t1", status="output", message=m) for m in lines)]
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=ScriptedBackend(events)) as stream:
        got = [event async for event in stream]
    shown = [str(e.message or "") for e in got if e.type == "tool_progress"]
    joined = "\n".join(_squeezed(piece) for piece in shown)
    for piece in _pieces_of(KEY):
        assert piece not in joined, (piece, shown)


@pytest.mark.parametrize("printer", ["xxd", "fold -w8", "base64 -w12", "od -c"])
def test_the_shell_s_progress_line_shows_no_piece_of_the_key(printer: str) -> None:
    """SUCCEEDED before: the progress line of `run_shell_command` (the last line of the output so far) showed each line
    of the dump, or of the key folded (`fold -w8`: `SyD-9tSr`, `ke72PouQ`), while the rest was to come."""
    from unified.tools._shell import _progress_line

    output = {
        "xxd": STREAMED["xxd"],
        "fold -w8": _fold(_TEXT.rstrip("\n"), 8),
        "base64 -w12": _fold(base64.b64encode(_KEYED).decode(), 12),
        "od -c": STREAMED["od -c"],
    }[printer]
    clean = redactor(env={}, extra=[KEY])
    lines = output.splitlines(keepends=True)
    shown = [_progress_line(bytearray("".join(lines[:n]).encode()), clean) for n in range(1, len(lines))]
    for line in shown:
        assert not any(piece in _squeezed(line) for piece in _pieces_of(KEY)), shown
        assert not any(chunk in line for chunk in ("SyD-9tSr", "ke72PouQ", "MnMX-a7e", "ZSW0jkFM")), shown
    inner = lines[1:-1]  # the key's own lines: each a piece of its form (the first holds `key=`)
    assert not any(line.strip() in shown for line in inner), shown


@pytest.mark.parametrize(
    "lines",
    [
        ["building 12 of 40 targets\n", "compiled src/main.rs in 0.81s\n", "linking 0123456789abcdef\n"],
        ["00000000: 6865 6c6c 6f20 776f 726c 640a  hello world.\n", "00000010: 0a  .\n"],
        [f"{n:>8} {n * 7919 % 100000:>8}\n" for n in range(40)],
    ],
)
def test_ordinary_tool_output_streams_as_it_is(lines: list[str]) -> None:
    """Pin: a tool's output holding no piece of a key is shown as it came, line by line."""
    guard = SplitGuard(redactor(env={}, extra=[KEY, LONG]), fragments=True)
    assert "".join(guard.feed(line) for line in lines) + guard.release() == "".join(lines)


# 3. code a command runs from the settings it is given, under an allow rule

EVERY_COMMAND = '[[rule]]\nname = "user-shell"\ntoolName = "run_shell_command"\ndecision = "allow"\n'


def _unasked(ws: Any, command: str) -> bool:
    """Whether `command` runs unasked under the rule allowing every shell command: the policy allows it and it
    writes no protected path (`_protected.shell_protected`), as `test_protected_shell_attacks` judges."""
    verdict = Policy.default().with_toml(EVERY_COMMAND).evaluate("run_shell_command", {"command": command}, "default")
    return verdict.decision is Decision.ALLOW and _protected.shell_protected(syntax.parse(command), ws, (ws,)) is None


SETTINGS_HOLES = [
    "LESS=--lesskey-src=notes.txt less a.txt",
    "LESS='-k notes.txt' less a.txt",
    "export LESS=--lesskey-src=notes.txt; less a.txt",
    "env LESS=-knotes.txt less a.txt",
    "SHELL=./x.sh flock /tmp/l -c true",
    "export SHELL=./x.sh; script -q -c true /dev/null",
    "MANOPT='-P ./x.sh' man ls",
    "SYSTEMD_PAGER=./x.sh systemctl status",
    "PARALLEL_SHELL=./x.sh parallel echo ::: a",
    "less '+!touch .envrc' a.txt",
    "less $'+/x\\n!touch .envrc\\n' a.txt",
    "less '+|touch .envrc' a.txt",
    "less ++!x a.txt",
    "pager '+!touch .envrc' a.txt",
    "source x.sh",
    ". ./x.sh",
    "source -- x.sh",
]


@pytest.mark.parametrize("command", SETTINGS_HOLES)
def test_code_run_from_a_command_s_settings_is_asked(tmp_path: Any, command: str) -> None:
    """SUCCEEDED before: each ran unasked under the rule allowing every command, though the code it runs (a key file's
    LESSOPEN, `$SHELL`, less's `!`, a sourced script) may write any path (`bash x.sh` was asked)."""
    assert not _unasked(tmp_path, command)


@pytest.mark.parametrize(
    "command",
    ["less a.txt", "less +20 a.txt", "less +G a.txt", "less +F log.txt", "less +/needle a.txt", "less -N a.txt"],
)
def test_plain_less_still_runs_unasked(tmp_path: Any, command: str) -> None:
    """Pin: less at a line, at the end, following, or at a search runs unasked as before."""
    assert _unasked(tmp_path, command)


async def test_the_runtime_asks_them_as_protected_writes(tmp_path: Any) -> None:
    """The same through unified's own shell tool: each is put to the user (rule `protected-paths`), none runs."""
    ws = tmp_path / "ws"
    ws.mkdir()
    policy = Policy.default().with_toml(EVERY_COMMAND)
    calls = [ToolCall(str(i), "run_shell_command", {"command": c}) for i, c in enumerate(SETTINGS_HOLES[:6])]
    async with ToolRuntime(ws, approval_mode="default", policy=policy) as tools:
        outcomes = await tools.run_batch(calls)
    assert [o.decision.rule if o.decision else None for o in outcomes] == ["protected-paths"] * len(calls)


# 4. a URL Node reads another way than urlsplit

ALLOW_FETCH = '[[rule]]\ntoolName = "web_fetch"\ndecision = "allow"\npriority = 100\n'
BACKSLASHED = [
    "http://169.254.169.254\\@example.com/latest/meta-data/",
    "http://127.0.0.1\\@example.com/",
    "http://127.0.0.1:8080\\@example.com/admin",
    "https://[::1]\\@example.com/",
    "http://10.0.0.1\\x@example.com/",
    "http:\\\\127.0.0.1\\",
    "http://169.254.169.254\\\\@example.com/",
    "HTTP://169.254.169.254\\@example.com/",
    "http://example.com\\\\@169.254.169.254/",  # example.com to Node, the address to urlsplit: either is judged
]


@pytest.mark.parametrize("url", BACKSLASHED)
async def test_a_claude_web_fetch_of_a_backslashed_url_is_asked(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    """SUCCEEDED before: urlsplit read the host after the `@` (example.com, public), while Node's URL parser, which
    fetches it, reads a backslash as a slash: the host is the address before it (169.254.169.254, the cloud's
    metadata service); under an allow rule for web_fetch the fetch ran unasked."""
    from tests.security.test_red_team_round7 import _claude_answer
    from unified import _urls

    async def public(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    monkeypatch.setattr(_urls, "_addresses", public)
    body, decision = await _claude_answer(
        tmp_path, "WebFetch", {"url": url, "prompt": "x"}, Policy.default().with_toml(ALLOW_FETCH)
    )
    assert body["behavior"] == "deny", body
    assert decision.rule == "local-network"


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/a\\b",
        "https://example.com/?q=a\\@127.0.0.1",
        "https://user\\x:pw@example.com/",
    ],
)
def test_a_backslash_that_moves_no_host_here_is_left_alone(url: str) -> None:
    """Pin: a backslash in the path or query names no other host."""
    from unified._urls import local_target

    assert local_target(url) is None


IGNORED_BY_IDNA = [
    "http://127.0.0.1\u00ad/",  # a soft hyphen
    "http://127\u200b.0.0.1/",  # a zero-width space
    "http://local\u00adhost/",
    "http://169.254.169.254\ufe0f/",  # a variation selector
    "http://metadata.google\u00ad.internal/",
    "http://127\u2060.0.0.1/",  # a word joiner
    "http://0x7f\u200b.1/",
]


@pytest.mark.parametrize("url", IGNORED_BY_IDNA)
def test_a_host_with_a_character_idna_ignores_is_read_without_it(url: str) -> None:
    """SUCCEEDED before: NFKC keeps a soft hyphen, a zero-width space, a word joiner or a variation selector, so the
    host was a public-looking name; Node's parser maps the host as UTS 46 does, which takes them out: 127.0.0.1,
    localhost, the metadata service."""
    from unified._urls import local_target

    assert local_target(url) is not None


def test_a_public_name_with_one_stays_public() -> None:
    """Pin: `exa\\u00admple.com` is example.com to IDNA, a public name."""
    from unified._urls import local_target

    assert local_target("http://exa\u00admple.com/") is None


class _Chunks:
    """A server's stderr, read a piece at a time (what `_pass_on_stderr` iterates)."""

    def __init__(self, pieces: list[bytes]) -> None:
        self._pieces = pieces

    def __aiter__(self) -> Any:
        return self._iterate()

    async def _iterate(self) -> Any:
        for piece in self._pieces:
            yield piece


async def test_an_mcp_server_s_stderr_dump_shows_no_piece_of_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: an MCP server's stderr, a dump line by line, was written to ours with the first lines of the
    key's dump whole (its guard held back only a key form's beginning)."""
    import anyio

    from unified.tools import _mcp_transport

    written: list[str] = []
    monkeypatch.setattr(_mcp_transport, "_write_stderr", written.append)
    lines = [line.encode() for line in STREAMED["xxd"].splitlines(keepends=True)]
    done = anyio.Event()
    clean = redactor(env={}, extra=[KEY])
    await _mcp_transport._pass_on_stderr(_Chunks(lines), "s", clean, done, anyio.CancelScope())  # type: ignore[arg-type]
    joined = "\n".join(_squeezed(piece) for piece in written)
    for piece in _pieces_of(KEY):
        assert piece not in joined, (piece, written)


def test_a_piece_is_found_anywhere_in_a_long_message() -> None:
    """Pin (`Redactor.fragment_spans` looks at every fifth position first): a piece of the key 12 to 20 characters
    long at any offset of a long build log is found where it stands, and the log around it is left alone."""
    clean = redactor(env={}, extra=[KEY])
    log = "".join(f"step {n} ok, module {n * 7}\n" for n in range(5000))
    assert clean.fragment_spans(log) == []
    hexed = KEY.encode().hex()
    for shift in range(5):
        for size in (FRAGMENT_MIN, 15, 20):
            piece = hexed[3 + shift : 3 + shift + size]
            at = len(log) // 2 + shift
            text = f"{log[:at]} {piece} {log[at:]}"
            assert clean.fragment_spans(text) == [(at + 1, at + 1 + size)], (shift, size)
            assert clean.fragment_spans(f"{log[:at]} {piece[1:]} {log[at:]}") == [] or size > FRAGMENT_MIN
