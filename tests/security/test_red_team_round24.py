"""Red team, round 24: runners the shell reader did not follow, and what a hostile repository's config makes git
run: in a repository below the command's directory, at `git archive`, at a terminal.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- runners read as the command itself, so a deny rule for `rm` did not hold under a broader allow rule:
  `corepack pnpm exec rm x` (and `corepack npx`, `corepack yarn@4 dlx`), `aws-vault exec PROFILE [--] rm x`,
  `dotenv [-e FILE] [--] rm x` (dotenv-cli) and `dotenv [-f FILE] run rm x` (python-dotenv), `dotenvx run [...] --
  rm x`, `scl enable COLLECTION 'rm x'` (its last word a shell script) and `scl COLLECTION -- rm x`. Now each is a
  runner (`_shell_syntax._runner` and its kin): its own part keeps its words, the command it runs is `covered`;
- `ssh localhost rm x` (its words after the host are a script the host's shell runs), `perf stat|record rm x`,
  `nq rm x`, `dbus-run-session -- rm x`: the same, now read as runners;
- a runner's command whose first word is an option (`mise exec -- -- rm x`, `uv run -- -- rm x`) was read as a
  command named `--` (the runtime asked for both already: each is an input writer); the runner's own parser may
  take it for its `--` or an option's value: now unknown to the policy too;
- a repository below the command's directory ran its own drivers (round 23's were overridden for the enclosing
  repository only): `git -C sub diff`, `cd sub && git diff`, a nested `.git` file whose `gitdir:` leads elsewhere,
  and `git --git-dir=x --work-tree=. diff` (a bare repository's shape) ran `diff.external` or a textconv of theirs,
  through unified's shell and a binary's child alike (real git 2.39). Now `_git_drivers.overrides` walks the
  directories below (`NESTED_ENTRIES_MAX` entries) for them;
- `tar.<format>.command` ran at `git archive --format=<format>` (git's own `tar.gz` too), and `pager.<command>` at a
  git command writing to a terminal in a binary's child (`core.pager=cat` does not outrank it): now `gzip -cn` and
  `false`;
- a repository's `post-index-change` hook (in `.git/hooks`, or a folder its `core.hooksPath` names) ran at `git
  status` and `git describe --dirty`, which write the index they refresh: now such a repository gets
  `core.hooksPath=/dev/null`;
- `git ls-remote` and `git remote show origin`, reads Claude Code runs unasked, ran what the repository names to
  reach a remote: a local remote's `uploadpack`, `core.sshCommand`, `core.gitProxy`, an `ext::` URL it allows
  (`protocol.ext.allow`, `protocol.allow`, through `url.*.insteadOf` too). Now git refuses those transports or
  runs its own `ssh`; `core.askPass` and `credential.helper` are emptied for such a repository too;
- a NUL byte in an include's path, a `.git` file's `gitdir:` or a `commondir` raised `ValueError`: every command in
  that workspace failed to start.

Measured and held (pins): `cargo run`, `go run|test -exec`, `git -c alias.x='!cmd'`, `ssh -o ProxyCommand`, `scp -S`,
`rsync -e`, `tmux`, `at` are input writers (`protected_paths.toml`), asked under any allow rule; bash's readings
that differ from a plain word's (here-strings, `${x:-$(..)}`, `$(( a[$(..)] ))`, `${x@P}`, brace expansion with a
substitution, process substitution, functions, aliases, `BASH_ENV`/`ENV`/`PS4`/`IFS`/`PATH`/`LD_PRELOAD`/
`NODE_OPTIONS`/`PYTHONSTARTUP`/`PERL5OPT` prefixes, `./ls`, `git -C ..`, `--git-dir`) are asked; a repository's
`alias.status = !cmd` never shadows `git status`. Not fixed: the other hooks (a commit's) and
editors (writes, asked).

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.security.test_red_team_round21 import DENY_RM, SHELL
from tests.security.test_red_team_round23 import _environment, _git, _repository, _run
from unified import _git_drivers
from unified.tools import Policy, ToolCall, ToolRuntime
from unified.tools._shell_syntax import parse


def _deny_rm(command: str) -> str:
    return Policy.default().with_toml(DENY_RM).evaluate(SHELL, {"command": command}, "default").decision


def _allowing(prefix: str) -> Policy:
    text = f'[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "{prefix}"\ndecision = "allow"\npriority = 100\n'
    return Policy.default().with_toml(text)


# 1. runners


@pytest.mark.unit
@pytest.mark.parametrize(
    "command",
    [
        "corepack pnpm exec rm x",
        "corepack npx rm x",
        "corepack yarn@4.1.0 dlx rm x",
        "corepack pnpm@9 dlx rm x",
        "aws-vault exec prof -- rm x",
        "aws-vault exec prof rm x",
        "aws-vault exec --duration 1h -n prof -- rm x",
        "dotenv -e .env -- rm x",
        "dotenv -- rm x",
        "dotenv rm x",
        "dotenv -f .env run rm x",
        "dotenv run --override rm x",
        "dotenvx run -- rm x",
        "dotenvx run -f .env -- rm x",
        "scl enable devtoolset-9 'rm x'",
        "scl enable devtoolset-9 rh-git 'ls; rm x'",
        "scl enable devtoolset-9 -- rm x",
        "sudo -u bob corepack npx rm x",
    ],
)
def test_a_deny_rule_holds_through_these_runners(command: str) -> None:
    """SUCCEEDED before: the runner was the command, `rm` one of its operands, and the blanket allow ran it."""
    assert _deny_rm(command) == "deny", command


@pytest.mark.unit
@pytest.mark.parametrize(
    "command",
    [
        "mise exec -- -- rm x",
        "uv run -- -- rm x",
        "dotenvx run -f .env rm x",
        "dotenv --unknown rm x",
        "corepack $PM rm x",
    ],
)
def test_a_command_these_run_that_the_reader_does_not_follow_is_asked(command: str) -> None:
    """SUCCEEDED before (policy): allowed under the blanket allow beside the deny rule (`mise exec -- -- rm x` a
    command the reader saw named `--`, `dotenvx run` without `--` and an option dotenv does not have words the
    reader does not follow); now the command they run is unknown: asked."""
    assert _deny_rm(command) == "ask_user", command


@pytest.mark.unit
@pytest.mark.parametrize(
    "command",
    [
        "ssh localhost rm x",
        "ssh -p 22 -t localhost 'ls; rm x'",
        "perf stat rm x",
        "perf record -- rm x",
        "nq rm x",
        "dbus-run-session -- rm x",
    ],
)
def test_a_deny_rule_holds_through_a_remote_shell_and_other_runners(command: str) -> None:
    """SUCCEEDED before: allowed beside the deny rule. ssh's words after the host are a script its shell runs (on
    this machine for `localhost`); `perf stat|record`, `nq`, `dbus-run-session` run the rest of their words."""
    assert _deny_rm(command) == "deny", command


@pytest.mark.unit
@pytest.mark.anyio
@pytest.mark.parametrize(
    "command",
    [
        "cargo run",
        "cargo test --config 'target.x.runner=\"rm\"'",
        "go run ./cmd/rm x",
        "go test -exec rm ./...",
        "git -c alias.x='!rm x' x",
        "git -c core.pager='rm x' log",
        "git --config-env=core.pager=CMD log",
        "ssh -o ProxyCommand='rm x' host",
        "scp -S ./x a host:b",
        "rsync -avze 'rm x' a host:b",
        "tmux new -d 'rm x'",
        "at now <<< 'rm x'",
    ],
)
async def test_what_an_input_writer_runs_is_not_allowed_beside_the_deny_rule(tmp_path: Path, command: str) -> None:
    """Pins (each held before): a program these run that the words do not show as a command (a build, a `-c`
    setting, a local option, a session) is not judged by the reader but by `protected_paths.toml`'s input writers,
    which the runtime asks under any allow rule (denied here: nobody to ask)."""
    async with ToolRuntime(tmp_path, policy=Policy.default().with_toml(DENY_RM)) as runtime:
        decision = await runtime.decide(ToolCall("1", SHELL, {"command": command}))
    assert decision.decision == "deny", command


@pytest.mark.unit
@pytest.mark.parametrize(
    ("prefix", "command"),
    [
        ("ssh", "ssh -p 22 host uptime"),
        ("corepack pnpm", "corepack pnpm install"),
        ("dotenv", "dotenv -e .env -- npm test"),
        ("dotenvx run", "dotenvx run -- npm test"),
        ("aws-vault exec", "aws-vault exec prod -- terraform plan"),
        ("scl enable", "scl enable devtoolset-9 'make'"),
    ],
)
def test_an_allow_rule_naming_the_runner_still_covers_it(prefix: str, command: str) -> None:
    """The pin: the runner's own part keeps its words, so an allow rule naming it allows what it did before."""
    assert _allowing(prefix).evaluate(SHELL, {"command": command}, "default").decision == "allow", command


