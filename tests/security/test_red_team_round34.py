"""Red team, round 34: bash's code-running corners against the shell judging, and scripts of shells that are not bash.

Hole (each test marked SUCCEEDED before fails on the code before its fix):

- a `-c` script (or a heredoc) of `sh`, `dash`, `ksh`, ... was read with bash's grammar, but dash (`/bin/sh` on Debian
  and Ubuntu; 0.5.12 measured here) has neither `$'...'` nor `[[`. `sh -c "cat $'a\\' ; touch x ; #\\''"` is one
  argument of `cat` to bash and `cat`, then `touch x`, to dash; `sh -c '[[ a || touch x ]]'` is a test to bash (no
  command at all in the parse) and `[[ a`, then `touch x ]]`, to dash; `dash -c '[[ a > .bashrc ]]'` truncates
  `.bashrc`. So a rule allowing `cat` or `ls` ran them, a rule allowing every shell command let them write a
  protected path, and Codex's `/bin/sh -lc '<script>'` was taken off its wrapper and judged as bash: a read-only
  command that runs unasked. Now `_shell_syntax.otherwise_read`: a script using `$'` or a `[[` word, for a shell other
  than bash, rbash or zsh (which read both as bash does), is unknown (asked), and Codex's display of one stays
  wrapped (`_translate.unwrap_shell`);
- the same for the scripts of the runners that hand them to `sh -c` or a shell of their own (`watch`, `sg`,
  `flock -c` without `SHELL`, `su -c`, `ssh`, `parallel`, ...): read as bash, allowed under rules for `cat` and the
  runner. Now read as `sh`'s; `eval` and `trap` still as bash (they run in bash itself).

Pins (held before and after; each construct was run with the real /bin/bash first and ran code or wrote a file):
`${x@P}`, arithmetic that evaluates an array index (`$(( a[$(id)] ))`, `[[ -v ]]`, `test -v`, `[[ x -eq y ]]`,
`printf -v`, `read`, `declare`/`local`/`export`, `let`, `((...))`, `${x:$(id)}`, `${@:...}`, `unset`), `mapfile -C`,
`trap`, `complete -C`, `compgen -W`, `bind -x`, `enable -f`, `PROMPT_COMMAND`, `hash -p`, `BASH_CMDS` and
`BASH_ALIASES` set by `read`, `printf -v`, `declare` or `${...:=...}`, `declare -a x='($(id))'` (declare re-reads a
quoted compound value), `exec -a`, `coproc`, `command -p`, `jobs -x`, `alias`, brace expansion as a command, process
substitution, here-strings and heredocs with a substitution, redirections that write (`>|`, `<>`, `&>>`, `>&`) or open
a socket, `find -fprint`, `xargs`, `env -S`, wrappers (`nice`, `timeout`), `git -c alias...`, `git log --output`,
`sed w`/`e`, `sort -o`, `tee`. Checked and harmless, not pinned: `grep --pre` (GNU grep 3.8 has no such option: exit
2), `find -fpr` (an unknown predicate, not `-fprint`), `cat /dev/tcp/...` (only a redirection opens a socket).
zsh's code-running expansions (`${(e)..}`, `=(..)`, `*(e:..:)`) in Codex's unwrapped `/bin/zsh -lc` display are
unknown to the parser (pins).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.security.rules import allow_prefixes
from unified._adapters.codex._approvals import _read_only_command
from unified._adapters.codex._translate import unwrap_shell
from unified.tools import Decision, Policy
from unified.tools import _shell_syntax as syntax
from unified.tools._protected import shell_protected
from unified.tools._read_only import not_read_only

SHELL = "run_shell_command"
ALLOW_ALL = '[[rule]]\ntoolName = "run_shell_command"\ndecision = "allow"\npriority = 100\n'

ANSI_C = "cat $'a\\' ; touch pwned ; #\\''"
"""One argument of `cat` to bash; `cat`, then `touch pwned`, then a comment to dash."""
TEST_WRITE = "[[ a > pwned ]]; ls"
"""A test, then `ls`, to bash; `[[ a` (not found) with its output to `pwned` (made, or emptied), then `ls`, to dash."""
TEST_OR = "[[ a || touch pwned ]]; ls"
"""`[[ a`, then `touch pwned ]]`, to dash; bash syntax the parser did not understand already (a pin)."""


def _decision(policy: Policy, command: str) -> Decision:
    return policy.evaluate(SHELL, {"command": command}, "default").decision


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("dash") is None, reason="no dash to measure")
@pytest.mark.parametrize("script", [ANSI_C, TEST_WRITE, TEST_OR])
def test_dash_runs_what_bash_does_not(tmp_path: Path, script: str) -> None:
    """The premise, measured: the same script writes a file under dash and none under bash."""
    subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, check=False)
    assert not (tmp_path / "pwned").exists()
    subprocess.run(["dash", "-c", script], cwd=tmp_path, capture_output=True, check=False)
    assert (tmp_path / "pwned").exists()


NOT_BASH = [
    pytest.param(f"sh -c {shlex.quote(ANSI_C)}", ("cat",), id="sh-ansi-c-quote"),
    pytest.param(f"dash -c {shlex.quote(ANSI_C)}", ("cat",), id="dash-ansi-c-quote"),
    pytest.param(f"/bin/sh -c {shlex.quote(TEST_WRITE)}", ("ls",), id="sh-double-bracket-redirection"),
    pytest.param(f"env sh -c {shlex.quote(TEST_WRITE)}", ("ls", "env"), id="env-sh-double-bracket"),
    pytest.param(f"ls; ksh -c {shlex.quote(TEST_WRITE)}", ("ls",), id="ksh-double-bracket"),
    pytest.param(f"sh <<'EOF'\n{TEST_WRITE}\nEOF", ("ls",), id="sh-heredoc-double-bracket"),
    pytest.param(f"sh -c {shlex.quote('ls;[[ a > .bashrc ]]')}", ("ls",), id="sh-bracket-after-semicolon"),
]


@pytest.mark.parametrize(("command", "allowed"), NOT_BASH)
def test_a_script_dash_reads_otherwise_is_asked_under_an_allow_rule(command: str, allowed: tuple[str, ...]) -> None:
    """SUCCEEDED before: allowed, the parse seeing only `cat`/`ls` where dash also runs `touch` or writes a file."""
    assert _decision(allow_prefixes(*allowed), command) is Decision.ASK_USER
    assert not_read_only(command) is not None


@pytest.mark.parametrize("command", [f"sh -c {shlex.quote(TEST_OR)}", "sh -c '[[ a && touch pwned ]]'"])
def test_a_list_operator_inside_double_brackets_stays_unknown(command: str) -> None:
    """Pin: `||` and `&&` inside `[[` were bash syntax the parser does not understand before this round too."""
    assert _decision(allow_prefixes("ls"), command) is Decision.ASK_USER


RUNNERS = [
    pytest.param(f"watch {shlex.quote(ANSI_C)}", ("cat", "watch"), id="watch"),
    pytest.param(f"flock l -c {shlex.quote(ANSI_C)}", ("cat", "flock"), id="flock-c"),
    pytest.param(f"sg g {shlex.quote(ANSI_C)}", ("cat", "sg"), id="sg"),
    pytest.param(f"watch {shlex.quote(TEST_WRITE)}", ("ls", "watch"), id="watch-double-bracket"),
    pytest.param(f"flock l -c {shlex.quote(TEST_WRITE)}", ("ls", "flock"), id="flock-double-bracket"),
]


@pytest.mark.parametrize(("command", "allowed"), RUNNERS)
def test_a_script_a_runner_hands_to_sh_is_not_read_as_bash(command: str, allowed: tuple[str, ...]) -> None:
    """SUCCEEDED before: `watch` and `sg` run their command with `sh -c`, `flock -c` with `$SHELL` or `/bin/sh`
    (measured: util-linux flock without SHELL ran `touch` under dash); the script was read as bash and allowed."""
    assert _decision(allow_prefixes(*allowed), command) is Decision.ASK_USER


def test_eval_still_reads_its_script_as_bash() -> None:
    """`eval` runs in bash itself: `$'...'` there is one word, as the parse reads it."""
    assert _decision(allow_prefixes("cat", "eval"), f"eval {shlex.quote(ANSI_C)}") is Decision.ALLOW


@pytest.mark.e2e
@pytest.mark.skipif(shutil.which("flock") is None or shutil.which("dash") is None, reason="no flock or dash")
def test_flock_without_shell_runs_its_script_under_sh(tmp_path: Path) -> None:
    """The premise of the runners' case, measured where `/bin/sh` is dash."""
    if Path("/bin/sh").resolve().name != "dash":
        pytest.skip("/bin/sh is not dash")
    env = {"PATH": "/usr/bin:/bin"}
    subprocess.run(
        ["flock", str(tmp_path / "l"), "-c", ANSI_C], cwd=tmp_path, env=env, capture_output=True, check=False
    )
    assert (tmp_path / "pwned").exists()


