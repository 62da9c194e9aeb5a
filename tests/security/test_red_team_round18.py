"""Red team, round 18: words only known at run time that name a credential file, trees read whole through another
name of one, printed secret forms split across streamed pieces, and protected links deep in the workspace.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a glob, a variable or a brace naming a credential file (`cat ~/.net*`, `cat $HOME/.netrc`, `cat ~/.{netrc,x}`,
  even `cat ~/.netrc`: `~` is an expansion too) ran under a caller's rule for `cat`: the parser dropped the word's
  text. It keeps it now (`SimpleCommand.unread`), and a word that may expand to a credential file is asked
  (`_protected._unread_reason`); `cat *.py` is not;
- `grep -r`, `rg`, `find -exec cat`, `tar` of a directory holding a hard link to `~/.netrc` (or the home directory
  itself, named literally) read it under an allow rule: a tree reader's trees are searched for the credential
  files, by path and by device and inode when one has other names (`_protected._tree_read_reason`);
- a printed form of a secret (hex, upper case, ...) split across two streamed text deltas reached the events: the
  stream guard held back only the plain secret's beginning;
- a nested repository's hook link (`a/b/.git/hooks/x -> ../../../../scripts/x`) left `scripts/x` writable unasked:
  an index of the roots' protected links is consulted now (`_protected.deep_protected_targets`);
- (section 5, new) a nested brace (`tee {x{a}y,.git/config}`) was one literal word to the parser, and a rule for
  `tee` or `cp` wrote `.git/config` or a hook; 100,000 braces took 33 s to parse; an "allow always" for `cat *.md`
  covered `cat ../*` and `cat ~/.netrc` (same shape); `diff -r`, `git grep --no-index`, `git diff --no-index`,
  `ugrep -r`, `zip -r`, `grep -d recurse`, `rg -L` read a hard link to a credential file; Codex's read-only
  searches and Claude Code's own Read, Grep and Glob read one unasked (default and auto_edit, no rule needed).

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import base64
import os
import random
from pathlib import Path

import pytest

from tests.security.test_red_team_round15 import codex_read
from unified._redaction import REDACTED, SPLIT_HOLD_MIN
from unified.tools import Policy, ToolCall, ToolRuntime
from unified.tools._protected import shell_protected
from unified.tools._shell_syntax import parse

pytestmark = [pytest.mark.anyio]

KEY = "AIzaSyR18fakeKEYfake0123456789abcdefXYZ"

_READS_ALLOWED = Policy.default().with_toml(
    '[[rule]]\ntoolName = "run_shell_command"\n'
    'commandPrefix = ["cat", "base64", "head", "cp", "tar", "grep", "rg", "find", "ls", "echo"]\ndecision = "allow"\n'
)
"""A caller who lets commands that read run unasked."""


def _home_with_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (home / ".netrc").write_text("machine x login u password SECRETPASSWORD123\n")
    (home / ".git-credentials").write_text("https://u:tok@example.invalid\n")
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (home / ".ssh" / "config").write_text("Host x\n")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("print(1)\n")
    (ws / "src" / "b.py").write_text("print(2)\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "x.md").write_text("docs\n")
    return ws


async def _decide(ws: Path, command: str, policy: Policy = _READS_ALLOWED) -> tuple[str, str | None, str]:
    async with ToolRuntime(ws, policy=policy) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
    return decision.decision, decision.rule, str(decision.reason)


# 1. a word only known at run time that may name a credential file


@pytest.mark.parametrize(
    "command",
    [
        "cat ~/.net*",
        "cat ~/.git-cred*",
        "cat $HOME/.netrc",
        "cat ${HOME}/.ssh/id_*",
        "cat ~/.{netrc,x}",
        "cat ~/.netrc",
        "cat ~/.ne?rc",
        "cat ~/.[n]etrc",
        'cat "$HOME"/.netrc',
        'cat "${HOME}/.git-credentials"',
        "head -c 200 ~/.ssh/id_*",
        "cat ../home/.n*",
        "cat ~/$'\\x2e'netrc",
        "cat ~/$(echo .netrc)",
        "base64 -w0 ~/.netrc",
        "cat -- ~/.netrc",
        "bash -c 'cat ~/.netrc'",
        "cat docs/x.md ~/.netrc",
        "cat $D/.netrc",
        "ls ~/.ssh/*",
    ],
)
async def test_a_word_known_at_run_time_that_may_name_a_credential_file_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before (allowed by the caller's rule for `cat`): the word became None and nothing read its text.
    Pins among them, asked before too: `base64 -w0 ~/.netrc` (a writer with an unknown argument) and
    `cat ~/$(echo .netrc)`."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    decision, rule, reason = await _decide(ws, command)
    assert (decision, rule) == ("deny", "protected-paths"), reason
    assert "nobody can answer" in reason


@pytest.mark.parametrize(
    "command",
    [
        "cat *.py",
        "cat src/*.py",
        "cat src/?.py",
        "head -n 3 src/[ab].py",
        "cat src/{a,b}.py",
        "ls ~/.cache",
        "echo ~",
        "cat docs/*",
    ],
)
async def test_an_ordinary_glob_or_expansion_stays_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Pin: a wildcard that names no credential file is left to the caller's rule (`src/{a,b}.py` is a brace, which
    may be any text: it is relative to the workspace, and no credential file is there)."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    monkeypatch.chdir(ws)
    decision, _, reason = await _decide(ws, command)
    assert decision == "allow", reason


async def test_a_glob_over_a_hard_link_to_a_credential_file_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: `cat docs/*` where `docs/n` is a hard link to `~/.netrc` (round 17 asked `cat docs/n`)."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    os.link(tmp_path / "home" / ".netrc", ws / "docs" / "n")
    for command in ("cat docs/*", "cat d*/?", "head docs/[mn]"):
        decision, rule, reason = await _decide(ws, command)
        assert (decision, rule) == ("deny", "protected-paths"), (command, reason)


def test_the_parser_keeps_the_text_of_a_word_it_cannot_know() -> None:
    """Pin: `unread` holds each unknown word as written, through wrappers; an "allow always" answer is scoped to it
    (`shape`), so approving `cat *.py` always does not approve `cat ~/.netrc`."""
    part = parse("sudo cat ~/.net* 'a b' \"$HOME\"/x")[-1]
    assert part.words == ("cat", None, "a b", None)
    assert part.unread == ("~/.net*", '"$HOME"/x')
    [glob_part], [home_part] = parse("cat *.py"), parse("cat ~/.netrc")
    assert glob_part.words == home_part.words
    assert glob_part.shape() != home_part.shape()


def test_wildcards_reaching_too_many_entries_are_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: the expansion is bounded (`GLOB_CHECK_MAX_ENTRIES`); past it the answer is a reason, not None."""
    from unified.tools._protected import GLOB_CHECK_MAX_ENTRIES

    ws = _home_with_credentials(tmp_path, monkeypatch)
    many = ws / "many"
    many.mkdir()
    for n in range(GLOB_CHECK_MAX_ENTRIES + 1):
        (many / f"f{n}").touch()
    reason = shell_protected(parse("cat many/*"), ws, [ws])
    assert "too many entries" in str(reason), reason