@pytest.mark.unit
@pytest.mark.parametrize(
    "command",
    ["corepack enable", "scl -l", "dotenv -p VAR", "ssh host", "perf report"],
)
def test_their_other_verbs_are_read_as_before(command: str) -> None:
    """The pin: a verb that runs no named command is allowed beside the deny rule, as before."""
    assert _deny_rm(command) == "allow", command


@pytest.mark.unit
def test_corepack_and_the_manager_it_runs_are_both_parts() -> None:
    """What the reader returns: corepack's words, pnpm's (covered, via corepack), then the command pnpm runs."""
    own, manager, inner = parse("corepack pnpm@9 exec rm x")
    assert own.words == ("corepack", "pnpm@9", "exec", "rm", "x")
    assert not own.covered
    assert (manager.words[:2], manager.covered) == (("pnpm", "exec"), True)
    assert (inner.words, inner.covered) == (("rm", "x"), True)


# 2. repositories below the command's directory


def _nested(ws: Path, marker: Path, how: str) -> str:
    """A clean workspace repository and, below it, a hostile one reached by `how`; the command that reaches it."""
    _repository(ws, attributes="")
    _git(ws, "checkout", "-q", "--", ".")
    sub = ws / "sub"
    _repository(sub, {"diff.external": f"touch {marker}; echo"})
    if how == "dot-git-file":
        os.rename(sub / ".git", ws / "hidden-git")
        (sub / ".git").write_text("gitdir: ../hidden-git\n")
    if how == "bare":
        os.rename(sub / ".git", ws / "x")
        return f"git --git-dir={ws / 'x'} --work-tree=sub diff"
    return {"cd": "cd sub && git diff", "-C": "git -C sub diff", "dot-git-file": "git -C sub diff"}[how]


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize("how", ["-C", "cd", "dot-git-file", "bare"])
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_a_nested_repository_runs_none_of_its_drivers(tmp_path: Path, how: str, who: str) -> None:
    """SUCCEEDED before: only the enclosing repository's config was read, so the nested one's `diff.external` ran
    (the marker made) at a `git diff` reaching it."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    command = _nested(ws, marker, how)
    _run(ws, command, _environment(who, ws, tmp_path))
    assert not marker.exists(), command


@pytest.mark.e2e  # runs git
def test_a_nested_repository_s_textconv_gives_the_file_as_it_is(tmp_path: Path) -> None:
    """SUCCEEDED before: `git -C sub diff` ran the nested repository's textconv. Now `cat`: the diff as it is."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, attributes="")
    (ws / "deep" / "er").mkdir(parents=True)
    _repository(ws / "deep" / "er" / "sub", {"diff.evil.textconv": f"touch {marker}; cat"})
    done = _run(ws, "git -C deep/er/sub diff", _environment("unified", ws, tmp_path))
    assert "+world" in done.stdout
    assert not marker.exists()


