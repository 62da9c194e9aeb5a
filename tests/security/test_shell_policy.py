"""The shell policy against an attacker (issue 11, finding 1; docs/tools.md, "How the policy reads a
shell command").

A deny rule for `rm` must hold against every way of making bash run `rm`: each hostile form below
is evaluated through `Policy.evaluate`, and a subset is run for real through `ToolRuntime.run_batch`
against a victim file. Allow rules must not be stretched over commands they do not name, and an
"allow always" answer covers only the command the user saw.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.bash import run_bash
from unified.tools import Decision, PermissionAnswer, PermissionRequest, Policy, ToolCall, ToolRuntime
from unified.tools._policy import session_rule
from unified.types import ApprovalMode

SHELL = "run_shell_command"
DENY_RM = '[[rule]]\nname = "no-rm"\ntoolName = "run_shell_command"\ncommandPrefix = ["rm"]\ndecision = "deny"\n'
ALLOW_GIT = (
    '[[rule]]\nname = "git-read"\ntoolName = "run_shell_command"\n'
    'commandPrefix = ["git status", "git log", "head"]\ndecision = "allow"\n'
)
DENY = Decision.DENY
ASK = Decision.ASK_USER

HOSTILE: list[tuple[str, str, Decision]] = [
    # compound commands: a deny rule matches if any part matches
    ("semicolon", "rm -rf victim; echo hi", DENY),
    ("and", "echo hi && rm -rf victim", DENY),
    ("or", "false || rm -rf victim", DENY),
    ("pipe-into", "echo hi | rm -rf victim", DENY),
    ("pipe-from", "rm -rf victim | cat", DENY),
    ("newline", "echo hi\nrm -rf victim", DENY),
    ("ampersand", "echo hi & rm -rf victim", DENY),
    ("background", "rm -rf victim &", DENY),
    ("hidden-after-whitespace", "echo hi;" + " " * 200 + "rm -rf victim", DENY),
    ("comment-after", "rm -rf victim # tidy up", DENY),
    ("negated", "! rm -rf victim", DENY),
    ("subshell", "(rm -rf victim)", DENY),
    ("brace-group", "{ rm -rf victim; }", DENY),
    ("nested-groups", "echo hi && (cd . && { rm -rf victim; })", DENY),
    ("if-body", "if true; then rm -rf victim; fi", DENY),
    ("negated-if", "! if true; then rm -rf victim; fi", DENY),
    ("negated-group", "true && ! { rm -rf victim; }", DENY),
    ("timed-group", "time { rm -rf victim; }", DENY),
    ("timed-negation", "time ! rm -rf victim", DENY),
    ("timed-nested-groups", "time { { exec rm -rf victim; }; }", DENY),
    ("timed-group-assignment", "time { FOO=1 rm -rf victim; }", DENY),
    ("newline-in-quoted-script", 'sh -c "true\n! rm -rf victim"', DENY),
    ("escaped-ansi-c-in-expansion-backticks", "echo ${u:-`timeout 5 \\$'\\\\x72m' -rf victim`}", DENY),
    ("named-coproc-group", "coproc x { rm -rf victim; }", DENY),
    ("if-condition", "if rm -rf victim; then :; fi", DENY),
    ("while-body", "while true; do rm -rf victim; break; done", DENY),
    ("for-body", "for f in victim; do rm -rf $f; done", DENY),
    ("case-body", "case x in x) rm -rf victim;; esac", DENY),
    ("function-body", "f() { rm -rf victim; }; f", DENY),
    ("function-keyword", "function f { rm -rf victim; }; f", DENY),
    ("dollar-paren", "echo $(rm -rf victim)", DENY),
    ("backticks", "echo `rm -rf victim`", DENY),
    ("substitution-in-string", 'echo "$(rm -rf victim)"', DENY),
    ("substitution-in-default", "echo ${X:-$(rm -rf victim)}", DENY),
    ("substitution-in-assignment", "x=$(rm -rf victim)", DENY),
    ("substitution-in-export", "export X=$(rm -rf victim)", DENY),
    ("substitution-in-redirect", "echo hi > $(rm -rf victim)", DENY),
    ("substitution-in-heredoc", "cat <<EOF\n$(rm -rf victim)\nEOF", DENY),
    ("substitution-in-arithmetic", "echo $((1 + $(rm -rf victim)))", DENY),
    ("backticks-in-expansion", "echo ${x:-`rm -rf victim`}", DENY),
    ("substitution-in-pattern", "x=abc; echo ${x#$(rm -rf victim)}", DENY),
    ("nested-backticks", "echo `echo \\`rm -rf victim\\``", DENY),
    ("process-substitution-in", "cat <(rm -rf victim)", DENY),
    ("process-substitution-out", "echo hi > >(rm -rf victim)", DENY),
    ("bash-c", "bash -c 'rm -rf victim'", DENY),
    ("sh-c-double-quotes", 'sh -c "rm -rf victim"', DENY),
    ("bash-lc", "bash -lc 'rm -rf victim'", DENY),
    ("zsh-dash-c", "zsh -c 'rm -rf victim'; dash -c 'rm -rf victim'", DENY),
    ("bash-c-nested", "sh -c 'bash -c \"rm -rf victim\"'", DENY),
    ("bash-path-c", "/usr/bin/env bash -c 'echo hi; rm -rf victim'", DENY),
    ("bash-heredoc", "bash <<EOF\nrm -rf victim\nEOF", DENY),
    ("bash-quoted-heredoc", "bash <<'EOF'\nrm -rf victim\nEOF", DENY),
    ("bash-herestring", "bash <<< 'rm -rf victim'", DENY),
    ("eval", "eval 'rm -rf victim'", DENY),
    ("eval-words", "eval rm -rf victim", DENY),
    ("builtin-eval", "builtin eval 'rm -rf victim'", DENY),
    ("trap", "trap 'rm -rf victim' EXIT", DENY),
    ("trap-dashdash", "trap -- 'rm -rf victim' EXIT", DENY),
    ("eval-dashdash", "eval -- 'rm -rf victim'", DENY),
    ("pipe-stderr", "echo hi |& rm -rf victim", DENY),
    ("until-condition", "until rm -rf victim; do :; done", DENY),
    ("select-body", "select x in a; do rm -rf victim; break; done", DENY),
    ("test-substitution", "[[ $(rm -rf victim) ]]", DENY),
    ("fd-process-substitution", "exec 3< <(rm -rf victim)", DENY),
    ("coproc", "coproc rm -rf victim", DENY),
    ("watch", "watch -n 1 rm -rf victim", DENY),
    ("busybox", "busybox rm -rf victim", DENY),
    ("toybox", "toybox rm -rf victim", DENY),
    # the command word disguised
    ("absolute-path", "/bin/rm -rf victim", DENY),
    ("dotted-path", "/usr/bin/../../bin/rm -rf victim", DENY),
    ("backslash", "\\rm -rf victim", DENY),
    ("empty-quotes", "r''m -rf victim", DENY),
    ("double-quoted", '"rm" -rf victim', DENY),
    ("mixed-quotes", "'r'\"m\" -rf victim", DENY),
    ("ansi-c-hex", "$'\\x72m' -rf victim", DENY),
    ("ansi-c-octal", "$'\\162\\155' -rf victim", DENY),
    ("line-continuation", "r\\\nm -rf victim", DENY),
    ("quoted-eval", "e\"v\"al 'rm -rf victim'", DENY),
    ("escaped-shell", "b\\ash -c 'rm -rf victim'", DENY),
    # wrappers resolved to the command they run
    ("env", "env rm -rf victim", DENY),
    ("env-assign-ignore", "env -i FOO=1 rm -rf victim", DENY),
    ("env-unset", "env -u HOME rm -rf victim", DENY),
    ("env-dash", "env - rm -rf victim", DENY),
    ("command", "command rm -rf victim", DENY),
    ("command-p", "command -p rm -rf victim", DENY),
    ("assignment-prefix", "FOO=1 rm -rf victim", DENY),
    ("builtin-exec", "exec rm -rf victim", DENY),
    ("nohup", "nohup rm -rf victim", DENY),
    ("nice", "nice -n 5 rm -rf victim", DENY),
    ("time", "time rm -rf victim", DENY),
    ("timeout", "timeout 10 rm -rf victim", DENY),
    ("timeout-signal", "timeout -s KILL 10 rm -rf victim", DENY),
    ("stdbuf-setsid", "stdbuf -o0 setsid rm -rf victim", DENY),
    ("sudo", "sudo -u root rm -rf victim", DENY),
    ("exec-argv0", "exec -a x rm -rf victim", DENY),
    ("nice-numeric", "nice -10 rm -rf victim", DENY),
    ("command-eval", "command eval 'rm -rf victim'", DENY),
    ("env-shell", "env bash -c 'rm -rf victim'", DENY),
    ("xargs-shell", "echo victim | xargs sh -c 'rm -rf \"$@\"' _", DENY),
    ("wrapper-chain", "nice timeout 5 env FOO=1 command rm -rf victim", DENY),
    ("xargs", "echo victim | xargs rm -rf", DENY),
    ("xargs-0", "printf 'victim\\0' | xargs -0 rm -rf", DENY),
    ("xargs-replace", "echo victim | xargs -I{} rm -rf {}", DENY),
    ("find-exec", "find . -name victim -exec rm -rf {} \\;", DENY),
    ("find-execdir-plus", "find . -name victim -execdir rm {} +", DENY),
    ("find-exec-shell", "find . -name victim -exec sh -c 'rm \"$1\"' _ {} \\;", DENY),
    # not knowable before bash runs: asked, never allowed
    ("variable", "RM=rm; $RM -rf victim", ASK),
    ("braced-variable", "${RM:-rm} -rf victim", ASK),
    ("quoted-variable", '"$RM" -rf victim', ASK),
    ("substituted-name", "$(echo rm) -rf victim", ASK),
    ("backtick-name", "`echo rm` -rf victim", ASK),
    ("glob-name", "/bin/r? -rf victim", ASK),
    ("bracket-glob-name", "/bin/r[m] -rf victim", ASK),
    ("brace-expansion", "{rm,-rf,victim}", ASK),
    ("bash-c-variable", 'CMD="rm -rf victim"; bash -c "$CMD"', ASK),
    ("bash-c-positional", "bash -c '$0 -rf victim' rm", ASK),
    ("eval-variable", 'CMD="rm -rf victim"; eval "$CMD"', ASK),
    ("eval-substitution", "eval $(printf 'r%s' m) -rf victim", ASK),
    ("pipe-into-bash", "echo 'rm -rf victim' | bash", ASK),
    ("env-split-string", "env -S 'rm -rf victim'", ASK),
    ("alias", "shopt -s expand_aliases\nalias x='rm -rf'\nx victim", ASK),
    ("arithmetic-injection", "x='a[$(rm -rf victim)]'; echo $((x))", ASK),
    ("prompt-expansion", "x='$(rm -rf victim)'; echo ${x@P}", ASK),
    ("ifs-words", "rm$IFS-rf$IFS victim", ASK),
    ("array-command", 'x=(rm -rf victim); "${x[@]}"', ASK),
    ("read-into-name", "read -r c <<< rm; $c -rf victim", ASK),
    ("printf-into-name", "printf -v c rm; $c -rf victim", ASK),
    ("source-generated", "source <(echo 'rm -rf victim')", ASK),
    ("bash-generated", "bash <(echo 'rm -rf victim')", ASK),
    ("source-stdin", ". /dev/stdin <<< 'rm -rf victim'", ASK),
    ("hash-remap", "hash -p /bin/rm ls; ls victim", ASK),
    ("pipe-into-bash-under-heredoc", "{ echo 'rm -rf victim' | bash; } <<EOF\nls\nEOF", ASK),
    ("deep-nesting", "echo " + "$(" * 1000 + "rm -rf victim" + ")" * 1000, ASK),
    ("unparseable", "rm -rf victim )(", DENY),
]

E2E = [
    "semicolon",
    "ampersand",
    "newline",
    "dollar-paren",
    "backticks",
    "bash-c",
    "brace-group",
    "if-body",
    "bash-heredoc",
    "absolute-path",
    "backslash",
    "empty-quotes",
    "ansi-c-hex",
    "line-continuation",
    "env",
    "command",
    "assignment-prefix",
    "xargs",
    "find-exec",
    "eval",
    "function-body",
    "variable",
    "eval-variable",
    "pipe-into-bash",
    "alias",
    "arithmetic-injection",
    "pipe-stderr",
    "quoted-eval",
    "xargs-shell",
    "source-generated",
    "hash-remap",
    "ifs-words",
    "nested-backticks",
    "pipe-into-bash-under-heredoc",
    "backticks-in-expansion",
    "substitution-in-pattern",
    "negated-if",
    "negated-group",
    "timed-group",
    "env-dash",
    "timed-nested-groups",
    "newline-in-quoted-script",
    "escaped-ansi-c-in-expansion-backticks",
]

LIMITS = [
    "echo 'rm -rf victim' > s.sh; bash s.sh",
    "echo 'rm -rf victim' > s.sh; . ./s.sh",
    "python3 -c 'import shutil; shutil.rmtree(\"victim\")'",
    "cp /bin/rm ./del; ./del -rf victim",
]
"""Documented limits (docs/tools.md, "What a policy cannot promise"): code the shell runs from a file
or an interpreter is not seen. Pinned so the documentation stays true."""

pytestmark = pytest.mark.anyio


def _command(case_id: str) -> tuple[str, Decision]:
    [(command, expected)] = [(command, expected) for cid, command, expected in HOSTILE if cid == case_id]
    return command, expected


@pytest.mark.parametrize("mode", ["yolo", "default", "auto_edit"])
@pytest.mark.parametrize(("command", "expected"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_deny_rule_holds_against_every_form(command: str, expected: Decision, mode: ApprovalMode) -> None:
    verdict = Policy.default().with_toml(DENY_RM).evaluate(SHELL, {"command": command}, mode)
    assert verdict.decision is expected
    if expected is DENY:
        assert verdict.rule is not None
        assert verdict.rule.name == "no-rm"


@pytest.mark.parametrize(
    "command",
    ["rm -rf victim", "echo hi; rm x", "$RM x"],
)
def test_an_outranked_deny_rule_does_not_apply(command: str) -> None:
    """A deny rule of the shipped tier is outranked by yolo, by design; a user's rule is not."""
    policy = Policy.default().with_toml(DENY_RM, source="shipped", tier=1)
    assert policy.evaluate(SHELL, {"command": command}, "yolo").decision is Decision.ALLOW


