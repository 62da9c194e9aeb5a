"""Red team, round 29: secrets printed in forms the redactor did not know, and stores it did not see.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a key printed with any separator between its characters (tabs, commas, `, `, `:`, a colour code each), as a hex dump
  with offsets (`xxd`, `od -c`, `hexdump -C`, `od -An -tx1`), every byte percent-encoded (`%41%49...`), base64 wrapped
  onto lines (`base64` wraps at 76 columns: any secret of 58 bytes or more), or base64 of base64, reached the model and
  the events whole. Now `Redactor.loose` holds every form (the key, its hex, its base64 and its base64's base64)
  lower-cased with all but letters and digits taken out, looked for in the text so folded, and in a hex dump's columns
  read apart from its offsets (`_redaction._dump_views`, a match there replacing the dump's lines whole);
- a key re-cased at random and split across two text deltas without a line break (round 27 held back a loose form's
  beginning only when a piece held a line break): both halves reached the events. Now the loose hold runs on every
  piece, and a loose form that begins in what was shown is still replaced from there on;
- a caller's file session store wrapped in an object of its own (a cache, a lock, a metrics layer around
  `FileSessionStore`) was no store `_execute._protect_store` recognised: a Claude Code Read of another session's file
  in it ran unasked. Now the attributes of the store are searched (a few levels, a bounded count) for a file store.

- the key's bytes one by one in decimal (`od -tu1`, `&#65;`), octal (`od -b`), with `x`/`0x` before each hex
  (`&#x41;`, `\\x41`, `xxd -i`), or in little-endian words (`od -x`, `hexdump`): now `_redaction._byte_forms`.

Left, measured (docs/protocol.md, `_printed_forms`): 16-bit decimal words (`od -d`), a dump whose lines were joined,
rot13 and other ciphers: a command the model chooses can always print a secret it can read in a form no redactor
knows.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from tests.security.test_red_team_round7 import _claude_answer
from tests.security.test_red_team_round18 import _streamed
from unified._execute import EventStream
from unified._redaction import REDACTED, SplitGuard, redactor
from unified.sessions import FileSessionStore
from unified.tools import _protected
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.unit]

KEY = "AIzaSyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
LONG = "sk-ant-api03-" + "Qw3rTy7Ui9Op1As5Df8Gh2Jk4Lz6Xc0Vb" * 3 + "-AA"  # 115 characters: base64 wraps it


def _xxd(data: bytes) -> str:
    """What `xxd` prints (checked against xxd 2022-01-14's output of the same bytes)."""
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        hexed = " ".join(chunk[i : i + 2].hex() for i in range(0, len(chunk), 2))
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{at:08x}: {hexed:<39}  {shown}")
    return "\n".join(lines) + "\n"


def _hexdump_c(data: bytes) -> str:
    """What `hexdump -C` prints."""
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        left = " ".join(f"{b:02x}" for b in chunk[:8])
        right = " ".join(f"{b:02x}" for b in chunk[8:])
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{at:08x}  {left:<23}  {right:<23}  |{shown}|")
    return "\n".join([*lines, f"{len(data):08x}"]) + "\n"


def _od_c(data: bytes) -> str:
    """What `od -c` prints (octal offsets, each byte in four columns)."""
    names = {10: "\\n", 9: "\\t", 0: "\\0"}
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        lines.append(f"{at:07o}" + "".join(f"{names.get(b, chr(b)):>4}" for b in chunk))
    return "\n".join([*lines, f"{len(data):07o}"]) + "\n"


def _od_tx1(data: bytes) -> str:
    """What `od -An -tx1` prints."""
    return "".join(" " + " ".join(f"{b:02x}" for b in data[at : at + 16]) + "\n" for at in range(0, len(data), 16))


def _od_x(data: bytes, base: int = 8, width: int = 7) -> str:
    """What `od -x` prints (octal offsets; `hexdump` the same with hex ones): little-endian 16-bit words."""
    if len(data) % 2:
        data += b"\0"
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        words = " ".join(chunk[i : i + 2][::-1].hex() for i in range(0, len(chunk), 2))
        lines.append(f"{at:0{width}{'o' if base == 8 else 'x'}} {words}")
    return "\n".join(lines) + "\n"


def _od_b(data: bytes) -> str:
    """What `od -b` prints: octal offsets, octal bytes."""
    lines = [f"{at:07o} " + " ".join(f"{b:03o}" for b in data[at : at + 16]) for at in range(0, len(data), 16)]
    return "\n".join(lines) + "\n"


def _wrapped_base64(data: bytes) -> str:
    """What `base64` prints: 76 columns a line."""
    encoded = base64.b64encode(data).decode()
    return "\n".join(encoded[i : i + 76] for i in range(0, len(encoded), 76)) + "\n"


_KEYED = f"key={KEY}\n".encode()

FORMS = {
    "tabs": "\t".join(KEY),
    "commas": ",".join(KEY),
    "comma and space (a Python list)": str(list(KEY)),
    "colons": ":".join(KEY),
    "a colour code each": "".join(f"\x1b[3{i % 7}m{c}" for i, c in enumerate(KEY)) + "\x1b[0m",
    "xxd": _xxd(_KEYED),
    "hexdump -C": _hexdump_c(_KEYED),
    "od -c": _od_c(_KEYED),
    "od -An -tx1": _od_tx1(_KEYED),
    "every byte percent-encoded": "".join(f"%{b:02X}" for b in KEY.encode()),
    "base64 of base64": base64.b64encode(base64.b64encode(KEY.encode())).decode(),
    "base64 of base64, in a line": base64.b64encode(base64.b64encode(_KEYED)).decode(),
    "hex with a space each byte": " ".join(f"{b:02x}" for b in KEY.encode()),
}

FORMS_2 = {  # the second batch: bytes one by one, in other bases and escapes
    "od -x (little-endian words)": _od_x(_KEYED),
    "hexdump (its default, od -x's)": _od_x(_KEYED, 16, 7),
    "od -x, the key at an odd offset": _od_x(b"k=" + _KEYED[3:]),
    "od -b (octal)": _od_b(_KEYED),
    "od -An -tu1 (decimal)": "".join(f"{b:4d}" for b in _KEYED),
    "xxd -i": ", ".join(f"0x{b:02x}" for b in _KEYED),
    "HTML decimal entities": "".join(f"&#{b};" for b in KEY.encode()),
    "HTML hex entities": "".join(f"&#x{b:x};" for b in KEY.encode()),
    "C escapes": "".join(f"\\x{b:02x}" for b in KEY.encode()),
}
FORMS.update(FORMS_2)


@pytest.mark.parametrize("form", list(FORMS))
def test_a_key_printed_in_another_form_is_replaced(form: str) -> None:
    """SUCCEEDED before: each form reached the tool output and the events whole."""
    printed = FORMS[form]
    clean = redactor(env={}, extra=[KEY])
    assert clean.found_in(f"out: {printed} end")
    shown = clean(f"out: {printed} end")
    assert REDACTED in shown
    for piece in (KEY[:12], KEY[12:24], KEY[24:], KEY.encode().hex()[16:40]):
        assert piece not in shown.replace(" ", "").replace("\n", ""), shown


@pytest.mark.parametrize("form", ["xxd", "hexdump -C"])
def test_a_dump_s_text_column_goes_with_its_lines(form: str) -> None:
    """SUCCEEDED before: the text column of `xxd` / `hexdump -C` shows the key 16 characters a line; now each line of
    the dump that shows part of it is replaced, the text column too."""
    shown = redactor(env={}, extra=[KEY])(FORMS[form])
    for piece in ("9tSr", "ke72", "ZSW0"):
        assert piece not in shown, shown


def test_a_long_key_base64_wrapped_onto_lines_is_replaced() -> None:
    """SUCCEEDED before: `base64` wraps at 76 columns, so the base64 of a key of 58 bytes or more (an Anthropic key is
    108) stood on two lines, and no base64 form (searched as written) was found whole."""
    printed = _wrapped_base64(LONG.encode())
    assert "\n" in printed.strip()
    clean = redactor(env={}, extra=[LONG])
    shown = clean(printed)
    assert REDACTED in shown
    assert printed.split("\n")[0][8:60] not in shown


def test_the_forms_are_replaced_in_json_and_in_the_model_s_answer() -> None:
    """SUCCEEDED before: a tool's output (JSON) held the tab-separated key whole."""
    clean = redactor(env={}, extra=[KEY])
    value = {"output": f"x\t{FORMS['tabs']}\ty", "other": [FORMS["od -c"]]}
    hidden = clean.json(value)
    assert KEY[10:20] not in json.dumps(hidden).replace("\\t", "")
    assert hidden["other"][0].count(REDACTED) >= 1


@pytest.mark.parametrize(
    "text",
    [
        "a list, of, words, that, is, ordinary",
        "00000000: 6865 6c6c 6f20 776f 726c 640a            hello world.\n",
        "7390972 protected: a credential hit\n9d96a94 protected: a hit in the ids\n",
        "\t".join("ordinary text with tabs in it"),
        " ".join(f"{b:02x}" for b in b"the quick brown fox jumps"),
    ],
)
def test_ordinary_text_is_left_as_it_is(text: str) -> None:
    """Pin: text holding no form of the key, folded or read as a dump, is unchanged."""
    assert redactor(env={}, extra=[KEY, LONG])(text) == text


@pytest.mark.parametrize("cut", [4, 10, 20, 30])
async def test_a_re_cased_key_split_across_two_deltas_is_replaced(monkeypatch: pytest.MonkeyPatch, cut: int) -> None:
    """SUCCEEDED before: a mixed-case key split without a line break was held back by nothing (the loose hold ran only
    on a piece holding a line break), and each half reached the events."""
    mixed = "".join(c.upper() if i % 3 else c.lower() for i, c in enumerate(KEY))
    assert mixed not in (KEY, KEY.upper(), KEY.lower())
    shown = "".join(await _streamed(monkeypatch, [f"the key is {mixed[:cut]}", f"{mixed[cut:]} done"], KEY))
    assert REDACTED in shown, shown
    assert mixed[cut : cut + 8] not in shown, shown
    assert mixed[-8:] not in shown, shown


@pytest.mark.parametrize("form", ["tabs", "commas", "od -An -tx1", "every byte percent-encoded"])
async def test_a_separated_key_split_across_two_deltas_is_replaced(monkeypatch: pytest.MonkeyPatch, form: str) -> None:
    """SUCCEEDED before: the form's halves reached the events (no form of it was known at all)."""
    printed = FORMS[form]
    at = len(printed) // 2
    shown = "".join(await _streamed(monkeypatch, [f"see {printed[:at]}", f"{printed[at:]} done"], KEY))
    assert REDACTED in shown, shown
    assert printed[at : at + 12] not in shown, shown


def test_a_loose_form_begun_in_what_was_shown_is_still_replaced() -> None:
    """SUCCEEDED before: three characters of a re-cased key (too few to hold back) were shown, and the rest, being no
    whole loose form on its own, was shown too: 36 of its 39 characters."""
    guard = SplitGuard(redactor(env={}, extra=[KEY]))
    mixed = KEY.swapcase()
    shown = guard.feed("key: " + mixed[:3]) + guard.feed(mixed[3:] + " end") + guard.release()
    assert mixed[3:20] not in shown, shown
    assert shown.endswith(f"{REDACTED} end"), shown


# 3. a caller's store, wrapped


class _Wrapped:
    """A caller's own store around the file store: what a cache or a lock layer looks like."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Slotted:
    __slots__ = ("backing",)

    def __init__(self, backing: object) -> None:
        self.backing = backing

    def __getattr__(self, name: str) -> Any:
        return getattr(self.backing, name)


class _Routing:
    """A store routing to others it holds in a mapping or a list (a primary and a replica, one a backend)."""

    def __init__(self, stores: Any) -> None:
        self._stores = stores

    def __getattr__(self, name: str) -> Any:
        stores = self._stores
        return getattr(next(iter(stores.values())) if isinstance(stores, dict) else stores[0], name)


@pytest.fixture
def store_ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("UNIFIED_SESSION_STORE_URL", raising=False)
    monkeypatch.setattr(_protected, "_credential_cache", None)
    ws = tmp_path / "ws"
    (ws / "store" / "claude-code" / "ab").mkdir(parents=True)
    (ws / "store/claude-code/ab/abcdef.json").write_text('{"header": {}, "state": "hunter2"}')
    (ws / "plain.json").write_text("{}")
    return ws


@pytest.mark.parametrize(
    "wrap",
    [
        pytest.param(_Wrapped, id="attribute"),
        pytest.param(lambda s: _Wrapped(_Wrapped(s)), id="twice"),
        pytest.param(_Slotted, id="slots"),
        pytest.param(lambda s: _Routing({"primary": s}), id="in-a-dict"),
        pytest.param(lambda s: _Routing([s]), id="in-a-list"),
    ],
)
async def test_a_wrapped_caller_s_store_is_protected(store_ws: Path, wrap: Any) -> None:
    """SUCCEEDED before: the CLI's Read of another session's file in a wrapped caller's store ran unasked."""
    store = wrap(FileSessionStore(store_ws / "store"))
    EventStream(ExecuteParams(prompt="hi", backend="claude-code", cwd=store_ws, session_store=store))
    body, decision = await _claude_answer(store_ws, "Read", {"file_path": "store/claude-code/ab/abcdef.json"})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)
    body, _ = await _claude_answer(store_ws, "Read", {"file_path": "plain.json"})
    assert body["behavior"] == "allow", body


