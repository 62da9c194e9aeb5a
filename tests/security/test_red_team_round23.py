"""Red team, round 23: a hostile repository's own `.git/config` (and `.gitattributes`) making an allowed git
command run code.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- `diff.external = <command>`: `git diff` ran it; `diff.<driver>.textconv` and `diff.<driver>.command` with a
  `.gitattributes` line `* diff=<driver>`: `git diff`, `git log -p`, `git show` ran them; `filter.<driver>.clean`,
  `.smudge`, `.process` with `* filter=<driver>`: `git diff`, `git add`, `git checkout` (and `git status`, for a
  file whose size did not change) ran them. Measured on git 2.39 through unified's own shell and the environment a
  binary's child gets, and on the real Codex, which ran them at a `git diff` in yolo mode (it asks for one
  otherwise). The names of a driver are the repository's, so no fixed setting stops them: now the config of the
  repository enclosing the command's directory (and the files it includes) is read for its `diff` and `filter`
  sections, and each driver's keys are
  overridden as command-line configuration (`_git_drivers.overrides`): textconv `cat`, the rest empty (a filter then
  copies the file as it is; an external diff command git cannot run: the diff fails instead).

- `gpg.program = <a program of the repository's files>` with `log.showSignature = true`: `git log` and `git show`
  ran it for a commit carrying a signature (any bytes in its `gpgsig` header: no key needed). Now a config with a
  `gpg` section gets git's default signature programs.

Not measured and left (docs/tools.md): `core.hooksPath` and the hooks, `merge.<driver>.driver`, `core.editor` run at
a commit or merge (writes, asked); `credential.helper`, `core.sshCommand`, `remote.<name>.uploadpack` and
`protocol.*` at a fetch or push (asked in every mode but yolo).
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from tests.hang_guard import HANG_GUARD_S
from unified import _git_drivers
from unified._adapters.claude_code._launch import claude_env
from unified._adapters.claude_code._options import claude_code_options
from unified._adapters.gemini_cli._launch import gemini_env
from unified._binary.environment import EnvPolicy, child_env
from unified.events import PermissionDecision
from unified.testing import FakeOpenAI, FunctionCall, ModelTurn
from unified.tools import ToolCall, ToolRuntime
from unified.tools._paths import Workspace
from unified.tools._shell import ShellConfig

pytestmark = [pytest.mark.anyio]

_GIT_ENV = {"PATH": os.defpath, "GIT_CONFIG_NOSYSTEM": "1"}


def _git(ws: Path, *args: str) -> None:
    env = {**_GIT_ENV, "HOME": str(ws.parent)}
    subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True, timeout=60)


def _repository(ws: Path, config: dict[str, str] | None = None, attributes: str = "* diff=evil filter=evil\n") -> None:
    """A repository with one commit of `a.txt`, changed since, whose own config holds `config` (unpacked with its
    `.git`: no model wrote it, so no protected path was asked) and whose `.gitattributes` names the drivers."""
    ws.mkdir()
    (ws / "a.txt").write_text("hello\n")
    _git(ws, "init", "-q", ".")
    _git(ws, "add", "a.txt")
    _git(ws, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x")
    for key, value in (config or {}).items():
        _git(ws, "config", key, value)
    (ws / ".gitattributes").write_text(attributes)
    (ws / "a.txt").write_text("hello\nworld\n")


def _run(ws: Path, command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", "-c", command], cwd=ws, env={**env, "GIT_CONFIG_NOSYSTEM": "1"}, capture_output=True, text=True
    )


def _environment(who: str, ws: Path, home: Path) -> dict[str, str]:
    if who == "binary":
        return child_env(EnvPolicy(allow=frozenset()), parent={"PATH": os.defpath}, home=home, cwd=ws)
    env = ShellConfig(workspace=Workspace(ws), env={"PATH": os.defpath}).environment(ws)
    return {**env, "HOME": str(home)}


# (config key, the command git runs, a git command that runs it, whether that command still succeeds)
VECTORS = [
    ("diff.external", "touch {marker}; echo", "git diff", False),
    ("diff.evil.textconv", "touch {marker}; cat", "git diff", True),
    ("diff.evil.textconv", "touch {marker}; cat", "git log -p -1", True),
    ("diff.evil.textconv", "touch {marker}; cat", "git show", True),
    ("diff.evil.command", "touch {marker}; echo", "git diff", False),
    ("filter.evil.clean", "touch {marker}; cat", "git add a.txt", True),
    ("filter.evil.clean", "touch {marker}; cat", "git diff", True),
    ("filter.evil.smudge", "touch {marker}; cat", "git checkout -- a.txt", True),
    ("filter.evil.process", "touch {marker}; exit 1", "git diff", True),
    ("filter.evil.process", "touch {marker}; exit 1", "git add a.txt", True),
]


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize(("key", "value", "command", "succeeds"), VECTORS)
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_a_git_read_in_a_hostile_repository_runs_none_of_its_diff_or_filter_commands(
    tmp_path: Path, key: str, value: str, command: str, succeeds: bool, who: str
) -> None:
    """SUCCEEDED before: git ran the command the repository's config names (the marker made). Now it runs none; a
    textconv or a filter gives the file as it is, an external diff command fails the diff."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, {key: value.format(marker=marker)})
    done = _run(ws, command, _environment(who, ws, tmp_path))
    assert not marker.exists(), (key, command)
    assert (done.returncode == 0) == succeeds, done.stderr
    if command == "git diff" and succeeds:
        assert "+world" in done.stdout