@pytest.mark.parametrize(
    "command",
    [
        "dash -c '[[ a > .bashrc ]]'",
        f"sh -c {shlex.quote(ANSI_C.replace('pwned', '.envrc'))}",
        "sh -c '[[ a || touch .envrc ]]'",
    ],
)
def test_a_script_dash_reads_otherwise_is_no_allowed_protected_write(tmp_path: Path, command: str) -> None:
    """SUCCEEDED before (the first two; the third is a pin): under a rule allowing every command, nothing in the
    parse wrote `.bashrc`, which dash truncates (`>` is a redirection outside bash's `[[`)."""
    assert shell_protected(syntax.parse(command), tmp_path, [tmp_path]) is not None


@pytest.mark.parametrize("shell", ["/bin/sh", "sh", "dash"])
@pytest.mark.parametrize("script", [ANSI_C, "[[ a > pwned ]]; cat a"])
def test_codex_keeps_a_non_bash_script_wrapped_and_asks(shell: str, script: str) -> None:
    """SUCCEEDED before: Codex's display `/bin/sh -lc '<script>'` was taken off its wrapper and judged as bash: a read
    of `a` that runs without asking, where dash runs `touch`."""
    display = shlex.join([shell, "-lc", script])
    assert unwrap_shell(display) == display
    assert not _read_only_command({"command": display, "commandActions": [{"type": "read", "path": "a"}]})
    assert _decision(allow_prefixes("cat", "ls"), unwrap_shell(display)) is Decision.ASK_USER


