"""What e2e tests share: the pinned agent binaries, found where `scripts/setup` put them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.homes import point_home_at
from tests.harness.warm_cli import WarmCli

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


@pytest.fixture(scope="module")
def warm_cli_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmCli]:
    """A module's shared FakeGemini, HOME and warm CLI processes on a worker (`tests.harness.warm_cli` says who may
    use it): ended with the module's last test there, so no other module's test meets a process it did not start
    (a worker runs a module's tests one after another)."""
    with WarmCli.started(tmp_path_factory.mktemp("warm-cli-home")) as host:
        yield host


@pytest.fixture
def warm_cli(warm_cli_host: WarmCli, monkeypatch: pytest.MonkeyPatch) -> WarmCli:
    """The shared host, with this test's HOME and XDG folders pointed at its home (the launch holds them)."""
    point_home_at(monkeypatch, warm_cli_host.home)
    return warm_cli_host
