"""Red team round 13: attacks by a model that read unified's code, on the shell command's reading (the policy's
and the read-only judge's), the file tools' confinement and the secrets. Each hole found is a test that failed
before its fix; attacks that held are pinned as `test_held_...`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from unified.tools import Decision, Policy, ToolCall, ToolRuntime, _shell_syntax
from unified.tools._protected import shell_protected
from unified.tools._read_only import not_read_only

# --- the read-only judge (codex runs what it and Codex's parse call reads unasked) ------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "sed -n -l 1p '1e touch pwned' a",  # sed takes `1p` as -l's number (atoi) and runs the script `1e ...`
        "sed -n -l 1p 'w .bashrc' a",
        "sed -n --line-length 1p '1e touch pwned' a",
        "sed -n --line 1p '1e touch pwned' a",  # getopt takes an unambiguous prefix of a long option
    ],
)
def test_a_sed_script_hidden_behind_an_options_value_is_not_a_read(command: str) -> None:
    """The judge took the first word without a dash for the script; `-l` takes the next word as its value, so
    the script sed runs was the word after (GNU sed 4.9 ran `1e touch pwned`)."""
    why = not_read_only(command)
    assert why is not None
    assert "script" in why


@pytest.mark.parametrize("command", ["sed -n -l 5 1p a", "sed -n -l5 1p a", "sed -n --line-length=5 '$p' a"])
def test_a_print_script_after_a_line_length_is_still_a_read(command: str) -> None:
    assert not_read_only(command) is None


# --- the shell command's reading: builtins' options as bash's getopt reads them ----------------------------------

DENY_RM = Policy.default().with_toml(
    '[[rule]]\nname = "no-rm"\ntoolName = "run_shell_command"\ncommandPrefix = "rm"\ndecision = "deny"\n'
)


@pytest.mark.parametrize(
    "command",
    [
        "jobs -x -- rm -rf victim",  # bash's getopt ends the options at `--`; the parse ran `--` as the command
        "jobs -xl rm -rf victim",  # `-x` in a cluster
        "jobs -x -r rm -rf victim",  # more options after `-x`
    ],
)
def test_jobs_x_runs_its_command_in_every_spelling_of_its_options(command: str) -> None:
    """bash 5.2 ran `touch` under each form (measured); yolo allowed them past a deny rule for rm."""
    verdict = DENY_RM.evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision is Decision.DENY
    assert verdict.rule is not None
    assert verdict.rule.name == "no-rm"


@pytest.mark.parametrize(
    "command",
    [
        "wait -np 'a[$(rm -rf victim)]'",  # `-p NAME` in a cluster: bash sets the name and evaluates its index
        "wait -fnp 'a[$(rm -rf victim)]'",
        "wait -p'a[$(rm -rf victim)]'",
        "printf -v a -v 'b[$(rm -rf victim)]' x",  # the last `-v` wins; the parse read the first
        "printf -vz -v 'b[$(rm -rf victim)]' x",
    ],
)
def test_a_variable_a_builtins_clustered_or_repeated_option_names_is_judged(command: str) -> None:
    """bash 5.2 ran the index's command substitution for the unattached and repeated forms (measured with
    `touch`); the parse saw no variable set, so yolo allowed them past a deny rule for rm. Now asked."""
    verdict = DENY_RM.evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision is Decision.ASK_USER
    assert "run time" in (verdict.doubt or "")


@pytest.mark.parametrize("command", ["wait -n", "wait -p pid -n", "jobs -l", "printf -v x %s y", "printf -- -v y"])
def test_plain_waits_jobs_and_printfs_stay_allowed_in_yolo(command: str) -> None:
    assert DENY_RM.evaluate("run_shell_command", {"command": command}, "yolo").decision is Decision.ALLOW


@pytest.mark.parametrize("command", ["hash -rp /bin/rm ls; ls victim", "hash -p/bin/rm ls; ls victim"])
def test_hash_p_in_a_cluster_or_attached_is_not_passed_by(command: str) -> None:
    """`hash -p PATH NAME` makes NAME run PATH: bash 5.2 deleted `victim` under both forms (measured), which the
    parse, looking for the word `-p` alone, let yolo allow past a deny rule for rm. Now asked."""
    verdict = DENY_RM.evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision is Decision.ASK_USER
    assert "run time" in (verdict.doubt or "")


@pytest.mark.parametrize(
    "command",
    [
        "set -k; bash -c true BASH_ENV=/dev/stdin <<< 'rm -rf victim'",
        "set -o keyword; bash -c true BASH_ENV=/dev/stdin <<< 'rm -rf victim'",
        "set -ek; bash -c true BASH_ENV=/dev/stdin <<< 'rm -rf victim'",
        "shopt -os keyword; bash -c true BASH_ENV=/dev/stdin <<< 'rm -rf victim'",
        "bash -kc 'bash -c true BASH_ENV=/dev/stdin' <<< 'rm -rf victim'",
        "bash -o keyword -c 'bash -c true BASH_ENV=/dev/stdin' <<< 'rm -rf victim'",
    ],
)
def test_keyword_mode_which_makes_a_later_word_a_variable_is_not_passed_by(command: str) -> None:
    """In keyword mode a `NAME=value` word after the command name goes into its environment: bash 5.2 deleted
    `victim` under each form (measured with `rm -f`), through a `BASH_ENV` the parse never saw set, and yolo
    allowed it past a deny rule for rm. Now the mode is a part only known at run time: asked."""
    verdict = DENY_RM.evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision is Decision.ASK_USER
    assert "run time" in (verdict.doubt or "")


@pytest.mark.parametrize("command", ["set -euo pipefail; ls", "set +k; ls", "set -- -k", "bash -e -o pipefail -c ls"])
def test_other_shell_options_stay_allowed_in_yolo(command: str) -> None:
    assert DENY_RM.evaluate("run_shell_command", {"command": command}, "yolo").decision is Decision.ALLOW


# --- protected paths: more files that make a later command, login or boot run a program --------------------------


@pytest.mark.parametrize(
    "target",
    [
        ".hgrc",  # Mercurial: `[hooks] pre-status = cmd` runs at the next `hg status`
        ".config/hg/hgrc",
        ".jj/repo/config.toml",  # Jujutsu: `ui.pager`, diff tools
        ".jjconfig.toml",
        ".config/jj/config.toml",
        ".local/share/systemd/user/evil.service",  # a user unit, as under .config/systemd/user
        "/etc/sysctl.d/99-x.conf",  # kernel.core_pattern = |/ws/evil, applied at boot
        "/etc/sysctl.conf",
        "/etc/tmpfiles.d/x.conf",  # files and links made as root at boot
        "/etc/binfmt.d/x.conf",  # an interpreter the kernel runs for a file type
        "/etc/anacrontab",
        "/run/systemd/system/x.service",
    ],
)
def test_a_copy_onto_a_file_that_runs_programs_later_is_a_protected_write(tmp_path: Path, target: str) -> None:
    """Each was written unasked under an allow rule for `cp` (no pattern named it)."""
    (tmp_path / "a").write_text("x")
    parts = _shell_syntax.parse(f"cp a {target}")
    assert shell_protected(parts, tmp_path, [tmp_path], "/usr/bin:/bin") is not None


# --- a rule's argsPattern and a path spelled through a link -------------------------------------------------------

DENY_SECRETS = Policy.default().with_toml(
    '[[rule]]\nname = "no-secrets"\ntoolName = "*"\nargsPattern = "secrets/"\ndecision = "deny"\n'
)


def _linked_workspace(root: Path) -> Path:
    """A workspace whose `docs/l` leads to its `secrets` (a repository may hold such a link)."""
    (root / "secrets").mkdir()
    (root / "secrets" / "key").write_text("TOPSECRET")
    (root / "docs").mkdir()
    os.symlink("../secrets", root / "docs" / "l")
    os.symlink("secrets/key", root / "k")
    return root


@pytest.mark.anyio
@pytest.mark.parametrize("spelling", ["docs/l/key", "k", "{root}/docs/l/key"])
async def test_a_deny_rule_for_a_path_holds_through_a_link_in_the_workspace(tmp_path: Path, spelling: str) -> None:
    """`read_file docs/l/key` read `secrets/key`: the rule's pattern matched the text, not the path the tool
    reached through the link. Now the rules are also read against that path."""
    root = _linked_workspace(tmp_path)
    async with ToolRuntime(root, policy=DENY_SECRETS) as runtime:
        [outcome] = await runtime.run_batch([ToolCall("c1", "read_file", {"file_path": spelling.format(root=root)})])
    assert "TOPSECRET" not in json.dumps(outcome.response)
    assert outcome.decision is not None
    assert (outcome.decision.decision, outcome.decision.rule) == ("deny", "no-secrets")


@pytest.mark.anyio
async def test_an_allow_rule_for_a_folder_does_not_cover_a_link_leading_out_of_it(tmp_path: Path) -> None:
    root = _linked_workspace(tmp_path)
    policy = Policy.default().with_toml(
        '[[rule]]\nname = "docs"\ntoolName = "write_file"\nargsPattern = \'"file_path": "docs/\'\ndecision = "allow"\n'
    )
    async with ToolRuntime(root, policy=policy) as runtime:
        [linked, plain] = await runtime.run_batch(
            [
                ToolCall("c1", "write_file", {"file_path": "docs/l/key", "content": "x"}),
                ToolCall("c2", "write_file", {"file_path": "docs/new.md", "content": "x"}),
            ]
        )
    assert linked.decision is not None
    assert plain.decision is not None
    assert linked.decision.decision == "deny"  # asked, and nobody can answer
    assert "nobody can answer" in (linked.decision.reason or "")
    assert (root / "secrets" / "key").read_text() == "TOPSECRET"
    assert (plain.decision.decision, plain.decision.rule) == ("allow", "docs")


DENY_RM_AND_PUSH = Policy.default().with_toml(
    '[[rule]]\nname = "no"\ntoolName = "run_shell_command"\ncommandPrefix = ["rm", "git push"]\ndecision = "deny"\n'
)


@pytest.mark.parametrize(
    "command",
    [
        "nice -5 git push",  # nice's old numeric option
        "sudo --preserve-env=X git push",
        "env -vi rm x",
        "find . -name x -o -exec rm {} \\;",  # -exec after an -o
        "bash -cx 'rm x'",
        "exec -cl rm x",
        "watch -x rm x",
        "$'\\u0072m' x",  # a \u escape in $'..'
        "git pu\\\nsh",  # a line continuation inside the subcommand
        "time -o f rm x",
        "command -p -- rm x",
        "flock -E 3 x rm x",
        "coproc X { git push; }",
        "trap -- 'git push' EXIT",
    ],
)
def test_held_wrapper_and_quoting_spellings_a_yolo_deny_rule_still_denies(command: str) -> None:
    """HELD (round 13's probes of option spellings the parse might misread): each is denied by the rule."""
    verdict = DENY_RM_AND_PUSH.evaluate("run_shell_command", {"command": command}, "yolo")
    assert verdict.decision is Decision.DENY


@pytest.mark.parametrize(
    "command",
    [
        "gh alias set x '!rm -rf ~'",  # ~/.config/gh/config.yml: the next `gh x` runs it
        "gh config set pager 'sh -c evil'",
        "gh auth setup-git",  # ~/.gitconfig's credential helper
        "mise use node@20",  # mise.toml
        "asdf set python system",  # .tool-versions
        "conda config --add channels http://evil",  # .condarc
        "direnv allow",  # the workspace's .envrc runs at the user's next cd
        "systemctl --user enable evil.service",  # ~/.config/systemd/user/*.wants
        "sysctl -w kernel.core_pattern='|/ws/evil'",
        "sysctl kernel.core_pattern='|/ws/evil'",
        "update-alternatives --install /usr/local/bin/x x ./y 1",
        "chsh -s /ws/evil",
        "useradd -o -u 0 x",
    ],
)
def test_a_subcommand_that_writes_a_protected_file_it_does_not_name_is_a_protected_write(
    tmp_path: Path, command: str
) -> None:
    """Each writes a protected path (`.config/gh/**`, `mise.toml`, `.tool-versions`, `.condarc`, ...) or what a
    login, a boot or the next `cd` runs, without naming it: an allow rule for the program let it run unasked."""
    assert shell_protected(_shell_syntax.parse(command), tmp_path, [tmp_path], "/usr/bin:/bin") is not None


@pytest.mark.parametrize(
    "command",
    [
        "gh pr list",
        "gh pr view 12",
        "mise ls",
        "asdf current",
        "conda list",
        "direnv status",
        "systemctl status x",
        "sysctl -n kernel.core_pattern",
        "update-alternatives --display editor",
    ],
)
def test_their_forms_that_read_are_not_protected_writes(tmp_path: Path, command: str) -> None:
    assert shell_protected(_shell_syntax.parse(command), tmp_path, [tmp_path], "/usr/bin:/bin") is None


# --- the read-only judge: a file a redirection reads -----------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "path"),
    [
        ("head a - < /root/.codex/auth.json", "/root/.codex/auth.json"),  # `-`: standard input, the key file
        ("cat < /etc/shadow", "/etc/shadow"),
        ("cat a; head 0</etc/shadow", "/etc/shadow"),
        ("{ cat; } < /etc/shadow", "/etc/shadow"),
        ("wc -l < /etc/shadow | head -n 1", "/etc/shadow"),
    ],
)
def test_a_file_a_redirection_reads_is_a_path_the_read_only_check_judges(command: str, path: str) -> None:
    """The words the outside-workspace check judges held no redirection: `head a - < ~/.codex/auth.json` is a
    read by unified's parse, and only `a` was checked against the workspace, so wherever Codex's parse called it a
    read naming `a`, the key file was read unasked. Now each file a redirection reads is among the words."""
    from unified._adapters.codex._approvals import _read_paths

    assert not_read_only(command) is None
    assert path in _read_paths({"command": command, "cwd": "/ws"}, "/ws")


def test_heredocs_here_strings_and_descriptor_copies_name_no_file() -> None:
    from unified.tools._read_only import operands

    assert operands("wc -l <<< x; cat <<EOF\nx\nEOF\ncat 3<&0 < <(ls) 2>/dev/null") == []
