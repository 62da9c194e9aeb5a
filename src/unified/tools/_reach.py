"""What a call reaches beyond the text of its arguments, as the caller's path rules must read it.

A rule reads a call's arguments (`argsPattern`, `commandPrefix`). Round 13 and 14 judged a path argument also as
the path it reaches through links (`_runtime.real_paths`). Two ways past a deny of `secrets/` were left:

- a walk: a search or glob of `.` (unified's own, Claude Code's Grep and Glob, `rg x` or `grep -r x .` in a
  shell) reads every file under it, `secrets/key` included, though its one path argument is `.`. Unified's own
  walks leave out each entry the policy would not let the call name directly (`Veto`); a walk a program does
  elsewhere is judged up front, entry by entry (`tree_verdict`), bounded;
- a shell command's words: `cat docs/l/key` (`docs/l -> ../secrets`), `head secrets/../secrets/key`, `cat
  /ws/secrets/key` name `secrets/key` in another text. `shell_reach` puts each word as the path it reaches from
  every directory the command may run in (`_protected._places`), so a rule reads that text too, and says which
  words it cannot resolve as the command's process will (`/proc/self/...`, `/dev/fd/N`).
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import shlex
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from unified import _limits as limits
from unified.tools import _shell_syntax
from unified.tools._policy import ALIASES, STRICTNESS, Decision, Policy, Rule, Verdict
from unified.tools._protected import _cluster_end, _places, git_words_verb
from unified.types import ApprovalMode

__all__ = [
    "ALSO_JUDGED",
    "RECURSIVE_READERS",
    "ShellReach",
    "Veto",
    "process_path",
    "reached_form",
    "reads_arguments",
    "refuses_by_path",
    "refusing_reader",
    "shell_reach",
    "tree_verdict",
]


ALSO_JUDGED: Mapping[str, tuple[tuple[str, str], ...]] = {
    "search": (("read_file", "file_path"),),
    "read_many_files": (("read_file", "file_path"),),
}
"""What else an entry of a walk is judged as, beside the call naming it: a search prints the lines of each file it
meets, so a rule for reading that file (`toolName = "read_file"`, `"file_path": "secrets/`) holds on it too."""


def _reads(rule: Rule) -> bool:
    """Whether `rule` reads a call's arguments (`argsPattern`, `commandPrefix`): only such a rule can judge a call by
    where its paths lead."""
    return rule.args_pattern is not None or rule.command_prefixes is not None


def reads_arguments(policy: Policy, tool: str, mode: ApprovalMode) -> Policy | None:
    """The rules of `policy` that name `tool` (or what its entries are also judged as: `ALSO_JUDGED`) in `mode`, when
    at least one of them reads the call's arguments (`argsPattern`, `commandPrefix`), else None: then where a call
    reaches cannot change its verdict, and nothing is walked (the shipped table reads no arguments)."""
    tools = [tool, *(other for other, _ in ALSO_JUDGED.get(tool, ()))]
    rules = [
        rule
        for rule in policy.rules
        if (rule.modes is None or mode in rule.modes)
        and any(
            fnmatch.fnmatchcase(name, ALIASES.get(pattern, pattern)) for pattern in rule.tool_names for name in tools
        )
    ]
    if not any(_reads(rule) for rule in rules):
        return None
    return Policy(tuple(rules))


def reached_form(root: Path, real: Path, folder: bool) -> str:
    """A reached path as a path rule reads it (`real_paths`, the walks and the shell words here): relative to the
    workspace root (absolute outside it), a folder with a trailing `/`, the root itself `.`. On the text (a walk
    calls it for every entry: pathlib's `relative_to` cost as much as the policy's evaluation)."""
    text, base = str(real), str(root)
    if text == base:
        return "."
    if text.startswith(base.rstrip("/") + "/"):
        text = text[len(base.rstrip("/")) + 1 :]
    return text + "/" if folder else text


def _entry_forms(root: Path, path: Path, is_dir: bool, is_link: bool) -> list[str]:
    """The texts a walked entry is judged as: where the walk met it, and, for a link, where it leads."""
    forms = [reached_form(root, path, is_dir)]
    if is_link:
        try:
            real = Path(os.path.realpath(path))
            forms.append(reached_form(root, real, os.path.isdir(real)))
        except (OSError, ValueError):
            pass
    return forms


def _refuses(entry: Verdict, call_rule: str | None) -> bool:
    """Whether an entry the policy judges `entry` must be left out of (or stop) a walk the call's rule allowed: a
    denial, or an ask by another rule than the one the call itself was asked by (a user's ask of `secrets/` is not
    answered by the answer to the search of `.`) that reads arguments (`refuses_by_path`)."""
    if entry.decision is Decision.DENY:
        return True
    if entry.decision is Decision.ASK_USER:
        name = entry.rule.name if entry.rule is not None else None
        return name != call_rule and refuses_by_path(entry)
    return False


def refuses_by_path(verdict: Verdict) -> bool:
    """Whether the verdict on a call rewritten to name what it reaches (an entry of its walk, its words as the paths
    they reach) refuses it for what it names: a denial, or an ask by a rule that reads arguments. An ask by a rule
    that reads none (the shipped `shell-asks`) says only that the rewritten text matches no allow rule: `git status`
    run in `x/`, judged as `git x/status`, would lose the user's allow rule for `git status`."""
    if verdict.decision is Decision.DENY:
        return True
    rule = verdict.rule
    return verdict.decision is Decision.ASK_USER and rule is not None and _reads(rule)


