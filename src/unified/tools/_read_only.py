"""Shell commands that only read, judged by unified's own parse of them (`read_only.toml`).

The codex backend ran without asking every command Codex parses as reads, listings or searches
(`commandActions`). Codex's parse names the program, not what its options do: `find . -delete`,
`find . -fprint x`, `rg --pre ./x`, `fd -x touch`, `git grep -O'cmd'`, `cat a | tee x` and
`nl a | xargs touch` all came back as reads (measured on Codex 0.171, in default mode with nobody
to ask: the first deleted the workspace, two more wrote files). So such a command runs unasked only
when this module agrees too: every command bash would start (`_shell_syntax.parse`: pipelines, lists,
substitutions) is a program of the table with none of its unsafe options, and nothing of it is only
known at run time. What this cannot judge is asked (fail closed).
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from importlib import resources

from unified.tools import _shell_syntax
from unified.tools._policy import _named
from unified.tools._protected import _NO_VALUE, _VALUE, _cluster_end, _getopt, _unsafe_option
from unified.tools._reach import _CLUSTER_MAX, _candidates

__all__ = ["not_read_only", "operands"]


@dataclass(frozen=True, slots=True)
class _Program:
    unsafe: tuple[str, ...]
    script: re.Pattern[str] | None
    required: tuple[str, ...]
    valued: tuple[str, ...]
    rooted: bool


@functools.cache
def _table() -> dict[tuple[str, ...], _Program]:
    """Programs by their command words (`("git", "grep")`), read once."""
    text = resources.files("unified.tools").joinpath("read_only.toml").read_text(encoding="utf-8")
    table: dict[tuple[str, ...], _Program] = {}
    for entry in tomllib.loads(text)["program"]:
        script = entry.get("script")
        program = _Program(
            tuple(entry.get("unsafe", ())),
            re.compile(script) if script else None,
            tuple(entry.get("required", ())),
            tuple(entry.get("valued", ())),
            bool(entry.get("rooted", False)),
        )
        for command in entry["commands"]:
            table[tuple(command.split())] = program
    return table


def not_read_only(command: str) -> str | None:
    """Why `command` may do more than read (then it must be asked), or None when every command it
    starts is a read of `read_only.toml`."""
    parts = _shell_syntax.parse(command)
    if not parts:
        return "no command"
    for part in parts:
        why = _part(part)
        if why is not None:
            return f"{part.display()}: {why}"
    return None


def _part(part: _shell_syntax.SimpleCommand) -> str | None:
    if part.unknown is not None:
        return part.unknown
    if part.writes:
        return "it writes a file"
    if part.opens:
        return "it opens what is not a plain file"
    if part.assigns:
        return "it sets a variable"
    if part.via:
        return f"it runs under {part.via[0]}"
    if part.open_tail:
        return "more arguments arrive at run time"
    if part.name is not None and not _named(part, part.name):  # `./cat`, not the `cat` of PATH or a system directory
        return "a program run by its path"
    words = part.words
    if not words or any(word is None for word in words):
        return "a word only known at run time"
    if any(_cluster_end(str(word)) > _CLUSTER_MAX for word in words[1:]):  # `operands` judges no value past it
        return f"an option cluster longer than {_CLUSTER_MAX} letters"
    argv = [_shell_syntax.command_name(str(words[0])), *(str(word) for word in words[1:])]
    table = _table()
    for size in (2, 1):
        program = table.get(tuple(argv[:size]))
        if program is not None:
            return _judged(program, argv[size:])
    return "not a program that only reads"


def _judged(program: _Program, args: list[str]) -> str | None:
    # Every word is looked at, past a `--` too: `find -- . -delete` deletes (find's `--` ends its own options, not
    # the expression after the paths); for other programs a word after `--` that reads as an unsafe option is a
    # pattern or a name, and is asked all the same.
    unsafe = _unsafe_option([arg for arg in args if arg != "--"], program.unsafe)
    if unsafe is not None:
        return f"{unsafe} may write, delete, run a program or follow links out of the workspace"
    missing = [option for option in program.required if option not in args]
    if missing:
        return f"without {missing[0]}"
    if program.rooted:
        operands = [arg.word for arg in _getopt(args, functools.partial(_takes, program.valued)) if arg.operand]
        patterned = any(arg in _PATTERN_OPTIONS or arg.startswith(("-e", "-f", "--regexp", "--file")) for arg in args)
        if any(":" in word for word in operands[0 if patterned else 1 :] if word != "--"):
            return "a revision's tree or a pathspec's magic (a colon) reads from the repository's top"
    if program.script is not None:
        # Operands as the program's getopt reads them: `sed -n -l 1p '1e cmd' f` gives `1p` to `-l` (sed reads
        # its number with atoi) and runs the script `1e cmd`, which a first word without a dash took for `1p`.
        operands = [arg.word for arg in _getopt(args, functools.partial(_takes, program.valued)) if arg.operand]
        if not operands or program.script.fullmatch(operands[0]) is None:
            return "a script that may write or run a program"
    return None


_PATTERN_OPTIONS = frozenset({"-e", "-f", "--regexp", "--file"})
"""Options of `git grep` that give its pattern: then no operand is the pattern."""


def _takes(valued: tuple[str, ...], option: str) -> int:
    """What `option` takes (`_protected._getopt`): a value when it is one of `valued`, a long one also
    abbreviated (`--line 1p`: getopt takes any unambiguous prefix)."""
    if option in valued or (option.startswith("--") and len(option) > 2 and any(v.startswith(option) for v in valued)):
        return _VALUE
    return _NO_VALUE


def operands(command: str) -> list[str]:
    """Every word of `command`'s commands that may name a path it reads, as written (relative to its
    directory): each argument, and an option's attached value (`--file=x`, `-fx`), after any letter of a
    cluster (`_reach._candidates`: `file -bm/home/u/.netrc x` reads the key file as its magic file and prints its
    lines in warnings; only `m/home/u/.netrc`, a path inside, was judged). Many are patterns and not paths at all;
    judged as paths they only make a command that reads outside its directory asked, as Codex's parse names one
    path of `grep -r x a /etc/passwd` (`a`) and left the rest unasked. Past a `--` every word is an operand as
    written: `cat a -- --/../../etc/passwd` reads /etc/passwd through a folder named `--` the model made, and the
    word, read as a long option, was passed over. So is each file a redirection reads
    (`_shell_syntax.redirected_inputs`)."""
    found: list[str] = []
    for part in _shell_syntax.parse(command):
        ended = False
        for word in part.words[1:]:
            if word is None:
                continue
            if ended or not word.startswith("-"):
                found.append(word)  # as written: no program of the table reads an operand `if=x` as dd does
            elif word == "--":
                ended = True
            else:
                found.extend(text for text, _ in _candidates(word))
    found.extend(_shell_syntax.redirected_inputs(command))  # `head a - < /etc/shadow` names no path in its words
    return [word for word in found if word]