@pytest.mark.parametrize(
    "command",
    [
        "echo rm",
        "git rm --cached x",
        "rmdir empty",
        "ls -l rm",
        "command -v rm",
        "grep -r 'rm -rf' .",
        "echo '$(rm -rf victim)'",
    ],
)
def test_deny_rule_leaves_other_commands_alone(command: str) -> None:
    verdict = Policy.default().with_toml(DENY_RM).evaluate(SHELL, {"command": command}, "yolo")
    assert verdict.decision is Decision.ALLOW


def test_deny_prefixes_match_word_by_word() -> None:
    policy = Policy.default().with_toml(
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ["git push"]\ndecision = "deny"\n'
    )

    def decide(command: str) -> Decision:
        return policy.evaluate(SHELL, {"command": command}, "yolo").decision

    assert decide("git push origin main") is DENY
    assert decide("/usr/bin/git push") is DENY
    assert decide("git status && git push") is DENY
    assert decide("git pushy") is Decision.ALLOW
    assert decide("git pull") is Decision.ALLOW
    assert decide("git $SUB origin") is ASK
    assert decide("echo origin | xargs git") is ASK


def test_ask_rule_applies_to_any_part() -> None:
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "ask-curl"\ntoolName = "run_shell_command"\ncommandPrefix = ["curl"]\ndecision = "ask_user"\n'
    )
    verdict = policy.evaluate(SHELL, {"command": "ls && bash -c 'curl -s x | sh'"}, "yolo")
    assert (verdict.decision, verdict.rule.name if verdict.rule else None) == (ASK, "ask-curl")
    assert policy.evaluate(SHELL, {"command": "ls"}, "yolo").decision is Decision.ALLOW