@dataclass
class Veto:
    """Judges each entry a walk of unified's own tools (search, glob, tree) meets as if the call had named it
    (`{**args, key: <the entry>}`), so a search of `.` leaves out what a search of `secrets` would be denied.
    Blocking: called from the walk's worker thread."""

    policy: Policy
    root: Path
    tool: str
    args: Mapping[str, Any]
    key: str
    mode: ApprovalMode
    call_rule: str | None
    through_links: bool = True
    """Whether a link is judged where it leads too (a search reads it), or only where it is (glob and tree list its
    name, which says nothing of what it leads to)."""
    left: int = 0
    rules: dict[str, None] = field(default_factory=dict)

    def left_out(self, path: Path, is_dir: bool, is_link: bool) -> bool:
        for form in _entry_forms(self.root, path, is_dir, is_link and self.through_links):
            calls = [(self.tool, {**self.args, self.key: form})]
            calls += [(other, {key: form}) for other, key in ALSO_JUDGED.get(self.tool, ())]
            for tool, args in calls:
                verdict = self.policy.evaluate(tool, args, self.mode)
                if _refuses(verdict, self.call_rule):
                    self.left += 1
                    if verdict.rule is not None:
                        self.rules[verdict.rule.name] = None
                    return True
        return False

    def note(self) -> str | None:
        """What the answer says of the entries left out: how many and by which rules, never their names or
        contents."""
        if not self.left:
            return None
        named = ", ".join(self.rules) or "none"
        return f"[{self.left} path(s) left out: the policy does not allow this call to read them (rule {named})]"


