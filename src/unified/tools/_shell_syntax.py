"""A bash command line as the simple commands it would run (docs/tools.md, "How the policy reads a shell command").

The policy must judge what bash will execute, not what the text starts with, so a command is
parsed with tree-sitter-bash (the grammar the Gemini CLI splits commands with) and reduced,
recursively, to `SimpleCommand`s: every part of a list or pipeline, subshell, group, loop,
function body, command/process substitution, `bash -c` script and literal `eval`, with wrappers
(`env`, `sudo`, `xargs`, `find -exec`, ...) resolved to the command they start, quotes and
backslashes removed. What cannot be known before bash runs (a command word made by an expansion,
an unparseable line, an alias definition) comes back as a part with `unknown` set, so the policy
can refuse to guess. The tree-sitter import happens on the first parse, not at `import unified`.
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["MAX_NESTING", "SimpleCommand", "Word", "command_name", "parse"]

Word = str | None
"""One argv word after quote removal; None when bash only knows it at run time (an expansion, a glob)."""

MAX_NESTING = 8
"""Scripts inside scripts (`bash -c`, `eval`, `trap`) deeper than this are not followed: unknown."""

_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_WRITE_OPERATORS = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "yash", "fish", "csh", "tcsh"})
_SHELL_VALUE_OPTIONS = frozenset("oO")
_SHELL_LONG_VALUE_OPTIONS = frozenset({"--rcfile", "--init-file"})
_EVALUATING_BUILTINS = frozenset(
    {"let", "test", "[", "declare", "typeset", "local", "export", "readonly", "unset", "read", "printf", "mapfile"}
)
"""Builtins that may evaluate quoted text as arithmetic, where `a[$(cmd)]` runs cmd."""
_RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for", "select", "case", "esac"}
)
"""Reserved words. tree-sitter-bash misreads a compound command after `!`, `time` or `coproc` as a
simple command named `if`, `{`, `then`..., so such a word in command position is looked through."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_QUOTED_SUBSTITUTION = re.compile(r"\$\(|`")
_UNPARSED_SUBSTITUTION = re.compile(r"(?<!\\)(?:\\\\)*(?:`|\$\()")
"""A substitution left inside a leaf token: tree-sitter-bash keeps `${x:-`cmd`}` and `${x#$(cmd)}`
as plain text, but bash runs them."""
_LEAVES = frozenset({"word", "regex", "string_content", "extglob_pattern", "heredoc_content"})
_GLOB = re.compile(r"(?<!\\)(?:\\\\)*(?:[*?\[]|\{[^}]*(?:,|\.\.)[^}]*\})")
"""An unescaped glob character or brace expansion (`{a,b}`, `{1..3}`): the word is made at run time."""


@dataclass(frozen=True)
class SimpleCommand:
    """One command bash would start, after wrappers, assignments and quoting are resolved.

    `words` is its argv (None for a word only known at run time); `unknown`, when set, says why
    this part cannot be judged from the text. `writes` are the files its redirections write
    (`?` for a target only known at run time); `assigns` the variables set for it or by it;
    `via` the wrappers and shells it runs under; `open_tail` that more arguments arrive at run
    time (`xargs`). `text` is where it came from, for a prompt.
    """

    words: tuple[Word, ...]
    text: str
    unknown: str | None = None
    writes: tuple[str, ...] = ()
    assigns: tuple[str, ...] = ()
    via: tuple[str, ...] = ()
    open_tail: bool = False

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
        return f"{shown} (via {', '.join(self.via)})" if self.via else shown

    def shape(self) -> tuple[object, ...]:
        """What an "allow always" answer is scoped to: everything but the source text."""
        return (self.words, self.unknown, self.writes, self.assigns, self.via, self.open_tail)


def command_name(word: str) -> str:
    """A command word as a prefix is compared against it: its basename."""
    return word.rstrip("/").rsplit("/", 1)[-1] or word


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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

    # -- the tree -------------------------------------------------------------------------------

    def visit(self, node: Node, ctx: _Context) -> None:
        kind = node.type
        if kind == "command":
            self.command(node, ctx)
        elif kind == "redirected_statement":
            self.redirected(node, ctx)
        elif kind == "variable_assignment":
            self.assignment_statement(node)
        elif kind in ("declaration_command", "unset_command"):
            self.declaration(node, ctx)
        elif kind in ("test_command", "arithmetic_expansion") or self._is_arith(node):
            self.flag_quoted_substitutions(node)
            self.children(node, ctx)
        elif kind == "pipeline":
            self.pipeline(node, ctx)
        elif kind == "command_substitution" and self.text(node).startswith("`") and "\\" in self.text(node):
            self.backticks(node)
        elif kind in _LEAVES and _UNPARSED_SUBSTITUTION.search(self.text(node)):
            self.misparsed = True
        elif kind == "expansion" and re.search(r"@[A-Za-z]\}$", self.text(node)):
            self.out.append(self.unknown(self.text(node), "a ${var@op} transformation may run code"))
        else:
            self.children(node, ctx)

    def pipeline(self, node: Node, ctx: _Context) -> None:
        """Only the first command of a pipeline reads the heredoc; the others read the pipe."""
        first = True
        for child in node.children:
            self.visit(child, ctx if first else replace(ctx, stdin_script=None))
            first = first and not child.is_named

    def backticks(self, node: Node) -> None:
        r"""Inside backticks bash first removes the backslash of \\, \` and \$, so `\`rm x\`` nests a
        substitution tree-sitter reads as plain words: the unescaped body is parsed again."""
        self.out.extend(_Walker(_unbacktick(self.text(node)[1:-1]), depth=self.depth + 1, via=self.via).run())

    def children(self, node: Node, ctx: _Context) -> None:
        for child in node.children:
            self.visit(child, ctx)

    def _is_arith(self, node: Node) -> bool:
        """`(( expr ))`, which tree-sitter calls a compound statement."""
        return node.type == "compound_statement" and bool(node.children) and node.children[0].type == "(("

    def flag_quoted_substitutions(self, node: Node) -> None:
        """Quoted `$(..)` in an arithmetic context runs when bash evaluates it (`a[$(cmd)]`)."""
        for literal in _descendants(node, ("raw_string", "string", "ansi_c_string")):
            if _QUOTED_SUBSTITUTION.search(self.text(literal)):
                self.out.append(self.unknown(self.text(node), "quoted command substitution in an arithmetic context"))
                return

    def redirected(self, node: Node, ctx: _Context) -> None:
        writes = list(ctx.writes)
        stdin = ctx.stdin_script
        for child in node.children:
            if child.type == "file_redirect":
                writes.extend(self.redirect_writes(child))
                stdin = None if self.reads_file(child) else stdin
            elif child.type == "heredoc_redirect":
                stdin = self.heredoc_text(child)
            elif child.type == "herestring_redirect":
                stdin = self.herestring_text(child)
        inner = _Context(tuple(writes), stdin)
        for index, child in enumerate(node.children):
            if node.field_name_for_child(index) == "body":
                self.visit(child, inner)
            else:
                self.visit(child, ctx)

    def redirect_writes(self, node: Node) -> list[str]:
        operator = next((c.type for c in node.children if c.type in _WRITE_OPERATORS or c.type == ">&"), None)
        destination = node.child_by_field_name("destination")
        if operator is None or destination is None or destination.type == "process_substitution":
            return []
        target = self.literal(destination)
        if operator == ">&" and target is not None and (target == "-" or target.isdigit()):
            return []
        if target in _HARMLESS_TARGETS:
            return []
        return [target if target is not None else "?"]

    def reads_file(self, node: Node) -> bool:
        """`< file`: standard input no longer comes from an enclosing heredoc."""
        return any(c.type == "<" for c in node.children) and node.child_by_field_name("descriptor") is None

    def heredoc_text(self, node: Node) -> str | None:
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        return self.text(body) if body is not None else None

    def herestring_text(self, node: Node) -> str | None:
        value = next((c for c in node.children if c.type != "<<<"), None)
        return self.literal(value) if value is not None else None

    def assignment_statement(self, node: Node) -> None:
        name = node.child_by_field_name("name")
        self.check_assignment_value(node)
        self.children(node, _Context())
        label = self.text(name) if name is not None else self.text(node)
        self.out.append(SimpleCommand((), self.text(node), assigns=(label,), via=self.via))

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

    def declaration(self, node: Node, ctx: _Context) -> None:
        words: list[Word] = []
        assigns: list[str] = []
        for child in node.children:
            if child.type == "variable_assignment":
                self.check_assignment_value(child)
                name = child.child_by_field_name("name")
                assigns.append(self.text(name) if name is not None else self.text(child))
                words.append(self.assignment_word(child))
                self.children(child, _Context())
            elif child.is_named:
                words.append(self.literal(child))
                self.visit(child, ctx)
            else:
                words.append(child.type)
        self.flag_quoted_substitutions(node)
        self.out.append(
            SimpleCommand(tuple(words), self.text(node), writes=ctx.writes, assigns=tuple(assigns), via=self.via)
        )

    def command(self, node: Node, ctx: _Context) -> None:
        word_nodes: list[Node] = []
        assigns: list[str] = []
        writes = list(ctx.writes)
        stdin = ctx.stdin_script
        for child in node.children:
            if child.type == "variable_assignment":
                self.check_assignment_value(child)
                name = child.child_by_field_name("name")
                assigns.append(self.text(name) if name is not None else self.text(child))
                self.children(child, _Context())
                continue
            if child.type == "file_redirect":
                writes.extend(self.redirect_writes(child))
                stdin = None if self.reads_file(child) else stdin
            elif child.type == "herestring_redirect":
                stdin = self.herestring_text(child)
            elif child.type == "heredoc_redirect":
                stdin = self.heredoc_text(child)
            elif child.type == "command_name":
                word_nodes.extend(child.children)
            elif child.is_named and child.type != "comment":
                word_nodes.append(child)
            self.visit(child, _Context())
        words = self.words(word_nodes)
        if words and words[0] is not None and command_name(words[0]) in _EVALUATING_BUILTINS:
            self.flag_quoted_substitutions(node)
        self.resolve(
            words,
            _Invocation(self.text(node), tuple(assigns), tuple(writes), stdin, self.via, open_tail=False),
        )

    def words(self, nodes: Sequence[Node]) -> list[Word]:
        """Literal words; nodes separated only by a line continuation (`r\\<newline>m`) are one word."""
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
            words.append(None if any(p is None for p in parts) else "".join(p for p in parts if p is not None))
        return words

    def literal(self, node: Node) -> Word:
        """A word node's value after quote removal, or None if bash computes it at run time."""
        kind = node.type
        text = self.text(node)
        if kind == "word":
            if _GLOB.search(text) or text.startswith("~") or _UNPARSED_SUBSTITUTION.search(text):
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
            if _GLOB.search(unquoted):
                return None
            parts = [self.literal(child) for child in children]
            return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
        return None

    # -- argv resolution ------------------------------------------------------------------------

    def resolve(self, words: list[Word], inv: _Invocation) -> None:
        """Emits the command `words` starts, looking through wrappers, shells and `eval`."""
        if not words:
            if inv.assigns:
                self.out.append(SimpleCommand((), inv.text, assigns=inv.assigns, writes=inv.writes, via=inv.via))
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
            self.resolve(words[1:], replace(inv, assigns=(*inv.assigns, first.split("=", 1)[0])))
            return
        name = command_name(first)
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
        elif name == "hash" and "-p" in args:
            self.out.append(inv.unknown("hash -p changes which program a name runs"))
        elif name in ("source", ".") and args and _generated_file(args[0]):
            self.out.append(inv.unknown(f"{name} of commands generated at run time"))
        elif name in _WRAPPERS:
            _WRAPPERS[name](self, words, inv)
        else:
            self.out.append(inv.command(words))

    def script(self, args: Sequence[Word], inv: _Invocation, runner: str) -> None:
        if any(a is None for a in args):
            self.out.append(inv.unknown(f"{runner} of text only known at run time"))
            return
        self.nested(" ".join(a for a in args if a is not None), inv, runner)

    def nested(self, script: str, inv: _Invocation, runner: str) -> None:
        inner = _Walker(script, depth=self.depth + 1, via=(*inv.via, runner))
        for part in inner.run():
            self.out.append(replace(part, writes=(*part.writes, *inv.writes), assigns=(*part.assigns, *inv.assigns)))

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
            if word in _SHELL_LONG_VALUE_OPTIONS:
                index += 2
                continue
            if word.startswith("--"):
                index += 1
                continue
            if len(word) > 1 and word[0] in "-+":
                letters = word[1:]
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
            else:
                self.nested(rest[0], inv, f"{name} -c")
        elif rest and not reads_stdin:
            if _generated_file(rest[0]):
                self.out.append(inv.unknown(f"{name} of a script generated at run time"))
            else:
                self.out.append(inv.command(words))
        elif inv.stdin is not None:
            self.nested(inv.stdin, inv, name)
        else:
            self.out.append(inv.unknown(f"{name} reads its commands from standard input"))


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

    def command(self, words: Sequence[Word]) -> SimpleCommand:
        if self.placeholder is not None:
            words = [None if w is None or self.placeholder in w else w for w in words]
        if words and words[0] is None:
            return self.unknown("its command name is only known at run time")
        return SimpleCommand(tuple(words), self.text, None, self.writes, self.assigns, self.via, self.open_tail)

    def unknown(self, reason: str) -> SimpleCommand:
        return SimpleCommand((), self.text, reason, self.writes, self.assigns, self.via)


@dataclass(frozen=True)
class _Options:
    """How a wrapper's options are read: which take a value, which are plain flags."""

    valued: str = ""
    flags: str = ""
    long_valued: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    optional_valued: str = ""
    """Short options whose value, if any, is attached (`xargs -i{}`)."""
    numeric_flags: bool = False
    """`-10` is an option (nice)."""
    lone_dash: bool = False
    """`-` alone is an option (env: the same as -i)."""
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
                elif key in self.long_flags and not eq:
                    seen["--" + key] = ""
                else:
                    return f"an option it does not know ({word})"
                index += 1
                continue
            if (self.numeric_flags and re.fullmatch(r"-\d+", word)) or (self.lone_dash and word == "-"):
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


def _wrapper(options: _Options, *, takes_env: bool = False, default: str | None = None) -> _Handler:
    """A command that runs the rest of its words as another command (`nice -n 5 make`)."""

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
        assigns = list(inv.assigns)
        while takes_env and rest and rest[0] is not None and re.match(r"[A-Za-z_]\w*=", rest[0]):
            assigns.append(rest[0].split("=", 1)[0])
            own.append(rest.pop(0))
        if name == "xargs":
            inv = replace(inv, open_tail=True, stdin=None, placeholder=seen.get("-I") or seen.get("-i") or None)
            if "-i" in seen and not seen["-i"]:
                inv = replace(inv, placeholder="{}")
        if options.separate_command or not rest:
            walker.out.append(replace(inv, open_tail=False, placeholder=None).command([words[0], *own]))
        if not rest:
            if default is not None:
                walker.out.append(replace(inv, via=(*inv.via, name)).command([default]))
            return
        walker.resolve(rest, replace(inv, assigns=tuple(assigns), via=(*inv.via, name)))

    return handle


def _command_builtin(walker: _Walker, words: list[Word], inv: _Invocation) -> None:
    """`command [-p] cmd` runs cmd; `command -v/-V cmd` only describes it."""
    args = words[1:]
    while args and args[0] == "-p":
        args = args[1:]
    if args and args[0] is not None and args[0].startswith("-") and args[0] != "--":
        walker.out.append(inv.command(words))
        return
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        walker.out.append(inv.command(words))
        return
    walker.resolve(args, replace(inv, via=(*inv.via, "command")))


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
    runs: list[list[Word]] = []
    writes = list(inv.writes)
    index = 0
    while index < len(words):
        word = words[index]
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(words) and words[end] not in (";", "+"):
                end += 1
            runs.append(words[index + 1 : end])
            index = end + 1
            continue
        if word in ("-fprint", "-fprint0", "-fls", "-fprintf") and index + 1 < len(words):
            writes.append(words[index + 1] or "?")
        own.append(word)
        index += 1
    walker.out.append(replace(inv, writes=tuple(writes)).command(own))
    for run in runs:
        walker.resolve(run, replace(inv, via=(*inv.via, "find"), placeholder="{}", stdin=None))


_WRAPPERS: dict[str, _Handler] = {
    "env": _wrapper(
        _Options(
            valued="uC",
            flags="i0v",
            long_valued=frozenset({"unset", "chdir"}),
            long_flags=frozenset({"ignore-environment", "null", "debug"}),
            lone_dash=True,
        ),
        takes_env=True,
    ),
    "command": _command_builtin,
    "builtin": _wrapper(_Options()),
    "exec": _wrapper(_Options(valued="a", flags="cl")),
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
    "sudo": _wrapper(
        _Options(
            valued="ugCDhprtTUR",
            flags="AbEHikKnPSs",
            long_valued=frozenset(
                {"user", "group", "close-from", "chdir", "prompt", "role", "type", "other-user", "host"}
            ),
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
            separate_command=True,
        ),
        takes_env=True,
    ),
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
    "coproc": _coproc,
}
"""Commands that run other commands, and how to find the command they run."""


def _generated_file(word: Word) -> bool:
    """A script operand whose content only exists at run time: `<(..)`, a variable, /dev/stdin."""
    return word is None or word.startswith(("/dev/", "/proc/"))


def _descendants(node: Node, kinds: tuple[str, ...]) -> Iterator[Node]:
    for child in node.children:
        if child.type in kinds:
            yield child
        yield from _descendants(child, kinds)


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
