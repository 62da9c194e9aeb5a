"""Red team, round 19: the holes round 18 left open in the index of protected links, in `find -exec` and `xargs`, and
in git's reads of the tracked tree.

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- past `LINK_SCAN_MAX_ENTRIES` workspace entries the index of protected links (`deep_protected_targets`) is not
  known (None), and a write to what only a distant protected link leads to goes unasked: a chosen limit, pinned
  (asking every write there took every edit from a workspace with a large node_modules; docs/tools.md);
- `find docs -exec cat {} \\;` (and `-ok`) under a rule for `find` and `cat` read `docs/n -> ~/.netrc`: find's
  trees were searched without following links, but the program it runs opens one (`_Scope.runs_found`);
- `echo ~/.netrc | xargs cat` and `find docs | xargs cat` ran under such a rule: the names xargs appends are only
  known at run time, as `cat $(...)`'s are (asked since round 18); now they are asked too when credential files
  exist (`_unread_reason`, `SimpleCommand.open_tail`);
- `git grep`, `git add -A`, `git commit -a`, `git stash` read a hard link to `~/.netrc` in the tree unasked (after
  `git add -A`, `git show` and `git diff --cached` print it): they are tree readers of the workspace now
  (`_protected._GIT_TREE_VERBS`). What git already holds (a blob committed before) is not judged: docs/tools.md;
- (section 4, new) `zip -r` and `diff -rN` follow links unless told not to, and `tar -chf`, `ugrep -rS` follow them
  by a letter in a cluster: each read `docs/n -> ~/.netrc`; a reader following links never entered a linked folder
  (`d2/s -> ~` under `grep -R`); `git -C ../home grep` read another work tree's tracked `~/.netrc`.

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from unified.tools import Policy, ToolCall, ToolRuntime, _protected
from unified.tools._protected import linked_from_protected, shell_protected
from unified.tools._shell_syntax import parse

pytestmark = [pytest.mark.anyio]

_RULES = Policy.default().with_toml(
    '[[rule]]\ntoolName = "run_shell_command"\n'
    'commandPrefix = ["cat", "find", "xargs", "git", "grep", "echo", "ls"]\ndecision = "allow"\n'
)
"""A caller who lets commands that read run unasked."""
_MORE = (
    '[[rule]]\ntoolName = "run_shell_command"\n'
    'commandPrefix = ["zip", "diff", "tar", "ugrep", "rsync", "rg"]\ndecision = "allow"\n'
)
"""More readers of whole trees, added to `_RULES`."""


def _workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with `~/.netrc`, and a workspace with a symbolic link (`docs/n`) and a hard link (`hl/n`) to it."""
    home = tmp_path / "h"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home / ".netrc").write_text("machine x login u password SECRETPASSWORD123\n")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("print(1)\n")
    (ws / "docs").mkdir()
    (ws / "docs" / "n").symlink_to(home / ".netrc")
    (ws / "hl").mkdir()
    os.link(home / ".netrc", ws / "hl" / "n")
    return ws


async def _decide(ws: Path, command: str) -> tuple[str, str]:
    async with ToolRuntime(ws, policy=_RULES) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
    return decision.decision, str(decision.reason)


# 1. the index of protected links past its bound


def _nested_hook(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "a" / "b" / ".git" / "hooks").mkdir(parents=True)
    (ws / "scripts").mkdir()
    (ws / "scripts" / "x").write_text("#!/bin/sh\n")
    (ws / "a" / "b" / ".git" / "hooks" / "x").symlink_to("../../../../scripts/x")
    for index in range(30):
        (ws / "a" / f"f{index}").write_text("")
    return ws