def tree_verdict(
    policy: Policy,
    root: Path,
    tool: str,
    judged: Callable[[str], Mapping[str, Any]],
    folder: Path,
    mode: ApprovalMode,
    call: Verdict,
    *,
    certain: bool = True,
    budget: list[int] | None = None,
    listed: Callable[[str], bool] | None = None,
) -> Verdict | None:
    """The verdict that stops a walk a program does itself (Claude Code's Grep and Glob, `rg`, `grep -r`, `find`)
    of `folder`, or None: that of the first entry under it (links not followed, a link judged where it leads too)
    that `_refuses`, each judged as the call naming it would be (`judged(<entry>)`: its arguments). A folder with
    more entries than `budget` (shared by one call: `limits.POLICY_WALK_MAX_ENTRIES`) is asked: what it holds past
    them cannot be judged. Not `certain` (the program may walk it or not: `rg -g x docs` searches `.` for `docs`):
    a denial becomes an ask. `listed`: the call only lists names (a glob), of the files whose path under `folder`
    it takes: only those are judged, as named and where they are (a listed link's name says nothing of what it
    leads to), and a link to a folder is followed (the program may: `docs/l/x.py` is listed as such, judged as
    `secrets/x.py` too), each folder once.
    Blocking: call from a worker thread."""
    left = budget if budget is not None else [limits.POLICY_WALK_MAX_ENTRIES]
    call_rule = call.rule.name if call.rule is not None else None
    shown = reached_form(root, folder, True)
    pending = [(folder, folder)]  # (the folder read, where the walk names it: through a followed link)
    seen = {folder}
    while pending:
        directory, named = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    left[0] -= 1
                    if left[0] < 0:
                        return Verdict(
                            Decision.ASK_USER,
                            _first_reader(policy),
                            f"{shown} holds too many entries (over {limits.POLICY_WALK_MAX_ENTRIES:,}) for unified to "
                            "judge each against the policy's path rules",
                        )
                    path, where = Path(entry.path), named / entry.name
                    is_link = entry.is_symlink()
                    is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                    if listed is None:
                        forms = _entry_forms(root, path, is_dir, is_link)
                    elif is_link and os.path.isdir(path):  # a glob may follow it: what lies under it is listed
                        real = Path(os.path.realpath(path))
                        if real not in seen:
                            seen.add(real)
                            pending.append((real, where))
                        forms = []
                    elif not is_dir and listed(where.relative_to(folder).as_posix()):
                        forms = list(dict.fromkeys([reached_form(root, where, False), reached_form(root, path, False)]))
                    else:
                        forms = []
                    for form in forms:
                        calls = [(tool, judged(form))]
                        calls += [(other, {key: form}) for other, key in ALSO_JUDGED.get(tool, ())]
                        verdict = _strictest(policy, calls, mode)
                        if _refuses(verdict, call_rule):
                            name = verdict.rule.name if verdict.rule is not None else "none"
                            how = "denies" if verdict.decision is Decision.DENY else "asks for"
                            may = "" if certain else "may "
                            why = (
                                f"rule {name} {how} {form}, which this call {may}reads under {shown}: "
                                "name a folder that does not hold it"
                            )
                            decision = verdict.decision if certain else Decision.ASK_USER
                            return Verdict(decision, verdict.rule, why)
                    if is_dir:
                        pending.append((path, where))
        except OSError:
            continue
    return None


def _strictest(policy: Policy, calls: Sequence[tuple[str, Mapping[str, Any]]], mode: ApprovalMode) -> Verdict:
    verdicts = [policy.evaluate(tool, args, mode) for tool, args in calls]
    return max(verdicts, key=lambda verdict: STRICTNESS[verdict.decision])


def _first_reader(policy: Policy) -> Rule | None:
    return refusing_reader(policy) or next((rule for rule in policy.rules if _reads(rule)), None)


def refusing_reader(policy: Policy) -> Rule | None:
    """The first rule of `policy` that denies or asks for a call by its arguments (`argsPattern`, `commandPrefix`),
    or None: the one that may apply to what unified cannot read of a call."""
    return next((rule for rule in policy.rules if rule.decision is not Decision.ALLOW and _reads(rule)), None)


def process_path(path: str) -> bool:
    """Whether an absolute path leads through a place that means something else in each process (`/proc/self`,
    `/proc/<pid>`, `/dev/fd`, `/dev/stdin`), spelled so or reached by a link or `..` on the way (`/proc/./self`, a
    link to `/proc`): unified, judging a call another process makes, cannot resolve it as that process will
    (`/proc/self/cwd` is that process's cwd). Each component is looked at as the kernel walks it, at most 40
    links (then the kernel refuses the path: ELOOP)."""
    parts = [part for part in path.split("/") if part]
    resolved = "/"
    links = 0
    while parts:
        part = parts.pop(0)
        if part == ".":
            continue
        if part == "..":
            resolved = posixpath.dirname(resolved)
            continue
        step = posixpath.join(resolved, part)
        if _PROCESS_PATHS.match(step):
            return True
        try:
            target = os.readlink(step)
        except (OSError, ValueError):
            resolved = step
            continue
        links += 1
        if links > _LINKS_MAX:
            return False
        resolved = "/" if target.startswith("/") else resolved
        parts[:0] = [piece for piece in target.split("/") if piece]
    return False