@pytest.mark.unit
def test_the_walk_below_follows_no_link_and_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pin: a link to a hostile repository elsewhere is not followed (following links could walk the whole
    disk), a repository below is found, and a tree larger than the bound stops the walk."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / ".git").mkdir(parents=True)
    (elsewhere / ".git" / "config").write_text('[diff "evil"]\n\ttextconv = x\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(elsewhere)
    assert _git_drivers.overrides(ws) == []
    (ws / "sub").mkdir()
    os.rename(elsewhere / ".git", ws / "sub" / ".git")
    assert _git_drivers.overrides(ws) == [("diff.evil.textconv", "cat")]
    for at in range(8):
        (ws / f"file{at}").write_text("")
    monkeypatch.setattr(_git_drivers, "NESTED_ENTRIES_MAX", 4)
    assert _git_drivers.overrides(ws) == []


@pytest.mark.e2e  # runs git
def test_git_in_a_workspace_with_an_ordinary_nested_repository_reads_as_before(tmp_path: Path) -> None:
    """The pin: nested repositories whose config names no driver add nothing, and `git -C sub diff` prints what it
    prints without our settings."""
    ws = tmp_path / "ws"
    _repository(ws, attributes="")
    _repository(ws / "sub", {"core.autocrlf": "false"}, attributes="*.txt text\n")
    assert _git_drivers.overrides(ws) == []
    plain = {"PATH": os.defpath, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)}
    before = _run(ws, "git -C sub diff", plain)
    now = _run(ws, "git -C sub diff", _environment("unified", ws, tmp_path))
    assert (now.returncode, now.stdout) == (before.returncode, before.stdout)
    assert "+world" in now.stdout