def test_a_store_that_refers_to_itself_is_searched_in_bounded_time(store_ws: Path) -> None:
    """Pin: a wrapper cycle, and a very wide one, end the search (no recursion error, no hang)."""
    from unified._execute import _file_stores

    loop = _Wrapped(None)
    loop._inner = loop
    assert list(_file_stores(loop)) == []
    wide = _Wrapped([object() for _ in range(100_000)] + [FileSessionStore(store_ws / "store")])
    assert list(_file_stores(wide)) == []  # past the bound: not searched, as before


def test_quoted_url_parts_stay_readable() -> None:
    """Pin: percent-encoded text that holds no key is left as it is."""
    text = urllib.parse.quote("a path/with spaces and ünïcode")
    assert redactor(env={}, extra=[KEY])(text) == text


# 4. files that run code, or choose where it comes from, that no protected pattern named

NEWLY_PROTECTED = [
    ".lfsconfig",
    "sub/.lfsconfig",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".xonshrc",
    ".config/xonsh/rc.xsh",
    ".config/nushell/config.nu",
    ".pdbrc",
    ".pryrc",
    ".octaverc",
    ".guile",
    ".sbclrc",
    ".racketrc",
    ".nanorc",
    ".config/nano/nanorc",
    ".muttrc",
    ".mailcap",
    ".forward",
    ".yarn/releases/yarn-4.1.0.cjs",
    ".yarn/plugins/@yarnpkg/plugin-x.cjs",
    ".gemrc",
    ".bundle/config",
    ".config/uv/uv.toml",
    ".config/pypoetry/config.toml",
]