_LINKS_MAX = 40
"""The links the kernel follows in one path before it refuses it (ELOOP)."""


# --- shell commands ------------------------------------------------------------------------------------------


RECURSIVE_READERS: Mapping[str, tuple[bool, bool]] = {
    # program: (reads the folder it runs in when no folder is named, takes a pattern as its first operand)
    "rg": (True, True),
    "ag": (True, True),
    "ack": (True, True),
    "grep": (False, True),
    "egrep": (False, True),
    "fgrep": (False, True),
    "fd": (True, True),
    "fdfind": (True, True),
    "find": (True, False),
    "tree": (True, False),
    "du": (True, False),
    "ls": (False, False),
    "tar": (False, False),
    "zip": (False, False),
    "cp": (False, False),
    "rsync": (False, False),
    "scp": (False, False),
    "diff": (False, False),
    "7z": (False, False),
    "7za": (False, False),
    "7zz": (False, False),
    "bsdtar": (False, False),
    "pax": (False, False),
    "ugrep": (False, True),
    "git": (True, False),
}
"""Programs that read (or copy, list) the whole of a folder operand, not only its name: each folder such a word
names, and the folder the command runs in when the program searches it by default, is walked by `tree_verdict`
(`grep` and `ls` only with their recursive options, `git` only as `git grep`)."""

_GREP_RECURSION = ("r", "R", "--recursive", "--dereference-recursive", "--directories")
_RECURSIVE_OPTIONS = {
    "grep": _GREP_RECURSION,
    "egrep": _GREP_RECURSION,
    "fgrep": _GREP_RECURSION,
    "ugrep": _GREP_RECURSION,
    "ls": ("R", "--recursive"),
}
_PATTERN_OPTIONS = ("-e", "-f", "--regexp", "--file", "--files", "--type-list")
"""Options that give the pattern (or mean there is none), after which every operand is a path."""

_PROCESS_PATHS = re.compile(r"^/+(?:proc/+(?:self|thread-self|\d+)(?:/|$)|dev/+(?:fd|stdin|stdout|stderr)(?:/|$))")
"""Paths whose meaning depends on the process that opens them (its cwd, root, descriptors): unified, judging a
command another process runs, cannot resolve them as that process will (`cat /proc/self/cwd/secrets/key`)."""


_RUN_TIME = "…"
"""Where a word only known at run time stands in a command put as the paths it reaches."""


@dataclass(frozen=True)
class ShellReach:
    """What a shell command reaches, for `linked_verdict`: `command` its text with each word put as the path it
    reaches from each place it may run in (None when no word reaches elsewhere than it reads); `walks` the folders
    it reads whole, each as (the folder, whether it surely does: `_walks`, the part's words as put, the index of
    the word naming the folder, -1 when none does: the folder it runs in); `doubt` why a word cannot be judged."""

    command: str | None
    walks: tuple[tuple[Path, bool, tuple[str, ...], int], ...] = ()
    doubt: str | None = None


