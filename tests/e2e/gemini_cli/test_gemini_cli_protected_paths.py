"""The real gemini binary never writes a protected path in auto_edit unasked (issue 24).

ACP: unified runs the CLI in its default mode and its permission bridge approves edits itself,
except a protected one (denied here: nobody answers). stream-json: nobody can be asked, and a
`--policy` deny rule on the edit tools' `file_path` stops a protected write. In both, a plain file
is written without asking, so the test proves the edit tools ran at all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import call, stream_line, text
from unified.events import UnifiedEvent

Run = Callable[..., Awaitable[list[UnifiedEvent]]]
Responses = Callable[..., Path]


PROTECTED = (".gemini/settings.json", ".env", "GEMINI.md")
"""Written in one run per transport: each write is judged on its own (rules fixed when the run starts)."""


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_auto_edit_writes_plain_files_but_not_protected_ones(
    warm_gemini: Run, responses: Responses, workspace: Path, transport: str
) -> None:
    fake = responses(
        *(
            stream_line(call("write_file", file_path=str(workspace / protected), content='{"mcpServers": {}}'))
            for protected in PROTECTED
        ),
        stream_line(call("write_file", file_path=str(workspace / "plain.txt"), content="fine")),
        stream_line(text("done")),
    )
    await warm_gemini(fake, approval_mode="auto_edit", backend_options={"transport": transport})
    assert (workspace / "plain.txt").read_text() == "fine"
    assert [protected for protected in PROTECTED if (workspace / protected).exists()] == []


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_auto_edit_does_not_write_a_protected_path_through_a_link(
    warm_gemini: Run, responses: Responses, workspace: Path, transport: str
) -> None:
    """Red team round 15. SUCCEEDED before on stream-json: the CLI writes through a link, and its `--policy` deny
    rule read the text of `file_path`, so with `docs/e -> ../.envrc` in the repository its autoEdit wrote `.envrc`.
    The links the workspace holds to protected paths are denied by name too."""
    (workspace / "docs").mkdir()
    (workspace / "docs" / "e").symlink_to("../.envrc")
    fake = responses(
        stream_line(call("write_file", file_path=str(workspace / "docs" / "e"), content="export X=1\n")),
        stream_line(call("write_file", file_path=str(workspace / "plain.txt"), content="fine")),
        stream_line(text("done")),
    )
    await warm_gemini(fake, approval_mode="auto_edit", backend_options={"transport": transport})
    assert (workspace / "plain.txt").read_text() == "fine"
    assert not (workspace / ".envrc").exists()
