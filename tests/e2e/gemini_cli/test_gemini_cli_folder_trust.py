"""yolo in a folder the real CLI does not trust: the error says why and what to change."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import Run, stream_line, text
from unified.events import ErrorEvent, Result


def _distrust(gemini_setup: Path) -> None:
    settings_file = gemini_setup / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["security"]["folderTrust"] = {"enabled": True}
    settings_file.write_text(json.dumps(settings))


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the CLI decides this; trio: test_gemini_cli_acp.py
@pytest.mark.parametrize(
    ("transport", "mode"), [("acp", "yolo"), ("stream-json", "yolo"), ("stream-json", "auto_edit")]
)
async def test_yolo_in_an_untrusted_folder_is_refused_before_the_cli_starts(
    run_gemini: Run, responses: Callable[..., Path], gemini_setup: Path, workspace: Path, transport: str, mode: str
) -> None:
    """The CLI started only to refuse it: a `session/set_mode` error (`backend_error`) over ACP, after a session was
    opened, and exit 55 headless. Now a `configuration_error` before any process, with the same advice."""
    _distrust(gemini_setup)
    events = await run_gemini(
        responses(stream_line(text("never"))), approval_mode=mode, backend_options={"transport": transport}
    )
    error = next(e for e in events if isinstance(e, ErrorEvent))
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert error.code == "configuration_error"
    assert error.message.startswith(
        f"approval_mode {mode!r}: the gemini CLI allows yolo and auto_edit only in a folder it trusts, "
        f"and it does not trust {workspace}"
    )
    assert "set security.folderTrust.enabled to false" in error.message  # what to change
    assert not list((gemini_setup / ".gemini").glob("tmp/*/chats/*"))  # no session was opened


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_auto_edit_over_acp_runs_in_an_untrusted_folder(
    run_gemini: Run, responses: Callable[..., Path], gemini_setup: Path
) -> None:
    """Over ACP unified's auto_edit runs the CLI in its default mode (unified allows the edits), which the CLI
    allows in any folder: the refusal before the start is yolo's (and stream-json's auto_edit), not this run's."""
    _distrust(gemini_setup)
    events = await run_gemini(responses(stream_line(text("ran"))), approval_mode="auto_edit")
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "ran")
