"""Red team round 10: holes in what the policy, the read-only judgement and the agents' environments let a
prompt-injected model do. Each case failed on the code before its fix (see the commit that added it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from unified._adapters.claude_code._launch import claude_env
from unified._adapters.claude_code._options import claude_code_options
from unified._adapters.codex._launch import ENV_POLICY as CODEX_ENV_POLICY
from unified._adapters.gemini_cli._launch import gemini_env
from unified._binary.environment import GIT_SAFETY, child_env

GIT = shutil.which("git")


def plain_repository(folder: Path, marker: Path) -> None:
    """A bare repository made of what a model may write: plain files and folders, none named `.git`, its
    config naming a command git runs when it reads the work tree's index."""
    (folder / "objects").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
        f'\tfsmonitor = "touch {marker}; echo"\n'
    )


AGENT_ENVS: dict[str, Callable[[Path], dict[str, str]]] = {
    "claude-code": lambda home: claude_env(claude_code_options({}), home, parent={"PATH": os.environ["PATH"]}),
    "gemini-cli": lambda home: gemini_env(),
    "codex": lambda home: child_env(CODEX_ENV_POLICY, parent={"PATH": os.environ["PATH"]}),
}


@pytest.mark.e2e
@pytest.mark.skipif(GIT is None, reason="needs git")
@pytest.mark.parametrize("agent", sorted(AGENT_ENVS))
@pytest.mark.parametrize("command", [["git", "grep", "hello"], ["git", "status", "--short"], ["git", "diff"]])
def test_an_agent_s_git_does_not_obey_a_plain_directory_s_config(
    tmp_path: Path, agent: str, command: list[str]
) -> None:
    """git discovers a directory with HEAD, config, objects/ and refs/ as a bare repository when run inside it;
    its `core.fsmonitor` ran at `git grep`/`git status`/`git diff` (commands a user's rule or Codex's read-only
    judgement allows) in every agent binary's environment. Now the agents' environments carry
    `safe.bareRepository=explicit`: git refuses the directory."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello\n")
    marker = tmp_path / "PWNED"
    plain_repository(workspace / "g", marker)
    env = AGENT_ENVS[agent](tmp_path / "home")
    env["HOME"] = str(tmp_path / "home")  # no user git config of this machine
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    subprocess.run(command, cwd=workspace / "g", env=env, capture_output=True, timeout=60, check=False)
    assert not marker.exists(), f"{agent}: {' '.join(command)} ran the command a model-written config names"


def test_a_caller_s_own_git_parameters_are_kept(tmp_path: Path) -> None:
    env = child_env(CODEX_ENV_POLICY, extra={"GIT_CONFIG_PARAMETERS": "'core.quotepath'='off'"}, parent={})
    assert env["GIT_CONFIG_PARAMETERS"] == f"'core.quotepath'='off' {GIT_SAFETY[1]}"


UP = "/".join([".."] * 24)


@pytest.mark.parametrize(
    ("command", "word"),
    [
        (f"cat a -- --/{UP}/etc/passwd", f"--/{UP}/etc/passwd"),
        (f"grep -r root a -- --x/{UP}/etc", f"--x/{UP}/etc"),
        (f"sed -n 1p -- a --/{UP}/etc/hostname", f"--/{UP}/etc/hostname"),
        (f"head -n1 -- -/{UP}/etc/hostname", f"-/{UP}/etc/hostname"),
    ],
)
def test_a_word_past_double_dash_is_a_path_the_read_only_check_judges(command: str, word: str) -> None:
    """Past `--` a word starting with `--` is a file (through a folder named `--` the model made): the words
    Codex's read-only commands are judged by (`_read_only.operands`, checked against the workspace) passed
    over it as a long option, so `cat a -- --/../../etc/passwd` ran unasked, reading outside the workspace."""
    from unified.tools._read_only import not_read_only, operands

    assert not_read_only(command) is None  # a read, so only the outside-workspace check can ask it
    assert word in operands(command)


FOLLOWING = [
    "grep -R secret .",
    "grep -rRn secret .",
    "egrep --dereference-recursive secret .",
    "rg -L secret",
    "rg --follow secret .",
    "fd -L key",
    "fd --follow key .",
    "find -L . -name id_rsa",
    "find . -follow -name id_rsa",
    "tree -l",
    "tree -al .",
    "ls -RL",
    "ls -R --dereference",
    "du -aL .",
]


@pytest.mark.parametrize("command", FOLLOWING)
def test_a_recursion_that_follows_links_is_no_read_only_command(command: str) -> None:
    """A repository may hold a link leading out of the workspace (`docs -> ~/.ssh`): the outside-workspace check
    judges the paths a command names (`.`), not what a recursion meets, so `grep -R secret .` read through the
    link unasked on codex. Following links is now an unsafe option of each program that can."""
    from unified.tools._read_only import not_read_only

    assert not_read_only(command) is not None


@pytest.mark.parametrize("command", ["grep -rn secret .", "rg secret", "find . -name x", "ls -R", "tree -L 2"])
def test_a_recursion_that_does_not_follow_links_is_still_a_read(command: str) -> None:
    from unified.tools._read_only import not_read_only

    assert not_read_only(command) is None


ARITHMETIC_AS_TEXT = [
    "ls 'a[$(touch PWNED)]'; echo ${x:-$[_]}",
    "ls 'a[$(touch PWNED)]'; echo ${PWD#$[_]}",
    "echo 'a[$(touch PWNED)]' ${x/$[_]/y}",
    "echo 'a[$(touch PWNED)]' ${x:+$[_]}",
    "echo 'a[$(touch PWNED)]' ${x:?$[_]}",
    "echo 'a[$(touch PWNED)]' ${x%%$[_]}",
    "echo 'a[$(touch PWNED)]' ${x,,$[_]}",
    "echo 'a[$(touch PWNED)]' \"${x:-a$[_]b}\"",
    "echo 'a[$(touch PWNED)]' ${x:-${y:-$[_]}}",
    "ls 'a[$(touch PWNED)]'; [[ x =~ $[_] ]] && ls",
]


@pytest.mark.parametrize("command", ARITHMETIC_AS_TEXT)
def test_arithmetic_the_parser_keeps_as_text_is_not_allowed(command: str) -> None:
    """tree-sitter-bash keeps `$[..]` inside an expansion's operand or a `=~` regex as a plain word; bash
    evaluates it, and `$[_]` evaluates the last argument of the command before, `a[$(touch PWNED)]`, which
    runs `touch PWNED` (checked by hand with bash 5.2). A user's rule allowing `ls` and `echo` allowed each."""
    from tests.security.rules import allow_prefixes
    from unified.tools._policy import Decision

    verdict = allow_prefixes("ls", "echo").evaluate("run_shell_command", {"command": command}, "default")
    assert verdict.decision is not Decision.ALLOW


