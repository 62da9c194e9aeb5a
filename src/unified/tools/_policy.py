"""The permission gate as data: priority-sorted rules read from TOML (seed 003).

A rule matches on tool name (shell-style wildcards), approval mode, an argument regex and, for
shell commands, command prefixes judged against every command bash would run (`_shell_syntax`):
a deny or ask rule applies if any of them matches, an allow rule only if all of them do. The
highest effective priority wins; ties go to the rule read first. Rules come in tiers so that a
tier always outranks the ones below it, whatever their own numbers: effective priority =
tier + priority / 1000 (default 1, session "allow always" 3, user file 4), as the Gemini CLI layers its policy files.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import posixpath
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from importlib import resources
from pathlib import Path
from typing import Any

from unified._exports import publish
from unified._limits import MAX_JSON_DEPTH, POLICY_PARTS_TEXT_MAX, too_deep
from unified._redaction import clip
from unified.tools import _shell_syntax
from unified.tools._paths import spelled
from unified.tools._protected import folded_name
from unified.tools._regex import RULE_FALLBACK_TEXT_MAX, PatternError, RulePattern, compile_pattern
from unified.types import ApprovalMode

__all__ = [
    "ALIASES",
    "DEFAULT_TIER",
    "NESTED_RULE",
    "PATH_ARGUMENTS",
    "SESSION_PRIORITY",
    "SESSION_TIER",
    "STRICTNESS",
    "USER_TIER",
    "Decision",
    "Match",
    "Policy",
    "PolicyError",
    "Rule",
    "Verdict",
    "function_name",
    "kills_all",
    "offered_names",
    "parse_rules",
    "plain_path",
    "session_rule",
    "shell_shape",
]

DEFAULT_TIER = 1
SESSION_TIER = 3
USER_TIER = 4
SESSION_PRIORITY = 950

ALIASES: Mapping[str, str] = {"replace": "edit_file", "grep_search": "search", "list_directory": "list_dir"}
"""Gemini CLI names accepted for our tools: in calls, in `excluded_tools` and in a rule's `toolName`
(a rule ported from the CLI's policy, `toolName = "replace"`, must not silently match nothing)."""

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")

FUNCTION_NAME_MAX = 64
"""The longest function name the APIs take: an MCP tool's name is cut to it (`function_name`)."""


def function_name(name: str) -> str:
    """`name` reduced to the characters and length a function name may have: how an MCP tool, `mcp__<server>__<tool>`,
    is offered to the model and named in its calls (`_mcp.tool_name`)."""
    return _UNSAFE_NAME.sub("_", name)[:FUNCTION_NAME_MAX]


def offered_names(pattern: str) -> tuple[str, ...]:
    """`pattern` (a rule's toolName, an `excluded_tools` entry) and, when it names one MCP tool by its full name
    (`mcp__<server>__<tool>` with no glob character) that is longer than a function name or holds characters one
    cannot, the name that tool is offered as (`function_name`): else a deny rule naming a tool of a long name matched
    nothing. Only for what refuses or asks: two tools may share the cut name (the first offered stays), so an allow
    rule naming one by its full name must not cover the other."""
    if not pattern.startswith("mcp__") or any(c in pattern for c in "*?[") or function_name(pattern) == pattern:
        return (pattern,)
    return (pattern, function_name(pattern))


_MODES: tuple[ApprovalMode, ...] = ("plan", "default", "auto_edit", "yolo")
"""Approval modes from least to most permissive: an "allow always" holds in its mode and above."""

_SHELL_TOOL = "run_shell_command"

_RULE_KEYS = {"name", "toolName", "decision", "priority", "modes", "argsPattern", "commandPrefix"}


class Decision(StrEnum):
    """What a policy rule says about a call: it runs, it is refused, or the user is asked."""

    ALLOW = "allow"
    DENY = "deny"
    ASK_USER = "ask_user"


STRICTNESS = {Decision.ALLOW: 0, Decision.ASK_USER: 1, Decision.DENY: 2}
"""How much each decision refuses. Where one call can be read two ways (a path through a link and the path it
reaches; an MCP tool name over overlapping server names), the reading decided most strictly wins: fail closed."""


class PolicyError(ValueError):
    """A policy file that cannot be honoured exactly as written."""


@dataclass(frozen=True)
class Rule:
    """One row of the policy table."""

    tool_names: tuple[str, ...]
    decision: Decision
    priority: float
    name: str
    modes: frozenset[str] | None = None
    args_pattern: RulePattern | None = None
    """Python `re` syntax and meaning, matched in linear time (`RulePattern`); a `re.Pattern` given is read so too."""
    command_prefixes: tuple[str, ...] | None = None
    command_shape: tuple[object, ...] | None = None
    """For an "allow always" rule: the directory and the exact shape (`shell_shape`) of the approved
    command (`_approved_shape`)."""

    def __post_init__(self) -> None:
        pattern: object = self.args_pattern
        if isinstance(pattern, re.Pattern):  # a caller's own `Rule(args_pattern=re.compile(...))`: unbounded in `re`
            try:
                object.__setattr__(self, "args_pattern", RulePattern(str(pattern.pattern)))
            except PatternError as exc:
                raise PolicyError(f"rule {self.name}: argsPattern: {exc}") from None

    @functools.cached_property
    def _refused_names(self) -> tuple[str, ...]:
        """The names a deny or ask rule matches (`offered_names`)."""
        return tuple(name for pattern in self.tool_names for name in offered_names(pattern))

    def match(
        self,
        tool: str,
        args: Mapping[str, Any],
        mode: ApprovalMode,
        *,
        unseen: bool = False,
        texts: _Texts | None = None,
    ) -> Match:
        """Whether this rule applies; MAYBE when a shell command has parts only known at run time, or when the
        call's arguments are `unseen` (a backend that does not show them) and the rule reads them: then an
        allow rule that reads them does not apply and any other may."""
        named = self.tool_names if self.decision is Decision.ALLOW else self._refused_names
        if not any(fnmatch.fnmatchcase(tool, ALIASES.get(pattern, pattern)) for pattern in named):
            return Match.NO
        if self.modes is not None and mode not in self.modes:
            return Match.NO
        if unseen and (self.args_pattern, self.command_prefixes, self.command_shape) != (None, None, None):
            return Match.NO if self.decision is Decision.ALLOW else Match.MAYBE
        command = str(args.get("command", ""))
        if self.args_pattern is not None:
            texts = texts or _Texts(args)
            if self.decision is Decision.ALLOW:
                found = [self.args_pattern.search(text) for text in texts.forms()]
            else:  # a deny or ask rule covers every spelling of its path a file system may take for it; an allow never
                found = _refusal_found(self.args_pattern, texts.forms(), texts.folded)
            if self.decision is Decision.ALLOW and not all(found):
                return Match.NO
            if self.decision is not Decision.ALLOW and not any(found):
                unknown = None in found  # a text too long to search with `re` (`RulePattern`): fail closed, asked
                if self.command_prefixes is not None or not _shell_call(tool, args):
                    return Match.MAYBE if unknown else Match.NO
                each = _deny_each(_shell_syntax.parse(command), args, self.args_pattern)
                return Match.MAYBE if unknown and each is Match.NO else each
        if self.command_shape is not None and _approved_shape(args) != self.command_shape:
            return Match.NO
        if self.command_prefixes is None:
            if self.decision is Decision.ALLOW and self.args_pattern is not None and _shell_call(tool, args):
                return _allow_each(_shell_syntax.parse(command), args, self.args_pattern)
            return Match.YES
        parts = _shell_syntax.parse(command)
        if self.decision is Decision.ALLOW:
            return _allow_all(parts, self.command_prefixes)
        return _deny_any(parts, self.command_prefixes)


class Match(Enum):
    NO = "no"
    MAYBE = "maybe"
    YES = "yes"


def _prefix_match(part: _shell_syntax.SimpleCommand, prefix: str, *, fold: bool = False) -> Match:
    """Word-wise: `git push` matches `git push origin`, not `git pushy`; the command word by basename.

    With `fold` (a deny or ask rule, which fails closed): the command word whatever its case (on a
    case-insensitive file system, as macOS's usually is, `RM -rf x` runs `rm`), and the rest of the prefix
    also past the program's own options: `git -C . push`, `git --no-pager push`, `git -c k=v push` push
    as `git push` does. An option's value may be the next word, so a word right after an option is passed
    over too; the first other word ends the search (`git log --grep push` is no push)."""
    wanted = prefix.split()
    if not wanted:
        return Match.NO
    if part.unknown is not None:
        return Match.MAYBE
    wanted[0] = _shell_syntax.command_name(wanted[0])
    words = [part.name, *part.words[1:]]
    if fold and words[0] is not None:
        words[0], wanted[0] = words[0].casefold(), wanted[0].casefold()
    if words[0] is None:
        return Match.MAYBE
    if words[0] != wanted[0]:
        return Match.NO
    found = _words_at(words, 1, wanted[1:], part.open_tail)
    if not fold or found is Match.YES or len(wanted) == 1:
        return found
    doubt = found is Match.MAYBE
    start = 1
    while start < len(words):
        word = words[start]
        if word is None:
            return Match.MAYBE  # an option (or the subcommand) only known at run time
        after_option = _is_option(words[start - 1]) and "=" not in str(words[start - 1])
        if not _is_option(word) and not (start > 1 and after_option):
            break
        start += 1
        found = _words_at(words, start, wanted[1:], part.open_tail)
        if found is Match.YES:
            return Match.YES
        doubt = doubt or found is Match.MAYBE
    return Match.MAYBE if doubt else Match.NO


def _is_option(word: str | None) -> bool:
    return word is not None and word.startswith("-") and word not in ("-", "--")


def _words_at(words: Sequence[str | None], start: int, wanted: Sequence[str], open_tail: bool) -> Match:
    """Whether `words` from `start` on begin with `wanted`."""
    for index, expected in enumerate(wanted, start):
        if index >= len(words):
            return Match.MAYBE if open_tail else Match.NO
        if words[index] is None:
            return Match.MAYBE
        if words[index] != expected:
            return Match.NO
    return Match.YES


def _deny_any(parts: Sequence[_shell_syntax.SimpleCommand], prefixes: Sequence[str]) -> Match:
    """A deny (or ask) rule applies if any command run, at any depth, or any wrapper it runs under
    matches; MAYBE if one could match once bash expands it."""
    result = Match.NO
    for part in parts:
        wrappers = {*part.via, *(_shell_syntax.command_name(wrapper.split()[0]) for wrapper in part.via)}
        wrappers = {wrapper.casefold() for wrapper in wrappers}
        for prefix in prefixes:
            named = " ".join(prefix.split()).casefold() in wrappers
            found = Match.YES if named else _prefix_match(part, prefix, fold=True)
            if found is Match.NO:
                found = _equivalent_match(part, prefix)
            if found is Match.YES:
                return Match.YES
            if found is Match.MAYBE:
                result = Match.MAYBE
    return result


@dataclass(frozen=True)
class _Equivalent:
    """A command that does what a deny rule's program does under another name (`equivalents.toml`)."""

    of: str
    prefix: str
    words: tuple[re.Pattern[str], ...] | None
    unless: tuple[str, ...] = ()
    """Words that make it touch no file (`git rm --cached` removes from the index only)."""


@functools.cache
def _equivalents() -> Mapping[str, tuple[_Equivalent, ...]]:
    """`equivalents.toml`, by the program each entry stands in for; read on first use."""
    text = resources.files("unified.tools").joinpath("equivalents.toml").read_text(encoding="utf-8")
    table: dict[str, list[_Equivalent]] = {}
    for raw in tomllib.loads(text)["equivalent"]:
        words = tuple(re.compile(word) for word in raw["words"]) if "words" in raw else None
        entry = _Equivalent(raw["of"], raw["prefix"], words, tuple(raw.get("unless", ())))
        table.setdefault(raw["of"], []).append(entry)
    return {of: tuple(entries) for of, entries in table.items()}


def _equivalent_match(part: _shell_syntax.SimpleCommand, prefix: str) -> Match:
    """Whether `part` does what a deny or ask rule's `prefix` names, under another name: `find . -delete`, `git
    clean -fdx`, `truncate -s0 x` for a rule for `rm` (`equivalents.toml`). Only for a prefix that is the program
    alone or with options (`rm -rf`): one naming an operand (`rm -rf /`) means that operand, which they need not
    touch. MAYBE when a word they may read as the deleting one is only known at run time."""
    wanted = prefix.split()
    if not wanted or not all(_is_option(word) for word in wanted[1:]):
        return Match.NO
    result = Match.NO
    for entry in _equivalents().get(_shell_syntax.command_name(wanted[0]).casefold(), ()):
        found = _prefix_match(part, entry.prefix, fold=True)
        if found is Match.YES and any(word in entry.unless for word in part.words[1:]):
            continue
        if found is Match.YES and entry.words is not None:
            found = _some_word(part, entry.words)
        if found is Match.YES:
            return Match.YES
        if found is Match.MAYBE:
            result = Match.MAYBE
    return result


def _some_word(part: _shell_syntax.SimpleCommand, patterns: Sequence[re.Pattern[str]]) -> Match:
    """Whether a word of `part` after its program is one `patterns` match whole; MAYBE if one is only known at run
    time (or `xargs` appends some)."""
    doubt = part.open_tail
    for word in part.words[1:]:
        if word is None:
            doubt = True
        elif any(pattern.fullmatch(word) for pattern in patterns):
            return Match.YES
    return Match.MAYBE if doubt else Match.NO


SYSTEM_COMMAND_DIRS = frozenset(
    {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin", "/opt/homebrew/bin"}
)
"""Where a program run by its path is taken to be the one its name says (`/usr/bin/git` is `git`)."""


def _allow_all(parts: Sequence[_shell_syntax.SimpleCommand], prefixes: Sequence[str]) -> Match:
    """An allow rule applies only if every command run matches a prefix and none writes a file
    through a redirection, opens a socket through one (`cat < /dev/tcp/h/80`: a rule for `cat` names
    a reader of files, not a network client) or sets a variable (`PATH=..`, `GIT_PAGER=..` change what runs)."""
    if not parts:
        return Match.NO
    for part in parts:
        if part.covered:
            continue  # a runner's command: its words are on the runner's own part (`_shell_syntax._runner`)
        if part.unknown is not None or part.writes or part.opens or part.assigns:
            return Match.NO
        mass = kills_all(part.words, open_tail=part.open_tail)
        if not any(
            _prefix_match(part, prefix) is Match.YES
            and _named(part, prefix)
            and (mass is None or kills_all(prefix.split()) is not None)
            for prefix in prefixes
        ):
            return Match.NO
    return Match.YES


_KILLERS = frozenset({"kill", "pkill", "killall", "killall5", "skill", "slay"})
_ALL_NAMES = ("bash", "-bash", "sh", "python3", "node", "unified", "claude", "systemd", "sshd")
"""Names a pattern must match all of to be taken for "every process" (`pkill .`, `pkill -f ''`): the processes a mass
kill takes down, unified's host, the user's shells and session, other agents. Round 40: with the names `a` and `-`
among them, `pkill -f '[^a]'` (every process whose name is not only a's) was no mass kill."""
_ALL_COMMAND_LINES = (
    "/usr/bin/python3 -m unified run",
    "/bin/bash -l",
    "node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js",
    "/lib/systemd/systemd --user",
    "sshd: user@pts/0",
)
"""What `pkill -f` matches a pattern against, the whole command lines of such processes: `pkill -f ' '` or
`pkill -f /` takes them all down."""
_PKILL_SELECTORS = frozenset(
    {
        "-u",
        "-U",
        "-g",
        "-G",
        "-s",
        "-t",
        "-P",
        "--euid",
        "--uid",
        "--group",
        "--pgroup",
        "--session",
        "--terminal",
        "--parent",
        "--ns",
        "--cgroup",
    }
)
_PKILL_VALUED = _PKILL_SELECTORS | {"--signal", "-F", "--pidfile", "--nslist", "-q", "--queue"}
_KILLALL_VALUED = frozenset(
    {"-u", "--user", "-o", "--older-than", "-y", "--younger-than", "-s", "--signal", "-n", "--ns", "-Z", "--context"}
)


def kills_all(words: Sequence[str | None], *, open_tail: bool = False) -> str | None:
    """Why a command (its argv) may kill every process the user owns, or None: `kill -9 -1` and `kill -- -1` (pid
    -1: every process the caller may signal; unified's host, the user's session and other agents included), `kill
    0` (the caller's whole process group), a pid only known at run time (`kill $P`, `xargs kill`: it may be -1),
    `pkill` or `killall` by a pattern every name matches (`pkill -f .`), by user, group, session or terminal alone
    (`pkill -u me`, `killall -u me`), and `killall5`. An allow rule for `kill` (or `pkill`, or a pattern naming
    them) means a process the model names, not all of them: such a command is covered only by a prefix that spells
    the mass kill itself (`kill -9 -1`)."""
    if not words or words[0] is None:
        return None
    name = _shell_syntax.command_name(words[0]).lower()
    if name not in _KILLERS:
        return None
    args = list(words[1:])
    if name == "killall5":
        return "killall5 signals every process"
    if open_tail:
        return f"{name} is given more arguments at run time, which may name every process"
    if name == "kill":
        return _kill_all(args)
    if any(arg is None for arg in args):
        return f"{name} has an argument only known at run time, which may select every process"
    return _pkill_all(name, [str(arg) for arg in args])


def _kill_all(args: list[str | None]) -> str | None:
    operands: list[str | None] = []
    ended = False
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg is None:
            operands.append(None)
        elif ended or not arg.startswith("-") or arg == "-":
            operands.append(arg)
        elif arg == "--":
            ended = True
        elif arg in ("-s", "-n"):
            index += 1  # the signal
        elif arg in ("-l", "-L"):
            return None
        elif operands or (arg[1:].isdigit() and index > 1) or (_shell_syntax.decimal(arg) is not None and index > 1):
            operands.append(arg)  # a negative pid after the signal: `kill -9 -1`
        # else the signal (`-9`, `-KILL`, `-SIGTERM`, `-1` first is SIGHUP)
    for operand in operands:
        if operand is None:
            return "kill of a pid only known at run time, which may be -1 (every process)"
        pid = _shell_syntax.decimal(operand)  # as bash reads it: `-000...001` is -1
        if pid in (-1, 0):
            return (
                f"kill {clip(operand, 40, more='…')} signals every process the user owns"
                if pid == -1
                else "kill 0 signals its whole group"
            )
    return None


def _pkill_all(name: str, args: list[str]) -> str | None:
    valued = _KILLALL_VALUED if name in ("killall", "slay") else _PKILL_VALUED
    patterns: list[str] = []
    selected = full = False
    regex = name != "killall"
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            patterns.extend(args[index:])
            break
        if not arg.startswith("-") or arg == "-":
            patterns.append(arg)
            continue
        option = arg.split("=", 1)[0]
        full = full or option == "--full" or (not option.startswith("--") and "f" in option[1:])
        if option in _PKILL_SELECTORS or (name == "killall" and option in ("-u", "--user")):
            selected = True
        if option in ("-r", "--regexp"):
            regex = True
        if option in valued and "=" not in arg:
            index += 1
    if not patterns:
        return f"{name} by user, group or terminal alone signals every process they select" if selected else None
    for pattern in patterns:
        if not regex:
            continue
        try:  # RE2, linear in the text: a pattern is the model's, and `re` backtracks (`pkill '((.*)*)*x'` hung)
            compiled = compile_pattern(pattern)
        except PatternError:
            shown = clip(pattern, 40, more="…")
            return f"{name} by a pattern unified cannot read ({shown}), which may match every process"
        if all(compiled.search(sample) for sample in _ALL_NAMES) or (
            full and all(compiled.search(sample) for sample in _ALL_COMMAND_LINES)
        ):
            return f"{name} {clip(pattern, 40, more='…')} matches every process"
    return None


def _named(part: _shell_syntax.SimpleCommand, prefix: str) -> bool:
    """Whether the programs a part runs by a path are the ones an allow rule names: a rule for
    `tar` names the `tar` found through PATH or in a system directory, not `./tar` or `/tmp/env`
    (a copy of `sh` the model made runs its arguments as a script); a rule naming a path names that
    path only (`./scripts/test.sh`, not `/tmp/test.sh`)."""
    named = prefix.split()[0]
    for path in part.paths:
        if "/" in named and path == part.words[0]:
            if posixpath.normpath(path) != posixpath.normpath(named):
                return False
        elif posixpath.dirname(posixpath.normpath(path)) not in SYSTEM_COMMAND_DIRS:
            return False
    return True


PATH_ARGUMENTS = ("file_path", "dir_path", "path")
"""The arguments the built-in tools read as paths."""


def plain_path(value: str) -> str:
    """A path argument as the tools read it (`_paths.spelled`: NUL bytes removed, a `file://` URL
    decoded), without the leading `@` they drop when no such file exists, `.`, `..` and `//` put
    in their plain form."""
    text = spelled(value)
    text = text[1:] if text.startswith("@") and len(text) > 1 else text
    return posixpath.normpath(text) if text else text


def _normal_paths(args: Mapping[str, Any]) -> dict[str, Any] | None:
    """The arguments with each path spelled another way than plainly (`plain_path`) put in its plain
    form, or None when there is none. An allow rule's `argsPattern` must match this form too (a rule
    for `"file_path": "src/` does not cover `src/../setup.py`); a deny or ask rule's applies if either
    form matches (one for `"file_path": "secrets/` covers `./secrets/key`, `@secrets/key`,
    `secr\\u0000ets/key` and `file:///ws/%73ecrets/key`)."""
    changed = {
        key: plain
        for key in PATH_ARGUMENTS
        if isinstance(value := args.get(key), str) and value and (plain := plain_path(value)) != value.rstrip("/")
    }
    return {**args, **changed} if changed else None


def _folded_paths(args: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The arguments with each path in its plain form (`plain_path`) folded as protected paths are
    (`_protected.folded_name`: the code points HFS+ ignores and the dots and spaces ending a name removed), once with
    its case kept and once folded; each form that changes a path. A deny or ask rule applies if it matches one (round
    39: a deny of `secrets/` let `SECRETS/key`, `secrets./key` and `secr<U+200C>ets/key` through, the same file on a
    volume that folds case, drops trailing dots or ignores the joiner); an allow rule never reads them, so an allow
    covers only what it names as written. The pattern is searched as written (a `(?i)` copy of each rule costs
    Python's `re` a scan of every code point per letter: 0.3 s), so a rule in lower case covers every case."""
    forms: list[dict[str, Any]] = []
    for fold_case in (False, True):
        changed = {
            key: folded
            for key in PATH_ARGUMENTS
            if isinstance(value := args.get(key), str)
            and value
            and (folded := folded_name(plain := plain_path(value), fold_case=fold_case)) != plain
        }
        if changed and (not forms or {**args, **changed} != forms[0]):  # the plain form is read already (`_Texts`)
            forms.append({**args, **changed})
    return forms


def _refusal_found(
    pattern: RulePattern, forms: Sequence[str], folded: Callable[[], Sequence[str]]
) -> list[bool | None]:
    """What a deny or ask rule's `pattern` finds in a call's texts (`forms`), then, if it finds nothing, in their folded
    spellings (`folded`, made only then), and last, for a rule that names a capital, read whatever the case
    (`RulePattern.caseless`) in both: a deny of `Secrets/` covers `secrets/key` and `SECRETS/key`, the same folder on
    a volume that folds case (round 40: a rule in capitals matched its own case only). Each search's answer (None:
    a text too long to search, `RulePattern.search`)."""
    found = [pattern.search(text) for text in forms]
    if any(found):
        return found
    other = folded()
    found += [pattern.search(text) for text in other]
    if not any(found) and pattern.cased:
        try:
            caseless = pattern.caseless()
        except PatternError:  # a copy RE2 cannot hold (its classes are larger): not known, so the rule may apply
            return [*found, None]
        found += [caseless.search(text) for text in (*forms, *other)]
    return found


def _json(args: Mapping[str, Any]) -> str:
    """The text an `argsPattern` is searched in."""
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)


class _Texts:
    """The texts a call's `argsPattern`s are searched in (`_json` of the arguments, and of their plain form), written
    once for every rule of one `Policy.evaluate`: 50 rules on an 8 MB argument wrote 100 JSON texts of 8 MB (3.5 s)."""

    __slots__ = ("_args", "_folded", "_forms")

    def __init__(self, args: Mapping[str, Any]) -> None:
        self._args = args
        self._forms: tuple[str, ...] | None = None
        self._folded: tuple[str, ...] | None = None

    def forms(self) -> tuple[str, ...]:
        if self._forms is None:
            normal = _normal_paths(self._args)
            self._forms = tuple(_json(form) for form in ([self._args] if normal is None else [self._args, normal]))
        return self._forms

    def folded(self) -> tuple[str, ...]:
        """The texts of the arguments with their paths folded (`_folded_paths`): none when no path folds otherwise."""
        if self._folded is None:
            self._folded = tuple(_json(form) for form in _folded_paths(self._args))
        return self._folded


def _shell_call(tool: str, args: Mapping[str, Any]) -> bool:
    return tool == _SHELL_TOOL and "command" in args


def _allow_each(parts: Sequence[_shell_syntax.SimpleCommand], args: Mapping[str, Any], pattern: RulePattern) -> Match:
    """An allow rule's `argsPattern` on a shell command applies only if it matches every simple command
    bash would run, each on its own (`git status; rm -rf ~` is two, and `"command": "git status` matches
    only the first), and none writes a file through a redirection, sets a variable or has a word only
    known at run time: as the Gemini CLI checks each part of a compound command, and as `commandPrefix`
    rules are read (`_allow_all`; a socket a redirection opens counts as a write). The whole arguments
    must match too (`Rule.match`)."""
    if not parts or not _within_budget(parts, args, pattern):
        return Match.NO
    for part in parts:
        if part.covered:
            continue  # as `_allow_all` reads a runner's command
        if part.unknown is not None or part.writes or part.opens or part.assigns or not part.words:
            return Match.NO
        if any(word is None for word in part.words) or kills_all(part.words, open_tail=part.open_tail):
            return Match.NO
        if not pattern.search(_part_json(part, args)):  # None (unknown) too
            return Match.NO
    return Match.YES


def _deny_each(parts: Sequence[_shell_syntax.SimpleCommand], args: Mapping[str, Any], pattern: RulePattern) -> Match:
    """A deny or ask rule's `argsPattern` that the command's text escapes (`r''m -rf x`, `\\rm`,
    `cd /; rm`: words the pattern does not see as written) still applies if it matches a simple
    command bash would run, read as `_allow_each` reads it; MAYBE if a part is only known at run time."""
    if not _within_budget(parts, args, pattern):
        return Match.MAYBE
    result = Match.NO
    for part in parts:
        if part.unknown is not None or not part.words or any(word is None for word in part.words):
            result = Match.MAYBE
            continue
        found = _refusal_found(pattern, (_part_json(part, args),), functools.partial(_folded_part_json, part, args))
        if any(found):
            return Match.YES
        if None in found:
            result = Match.MAYBE
    return result


def _folded_part_json(part: _shell_syntax.SimpleCommand, args: Mapping[str, Any]) -> tuple[str, ...]:
    """`_part_json` of the part with each word folded as `_folded_paths` folds a path (`folded_name`), with its case
    kept and folded; each form that differs. A deny of `secrets/` covers `cat SECRETS/key`, `cat secrets./key` and
    `cat secr<U+200C>ets/key` as it covers `read_file` of them (round 40: only the file tools' paths were folded)."""
    words = [word for word in part.words if word is not None]
    forms: list[str] = []
    for fold_case in (False, True):
        folded = [folded_name(word, fold_case=fold_case) for word in words]
        if folded != words:
            text = _words_json(folded, args)
            if text not in forms:
                forms.append(text)
    return tuple(forms)


def _within_budget(parts: Sequence[_shell_syntax.SimpleCommand], args: Mapping[str, Any], pattern: RulePattern) -> bool:
    """Whether searching every part's text (`_part_json`) stays within `POLICY_PARTS_TEXT_MAX` characters (RE2), or
    16 of `re`'s longest texts for a pattern only `re` reads: each part's text repeats the other arguments, so many
    parts (`a;a;a;...`) beside a long argument multiply into gigabytes."""
    rest = len(_json({key: value for key, value in args.items() if key not in ("command", "description")}))
    budget = POLICY_PARTS_TEXT_MAX if pattern.linear else 16 * RULE_FALLBACK_TEXT_MAX
    return len(parts) * (rest + 16) + len(str(args.get("command", ""))) <= budget


def _part_json(part: _shell_syntax.SimpleCommand, args: Mapping[str, Any]) -> str:
    """The arguments' JSON with `command` replaced by one part's words (after quote removal) and the
    free-text description (the model's, it changes nothing that runs) left out."""
    return _words_json([word for word in part.words if word is not None], args)


def _words_json(words: Sequence[str], args: Mapping[str, Any]) -> str:
    """`_part_json` of a part's known `words`."""
    alone = {key: value for key, value in args.items() if key != "description"}
    alone["command"] = " ".join(words)
    return _json(alone)


def shell_shape(command: str) -> tuple[object, ...]:
    """What "allow always" on a shell command covers: the same commands with the same words,
    wrappers, redirections and assignments, however quoted or spaced. A command with a part only
    known at run time is covered only by its identical text."""
    parts = _shell_syntax.parse(command)
    if any(part.unknown is not None for part in parts):
        return ("text", command)
    return tuple(part.shape() for part in parts)


def _approved_shape(args: Mapping[str, Any]) -> tuple[object, ...]:
    """What an "allow always" on a shell command is scoped to: its shape, in its directory
    (`rm -rf build` approved in `tmp` does not cover `rm -rf build` in the workspace root)."""
    directory = posixpath.normpath(str(args.get("dir_path") or "."))
    return (directory, *shell_shape(str(args.get("command", ""))))


@dataclass(frozen=True)
class Verdict:
    decision: Decision
    rule: Rule | None
    doubt: str | None = None
    """Why an allow became ask_user (a deny or ask rule may apply once bash expands the command), or why a
    call was denied before any rule could be read (`NESTED_RULE`)."""


NESTED_RULE = Rule(tool_names=("*",), decision=Decision.DENY, priority=9.0, name="nested-arguments")
"""Not a row of any table: the name a deny carries when a call's arguments nest deeper than `MAX_JSON_DEPTH`
levels. No rule can be read against them (an `argsPattern` is searched in their JSON, which Python cannot
write ~1,000 levels deep: a RecursionError), and every reader of tool arguments refuses them anyway, so the
call is refused, above every tier, whatever the rules say."""

_NESTED_REASON = (
    f"its arguments nest deeper than {MAX_JSON_DEPTH} levels, too deep to check against the policy: "
    "call it again with flatter arguments"
)


def _strings(value: Any, key: str, where: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise PolicyError(f"{where}: {key} must be a string or a non-empty list of strings")
    return tuple(items)


def parse_rules(text: str, *, source: str, tier: int) -> list[Rule]:
    """The `[[rule]]` tables of one TOML document; every problem is named with its rule."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PolicyError(f"{source}: invalid TOML: {exc}") from exc
    unknown_top = set(data) - {"rule"}
    if unknown_top:
        raise PolicyError(f"{source}: unknown top-level keys {sorted(unknown_top)}; expected [[rule]] tables")
    rules: list[Rule] = []
    for index, raw in enumerate(data.get("rule", [])):
        where = f"{source} rule {index + 1}"
        problems: list[str] = []
        unknown = set(raw) - _RULE_KEYS
        if unknown:
            problems.append(f"unknown keys {sorted(unknown)}")
        if "toolName" not in raw:
            problems.append("toolName is required")
        try:
            decision = Decision(raw.get("decision"))
        except ValueError:
            problems.append(f"decision must be one of allow, deny, ask_user (got {raw.get('decision')!r})")
        priority = raw.get("priority", 0)
        if not isinstance(priority, int | float) or not 0 <= priority < 1000:
            problems.append(f"priority must be a number from 0 to 999 (got {priority!r})")
        modes = raw.get("modes")
        if modes is not None and (not isinstance(modes, list) or not set(modes) <= set(_MODES)):
            problems.append(f"modes must be a list drawn from {list(_MODES)} (got {modes!r})")
        pattern = None
        if "argsPattern" in raw:
            try:
                pattern = RulePattern(str(raw["argsPattern"]))
            except PatternError as exc:
                problems.append(f"argsPattern is not a valid regex: {exc}")
        if problems:
            raise PolicyError(f"{where}: " + "; ".join(problems))
        prefixes = raw.get("commandPrefix")
        rules.append(
            Rule(
                tool_names=_strings(raw["toolName"], "toolName", where),
                decision=decision,
                priority=tier + priority / 1000,
                name=str(raw.get("name", f"{source}#{index + 1}")),
                modes=frozenset(modes) if modes is not None else None,
                args_pattern=pattern,
                command_prefixes=_strings(prefixes, "commandPrefix", where) if prefixes is not None else None,
            )
        )
    return rules


@dataclass(frozen=True)
class Policy:
    """An immutable, priority-sorted rule list; `with_*` methods return extended copies."""

    rules: tuple[Rule, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        ordered = sorted(enumerate(self.rules), key=lambda pair: (-pair[1].priority, pair[0]))
        object.__setattr__(self, "rules", tuple(rule for _, rule in ordered))

    @classmethod
    def default(cls) -> Policy:
        """The shipped `default_policy.toml`, read and parsed once per process (`_shipped_policy`)."""
        return _shipped_policy()

    def with_rules(self, rules: Sequence[Rule]) -> Policy:
        return Policy((*self.rules, *rules))

    def with_toml(self, text: str, *, source: str = "user", tier: int = USER_TIER) -> Policy:
        return self.with_rules(parse_rules(text, source=source, tier=tier))

    def with_file(self, path: Path) -> Policy:
        """Adds a user rules file (blocking read: call while setting up, before the run)."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise PolicyError(f"cannot read policy file {path}: {exc}") from exc
        return self.with_toml(text, source=str(path))

    def evaluate(self, tool: str, args: Mapping[str, Any], mode: ApprovalMode, *, unseen: bool = False) -> Verdict:
        """The first matching rule decides, except that an allow never outranks a deny or ask rule
        above it that could match once bash expands the command, or that could match the arguments of a
        call whose arguments are `unseen` (`Rule.match`): then the user is asked. Arguments nested too deep
        to be read are denied (`NESTED_RULE`, the reason in `doubt`)."""
        if too_deep(args):
            return Verdict(Decision.DENY, NESTED_RULE, _NESTED_REASON)
        doubt: Rule | None = None
        texts = _Texts(args)
        for rule in self.rules:
            found = rule.match(tool, args, mode, unseen=unseen, texts=texts)
            if found is Match.MAYBE and doubt is None:
                doubt = rule
            if found is Match.YES:
                if rule.decision is Decision.ALLOW and doubt is not None:
                    unknown = (
                        "the call's arguments, which the backend does not show"
                        if unseen
                        else ("a part of the command only known at run time")
                    )
                    reason = f"rule {doubt.name} may apply to {unknown}"
                    return Verdict(Decision.ASK_USER, doubt, reason)
                return Verdict(rule.decision, rule)
        return Verdict(Decision.ASK_USER, doubt)


def unasked_refusal(policy: Policy, tool: str, mode: ApprovalMode) -> str | None:
    """For a tool a backend runs without asking anyone (the Gemini CLI's and Codex's subagent tools): None when
    `policy` allows every call of it in `mode`, else the rule that may deny or ask for one (its arguments are
    unseen: `Policy.evaluate`), named; then the backend must not offer or run it, since nobody can be asked."""
    verdict = policy.evaluate(tool, {}, mode, unseen=True)
    if verdict.decision is Decision.ALLOW:
        return None
    return verdict.rule.name if verdict.rule is not None else "none (no rule allows it)"


def outright_refusal(policy: Policy, tool: str, mode: ApprovalMode, *, lowest: float = 0.0) -> str | None:
    """The rule by which `policy` denies every call of `tool` in `mode`, whatever its arguments: the first rule that
    names the tool there is a deny without conditions, with nothing above it but deny rules (a rule above that could
    allow or ask for some call, with arguments or not, leaves the tool to be decided call by call: None). Only a
    rule of priority `lowest` or more counts (`USER_TIER`: the caller's own)."""
    for rule in policy.rules:
        if rule.priority < lowest:
            return None
        if not any(fnmatch.fnmatchcase(tool, ALIASES.get(pattern, pattern)) for pattern in rule.tool_names):
            continue
        if rule.modes is not None and mode not in rule.modes:
            continue
        if rule.decision is not Decision.DENY:
            return None
        if (rule.args_pattern, rule.command_prefixes, rule.command_shape) == (None, None, None):
            return rule.name
    return None


def session_rule(tool: str, args: Mapping[str, Any], mode: ApprovalMode) -> Rule:
    """The narrowed rule an "allow always" answer adds: this tool in this approval mode and the
    more permissive ones, and for the shell only this command's shape (`shell_shape`)."""
    shape = None
    label = tool
    if tool == "run_shell_command":
        command = str(args.get("command", ""))
        shape = _approved_shape(args)
        words = " ".join(command.split())
        label = f"{tool}:{clip(words, 80, more='…')}"
    return Rule(
        tool_names=(tool,),
        decision=Decision.ALLOW,
        priority=SESSION_TIER + SESSION_PRIORITY / 1000,
        name=f"session:{label}",
        modes=frozenset(_MODES[_MODES.index(mode) :]),
        command_shape=shape,
    )


publish("unified.tools", ["Decision", "Policy", "PolicyError", "Rule", "Verdict"], globals())


@functools.cache
def _shipped_policy() -> Policy:
    """The shipped `default_policy.toml` as a `Policy`, parsed on first use only: every `ToolRuntime` starts
    from it (two per gemini-cli ACP run, built between `session/new` and `session/prompt`, where parsing the
    TOML each time cost ~1 ms before the prompt was sent). A `Policy` and its rules are frozen (`with_*`
    return copies), and the file is part of the installed package, so one parse serves every run."""
    text = resources.files("unified.tools").joinpath("default_policy.toml").read_text(encoding="utf-8")
    return Policy(tuple(parse_rules(text, source="default", tier=DEFAULT_TIER)))