@pytest.mark.e2e  # runs git
def test_a_driver_in_an_included_file_or_of_an_odd_name_is_stopped_too(tmp_path: Path) -> None:
    """SUCCEEDED before: the driver's keys stand in a file the repository's config includes, in the old section form
    (`[diff.evil]`), or under a name with a quote in it."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, {"include.path": "../more.cfg"}, attributes="a.txt diff=evil filter=it's\n")
    (ws / "more.cfg").write_text(
        f"[diff.EVIL]\n\ttextconv = touch {marker}.textconv; cat\n"
        f'[filter "it\'s"]\n\tclean = touch {marker}.clean; cat\n'
    )
    env = _environment("binary", ws, tmp_path)
    assert _run(ws, "git diff && git add a.txt", env).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("marker")) == []


@pytest.mark.parametrize("where", ["included", "dot-git-file", "config"])
def test_a_fifo_in_the_repository_s_config_is_passed_over_not_waited_on(tmp_path: Path, where: str) -> None:
    """An include (or a `.git` file, or `.git/config` itself) that is a FIFO with no writer blocked the read of the
    repository's config for ever: every shell command's, and every binary's, start hung. Now it is no regular file,
    passed over (`_files.open_regular`); the repository's other drivers are still found."""
    ws = tmp_path / "ws"
    dot_git = ws / ".git"
    dot_git.mkdir(parents=True)
    (dot_git / "config").write_text('[include]\n\tpath = fifo\n[diff "evil"]\n\ttextconv = x\n')
    if where == "included":
        os.mkfifo(dot_git / "fifo")
    elif where == "config":
        (dot_git / "config").unlink()
        os.mkfifo(dot_git / "config")
    else:
        os.rename(dot_git, tmp_path / "real-git")
        os.mkfifo(ws / ".git")
    done: list[list[tuple[str, str]]] = []
    reader = threading.Thread(target=lambda: done.append(_git_drivers.overrides(ws)), daemon=True)
    reader.start()
    reader.join(HANG_GUARD_S)
    assert done, "the read of the repository's config hung on a FIFO"
    assert done[0] == ([("diff.evil.textconv", "cat")] if where == "included" else [])


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_a_driver_in_the_worktree_config_is_stopped_too(tmp_path: Path, who: str) -> None:
    """SUCCEEDED before: with `extensions.worktreeConfig`, git reads `.git/config.worktree` too."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, {"extensions.worktreeConfig": "true", "core.repositoryformatversion": "1"})
    (ws / ".git" / "config.worktree").write_text(f'[diff "evil"]\n\ttextconv = touch {marker}; cat\n')
    done = _run(ws, "git diff", _environment(who, ws, tmp_path))
    assert "+world" in done.stdout
    assert not marker.exists()


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize("command", ["git log -1", "git show", "git log -1 --format=%G?"])
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_a_signed_commit_in_a_hostile_repository_runs_none_of_its_programs(
    tmp_path: Path, command: str, who: str
) -> None:
    """SUCCEEDED before: the repository's `log.showSignature` and `gpg.program` (a script of its own) made `git log`
    and `git show` run the script for a commit whose `gpgsig` header holds any bytes."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws)
    script = ws / "sign.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    tree = subprocess.run(["git", "rev-parse", "HEAD^{tree}"], cwd=ws, capture_output=True, text=True, check=True)
    body = (
        f"tree {tree.stdout.strip()}\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    (tmp_path / "commit").write_text(body)
    made = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", str(tmp_path / "commit")], cwd=ws, capture_output=True, text=True
    )
    _git(ws, "update-ref", "HEAD", made.stdout.strip())
    _git(ws, "config", "log.showSignature", "true")
    _git(ws, "config", "gpg.program", str(script))
    done = _run(ws, command, _environment(who, ws, tmp_path))
    assert "signed" in done.stdout or command.endswith("%G?")
    assert not marker.exists(), command


