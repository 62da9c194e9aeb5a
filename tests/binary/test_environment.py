"""The child's environment: a per-backend allowlist, the caller's additions, an isolated home."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from unified._binary.environment import BASIC_ENV, GIT_SAFETY, EnvPolicy, cache_file, child_env

PARENT = {
    "PATH": "/usr/bin",
    "HOME": "/home/me",
    "LANG": "C.UTF-8",
    "LC_ALL": "C",
    "GEMINI_API_KEY": "k",
    "GEMINI_CLI_HOME": "/x",
    "UNIFIED_SESSION_STORE_URL": "postgresql://u:secret@db/x",
    "AWS_SECRET_ACCESS_KEY": "s",
}


def test_without_an_allowlist_every_variable_passes() -> None:
    assert child_env(EnvPolicy(), parent=PARENT) == {**PARENT, GIT_SAFETY[0]: GIT_SAFETY[1]}


def test_an_allowlist_passes_the_basics_and_what_the_binary_reads_only() -> None:
    policy = EnvPolicy(allow=frozenset({"GEMINI_API_KEY"}), allow_prefixes=("GEMINI_CLI_",))
    env = child_env(policy, parent=PARENT, extra={"EXTRA": "1"})
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "GEMINI_API_KEY": "k",
        "GEMINI_CLI_HOME": "/x",
        "EXTRA": "1",  # what the caller gave the child always passes
        "GIT_CONFIG_PARAMETERS": GIT_SAFETY[1],  # ours, always
    }
    assert "PATH" in BASIC_ENV


def test_an_isolated_home_sets_every_home_variable(tmp_path: Path) -> None:
    env = child_env(EnvPolicy(), parent=PARENT, home=tmp_path, home_vars=("HOME", "GEMINI_CLI_HOME"))
    assert (env["HOME"], env["GEMINI_CLI_HOME"]) == (str(tmp_path), str(tmp_path))


def test_cache_files_are_named_by_content_and_written_once() -> None:
    first = cache_file("unit", "policy", ".toml", "a = 1\n")
    assert first.read_text() == "a = 1\n"
    assert cache_file("unit", "policy", ".toml", "a = 1\n") == first
    other = cache_file("unit", "policy", ".toml", "a = 2\n")
    assert other != first
    assert other.parent == first.parent
    assert first.name.startswith("policy-")
    assert first.suffix == ".toml"


def test_the_environment_s_changes_reach_the_next_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a policy admits from `os.environ` is kept between runs, and worked out again as soon as
    the environment changes: a variable set, changed or removed is seen by the next child."""
    policy = EnvPolicy(allow=frozenset({"UNIFIED_TEST_CHILD_VAR"}))
    monkeypatch.delenv("UNIFIED_TEST_CHILD_VAR", raising=False)
    assert "UNIFIED_TEST_CHILD_VAR" not in child_env(policy)
    monkeypatch.setenv("UNIFIED_TEST_CHILD_VAR", "one")
    assert child_env(policy)["UNIFIED_TEST_CHILD_VAR"] == "one"
    monkeypatch.setenv("UNIFIED_TEST_CHILD_VAR", "two")
    assert child_env(policy)["UNIFIED_TEST_CHILD_VAR"] == "two"
    changed = child_env(policy, extra={"MINE": "1"})
    changed["UNIFIED_TEST_CHILD_VAR"] = "edited by a caller"
    assert child_env(policy)["UNIFIED_TEST_CHILD_VAR"] == "two"  # each child gets its own copy
    assert "MINE" not in child_env(policy)
    monkeypatch.delenv("UNIFIED_TEST_CHILD_VAR")
    assert "UNIFIED_TEST_CHILD_VAR" not in child_env(policy)


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CACHE_HOME names the cache folder on Linux")
def test_cache_files_follow_the_cache_folder_and_come_back_when_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "one"))
    first = cache_file("unit", "policy", ".toml", "b = 1\n")
    assert first.is_relative_to(tmp_path / "one")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "two"))
    second = cache_file("unit", "policy", ".toml", "b = 1\n")
    assert second.is_relative_to(tmp_path / "two")
    assert second.read_text() == "b = 1\n"
    second.unlink()
    assert cache_file("unit", "policy", ".toml", "b = 1\n").read_text() == "b = 1\n"
