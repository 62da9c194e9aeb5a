"""yolo in a folder the real CLI does not trust: the error says why and what to change."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import Run, stream_line, text
from unified.events import ErrorEvent, Result


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the CLI decides this; trio: test_gemini_cli_acp.py
async def test_yolo_in_an_untrusted_folder_says_to_trust_it(
    run_gemini: Run, responses: Callable[..., Path], gemini_setup: Path
) -> None:
    settings_file = gemini_setup / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["security"]["folderTrust"] = {"enabled": True}
    settings_file.write_text(json.dumps(settings))
    events = await run_gemini(responses(stream_line(text("never"))), approval_mode="yolo")
    error = next(e for e in events if isinstance(e, ErrorEvent))
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert error.message.startswith(
        "session/set_mode: Internal error: Cannot enable privileged approval modes in an untrusted folder."
    )
    assert "set security.folderTrust.enabled to false" in error.message  # what to change
    assert "stderr_tail" in error.details  # the CLI's stderr (empty here) travels with the error


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_stream_json_yolo_in_an_untrusted_folder_says_to_trust_it(
    run_gemini: Run, responses: Callable[..., Path], gemini_setup: Path
) -> None:
    """The headless CLI exits 55: the error said only that the workspace is not trusted, not what to change."""
    settings_file = gemini_setup / ".gemini" / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["security"]["folderTrust"] = {"enabled": True}
    settings_file.write_text(json.dumps(settings))
    events = await run_gemini(
        responses(stream_line(text("never"))), approval_mode="yolo", backend_options={"transport": "stream-json"}
    )
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert "exit code 55: the workspace is not trusted" in error.message
    assert "set security.folderTrust.enabled to false" in error.message  # what to change