# 2. a tree read whole


@pytest.mark.parametrize(
    "command",
    [
        "grep -r password .",
        "grep -rn password",
        "grep -R password docs",
        "grep --recursive password docs",
        "rg password",
        "rg -uu password docs",
        "find . -type f -exec cat {} +",
        "tar cf - docs",
        "cp -r docs /tmp/out",
    ],
)
async def test_a_tree_read_through_a_hard_link_to_a_credential_file_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before (allowed): `docs/n`, a hard link to `~/.netrc`, was read by a command that names only its
    folder (or none: `rg` searches where it runs)."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    os.link(tmp_path / "home" / ".netrc", ws / "docs" / "n")
    decision, rule, reason = await _decide(ws, command)
    assert (decision, rule) == ("deny", "protected-paths"), reason
    assert "another name of the credential file" in reason


async def test_a_tree_reader_naming_the_home_directory_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: `grep -r password /path/to/home` named no protected path, and read `~/.netrc`."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    for command in (f"grep -r password {tmp_path / 'home'}", "grep -r password ~", f"tar cf - {tmp_path}"):
        decision, rule, reason = await _decide(ws, command)
        assert (decision, rule) == ("deny", "protected-paths"), (command, reason)


async def test_grep_following_links_into_a_credential_file_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: `grep -R` follows `docs/l -> ~/.netrc` (plain `grep -r` and `rg` do not: they stay allowed)."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    (ws / "docs" / "l").symlink_to(tmp_path / "home" / ".netrc")
    decision, rule, reason = await _decide(ws, "grep -R password docs")
    assert (decision, rule) == ("deny", "protected-paths"), reason
    for command in ("grep -r password docs", "rg password docs"):
        assert (await _decide(ws, command))[0] == "allow", command


