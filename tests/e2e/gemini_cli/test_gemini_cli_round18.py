"""Red team, round 18, on the real gemini binary: a write to what a nested repository's hook link leads to
(`a/b/.git/hooks/x -> ../../../../scripts/x`) in auto_edit. Over ACP unified decides (`ToolRuntime.decide`), and its
search for protected links beside the written file never looked four folders down: written unasked. It is asked
now (an index of the workspace's protected links); stream-json's `--policy` file (`protected_links`, a walk of the
whole workspace) denied it before too: a pin."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import call, stream_line, text
from unified.events import UnifiedEvent

Run = Callable[..., Awaitable[list[UnifiedEvent]]]
Responses = Callable[..., Path]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_auto_edit_does_not_write_what_a_nested_repositorys_hook_link_leads_to(
    warm_gemini: Run, responses: Responses, workspace: Path, transport: str
) -> None:
    """SUCCEEDED before over ACP: `scripts/x` was written unasked; the nested repository's next commit ran it."""
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "x").write_text("#!/bin/sh\n")
    (workspace / "a" / "b" / ".git" / "hooks").mkdir(parents=True)
    (workspace / "a" / "b" / ".git" / "hooks" / "pre-commit").symlink_to("../../../../scripts/x")
    fake = responses(
        stream_line(call("write_file", file_path=str(workspace / "scripts" / "x"), content="touch PWNED\n")),
        stream_line(call("write_file", file_path=str(workspace / "plain.txt"), content="fine")),
        stream_line(text("done")),
    )
    await warm_gemini(fake, approval_mode="auto_edit", backend_options={"transport": transport})
    assert (workspace / "plain.txt").read_text() == "fine"
    assert (workspace / "scripts" / "x").read_text() == "#!/bin/sh\n"
