"""Red team, round 16: the caller's own regexes against text the model writes, hostile session files, secrets in
children and artefacts, and what backends send without bound.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a caller's `argsPattern` was compiled with Python's `re` and searched in the arguments' JSON, which the model
  writes: a sloppy `(x+x+)+y` (or `.*a.*a.*a.*b`) held the event loop for as long as backtracking takes (hours on a
  few thousand characters, the GIL held, no cancellation). Rule patterns are now `_regex.RulePattern`: Python's
  syntax and meaning, written out as RE2 (each class, `\\w`, `\\s`, `(?i)` letter as the exact code points `re`
  matches with it) and searched in linear time; what RE2 cannot express (lookaround, backreference, Unicode `\\b`)
  is searched with `re` in texts of at most `RULE_FALLBACK_TEXT_MAX` characters (a longer one: the rule is a
  doubt, asked) and may not nest repeats (refused when the policy is read);
- a shell call of many parts (`a;a;...`) beside a long argument was searched part by part in the whole arguments
  each time (20,000 parts beside 100 KB: 2 GB of text, 5 s of CPU on the loop): past `POLICY_PARTS_TEXT_MAX` the
  rule is a doubt (deny, ask) or does not apply (allow);
- a Codex patch approval naming 20,000 files was judged file by file (29 s) and allowed in auto_edit: past
  `MAX_PATCH_FILES` it is declined unjudged, with a warning;
- every rule with an `argsPattern` wrote the arguments' JSON again: 50 rules on an 8 MB argument, 3.5 s of CPU;
  now written once per evaluation (`_policy._Texts`).

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any, cast

import pytest

from tests.security.test_permission_type_confusion import Wire
from tests.security.test_red_team_round7 import _auto_edit
from unified._adapters.codex._approvals import ApprovalBridge
from unified._adapters.codex._translate import AppServerTranslator
from unified._limits import MAX_PATCH_FILES, POLICY_PARTS_TEXT_MAX
from unified.events import WarningEvent
from unified.tools import Policy, PolicyError, Rule
from unified.tools._policy import Decision
from unified.tools._regex import RULE_FALLBACK_TEXT_MAX, RulePattern

pytestmark = [pytest.mark.anyio]


def _rule(pattern: str, decision: str, tool: str = "*") -> str:
    """A rule in TOML, the pattern as a literal string (no escapes: what the caller typed)."""
    return f"[[rule]]\ntoolName = '{tool}'\nargsPattern = '{pattern}'\ndecision = '{decision}'\npriority = 100\n"


def _allow_all_below() -> Policy:
    return Policy().with_toml('[[rule]]\ntoolName = "*"\ndecision = "allow"\npriority = 1\n')


# 1. ReDoS through the caller's own rule patterns


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("(x+x+)+y", "x" * 5_000),  # exponential in `re`: 2**5000 ways to split the x's
        ("(a|aa)+$", "a" * 5_000 + "!"),
        (".*a.*a.*a.*a.*b", "a" * 20_000),  # polynomial: n**5 / 120 steps in `re`
    ],
)
def test_a_sloppy_caller_pattern_does_not_hold_the_loop(pattern: str, text: str) -> None:
    """SUCCEEDED before: `Policy.evaluate` ran the caller's pattern in `re` over the model's argument: each of these
    did not finish (killed after minutes); now each is searched by RE2 in linear time (milliseconds)."""
    policy = _allow_all_below().with_toml(_rule(pattern, "deny"))
    verdict = policy.evaluate("write_file", {"file_path": "a.txt", "content": text}, "default")
    assert verdict.decision is Decision.ALLOW


def test_a_greedy_caller_pattern_still_finds_a_secret_at_the_end_of_a_megabyte() -> None:
    policy = _allow_all_below().with_toml(_rule(".*secret.*", "deny"))
    big = "x" * 1_000_000
    assert policy.evaluate("write_file", {"file_path": "a", "content": big}, "default").decision is Decision.ALLOW
    verdict = policy.evaluate("write_file", {"file_path": "a", "content": big + "secret"}, "default")
    assert verdict.decision is Decision.DENY


def test_a_rule_built_in_code_with_re_compile_is_searched_in_linear_time() -> None:
    """SUCCEEDED before: `Rule(args_pattern=re.compile(...))`, the public dataclass, kept Python's pattern."""
    python = cast(Any, re.compile("(x+x+)+y"))  # the field's type is RulePattern: an untyped caller passes this
    rule = Rule(tool_names=("*",), decision=Decision.DENY, priority=4.1, name="mine", args_pattern=python)
    policy = _allow_all_below().with_rules([rule])
    verdict = policy.evaluate("write_file", {"file_path": "a", "content": "x" * 5_000}, "default")
    assert verdict.decision is Decision.ALLOW
    assert isinstance(rule.args_pattern, RulePattern)


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (r"secrets/\w+\.key", "secrets/ключ.key"),  # Unicode \w, as Python reads it
        (r"rm\s+-rf", "rm\u00a0-rf"),  # Unicode \s
        (r"rm\s+-rf", "rm\x1c-rf"),  # Python's \s includes the file separators
        (r"(?i)secret", "\u017fecret"),  # long s folds to s in Python
        (r"(?i)key", "\u212aey"),  # Kelvin sign folds to k
        (r"\d{3}", "\u0663\u0664\u0665"),  # Arabic-Indic digits
        (r"[^/]+\.env$", "dir/x.env"),
        (r"^\{", "{x"),
        (r"(?s)a.b", "a\nb"),
        (r"a.b", "a\u2028b"),
        (r"(?x) a  b  # comment", "ab"),
        (r"(?i:A)b", "aB"),
        (r"\Aab\Z", "ab"),
        (r"a{2,}?b", "aaab"),
        (r"[\W\d]", "é"),
    ],
)
def test_rule_patterns_keep_pythons_meaning(pattern: str, text: str) -> None:
    """Pin: the translation to RE2 matches where Python's `re` does, and not where it does not (a deny rule read
    more narrowly than written would let through what it names)."""
    compiled = RulePattern(pattern)
    assert compiled.search(text) is (re.search(pattern, text) is not None)
    assert compiled.search("zzz" + text) is (re.search(pattern, "zzz" + text) is not None)


