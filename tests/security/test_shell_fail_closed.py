"""The shell policy fails closed (issue 24, "Shell policy"; docs/tools.md, "How the policy reads a
shell command").

Two attackers: a model under an allow rule for harmless-looking commands (`echo`, `printf`,
`read`, `test`, ...) that wants to run anything else without being asked, and a model in yolo mode
under a deny rule for `touch` that wants to run `touch` anyway. Every hostile form below makes the
real bash create a file named `pwned` (the e2e controls check that the forms work), and none may be
allowed: the allow side must ask, the deny side must deny or ask (denied with nobody to answer).
The forms are generated from carriers (ways to put text in a variable) and sinks (places where bash
evaluates a variable's text as code), then the wrappers and environment-borne code of the deny side.
"""

from __future__ import annotations

import itertools
import shlex
from pathlib import Path

import pytest

from tests.harness.bash import run_bash
from unified.tools import Decision, PermissionAnswer, PermissionRequest, Policy, ToolCall, ToolRuntime
from unified.tools import _shell_syntax as syntax
from unified.types import ApprovalMode

SHELL = "run_shell_command"
HARMLESS = [
    "echo",
    "printf",
    "true",
    ":",
    "cat",
    "ls",
    "test",
    "[",
    "read",
    "set",
    "mapfile",
    "getopts",
    "let",
    "wait",
    "unset",
    "export",
    "declare",
    "typeset",
    "shift",
]
ALLOW_HARMLESS = (
    f'[[rule]]\nname = "harmless"\ntoolName = "run_shell_command"\ncommandPrefix = {HARMLESS!r}\n'.replace("'", '"')
    + 'decision = "allow"\n'
)
DENY_TOUCH = (
    '[[rule]]\nname = "no-touch"\ntoolName = "run_shell_command"\ncommandPrefix = ["touch"]\ndecision = "deny"\n'
)

CODE = shlex.quote("a[$(touch pwned)]")
"""Text that runs `touch pwned` wherever bash evaluates it as arithmetic or as a name."""

CARRIERS = {
    "default-assign": "echo ${z:=a[\\$(touch pwned)]} >/dev/null",
    "assign-expansion": "echo ${z=a[\\$(touch pwned)]} >/dev/null",
    "read": f"read -r z <<< {CODE}",
    "printf-v": f"printf -v z %s {CODE}",
    "for-loop": None,
    "mapfile": f"mapfile -t zz <<< {CODE}; z=${{zz[0]}}",
    "positional": f"set -- {CODE}; z=$1",
    "export": f"export z={CODE}",
    "declare": f"declare z={CODE}",
}
SINKS = {
    "arithmetic-expansion": "echo $((z))",
    "old-arithmetic": "echo $[z]",
    "arithmetic-command": "((z))",
    "let": "let z",
    "indirection": "echo ${!z}",
    "substring-offset": "echo ${HOME:z}",
    "array-index": "echo ${BASH_VERSINFO[z]}",
    "length-of-index": "echo ${#BASH_VERSINFO[z]}",
    "test-eq": "[[ z -eq 0 ]]",
    "test-v": 'test -v "$z"',
    "bracket-v": '[ -v "$z" ]',
    "printf-v-name": 'printf -v "$z" x',
    "nameref": 'declare -n r="$z"; echo $r',
    "c-style-for": "for ((i=z; i<0; i++)); do :; done",
    "declare-i": "declare -i n; n=z",
    "prompt-expansion": 'echo "${z@P}"',
}


def _combined() -> list[tuple[str, str]]:
    cases = []
    for (carrier, put), (sink, use) in itertools.product(CARRIERS.items(), SINKS.items()):
        command = f"for z in {CODE}; do {use}; done" if put is None else f"{put}; {use}"
        cases.append((f"{carrier}+{sink}", command))
    return cases


EVALUATED = [
    *_combined(),
    ("issue-form", "echo ${z:=a[\\$\\(touch pwned\\)]} $((z))"),
    ("quoted-sink", 'echo "${z:=a[\\$(touch pwned)]}" "$((z))"'),
    ("colon-carrier", ": ${z:=a[\\$(touch pwned)]}; echo $((z+1))"),
    ("set-positional-arithmetic", f"set -- {CODE}; echo $(($1))"),
    ("literal-in-test", "[[ 'a[$(touch pwned)]' -eq 0 ]]"),
    ("getopts-optarg", f"getopts z: o -z {CODE}; echo $((OPTARG))"),
    ("mapfile-callback", "mapfile -C 'touch pwned #' -c 1 zz <<< x"),
    ("prompt-default", "echo ${z:=\\$(touch pwned)} ${z@P}"),
    ("typeset-nameref", f"typeset -n r={CODE}; echo $r"),
    ("export-declare-i", f"declare -i n; export n={CODE}"),
]
"""Under an allow rule for harmless commands, each of these runs `touch pwned`."""

