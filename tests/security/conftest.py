"""Fixtures the security tests share."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def quiet_git(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME is a throwaway already (`isolated_home`); no git configuration or CDPATH of the host either, so an
    attack that plants a repository meets git as a fresh machine has it."""
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_DIR", "CDPATH"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An empty workspace folder (a test module with a workspace of its own defines its own `ws`)."""
    root = tmp_path / "ws"
    root.mkdir()
    return root