_ATOMS = ["a", "b", ".", r"\w", r"\s", r"\d", r"\W", "[a-c]", "[^a/]", "é", "K", "ſ", '"', r"\.", "[^\\n]"]
_TEXTS = [
    "",
    "a",
    "ab",
    "aab",
    "b a",
    "\u00e9",
    "\u212a",
    "K",
    "k",
    "S",
    "\u017f",
    "x/y",
    "a\u00a0b",
    "\u0663",
    "a.b",
    '"a"',
    "AB",
    "\u2028",
    "_",
    "a\x1cb",
    "\U0001f600a",
    "aaaa!",
]


def _random_pattern(rng: random.Random, depth: int = 0) -> str:
    kind = rng.randrange(6 if depth < 3 else 2)
    if kind <= 1:
        return rng.choice(_ATOMS)
    if kind == 2:
        return "".join(_random_pattern(rng, depth + 1) for _ in range(rng.randint(2, 3)))
    if kind == 3:
        return "(" + "|".join(_random_pattern(rng, depth + 1) for _ in range(2)) + ")"
    if kind == 4:
        return "(?:" + _random_pattern(rng, depth + 1) + ")" + rng.choice(["*", "+", "?", "{1,2}", "*?", "{2}"])
    return rng.choice(["^", "$", r"\A", r"\Z", "(?i)", "(?s)"]) + _random_pattern(rng, depth + 1)


def test_rule_patterns_answer_as_python_re_on_random_patterns() -> None:
    """Pin, differential: 300 random patterns of classes, Unicode letters, case folds, alternation, repeats and anchors,
    each on 22 short texts (Unicode spaces, digits, the Kelvin sign, long s, an emoji; short, since `re`, the oracle,
    backtracks): RE2's answer is `re`'s."""
    rng = random.Random(16)
    for _ in range(300):
        pattern = _random_pattern(rng)
        try:
            expected = re.compile(pattern)
        except re.error:
            continue
        compiled = RulePattern(pattern)
        for text in _TEXTS:
            assert compiled.search(text) is (expected.search(text) is not None), (pattern, text)


def test_a_pattern_re2_cannot_read_is_searched_in_re_only_in_a_short_text() -> None:
    """A lookahead needs `re`: a text longer than RULE_FALLBACK_TEXT_MAX is not searched, and a deny rule that may
    apply is a doubt (asked), never skipped; an allow rule does not apply."""
    deny = _allow_all_below().with_toml(_rule('"content": "rm(?! -i)', "deny"))
    short = {"content": "rm -rf x"}
    assert deny.evaluate("write_file", short, "default").decision is Decision.DENY
    long = {"content": "rm -rf x; echo " + "y" * RULE_FALLBACK_TEXT_MAX}
    assert deny.evaluate("write_file", long, "default").decision is Decision.ASK_USER
    # a shell command is also read part by part: the short part `rm -rf x` is searched and denied
    shell = _allow_all_below().with_toml(_rule('"command": "rm(?! -i)', "deny"))
    command = {"command": "rm -rf x; echo " + "y" * RULE_FALLBACK_TEXT_MAX}
    assert shell.evaluate("run_shell_command", command, "default").decision is Decision.DENY
    allow = Policy().with_toml(_rule(r'"content": "ok\b', "allow", "write_file"))
    assert allow.evaluate("write_file", {"content": "ok"}, "default").decision is Decision.ALLOW
    padded: dict[str, Any] = {"content": "ok " + "z" * RULE_FALLBACK_TEXT_MAX}
    assert allow.evaluate("write_file", padded, "default").decision is Decision.ASK_USER


