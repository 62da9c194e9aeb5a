"""Red team, round 29: the premises of its unit cases, measured with the real programs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e]


def test_e2e_git_grep_magic_pathspec_reads_above_the_workspace(tmp_path: Path) -> None:
    """The premise, measured: in a folder of a repository, `git grep x -- ':/'` prints a file above it; plain
    `git grep x` does not."""
    repo = tmp_path / "repo"
    (repo / "ws").mkdir(parents=True)
    (repo / "top.env").write_text("TOKEN=outside\n")
    (repo / "ws" / "a.txt").write_text("hi\n")
    git = ["git", "-c", "user.email=a@b.c", "-c", "user.name=n"]
    subprocess.run([*git, "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "-C", str(repo), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-qm", "x"], check=True)
    ws = repo / "ws"
    magic = subprocess.run(["git", "grep", "TOKEN", "--", ":/"], cwd=ws, capture_output=True, text=True, check=False)
    plain = subprocess.run(["git", "grep", "TOKEN"], cwd=ws, capture_output=True, text=True, check=False)
    assert "outside" in magic.stdout
    assert plain.stdout == ""