@pytest.mark.parametrize("path", NEWLY_PROTECTED)
async def test_a_write_of_a_file_that_runs_code_later_is_asked(tmp_path: Path, path: str) -> None:
    """SUCCEEDED before: auto_edit wrote each unasked (`.pdbrc`'s `!import os; os.system(...)` runs at the next
    `breakpoint()`, `.yarn/releases/*.cjs` at the next `yarn`, `.lfsconfig`'s `lfs.url` gets the next push)."""
    from unified.tools import ToolCall, ToolRuntime

    ws = tmp_path / "ws"
    ws.mkdir()
    async with ToolRuntime(ws, approval_mode="auto_edit") as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "write_file", {"file_path": path, "content": "pwned\n"})])
    assert outcome.is_error
    assert outcome.decision is not None
    assert outcome.decision.rule == "protected-paths"
    assert not (ws / path).exists()


@pytest.mark.parametrize("path", [".pdbrc", ".yarn/releases/yarn-4.1.0.cjs", ".lfsconfig", ".kshrc"])
async def test_a_claude_code_write_of_one_is_asked(tmp_path: Path, path: str) -> None:
    """SUCCEEDED before: Claude Code's Write of it was allowed in acceptEdits."""
    ws = tmp_path / "ws"
    ws.mkdir()
    body, decision = await _claude_answer(ws, "Write", {"file_path": path, "content": "x"})
    assert body["behavior"] == "deny", body
    assert decision.rule == "protected-paths"


