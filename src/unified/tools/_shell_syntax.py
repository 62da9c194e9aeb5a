"""A bash command line as the simple commands it would run (docs/tools.md, "How the policy reads a shell command").

The policy must judge what bash will execute, not what the text starts with, so a command is
parsed with tree-sitter-bash (the grammar the Gemini CLI splits commands with) and reduced,
recursively, to `SimpleCommand`s: every part of a list or pipeline, subshell, group, loop,
function body, command/process substitution, `bash -c` script and literal `eval`, with wrappers
(`env`, `sudo`, `xargs`, `find -exec`, ...) resolved to the command they start, quotes and
backslashes removed.

The analysis fails closed by construction: it follows only the node kinds and word forms it
knows (`_DESCEND`, `_INERT` and the handlers below), and anything else comes back as a part with
`unknown` set, so the policy never allows what it did not understand. Unknown, too, is everything
bash decides only at run time or that evaluates data as code: a command word made by an expansion,
arithmetic over anything but literal numbers (`$((x))` evaluates a variable whose value may hold
`a[$(cmd)]`), array indices, `${!x}` indirection, substring offsets, a variable that carries code
into bash or the programs it starts (`BASH_ENV`, `PS4`, `BASH_ALIASES`, exported functions,
`PATH`, `LD_PRELOAD`, `GIT_*`, ...), a shell reading a script it is not shown, start-up files,
an alias definition, an unparseable line. The tree-sitter import happens on the first parse, not
at `import unified`.
"""

from __future__ import annotations

import functools
import itertools
import posixpath
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from unified._redaction import clip

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = [
    "DECIMAL_DIGITS_MAX",
    "MAX_NESTING",
    "SimpleCommand",
    "Word",
    "command_name",
    "decimal",
    "otherwise_read",
    "parse",
]

Word = str | None
"""One argv word after quote removal; None when bash only knows it at run time (an expansion, a glob)."""

MAX_NESTING = 8
"""Scripts inside scripts (`bash -c`, `eval`, `trap`) deeper than this are not followed: unknown."""

_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_NETWORK_TARGET = re.compile(r"(?:^|/)dev/(?:tcp|udp)(?:/|$)", re.IGNORECASE)
"""A redirection target bash opens as a socket (`/dev/tcp/HOST/PORT`, `/dev/udp/HOST/PORT`), matched
on the path with `.`, `..` and doubled slashes folded (`//dev/./tcp/h/80`), and in any case: bash
itself compares the text as written, so this sees more than bash does, never less."""
_WRITE_OPERATORS = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})
_READ_OPERATORS = frozenset({"<", "<>", "<&", "<&-"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash", "fish", "csh", "tcsh", "rbash"})
_FOREIGN_SHELLS = frozenset({"fish", "csh", "tcsh"})
"""Shells whose scripts are not bash: their `-c` scripts cannot be read with this grammar."""
_BASH_READERS = frozenset({"bash", "rbash", "zsh"})
"""Shells that read `$'...'` and `[[ ... ]]` as bash does; another one's script using them is unknown
(`otherwise_read`)."""
_BASH_ONLY = re.compile(r"\$'|(?:^|(?<=[\s;&|()`]))\[\[(?=[\s\\]|$)")
"""Bash's ANSI-C quoting, or its `[[` keyword as a word of its own (not `[[:space:]]`)."""
_SHELL_VALUE_OPTIONS = frozenset("oO")
_SHELL_START_UP_OPTIONS = frozenset({"--rcfile", "--init-file", "--debugger"})
"""Options that make a shell run a file before anything else (unknown: the file is not ours to see)."""
_SHELL_LONG_FLAGS = frozenset(
    {"--login", "--noprofile", "--norc", "--posix", "--restricted", "--verbose", "--noediting", "--version", "--help"}
)
_RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "select", "case", "esac"}
)
"""Reserved words. tree-sitter-bash misreads a compound command after `!`, `time` or `coproc` as a
simple command named `if`, `{`, `then`..., so such a word in command position is looked through."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_QUOTED_SUBSTITUTION = re.compile(r"\$\(|`")
_UNPARSED_SUBSTITUTION = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$\()")
"""A substitution left inside a leaf token: tree-sitter-bash keeps `${x:-`cmd`}` and `${x#$(cmd)}`
as plain text, but bash runs them."""
_ASSIGNMENT_TILDE = re.compile(_ASSIGNMENT.pattern + "(?:~|.*:~)", re.DOTALL)
"""An argument that looks like an assignment with a `~` after its `=` or a `:` of its value: bash (not in POSIX mode)
expands that `~` as in an assignment, in any command's arguments (`dd of=~/bin/git` writes `$HOME/bin/git`, `x=a:~/b`
is `x=a:$HOME/b`, `x[1]=~/z` too). Round 40: such a word was read as its text, a file named `of=~/bin/git` here."""
_UNPARSED_ARITHMETIC = re.compile(r"(?<!\\)(?:\\\\)*\$\[")
"""An arithmetic expansion left inside a leaf token: tree-sitter-bash keeps `${x:-$[_]}`, `${x/$[_]/y}` and
`[[ x =~ $[_] ]]` as plain text, but bash evaluates it, and arithmetic evaluates the names in it: after
`ls 'a[$(cmd)]'`, `$_` holds `a[$(cmd)]`, and `$[_]` runs cmd (round 10)."""
_UNREAD_EXPANSION = re.compile(rb"(?<!\\)(?:\\\\)*(?:`|\$[(\[]|\$\{(?![A-Za-z_][A-Za-z0-9_]*\}))")
"""A backtick, `$(`, `$[` or a `${` other than a plain `${NAME}` left as text in an unquoted heredoc's
body: bash runs or expands it (`${x@P}` runs the substitutions in x's value, `${x:-$(cmd)}` runs cmd),
so text the parser did not read as an expansion is unknown; `${HOME}` only reads a variable."""
_BLANK_TO_THE_PARSER_ONLY = re.compile(rb"[\r\v\f]")
"""Characters tree-sitter-bash takes for blanks between words and bash for word characters (bash's
blanks are space and tab): `echo\r/../../usr/bin/python3 -c ..` is `echo` and its arguments to the
parser, and to bash a path through a directory named `echo\r` to python; `x\r#$(cmd)` a comment
to the parser, a word whose substitution bash runs."""
_GLUED_CONTINUATION = re.compile(rb"(?:^|[^\\ \t\n])(?:\\\\)*\\\n")
r"""A line continuation glued to what comes before it: bash removes every unquoted backslash-newline before
it reads the line, so `$\<newline>[_]` is `$[_]` (arithmetic, which runs what `$_` holds) and
`${x:-$\<newline>(cmd)}` runs cmd; tree-sitter-bash reads a variable named `\<newline>`, or plain text.
One after a blank (`ls \<newline>  -la`, the usual way to split a long command) is left to the parser."""
_LEAVES = frozenset({"word", "regex", "string_content", "extglob_pattern", "heredoc_content"})
_WILDCARD = re.compile(r"(?<!\\)(?:\\\\)*[*?\[]")


def _is_glob(text: str) -> bool:
    """Whether a word's unquoted text holds an unescaped wildcard or may be a brace expansion (`{a,b}`, `{1..3}`,
    and nested, `{x{a}y,.git/config}`, which bash expands to `x{a}y .git/config`: the pattern of round 17 and
    before, `\\{[^}]*,[^}]*\\}`, read it as one literal word, and a rule for `tee` wrote `.git/config`; it also
    took quadratic time over `{{{{...`, 33 s for 100,000). Any `{` followed by a `,` or `..` and then a `}` counts,
    escaped or nested or not: a word read as made at run time is only ever asked more."""
    if _WILDCARD.search(text):
        return True
    opening = text.find("{")
    if opening < 0:
        return False
    closing = text.rfind("}")
    comma = text.find(",", opening, closing)
    return comma >= 0 or text.find("..", opening, closing) >= 0


_FD_BOUNDARY = frozenset(bytes([byte]) for byte in b" \t\n\r\f\v;&|(){}")
"""What may come before the digits of an explicit descriptor written just before a redirection (`0<<<`, `3<&0`)."""
_NUMBER = re.compile(r"-?(?:0[xX][0-9a-fA-F]+|[0-9]+(?:#[0-9a-zA-Z@_]+)?)")
"""A literal integer as bash arithmetic reads it (decimal, hex, octal, `base#digits`)."""
_LITERAL_ARITHMETIC = re.compile(r"(?:\s|[-+*/%()<>=!&|^~?:,]|0[xX][0-9a-fA-F]+|[0-9]+(?:#[0-9a-zA-Z@_]+)?)*")
"""An arithmetic expression of literal numbers and operators only: it names no variable."""

_DESCEND = frozenset(
    {
        "program",
        "list",
        "subshell",
        "do_group",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "case_statement",
        "case_item",
        "negated_command",
        "variable_assignments",
        "string",
        "translated_string",
        "concatenation",
        "array",
        "brace_expression",
        "command_substitution",
        "process_substitution",
        "heredoc_body",
        "heredoc_redirect",
        "herestring_redirect",
        "file_redirect",
        "binary_expression",
        "unary_expression",
        "postfix_expression",
        "parenthesized_expression",
        "ternary_expression",
        "command_name",
        "ERROR",
    }
)
"""Node kinds whose meaning is their children's: looked through."""
_INERT = frozenset(
    {
        "word",
        "number",
        "raw_string",
        "string_content",
        "ansi_c_string",
        "variable_name",
        "special_variable_name",
        "simple_expansion",
        "file_descriptor",
        "test_operator",
        "regex",
        "extglob_pattern",
        "heredoc_content",
        "heredoc_start",
        "heredoc_end",
        "comment",
    }
)
"""Leaves that run nothing by themselves (their values are judged where they are used)."""

CODE_VARIABLES = frozenset(
    {
        # bash reads these as code or as where code comes from
        "BASH_ENV",
        "ENV",
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "BASH_ALIASES",
        "BASH_CMDS",
        "SHELLOPTS",
        "BASHOPTS",
        "BASH_XTRACEFD",
        "BASH_LOADABLES_PATH",
        "EXECIGNORE",
        "PATH",
        "HOME",
        "XDG_CONFIG_HOME",
        "ZDOTDIR",
        "GCONV_PATH",
        "LOCPATH",
        # programs bash starts read these as code or as where code comes from
        "PAGER",
        "MANPAGER",
        "EDITOR",
        "VISUAL",
        "BROWSER",
        "LESSOPEN",
        "LESSCLOSE",
        "LESSKEY",
        "LESSKEYIN",
        "LESSKEY_CONTENT",
        "LESSKEY_SYSTEM",
        "LESSKEYIN_SYSTEM",
        # round 30: less's options (`LESS=--lesskey-src=k`: a key file whose #env section sets LESSOPEN, run with no
        # terminal too), the shell `flock -c`, `script`, `parallel`, less's `!` and vim's `:!` start (`SHELL=./x`),
        # man's options (`-P` names its pager), systemd's pager and GNU parallel's shell
        "LESS",
        "SHELL",
        "MANOPT",
        "SYSTEMD_PAGER",
        "PARALLEL_SHELL",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PYTHONHOME",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "RUSTC_WRAPPER",
        "MAKEFLAGS",
    }
)
"""Variables whose value changes what bash, or a program it starts, runs: setting one is a part the
analysis cannot judge (unknown), wherever it happens (`X=..`, `env X=..`, `declare`, `read`,
`${X:=..}`, a `for` loop)."""
CODE_VARIABLE_PREFIXES = ("BASH_FUNC_", "LD_", "DYLD_", "GIT_", "npm_config_", "NPM_CONFIG_")
"""Families of such variables: exported functions (`BASH_FUNC_name%%`), the dynamic loader's,
git's (`GIT_CONFIG_*`, `GIT_SSH_COMMAND`, `GIT_DIR`, ...), npm's (`npm_config_script_shell`)."""

_SAFE_TRANSFORMS = frozenset("QUuLaKk")
"""`${x@op}` operators that only quote or re-case a value (`@P` expands a prompt: it runs code)."""
_EXPANSION_TOKENS = frozenset(
    {"${", "}", "!", "#", "##", "%", "%%", "/", "//", "/#", "/%", "^", "^^", ",", ",,", "-", "+", "?", ":-", ":+", ":?"}
    | {":", ":=", "=", "@", "*", "[", "]"}
)
_ARITHMETIC_COMPARISONS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
"""`[[ a -eq b ]]` evaluates both operands as arithmetic (`test`/`[` do not)."""


def code_variable(name: str) -> bool:
    """Whether setting `name` can change what bash or a program it starts runs (`CODE_VARIABLES`)."""
    return name in CODE_VARIABLES or name.startswith(CODE_VARIABLE_PREFIXES) or not _NAME.fullmatch(name)