@pytest.mark.e2e  # runs git
def test_a_repository_alias_cannot_shadow_a_read(tmp_path: Path) -> None:
    """The pin: `alias.status = !cmd` in a hostile repository's config: git never lets an alias shadow its own
    command, so an allowed `git status` runs none (measured, git 2.39)."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, {"alias.status": f"!touch {marker}", "alias.diff": f"!touch {marker}"})
    for command in ("git status", "git diff"):
        _run(ws, command, _environment("binary", ws, tmp_path))
    assert not marker.exists()


# 3. more of a hostile repository's config: an archive format's command, a command's pager


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize("fmt", ["evil", "tar.gz"])
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_an_archive_format_command_of_the_repository_is_not_run(tmp_path: Path, fmt: str, who: str) -> None:
    """SUCCEEDED before: `tar.<format>.command` in the repository's config ran at `git archive --format=<format>`,
    git's own `tar.gz` too (the marker made). Now git's `gzip -cn`: a gzip archive."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, {f"tar.{fmt}.command": f"touch {marker}; cat"})
    done = subprocess.run(
        ["git", "archive", f"--format={fmt}", "HEAD"],
        cwd=ws,
        env={**_environment(who, ws, tmp_path), "GIT_CONFIG_NOSYSTEM": "1"},
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert done.stdout[:2] == b"\x1f\x8b"


@pytest.mark.e2e  # runs git in a terminal (script)
def test_a_command_pager_of_the_repository_does_not_run_at_a_terminal(tmp_path: Path) -> None:
    """SUCCEEDED before: `pager.log = <command>` in the repository's config ran when `git log` wrote to a terminal
    (Codex's `exec_command` with `tty`) in a binary's child: `core.pager=cat` on the command line does not outrank
    a command's own pager. Now `pager.log=false`."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, {"pager.log": f"touch {marker}; cat", "pager.show": f"touch {marker}; cat"})
    env = {**_environment("binary", ws, tmp_path), "GIT_CONFIG_NOSYSTEM": "1", "TERM": "xterm"}
    done = subprocess.run(
        ["script", "-qec", "git log -1; git show --stat", "/dev/null"], cwd=ws, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert "x" in done.stdout  # the commit's message, written to the terminal
    assert not marker.exists()


@pytest.mark.unit
def test_pager_keys_are_read_on_the_header_s_line_and_below(tmp_path: Path) -> None:
    """What is overridden: each key of a `[pager]` section, in git's forms, lowercased."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[pager] Log = a\n\tshow = b\n  cat-file\n[core]\n\tbare = false\n")
    assert _git_drivers.overrides(tmp_path) == [
        ("pager.log", "false"),
        ("pager.show", "false"),
        ("pager.cat-file", "false"),
    ]


# 4. parser differentials between the reader and bash (pins: each was asked or denied already)

_ALLOW_READS = "".join(
    f'[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "{prefix}"\ndecision = "allow"\npriority = 100\n'
    for prefix in ("ls", "echo", "cat", "git status", "node", "python", "perl")
)


@pytest.mark.unit
@pytest.mark.parametrize(
    "command",
    [
        "ls <<< $(touch x)",
        "ls ${x:-$(touch x)}",
        "ls $(( a[$(touch x)] ))",
        "ls $(( x ))",
        "echo $[ x ]",
        "echo ${x@P}",
        "echo ${x:1:$(touch y)}",
        "ls {$(touch x),b}",
        'ls $"$(touch x)"',
        "ls <(touch x)",
        "cat < <(touch x)",
        "echo ~$(touch x)",
        "f() { touch x; }; f",
        "alias ls=touch; ls x",
        "exec 3>x ls",
        "BASH_ENV=./x.sh ls",
        "ENV=./x.sh ls",
        "PS4='$(touch x)' ls",
        "IFS=/; ls",
        "PATH=.:$PATH ls",
        "LD_PRELOAD=./x.so ls",
        "NODE_OPTIONS='--require ./x.js' node -v",
        "PYTHONSTARTUP=./x.py python",
        "PERL5OPT=-Mx perl -e 1",
        "./ls",
        "git -C .. status",
        "git --git-dir=x status",
        "git -c core.fsmonitor=./x status",
    ],
)
def test_what_bash_reads_otherwise_is_asked_under_allow_rules_for_reads(command: str) -> None:
    """Pins: under allow rules for `ls`, `echo`, `cat`, `git status`, `node`, `python`, `perl`, each of these runs
    more than the allowed program (a substitution, a variable that carries code, a program of the workspace) and
    is asked or denied."""
    verdict = Policy.default().with_toml(_ALLOW_READS).evaluate(SHELL, {"command": command}, "default")
    assert verdict.decision in ("ask_user", "deny"), command


# 5. a hook that runs at a read


def _hooked(ws: Path, marker: Path, where: str) -> None:
    """A repository whose `post-index-change` hook (in `.git/hooks`, or a workspace folder its `core.hooksPath`
    names) makes the marker, with `a.txt`'s time changed so that git refreshes its index."""
    _repository(ws, {"core.hooksPath": "tools/h"} if where == "hooksPath" else None, attributes="")
    _git(ws, "checkout", "-q", "--", ".")
    folder = ws / "tools" / "h" if where == "hooksPath" else ws / ".git" / "hooks"
    folder.mkdir(parents=True, exist_ok=True)
    hook = folder / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    os.utime(ws / "a.txt", (1e9, 1e9))


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize("command", ["git status", "git describe --dirty --always"])
@pytest.mark.parametrize("where", ["hooksPath", "dot-git"])
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_a_repository_hook_does_not_run_at_a_read(tmp_path: Path, command: str, where: str, who: str) -> None:
    """SUCCEEDED before: `git status` and `git describe --dirty` write the refreshed index, and git runs the
    repository's `post-index-change` hook when it does (the marker made; `GIT_OPTIONAL_LOCKS=0` stops it at
    `status` only). Now such a repository gets `core.hooksPath=/dev/null`."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _hooked(ws, marker, where)
    done = _run(ws, command, _environment(who, ws, tmp_path))
    assert done.returncode == 0, done.stderr
    assert not marker.exists(), command


@pytest.mark.unit
def test_a_repository_with_other_hooks_keeps_them(tmp_path: Path) -> None:
    """The pin: hooks that run at a commit or a push only (`pre-commit`, husky's folder) are the repository's to
    keep (a commit is asked); only a `post-index-change` hook, which a read runs, turns hooks off."""
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n\thooksPath = .husky/_\n")
    (ws / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n")
    (ws / ".husky" / "_").mkdir(parents=True)
    (ws / ".husky" / "_" / "pre-push").write_text("#!/bin/sh\n")
    assert _git_drivers.overrides(ws) == []
    (ws / ".husky" / "_" / "post-index-change").write_text("#!/bin/sh\n")
    assert _git_drivers.overrides(ws) == [("core.hooksPath", "/dev/null")]


@pytest.mark.unit
@pytest.mark.parametrize("key", ["path", "hooksPath"])
def test_a_nul_in_a_config_path_is_passed_over(tmp_path: Path, key: str) -> None:
    """SUCCEEDED before (`path`): an include naming a file with a NUL byte in its name raised `ValueError` from the
    read of the config, so every command of unified's shell and every binary's start failed in that workspace. Now
    it is passed over as a missing file is; the repository's other drivers are still found."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_bytes(f'[core]\n\t{key} = a\0b\n[diff "evil"]\n\ttextconv = x\n'.encode())
    assert _git_drivers.overrides(tmp_path) == [("diff.evil.textconv", "cat")]


@pytest.mark.unit
@pytest.mark.parametrize("where", ["enclosing", "nested", "commondir"])
def test_a_nul_in_a_git_file_is_passed_over(tmp_path: Path, where: str) -> None:
    """SUCCEEDED before (`enclosing`; `nested` since the walk below): a `.git` file `gitdir: a<NUL>b` raised
    `ValueError`, so every command in that workspace failed to start. Now it is no repository; a `commondir` with a
    NUL is none either (the worktree's own folder is read)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    if where == "commondir":
        (tmp_path / "g").mkdir()
        (tmp_path / "g" / "commondir").write_bytes(b"a\0b\n")
        (tmp_path / "g" / "config.worktree").write_text('[diff "evil"]\n\ttextconv = x\n')
        (ws / ".git").write_text(f"gitdir: {tmp_path / 'g'}\n")
        assert _git_drivers.overrides(ws) == [("diff.evil.textconv", "cat")]
        return
    place = ws / "sub" if where == "nested" else ws
    place.mkdir(exist_ok=True)
    (place / ".git").write_bytes(b"gitdir: a\0b\n")
    assert _git_drivers.overrides(ws) == []


# 6. what a hostile repository's config runs to reach a remote


def _remote_config(name: str, marker: Path, tmp_path: Path) -> dict[str, str]:
    proxy = tmp_path / "proxy"
    proxy.write_text(f"#!/bin/sh\ntouch {marker}\n")
    proxy.chmod(0o755)
    return {
        "uploadpack": {"remote.origin.url": ".", "remote.origin.uploadpack": f"touch {marker}; git-upload-pack"},
        "sshCommand": {"remote.origin.url": "ssh://example.invalid/x", "core.sshCommand": f"touch {marker}; false"},
        "ext": {"remote.origin.url": f"ext::sh -c touch% {marker}", "protocol.ext.allow": "always"},
        "protocol.allow": {"remote.origin.url": f"ext::sh -c touch% {marker}", "protocol.allow": "always"},
        "insteadOf": {
            "remote.origin.url": "https://x.invalid/y",
            f"url.ext::sh -c touch% {marker}% .insteadOf": "https://x.invalid/",
            "protocol.ext.allow": "always",
        },
        "gitProxy": {"remote.origin.url": "git://example.invalid/x", "core.gitProxy": str(proxy)},
    }[name]


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize("name", ["uploadpack", "sshCommand", "ext", "protocol.allow", "insteadOf", "gitProxy"])
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_a_read_of_the_remote_runs_no_command_of_the_repository(tmp_path: Path, name: str, who: str) -> None:
    """SUCCEEDED before: Claude Code runs `git ls-remote` (no arguments) and `git remote show origin` unasked, as
    reads, and git ran the command the repository's config names to reach `origin` (the marker made). Now git
    refuses the transport or runs its own (`ssh`): the command fails, nothing of the repository's runs."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, _remote_config(name, marker, tmp_path), attributes="")
    env = _environment(who, ws, tmp_path)
    for command in ("git ls-remote", "git remote show origin"):
        _run(ws, f"timeout 60 {command}", env)
        assert not marker.exists(), command


@pytest.mark.unit
def test_the_remote_settings_of_a_repository(tmp_path: Path) -> None:
    """What is overridden, and the pin: a repository's ordinary remotes and branches add nothing."""
    (tmp_path / ".git").mkdir()
    config = tmp_path / ".git" / "config"
    config.write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://example.com/x\n\tfetch = +refs/heads/*:x\n'
        '[branch "main"]\n\tremote = origin\n'
    )
    assert _git_drivers.overrides(tmp_path) == []
    config.write_text(
        '[core]\n\tsshCommand = x\n\taskPass = y\n[credential]\n\thelper = !z\n[remote "o"]\n\tuploadpack = w\n'
    )
    assert dict(_git_drivers.overrides(tmp_path)) == {
        "core.sshCommand": "ssh",
        "core.askPass": "",
        "credential.helper": "",
        "protocol.file.allow": "never",
    }