@pytest.mark.parametrize("command", ["echo ${x:-a}", "echo ${x:-\\$[_]}", "echo $[1]", "echo '${x:-$[_]}'"])
def test_an_expansion_without_arithmetic_text_is_still_allowed(command: str) -> None:
    from tests.security.rules import allow_prefixes
    from unified.tools._policy import Decision

    verdict = allow_prefixes("ls", "echo").evaluate("run_shell_command", {"command": command}, "default")
    assert verdict.decision is Decision.ALLOW


COMPLETIONS = ["compgen -W '$(touch PWNED)' x", "compgen -aW '`touch PWNED`' x", "complete -W x ls"]


@pytest.mark.parametrize("command", COMPLETIONS)
def test_a_completion_word_list_is_code(command: str) -> None:
    """`compgen -W LIST` expands LIST as a word, command substitutions included (bash 5.2 ran `touch PWNED`):
    a rule allowing `compgen` (a builtin that only prints completions) allowed it."""
    from tests.security.rules import allow_prefixes
    from unified.tools._policy import Decision

    verdict = allow_prefixes("compgen", "complete").evaluate("run_shell_command", {"command": command}, "default")
    assert verdict.decision is not Decision.ALLOW


GLUED_CONTINUATIONS = [
    "ls 'a[$(touch PWNED)]'; echo $\\\n[_]",
    "ls 'a[$(touch PWNED)]'; echo ${x:-$\\\n[_]}",
    "echo ${x:-$\\\n(touch PWNED)}",
    'echo "$\\\n[_]"',
    "cat <<EOF\n$\\\n(touch PWNED)\nEOF",
]


@pytest.mark.parametrize("command", GLUED_CONTINUATIONS)
def test_a_line_continuation_inside_a_word_is_not_allowed(command: str) -> None:
    """bash removes a backslash-newline before it reads the line: `$\\<newline>[_]` is `$[_]`, which runs what
    `$_` holds (bash 5.2 ran `touch` for the first three, checked by hand); tree-sitter-bash read a variable
    named `\\<newline>` and plain text, and a rule allowing `ls`, `echo` and `cat` allowed them."""
    from tests.security.rules import allow_prefixes
    from unified.tools._policy import Decision

    verdict = allow_prefixes("ls", "echo", "cat").evaluate("run_shell_command", {"command": command}, "default")
    assert verdict.decision is not Decision.ALLOW


@pytest.mark.parametrize("command", ["ls \\\n  -la", "ls -la \\\n  .", "echo 'a' \\\n 'b'"])
def test_a_long_command_split_after_a_blank_is_still_allowed(command: str) -> None:
    from tests.security.rules import allow_prefixes
    from unified.tools._policy import Decision

    verdict = allow_prefixes("ls", "echo").evaluate("run_shell_command", {"command": command}, "default")
    assert verdict.decision is Decision.ALLOW


@pytest.mark.parametrize(
    "command", ["file -f names.txt", "file -bf names.txt", "file --files-from=names.txt", "tree --fromfile names.txt"]
)
def test_a_reader_of_the_files_a_list_names_is_no_read_only_command(command: str) -> None:
    """`file -f names.txt` judges each file the list names (the model may have written `~/.ssh/id_rsa` into it:
    `OpenSSH private key`), past the outside-workspace check that sees `names.txt` only; as `wc --files0-from`."""
    from unified.tools._read_only import not_read_only

    assert not_read_only(command) is not None
