"""The gemini CLI's temp dir is unified's own, readable by the user alone: 0.61 writes the report of an API error,
the whole request (the conversation, the files the model read), to `os.tmpdir()` as `gemini-client-error-*.json`,
0644, so in /tmp any local user read it. A `TMPDIR` the backend's `env` option names still wins."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from unified import ExecuteParams, execute
from unified._adapters.gemini_cli._error_reports import TEMP_FOLDER
from unified._binary.environment import cache_folder, private_cache_folder
from unified.events import ErrorEvent, UnifiedEvent
from unified.testing import FakeGemini, Fault, ModelTurn
from unified.testing._fake_gemini import CLI_MODEL

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

SAID = "the secret plan is heron-4417"


async def _failed_run(workspace: Path, env: dict[str, str]) -> list[UnifiedEvent]:
    async with FakeGemini([ModelTurn(text="never", fault=Fault(kind="bad_request"))]) as server:
        params = ExecuteParams(
            prompt=SAID,
            backend="gemini-cli",
            model=CLI_MODEL,
            cwd=workspace,
            backend_options={"env": {**server.cli_env, **env}, "pool_size": 0},
        )
        async with execute(params) as stream:
            return [event async for event in stream]


def _reports(folder: Path) -> list[Path]:
    return sorted(folder.glob("gemini-client-error-*.json"))


async def test_an_api_error_s_report_goes_where_only_the_user_reads_it(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared-tmp"  # the machine's /tmp: sticky, everyone's
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    monkeypatch.setenv("TMPDIR", str(shared))
    events = await _failed_run(workspace, {})
    assert [e.code for e in events if isinstance(e, ErrorEvent)] == ["bad_request"]
    assert _reports(shared) == []
    private = cache_folder(TEMP_FOLDER)
    reports = _reports(private)
    assert reports, sorted(p.name for p in private.iterdir())
    assert any(SAID in report.read_text() for report in reports)  # the request, as the CLI wrote it
    assert stat.S_IMODE(private.stat().st_mode) == 0o700


async def test_a_temp_dir_the_env_option_names_wins(workspace: Path, tmp_path: Path) -> None:
    mine = tmp_path / "my-tmp"
    mine.mkdir(mode=0o700)
    await _failed_run(workspace, {"TMPDIR": str(mine)})
    assert _reports(mine)


async def test_a_run_sweeps_the_reports_of_before_and_keeps_its_own(workspace: Path) -> None:
    """Bad input round 26, FAILED before: the reports piled up for good (each a whole request). A week-old report
    is removed once the CLI has started; the report of this run's error is kept."""
    private = private_cache_folder(TEMP_FOLDER)
    old = private / "gemini-client-error-Turn.run-sendMessageStream-2026-01-01T00-00-00-000Z.json"
    old.write_text('{"context": "an old conversation"}')
    then = time.time() - 8 * 24 * 3600
    os.utime(old, (then, then))
    events = await _failed_run(workspace, {})
    assert [e.code for e in events if isinstance(e, ErrorEvent)] == ["bad_request"]
    assert not old.exists()
    assert any(SAID in report.read_text() for report in _reports(private))