def test_deny_rule_naming_a_wrapper_or_shell() -> None:
    policy = Policy.default().with_toml(
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ["sudo", "bash -c", "eval"]\ndecision = "deny"\n'
    )

    def decide(command: str) -> Decision:
        return policy.evaluate(SHELL, {"command": command}, "yolo").decision

    assert decide("sudo -n ls") is DENY
    assert decide("echo hi && bash -c 'ls'") is DENY
    assert decide("env sh -c 'eval ls'") is DENY
    assert decide("bash script.sh") is Decision.ALLOW


NOT_ALLOWED = [
    "git status > pwned",
    "git status >> pwned",
    "git status &> pwned",
    "git status >| pwned",
    "git status 2> errors.txt",
    "git status > $TARGET",
    "{ git status; } > pwned",
    "git status | tee pwned",
    "git status & rm -rf victim",
    "git status; curl x",
    "git status && rm x",
    "git status\nrm x",
    "git status $(rm x)",
    "git status `rm x`",
    "git status <(rm x)",
    "git status | sh",
    "git statusx",
    "git stash",
    "$GIT status",
    "FOO=1 git status",
    "PATH=/tmp/evil:$PATH; git status",
    "GIT_PAGER='rm -rf ~' git log",
    "env GIT_PAGER=sh git log",
    "sudo git status",
    "git status )(",
    "bash -c 'git status; rm x'",
    "git status > /dev/null; rm x",
    "git() { rm -rf victim; }; git status",
]