@pytest.mark.parametrize("command", ["grep -r print src", "rg print", "grep print src/a.py", "find . -name '*.py'"])
async def test_a_tree_read_without_credentials_stays_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Pin: no credential file has another name, and none is under the tree: no search, the rule holds."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    decision, _, reason = await _decide(ws, command)
    assert decision == "allow", reason


# 3. a printed form of a secret split across streamed pieces

_FORMS = {
    "plain": KEY,
    "upper": KEY.upper(),
    "lower": KEY.lower(),
    "reversed": KEY[::-1],
    "hex": KEY.encode().hex(),
    "HEX": KEY.encode().hex().upper(),
    "spaced": " ".join(KEY),
    "base64": base64.b64encode(KEY.encode()).decode(),
}


async def _streamed(monkeypatch: pytest.MonkeyPatch, pieces: list[str], key: str = KEY) -> list[str]:
    from unified import ExecuteParams
    from unified._execute import EventStream
    from unified.events import SessionStarted, TextDelta
    from unified.testing import ScriptedBackend

    monkeypatch.setenv("GEMINI_API_KEY", key)
    started = SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd="/tmp")
    backend = ScriptedBackend([started, *(TextDelta(text=piece) for piece in pieces)])
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=backend) as stream:
        events = [event async for event in stream]
    return [str(getattr(e, "text", None) or "") for e in events if e.type == "text_delta"]


@pytest.mark.parametrize("form", list(_FORMS))
@pytest.mark.parametrize("cut", [0.25, 0.5, 0.8])
async def test_a_printed_form_split_across_two_text_deltas_is_replaced(
    monkeypatch: pytest.MonkeyPatch, form: str, cut: float
) -> None:
    """SUCCEEDED before (all but plain): each half of the hex, upper-cased, reversed, spaced or base64 key was no
    whole form in its delta, and the guard held back only the plain key's beginning: both halves reached the events."""
    printed = _FORMS[form]
    at = int(len(printed) * cut)
    shown = await _streamed(monkeypatch, [f"the key is {printed[:at]}", f"{printed[at:]} done"])
    joined = "".join(shown)
    assert REDACTED in joined, shown
    assert printed[:at][-SPLIT_HOLD_MIN:] not in joined.replace(REDACTED, "")
    assert printed[at:][:8] not in joined.replace(REDACTED, ""), shown
    assert joined.startswith("the key is ")
    assert joined.endswith(" done")


def test_a_progress_line_holds_back_the_beginning_of_a_printed_form() -> None:
    """SUCCEEDED before: a command printing the key in hex showed its first half in a `tool_progress` line while the
    rest was still to come (the line held back only the plain key's beginning)."""
    from unified._redaction import redactor
    from unified.tools._shell import _progress_line

    clean = redactor({}, [KEY])
    hexed = KEY.encode().hex()
    line = _progress_line(bytearray(f"dumping\n{hexed[:40]}".encode()), clean)
    assert hexed[:10] not in line, line


def test_the_guards_hold_back_costs_one_search() -> None:
    """Pin: with the forms held back, a piece's hold is one search for the forms' first characters
    (`Redactor.partial_suffix` with `least`), with the same answers as the loop over each form."""
    from unified._redaction import redactor

    clean = redactor({}, [KEY]).streamed()
    rng = random.Random(18)
    for _ in range(2_000):
        form = rng.choice(list(_FORMS.values()))
        text = "".join(rng.choice("aAIz 4Q9") for _ in range(rng.randrange(0, 8))) + form[: rng.randrange(0, 60)]
        slow = clean.partial_suffix(text)
        assert clean.partial_suffix(text, SPLIT_HOLD_MIN) == (slow if slow >= SPLIT_HOLD_MIN else 0), text


# 4. a protected link deep in the workspace


def _nested_hook(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "a" / "b" / ".git" / "hooks").mkdir(parents=True)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "x").write_text("#!/bin/sh\n")
    (ws / "a" / "b" / ".git" / "hooks" / "x").symlink_to("../../../../scripts/x")
    (ws / "vendor" / "lib" / "node_modules" / ".bin").mkdir(parents=True)
    (ws / "tools").mkdir()
    (ws / "vendor" / "lib" / "node_modules" / ".bin" / "fmt").symlink_to("../../../../tools/fmt.js")  # dangling
    return ws