@pytest.mark.parametrize(
    ("display", "script"),
    [
        ("/bin/bash -lc " + shlex.quote(ANSI_C), ANSI_C),
        ("/bin/zsh -lc " + shlex.quote("cat $'a b'"), "cat $'a b'"),
        ("/bin/sh -lc 'cat a'", "cat a"),
        ("/bin/sh -lc " + shlex.quote("grep '[[:space:]]' a"), "grep '[[:space:]]' a"),
    ],
)
def test_codex_still_unwraps_what_its_shell_reads_as_bash(display: str, script: str) -> None:
    """Bash and zsh read `$'...'` and `[[` as bash does; a sh script without them reads the same in dash."""
    assert unwrap_shell(display) == script
    assert _read_only_command({"command": display, "commandActions": [{"type": "read", "path": "a"}]})


@pytest.mark.parametrize(
    "command",
    [
        "bash -c " + shlex.quote(ANSI_C),
        "zsh -c " + shlex.quote("cat $'a'"),
        "sh -c " + shlex.quote("cat a | grep '[[:space:]]'"),
        "sh -c 'cat a'",
    ],
)
def test_a_script_read_as_bash_is_still_judged_by_its_commands(command: str) -> None:
    assert _decision(allow_prefixes("cat", "grep"), command) is Decision.ALLOW