@pytest.mark.parametrize("path", [".yarn/cache/x.zip", "yarn.lock", "pdbrc.md", "docs/.login.md", "gemrc"])
async def test_their_neighbours_are_still_written_unasked(tmp_path: Path, path: str) -> None:
    """Pin: the files beside them are not protected."""
    from unified.tools import ToolCall, ToolRuntime

    ws = tmp_path / "ws"
    ws.mkdir()
    async with ToolRuntime(ws, approval_mode="auto_edit") as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "write_file", {"file_path": path, "content": "x\n"})])
    assert not outcome.is_error, outcome.response


# 5. credential files no entry named

NEW_CREDENTIALS = [
    ".config/sops/age/keys.txt",
    ".config/age/keys.txt",
    ".mc/config.json",
    ".local/share/atuin/key",
    ".local/share/atuin/session",
    ".talos/config",
    ".dbt/profiles.yml",
    ".snowflake/connections.toml",
    ".snowflake/config.toml",
    ".ivy2/.credentials",
    ".sbt/.credentials",
    ".android/adbkey",
    ".minikube/profiles/dev/client.key",
    ".minikube/ca.key",
    ".mozilla/firefox/ab12.default-release/logins.json",
    ".mozilla/firefox/ab12.default-release/key4.db",
    ".mozilla/firefox/ab12.default-release/cookies.sqlite",
    ".config/google-chrome/Default/Login Data",
    ".config/google-chrome/Profile 1/Cookies",
    ".config/chromium/Default/Login Data",
    ".config/chromium/Default/Cookies",
    ".bash_history",
    ".zsh_history",
    ".histfile",
    ".local/share/fish/fish_history",
    ".python_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".node_repl_history",
    ".rediscli_history",
]
SECRET = "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run in the home folder, holding each file."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path / "data"))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_protected, "_credential_cache", None)
    for path in [*NEW_CREDENTIALS, "notes/history.md"]:
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_text(f"export TOKEN={SECRET}\n")
    return home