@pytest.mark.e2e  # runs git
@pytest.mark.parametrize("who", ["binary", "unified"])
def test_git_in_an_ordinary_repository_reads_as_before(tmp_path: Path, who: str) -> None:
    """The pin: in a repository whose config names no driver, status, diff, log -p and show print what they print
    without our settings, and nothing is added to the settings."""
    ws = tmp_path / "ws"
    _repository(ws, {"core.autocrlf": "false"}, attributes="*.txt text\n")
    assert _git_drivers.overrides(ws) == []
    plain = {**_GIT_ENV, "HOME": str(tmp_path)}
    env = _environment(who, ws, tmp_path)
    for command in ("git status --short", "git diff", "git log -p", "git show --stat", "git diff --cached"):
        before, now = _run(ws, command, plain), _run(ws, command, env)
        assert (now.returncode, now.stdout) == (before.returncode, before.stdout), command
        assert before.returncode == 0


@pytest.mark.e2e  # runs git and bash
async def test_unifieds_shell_tool_runs_no_filter_of_a_hostile_repository(tmp_path: Path) -> None:
    """SUCCEEDED before: `git status --short; git diff` through `run_shell_command` ran the filter and textconv."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, {"filter.evil.process": f"touch {marker}; exit 1", "diff.evil.textconv": f"touch {marker}; cat"})
    async with ToolRuntime(ws, approval_mode="yolo") as runtime:
        [outcome] = await runtime.run_batch(
            [ToolCall("s", "run_shell_command", {"command": "git status --short; git diff"})]
        )
    assert "+world" in str(outcome.response)
    assert not marker.exists()


@pytest.mark.e2e  # runs codex and git
@pytest.mark.parametrize(
    ("key", "command"),
    [("diff.evil.textconv", "git diff"), ("diff.external", "git diff"), ("filter.evil.process", "git diff")],
)
async def test_codex_allowed_git_read_in_a_hostile_repository_runs_none_of_its_commands(
    tmp_path: Path, key: str, command: str
) -> None:
    """SUCCEEDED before: in yolo mode (a repository cloned to work on), Codex ran `git diff` and git
    ran the repository's textconv, external diff or filter process command (`git status` runs a filter only for a
    file whose size did not change). (Codex 0.171 asks for both in the other
    modes, and a user's allow rule does not answer its asks: only its `git grep`, which runs no driver, is read-only
    to it and to unified.)"""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    _repository(ws, {key: f"touch {marker}; cat"})
    calls = [FunctionCall(name="exec_command", args={"cmd": command})]
    async with FakeOpenAI([ModelTurn(function_calls=calls), ModelTurn(text="done")]) as server:
        events = await run_codex(server, ws, approval_mode="yolo")
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    assert decision.decision == "allow"
    assert not marker.exists()


@pytest.mark.parametrize("backend", ["gemini-cli", "claude-code"])
def test_every_binary_child_gets_the_overrides_of_its_runs_repository(tmp_path: Path, backend: str) -> None:
    """SUCCEEDED before: the Gemini CLI's and Claude Code's children got only the fixed settings, so their shell
    tools' `git diff` ran a hostile repository's textconv. Now each launch reads the run's repository."""
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / ".git" / "config").write_text('[diff "evil"]\n\ttextconv = touch /tmp/x; cat\n[filter "f"]\n\tclean = x\n')
    if backend == "gemini-cli":
        env = gemini_env({}, ws)
    else:
        env = claude_env(claude_code_options({}), tmp_path / "home", parent={}, cwd=ws)
    parameters = env["GIT_CONFIG_PARAMETERS"]
    assert "'diff.evil.textconv'='cat'" in parameters
    assert "'filter.f.clean'=''" in parameters
    assert "'core.fsmonitor'='false'" in parameters