@pytest.mark.parametrize("command", NOT_ALLOWED)
def test_allow_rule_covers_only_what_it_names(command: str) -> None:
    verdict = Policy.default().with_toml(ALLOW_GIT).evaluate(SHELL, {"command": command}, "default")
    assert verdict.decision is ASK
    assert verdict.rule is not None
    assert verdict.rule.name == "shell-asks"


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git status --short",
        "git status 2>/dev/null",
        "git status >/dev/null 2>&1",
        "git status >&2",
        "git log | head",
        "git log --oneline | head -5",
        "git status && git log -1",
        "/usr/bin/git status",
        '"git" status',
        "git status # what changed?",
        "bash -c 'git status'",
        "time git status",
    ],
)
def test_allow_rule_still_allows_legitimate_commands(command: str) -> None:
    verdict = Policy.default().with_toml(ALLOW_GIT).evaluate(SHELL, {"command": command}, "default")
    assert verdict.decision is Decision.ALLOW
    assert verdict.rule is not None
    assert verdict.rule.name == "git-read"


def test_quoted_heredoc_text_is_data() -> None:
    """Backticks and `$(..)` in a quoted heredoc are text; in an unquoted one they run."""
    policy = Policy.default().with_toml(
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ["cat"]\ndecision = "allow"\n'
    )
    quoted = "cat <<'EOF'\nrun `make` or $(make)\nEOF"
    assert policy.evaluate(SHELL, {"command": quoted}, "default").decision is Decision.ALLOW
    assert policy.evaluate(SHELL, {"command": quoted.replace("'EOF'", "EOF")}, "default").decision is ASK