HIDDEN = [
    ("env-percent-assignment", "env a%=b touch pwned"),
    ("env-any-equals", "env 'x y=1' touch pwned"),
    ("env-function", "env 'BASH_FUNC_ls%%=() { touch pwned; }' bash -c ls"),
    ("env-function-echo", "env BASH_FUNC_echo%%='() { touch pwned; }' bash -c 'echo hi'"),
    ("bash-env-substitution", "BASH_ENV=<(echo touch pwned) bash -c :"),
    ("bash-env-file", "echo 'touch pwned' > e; BASH_ENV=e bash -c :"),
    ("exported-bash-env", "echo 'touch pwned' > e; export BASH_ENV=$PWD/e; bash -c true"),
    ("rcfile", "bash --rcfile <(echo touch pwned) -i < /dev/null"),
    ("init-file", "bash --init-file <(echo touch pwned) -i < /dev/null"),
    ("fd0-herestring", "bash 0<<<'touch pwned'"),
    ("fd0-redirect-herestring", "cat 0<<<'touch pwned' | bash"),
    ("fd0-dup", "exec 3<<<'touch pwned'; bash 0<&3"),
    ("source-fd-path", "exec 3<<<'touch pwned'; source /dev/fd/3"),
    ("source-odd-stdin-path", ". //dev/./stdin <<< 'touch pwned'"),
    ("link-to-stdin", "ln -s /dev/stdin s; bash s <<< 'touch pwned'"),
    ("unquoted-heredoc-escape", "bash <<EOF\necho \\$(touch pwned)\nEOF"),
    ("ps4-declare", "declare PS4='$(touch pwned)'; set -x; true"),
    ("ps4-assignment", "PS4='$(touch pwned)'; set -x; true"),
    ("ps4-read", "read -r PS4 <<< '$(touch pwned)'; set -x; true"),
    ("bash-cmds", "BASH_CMDS[ls]=$(command -v touch); ls pwned"),
    ("bash-cmds-default", "echo ${BASH_CMDS[ls]:=$(command -v touch)}; ls pwned"),
    ("bash-cmds-read", "read 'BASH_CMDS[ls]' <<< $(command -v touch); ls pwned"),
    ("bash-cmds-printf", "printf -v 'BASH_CMDS[ls]' %s $(command -v touch); ls pwned"),
    ("aliases", "shopt -s expand_aliases\nBASH_ALIASES[ls]='touch pwned #'\nls"),
    ("alias-builtin", "shopt -s expand_aliases\nalias ls='touch pwned #'\nls"),
    ("path-hijack", "mkdir -p b; ln -s $(command -v touch) b/ls; PATH=$PWD/b:$PATH ls pwned"),
    ("for-path", "mkdir -p b; ln -s $(command -v touch) b/ls; for PATH in $PWD/b; do ls pwned; done"),
    ("jobs-x", "jobs -x touch pwned"),
    ("exec-argv0", "exec -a x touch pwned"),
    ("command-p", "command -p -- touch pwned"),
    ("builtin-command", "builtin command touch pwned"),
    ("absolute", "$(command -v touch) pwned"),
    ("backslash", "\\touch pwned"),
    ("quotes", "t''ouch pwned"),
    ("ansi-c", "$'\\x74ouch' pwned"),
    ("wrappers", "nice -n 1 nohup timeout 5 stdbuf -o0 touch pwned"),
    ("env-options", "env -i -u X -- touch pwned"),
    ("env-signal", "env --ignore-signal=INT touch pwned"),
    ("xargs", "echo pwned | xargs touch"),
    ("find-exec", "find . -maxdepth 0 -exec touch pwned \\;"),
    ("chroot", "chroot / $(command -v touch) $PWD/pwned"),
    ("taskset", "taskset 1 touch pwned"),
    ("su-c", "su -c 'touch pwned' root"),
    ("su-user-c", "su root -c 'touch pwned'"),
    ("script-c", "script -qc 'touch pwned' /dev/null"),
    ("eval-default", "eval ${x:-touch} pwned"),
    ("trap-variable", "t='touch pwned'; trap \"$t\" EXIT"),
    ("mapfile-callback-deny", "mapfile -C 'touch pwned #' -c 1 zz <<< x"),
    ("compgen-c", "compgen -C 'touch pwned' x"),
    ("evaluated-arithmetic", "echo ${z:=a[\\$(touch pwned)]} $((z))"),
    ("nameref", f"declare -n r={CODE}; echo $r"),
]
"""In yolo mode under a deny rule for `touch`, each of these runs `touch pwned`."""


