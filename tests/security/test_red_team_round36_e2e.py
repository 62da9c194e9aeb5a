"""Red team, round 36, with the real git: a bare repository written by write_file at the workspace root (see
test_red_team_round36.py for the unit cases).

SUCCEEDED before (fails on the code before its fix): in auto_edit, write_file wrote `config` (with `core.pager`),
`objects/.keep`, `refs/.keep` and `HEAD` at the workspace root unasked; git then took the root for a repository and
read that config, so the user's next `git branch`, `git diff` or `git grep` on a terminal ran the pager (measured with
git 2.39 under `script`: it did). Now the write that completes the repository is asked, and git finds none. And
`.gitconfig-shared`, which the repository's `.git/config` includes, was written unasked: the next `git status` ran its
`core.fsmonitor`. Now a file git's configuration includes is asked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from unified.tools import ToolCall, ToolRuntime

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PAGER = "touch pwned; cat"


def _git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git in `ws`, finding no repository above the test's folder (`GIT_CEILING_DIRECTORIES`)."""
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(ws.parent)}
    return subprocess.run(["git", *args], cwd=ws, env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.usefixtures("quiet_git")
async def test_e2e_a_bare_repository_planted_at_the_root_is_not_completed_unasked(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    files = {
        "config": f'[core]\n\tpager = "{PAGER}"\n',
        "objects/.keep": "",
        "refs/.keep": "",
        "HEAD": "ref: refs/heads/main\n",
    }
    async with ToolRuntime(ws, approval_mode="auto_edit") as runtime:
        outcomes = await runtime.run_batch(
            [ToolCall(f"c{n}", "write_file", {"file_path": p, "content": c}) for n, (p, c) in enumerate(files.items())]
        )
    assert [o.decision.decision if o.decision else None for o in outcomes] == ["allow", "allow", "allow", "deny"]
    assert _git(ws, "rev-parse", "--git-dir").returncode != 0  # no repository: its config is read by nobody
    # the control: the fourth file written, as it was before, git takes the root for a repository and its pager
    (ws / "HEAD").write_text(files["HEAD"])
    assert _git(ws, "rev-parse", "--git-dir").stdout.strip() == "."
    assert _git(ws, "config", "--get", "core.pager").stdout.strip() == PAGER


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.usefixtures("quiet_git")
async def test_e2e_a_file_the_repository_config_includes_is_not_written_unasked(tmp_path: Path) -> None:
    """SUCCEEDED before: `.gitconfig-shared`, which `.git/config` includes (`git config --local include.path
    ../.gitconfig-shared`), was written in auto_edit unasked, and the next `git status` ran its `core.fsmonitor`."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for args in (["init", "-q"], ["config", "--local", "include.path", "../.gitconfig-shared"]):
        assert _git(ws, *args).returncode == 0
    (ws / "a.txt").write_text("a\n")
    assert _git(ws, "add", "a.txt").returncode == 0
    shared = f'[core]\n\tfsmonitor = "touch {tmp_path}/pwned; false"\n'
    async with ToolRuntime(ws, approval_mode="auto_edit") as runtime:
        [outcome] = await runtime.run_batch(
            [ToolCall("c1", "write_file", {"file_path": ".gitconfig-shared", "content": shared})]
        )
    assert outcome.decision is not None
    assert outcome.decision.decision == "deny"
    _git(ws, "status")
    assert not (tmp_path / "pwned").exists()
    # the control: written as it was before, the user's next `git status` runs the command
    (ws / ".gitconfig-shared").write_text(shared)
    _git(ws, "status")
    assert (tmp_path / "pwned").exists()
