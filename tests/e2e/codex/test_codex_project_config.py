"""A repository's own `.codex/config.toml` cannot start an MCP server (run a command) the caller never gave."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.codex.conftest import run_codex
from unified.events import Result
from unified.testing import FakeOpenAI, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


async def test_a_projects_mcp_server_never_starts(workspace: Path, tmp_path: Path) -> None:
    """STARTED before: Codex 0.171 ran the `[mcp_servers.*]` command of the workspace's `.codex/config.toml` at
    `thread/start`, though it says project-local config is disabled until the project is trusted."""
    (workspace / ".git").mkdir()  # the project's root: Codex reads the `.codex/` folders from there down to the cwd
    (workspace / ".codex").mkdir()
    marker = tmp_path / "started"
    (workspace / ".codex" / "config.toml").write_text(
        f'[mcp_servers.repo]\ncommand = "sh"\nargs = ["-c", "touch {marker}"]\n'
    )
    async with FakeOpenAI([ModelTurn(text="done")]) as server:
        events = await run_codex(server, workspace)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert not marker.exists()