def test_a_pattern_re2_cannot_read_may_not_nest_repeats() -> None:
    """SUCCEEDED before: `(?=x)(x+x+)+y` (a lookahead, so `re`) was accepted, and backtracks exponentially even in a
    short text: now the policy is refused when read, saying why."""
    with pytest.raises(PolicyError, match="nests repeats"):
        Policy().with_toml(_rule("(?=x)(x+x+)+y", "deny"))


def test_a_lone_surrogate_in_the_arguments_is_still_searched() -> None:
    """RE2 takes UTF-8 only: a model's `"\\ud800"` in JSON reaches the policy as a lone surrogate; the text is
    searched with `re` then (short), and the rule still applies."""
    policy = _allow_all_below().with_toml(_rule("secret", "deny"))
    verdict = policy.evaluate("write_file", {"file_path": "a", "content": "\ud800secret"}, "default")
    assert verdict.decision is Decision.DENY


# 4. what backends send, without bound


async def test_a_codex_patch_naming_more_files_than_are_judged_is_declined_unjudged(tmp_path: Path) -> None:
    """SUCCEEDED before: a Codex patch approval naming 20,000 files was judged file by file (29 s, 9 s of CPU in
    auto_edit, then allowed); 100,000 would take minutes and an asked prompt listed every path. Past
    `MAX_PATCH_FILES` it is declined unjudged, with a warning saying why."""
    ws = tmp_path / "ws"
    ws.mkdir()
    translator = AppServerTranslator(main_thread="T", cwd=str(ws))
    translator.start_turn("U")
    changes = [{"path": f"{ws}/d/f{i}.txt", "kind": {"type": "add"}, "diff": "x\n"} for i in range(MAX_PATCH_FILES + 1)]
    item = {"type": "fileChange", "id": "call_write", "changes": changes, "status": "inProgress"}
    translator.notification("item/started", {"item": item, "threadId": "T", "turnId": "U"})
    ctx, wire = _auto_edit(ws), Wire()
    params = {"threadId": "T", "turnId": "U", "itemId": "call_write", "reason": None, "grantRoot": None}
    request = {"method": "item/fileChange/requestApproval", "id": 2, "params": params}
    await ApprovalBridge(cast(Any, ctx), cast(Any, wire), translator, None).answer(request)
    [(_, _, body)] = wire.answers()
    assert body["decision"] == "decline"
    [warning] = [e for e in ctx.events if isinstance(e, WarningEvent)]
    assert f"a patch of {MAX_PATCH_FILES + 1:,} files" in warning.message


@pytest.mark.parametrize("decision", ["deny", "allow"])
def test_many_shell_parts_beside_a_long_argument_are_not_searched_one_by_one(decision: str) -> None:
    """SUCCEEDED before: each simple command of a shell call is searched in the whole arguments with `command` put as
    that part, so `a;a;a;...` (20,000 parts in 40 KB) beside a 100 KB argument was 2 GB of text: 5 s of CPU with the
    loop held (60,000 parts beside 1 MB: minutes), then allowed. Past `POLICY_PARTS_TEXT_MAX` the rule is not read
    part by part: a deny is a doubt (asked), an allow does not apply."""
    policy = _allow_all_below() if decision == "deny" else Policy()
    policy = policy.with_toml(_rule('"command": "(rm|a) ' if decision == "deny" else '"command": "a', decision))
    args = {"command": "a;" * 20_000, "dir_path": "x" * 1_000}
    assert POLICY_PARTS_TEXT_MAX < 20_000 * 1_000
    assert policy.evaluate("run_shell_command", args, "default").decision is Decision.ASK_USER
    few = {"command": "a;" * 20 + ("\\rm -rf x" if decision == "deny" else ""), "dir_path": "x" * 1_000}
    expected = Decision.DENY if decision == "deny" else Decision.ALLOW
    assert policy.evaluate("run_shell_command", few, "default").decision is expected


# 5. new attacks on the rule patterns themselves (held: pins)