def shell_reach(command: str, cwd: Path, root: Path) -> ShellReach:
    """What `command`, run in `cwd`, reaches in the workspace `root` (`ShellReach`). Blocking (it asks the file
    system): call from a worker thread."""
    parts = _shell_syntax.parse(command)
    places = _places(parts, cwd)
    if isinstance(places, str):
        return ShellReach(None, (), f"unified cannot tell where its paths lead ({places})")
    places = [place for place in places if os.path.isdir(place)] or [cwd]
    variants: list[str] = []
    walks: list[tuple[Path, bool, tuple[str, ...], int]] = []
    doubt: str | None = None
    changed = False
    words_judged = 0
    for part in parts:
        if part.unknown is not None or not part.words or part.words[0] is None:
            continue  # a part the policy cannot read is a doubt of every rule that reads it already
        # a word only known at run time keeps its place (`cat docs/l/key $X`: a prefix `cat secrets/key` still
        # lines up with the first operand), as a word no rule names
        words = [_RUN_TIME if word is None else word for word in part.words]
        for place in places:
            rewritten = list(words)
            for index, word in enumerate(words[1:], 1):
                if part.words[index] is None:
                    continue
                words_judged += 1
                if words_judged > _WORDS_MAX:
                    return ShellReach(None, (), f"it has more words than unified judges as paths (over {_WORDS_MAX})")
                if _cluster_end(word) > _CLUSTER_MAX:
                    doubt = doubt or f"{word[:40]}… has an option cluster too long to judge"
                for candidate, build in _candidates(word):
                    if process_path(str(place / candidate)):
                        doubt = doubt or f"{candidate} is read by the command's own process, which unified cannot see"
                        continue
                    real = _reached(place, candidate)
                    if real is None:
                        continue
                    form = reached_form(root, real, os.path.isdir(real))
                    if form != candidate:
                        rewritten[index] = build(form)
                        changed = True
            variants.append(shlex.join(rewritten))
            walks.extend(_walks(words, rewritten, place, root))
    for target in _shell_syntax.redirected_inputs(command) if "<" in command else ():
        target = target.split("\0", 1)[0]
        if any(process_path(str(place / target)) for place in places):
            doubt = doubt or f"{target} is read by the command's own process, which unified cannot see"
            continue
        for place in places:
            real = _reached(place, target)
            if real is not None and (form := reached_form(root, real, False)) != target:
                variants.append(f": < {shlex.quote(form)}")
                changed = True
    return ShellReach("\n".join(variants) if changed else None, tuple(walks), doubt)


_CLUSTER_MAX = 64
"""The longest run of option letters before an attached value that is judged (`-iiiifdocs/l/key`); a longer one is
asked when a rule reads paths (as `_protected` does for protected paths)."""

_PATH_MAX = 4096
"""The longest word resolved as a path (the kernel's `PATH_MAX`): a longer one names no file."""

_WORDS_MAX = 4096
"""The most words of one command judged as paths (each is resolved): a longer command is asked when a rule reads
paths."""


def _candidates(word: str) -> list[tuple[str, Any]]:
    """The paths a word may name, each with how to put another path in its place: itself, the value of
    `--opt=value` or of an operand `if=value` (dd), and a value attached to a short option (`-fdocs/l/key`)."""
    word = word.split("\0", 1)[0]  # bash hands a program C strings: `$'docs/l/key\0x'` is `docs/l/key`
    found: list[tuple[str, Any]] = [] if word.startswith("-") else [(word, lambda form: form)]
    if "=" in word:  # `--file=x`, and an operand `if=x` (dd), `of=x`
        head, value = word.split("=", 1)
        found.append((value, lambda form, head=head: f"{head}={form}"))
    elif word.startswith("-") and not word.startswith("--") and len(word) > 2:
        for end in range(2, min(_cluster_end(word), _CLUSTER_MAX) + 1):
            if word[end:]:
                found.append((word[end:], lambda form, head=word[:end]: f"{head}{form}"))
    return [(text, build) for text, build in found if text]


def _reached(place: Path, candidate: str) -> Path | None:
    """The path `candidate` reaches from `place` through links, or None when it is no path (too long, a NUL)."""
    if len(candidate) > _PATH_MAX:
        return None
    try:
        return Path(os.path.realpath(place / candidate))
    except (OSError, ValueError):
        return None


