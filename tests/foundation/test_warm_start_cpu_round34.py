"""Issue 29, round 34: a warm Codex run's client CPU. Every run's start re-did work that depends on its input text
alone (a base URL's check, a `PATH` without its relative entries) and walked up to the enclosing repository with
two `stat`s and a `Path` a level; these pin the cheaper forms, and that what they answer stayed the same.

What must see the filesystem as it is now (the repository's config, its `.git`) is still looked at every run:
only the repeated work of a pure function of a string is kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from unified import _environ, _git_drivers, _urls


def _counting(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[object]:
    calls: list[object] = []
    real = getattr(owner, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(args[0] if args else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_repository_walk_stats_each_level_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside any repository, every level up to `/` is looked at with one `stat` (it was two: `is_dir`, then
    `is_file`, each on a new `Path`), and none is found."""
    start = tmp_path / "a" / "b"
    start.mkdir(parents=True)
    if _git_drivers._repository_config(start) is not None:
        pytest.skip("the temporary folder is inside a git repository")
    calls = _counting(monkeypatch, os, "stat")
    assert _git_drivers._repository_config(start) is None
    levels = len(Path(os.path.abspath(start)).parts)
    assert len(calls) == levels


def test_repository_walk_finds_the_same_repository(tmp_path: Path) -> None:
    """A `.git` directory above, a worktree's `.git` file (its `gitdir:` and `commondir`), and a `.git` that is
    neither (a FIFO: passed over, as `is_dir` and `is_file` passed it) give what they gave."""
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True)
    (top / "sub" / "deeper").mkdir(parents=True)
    assert _git_drivers._repository_config(top / "sub" / "deeper") == (
        top,
        [top / ".git" / "config", top / ".git" / "config.worktree"],
    )
    tree = tmp_path / "tree"
    gitdir = top / ".git" / "worktrees" / "tree"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {gitdir}\n")
    common = (top / ".git").resolve()
    assert _git_drivers._repository_config(tree) == (
        tree,
        [common / "config", common / "config.worktree", gitdir.resolve() / "config.worktree"],
    )
    odd = top / "sub" / "odd"
    odd.mkdir()
    os.mkfifo(odd / ".git")
    assert _git_drivers._repository_config(odd) == _git_drivers._repository_config(top)


def test_a_base_url_is_checked_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run's start checks the same base URL: it is parsed once, and its refusal (or none) stays the same."""
    url = "http://127.0.0.1:38123/v1?round=34"
    bad = "http://127.0.0.1:99999/round34"
    calls = _counting(monkeypatch, _urls, "urlsplit")
    for _ in range(3):
        assert _urls.base_url_refusal(url, "OPENAI_BASE_URL", "Codex") is None
        refusal = _urls.base_url_refusal(bad, "OPENAI_BASE_URL", "Codex")
        assert refusal is not None
        assert "port is not a number of 1-65535" in refusal[0]
    assert calls == [url, bad]


def test_a_search_path_is_cleaned_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run's child takes the same `PATH` without its relative entries: worked out once per text."""
    value = os.pathsep.join(["/usr/bin", "", ".", "bin", "/round34/bin", "node_modules/.bin"])
    calls = _counting(monkeypatch, os.path, "isabs")
    for _ in range(3):
        assert _environ.absolute_search_path(value) == os.pathsep.join(["/usr/bin", "/round34/bin"])
    assert len(calls) == 6


def _tree_with_repositories(root: Path) -> None:
    for i in range(6):
        for j in range(4):
            (root / f"d{i}" / f"e{j}").mkdir(parents=True)
            (root / f"d{i}" / f"e{j}" / "f.txt").write_text("x")
    (root / "d3" / "e1" / "sub" / ".git").mkdir(parents=True)
    (root / "d3" / "e1" / "sub" / ".git" / "config").write_text('[diff "x"]\n textconv = evil\n')
    (root / "bare" / "refs").mkdir(parents=True)
    (root / "bare" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "bare" / "config").write_text('[filter "y"]\n clean = evil\n')


def test_the_scan_below_makes_paths_only_for_repositories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan below the run's directory (every run's start: 1,041 directories took 14.8 ms, now 9.7) queues
    strings, not a `Path` a directory: one is made only for a repository found."""
    _tree_with_repositories(tmp_path)
    made = _counting(monkeypatch, _git_drivers, "Path")
    found = list(_git_drivers._nested(tmp_path))
    assert [(top.name, [config.name for config in configs]) for top, configs in found] == [
        ("bare", ["config"]),
        ("sub", ["config", "config.worktree"]),
    ]
    assert len(made) <= 3 * len(found)


def test_the_scan_below_overrides_what_it_did(tmp_path: Path) -> None:
    """The settings a nested repository's and a bare one's drivers get are those they got."""
    _tree_with_repositories(tmp_path)
    assert _git_drivers.overrides(tmp_path) == [
        ("filter.y.clean", ""),
        ("filter.y.smudge", ""),
        ("filter.y.process", ""),
        ("diff.x.textconv", "cat"),
    ]