HARMLESS = (
    "ls",
    "cat",
    "grep",
    "echo",
    "printf",
    "test",
    "read",
    "declare",
    "local",
    "export",
    "let",
    "unset",
    "mapfile",
    "readarray",
    "trap",
    "complete",
    "compgen",
    "bind",
    "enable",
    "hash",
    "exec",
    "coproc",
    "command",
    "builtin",
    "alias",
    "true",
    ":",
    "eval",
    "find",
    "jobs",
    "wait",
    "getopts",
    "nice",
    "timeout",
    "env",
    "git status",
    "git log",
)
"""Programs and builtins a user may allow as harmless."""

PINS = [
    "x='$(id)'; echo ${x@P}",
    "echo $(( a[$(id)] ))",
    "[[ -v 'a[$(id)]' ]]",
    "test -v 'a[$(id)]'",
    "[[ 'a[$(id)]' -eq 1 ]]",
    "printf -v 'a[$(id)]' x",
    "read 'a[$(id)]' < /dev/null",
    "declare 'a[$(id)]=1'",
    "export 'a[$(id)]=1'",
    "let 'a[$(id)]'",
    "(( a[$(id)] ))",
    "echo ${x:$(id)}",
    "echo ${@:'a[$(id)]'}",
    "unset 'a[$(id)]'",
    "mapfile -C id -c 1 a < /dev/null",
    "trap id EXIT",
    "complete -C id x",
    "compgen -W '$(id)' x",
    "bind -x '\"a\":id'",
    "enable -f ./x.so x",
    "PROMPT_COMMAND=id",
    "hash -p ./x ls",
    'read "BASH_CMDS[ls]" <<< /usr/bin/touch; ls pwned',
    'printf -v "BASH_CMDS[ls]" /usr/bin/touch; ls pwned',
    "echo ${BASH_CMDS[ls]:=/usr/bin/touch}; ls pwned",
    "read 'BASH_ALIASES[ls]' <<< id",
    "declare -a x='($(id))'",
    "exec -a ls ./x",
    "coproc id",
    "command -p id",
    "jobs -x id",
    "alias ls=id",
    "{rm,-rf,x}",
    "cat <(id)",
    "cat <<< $(id)",
    "cat <<EOF\n$(id)\nEOF",
    "case 1 in a[$(id)]) ;; esac",
    "echo >| x",
    "cat <> x",
    "ls &>> x",
    "ls >& x",
    "echo x > /dev/tcp/127.0.0.1/9",
    "find . -fprint x",
    "ls | xargs id",
    "env -S id",
    "nice id",
    "timeout 1 id",
    "git -c alias.status='!id' status",
    "git log --output=x",
    "sed -n '1w x' f",
    "sed -n '1e id' f",
    "sort -o x y",
    "ls | tee x",
]


@pytest.mark.parametrize("command", PINS)
def test_a_harmless_command_s_allow_rule_runs_no_code_and_writes_nothing(command: str) -> None:
    """Pins: each ran code or wrote a file under the real bash; each is asked under rules allowing the harmless
    programs it names, and none is a read-only command."""
    policy = allow_prefixes(*HARMLESS)
    assert _decision(policy, command) is Decision.ASK_USER
    assert not_read_only(command) is not None


ZSH_ONLY = [
    "cat ${(e)${:-'$(touch pwned)'}}",
    'cat ${(e)"$(<f)"}',
    "cat =(id)",
    "cat *(e:id:)",
    "cat a(e:id:)",
    "cat ${(P)x}",
]


@pytest.mark.parametrize("command", ZSH_ONLY)
def test_zsh_expansions_that_run_code_are_unknown(command: str) -> None:
    """Pins: Codex's `/bin/zsh -lc` display is still unwrapped and read as bash (zsh reads `$'...'` and `[[` as bash
    does); zsh's own code-running forms (the `(e)` flag, `=(..)`, the `e` glob qualifier, `(P)` indirection) are
    bash syntax the parser does not understand, so asked (zsh is not installed here: from zsh's manual)."""
    display = shlex.join(["/bin/zsh", "-lc", command])
    assert unwrap_shell(display) == command
    assert not _read_only_command({"command": display, "commandActions": [{"type": "read", "path": "f"}]})
    assert _decision(allow_prefixes("cat"), command) is Decision.ASK_USER
