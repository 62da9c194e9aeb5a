"""Bad input round 18, claude-code with a data folder no `mkdir` can make (`XDG_DATA_HOME=/proc/self/...`: its home
is `<XDG_DATA_HOME>/unified/claude-code/home`; UNIFIED_DATA_DIR does not name it): the bare FileNotFoundError of
its key folder ended the run as `internal_error`, "a bug in unified's claude-code adapter" (measured with `unified
run --backend claude-code` against `unified serve --fake anthropic`); now `backend_unavailable` naming the folder
and the setting to point elsewhere. (Under a 1 KB file size limit the CLI's SIGXFSZ was typed already.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bad_binaries import unmakeable_folder_error
from tests.e2e.claude_code.claude_code_helpers import run_claude
from unified.testing import FakeAnthropic, ModelTurn

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_a_data_folder_that_cannot_be_made_is_backend_unavailable(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "/proc/self/unified-round18/xdg")
    async with FakeAnthropic([ModelTurn(text="Done.")]) as server:
        events = await run_claude(server, workspace)
        assert server.model_bodies() == []  # no model call: the run ended before the CLI
    unmakeable_folder_error(
        events, "claude-code", "/unified-round18/xdg/unified/claude-code/home", setting="XDG_DATA_HOME"
    )