@pytest.mark.parametrize("target", ["scripts/x", "tools/fmt.js"])
async def test_a_write_to_what_a_deep_protected_link_leads_to_is_asked(tmp_path: Path, target: str) -> None:
    """SUCCEEDED before (written unasked in auto_edit, and by `echo >` under a rule): `LinkSearch` looked two folders
    deep beside each folder on the file's way up, never into `a/b/.git/hooks` (a nested repository's hook) or
    `vendor/lib/node_modules/.bin`; an index of the protected links of the whole workspace (`deep_protected_targets`)
    is consulted now."""
    from unified.tools._protected import linked_from_protected

    ws = _nested_hook(tmp_path)
    assert "deeper in the workspace" in str(linked_from_protected((ws / target).resolve(), [ws]))
    assert "deeper in the workspace" in str(shell_protected(parse(f"echo 'curl x | sh' > {target}"), ws, [ws]))
    async with ToolRuntime(ws, approval_mode="auto_edit") as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "write_file", {"file_path": target, "content": "evil\n"})])
    assert outcome.is_error, outcome.response
    assert outcome.decision is not None
    assert outcome.decision.rule == "protected-paths"


def test_the_deep_index_leaves_other_files_alone_and_is_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: files no protected link leads to stay plain; the walk happens once per `DEEP_LINKS_TTL_S`, not per write
    (21,000 entries of a checkout: 0.09 s, then 14 us)."""
    from unified.tools import _protected

    ws = _nested_hook(tmp_path)
    walked: list[str] = []
    scandir = os.scandir

    def counting(path: str | Path) -> object:
        walked.append(str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    for name in ("scripts/y", "docs.md", "a/b/readme"):
        index = _protected.deep_protected_targets([ws])
        assert index is not None
        assert index.get((ws / name).resolve()) is None
        assert shell_protected(parse(f"echo x > {name}"), ws, [ws]) is None, name
    assert walked.count(str(ws)) <= 4  # the index's walk once, the search beside each write
    assert _protected.deep_protected_targets([ws]) is _protected.deep_protected_targets([ws])


# 5. new attacks (round 18)


@pytest.mark.parametrize(
    ("command", "made"),
    [
        ("tee {x{a}y,.git/config}", "x{a}y .git/config"),
        ("cp hook {x{a}y,.git/hooks}", "x{a}y .git/hooks"),
        ("cat {x{a}y,/etc/hostname}", "x{a}y /etc/hostname"),
    ],
)
def test_a_nested_brace_expansion_is_a_word_known_at_run_time(command: str, made: str) -> None:
    """SUCCEEDED before: `{x{a}y,.git/config}` was one literal word to the parser (its pattern wanted no `}` before
    the comma), so `tee` under a rule for it wrote `.git/config`, which the word does not name. Bash expands it."""
    import subprocess as _  # noqa: F401 (the expansion below is bash's, shown for the record)

    [part] = parse(command)
    assert part.words[-1] is None
    assert made.split()[-1] in {"x{a}y", ".git/config", ".git/hooks", "/etc/hostname"}


def test_a_brace_bomb_parses_in_linear_time() -> None:
    """SUCCEEDED before: `cat {{{{...}` (100,000 braces) took 33 s to parse (the brace pattern backtracked over every
    `{`), holding the policy; now well under a second (measured 0.5 s; the bound here is the parse's own work: the
    brace test reads each character a bounded number of times)."""
    from unified.tools import _shell_syntax

    read = 0
    original = _shell_syntax._is_glob

    def counting(text: str) -> bool:
        nonlocal read
        read += len(text)
        return original(text)

    _shell_syntax._is_glob = counting
    try:
        _shell_syntax.parse.cache_clear()
        [part] = parse("cat " + "{" * 100_000 + "}")
    finally:
        _shell_syntax._is_glob = original
    assert part.words == ("cat", "{" * 100_000 + "}")  # no comma: bash leaves it as it is, too
    assert read <= 3 * 100_001  # each brace read a bounded number of times


@pytest.mark.parametrize("word", ["*a" * 40 + "b", "$a/" * 60 + "x", "~/" + "?" * 300])
def test_a_word_with_many_wildcards_is_read_as_any_path(word: str) -> None:
    """Pin (round 18's own check): a pattern with more unknown runs than `_UNREAD_WILDCARDS_MAX` would backtrack
    without end against a credential file's long name (`*a*a*a...` over `application_default_credentials.json`);
    it is read as any path, `.*`, and asked whenever a credential file exists."""
    from unified.tools._protected import _UNREAD_WILDCARDS_MAX, _unread_pattern

    regex, globbed = _unread_pattern(word, "/home/u")
    if word.count("*") + word.count("$") > _UNREAD_WILDCARDS_MAX:
        assert (regex, globbed) == (".*", None)
    else:
        assert globbed is not None


async def test_an_allow_always_answer_for_a_glob_does_not_cover_another_glob() -> None:
    """SUCCEEDED before: the shape an "allow always" answer is scoped to held `None` for every unknown word, so
    approving `cat *.md` for the session allowed `cat ../*`, `cat /etc/*` and `cat ~/.netrc` unasked."""
    from unified.tools._policy import Decision, session_rule

    policy = Policy.default().with_rules([session_rule("run_shell_command", {"command": "cat *.md"}, "default")])
    assert policy.evaluate("run_shell_command", {"command": "cat *.md"}, "default").decision is Decision.ALLOW
    for command in ("cat ../*", "cat /etc/*", "cat ~/.netrc", "cat $F"):
        verdict = policy.evaluate("run_shell_command", {"command": command}, "default")
        assert verdict.decision is not Decision.ALLOW, command


@pytest.mark.parametrize(
    "command",
    [
        "diff -r docs other",
        "git diff --no-index docs other",
        "git --no-pager grep --no-index password",
        "ugrep -r password",
        "zip -r - docs",
        "rg -L password",
        "grep -d recurse password .",
        "grep --directories=recurse password .",
        "cat <(cat docs/*)",
        "wc -c docs/*",
    ],
)
async def test_other_tree_readers_through_a_hard_link_are_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before (allowed): `diff -r` and `git diff --no-index` print the linked file's lines, `git grep
    --no-index` reads untracked files, `ugrep -r`, `zip -r`, `grep -d recurse` read the tree."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    (ws / "other").mkdir()
    os.link(tmp_path / "home" / ".netrc", ws / "docs" / "n")
    policy = Policy.default().with_toml(
        '[[rule]]\ntoolName = "run_shell_command"\n'
        'commandPrefix = ["cat", "diff", "git", "ugrep", "zip", "rg", "grep", "wc"]\ndecision = "allow"\n'
    )
    decision, rule, reason = await _decide(ws, command, policy)
    assert (decision, rule) == ("deny", "protected-paths"), reason


@pytest.mark.parametrize(
    "command",
    [
        "cat ${HOME:-/x}/.netrc",
        "cat ${HOME%/}/.netrc",
        'cat -- "$(echo ~)/.netrc"',
        "cat $HOME/.ne''trc",
        'cat $HOME/.ne""trc',
        "cat ~/.\\netrc",
        "cat ~/.netrc{,}",
        "cat ~root/.netrc",
        "zcat -f ~/.netrc",
        "jq -R . ~/.pypirc",
        "tar -C HOMEDIR -cf - .",
    ],
)
async def test_spellings_of_a_credential_file_at_run_time_are_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before (allowed): defaults and trims of `$HOME`, quotes inside the name, an escaped letter, an empty
    brace, another user's home, and `tar -C HOME .` (a tree read of the home directory, named by an option)."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    (tmp_path / "home" / ".pypirc").write_text("[pypi]\npassword = x\n")
    policy = Policy.default().with_toml(
        '[[rule]]\ntoolName = "run_shell_command"\n'
        'commandPrefix = ["cat", "zcat", "jq", "tar", "echo"]\ndecision = "allow"\n'
    )
    decision, rule, reason = await _decide(ws, command.replace("HOMEDIR", str(tmp_path / "home")), policy)
    assert (decision, rule) == ("deny", "protected-paths"), reason


async def test_a_long_word_in_the_reason_shows_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: the word quoted in the reason (which reaches the prompt and the PermissionDecision event) goes through
    `clip`, which replaces a known key: `cat ~/.netrc{,KEY}` names the key in its text."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    decision, _, reason = await _decide(ws, "cat ~/.n{e,}trc{," + KEY + "}")
    assert decision == "deny"
    assert KEY not in reason


@pytest.mark.parametrize(
    ("command", "actions"),
    [
        ("grep -r password docs", [{"type": "search", "command": "grep -r password docs", "path": "docs"}]),
        ("rg password", [{"type": "search", "command": "rg password"}]),
        ("cat docs/*", [{"type": "read", "command": "cat docs/*", "name": "*", "path": "docs/*"}]),
        ("cat docs/n", [{"type": "read", "command": "cat docs/n", "name": "n", "path": "docs/n"}]),
    ],
)
async def test_codex_reads_of_a_hard_link_to_a_credential_file_are_not_run_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, actions: list[dict[str, str]]
) -> None:
    """SUCCEEDED before (accepted, in default mode, with no rule of the caller's): Codex's parse and unified's both
    call the command a read inside the workspace, and the bridge ran it unasked; `docs/n` is `~/.netrc`. (`cat docs/*`
    is a pin: a wildcard is no read to `_read_only`, asked before too.)"""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    os.link(tmp_path / "home" / ".netrc", ws / "docs" / "n")
    body, decision = await codex_read(ws, command, actions, mode="default")
    assert body["decision"] == "decline", body
    assert decision.decision == "deny"


async def test_a_codex_read_without_credentials_still_runs_unasked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pin: the read-only table still runs a plain search unasked."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    body, decision = await codex_read(
        ws, "grep -r print src", [{"type": "search", "command": "grep -r print src"}], mode="default"
    )
    assert body["decision"] == "accept", body
    assert decision.decision == "allow"


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        pytest.param("Read", {"file_path": "docs/n"}, id="read"),
        pytest.param("Grep", {"pattern": "password", "path": "docs"}, id="grep-folder"),
        pytest.param("Grep", {"pattern": "password"}, id="grep-where-it-runs"),
    ],
)
async def test_a_claude_code_read_through_a_hard_link_to_a_credential_file_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, tool_input: dict[str, str]
) -> None:
    """SUCCEEDED before (allowed as a read inside the workspace, in auto_edit): Claude Code's own Read and Grep
    opened `docs/n`, another name of `~/.netrc` (unified's read_file refuses it by device and inode; the CLI's tools
    are not unified's)."""
    from tests.security.test_red_team_round7 import _claude_answer

    ws = _home_with_credentials(tmp_path, monkeypatch)
    os.link(tmp_path / "home" / ".netrc", ws / "docs" / "n")
    resolved = {k: str(ws / v) if k in ("file_path", "path") else v for k, v in tool_input.items()}
    body, decision = await _claude_answer(ws, tool, resolved)
    assert body["behavior"] == "deny", body
    assert "credential file" in str(decision.reason)


async def test_a_claude_code_read_of_a_plain_file_stays_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pin: without another name of a credential file in the workspace, Read and Grep run as before; with one, Glob
    (which shows names, not content) and a Read of another file still do."""
    from tests.security.test_red_team_round7 import _claude_answer

    ws = _home_with_credentials(tmp_path, monkeypatch)
    for tool, tool_input in (("Read", {"file_path": str(ws / "docs" / "x.md")}), ("Grep", {"pattern": "docs"})):
        body, _ = await _claude_answer(ws, tool, tool_input)
        assert body["behavior"] == "allow", (tool, body)
    os.link(tmp_path / "home" / ".netrc", ws / "docs" / "n")
    for tool, tool_input in (
        ("Glob", {"pattern": "**/*", "path": str(ws / "docs")}),
        ("Read", {"file_path": str(ws / "docs" / "x.md")}),
    ):
        body, _ = await _claude_answer(ws, tool, tool_input)
        assert body["behavior"] == "allow", (tool, body)


@pytest.mark.parametrize("command", ["echo $PATH", "echo ~/.netrc", "test -f ~/.netrc", "printf '%s\\n' $HOME/*"])
async def test_a_program_that_opens_no_file_keeps_its_unknown_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Pin: `echo $PATH` under a rule for `echo` is no read of a credential file, whatever a variable may hold."""
    ws = _home_with_credentials(tmp_path, monkeypatch)
    policy = Policy.default().with_toml(
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ["echo", "test", "printf"]\ndecision = "allow"\n'
    )
    decision, _, reason = await _decide(ws, command, policy)
    assert decision == "allow", reason
    assert (await _decide(ws, 'echo "$(cat ~/.netrc)"', policy))[0] == "deny"
