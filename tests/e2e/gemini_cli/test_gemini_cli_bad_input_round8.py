"""Bad input round 8 for gemini-cli: a binary that answers the opening and then closes its stdout while it keeps
running, mid-prompt. Its error said "gemini exited during the run (...): the gemini process is still running",
both at once; now it says the binary closed its stdout without exiting, and the process is gone with the run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.e2e.bad_binaries import Started, script_binary, the_error
from tests.e2e.gemini_cli.test_gemini_cli_bad_input import run
from unified._adapters.gemini_cli import _run
from unified._adapters.gemini_cli._launch import start_gemini
from unified.testing import FakeGemini, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

_ACP_THEN_CLOSE = """
import json, os, sys, time
for line in sys.stdin:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "session/prompt":
        sys.stdout.flush()
        os.close(1)  # stdout closed; the process runs on
        time.sleep(600)
    result = {"protocolVersion": 1, "agentCapabilities": {}} if method == "initialize" else {}
    if method == "session/new":
        result = {"sessionId": "fake-session-r8"}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}) + "\\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])  # the loop's own pipe reads see the closed stdout
async def test_a_binary_that_closes_its_stdout_mid_run_and_runs_on_is_told_so_and_stopped(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_run, "EXIT_GRACE_S", 0.05)  # how long the adapter waits for an exit that never comes
    script = tmp_path / "acp.py"
    script.write_text(_ACP_THEN_CLOSE)
    binary = script_binary(tmp_path / "bin", "gemini", "0.61.0", f'exec "{sys.executable}" "{script}"\n')
    started = Started(start_gemini, binary)
    async with FakeGemini([ModelTurn(text="never")]) as server:
        events = await run(server, workspace, start_process=started)
    error = the_error(events)
    assert error.code == "backend_error"
    assert error.message.startswith(
        "gemini closed its stdout during the run, without exiting: the gemini process is still running"
    ), error.message
    assert "exited" not in error.message.split(":")[0]
    assert started.still_running() == []