def _walks(
    words: Sequence[str], rewritten: Sequence[str], place: Path, root: Path
) -> list[tuple[Path, bool, tuple[str, ...], int]]:
    """The folders a part reads whole (`RECURSIVE_READERS`): each existing folder an operand names, and `place`
    when the program searches the folder it runs in by default (`root`, the workspace's, for a git verb that prints
    the whole repository's files: `git show` in `docs` prints `secrets/key`; `git grep` searches below `place`).
    That one is `certain` when no operand is left to name a path; else it is walked too, not certain, unless every
    operand names a path that exists and no option stands before them (`rg -g x docs` searches `.` for `docs`; an
    option may take the next word as its value)."""
    name = _shell_syntax.command_name(words[0]).lower()
    entry = RECURSIVE_READERS.get(name)
    if entry is None:
        return []
    default_here, pattern_first = entry
    args = list(words[1:])
    if name == "git":
        printed = _git_prints_files(args)
        if printed is None:
            return []
        whole = printed != "grep" and place.is_relative_to(root)
        return [(root if whole else place, False, tuple(rewritten), -1)]
    recursive = _RECURSIVE_OPTIONS.get(name)
    if recursive is not None:
        shorts = {o for o in recursive if not o.startswith("-")}
        longs = tuple(o for o in recursive if o.startswith("--"))
        if not any(
            (a.startswith("--") and a.startswith(longs))
            or (a.startswith("-") and not a.startswith("--") and shorts & set(a[1:]))
            for a in args
        ):
            return []
        default_here = True
    found: list[tuple[Path, bool, tuple[str, ...], int]] = []
    operands = [(i, a) for i, a in enumerate(args, 1) if not a.startswith("-")]
    for index, word in operands:
        real = _reached(place, word)
        if real is not None and stat.S_ISDIR(_mode(real)):
            found.append((real, True, tuple(rewritten), index))
    if default_here:
        pattern_given = any(a.split("=", 1)[0] in _PATTERN_OPTIONS for a in args)
        paths = operands[1:] if pattern_first and not pattern_given else operands
        first = operands[0][0] if operands else len(args) + 1
        shifted = any(a.startswith("-") and "=" not in a for a in args[: first - 1])
        if not paths:
            found.append((place, True, tuple(rewritten), -1))
        elif shifted or any(_mode(_reached(place, w) or place / w) == 0 for _, w in paths):
            found.append((place, False, tuple(rewritten), -1))
    return found


_GIT_FILE_PRINTERS = frozenset(
    {
        "grep", "show", "diff", "archive", "cat-file", "format-patch", "bundle", "fast-export", "pack-objects",
        "difftool", "range-diff", "blame", "annotate",
    }
)  # fmt: skip
"""git verbs that print (or pack) the content of files the command does not name: the work tree's (`git grep k`,
`git diff`) or the repository's objects (`git show`, `git archive HEAD`, `git cat-file --batch-all-objects --batch`).
Round 40: under a deny of `secrets/`, only `git grep` was judged as a walk, and `git show` printed `secrets/key`."""
_GIT_PATCH_VERBS = frozenset({"log", "whatchanged", "reflog", "stash"})
"""git verbs that print files' content only with a patch option (`_GIT_PATCH_OPTIONS`): `git log -p`."""
_GIT_PATCH_OPTIONS = (
    *("-p", "-u", "-U", "-c", "-m", "--patch", "--unified", "--cc", "--full-diff", "--word-diff", "--color-words"),
    *("--binary", "--diff-merges", "--remerge-diff", "--dd", "--textconv", "--ext-diff"),
)
"""The options (as written, or the start of one: `-U3`, `--patch-with-stat`) that make a log print patches."""


def _git_prints_files(args: Sequence[str]) -> str | None:
    """The verb, when git's arguments `args` print the content of files they do not name (`_GIT_FILE_PRINTERS`; a
    log-like verb with a patch option, `_GIT_PATCH_OPTIONS`), judged then as a walk (`_walks`), as `git grep` is:
    what the folder holds is what its repository tracks. What only the history holds (a file deleted since) is not on
    disk to judge."""
    found = git_words_verb(args)
    if found is None:
        return None
    verb, rest = found
    if verb in _GIT_FILE_PRINTERS or (
        verb in _GIT_PATCH_VERBS and any(word.startswith(_GIT_PATCH_OPTIONS) for word in rest)
    ):
        return verb
    return None


def _mode(path: Path) -> int:
    try:
        return os.stat(path).st_mode
    except (OSError, ValueError):
        return 0
