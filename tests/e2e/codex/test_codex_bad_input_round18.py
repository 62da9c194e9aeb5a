"""Bad input round 18, codex with a data folder no `mkdir` can make (`UNIFIED_DATA_DIR=/proc/self/...`, as a parent
removed while a run starts): its home's bare FileNotFoundError ended the run as `internal_error`, "a bug in
unified's codex adapter" (measured with `unified run --backend codex` against `unified serve --fake openai`); now
`backend_unavailable` naming the folder and the setting to point elsewhere, so a fallback may take the run. (Under a
file size limit of 1 KB, `ulimit -f 1`, the app-server's SIGXFSZ was typed already: `backend_error` saying to raise
the limit; its stderr tail was shown as "the gemini CLI's": tests/foundation/test_render_bad_input_round18.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.bad_binaries import unmakeable_folder_error
from tests.e2e.codex.conftest import run_codex
from unified.testing import FakeOpenAI, ModelTurn

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_a_data_folder_that_cannot_be_made_is_backend_unavailable(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNIFIED_DATA_DIR", "/proc/self/unified-round18/data")
    async with FakeOpenAI([ModelTurn(text="Done.")]) as server:
        events = await run_codex(server, workspace)
        assert server.model_requests() == []  # no model call: the run ended before the app-server
    unmakeable_folder_error(
        events, "codex", "/unified-round18/data/codex-home: no folder can be made there", setting="UNIFIED_DATA_DIR"
    )