@dataclass(frozen=True)
class SimpleCommand:
    """One command bash would start, after wrappers, assignments and quoting are resolved.

    `words` is its argv (None for a word only known at run time); `unknown`, when set, says why
    this part cannot be judged from the text. `writes` are the files its redirections write
    (`?` for a target only known at run time); `assigns` the variables set for it or by it, or
    removed from its environment (`env -u NAME`; `*` for all of them: `env -i`, `exec -c`);
    `via` the wrappers and shells it runs under; `open_tail` that more arguments arrive at run
    time (`xargs`). `text` is where it came from, for a prompt. `opens` are what its redirections
    open that is not a plain file: a network connection (`< /dev/tcp/h/80`, `> /dev/udp/h/53`) or a
    target only known at run time (`< "$f"`, `?`), which may be one; a command that opens one is
    never covered by an allow rule (a rule for `cat` does not allow `cat < /dev/tcp/h/80`).
    """

    words: tuple[Word, ...]
    text: str
    unknown: str | None = None
    writes: tuple[str, ...] = ()
    assigns: tuple[str, ...] = ()
    via: tuple[str, ...] = ()
    open_tail: bool = False
    paths: tuple[str, ...] = ()
    """The programs on its way run by a path (`./tar`, `/usr/bin/env`), itself or a wrapper."""
    opens: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()
    """The text, as written, of each word of its command only known at run time (`~/.net*`, `"$HOME"/.netrc`): what
    a judge of the files it may name reads (`_protected._unread_reason`); a wrapper's words included."""
    covered: bool = False
    """A command a package or environment runner starts (`rm x` of `uv run rm x`), whose words the runner's own part
    shows too: a deny or ask rule judges it as any command, and an allow rule covering the runner's part (`uv run`)
    covers it (`_policy._allow_all`), so an allow rule naming the runner means what it did before."""

    @property
    def name(self) -> Word:
        """The command word reduced to its basename (`/bin/rm` is `rm`)."""
        if not self.words or self.words[0] is None:
            return None
        return command_name(self.words[0])

    def display(self) -> str:
        """A one-line rendering for a permission prompt."""
        if self.unknown is not None:
            return f"{_clip(' '.join(self.text.split())) or '?'} (unknown: {self.unknown})"
        shown = _clip(" ".join([*(f"{name}=…" for name in self.assigns), *(_quote(word) for word in self.words)]))
        if self.open_tail:
            shown += " …"
        for target in self.writes:
            shown += f" > {target}"
        for target in self.opens:
            shown += f" < {target}"
        return f"{shown} (via {', '.join(self.via)})" if self.via else shown

    def shape(self) -> tuple[object, ...]:
        """What an "allow always" answer is scoped to: everything but the source text."""
        return (
            self.words,
            self.unknown,
            self.writes,
            self.assigns,
            self.via,
            self.open_tail,
            self.paths,
            self.opens,
            self.unread,
            self.covered,
        )


def otherwise_read(shell: str, script: str) -> str | None:
    """Why `shell` (a name of `_SHELLS`) may run other commands than bash would from `script`, else None.

    dash (`sh` on Debian and Ubuntu) has neither `$'...'` nor `[[`: it reads `cat $'a\\' ; rm x ; #\\''` as
    `cat`, then `rm x`, where bash reads one argument of `cat`, and `[[ a || rm x ]]` as `[[ a`, then `rm x ]]`,
    where bash runs a test (measured with dash 0.5.12: both ran what bash would not). Such a script is not read
    with this grammar: it is unknown, as a construct this parser does not understand is."""
    if shell in _BASH_READERS or _BASH_ONLY.search(script.replace("\\\n", "")) is None:  # `$\<newline>'` too
        return None
    return f"{shell} may not read bash's $'...' or [[ as bash does: its script is not judged as bash"


DECIMAL_DIGITS_MAX = 19
"""The most significant digits a number bash reads may have (intmax_t's largest, 9223372036854775807, has 19)."""


def decimal(text: str) -> int | None:
    """The integer a decimal number means as bash reads one (`legal_number`: C's `strtoimax`, base 10): whitespace
    around it, a sign and any number of leading zeros allowed; None for no number, or one past what `strtoimax`
    reads (bash refuses it). Python's `int` raised ValueError on a word of over 4,300 digits, and the run ended with
    an internal error (`echo x 1111...>y`; round 40), or left out `kill -9 -000...001`, which bash reads as -1."""
    body = text.strip()
    sign = body[:1] if body[:1] in ("+", "-") else ""
    digits = body[len(sign) :]
    if not digits.isascii() or not digits.isdigit():
        return None
    significant = digits.lstrip("0") or "0"
    return None if len(significant) > DECIMAL_DIGITS_MAX else int(sign + significant)


def command_name(word: str) -> str:
    """A command word as a prefix is compared against it: its basename."""
    return word.rstrip("/").rsplit("/", 1)[-1] or word


def _clip(text: str, limit: int = 120) -> str:
    """A command's text for a prompt or a reason, cut at `limit` (a key it holds is replaced first)."""
    return clip(text, limit, more="…")


