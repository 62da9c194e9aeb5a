"""Ctrl-C and SIGTERM to `unified record` while the real agent binary runs a tool command.

As `test_run_signals.py`, for the command that records a live run: a stop signal ends it with exit 130
(SIGINT) or 143 (SIGTERM), says the cassette was not written, and leaves nothing behind: no process it
started (the agent binary, the command), no cassette, no scratch file of the recording. Before, SIGTERM's
default action ended `record` at once: the binary and its command went on with no parent and the scratch
file stayed.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.e2e.cli.conftest import STOPS, cmdline, start_until_the_command_runs
from tests.hang_guard import HANG_GUARD_S
from unified._binary.proctable import still_running

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("binaries")]


@pytest.mark.parametrize(("served_env", "sent", "code"), STOPS, indirect=["served_env"])
def test_a_signal_while_recording_writes_nothing_and_leaves_no_process(
    served_env: dict[str, str], sent: signal.Signals, code: int, tmp_path: Path
) -> None:
    backend = served_env["UNIFIED_TEST_BACKEND"]
    workspace, folder = tmp_path / "ws", tmp_path / "cassettes"
    workspace.mkdir()
    folder.mkdir()
    cassette = folder / "run.jsonl"
    argv = ["record", str(cassette), "run it", "--backend", backend, "--json", "--approve"]
    recording = start_until_the_command_runs(argv, served_env, workspace)
    try:
        recording.process.send_signal(sent)
        _, err = recording.process.communicate(timeout=HANG_GUARD_S)
    finally:
        if recording.process.poll() is None:
            recording.process.kill()
            recording.process.wait()
    assert recording.process.returncode == code, err
    assert f"interrupted: {cassette} not written" in err
    assert "Traceback" not in err
    assert list(folder.iterdir()) == []  # neither the cassette nor the recording's scratch file
    left = still_running(recording.started)
    assert left == [], [cmdline(pid) for pid, _ in left]  # none outlives it