def _allow_side(command: str) -> Decision:
    return Policy.default().with_toml(ALLOW_HARMLESS).evaluate(SHELL, {"command": command}, "default").decision


def _deny_side(command: str, mode: ApprovalMode = "yolo") -> Decision:
    return Policy.default().with_toml(DENY_TOUCH).evaluate(SHELL, {"command": command}, mode).decision


@pytest.mark.parametrize(("case", "command"), EVALUATED, ids=[c for c, _ in EVALUATED])
def test_an_allow_rule_never_covers_evaluated_code(case: str, command: str) -> None:
    assert _allow_side(command) is Decision.ASK_USER
    assert _deny_side(command) is not Decision.ALLOW


@pytest.mark.parametrize(("case", "command"), HIDDEN, ids=[c for c, _ in HIDDEN])
@pytest.mark.parametrize("mode", ["yolo", "default", "auto_edit"])
def test_a_deny_rule_is_matched_after_the_same_analysis(case: str, command: str, mode: ApprovalMode) -> None:
    assert _deny_side(command, mode) in (Decision.DENY, Decision.ASK_USER)
    assert _allow_side(command) is Decision.ASK_USER


@pytest.mark.parametrize(
    "command",
    [
        "echo hi",
        "echo $((1 + 2)) $((0x1f)) $[2*3]",
        "printf '%s\\n' a b",
        "echo ${HOME} ${HOME:-x} ${HOME#/} ${HOME%%/*} ${HOME/a/b} ${#HOME} ${HOME:1:2} ${@:2} ${!BASH*}",
        "ls -la | cat",
        "test -n x && echo yes",
        "[ -v HOME ] && echo set",
        "echo ${BASH_VERSINFO[0]} ${BASH_VERSINFO[@]}",
        "true; : ok",
    ],
)
def test_plain_commands_are_still_allowed(command: str) -> None:
    """Failing closed must not make an allow rule useless: literal forms it can judge pass."""
    assert _allow_side(command) is Decision.ALLOW


def test_anything_the_analysis_does_not_know_is_unknown() -> None:
    """Node kinds, expansion operators and options it does not follow are unknown parts."""
    odd = ["echo ${x@P}", "env --frobnicate touch x", "command -x touch", "sudo --weird ls", "bash --debugger"]
    for command in odd:
        assert any(part.unknown for part in syntax.parse(command)), command


@pytest.mark.e2e  # runs the real bash
def test_differential_against_bash(tmp_path: Path) -> None:
    """Every form really runs `touch pwned` in bash (so the tests above test something), and none
    that does is allowed by the allow rule or by yolo under the deny rule."""
    ran: list[str] = []
    for index, (case, command) in enumerate([*EVALUATED, *HIDDEN]):
        root = tmp_path / str(index)
        root.mkdir()
        run_bash(command, root)
        if (root / "pwned").exists():
            ran.append(case)
            assert _allow_side(command) is not Decision.ALLOW, case
            assert _deny_side(command) is not Decision.ALLOW, case
    missing = [case for case, _ in [*EVALUATED, *HIDDEN] if case not in ran]
    assert missing == []


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


E2E = ["issue-form", "read+arithmetic-expansion", "for-loop+indirection", "printf-v+test-eq", "positional+nameref"]
E2E_HIDDEN = [
    "env-percent-assignment",
    "env-function",
    "bash-env-substitution",
    "rcfile",
    "fd0-herestring",
    "ps4-declare",
    "bash-cmds",
    "jobs-x",
]


@pytest.mark.e2e  # runs the real bash
@pytest.mark.anyio
@pytest.mark.parametrize("case", E2E)
async def test_e2e_an_allowed_echo_runs_nothing_unasked(workspace: Path, case: str) -> None:
    [command] = [c for name, c in EVALUATED if name == case]
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return "deny"

    policy = Policy.default().with_toml(ALLOW_HARMLESS)
    async with ToolRuntime(workspace, policy=policy, ask=ask) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", SHELL, {"command": command})])
    assert outcome.is_error
    assert len(asked) == 1
    assert not (workspace / "pwned").exists()


@pytest.mark.e2e  # runs the real bash
@pytest.mark.anyio
@pytest.mark.parametrize("case", E2E_HIDDEN)
async def test_e2e_yolo_under_a_deny_rule_runs_nothing(workspace: Path, case: str) -> None:
    [command] = [c for name, c in HIDDEN if name == case]
    policy = Policy.default().with_toml(DENY_TOUCH)
    async with ToolRuntime(workspace, approval_mode="yolo", policy=policy) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", SHELL, {"command": command})])
    assert outcome.is_error
    assert outcome.decision is not None
    assert outcome.decision.decision == "deny"
    assert not (workspace / "pwned").exists()