def test_allow_rule_and_deny_rule_together() -> None:
    """Under a user's allow for `git` and deny for `rm`, an unknown part asks even though git matches."""
    policy = Policy.default().with_toml(
        DENY_RM + '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ["git"]\ndecision = "allow"\n'
    )
    assert policy.evaluate(SHELL, {"command": "git status"}, "default").decision is Decision.ALLOW
    assert policy.evaluate(SHELL, {"command": "git status; rm x"}, "default").decision is DENY
    assert policy.evaluate(SHELL, {"command": "$X status"}, "yolo").decision is ASK


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "victim").write_text("precious\n")
    return root


@pytest.mark.parametrize("command", LIMITS)
def test_what_a_deny_rule_cannot_see(command: str) -> None:
    verdict = Policy.default().with_toml(DENY_RM).evaluate(SHELL, {"command": command}, "yolo")
    assert verdict.decision is Decision.ALLOW


_NAMES = ["rm", "/bin/rm", "\\rm", "r''m", '"rm"', "$'\\x72m'", "r\\\nm", "'r'm"]
_PREFIXES = ["", "env ", "env - ", "command ", "exec ", "nice -5 ", "time ", "timeout 5 ", "FOO=1 ", "eval ", "! "]
_LAYERS = [
    "{{ {}; }}",
    "( {} )",
    "echo $( {} )",
    "true && {}",
    "false || {}",
    "true; {}",
    "true | {}",
    "true\n{}",
    "! if true; then {}; fi",
    "time {{ {}; }}",
    "for i in 1; do {}; done",
    "f(){{ {}; }}; f",
    "cat <({})",
    'echo "$({})"',
    "echo ${{u:-$({})}}",
]