@pytest.mark.parametrize("path", NEW_CREDENTIALS)
async def test_a_read_of_a_credential_file_no_entry_named_is_refused(home: Path, path: str) -> None:
    """SUCCEEDED before: unified's read_file (default mode: reads run unasked) returned the key, a cookie database, a
    history's pasted token."""
    from unified.tools import ToolCall, ToolRuntime

    async with ToolRuntime(home) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "read_file", {"file_path": path})])
    assert outcome.is_error
    assert SECRET not in str(outcome.response)
    assert "credential file" in str(outcome.response)


@pytest.mark.parametrize("path", [".bash_history", ".config/sops/age/keys.txt", ".config/chromium/Default/Cookies"])
async def test_a_claude_code_read_of_one_is_refused(home: Path, path: str) -> None:
    """SUCCEEDED before: Claude Code's Read of it ran unasked."""
    body, decision = await _claude_answer(home, "Read", {"file_path": path})
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)


async def test_an_ordinary_file_of_the_home_is_still_read(home: Path) -> None:
    """Pin: `notes/history.md` is none."""
    from unified.tools import ToolCall, ToolRuntime

    async with ToolRuntime(home) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "read_file", {"file_path": "notes/history.md"})])
    assert not outcome.is_error, outcome.response


# 6. git grep reading from the repository's top


