"""A test's HOME: the folders every agent and unified itself look under, all pointed at one temp folder.

`isolated_home` (tests/conftest.py) gives every test its own. A test that shares a warm agent process with
other tests (`tests.harness.warm_cli`) points them at the folder those tests share instead: a pooled
process is reused only by runs launched alike, and the launch holds these folders (the CLI's HOME, the
cache folder its policy file and working folder are in).
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["point_home_at"]


def point_home_at(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """HOME, GEMINI_CLI_HOME and the XDG tree (unified's data folder in it) under `home`; returns `home`."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    monkeypatch.delenv("UNIFIED_DATA_DIR", raising=False)  # the data folder is then under the XDG_DATA_HOME above
    return home
