"""The child's environment: a per-backend allowlist, the caller's additions, an isolated home."""

from __future__ import annotations

from pathlib import Path

from unified._binary.environment import BASIC_ENV, EnvPolicy, cache_file, child_env

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
    assert child_env(EnvPolicy(), parent=PARENT) == PARENT


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
