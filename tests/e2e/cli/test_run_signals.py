"""Ctrl-C and SIGTERM to `unified run` while the real agent binary runs a tool command.

As a user meets it: `unified run --json --approve` in a subprocess, against the fake model that
`unified serve` starts (its exports as the environment), the model asking for a shell command that
never ends. Once that command runs, the signal goes to `unified run`; it must end the run with a
`result` (`interrupted`), exit 130 (SIGINT) or 143 (SIGTERM), and leave none of the processes it
started behind (the agent binary, the command).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.e2e.cli.conftest import STOPS, cmdline, start_until_the_command_runs
from tests.hang_guard import HANG_GUARD_S
from unified._binary.proctable import still_running

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("binaries")]


@pytest.mark.parametrize(("served_env", "sent", "code"), STOPS, indirect=["served_env"])
def test_a_signal_during_a_tool_call_ends_the_run_with_its_result_and_no_process_left(
    served_env: dict[str, str], sent: signal.Signals, code: int, tmp_path: Path
) -> None:
    backend = served_env["UNIFIED_TEST_BACKEND"]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = start_until_the_command_runs(
        ["run", "run it", "--backend", backend, "--json", "--approve"], served_env, workspace
    )
    try:
        run.process.send_signal(sent)
        out, err = run.process.communicate(timeout=HANG_GUARD_S)
    finally:
        if run.process.poll() is None:
            run.process.kill()
            run.process.wait()
    events = [json.loads(line) for line in [*run.lines, *out.splitlines()]]  # every line is JSON
    assert run.process.returncode == code, err
    assert events[-1]["type"] == "result"
    assert events[-1]["status"] == "interrupted"
    assert "Traceback" not in err
    assert still_running(run.started) == [], [cmdline(pid) for pid, _ in still_running(run.started)]  # none outlives it