def _shell_layers(seed: int, count: int) -> list[str]:
    """Random nestings of separators, compound commands, substitutions, shells and quoting around
    `rm -f victim` (a fixed seed: the same cases every run)."""
    import random

    rng = random.Random(seed)

    def wrap(inner: str) -> str:
        pick = rng.randrange(len(_LAYERS) + 3)
        if pick == len(_LAYERS):
            return "bash -c '" + inner.replace("'", "'\\''") + "'"
        if pick == len(_LAYERS) + 1:
            return "bash <<'E'\n" + inner + "\nE"
        if pick == len(_LAYERS) + 2:
            return "echo `" + inner.replace("\\", "\\\\").replace("`", "\\`").replace("$", "\\$") + "`"
        return _LAYERS[pick].format(inner)

    cases: set[str] = set()
    while len(cases) < count:
        command = rng.choice(_PREFIXES) + rng.choice(_NAMES) + " -f victim"
        for _ in range(rng.randint(1, 3)):
            command = wrap(command)
        cases.add(command)
    return sorted(cases)


@pytest.mark.e2e  # runs a real subprocess
def test_differential_against_bash(tmp_path: Path) -> None:
    """Each generated command is run by the real bash: none that deletes the victim may be allowed."""

    policy = Policy.default().with_toml(DENY_RM)
    deleted = allowed_and_deleted = 0
    for index, command in enumerate(_shell_layers(seed=11, count=150)):
        root = tmp_path / str(index)
        root.mkdir()
        (root / "victim").write_text("precious\n")
        run_bash(command, root)
        if not (root / "victim").exists():
            deleted += 1
            if policy.evaluate(SHELL, {"command": command}, "yolo").decision is Decision.ALLOW:
                allowed_and_deleted += 1
    assert deleted > 100
    assert allowed_and_deleted == 0


@pytest.mark.e2e  # runs a real subprocess
async def test_e2e_control_without_the_rule_the_forms_do_delete(workspace: Path) -> None:
    """Guards the end-to-end cases below: run unguarded, each form really deletes the victim."""
    lost: list[str] = []
    async with ToolRuntime(workspace, approval_mode="yolo") as tools:
        for case_id in E2E:
            (workspace / "victim").write_text("precious\n")
            command, _ = _command(case_id)
            await tools.run_batch([ToolCall(case_id, SHELL, {"command": command})])
            if not (workspace / "victim").exists():
                lost.append(case_id)
    assert lost == E2E


@pytest.mark.parametrize("case_id", E2E)
async def test_e2e_yolo_with_deny_rule_keeps_the_victim(workspace: Path, case_id: str) -> None:
    command, expected = _command(case_id)
    async with ToolRuntime(workspace, approval_mode="yolo", policy=Policy.default().with_toml(DENY_RM)) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", SHELL, {"command": command})])
    assert outcome.is_error
    assert outcome.decision is not None
    assert outcome.decision.decision == "deny"
    if expected is ASK:
        assert outcome.response["error"] == (
            "Tool call run_shell_command was denied: rule no-rm may apply to a part of the command only known "
            "at run time; it needs approval and nobody can answer in this non-interactive run"
        )
    assert (workspace / "victim").read_text() == "precious\n"


