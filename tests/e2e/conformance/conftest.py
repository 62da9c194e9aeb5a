"""The conformance suite's fixtures: the workspace every scenario runs in, and the pinned binaries made ready."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from unified.testing._wiring import prepare_cli_home

LOCAL_CLI = Path(__file__).resolve().parents[3] / ".gemini-cli" / "node_modules" / ".bin" / "gemini"
LOCAL_CLAUDE = Path(__file__).resolve().parents[3] / ".claude-code" / "node_modules" / ".bin" / "claude"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (root / "more.txt").write_text("gamma\n")
    (root / "victim.txt").write_text("victim\n")  # a command that deletes it must not have run
    return root


@pytest.fixture
def cli_ready(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned binary and deterministic settings in the per-test HOME (children inherit HOME/GEMINI_CLI_HOME)."""
    binary = os.environ.get("UNIFIED_GEMINI_BIN") or str(LOCAL_CLI)
    if not Path(binary).exists():
        pytest.fail(f"the pinned gemini binary is not at {binary}: run .ci/install-gemini-cli.sh (scripts/test does)")
    monkeypatch.setenv("UNIFIED_GEMINI_BIN", binary)
    prepare_cli_home(isolated_home)


@pytest.fixture
def claude_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pinned claude binary; its home is the per-test XDG_DATA_HOME's, no Anthropic credentials of the shell."""
    binary = os.environ.get("UNIFIED_CLAUDE_BIN") or str(LOCAL_CLAUDE)
    if not Path(binary).exists():
        pytest.fail(f"the pinned claude binary is not at {binary}: run .ci/install-claude-code.sh (scripts/test does)")
    monkeypatch.setenv("UNIFIED_CLAUDE_BIN", binary)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
