"""Red team, round 17, on the real gemini binary: a write to what a protected link leads to (`.git/hooks/pre-commit ->
../../scripts/hook.sh`) or through a hard link to `.git/config` (the CLI's write_file writes in place) in auto_edit.
ACP asks unified for each edit (`ToolRuntime.decide`: denied here, nobody answers); stream-json asks nobody, so its
`--policy` file denies the targets of the protected links the workspace holds (`_protected.protected_links`). A plain
file is written in both, so the test proves the edit tool ran."""

from __future__ import annotations

import os
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
async def test_auto_edit_does_not_write_what_a_hook_link_leads_to(
    warm_gemini: Run, responses: Responses, workspace: Path, transport: str
) -> None:
    """SUCCEEDED before on both transports: the hook's target was written unasked; the next commit ran it."""
    (workspace / "scripts").mkdir()
    (workspace / "scripts" / "hook.sh").write_text("#!/bin/sh\n")
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / ".git" / "hooks" / "pre-commit").symlink_to("../../scripts/hook.sh")
    fake = responses(
        stream_line(call("write_file", file_path=str(workspace / "scripts" / "hook.sh"), content="touch PWNED\n")),
        stream_line(call("write_file", file_path=str(workspace / "plain.txt"), content="fine")),
        stream_line(text("done")),
    )
    await warm_gemini(fake, approval_mode="auto_edit", backend_options={"transport": transport})
    assert (workspace / "plain.txt").read_text() == "fine"
    assert (workspace / "scripts" / "hook.sh").read_text() == "#!/bin/sh\n"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_auto_edit_over_acp_does_not_write_through_a_hard_link(
    warm_gemini: Run, responses: Responses, workspace: Path
) -> None:
    """SUCCEEDED before: `linked.txt`, another name of `.git/config`, was written in place unasked. (stream-json: not
    covered, docs/tools.md.)"""
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    os.link(workspace / ".git" / "config", workspace / "linked.txt")
    fake = responses(
        stream_line(call("write_file", file_path=str(workspace / "linked.txt"), content="[core]\n\tfsmonitor = x\n")),
        stream_line(call("write_file", file_path=str(workspace / "plain.txt"), content="fine")),
        stream_line(text("done")),
    )
    await warm_gemini(fake, approval_mode="auto_edit")
    assert (workspace / "plain.txt").read_text() == "fine"
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