async def test_past_the_index_bound_a_write_is_judged_by_the_search_beside_it_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pin of a chosen limit (docs/tools.md): past `LINK_SCAN_MAX_ENTRIES` the index is not known and not used, so a
    write of a file only a distant protected link leads to is not asked; a link beside the written file still is.
    Asking every write there (round 19's first fix) took every edit from a workspace with a large node_modules."""
    ws = _nested_hook(tmp_path)
    monkeypatch.setattr(_protected, "LINK_SCAN_MAX_ENTRIES", 20)
    monkeypatch.setattr(_protected, "_deep_cache", {})
    assert _protected.deep_protected_targets([ws]) is None
    assert linked_from_protected((ws / "scripts" / "x").resolve(), [ws]) is None
    async with ToolRuntime(ws, approval_mode="auto_edit") as tools:
        [outcome] = await tools.run_batch([ToolCall("1", "write_file", {"file_path": "scripts/y", "content": "y\n"})])
    assert not outcome.is_error, outcome.response
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/x")
    monkeypatch.setattr(_protected, "_deep_cache", {})
    assert "pre-commit" in str(linked_from_protected((ws / "scripts" / "x").resolve(), [ws]))


def test_under_the_index_bound_a_plain_write_stays_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: under the bound the index answers, and a file no protected link leads to is written unasked."""
    ws = _nested_hook(tmp_path)
    monkeypatch.setattr(_protected, "_deep_cache", {})
    index = _protected.deep_protected_targets([ws])
    assert index == {(ws / "scripts" / "x").resolve(): "a/b/.git/hooks/x"}
    assert shell_protected(parse("echo x > scripts/y"), ws, [ws]) is None
    assert "deeper in the workspace" in str(shell_protected(parse("echo x > scripts/x"), ws, [ws]))


# 2. programs find and xargs run on names found at run time


@pytest.mark.parametrize(
    "command",
    [
        "find docs -exec cat {} \\;",
        "find docs -exec cat {} +",
        "find docs -ok cat {} \\;",
        "find docs -type l -exec grep -H . {} +",
        "find docs | xargs cat",
        "find docs -print0 | xargs -0 cat",
        "echo ~/.netrc | xargs cat",
        "echo docs | xargs -I{} cat {}/n",
    ],
)
async def test_a_program_run_on_names_found_at_run_time_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before (allowed by the caller's rule, and `cat` printed `~/.netrc`): find's trees were searched
    without following links though the program it runs opens `docs/n`, and the names xargs appends were not judged."""
    ws = _workspace(tmp_path, monkeypatch)
    decision, reason = await _decide(ws, command)
    assert decision != "allow", reason
    assert ".netrc" in reason, reason


@pytest.mark.parametrize(
    "command",
    ["find src -exec cat {} +", "find docs -name x", "find src -type f", "ls | xargs echo", "cat src/a.py"],
)
async def test_find_and_xargs_without_a_credential_file_in_reach_stay_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Pin: `find src -exec cat` with no link to a credential file in `src`, a find that only lists names (its
    output a name, not the file), and xargs running a program that opens no file stay under the caller's rule."""
    ws = _workspace(tmp_path, monkeypatch)
    decision, reason = await _decide(ws, command)
    assert decision == "allow", reason


async def test_xargs_without_credential_files_stays_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pin: with no credential file on the machine, `find src | xargs cat` stays under the caller's rule."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    decision, reason = await _decide(ws, "find src | xargs cat")
    assert decision == "allow", reason


# 3. git reading the tracked tree whole


@pytest.mark.parametrize(
    "command",
    ["git grep SECRET", "git -C src grep SECRET", "git add -A", "git add .", "git commit -am x", "git stash"],
)
async def test_git_reading_the_tree_through_a_hard_link_to_a_credential_file_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before: `git grep` printed `hl/n` (a hard link to `~/.netrc`) once tracked, and `git add -A` /
    `git commit -a` / `git stash` copied it into objects `git show` prints, under a rule for `git`."""
    ws = _workspace(tmp_path, monkeypatch)
    decision, reason = await _decide(ws, command)
    assert decision != "allow", reason
    assert "hl/n" in reason, reason


@pytest.mark.parametrize("command", ["git grep foo", "git add -A", "git status", "git log -p"])
async def test_git_without_a_hard_linked_credential_file_stays_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Pin: with `~/.netrc` having no other name, git's tree verbs search nothing and stay under the rule."""
    home = tmp_path / "h"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    (home / ".netrc").write_text("machine x\n")
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    decision, reason = await _decide(ws, command)
    assert decision == "allow", reason


@pytest.mark.parametrize("command", ["git show :hl/n", "git cat-file -p HEAD:hl/n", "git diff --no-index hl x"])
async def test_git_naming_the_hard_link_is_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """Pin: git naming the hard link in a revision's path (`:hl/n`) was asked before this round and still is."""
    ws = _workspace(tmp_path, monkeypatch)
    decision, reason = await _decide(ws, command)
    assert decision != "allow", reason


# 4. new attacks (round 19)


@pytest.mark.parametrize(
    "command",
    [
        "zip -r x.zip docs",
        "diff -rN docs src",
        "tar -chf x.tar docs",
        "ugrep -rS x docs",
    ],
)
async def test_a_tree_reader_that_follows_links_by_default_or_in_a_cluster_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before (allowed by a rule, `~/.netrc` stored or printed): `zip -r` stores and `diff -rN` prints what
    `docs/n` leads to unless told not to, and `tar -chf`'s `h` and `ugrep -rS`'s `S` (in a cluster) follow links;
    only `-h`, `-L` and a cluster's `R` were known (`_follows`)."""
    ws = _workspace(tmp_path, monkeypatch)
    async with ToolRuntime(ws, policy=_RULES.with_toml(_MORE)) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
    assert decision.decision != "allow", decision.reason
    assert "docs/n" in str(decision.reason), decision.reason


@pytest.mark.parametrize("command", ["zip -r x.zip src", "tar -cf x.tar docs", "diff -r src src", "ugrep -r x docs"])
async def test_a_tree_reader_that_keeps_links_or_reaches_none_stays_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Pin: `tar -cf` and `ugrep -r` store or skip the link, and `src` holds none: the rule applies."""
    ws = _workspace(tmp_path, monkeypatch)
    async with ToolRuntime(ws, policy=_RULES.with_toml(_MORE)) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
    assert decision.decision == "allow", decision.reason


@pytest.mark.parametrize(
    "command",
    ["git -C ../h grep machine", "git --work-tree=../h add -A", "git --work-tree ../h grep x", "git -C ../h stage -A"],
)
async def test_git_reading_another_work_tree_holding_a_credential_file_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before: a dotfiles repository in the home directory (`git -C ../h grep machine`) printed a tracked
    `~/.netrc` under a rule for `git`; git's tree verbs read the directory `-C` or `--work-tree` names too."""
    ws = _workspace(tmp_path, monkeypatch)
    (ws / "hl" / "n").unlink()
    decision, reason = await _decide(ws, command)
    assert decision != "allow", reason
    assert ".netrc" in reason, reason


@pytest.mark.parametrize(
    "command", ["grep -R x d2", "rg -L x d2", "find -L d2 -name x", "zip -r x.zip d2", "tar -chf x.tar d2"]
)
async def test_a_followed_link_to_a_folder_holding_a_credential_file_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """SUCCEEDED before: `d2/s -> ~` under a reader that follows links (`grep -R`, `zip -r`) read `~/.netrc`: the
    search of the tree compared files only and never entered a linked folder (`_tree_credential`)."""
    ws = _workspace(tmp_path, monkeypatch)
    (ws / "d2").mkdir()
    (ws / "d2" / "s").symlink_to(tmp_path / "h")
    async with ToolRuntime(ws, policy=_RULES.with_toml(_MORE)) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
    assert decision.decision != "allow", decision.reason
    assert "d2/s, a link to a folder holding the credential file" in str(decision.reason), decision.reason


@pytest.mark.parametrize("command", ["grep -R x d2", "grep -r x d3", "tar -cf x.tar d3"])
async def test_a_link_cycle_or_an_unfollowed_link_stays_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Pin: a folder linking to itself is searched once, not until the bound; a link to the home directory that the
    reader does not follow (`grep -r`, `tar -c`) stays under the rule."""
    ws = _workspace(tmp_path, monkeypatch)
    (ws / "d2" / "sub").mkdir(parents=True)
    (ws / "d2" / "sub" / "loop").symlink_to("..")
    (ws / "d3").mkdir()
    (ws / "d3" / "s").symlink_to(tmp_path / "h")
    async with ToolRuntime(ws, policy=_RULES.with_toml(_MORE)) as tools:
        decision = await tools.decide(ToolCall("1", "run_shell_command", {"command": command}))
    assert decision.decision == "allow", decision.reason
