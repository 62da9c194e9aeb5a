"""What e2e tests share: the pinned agent binaries, found where `scripts/setup` put them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARIES = {
    "UNIFIED_GEMINI_BIN": ROOT / ".gemini-cli" / "node_modules" / ".bin" / "gemini",
    "UNIFIED_CLAUDE_BIN": ROOT / ".claude-code" / "node_modules" / ".bin" / "claude",
    "UNIFIED_CODEX_BIN": ROOT / ".codex-cli" / "node_modules" / ".bin" / "codex",
}


@pytest.fixture
def binaries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backend's binary variable points at the pinned binary (a missing one fails the test, saying why)."""
    for variable, default in BINARIES.items():
        binary = Path(os.environ.get(variable) or default)
        if not binary.exists():
            pytest.fail(f"the pinned binary is not at {binary}: run scripts/setup")
        monkeypatch.setenv(variable, str(binary))