def _quote(word: Word) -> str:
    if word is None:
        return "…"
    if word and re.fullmatch(r"[\w@%+=:,./-]+", word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


@functools.lru_cache(maxsize=512)
def parse(command: str) -> tuple[SimpleCommand, ...]:
    """Every simple command `bash -c command` would run, in the order found (a substitution before
    the command whose word it makes); cached, as every rule of a policy asks for the same command."""
    try:
        return tuple(_Walker(command, depth=0, via=()).run())
    except RecursionError:
        return (SimpleCommand((), command, unknown="nested too deeply to follow"),)
    except UnicodeEncodeError:  # a lone surrogate (`"\ud800"` in the model's JSON, or made by `$'\ud800'`)
        return (SimpleCommand((), command, unknown="text that is not valid Unicode (a lone surrogate)"),)


def redirected_inputs(command: str) -> list[str]:
    """Every literal file a redirection of `command` opens for reading (`< f`, `<> f`, `0< f`), wherever it
    stands (a compound command's, a substitution's): a read the command's words do not name, as in
    `head a - < ~/.codex/auth.json`, which prints the key file as its standard input. A target only known at
    run time is `SimpleCommand.opens`' (every such part is one that cannot be judged), and is left out."""
    walker = _Walker(command, depth=0, via=())
    with _parser_lock:
        tree = _parser().parse(walker.data)
    found: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if node.type != "file_redirect":
            continue
        operator = next((c.type for c in node.children if not c.is_named), "")
        destination = walker.destination(node)
        target = walker.target(destination) if operator in ("<", "<>") and destination else None
        if target is not None:
            found.append(target)
    return found


_parser_lock = threading.Lock()


@functools.cache
def _parser() -> Parser:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


@dataclass(frozen=True)
class _Context:
    writes: tuple[str, ...] = ()
    stdin_script: str | None = None
    """The literal text a heredoc or here-string feeds the command (a shell reading it runs it)."""
    opens: tuple[str, ...] = ()
    """Sockets and run-time targets the enclosing redirections open (`SimpleCommand.opens`)."""
    more_words: tuple[Node, ...] = ()
    """Arguments tree-sitter-bash put after a redirection of the command (`git >/dev/null push`):
    the command's words, in order, after its own (`_Walker.trailing_words`)."""


class _Walker:
    def __init__(self, source: str, *, depth: int, via: tuple[str, ...]) -> None:
        self.source = source
        self.data = source.encode("utf-8", "surrogateescape")
        self.depth = depth
        self.via = via
        self.out: list[SimpleCommand] = []
        self.misparsed = False

    def run(self) -> list[SimpleCommand]:
        if self.depth > MAX_NESTING:
            return [self.unknown(self.source, f"scripts nested more than {MAX_NESTING} deep")]
        with _parser_lock:
            tree = _parser().parse(self.data)
        root = tree.root_node
        if root.has_error:
            self.out.append(self.unknown(self.source, "bash syntax the parser does not understand"))
        if _GLUED_CONTINUATION.search(self.data):
            reason = "a line continuation inside a word, which bash joins before it reads the line"
            self.out.append(self.unknown(self.source, reason))
        if _BLANK_TO_THE_PARSER_ONLY.search(self.data):
            reason = "a carriage return, vertical tab or form feed, which bash reads as part of a word"
            self.out.append(self.unknown(self.source, reason))
        self.visit(root, _Context())
        if self.misparsed:
            self.rescan()
        return self.out

    def rescan(self) -> None:
        """tree-sitter-bash leaves some substitutions as plain text (`${x:-`cmd`}`, `${x#$(cmd)}`)
        that bash runs. When a token still holds one, every `$(..)` and backtick body of the line is
        found by a plain scan and parsed again: it may find commands bash would not run, never fewer."""
        bodies, complete = _embedded_scripts(self.source)
        for body in bodies:
            self.out.extend(_Walker(body, depth=self.depth + 1, via=self.via).run())
        if not complete:
            self.out.append(self.unknown(self.source, "a substitution the parser could not delimit"))

    def text(self, node: Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    def unknown(self, text: str, reason: str) -> SimpleCommand:
        return SimpleCommand((), text, unknown=reason, via=self.via)

    def flag(self, node: Node, reason: str) -> None:
        self.out.append(self.unknown(self.text(node), reason))

    # -- the tree -------------------------------------------------------------------------------

    def visit(self, node: Node, ctx: _Context) -> None:
        kind = node.type
        if not node.is_named:
            return  # punctuation and keywords
        if kind == "command":
            self.command(node, ctx)
        elif kind == "redirected_statement":
            self.redirected(node, ctx)
        elif kind == "variable_assignment":
            self.assignment_statement(node)
        elif kind == "declaration_command":
            self.declaration(node, ctx)
        elif kind == "unset_command":
            self.unset(node, ctx)
        elif kind == "pipeline":
            self.pipeline(node, ctx)
        elif kind == "function_definition":
            self.function(node, ctx)
        elif kind == "for_statement":
            self.for_loop(node, ctx)
        elif kind == "c_style_for_statement":
            self.arithmetic(node, skip=("do_group", "compound_statement"))
            self.children(node, ctx)
        elif kind == "compound_statement":
            if node.children and node.children[0].type == "((":
                self.arithmetic(node)
            self.children(node, ctx)
        elif kind == "arithmetic_expansion":
            self.arithmetic(node)
            self.children(node, ctx)
        elif kind == "test_command":
            self.test_expression(node)
            self.children(node, ctx)
        elif kind == "expansion":
            self.expansion(node)
            self.children(node, ctx)
        elif kind == "subscript":
            self.subscript(node)
            self.children(node, ctx)
        elif kind == "heredoc_body":
            self.heredoc_body(node)
            self.children(node, ctx)
        elif kind == "command_substitution" and self.text(node).startswith("`") and "\\" in self.text(node):
            self.backticks(node)
        elif kind == "command_substitution" and any(c.type == "file_redirect" for c in node.children):
            self.bare_redirection(node)
            self.children(node, ctx)
        elif kind in _DESCEND:
            self.children(node, ctx)
        elif (
            kind in ("raw_string", "ansi_c_string")
            and _in_double_quotes(node)
            and _UNREAD_EXPANSION.search(self.data_of(node))
        ):
            # `"${x:-'$(cmd)'}"`, `"${x:- $'$(cmd)'}"`: inside double quotes bash takes the single
            # quotes (and a `$'`) for plain characters
            self.flag(node, "single quotes inside a double-quoted expansion, which do not quote there")
        elif kind == "comment" and self.in_word(node):
            # `x\<newline>#$(cmd)`: bash joins the lines first, so `#` is inside the word `x#$(cmd)`
            self.flag(node, "a # the parser takes for a comment, inside a word to bash")
        elif kind in _INERT:
            if kind in _LEAVES and _UNPARSED_ARITHMETIC.search(self.text(node)):
                self.flag(node, "arithmetic ($[..]) the parser leaves as text, which may run a command")
            if kind in _LEAVES and _UNPARSED_SUBSTITUTION.search(self.text(node)):
                self.misparsed = True
        else:
            self.flag(node, f"syntax the analysis does not follow ({kind})")
            self.children(node, ctx)

    def data_of(self, node: Node) -> bytes:
        return self.data[node.start_byte : node.end_byte]

    def in_word(self, node: Node) -> bool:
        """Whether bash reads the `#` starting `node` inside a word: a comment begins only where a
        word may, and a line continuation before it (`x\\<newline>#`) joins it to the word before."""
        before = self.data[: node.start_byte]
        joined = False
        while before.endswith(b"\\\n"):
            before, joined = before[:-2], True
        return joined and bool(before) and before[-1:] not in b" \t\n;&|()<>"

    def pipeline(self, node: Node, ctx: _Context) -> None:
        """Only the first command of a pipeline reads the heredoc; the others read the pipe."""
        first = True
        for child in node.children:
            self.visit(child, ctx if first else replace(ctx, stdin_script=None))
            first = first and not child.is_named

    def heredoc_body(self, node: Node) -> None:
        """Where tree-sitter-bash reads a heredoc's body otherwise than bash, it is unknown: a line
        bash takes for the delimiter inside what the parser takes for the body (after `\\` at a
        line's end bash joins the next line to it; the parser does so in a quoted heredoc too), so
        what follows runs as commands; a delimiter line the parser accepts and bash does not (a
        tab-indented `\tEOF` after a plain `<<EOF`, a trailing space or carriage return), so what the
        parser reads as commands after it is body to bash, expanded there whatever its quotes
        (`echo '$(cmd)'` runs cmd); and, in an unquoted heredoc, an expansion the parser leaves as
        text: a backtick substitution, and `$(..)`, `${..}`, `$[..]` after a line's leading blanks
        (`cat <<EOF` then ` $(cmd)`: bash runs cmd, the parser gives the body no children)."""
        redirect = node.parent
        start = next((c for c in redirect.children if c.type == "heredoc_start"), None) if redirect else None
        if start is None or redirect is None:
            return
        quoted = any(q in self.text(start) for q in "'\"\\")
        delimiter = re.sub(r"""['"\\]""", "", self.text(start))
        strip_tabs = any(c.type == "<<-" for c in redirect.children)
        line_end = self.data.find(b"\n", start.end_byte)
        misplaced = [
            c for c in redirect.named_children if line_end < c.start_byte < node.start_byte and c.type != "heredoc_body"
        ]
        if misplaced or _ends_early(self.text(node), delimiter, quoted=quoted, strip_tabs=strip_tabs):
            # bash's body starts on the line after `<<E`; the parser took a line of it for something else
            self.flag(node, "a heredoc bash ends before the parser does")
            return
        end = next((c for c in redirect.children if c.type == "heredoc_end"), None)
        if end is not None:
            line_start = self.data.rfind(b"\n", 0, end.start_byte) + 1
            line_stop = self.data.find(b"\n", end.end_byte)
            line = self.data[line_start : len(self.data) if line_stop < 0 else line_stop]
            if (line.lstrip(b"\t") if strip_tabs else line) != delimiter.encode("utf-8", "surrogateescape"):
                # what the parser reads after this line is still the body to bash, expanded there
                self.flag(node, "a heredoc the parser ends on a line bash does not take for its delimiter")
                return
        if quoted:
            return  # a quoted delimiter: the body is not expanded
        gaps, at = [], node.start_byte
        for child in node.named_children:
            gaps.append(self.data[at : child.start_byte])
            at = child.end_byte
        gaps.append(self.data[at : node.end_byte])
        if any(_UNREAD_EXPANSION.search(gap) for gap in gaps):
            self.flag(node, "a substitution or expansion in a heredoc that the parser does not read")

    def bare_redirection(self, node: Node) -> None:
        """`$(< f)` is bash's way to read a file without `cat`, and tree-sitter-bash gives the
        substitution the redirection itself, with no command to carry it: yet bash opens the target
        all the same (`$(< /dev/tcp/h/80)` connects, `$(> f)` and `$(2> f)` create or empty f)."""
        writes: list[str] = []
        opens: list[str] = []
        for child in node.children:
            if child.type == "file_redirect":
                self.redirect(child, writes, None, opens)
        if writes or opens:
            self.out.append(SimpleCommand((), self.text(node), writes=tuple(writes), via=self.via, opens=tuple(opens)))

    def backticks(self, node: Node) -> None:
        r"""Inside backticks bash first removes the backslash of \\, \` and \$, so `\`rm x\`` nests a
        substitution tree-sitter reads as plain words: the unescaped body is parsed again."""
        self.out.extend(_Walker(_unbacktick(self.text(node)[1:-1]), depth=self.depth + 1, via=self.via).run())

    def children(self, node: Node, ctx: _Context) -> None:
        for child in node.children:
            self.visit(child, ctx)

    # -- what evaluates data as code ------------------------------------------------------------

    def arithmetic(self, node: Node, skip: tuple[str, ...] = ()) -> None:
        """Arithmetic evaluates every name in it, recursively, and a value like `a[$(cmd)]` runs
        cmd; so arithmetic over anything but literal numbers and operators is unknown."""
        for child in _named_descendants(node, stop=("do_group", "compound_statement", *skip)):
            if child.type in ("binary_expression", "unary_expression", "postfix_expression"):
                continue
            if child.type in ("parenthesized_expression", "ternary_expression", "arithmetic_expansion"):
                continue
            if self.numeric(child):
                continue
            self.flag(node, f"arithmetic evaluates {_clip(self.text(child), 40)!r}, which may run a command")
            return

    def test_expression(self, node: Node) -> None:
        """`[[ a -eq b ]]` is arithmetic on both sides; `[[ -v a[i] ]]` evaluates the index."""
        for child in _named_descendants(node, stop=("command_substitution", "process_substitution")):
            operator = next((c for c in child.children if c.type == "test_operator"), None)
            if operator is None:
                continue
            op = self.text(operator)
            operands = [c for c in child.named_children if c is not operator]
            if op in _ARITHMETIC_COMPARISONS and any(not self.numeric(c) for c in operands):
                self.flag(node, f"{op} evaluates its operands as arithmetic, which may run a command")
                return
            if op == "-v" and any(_index_reason(self.literal(c)) for c in operands):
                self.flag(node, "-v evaluates an array index, which may run a command")
                return

    def numeric(self, node: Node) -> bool:
        """A literal integer (tree-sitter reads `0x1f` as a variable name; no name starts with a digit)."""
        return node.type in ("number", "word", "variable_name") and bool(_NUMBER.fullmatch(self.text(node)))

    def expansion(self, node: Node) -> None:
        """`${...}`: assignments (`:=`), indirection (`${!x}`), array indices, substring offsets
        and `@P` are where an expansion assigns or evaluates; the plain forms only substitute."""
        inner = [c for c in node.children if c.type not in ("${", "}")]
        tokens = [self.text(c) if c.type in _SAFE_TRANSFORMS else c.type for c in inner if not c.is_named]
        unexpected = [t for t in tokens if t not in _EXPANSION_TOKENS and t not in _SAFE_TRANSFORMS]
        if unexpected:
            self.flag(node, f"an expansion the analysis does not follow ({unexpected[0]})")
            return
        text = self.text(node)
        target = next((c for c in inner if c.type in ("variable_name", "special_variable_name", "subscript")), None)
        name = None
        if target is not None:
            name_node = target.child_by_field_name("name") if target.type == "subscript" else target
            name = self.text(name_node) if name_node is not None else None
        if tokens[:1] == ["!"] and not re.fullmatch(r"\$\{![A-Za-z_][A-Za-z0-9_]*(?:[*@]|\[[*@]\])\}", text):
            self.flag(node, "indirect expansion ${!name} evaluates a name, which may run a command")
        if ":" in tokens:
            after = inner[inner.index(next(c for c in inner if c.type == ":")) + 1 :]
            if any(c.is_named and not self.numeric(c) for c in after):
                self.flag(node, "a substring offset is arithmetic, which may run a command")
        if "@" in tokens:
            at = tokens.index("@")
            operator = tokens[at + 1] if at + 1 < len(tokens) else ""
            if operator not in _SAFE_TRANSFORMS:
                self.flag(node, "a ${var@op} transformation may run code")
        if ":=" in tokens or "=" in tokens:
            if name is None or code_variable(name):
                self.flag(node, f"${{{name}:=...}} sets a variable that carries code")
            else:
                self.out.append(SimpleCommand((), text, assigns=(name,), via=self.via))

    def subscript(self, node: Node) -> None:
        """An array index is arithmetic for an indexed array: only literal numbers, `@` and `*`."""
        index = node.child_by_field_name("index")
        if index is None:
            index = next((c for c in node.named_children if c.type != "variable_name"), None)
        if index is None:
            return
        value = self.text(index)
        if value in ("@", "*") or self.numeric(index):
            return
        self.flag(node, f"the array index [{_clip(value, 40)}] is evaluated, which may run a command")

    def name_reason(self, word: Word) -> str | None:
        return _name_reason(word)

    # -- redirections ---------------------------------------------------------------------------

    def descriptor(self, node: Node) -> int | None:
        """The descriptor a redirection applies to: its own (`2>`), or digits tree-sitter left as
        a separate word just before it (`0<<<`, `0<&3`); None for the default."""
        fd = next((c for c in node.children if c.type == "file_descriptor"), None)
        if fd is not None:
            value = self.text(fd)
            number = decimal(value) if value.isdigit() else None
            return -1 if number is None else number
        # the digits ending the text before it, looked for backwards: a regex's search of the whole text before each
        # redirection was quadratic (4,000 redirections, 76 KB: 17.8 s with the event loop held, round 40)
        start = end = node.start_byte
        while start > 0 and self.data[start - 1 : start].isdigit():
            start -= 1
        if start == end or (start > 0 and self.data[start - 1 : start] not in _FD_BOUNDARY):
            return None
        number = decimal(self.data[start:end].decode())
        return -1 if number is None else number

    def is_descriptor_word(self, node: Node) -> bool:
        """Digits glued to a following `<` or `>` are the redirection's descriptor, not a word."""
        return self.text(node).isdigit() and self.data[node.end_byte : node.end_byte + 1] in (b"<", b">")

    def descriptor_variable(self, node: Node) -> str | None:
        """`{fd}` glued to a following `<` or `>` is bash's named descriptor (`git {fd}>/dev/null push`
        runs `git push` and sets fd), not a word: the name it sets, else None."""
        found = re.fullmatch(r"\{([A-Za-z_][A-Za-z0-9_]*)\}", self.text(node))
        if found is None or self.data[node.end_byte : node.end_byte + 1] not in (b"<", b">"):
            return None
        return found.group(1)

    def redirect(self, node: Node, writes: list[str], stdin: str | None, opens: list[str]) -> str | None:
        """Adds the files `node` writes to `writes`, and the sockets or run-time targets it opens to
        `opens`; returns standard input after it."""
        fd = self.descriptor(node)
        reads_stdin = fd is None or fd == 0
        if node.type == "heredoc_redirect":
            stdin = self.heredoc_text(node) if reads_stdin else stdin
            # tree-sitter-bash nests the redirections written after `<<EOF` on its line inside the
            # heredoc node (`cat <<EOF > f`, `bash <<EOF < x.sh`): they write, or replace stdin
            for child in node.children:
                if child.type in ("file_redirect", "herestring_redirect"):
                    stdin = self.redirect(child, writes, stdin, opens)
            return stdin
        if node.type == "herestring_redirect":
            return self.herestring_text(node) if reads_stdin else stdin
        if node.type != "file_redirect":
            return stdin
        writes.extend(self.redirect_writes(node))
        opens.extend(self.redirect_opens(node))
        operator = next((c.type for c in node.children if not c.is_named), "")
        if (reads_stdin and operator in _READ_OPERATORS) or fd == 0:
            return None  # standard input now comes from a file or another descriptor
        return stdin

    def redirect_writes(self, node: Node) -> list[str]:
        operator = next((c.type for c in node.children if c.type in _WRITE_OPERATORS or c.type == ">&"), None)
        destination = self.destination(node)
        if operator is None or not destination or destination[0].type == "process_substitution":
            return []
        target = self.target(destination)
        if operator == ">&" and target is not None and (target == "-" or target.isdigit()):
            return []
        if target in _HARMLESS_TARGETS:
            return []
        return [target if target is not None else "?"]

    def destination(self, node: Node) -> list[Node]:
        """The nodes of a file redirection's target: tree-sitter-bash gives it every word up to the
        next operator (`> a b`: `a`, then `b`), but bash only the first word, which may be cut by a line
        continuation into several nodes (`>.bash\\<newline>rc` writes `.bashrc`)."""
        nodes = node.children_by_field_name("destination")
        if not nodes or any(c.type in (">&-", "<&-") for c in node.children):
            return []  # `3>&- push`: closing a descriptor takes no target, `push` is an argument
        first = [nodes[0]]
        for following in nodes[1:]:
            if self.data[first[-1].end_byte : following.start_byte].replace(b"\\\n", b""):
                break
            first.append(following)
        return first

    def target(self, nodes: Sequence[Node]) -> Word:
        """The literal target of `destination`'s nodes, or None when it is only known at run time."""
        parts = [self.literal(part) for part in nodes]
        return None if any(part is None for part in parts) else "".join(part for part in parts if part is not None)

    def trailing_words(self, node: Node) -> list[Node]:
        """The command's arguments tree-sitter-bash put inside a redirection: the words after a file
        redirection's target (`git >/dev/null push --force` runs `git push --force`, and
        `rm 2>/dev/null -rf .git` deletes `.git`) and a heredoc's (`git <<EOF push`), with those of
        the redirections it nests."""
        if node.type == "file_redirect":
            return node.children_by_field_name("destination")[len(self.destination(node)) :]
        if node.type != "heredoc_redirect":
            return []
        words: list[Node] = []
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "argument":
                words.append(child)
            elif child.type == "file_redirect":
                words.extend(self.trailing_words(child))
        return words

    def redirect_opens(self, node: Node) -> list[str]:
        """What a file redirection opens that is not a plain file, whatever its direction: bash
        connects a socket for `/dev/tcp/HOST/PORT` and `/dev/udp/HOST/PORT` (`cat < /dev/tcp/h/80`
        reads from the network, `exec 3<> ...` keeps a connection), and a target only known at run
        time (`< "$f"`, `< /dev/${x}/h/80`, `< ~/x`) may be one."""
        destination = self.destination(node)
        if not destination or destination[0].type == "process_substitution":
            return []
        operator = next((c.type for c in node.children if not c.is_named), "")
        target = self.target(destination)
        if target is None:
            return ["?"]
        if operator in (">&", "<&") and (target == "-" or target.isdigit()):
            return []
        return [target] if _network_target(target) else []

    def heredoc_text(self, node: Node) -> str | None:
        """The script a heredoc feeds: verbatim under a quoted delimiter; under a plain one, after
        the expansion bash applies (unknown if it has any)."""
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return ""
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        if start is not None and any(q in self.text(start) for q in "'\"\\"):
            return self.text(body)
        if any(c.is_named and c.type != "heredoc_content" for c in body.children):
            return None
        return re.sub(r"\\([$`\\])", r"\1", self.text(body).replace("\\\n", ""))

    def herestring_text(self, node: Node) -> str | None:
        value = next((c for c in node.children if c.type != "<<<"), None)
        return self.literal(value) if value is not None else None

    def function(self, node: Node, ctx: _Context) -> None:
        """`f() { ..; } > file`: the redirection applies to the body each time `f` runs."""
        writes, opens = list(ctx.writes), list(ctx.opens)
        for child in node.children:
            if child.type == "file_redirect":
                writes.extend(self.redirect_writes(child))
                opens.extend(self.redirect_opens(child))
                if self.trailing_words(child):
                    self.flag(node, "words after the redirection of a function definition")
        inner = replace(ctx, writes=tuple(writes), opens=tuple(opens), more_words=())
        for index, child in enumerate(node.children):
            self.visit(child, inner if node.field_name_for_child(index) == "body" else ctx)

    def redirected(self, node: Node, ctx: _Context) -> None:
        writes, opens = list(ctx.writes), list(ctx.opens)
        stdin = ctx.stdin_script
        more: list[Node] = []
        for child in node.children:
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                stdin = self.redirect(child, writes, stdin, opens)
                more.extend(self.trailing_words(child))
        body = node.child_by_field_name("body")
        while body is not None and body.type == "negated_command":
            body = next((c for c in body.named_children), None)
        if more and (body is None or body.type != "command"):
            # bash refuses words after a compound command's redirection, and gives a declaration's
            # (`export >/dev/null BASH_ENV=./x`) to it: neither is followed, so either is unknown
            kind = (
                "a declaration"
                if body is not None and body.type in ("declaration_command", "unset_command")
                else "a compound command"
            )
            self.flag(node, f"words after the redirection of {kind}")
            more = []
        inner = _Context(tuple(writes), stdin, tuple(opens), tuple(more))
        start = len(self.out)
        for index, child in enumerate(node.children):
            self.visit(child, inner if node.field_name_for_child(index) == "body" else ctx)
        added = set(writes) - set(ctx.writes)
        opened = set(opens) - set(ctx.opens)
        carried = [part for part in self.out[start:] if part.unknown is None]
        if opened and not any(opened <= set(part.opens) for part in carried):
            # `< /dev/tcp/h/80` alone, or before a body that leaves no part: bash connects all the same
            self.out.append(SimpleCommand((), self.text(node), writes=tuple(writes), via=self.via, opens=tuple(opens)))
        if added and not any(added <= set(part.writes) for part in carried):
            # bash opens the file whatever the body is, but some bodies leave no part to carry the
            # write: none (`> f` alone), a test (`[ x ] > f`, `[[ .. ]] > f`, `(( 1 )) > f`), or
            # assignments (`x=1 y=2 > f`)
            self.out.append(SimpleCommand((), self.text(node), writes=tuple(writes), via=self.via))

    # -- assignments ----------------------------------------------------------------------------

    def assignment_statement(self, node: Node) -> None:
        label = self.assignment(node)
        self.out.append(SimpleCommand((), self.text(node), assigns=(label,), via=self.via))

    def assignment(self, node: Node) -> str:
        """One `NAME=value` (or `NAME[i]=value`): checked, its value visited; returns NAME."""
        name = node.child_by_field_name("name")
        variable = name
        if name is not None and name.type == "subscript":
            self.subscript(name)
            variable = name.child_by_field_name("name")
        label = self.text(variable) if variable is not None else self.text(node)
        if code_variable(label):
            self.flag(node, f"it sets {label}, which carries code into what runs")
        self.check_assignment_value(node)
        for child in node.children:
            if child is not name:
                self.visit(child, _Context())
        return label

    def check_assignment_value(self, node: Node) -> None:
        value = node.child_by_field_name("value")
        if value is not None and value.type in ("raw_string", "string", "ansi_c_string", "word"):
            literal = self.literal(value)
            if literal is not None and _QUOTED_SUBSTITUTION.search(literal):
                self.out.append(self.unknown(self.text(node), "a variable holding a command substitution"))

    def assignment_word(self, node: Node) -> Word:
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        if name is None:
            return None
        if value is None:
            return self.text(name) + "="
        literal = self.literal(value)
        return None if literal is None else f"{self.text(name)}={literal}"

    def for_loop(self, node: Node, ctx: _Context) -> None:
        """`for NAME in ...`/`select NAME in ...` assigns NAME on every round."""
        variable = node.child_by_field_name("variable")
        if variable is None:
            variable = next((c for c in node.named_children if c.type == "variable_name"), None)
        if variable is not None:
            name = self.text(variable)
            if code_variable(name):
                self.flag(node, f"the loop sets {name}, which carries code into what runs")
            else:
                self.out.append(SimpleCommand((), self.text(variable), assigns=(name,), via=self.via))
        self.children(node, ctx)

    def declaration(self, node: Node, ctx: _Context) -> None:
        words: list[Word] = []
        plain: list[Word] = []
        assigns: list[str] = []
        for child in node.children:
            if child.type == "variable_assignment":
                assigns.append(self.assignment(child))
                words.append(self.assignment_word(child))
            elif child.is_named:
                word = self.literal(child)
                words.append(word)
                plain.append(word)
                self.visit(child, ctx)
            else:
                words.append(child.type)
        assigns.extend(self.declared_names(plain, node, valued=len(assigns) > 0))
        self.out.append(
            SimpleCommand(
                tuple(words), self.text(node), writes=ctx.writes, assigns=tuple(assigns), via=self.via, opens=ctx.opens
            )
        )

    def declared_names(self, words: Sequence[Word], node: Node, *, valued: bool) -> list[str]:
        """The names `declare`/`export`/`local`/... set besides their `NAME=value` children (which
        the caller has checked): quoted assignments (`declare 'PS4=..'`) and bare names. `-n`
        (a reference to any name) and `-i` with a value (values are arithmetic) are unknown."""
        options = {letter for w in words if w and w[:1] in "-+" and len(w) > 1 for letter in w[1:]}
        names: list[str] = []
        for word in words:
            if word is not None and word[:1] in "-+" and len(word) > 1:
                continue
            if word is None:
                self.flag(node, "a declaration of a name only known at run time")
                continue
            name, eq, _ = word.partition("=")
            valued = valued or bool(eq)
            name = name.removesuffix("+")
            reason = _name_reason(name)
            if reason is not None and (eq or not _NAME.fullmatch(name.partition("[")[0]) or "[" in name):
                self.flag(node, reason)
            names.append(name.partition("[")[0])
        if "n" in options:
            self.flag(node, "declare -n makes a name refer to any other, evaluated when used")
        if "i" in options and valued:
            self.flag(node, "declare -i evaluates the value as arithmetic, which may run a command")
        return names

    def unset(self, node: Node, ctx: _Context) -> None:
        words: list[Word] = ["unset"]
        for child in node.named_children:
            words.append(self.literal(child))
            self.visit(child, ctx)
        for word in words[1:]:
            if word is not None and word.startswith("-"):
                continue
            if word is None or "[" in word:
                reason = self.name_reason(word)
                if reason is not None:
                    self.flag(node, reason)
        self.out.append(SimpleCommand(tuple(words), self.text(node), writes=ctx.writes, via=self.via, opens=ctx.opens))

    # -- commands -------------------------------------------------------------------------------

    def command(self, node: Node, ctx: _Context) -> None:
        word_nodes: list[Node] = []
        assigns: list[str] = []
        writes, opens = list(ctx.writes), list(ctx.opens)
        stdin = ctx.stdin_script
        for child in node.children:
            if child.type == "variable_assignment":
                assigns.append(self.assignment(child))
                continue
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                stdin = self.redirect(child, writes, stdin, opens)
                word_nodes.extend(self.trailing_words(child))
            elif child.type == "command_name" and self.descriptor_variable(child) is None:
                # tree-sitter-bash takes the `0` of `0<y rm -rf z` for the command's name (a `1` or `3` it reads as
                # the descriptor): bash runs `rm` with its input from y, and the part was `0`, past a deny of `rm`
                word_nodes.extend(
                    c for c in child.children if not (c.type in ("number", "word") and self.is_descriptor_word(c))
                )
            elif child.is_named and child.type != "comment":
                if child.type in ("number", "word") and self.is_descriptor_word(child):
                    continue
                variable = self.descriptor_variable(child)
                if variable is not None:
                    if code_variable(variable):
                        self.flag(child, f"it sets {variable}, which carries code into what runs")
                    assigns.append(variable)
                    continue
                word_nodes.append(child)
            self.visit(child, _Context())
        word_nodes.extend(ctx.more_words)
        unread: list[str] = []
        words = self.words(word_nodes, unread)
        self.resolve(
            words,
            _Invocation(
                self.text(node),
                tuple(assigns),
                tuple(writes),
                stdin,
                self.via,
                opens=tuple(opens),
                unread=tuple(unread),
            ),
        )

    def words(self, nodes: Sequence[Node], unread: list[str] | None = None) -> list[Word]:
        """Literal words; nodes separated only by a line continuation (`r\\<newline>m`) are one word. The text of
        each word only known at run time is added to `unread`."""
        groups: list[list[Node]] = []
        for node in nodes:
            if groups:
                gap = self.data[groups[-1][-1].end_byte : node.start_byte]
                if gap.replace(b"\\\n", b"") == b"":
                    groups[-1].append(node)
                    continue
            groups.append([node])
        words: list[Word] = []
        for group in groups:
            parts = [self.literal(n) for n in group]
            if any(p is None for p in parts):
                words.append(None)
                if unread is not None:
                    unread.append(self.data[group[0].start_byte : group[-1].end_byte].decode(errors="replace"))
            else:
                words.append("".join(p for p in parts if p is not None))
        return words

    def literal(self, node: Node) -> Word:
        """A word node's value after quote removal, or None if bash computes it at run time."""
        kind = node.type
        text = self.text(node)
        if kind in ("word", "concatenation") and _ASSIGNMENT_TILDE.match(text):
            return None
        if kind in ("word", "variable_name"):
            if _is_glob(text) or text.startswith("~") or _UNPARSED_SUBSTITUTION.search(text):
                return None
            return _unescape(text)
        if kind == "number":
            return text
        if kind == "raw_string":
            return text[1:-1]
        if kind == "ansi_c_string":
            return _ansi_c(text[2:-1])
        if kind in ("string", "translated_string"):
            if any(child.is_named and child.type != "string_content" for child in node.children):
                return None
            # the whole text between the quotes: tree-sitter leaves newlines between its pieces out
            return _unescape_double(text[text.index('"') + 1 : -1])
        if kind == "concatenation":
            children = node.children
            gaps = (self.data[a.end_byte : b.start_byte] for a, b in itertools.pairwise(children))
            if any(gap.replace(b"\\\n", b"") for gap in gaps):
                return None
            unquoted = "".join(self.text(c) if c.type == "word" else "_" for c in children)
            if _is_glob(unquoted):
                return None
            parts = [self.literal(child) for child in children]
            return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
        return None

    # -- argv resolution ------------------------------------------------------------------------

    def resolve(self, words: list[Word], inv: _Invocation) -> None:
        """Emits the command `words` starts, looking through wrappers, shells and `eval`."""
        if inv.placeholder is not None:
            words = [None if w is None or inv.placeholder in w else w for w in words]
        if not words:
            if inv.assigns:
                self.out.append(
                    SimpleCommand((), inv.text, assigns=inv.assigns, writes=inv.writes, via=inv.via, opens=inv.opens)
                )
            return
        first = words[0]
        if first is None:
            self.out.append(inv.unknown("its command name is only known at run time"))
            return
        if first in _RESERVED:
            self.resolve(words[1:], inv)
            return
        tokens = first.split()
        if len(tokens) > 1 and tokens[0] in _RESERVED:
            # tree-sitter-bash can even make one word of `{ {`
            self.resolve([*tokens, *words[1:]], inv)
            return
        if _ASSIGNMENT.match(first):
            # an assignment tree-sitter left as a word (after a misread reserved word)
            name = first.split("=", 1)[0].split("[", 1)[0].removesuffix("+")
            if code_variable(name):
                self.out.append(inv.unknown(f"it sets {name}, which carries code into what runs"))
            self.resolve(words[1:], replace(inv, assigns=(*inv.assigns, name)))
            return
        name = command_name(first)
        if "/" in first:
            # run by a path, not found through PATH: every part it leads to carries the path, so an
            # allow rule for `tar` is not taken to cover `./tar` (a file the model may have made)
            start = len(self.out)
            self.dispatch(name, words, inv)
            self.out[start:] = [replace(part, paths=(first, *part.paths)) for part in self.out[start:]]
        else:
            self.dispatch(name, words, inv)

    def dispatch(self, name: str, words: list[Word], inv: _Invocation) -> None:
        if name not in _SHELLS and name not in _WRAPPERS and name.lower() in _SHELLS | _WRAPPERS.keys():
            # a program found on a case-insensitive file system (macOS): `ENV rm x` runs env, then rm
            name = name.lower()
        args = words[1:]
        if name in ("eval", "trap") and args[:1] == ["--"]:
            args = args[1:]
        if name in _SHELLS:
            self.shell(name, words, inv)
        elif name == "eval":
            self.script(args, inv, name)
        elif name == "trap" and args and args[0] not in ("-p", "-l", "-"):
            self.script(args[:1], inv, name)
        elif name == "alias" and any(a is None or "=" in a for a in args):
            self.out.append(inv.unknown("an alias definition changes what later words run"))
        elif name == "hash" and any(a is None or re.match(r"-[^-]*p", a) for a in args):
            # in a cluster or with its value attached too: `hash -rp /bin/rm ls; ls x` and `hash -p/bin/rm ls` run rm
            self.out.append(inv.unknown("hash -p changes which program a name runs"))
        elif name in ("set", "shopt") and _keyword_mode(args):
            self.out.append(
                inv.unknown(f"{name}: keyword mode makes a NAME=value word after a command name set a variable")
            )
        elif name in ("source", "."):
            self.sourced(name, words, inv)
        elif name in _BUILTINS:
            _BUILTINS[name](self, words, inv)
        elif name in _WRAPPERS:
            _WRAPPERS[name](self, words, inv)
        else:
            self.out.append(inv.command(words))

    def sourced(self, name: str, words: list[Word], inv: _Invocation) -> None:
        """`source FILE` runs a file (not ours to see: a documented limit); a generated one
        (`<(..)`, `/dev/stdin`, a variable) is unknown, and a heredoc or here-string given to it
        is read as the script too (the file may be a link to standard input)."""
        args = words[1:]
        if args[:1] == ["--"]:
            args = args[1:]
        if args and _generated_file(args[0]):
            self.out.append(inv.unknown(f"{name} of commands generated at run time"))
            return
        self.out.append(inv.command(words))
        if inv.stdin:
            self.nested(inv.stdin, inv, name)

    def script(self, args: Sequence[Word], inv: _Invocation, runner: str) -> None:
        """Words `runner` runs as a script: bash itself for `eval` and `trap`; any other runner (`watch`, `su -c`,
        `ssh`, `parallel`, ...) hands it to `sh -c` or a shell of its own, which may be dash (`otherwise_read`)."""
        if any(a is None for a in args):
            self.out.append(inv.unknown(f"{runner} of text only known at run time"))
            return
        text = " ".join(a for a in args if a is not None)
        if runner in ("eval", "trap"):
            self.nested(text, inv, runner)
        else:
            self.shell_script("sh", text, inv, runner)

    def nested(self, script: str, inv: _Invocation, runner: str) -> None:
        inner = _Walker(script, depth=self.depth + 1, via=(*inv.via, runner))
        for part in inner.run():
            self.out.append(
                replace(
                    part,
                    writes=(*part.writes, *inv.writes),
                    assigns=(*part.assigns, *inv.assigns),
                    opens=(*part.opens, *inv.opens),
                )
            )

    def shell(self, name: str, words: list[Word], inv: _Invocation) -> None:
        """`bash [opts] -c SCRIPT`, `bash <<EOF`, or `bash file` (a file's content is not ours to see)."""
        has_c = reads_stdin = False
        index = 1
        while index < len(words):
            word = words[index]
            if word is None:
                break
            if word in ("-", "--"):
                index += 1
                break
            if word in _SHELL_START_UP_OPTIONS or word.split("=", 1)[0] in _SHELL_START_UP_OPTIONS:
                self.out.append(inv.unknown(f"{name} {word} runs a start-up file first"))
                return
            if word.startswith("--"):
                if word not in _SHELL_LONG_FLAGS:
                    self.out.append(inv.unknown(f"{name}: an option it does not know ({word})"))
                    return
                index += 1
                continue
            if len(word) > 1 and word[0] in "-+":
                letters = word[1:]
                if "i" in letters:
                    self.out.append(inv.unknown(f"{name} -i reads start-up files and prompts as code"))
                    return
                if _keyword_mode(words[index:]):
                    self.out.append(inv.unknown(f"{name}: keyword mode makes a NAME=value word set a variable"))
                    return
                has_c = has_c or "c" in letters
                reads_stdin = reads_stdin or "s" in letters
                index += 1 + sum(1 for letter in letters if letter in _SHELL_VALUE_OPTIONS)
                continue
            break
        rest = words[index:]
        if has_c:
            if not rest:
                self.out.append(inv.unknown(f"{name} -c without a script"))
            elif rest[0] is None:
                self.out.append(inv.unknown(f"{name} -c of a script only known at run time"))
            elif name in _FOREIGN_SHELLS:
                self.out.append(inv.unknown(f"{name} -c of a script that is not bash"))
            else:
                self.shell_script(name, rest[0], inv, f"{name} -c")
        elif rest and not reads_stdin:
            if _generated_file(rest[0]):
                self.out.append(inv.unknown(f"{name} of a script generated at run time"))
            else:
                self.out.append(inv.command(words))
                if inv.stdin:  # the file may be a link to standard input
                    self.shell_script(name, inv.stdin, inv, name)
        elif inv.stdin is not None and name not in _FOREIGN_SHELLS:
            self.shell_script(name, inv.stdin, inv, name)
        else:
            self.out.append(inv.unknown(f"{name} reads its commands from standard input"))

    def shell_script(self, name: str, script: str, inv: _Invocation, runner: str) -> None:
        """A script `name` runs, read as bash unless that shell may read it otherwise (`otherwise_read`)."""
        why = otherwise_read(name, script)
        if why is not None:
            self.out.append(inv.unknown(why))
        else:
            self.nested(script, inv, runner)


@dataclass(frozen=True)
class _Invocation:
    """What a command's words inherit from where they stand."""

    text: str
    assigns: tuple[str, ...]
    writes: tuple[str, ...]
    stdin: str | None
    via: tuple[str, ...]
    open_tail: bool = False
    placeholder: str | None = None
    opens: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()

    def command(self, words: Sequence[Word]) -> SimpleCommand:
        if self.placeholder is not None:
            words = [None if w is None or self.placeholder in w else w for w in words]
        if words and words[0] is None:
            return self.unknown("its command name is only known at run time")
        return SimpleCommand(
            tuple(words),
            self.text,
            None,
            self.writes,
            self.assigns,
            self.via,
            self.open_tail,
            opens=self.opens,
            unread=self.unread,
        )

    def unknown(self, reason: str) -> SimpleCommand:
        return SimpleCommand((), self.text, reason, self.writes, self.assigns, self.via, opens=self.opens)


@dataclass(frozen=True)
class _Options:
    """How a wrapper's options are read: which take a value, which are plain flags."""

    valued: str = ""
    flags: str = ""
    long_valued: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()
    """Long options whose value, if any, is attached (`env --ignore-signal[=SIG]`)."""
    optional_valued: str = ""
    """Short options whose value, if any, is attached (`xargs -i{}`)."""
    numeric_flags: bool = False
    """`-10` is an option (nice)."""
    lone_dash: bool = False
    """`-` alone is an option (env: the same as -i)."""
    clears: frozenset[str] = frozenset()
    """Options that start the command with an empty environment (`env -i`, `exec -c`)."""
    unsets: frozenset[str] = frozenset()
    """Options whose value names a variable the command starts without (`env -u NAME`)."""
    positionals: int = 0
    """Operands before the command (the duration of `timeout`)."""
    separate_command: bool = False
    """The wrapper is a command in its own right (sudo, xargs): an allow rule must cover it too."""

    def split(self, args: Sequence[Word]) -> tuple[list[Word], list[Word], dict[str, str]] | str:
        """(the wrapper's own words, the command it runs, options seen with their values) or why not."""
        seen: dict[str, str] = {}
        index = 0
        while index < len(args):
            word = args[index]
            if word is None:
                return "a wrapper option only known at run time"
            if word == "--":
                index += 1
                break
            if word.startswith("--") and len(word) > 2:
                key, eq, value = word[2:].partition("=")
                if key in self.long_valued:
                    if not eq:
                        index += 1
                        if index >= len(args) or args[index] is None:
                            return f"the value of --{key} is only known at run time"
                        value = args[index] or ""
                    seen["--" + key] = value
                elif (key in self.long_flags and not eq) or key in self.long_optional:
                    seen["--" + key] = value
                else:
                    return f"an option it does not know ({word})"
                index += 1
                continue
            if self.numeric_flags and re.fullmatch(r"-\d+", word):
                index += 1
                continue
            if self.lone_dash and word == "-":
                seen["-"] = ""
                index += 1
                continue
            if len(word) > 1 and word[0] == "-":
                position = 1
                while position < len(word):
                    letter = word[position]
                    if letter in self.valued:
                        value = word[position + 1 :]
                        if not value:
                            index += 1
                            if index >= len(args) or args[index] is None:
                                return f"the value of -{letter} is only known at run time"
                            value = args[index] or ""
                        seen["-" + letter] = value
                        break
                    if letter in self.optional_valued:
                        seen["-" + letter] = word[position + 1 :]
                        break
                    if letter not in self.flags:
                        return f"an option it does not know (-{letter})"
                    seen["-" + letter] = ""
                    position += 1
                index += 1
                continue
            break
        end = index + self.positionals
        if end > len(args) or any(a is None for a in args[index:end]):
            return "an operand only known at run time" if end <= len(args) else "too few operands"
        return list(args[:end]), list(args[end:]), seen


_Handler = Callable[[_Walker, list[Word], _Invocation], None]


def _keyword_mode(args: Sequence[Word]) -> bool:
    """Whether options `args` (of `set`, `shopt -o` or a shell) may turn on keyword mode (`-k`, `-o keyword`),
    in which every `NAME=value` word of a later command, not only those before its name, is a variable of its
    environment: after `set -k`, `bash -c true BASH_ENV=/dev/stdin <<< 'rm x'` ran rm (bash 5.2), and a
    variable that carries code must be seen wherever it is set. Read up to the first word that is no option;
    a word only known at run time may be one."""
    for at, word in enumerate(args):
        if word is None:
            return True
        if word in ("-", "--") or len(word) < 2 or word[0] not in "-+":
            return False
        if word[0] == "-" and "k" in word[1:]:
            return True
        if "o" in word[1:] and any(value is None or value == "keyword" for value in args[at + 1 : at + 3]):
            return True
    return False


_CHDIR_OPTIONS = frozenset({"-C", "--chdir"})
"""Wrapper options that run the command in another directory (`env -C dir`, `env --chdir=dir`)."""


def _wrapper(options: _Options, *, takes_env: bool = False, default: str | None = None) -> _Handler:
    """A command that runs the rest of its words as another command (`nice -n 5 make`).

    `takes_env`: `NAME=value` words before the command are set in its environment (any word
    with `=`: `env` puts `a%=b` and `BASH_FUNC_f%%=() {..}` there too, which bash reads as code).
    """

    def handle(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
        assert words[0] is not None
        name = command_name(words[0])
        split = options.split(words[1:])
        if isinstance(split, str):
            walker.out.append(inv.unknown(f"{name}: {split}"))
            return
        own, rest, seen = split
        if "-S" in seen or "--split-string" in seen:
            walker.out.append(inv.unknown(f"{name} -S splits a string into a command"))
            return
        if name == "time" and ("-o" in seen or "--output" in seen):
            inv = replace(inv, writes=(*inv.writes, seen.get("-o") or seen["--output"]))
        if name in ("strace", "ltrace") and "-o" in seen:
            inv = replace(inv, writes=(*inv.writes, seen["-o"]))
        # Removing a variable changes what runs as much as setting one: the runtime's own settings
        # (`_shell.SHELL_SETTINGS`: safe.bareRepository=explicit, PAGER=cat) go with it, and
        # `env -i git --work-tree=.. status` obeys a directory of plain files the model wrote.
        assigns = [*inv.assigns, *("*" for _ in options.clears & seen.keys())]
        assigns += [seen[option] for option in sorted(options.unsets & seen.keys())]
        while takes_env and rest and (rest[0] is None or "=" in rest[0]):
            if rest[0] is None:
                walker.out.append(inv.unknown(f"{name}: an argument only known at run time"))
                return
            variable = rest[0].split("=", 1)[0]
            if code_variable(variable):
                walker.out.append(inv.unknown(f"{name} passes {variable!r} in the environment, which carries code"))
            assigns.append(variable)
            own.append(rest.pop(0))
        if name == "xargs":
            inv = replace(inv, open_tail=True, stdin=None, placeholder=seen.get("-I") or seen.get("-i") or None)
            if "-i" in seen and not seen["-i"]:
                inv = replace(inv, placeholder="{}")
        if options.separate_command or not rest or _CHDIR_OPTIONS & seen.keys():
            # a wrapper that moves the command to another directory (`env -C dir`) is a part of its
            # own, so its words are judged too: after it, a plain file name may be a protected path
            walker.out.append(replace(inv, open_tail=False, placeholder=None).command([words[0], *own]))
        if not rest:
            if default is not None:
                walker.out.append(replace(inv, via=(*inv.via, name)).command([default]))
            return
        walker.resolve(rest, replace(inv, assigns=tuple(assigns), via=(*inv.via, name)))

    return handle


def _login_shell(script_first: bool = False) -> _Handler:
    """`su`/`runuser`/`script`/`sg`: a shell runs the `-c` (`--command`) script given anywhere in
    the words (`sg group 'cmd'` takes it after the group); without one the shell reads standard
    input, which is unknown. Its other words stay on its own part, where they are judged as any
    command's are (`script -c true .envrc` writes its typescript to `.envrc`)."""

    def handle(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
        name = command_name(words[0] or "")
        script: Word = None
        taken: tuple[int, ...] = ()
        args = words[1:]
        for at, word in enumerate(args):
            if word in ("-c", "--command"):
                script, taken = (args[at + 1] if at + 1 < len(args) else None), (at, at + 1)
                break
            if word is not None and word.startswith("--command="):
                script, taken = word.split("=", 1)[1], (at,)
                break
        if not taken and script_first and len(args) >= 2:
            script, taken = args[1], (1,)
        if not taken:
            walker.out.append(inv.unknown(f"{name} starts a shell that reads its commands from standard input"))
            return
        own = [words[0], *(word for at, word in enumerate(args) if at not in taken)]
        walker.out.append(replace(inv, open_tail=False).command(own))
        walker.script([script], inv, f"{name} -c")

    return handle


def _flock(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`flock [opts] FILE CMD ARGS` or `flock [opts] FILE -c SCRIPT`."""
    split = _Options(
        flags="sxunoFe",
        valued="wEc",
        long_valued=frozenset({"timeout", "conflict-exit-code", "command"}),
        long_flags=frozenset({"shared", "exclusive", "unlock", "nonblock", "close", "no-fork", "verbose"}),
        positionals=1,
    ).split(words[1:])
    if isinstance(split, str):
        walker.out.append(inv.unknown(f"flock: {split}"))
        return
    own, rest, seen = split
    walker.out.append(replace(inv, open_tail=False).command([words[0], *own]))
    script = seen.get("-c", seen.get("--command"))
    if script is None and rest[:1] in (["-c"], ["--command"]):
        script = rest[1] if len(rest) > 1 else None
        if script is None:
            walker.out.append(inv.unknown("flock -c without a script"))
            return
        rest = []
    if script is not None:
        walker.shell_script("sh", script, inv, "flock -c")  # `$SHELL -c`, or `/bin/sh -c` without one
    elif rest:
        walker.resolve(rest, replace(inv, via=(*inv.via, "flock")))


_SETARCH_OPTIONS = _Options(flags="vRFZLXBIST3", long_flags=frozenset({"uname-2.6", "verbose"}))


def _setarch(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`setarch ARCH [opts] cmd args`: the architecture comes before the options."""
    if len(words) < 2 or words[1] is None:
        walker.out.append(inv.unknown("setarch: an architecture only known at run time"))
        return
    _wrapper(_SETARCH_OPTIONS)(walker, [words[0], *words[2:]], inv)


def _pee(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`pee 'cmd1' 'cmd2'` (moreutils) runs each argument as a `sh -c` script, its standard input copied to each."""
    split = _Options(
        long_flags=frozenset({"ignore-sigpipe", "no-ignore-sigpipe", "ignore-write-errors", "no-ignore-write-errors"})
    ).split(words[1:])
    if isinstance(split, str):
        walker.out.append(inv.unknown(f"pee: {split}"))
        return
    walker.out.append(inv.command(words[:1] + split[0]))
    for script in split[1]:
        walker.script([script], replace(inv, stdin=None), "pee")


def _runs_unread(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """A program that runs a command of its words by options the reader does not follow (`sem` runs them as a shell
    script, `bwrap` and `proot` after their own many options): unknown, so a deny rule naming that command is not
    passed by it."""
    walker.out.append(inv.unknown(f"{command_name(words[0] or '')} runs a command its options hide from the reader"))


def _cover_since(walker: _Walker, start: int) -> None:
    """The parts the walk added since `start` are a command a runner starts (`SimpleCommand.covered`)."""
    walker.out[start:] = [replace(part, covered=True) for part in walker.out[start:]]


def _run_covered(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """The command a runner starts, `covered` (`_cover_since`). One whose first word is an option (`mise exec -- --
    rm x`, `uv run -- -- rm x`) is unknown: the runner's own parser may take that word for its `--` or an option's
    value and run what follows, where the reader saw a command named `--`."""
    start = len(walker.out)
    if words and words[0] is not None and words[0].startswith("-"):
        reason = f"{' '.join(inv.via[-1:])} runs {words[0]!r}, which its parser may read as an option"
        walker.out.append(inv.unknown(reason))
    else:
        walker.resolve(words, inv)
    _cover_since(walker, start)


def _runner(options: _Options, *verbs: str, scoped: bool = False, commands: frozenset[str] = frozenset()) -> _Handler:
    """A package or environment manager that runs a command (`uv run rm x`, `npx rm x`, `bundle exec rm x`) after
    its `verbs` (none for `npx`) and the `options` it reads (its own and the verb's, taken in either place).

    Its own part keeps every word, as before, so an allow rule naming it (`uv run pytest`) still covers it; the
    command it runs is a part too, `covered` (`SimpleCommand.covered`), so a deny rule for `rm` holds through it. An
    option it does not know, one that runs a script of its own (`npx -c`), or a command only known at run time makes
    that part unknown: a deny or ask rule that may match is then asked. `scoped`: the command may be written
    `ENV:cmd` (`hatch run test:rm x`), which is unknown too. `commands`: the runner's own commands, when any other
    first word is a command it runs (pnpm runs `pnpm shred x` as `pnpm exec shred x`, or a script of that name)."""
    leading = replace(options, positionals=0)
    wanted = [tuple(verb.split()) for verb in verbs]

    def handle(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
        walker.out.append(inv.command(words))
        name = command_name(words[0] or "")
        args = words[1:]
        verb: tuple[str, ...] = ()
        if wanted or commands:
            split = leading.split(args)
            if isinstance(split, str):
                if commands or any(word in args for verb in wanted for word in verb[:1]):
                    walker.out.append(replace(inv.unknown(f"{name}: {split}"), covered=True))
                return
            verb = next((verb for verb in wanted if tuple(split[1][: len(verb)]) == verb), ())
            if not verb and commands and split[1] and split[1][0] not in commands:
                _run_covered(walker, split[1], replace(inv, via=(*inv.via, name)))
                return
            if not verb:
                return  # not a verb that runs a command (`uv pip install`, `npm test`)
            args = split[1][len(verb) :]
        label = " ".join([name, *verb])
        covered = replace(inv, via=(*inv.via, label))
        split = options.split(args)
        start = len(walker.out)
        if isinstance(split, str):
            walker.out.append(covered.unknown(f"{label}: {split}"))
        elif split[1] and scoped and split[1][0] is not None and ":" in split[1][0]:
            walker.out.append(covered.unknown(f"{label} runs {split[1][0]!r} in an environment the reader cannot see"))
        elif split[1]:
            rest = split[1][1:] if options.positionals and split[1][0] == "--" else split[1]
            _run_covered(walker, rest, covered)
        _cover_since(walker, start)

    return handle


def _runs_own_program(reason: str) -> _Handler:
    """A runner whose program is not a word of the command (`nix run nixpkgs#hello`): its own part as before, and the
    program it runs unknown, so a deny or ask rule that may match it is asked."""

    def handle(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
        walker.out.append(inv.command(words))
        walker.out.append(replace(inv.unknown(reason), covered=True))

    return handle


_COREPACK_COMMANDS = frozenset({"enable", "disable", "prepare", "install", "pack", "use", "up", "cache", "hydrate"})


def _corepack(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`corepack pnpm@9 exec rm x` runs the package manager its first word names, at a version (`@9`) the reader
    drops to know it (`pnpm`, `npx`, `yarn`: runners of their own); its own commands (`corepack enable`) run none."""
    walker.out.append(inv.command(words))
    first = words[1] if len(words) > 1 else ""
    if first is None or (first and first not in _COREPACK_COMMANDS):
        named = None if first is None else first.split("@", 1)[0]
        _run_covered(walker, [named, *words[2:]], replace(inv, via=(*inv.via, "corepack")))


_DOTENV_OPTIONS = _Options(
    valued="efvpq",
    optional_valued="c",
    flags="o",
    long_valued=frozenset({"file", "quote", "export"}),
    long_flags=frozenset({"debug", "no-expand", "override", "no-override", "quiet"}),
)
"""dotenv-cli's (`-e FILE`, `-v VAR=x`, `-p VAR`, `-c [ENV]`, `-o`) and python-dotenv's (`-f FILE`, `-q MODE`)."""


def _dotenv(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """Two programs are named `dotenv`: dotenv-cli runs the command after its options (`dotenv -e .env -- rm x`),
    python-dotenv the one after its `run` (`dotenv -f .env run rm x`). Both readings are judged: a deny rule for
    `rm` holds through either."""
    walker.out.append(inv.command(words))
    covered = replace(inv, via=(*inv.via, "dotenv"))
    split = _DOTENV_OPTIONS.split(words[1:])
    if isinstance(split, str):
        start = len(walker.out)
        walker.out.append(covered.unknown(f"dotenv: {split}"))
        _cover_since(walker, start)
        return
    rest = split[1]
    if rest:
        _run_covered(walker, rest, covered)
    if rest[:1] == ["run"]:
        after = rest[1:]
        while after[:1] in (["--override"], ["--no-override"]):
            after = after[1:]
        if after:
            _run_covered(walker, after, covered)


def _scl(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """Software Collections: `scl enable COLLECTION... 'SCRIPT'` runs its last word as a shell script, `scl
    COLLECTION... -- cmd args` the command after `--`; its listings (`scl -l`) run none."""
    if "--" in words:
        _SCL_COMMAND(walker, words, inv)
        return
    walker.out.append(inv.command(words))
    if None in words[1:]:
        walker.out.append(replace(inv.unknown("scl: an argument only known at run time"), covered=True))
    elif words[1:2] in (["enable"], ["run"]) and len(words) > 3:
        start = len(walker.out)
        walker.script(words[-1:], inv, "scl enable")
        _cover_since(walker, start)


_SSH_OPTIONS = _Options(flags="46AaCfGgKkMNnqsTtVvXxYy", valued="BbcDEeFIiJLlmOoPpQRSWw", positionals=1)


def _ssh(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """ssh's words after its host are a shell script the host's shell runs (`ssh localhost rm x` removes x here): a
    part of its own, covered (`_runner`); an option it does not know makes it unknown. (Its options that run a
    command here, `-o ProxyCommand=CMD`, `-F FILE`, are `protected_paths.toml`'s.)"""
    walker.out.append(inv.command(words))
    covered = replace(inv, via=(*inv.via, "ssh"))
    start = len(walker.out)
    split = _SSH_OPTIONS.split(words[1:])
    if isinstance(split, str):
        walker.out.append(covered.unknown(f"ssh: {split}"))
    elif split[1]:
        walker.script(split[1], covered, "ssh")
    _cover_since(walker, start)


def _command_after(markers: frozenset[str], *, script: bool = False) -> _Handler:
    """A runner that runs what follows one of its `markers` (`nix shell PKGS -c rm x`, `mise exec node -- rm x`), or
    with `script` the shell script that is the marker's value (`nix-shell --run 'rm x'`): its own part as before,
    that command `covered` (`_runner`). Without a marker it runs no command of the line's (an interactive shell)."""

    def handle(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
        walker.out.append(inv.command(words))
        name = command_name(words[0] or "")
        at = next((at for at, word in enumerate(words) if word in markers), None)
        if at is None:
            marked = [word for word in words if word is not None and word.split("=", 1)[0] in markers]
            if marked:
                at, words = 0, ["", marked[0].split("=", 1)[1]]
        start = len(walker.out)
        covered = replace(inv, via=(*inv.via, name))
        if at is None:
            if any(word is None for word in words):
                walker.out.append(covered.unknown(f"{name}: an argument only known at run time"))
        elif script:
            walker.script(words[at + 1 : at + 2], inv, name)
        elif words[at + 1 :]:
            _run_covered(walker, words[at + 1 :], covered)
        _cover_since(walker, start)

    return handle


_NPX_OPTIONS = _Options(
    flags="yqs",
    valued="pw",
    long_valued=frozenset({"package", "workspace", "prefix", "loglevel"}),
    long_flags=frozenset({"yes", "no", "workspaces", "include-workspace-root", "quiet", "silent"}),
)
_PNPM_OPTIONS = _Options(
    flags="rswvh",
    valued="FC",
    long_valued=frozenset({"filter", "dir", "resume-from", "reporter", "package", "workspace-concurrency"}),
    long_flags=frozenset(
        {"recursive", "parallel", "no-bail", "report-summary", "silent", "workspace-root", "version", "help"}
    ),
)
_PNPM_COMMANDS = frozenset(
    {
        *("add", "install", "i", "update", "up", "upgrade", "remove", "rm", "uninstall", "un", "link", "ln", "unlink"),
        *("import", "rebuild", "rb", "prune", "fetch", "install-test", "it", "patch", "patch-commit", "patch-remove"),
        *("audit", "list", "ls", "ll", "la", "outdated", "why", "licenses", "run", "run-script", "test", "t", "tst"),
        *("create", "start", "publish", "pack", "recursive", "m", "multi", "server", "store", "root", "bin", "setup"),
        *("init", "deploy", "doctor", "config", "c", "get", "set", "env", "cat-file", "cat-index", "find-hash"),
        *("self-update", "dedupe", "approve-builds", "ignored-builds", "help", "completion", "install-completion"),
        *("access", "adduser", "bugs", "deprecate", "dist-tag", "docs", "edit", "info", "login", "logout", "owner"),
        *("ping", "prefix", "profile", "pkg", "repo", "s", "search", "set-script", "star", "stars", "team", "token"),
        *("unpublish", "unstar", "version", "view", "whoami", "xmas", "sbom", "catalog", "cache", "stage"),
    }
)
"""pnpm's own commands (and those it hands to npm): any other first word it runs as a command (`pnpm shred x`)."""
_BUNX_OPTIONS = _Options(valued="p", long_valued=frozenset({"package"}), long_flags=frozenset({"bun", "no-install"}))
_CONDA_OPTIONS = _Options(
    flags="v",
    valued="npr",
    long_valued=frozenset({"name", "prefix", "root-prefix"}),
    long_flags=frozenset({"no-capture-output", "live-stream", "debug-wrapper-scripts", "dev", "verbose"}),
)
_UV_OPTIONS = _Options(
    flags="qvnU",
    valued="p",
    long_valued=frozenset(
        {
            *("with", "with-editable", "with-requirements", "extra", "package", "python", "group", "only-group"),
            *("no-group", "index", "default-index", "index-url", "extra-index-url", "find-links", "directory"),
            *("project", "cache-dir", "color", "config-file", "python-preference", "resolution", "prerelease"),
            *("exclude-newer", "link-mode", "from", "index-strategy", "keyring-provider", "upgrade-package"),
        }
    ),
    long_flags=frozenset(
        {
            *("all-extras", "no-dev", "dev", "all-groups", "no-default-groups", "isolated", "active", "no-sync"),
            *("locked", "frozen", "offline", "no-project", "no-editable", "exact", "inexact", "upgrade", "reinstall"),
            *("no-cache", "quiet", "verbose", "native-tls", "no-progress", "no-config", "no-python-downloads"),
            *("managed-python", "no-managed-python", "compile-bytecode", "refresh", "all-packages", "only-dev"),
            *("no-install-project", "no-install-workspace", "no-env-file"),
        }
    ),
)
_PYTHON_PROJECT_OPTIONS = _Options(
    flags="qvn",
    valued="CPpe",
    long_valued=frozenset(
        {"directory", "project", "python", "venv", "skip", "pyproject", "spec", "pip-args", "environment"}
    ),
    long_flags=frozenset({"quiet", "verbose", "no-interaction", "ansi", "no-ansi", "no-plugins", "no-cache"}),
)
_PIXI_OPTIONS = _Options(
    flags="qv",
    valued="es",
    long_valued=frozenset({"environment", "manifest-path", "spec"}),
    long_flags=frozenset({"frozen", "locked", "no-install", "clean-env", "force-activate", "revalidate"}),
)
_DEVBOX_OPTIONS = _Options(flags="q", valued="ce", long_valued=frozenset({"config", "env", "env-file"}))
_BUN_X = _runner(_BUNX_OPTIONS, "x")
_BUN_EXEC = _runs_own_program("bun exec runs its script in Bun's own shell, which the reader does not follow")


def _bun(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`bun x cmd` runs cmd (`_runner`); `bun exec SCRIPT` a script in Bun's shell: unknown to deny and ask rules."""
    (_BUN_EXEC if words[1:2] == ["exec"] else _BUN_X)(walker, words, inv)


_VERSION_MANAGER_EXEC = _runner(_Options(), "exec")
"""`asdf exec`, `pyenv exec`, `rbenv exec`, ...: the command found in the tool version's directory."""
_MISE_EXEC = _command_after(frozenset({"--"}))
_MISE_SCRIPT = _command_after(frozenset({"-c", "--command"}), script=True)


def _dashed(verbs: frozenset[str], scripts: bool) -> _Handler:
    """A runner whose verb (one of `verbs`, its first or second word) runs the command after `--` (`mise exec|x
    [TOOL@VERSION...] -- cmd args`, and rtx, its former name; `dotenvx run [-f FILE] -- cmd args`), or with `scripts`
    the `-c SCRIPT` it is given; without either it starts a shell, or reads words the reader does not (unknown when
    some follow)."""

    def handle(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
        verb = next((at for at, word in enumerate(words[1:3], 1) if word in verbs), None)
        if verb is None:
            walker.out.append(inv.command(words))
            return
        if "--" in words:
            _MISE_EXEC(walker, words, inv)
        elif scripts and any(w in ("-c", "--command") or (w or "").startswith("--command=") for w in words):
            _MISE_SCRIPT(walker, words, inv)
        else:
            walker.out.append(inv.command(words))
            if words[verb + 1 :]:
                reason = f"{command_name(words[0] or '')} {words[verb]} without --"
                walker.out.append(replace(inv.unknown(reason), covered=True))

    return handle


_MISE = _dashed(frozenset({"exec", "x"}), scripts=True)


_SCL_COMMAND = _command_after(frozenset({"--"}))
_NIX_SHELL = _command_after(frozenset({"-c", "--command"}))
_NIX_RUN = _runs_own_program("nix run runs the program of a package, which the reader cannot see")


def _nix(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`nix shell|develop ... -c cmd args` runs cmd; `nix run PACKAGE` the package's own program. Its options may take
    one or two values (`--option name value`), so the verb is any of its words: what may run a command is judged."""
    if {"shell", "develop"} & {*words} and {"-c", "--command"} & {*words}:
        _NIX_SHELL(walker, words, inv)
    elif "run" in words or None in words[1:]:
        _NIX_RUN(walker, words, inv)
    else:
        walker.out.append(inv.command(words))


def _command_builtin(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`command [-p] cmd` runs cmd; `command -v/-V cmd` only describes it."""
    args = words[1:]
    while args and args[0] == "-p":
        args = args[1:]
    if args and args[0] is not None and args[0].startswith("-") and args[0] != "--":
        if not re.fullmatch(r"-p?[vV]p?", args[0]):
            walker.out.append(inv.unknown(f"command: an option it does not know ({args[0]})"))
            return
        walker.out.append(inv.command(words))
        return
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        walker.out.append(inv.command(words))
        return
    walker.resolve(args, replace(inv, via=(*inv.via, "command")))


_JOBS_OPTIONS = _Options(flags="lpnxrs")
"""`jobs`' options as its getopt reads them: `-x` in a cluster (`-xl`) or before more options and a `--`
(`jobs -x -r -- cmd`) runs the command all the same (bash 5.2)."""


def _jobs(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`jobs -x cmd args` runs cmd (job specs replaced by process group ids)."""
    split = _JOBS_OPTIONS.split(words[1:])
    if isinstance(split, str):
        walker.out.append(inv.unknown(f"jobs: {split}"))
        return
    own, rest, seen = split
    if "-x" in seen:
        walker.out.append(inv.command(words[: len(own) + 1]))
        walker.resolve(rest, replace(inv, via=(*inv.via, "jobs -x")))
        return
    walker.out.append(inv.command(words))


def _watch(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`watch [opts] cmd args` runs `sh -c "cmd args"` again and again."""
    split = _Options(valued="nqg", flags="bcdeptwx").split(words[1:])
    if isinstance(split, str):
        walker.out.append(inv.unknown(f"watch: {split}"))
        return
    walker.out.append(inv.command(words[:1] + split[0]))
    walker.script(split[1], inv, "watch")


def _coproc(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`coproc cmd args` or `coproc NAME { compound; }` (the NAME only before a compound command)."""
    args = words[1:]
    if len(args) > 1 and args[1] in _RESERVED:
        args = args[1:]
    walker.resolve(args, replace(inv, via=(*inv.via, "coproc")))


def _find(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`find ... -exec cmd {} ;` runs cmd per file: find itself, then each -exec command."""
    own: list[Word] = []
    runs: list[tuple[list[Word], str]] = []
    writes = list(inv.writes)
    index = 0
    while index < len(words):
        word = words[index]
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(words) and words[end] not in (";", "+"):
                end += 1
            # `-execdir` runs the command inside the directory of each file found
            runs.append((words[index + 1 : end], "find -execdir" if word.endswith("dir") else "find"))
            index = end + 1
            continue
        if word in ("-fprint", "-fprint0", "-fls", "-fprintf") and index + 1 < len(words):
            writes.append(words[index + 1] or "?")
        own.append(word)
        index += 1
    walker.out.append(replace(inv, writes=tuple(writes)).command(own))
    for run, runner in runs:
        walker.resolve(run, replace(inv, via=(*inv.via, runner), placeholder="{}", stdin=None))


def _parallel(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`parallel CMD ::: args` runs CMD per argument; without `:::` the commands come from stdin, and
    without CMD the arguments are the commands."""
    args = words[1:]
    if ":::" not in args or not args or args[0] is None or args[0].startswith("-"):
        walker.out.append(inv.unknown("parallel runs commands only known at run time"))
        return
    if not any(word and word.strip() for word in args[: args.index(":::")]):
        # `parallel ::: 'rm x'`: with no command, each argument is a command line it runs
        walker.out.append(inv.unknown("parallel without a command runs its arguments as commands"))
        return
    # its own part keeps every word (the `:::` arguments are judged as any argument is), and each
    # command it runs gets them appended at run time: an open tail, as under xargs
    walker.out.append(inv.command(words))
    start = len(walker.out)
    walker.script(args[: args.index(":::")], replace(inv, placeholder="{}"), "parallel")
    walker.out[start:] = [replace(part, open_tail=True) for part in walker.out[start:]]


def _name_reason(word: Word) -> str | None:
    """Why a variable NAME a builtin sets or tests (`read NAME`, `printf -v NAME`, `-v NAME`) is
    not known to be harmless: made at run time, an evaluated index, or a variable carrying code."""
    if word is None:
        return "a variable name only known at run time"
    base, bracket, index = word.partition("[")
    if bracket and not re.fullmatch(r"(?:[0-9]+|[@*])\]", index):
        return f"the array index in {word!r} is evaluated, which may run a command"
    if not _NAME.fullmatch(base):
        return f"{word!r} is not a plain variable name"
    if code_variable(base):
        return f"it sets {base}, which carries code into what runs"
    return None


def _index_reason(word: Word) -> str | None:
    """Why testing a variable NAME (`-v NAME`) may run code: an index only known at run time or
    evaluated as arithmetic. (Testing sets nothing, so a variable that carries code is fine.)"""
    if word is None:
        return "a variable name only known at run time"
    _, bracket, index = word.partition("[")
    if bracket and not re.fullmatch(r"(?:[0-9]+|[@*])\]", index):
        return f"the array index in {word!r} is evaluated, which may run a command"
    return None


def _names_set(walker: _Walker, words: list[Word], inv: _Invocation, names: Sequence[Word]) -> None:
    """A builtin that sets the variables `names`: each must be plain and carry no code."""
    for variable in names:
        reason = walker.name_reason(variable)
        if reason is not None:
            walker.out.append(inv.unknown(f"{command_name(words[0] or '')}: {reason}"))
            return
    walker.out.append(replace(inv, assigns=(*inv.assigns, *(n or "" for n in names))).command(words))


def _read(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    split = _Options(valued="adinNptu", flags="ers").split(words[1:])
    if isinstance(split, str):
        walker.out.append(inv.unknown(f"read: {split}"))
        return
    _own, rest, seen = split
    names: list[Word] = [*rest]
    if "-a" in seen:
        names.append(seen["-a"])
    _names_set(walker, words, inv, names or ["REPLY"])


def _mapfile(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    split = _Options(valued="dnOsuCc", flags="t").split(words[1:])
    if isinstance(split, str):
        walker.out.append(inv.unknown(f"mapfile: {split}"))
        return
    if "-C" in split[2]:
        walker.out.append(inv.unknown("mapfile -C runs a callback only known at run time"))
        return
    _names_set(walker, words, inv, split[1][:1] or ["MAPFILE"])


_PRINTF_OPTIONS = _Options(valued="v")


def _printf(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`printf -v NAME` sets NAME, each `-v` of the options (`printf -v a -v 'b[$(cmd)]' x`: bash 5.2 set the
    last, and ran cmd evaluating its index, when only the first was read)."""
    split = _PRINTF_OPTIONS.split(words[1:])
    if isinstance(split, str):
        walker.out.append(inv.unknown(f"printf: {split}"))
        return
    own = split[0]
    names = [own[at + 1] if word == "-v" else word[2:] for at, word in enumerate(own) if word and word.startswith("-v")]
    if names:
        _names_set(walker, words, inv, names)
    else:
        walker.out.append(inv.command(words))


def _getopts(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    _names_set(walker, words, inv, words[2:3] or [None])


_WAIT_OPTIONS = _Options(valued="p", flags="fn")
"""`wait`'s options as its getopt reads them: `-p NAME` in a cluster (`wait -np 'a[$(cmd)]'`) sets NAME too,
and its index is evaluated (bash 5.2 ran cmd)."""


def _wait(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    split = _WAIT_OPTIONS.split(words[1:])
    if isinstance(split, str):
        walker.out.append(inv.unknown(f"wait: {split}"))
    elif "-p" in split[2]:
        _names_set(walker, words, inv, [split[2]["-p"]])
    else:
        walker.out.append(inv.command(words))


def _let(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    if any(w is None or not _LITERAL_ARITHMETIC.fullmatch(w) for w in words[1:]):
        walker.out.append(inv.unknown("let evaluates names as arithmetic, which may run a command"))
        return
    walker.out.append(inv.command(words))


def _test(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    args = words[1:]
    for at, word in enumerate(args):
        if word == "-v":
            reason = _index_reason(args[at + 1] if at + 1 < len(args) else None)
            if reason is not None:
                walker.out.append(inv.unknown(f"{command_name(words[0] or '')} -v: {reason}"))
                return
    walker.out.append(inv.command(words))


def _declare_words(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`declare`/`export`/... reached as plain words (`builtin export X=1`, `command declare ..`)."""
    names: list[str] = []
    for word in words[1:]:
        if word is None:
            walker.out.append(inv.unknown("a declaration of a name only known at run time"))
            return
        if word.startswith(("-", "+")):
            if "n" in word[1:] or "i" in word[1:]:
                walker.out.append(inv.unknown(f"{words[0]} {word} evaluates names or values"))
                return
            continue
        name = word.partition("=")[0].removesuffix("+")
        reason = _name_reason(name)
        if reason is not None:
            walker.out.append(inv.unknown(reason))
            return
        names.append(name.partition("[")[0])
    walker.out.append(replace(inv, assigns=(*inv.assigns, *names)).command(words))


def _runs_code(reason: str) -> _Handler:
    def handle(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
        walker.out.append(inv.unknown(reason))

    return handle


def _completion(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`compgen`/`complete -C cmd` or `-F func` run a command to make completions, and `-W list` expands its
    list as bash expands a word: `compgen -W '$(cmd)' x` runs cmd (round 10)."""
    if any(w is None or (w.startswith("-") and any(letter in w for letter in "CFW")) for w in words[1:]):
        walker.out.append(inv.unknown(f"{words[0]} -C/-F/-W runs a command"))
        return
    walker.out.append(inv.command(words))


def _git(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`git log|diff|show|... --output=FILE` writes FILE as `> FILE` would: a rule for `git diff`
    names a reader, and the option must not make it a writer of any file (`--output=src/main.py`).
    Read before `--` (paths after it), and in any spelling git's option parser accepts (`--output F`,
    an abbreviation `--outp=F`); a value only known at run time is `?`, and so is a word only known
    at run time (`git diff $(cat opts)` may be `--output=src/main.py`)."""
    writes = list(inv.writes)
    args = words[1:]
    for index, word in enumerate(args):
        if word == "--":
            break
        if word is None:
            writes.append("?")
            continue
        if not word.startswith("--ou"):
            continue
        option, eq, value = word.partition("=")
        if not "--output".startswith(option):
            continue
        if eq:
            writes.append(value or "?")
        else:
            following = args[index + 1] if index + 1 < len(args) else None
            writes.append(following if following else "?")
    walker.out.append(replace(inv, writes=tuple(writes)).command(words))


_BUILTINS: dict[str, _Handler] = {
    "git": _git,
    "read": _read,
    "mapfile": _mapfile,
    "readarray": _mapfile,
    "printf": _printf,
    "getopts": _getopts,
    "wait": _wait,
    "let": _let,
    "test": _test,
    "[": _test,
    "declare": _declare_words,
    "typeset": _declare_words,
    "local": _declare_words,
    "export": _declare_words,
    "readonly": _declare_words,
    "unset": _declare_words,
    "jobs": _jobs,
    "compgen": _completion,
    "complete": _completion,
    "enable": _runs_code("enable loads builtins from a file or hides them"),
    "bind": _runs_code("bind -x makes keys run commands"),
    "fc": _runs_code("fc runs commands from the history"),
}
"""Builtins that set variables by name, evaluate, or run commands their words do not show; and git,
whose `--output` writes a file as a redirection does."""

_SUDO_OPTIONS = _Options(
    valued="ugCDhprtTUR",
    flags="AbEHikKnPSs",
    long_valued=frozenset({"user", "group", "close-from", "chdir", "prompt", "role", "type", "other-user", "host"}),
    long_flags=frozenset(
        {
            "askpass",
            "background",
            "preserve-env",
            "set-home",
            "login",
            "reset-timestamp",
            "non-interactive",
            "preserve-groups",
            "stdin",
            "shell",
        }
    ),
    long_optional=frozenset({"preserve-env"}),
    separate_command=True,
)

_WRAPPERS: dict[str, _Handler] = {
    "env": _wrapper(
        _Options(
            valued="uC",
            flags="i0v",
            long_valued=frozenset({"unset", "chdir"}),
            long_flags=frozenset({"ignore-environment", "null", "debug", "list-signal-handling"}),
            long_optional=frozenset({"ignore-signal", "default-signal", "block-signal"}),
            lone_dash=True,
            clears=frozenset({"-i", "-", "--ignore-environment"}),
            unsets=frozenset({"-u", "--unset"}),
        ),
        takes_env=True,
    ),
    "command": _command_builtin,
    "builtin": _wrapper(_Options()),
    "exec": _wrapper(_Options(valued="a", flags="cl", clears=frozenset({"-c"}))),
    "nohup": _wrapper(_Options()),
    "nice": _wrapper(_Options(valued="n", long_valued=frozenset({"adjustment"}), numeric_flags=True)),
    "time": _wrapper(
        _Options(
            valued="fo",
            flags="apqv",
            long_valued=frozenset({"format", "output"}),
            long_flags=frozenset({"append", "portability", "verbose", "quiet"}),
        )
    ),
    "timeout": _wrapper(
        _Options(
            valued="sk",
            flags="v",
            long_valued=frozenset({"signal", "kill-after"}),
            long_flags=frozenset({"preserve-status", "foreground", "verbose"}),
            positionals=1,
        )
    ),
    "stdbuf": _wrapper(_Options(valued="ioe", long_valued=frozenset({"input", "output", "error"}))),
    "setsid": _wrapper(_Options(flags="cfw", long_flags=frozenset({"ctty", "fork", "wait"}))),
    "ionice": _wrapper(_Options(valued="cn", flags="t")),
    "chrt": _wrapper(_Options(flags="abdfiorRev", valued="TPD", positionals=1)),
    "taskset": _wrapper(_Options(flags="ac", positionals=1)),
    "nsenter": _wrapper(_Options(separate_command=True)),
    "unshare": _wrapper(_Options(separate_command=True)),
    "setpriv": _wrapper(_Options(separate_command=True)),
    "prlimit": _wrapper(_Options(separate_command=True)),
    "numactl": _wrapper(_Options()),
    "chroot": _wrapper(
        _Options(
            long_valued=frozenset({"userspec", "groups"}),
            long_flags=frozenset({"skip-chdir"}),
            positionals=1,
            separate_command=True,
        )
    ),
    "fakeroot": _wrapper(_Options(separate_command=True)),
    "pkexec": _wrapper(_Options(valued="u", separate_command=True)),
    "catchsegv": _wrapper(_Options()),
    "valgrind": _wrapper(_Options(separate_command=True)),
    "firejail": _wrapper(_Options(separate_command=True)),
    "systemd-run": _wrapper(_Options(separate_command=True)),
    "torsocks": _wrapper(_Options()),
    "proxychains": _wrapper(_Options(flags="q", valued="f")),
    "proxychains4": _wrapper(_Options(flags="q", valued="f")),
    "strace": _wrapper(_Options(valued="oepPsSuUabIXE", flags="cCdDfFhiqrtTvVwxyzZk")),
    "ltrace": _wrapper(_Options(valued="oepPsSuUabIXEnAlL", flags="cCdDfFhiqrtTvVwxyzZk")),
    "flock": _flock,
    # programs that run the rest of their words, each with the options it reads (one it does not is asked:
    # `rlwrap -z filter` and `entr -s` run a program or shell of their own, `faketime --date-prog` another)
    "unbuffer": _wrapper(_Options(flags="p")),
    "rlwrap": _wrapper(_Options(flags="AcinNoIrRUvW", valued="bCDefFgHlOPqsStw", optional_valued="ap")),
    "ifne": _wrapper(_Options(flags="n")),
    "chronic": _wrapper(_Options(flags="ev")),
    "faketime": _wrapper(_Options(flags="mf", valued="p", long_flags=frozenset({"exclude-monotonic"}), positionals=1)),
    "caffeinate": _wrapper(_Options(flags="dimsu", valued="tw")),
    "eatmydata": _wrapper(_Options()),
    "nocache": _wrapper(_Options(valued="n")),
    "entr": _wrapper(_Options(flags="acdnprz")),
    "trickle": _wrapper(_Options(flags="hvVs", valued="wtlnduLP")),
    "cpulimit": _wrapper(
        _Options(flags="izkv", valued="lpe", long_valued=frozenset({"limit", "pid", "exe"}), separate_command=True)
    ),
    "xvfb-run": _wrapper(_Options(flags="al", valued="efnpsw")),
    "ssh-agent": _wrapper(_Options(flags="csDd", valued="aEOPt")),
    "sshpass": _wrapper(_Options(flags="ev", valued="fdpP")),
    "tini": _wrapper(_Options(flags="svgwl", valued="pe")),
    "dumb-init": _wrapper(
        _Options(flags="cv", valued="r", long_valued=frozenset({"rewrite"}), long_flags=frozenset({"single-child"}))
    ),
    "gosu": _wrapper(_Options(positionals=1, separate_command=True)),
    "su-exec": _wrapper(_Options(positionals=1, separate_command=True)),
    "chpst": _wrapper(_Options(flags="vP012", valued="uUbe/nlLmdopfct", separate_command=True)),
    "setarch": _setarch,
    "linux32": _wrapper(_SETARCH_OPTIONS),
    "linux64": _wrapper(_SETARCH_OPTIONS),
    "run-one": _wrapper(_Options()),
    "run-this-one": _wrapper(_Options()),
    "keep-one-running": _wrapper(_Options()),
    "run-one-constantly": _wrapper(_Options()),
    "run-one-until-success": _wrapper(_Options()),
    "run-one-until-failure": _wrapper(_Options()),
    "lckdo": _wrapper(_Options(flags="qw", valued="W", positionals=1)),
    "with-lock-ex": _wrapper(_Options(flags="wqf", positionals=1)),
    "systemd-inhibit": _wrapper(
        _Options(long_valued=frozenset({"what", "who", "why", "mode"}), long_flags=frozenset({"no-pager", "no-legend"}))
    ),
    "pee": _pee,
    "dbus-run-session": _wrapper(_Options(long_valued=frozenset({"config-file", "dbus-daemon"}))),
    "nq": _wrapper(_Options(flags="cqtw")),
    "perf": _runner(_Options(flags="vq", long_flags=frozenset({"no-pager"})), "stat", "record", "trace"),
    **dict.fromkeys(
        (
            "sem",
            "daemonize",
            "schedtool",
            "bwrap",
            "proot",
            "fakechroot",
            "flatpak-spawn",
            "minijail0",
            "capsh",
            "dbus-launch",
            "mpirun",
            "mpiexec",
            "tsp",
            "watchexec",
            "retry",
            "hyperfine",
        ),
        _runs_unread,
    ),
    # package and environment runners (their own part kept: `_runner`)
    "uv": _runner(_UV_OPTIONS, "run", "tool run"),
    "uvx": _runner(_UV_OPTIONS),
    "npx": _runner(_NPX_OPTIONS),
    "npm": _runner(_NPX_OPTIONS, "exec", "exe", "x"),  # `exe`: npm takes a command's unique abbreviation
    "pnpm": _runner(_PNPM_OPTIONS, "dlx", "exec", commands=_PNPM_COMMANDS),
    "pnpx": _runner(_PNPM_OPTIONS),
    "yarn": _runner(_Options(flags="q", valued="p", long_valued=frozenset({"package"})), "dlx", "exec"),
    "bunx": _runner(_BUNX_OPTIONS),
    "bun": _bun,
    **dict.fromkeys(("pipx", "poetry", "pdm", "rye", "pipenv"), _runner(_PYTHON_PROJECT_OPTIONS, "run")),
    "hatch": _runner(_PYTHON_PROJECT_OPTIONS, "run", "env run", scoped=True),
    "pixi": _runner(_PIXI_OPTIONS, "run", "exec"),
    **dict.fromkeys(("conda", "mamba", "micromamba"), _runner(_CONDA_OPTIONS, "run")),
    "devbox": _runner(_DEVBOX_OPTIONS, "run"),
    "direnv": _runner(_Options(positionals=1), "exec"),
    **dict.fromkeys(("asdf", "pyenv", "rbenv", "nodenv", "goenv", "jenv", "plenv"), _VERSION_MANAGER_EXEC),
    "bundle": _runner(
        _Options(long_valued=frozenset({"gemfile"}), long_flags=frozenset({"keep-file-descriptors"})), "exec"
    ),
    "mise": _MISE,
    "rtx": _MISE,
    "dotenvx": _dashed(frozenset({"run"}), scripts=False),
    "dotenv": _dotenv,
    "corepack": _corepack,
    "scl": _scl,
    "aws-vault": _runner(
        _Options(
            flags="njs",
            valued="dtb",
            long_valued=frozenset({"duration", "region", "mfa-token", "backend", "prompt", "keychain"}),
            long_flags=frozenset(
                {"no-session", "json", "server", "ec2-server", "ecs-server", "lazy", "stdout", "debug"}
            ),
            positionals=1,
        ),
        "exec",
    ),
    "nix": _nix,
    "nix-shell": _command_after(frozenset({"--run", "--command"}), script=True),
    "rustup": _runner(_Options(long_flags=frozenset({"install"}), positionals=1), "run"),
    "volta": _runner(_Options(long_valued=frozenset({"node", "npm", "yarn", "pnpm"})), "run"),
    "fnm": _runner(_Options(long_valued=frozenset({"using"})), "exec"),
    "opam": _runner(_Options(long_valued=frozenset({"switch"})), "exec"),
    "stack": _runner(_Options(long_valued=frozenset({"package"})), "exec"),
    "cabal": _runner(_Options(), "exec"),
    **dict.fromkeys(("doppler", "op", "infisical"), _runner(_Options(), "run")),
    "su": _login_shell(),
    "runuser": _login_shell(),
    "script": _login_shell(),
    "sg": _login_shell(script_first=True),
    "sudo": _wrapper(_SUDO_OPTIONS, takes_env=True),
    "doas": _wrapper(_Options(valued="uC", flags="ns", separate_command=True)),
    "xargs": _wrapper(
        _Options(
            valued="adEILnPs",
            flags="0rtpxo",
            optional_valued="ile",
            long_valued=frozenset(
                {"arg-file", "delimiter", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var"}
            ),
            long_flags=frozenset({"null", "no-run-if-empty", "verbose", "interactive", "exit", "open-tty"}),
            separate_command=True,
        ),
        default="echo",
    ),
    "find": _find,
    "watch": _watch,
    "busybox": _wrapper(_Options()),
    "toybox": _wrapper(_Options()),
    "coproc": _coproc,
    "parallel": _parallel,
    "ssh": _ssh,
}
"""Commands that run other commands, and how to find the command they run."""


def _network_target(target: str) -> bool:
    """Whether bash may open `target` as a socket (`_NETWORK_TARGET`)."""
    folded = posixpath.normpath(target)
    return bool(_NETWORK_TARGET.search(folded) or _NETWORK_TARGET.search(target))


def _generated_file(word: Word) -> bool:
    """A script operand whose content only exists at run time: `<(..)`, a variable, standard
    input or a descriptor by any path (`/dev/stdin`, `//dev/fd/0`, `../../proc/self/fd/0`)."""
    if word is None:
        return True
    parts = [p for p in posixpath.normpath(word).split("/") if p not in ("", ".")]
    return bool({"dev", "proc", "fd"} & set(parts)) or (bool(parts) and parts[-1] in ("stdin", "-"))


def _in_double_quotes(node: Node) -> bool:
    """Whether `node` is inside a double-quoted string or a heredoc's body (where quotes are plain
    characters too) of the same command line (a command or process substitution starts its own
    quoting)."""
    parent = node.parent
    while parent is not None:
        if parent.type == "string":
            return True
        if parent.type == "heredoc_body":
            start = (
                next((c for c in parent.parent.children if c.type == "heredoc_start"), None) if parent.parent else None
            )
            return start is None or not any(q in (start.text or b"") for q in (b"'", b'"', b"\\"))
        if parent.type in ("command_substitution", "process_substitution"):
            return False
        parent = parent.parent
    return False


def _ends_early(body: str, delimiter: str, *, quoted: bool, strip_tabs: bool) -> bool:
    """Whether bash finds the delimiter on a line of `body` (the parser's body, which excludes the
    delimiter line it found): an unquoted heredoc's lines ending in an odd run of backslashes are
    joined to the next first, as bash reads them."""
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        while not quoted and (len(line) - len(line.rstrip("\\"))) % 2 == 1 and index < len(lines):
            line = line[:-1] + lines[index]
            index += 1
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            return True
    return False


def _named_descendants(node: Node, stop: Sequence[str] = ()) -> Iterator[Node]:
    """Every named node under `node` (not `node`), depth first, not entering kinds in `stop`."""
    pending = list(reversed(node.children))
    while pending:
        child = pending.pop()
        if not child.is_named:
            continue
        yield child
        if child.type not in stop:
            pending.extend(reversed(child.children))


def _unescape(text: str) -> str:
    """Quote removal for an unquoted word: `\\x` is x, a line continuation disappears."""
    return re.sub(r"\\(.)", lambda m: m.group(1), text.replace("\\\n", ""), flags=re.S)


def _embedded_scripts(text: str) -> tuple[list[str], bool]:
    """The bodies of the `$(..)` and backtick substitutions in `text` outside single quotes (backtick
    bodies unescaped), and whether every one was closed."""
    bodies: list[str] = []
    index, in_double = 0, False
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
        elif char == "'" and not in_double:
            end = _skip_single(text, index)
            if end < 0:
                return bodies, False
            index = end
        elif char == '"':
            in_double = not in_double
            index += 1
        elif char == "`":
            end = index + 1
            while end < len(text) and text[end] != "`":
                end += 2 if text[end] == "\\" else 1
            if end >= len(text):
                return bodies, False
            bodies.append(_unbacktick(text[index + 1 : end]))
            index = end + 1
        elif text.startswith("$(", index):
            end = _closing_paren(text, index + 2)
            if end < 0:
                return bodies, False
            bodies.append(text[index + 2 : end])
            index = end + 1
        else:
            index += 1
    return bodies, True


def _skip_single(text: str, index: int) -> int:
    """The index after the single-quoted string (or `$'..'`) opening at `index`; -1 if unclosed."""
    ansi_c = index > 0 and text[index - 1] == "$"
    end = index + 1
    while end < len(text) and text[end] != "'":
        end += 2 if ansi_c and text[end] == "\\" else 1
    return end + 1 if end < len(text) else -1


def _closing_paren(text: str, index: int) -> int:
    """The index of the `)` closing a `$(` whose body starts at `index`; -1 if none."""
    depth, in_double = 1, False
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "'" and not in_double:
            index = _skip_single(text, index)
            if index < 0:
                return -1
            continue
        if char == '"':
            in_double = not in_double
        elif not in_double and char == "(":
            depth += 1
        elif not in_double and char == ")":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return -1


def _unbacktick(body: str) -> str:
    """The script inside backticks: bash drops the backslash of \\\\, \\` and \\$ first."""
    return re.sub(r"\\([\\`$])", r"\1", body)


def _unescape_double(text: str) -> str:
    """Inside double quotes only \\ before $ ` " \\ or a newline is removed."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


_ANSI_C_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ANSI_C_SIMPLE |= {"v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
_ANSI_C = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S)


def _ansi_c(body: str) -> Word:
    """The value of `$'...'`; None for an escape we would have to guess at."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "xuU":
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8) & 0xFF)
        if code[0] == "c":
            return chr(ord(code[1].upper()) ^ 0x40)
        if code in _ANSI_C_SIMPLE:
            return _ANSI_C_SIMPLE[code]
        return "\\" + code

    try:
        return _ANSI_C.sub(one, body)
    except ValueError:
        return None