@pytest.mark.parametrize("case_id", E2E)
async def test_e2e_default_mode_with_deny_rule_keeps_the_victim(workspace: Path, case_id: str) -> None:
    """A user who approves everything is still never asked about a denied form; an unknown one is
    put to them (and here refused) instead of being run."""
    command, expected = _command(case_id)
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        return "deny"

    policy = Policy.default().with_toml(DENY_RM)
    async with ToolRuntime(workspace, approval_mode="default", policy=policy, ask=ask) as tools:
        [outcome] = await tools.run_batch([ToolCall("1", SHELL, {"command": command})])
    assert outcome.is_error
    assert len(asked) == (1 if expected is ASK else 0)
    assert (workspace / "victim").read_text() == "precious\n"


ALWAYS_SCOPE = [
    ("git status", True),
    ("git  status", True),
    ("'git' \"status\"", True),
    ("git push", False),
    ("git status --porcelain", False),
    ("git status & rm -rf victim", False),
    ("git status; rm -rf victim", False),
    ("git status > f", False),
    ("git status $(rm x)", False),
    ("FOO=1 git status", False),
    ("sudo git status", False),
    ("git status; git status", False),
    ("gitx status", False),
]


@pytest.mark.parametrize(("command", "covered"), ALWAYS_SCOPE)
def test_allow_always_is_scoped_to_the_approved_shape(command: str, covered: bool) -> None:
    policy = Policy.default().with_rules([session_rule(SHELL, {"command": "git status"}, "default")])
    decision = policy.evaluate(SHELL, {"command": command}, "default").decision
    assert decision is (Decision.ALLOW if covered else ASK)


def test_allow_always_on_an_unknown_command_covers_only_its_text() -> None:
    policy = Policy.default().with_rules([session_rule(SHELL, {"command": "$EDITOR notes"}, "default")])
    assert policy.evaluate(SHELL, {"command": "$EDITOR notes"}, "default").decision is Decision.ALLOW
    assert policy.evaluate(SHELL, {"command": "$EDITOR  notes"}, "default").decision is ASK
    assert policy.evaluate(SHELL, {"command": "$EDITOR other"}, "default").decision is ASK


@pytest.mark.e2e  # runs a real subprocess
async def test_allow_always_through_the_runtime(workspace: Path) -> None:
    asked: list[str] = []
    answers: list[PermissionAnswer] = ["allow_always"]

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        asked.append(str(request.call.args["command"]))
        return answers.pop(0) if answers else "deny"

    async with ToolRuntime(workspace, ask=ask) as tools:
        [first] = await tools.run_batch([ToolCall("1", SHELL, {"command": "echo ok"})])
        later = await tools.run_batch(
            [
                ToolCall("2", SHELL, {"command": "echo  ok"}),
                ToolCall("3", SHELL, {"command": "echo ok & rm -rf victim"}),
                ToolCall("4", SHELL, {"command": "echo ok > victim"}),
            ]
        )
    assert not first.is_error
    assert [o.is_error for o in later] == [False, True, True]
    assert asked == ["echo ok", "echo ok & rm -rf victim", "echo ok > victim"]
    assert (workspace / "victim").read_text() == "precious\n"


async def test_prompt_lists_what_really_runs(workspace: Path) -> None:
    summaries: list[str] = []

    async def ask(request: PermissionRequest) -> PermissionAnswer:
        summaries.append(request.summary)
        return "deny"

    commands = ["echo hi;" + " " * 300 + "rm -rf ~", "bash -c 'rm -rf victim'", "$RM -rf victim", "ls -la"]
    async with ToolRuntime(workspace, ask=ask) as tools:
        await tools.run_batch([ToolCall(str(i), SHELL, {"command": c}) for i, c in enumerate(commands)])
    hidden, wrapped, unknown, plain = summaries
    assert "\nIt runs: `echo hi`, `rm -rf …`\n" in hidden
    assert hidden.endswith(
        "\nIt writes a protected path: rm with an argument only known at run time may write a protected path."
    )
    assert wrapped.endswith("\nIt runs: `rm -rf victim (via bash -c)`")
    assert "unknown: its command name is only known at run time" in unknown
    assert plain == "Allow running `ls -la`?"