def test_a_lone_surrogate_beside_a_long_text_turns_a_deny_into_an_ask_never_an_allow() -> None:
    """Known limit (docs/tools.md): RE2 takes no lone surrogate; a pattern that names one (or U+FFFD, which stands
    for them otherwise: round 17) is searched with `re`, which is bounded."""
    policy = _allow_all_below().with_toml(_rule("secret[\ud800-\udfff]?", "deny"))
    args = {"file_path": "a", "content": "\ud800" + "x" * RULE_FALLBACK_TEXT_MAX + "secret"}
    assert policy.evaluate("write_file", args, "default").decision is Decision.ASK_USER


@pytest.mark.parametrize("pattern", ["(?<name>x)", "a{,", "[z-a]", "(?P<n>a)(?P=m)"])
def test_a_pattern_python_cannot_read_is_refused_even_where_re2_could(pattern: str) -> None:
    """The syntax is Python's, as before: `(?<name>..)` is RE2's (and Rust's), not Python 3.11's."""
    try:
        re.compile(pattern)
    except re.error:
        with pytest.raises(PolicyError, match="argsPattern is not a valid regex"):
            Policy().with_toml(_rule(pattern, "deny"))
    else:
        Policy().with_toml(_rule(pattern, "deny"))


@pytest.mark.parametrize("pattern", [r"a{2000}", r"\w{1000}x"])
def test_a_count_re2_refuses_is_read_by_re_within_its_bound(pattern: str) -> None:
    """RE2 counts up to 1,000 and 8 MiB of automaton: past that the pattern is `re`'s (it nests no repeat)."""
    compiled = RulePattern(pattern)
    assert not compiled.linear
    text = "a" * 2_000 if pattern.startswith("a") else "a" * 1_000 + "x"
    assert compiled.search(text) is True
    assert compiled.search(text + "y" * RULE_FALLBACK_TEXT_MAX) is None


def test_many_rules_write_a_long_argument_as_json_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """SUCCEEDED before: each rule with an `argsPattern` wrote the arguments' JSON again (and their plain form's): 50
    rules on an 8 MB argument were 100 texts of 8 MB, 3.5 s of CPU with the loop held; now 2 texts (0.17 s)."""
    from unified.tools import _policy

    written: list[int] = []
    real = _policy._json

    def counting(args: Any) -> str:
        written.append(1)
        return real(args)

    monkeypatch.setattr(_policy, "_json", counting)
    rules = "".join(_rule(f'"content": "zz{i}', "deny") for i in range(50))
    policy = _allow_all_below().with_toml(rules)
    args = {"file_path": "./a", "content": "x" * 100_000}
    assert policy.evaluate("write_file", args, "default").decision is Decision.ALLOW
    assert len(written) == 2


# --- a secret spread by escape sequences past the margin kept before an output cut ---------------------------------

SPREAD_SECRET = "sk-ant-api03-Zq9XvB7kLmN4pR2tY6wE8uI0oP"


@pytest.mark.parametrize("after", [200, 300, 120])
def test_a_secret_spread_by_escape_sequences_past_the_margin_shows_none_of_its_end(after: int) -> None:
    """SUCCEEDED before (carried from round 14): the bytes kept before a cut (4 a secret's characters, 16 more) let a
    secret printed whole be replaced whole, but one with a colour sequence between each character spans 14 bytes a
    character: the cut went through it, its first characters were dropped with the cut, and its last ones were
    read whole once the sequences went (`...E8uI0oP` after a 32 KiB tail). A tail that begins with the end of a
    secret now shows the replacement there."""
    from unified._redaction import redactor
    from unified.tools._shell import shown_output

    cap = 4096
    clean = redactor({}, [SPREAD_SECRET])
    spread = "".join(f"{c}\x1b[0;1;31;42;5m" for c in SPREAD_SECRET).encode()
    data = b"x" * 8192 + spread + b"y" * (cap - after)
    kept = data[-(cap + 4 * len(SPREAD_SECRET) + 16) :]  # what the command's buffer keeps (`_margin`)
    shown = shown_output(kept, len(data), cap, clean)
    assert shown.startswith("[output cut")
    body = shown.split("\n", 1)[1]
    tail = SPREAD_SECRET[-4:]
    assert tail not in body, body[:120]
    assert body.endswith("y" * 20)


def test_a_tail_that_begins_with_ordinary_text_is_shown_as_it_is() -> None:
    from unified._redaction import redactor
    from unified.tools._shell import shown_output

    clean = redactor({}, [SPREAD_SECRET])
    data = b"z" * 10_000
    shown = shown_output(data[-(4096 + 176) :], len(data), 4096, clean)
    assert shown.split("\n", 1)[1] == "z" * 4096
