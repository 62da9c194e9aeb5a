"""The child's environment: one node process with the heap limit the CLI's relaunch would have asked for."""

from __future__ import annotations

import os

import pytest

from unified._adapters.gemini_cli._launch import SYSTEM_SETTINGS_ENV, gemini_env


def _half_memory_mb() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (2 * 1024 * 1024)


def test_the_cli_runs_in_one_node_process_with_half_the_memory_as_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_CLI_NO_RELAUNCH", raising=False)
    monkeypatch.setenv("NODE_OPTIONS", "--enable-source-maps")
    env = gemini_env({"EXTRA": "1"})
    assert env["GEMINI_CLI_NO_RELAUNCH"] == "true"
    assert env["NODE_OPTIONS"] == f"--enable-source-maps --max-old-space-size={_half_memory_mb()}"
    assert env["EXTRA"] == "1"
    assert env[SYSTEM_SETTINGS_ENV]


def test_a_caller_who_chose_keeps_their_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_CLI_NO_RELAUNCH", raising=False)
    monkeypatch.setenv("NODE_OPTIONS", "--max-old-space-size=512")
    assert gemini_env()["NODE_OPTIONS"] == "--max-old-space-size=512"
    monkeypatch.delenv("NODE_OPTIONS")
    env = gemini_env({"GEMINI_CLI_NO_RELAUNCH": ""})
    assert env["GEMINI_CLI_NO_RELAUNCH"] == ""
    assert "NODE_OPTIONS" not in env