@pytest.mark.parametrize(
    "command",
    [
        "git grep TOKEN -- ':/'",
        "git grep TOKEN ':/'",
        "git grep TOKEN -- ':(top)'",
        "git grep -e TOKEN -- ':(top)top.env'",
        "git grep -eTOKEN ':/'",
        "git grep TOKEN HEAD:",
        "git grep TOKEN HEAD:../..",
    ],
)
async def test_a_codex_git_grep_from_the_repository_s_top_is_asked(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before: Codex's parse calls it a search, unified's read-only table agreed, and it ran unasked; in a
    workspace that is a folder of a repository, `:/` searches the whole repository (measured with git 2.x: the
    repository's `top.env`, outside the workspace, was printed)."""
    from tests.security.test_red_team_round7 import _codex_command

    ws = tmp_path / "repo" / "ws"
    ws.mkdir(parents=True)
    actions = [{"type": "search", "command": command, "query": "TOKEN", "path": None}]
    answer, decision = await _codex_command(ws, command, ws, actions)
    assert answer == "decline", decision
    assert decision.decision == "deny"


@pytest.mark.parametrize(
    "command", ["git grep TOKEN", "git grep 'TODO:'", "git grep -n 'a: b' -- src", "git grep -A3 x HEAD"]
)
async def test_an_ordinary_git_grep_still_runs_unasked(tmp_path: Path, command: str) -> None:
    """Pin: a colon in the pattern, a revision without one: still a read."""
    from tests.security.test_red_team_round7 import _codex_command

    ws = tmp_path / "ws"
    ws.mkdir()
    actions = [{"type": "search", "command": command, "query": "x", "path": None}]
    answer, _ = await _codex_command(ws, command, ws, actions)
    assert answer == "accept"


# 7. addresses Python's `is_global` calls global that lead to this machine or its cloud's metadata service

ALLOW_FETCH = '[[rule]]\ntoolName = "web_fetch"\ndecision = "allow"\npriority = 100\n'
LOCAL_ADDRESSES = [
    "192.0.0.192",  # Oracle Cloud's metadata service, in 192.0.0.0/24 (IETF protocol assignments)
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::a9fe:a9fe",  # NAT64's local-use prefix
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "::7f00:1",  # IPv4-compatible 127.0.0.1
    "::ffff:0:a9fe:a9fe",  # IPv4-translated 169.254.169.254
]


def _bracketed(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@pytest.mark.parametrize("address", LOCAL_ADDRESSES)
async def test_a_claude_web_fetch_of_an_address_leading_here_is_asked(tmp_path: Path, address: str) -> None:
    """SUCCEEDED before: under an allow rule for web_fetch the fetch ran unasked (`is_global` is True for each)."""
    from unified.tools import Policy

    url = f"http://{_bracketed(address)}/latest/meta-data/"
    body, decision = await _claude_answer(
        tmp_path, "WebFetch", {"url": url, "prompt": "x"}, Policy.default().with_toml(ALLOW_FETCH)
    )
    assert body["behavior"] == "deny", body
    assert decision.rule == "local-network"


@pytest.mark.parametrize("address", ["192.0.0.192", "64:ff9b::a9fe:a9fe", "2002:7f00:1::"])
async def test_a_name_resolving_to_one_is_asked(monkeypatch: pytest.MonkeyPatch, address: str) -> None:
    """SUCCEEDED before: a public name whose A/AAAA record is one of them was judged global."""
    from unified import _urls

    async def answer(host: str, port: int) -> list[str]:
        return [address]

    monkeypatch.setattr(_urls, "_addresses", answer)
    assert await _urls.resolves_locally("https://meta.attacker.example/") is not None


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1", "::808:808", "192.0.2.1"]
)
def test_public_addresses_and_their_translations_stay_public(address: str) -> None:
    """Pin: a NAT64 or 6to4 address of a public IPv4 one is public (192.0.2.1, documentation, was never global)."""
    from unified._urls import local_target

    expected = address == "192.0.2.1"
    assert (local_target(f"http://{_bracketed(address)}/") is not None) is expected


def test_the_gemini_cli_s_rules_name_the_new_credential_files_in_the_home_workspace(home: Path) -> None:
    """SUCCEEDED before: the Gemini CLI's read tools, judged by `--policy` rules on a path's text, had no rule for them
    (`credential_aliases` listed none)."""
    aliases = _protected.credential_aliases([home])
    assert aliases is not None
    for path in (".bash_history", ".config/sops/age/keys.txt", ".config/chromium/Default/Cookies"):
        assert path in aliases, aliases
