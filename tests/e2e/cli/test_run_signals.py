"""Ctrl-C and SIGTERM to `unified run` while the real agent binary runs a tool command.

As a user meets it: `unified run --json --approve` in a subprocess, against the fake model that
`unified serve` starts (its exports as the environment), the model asking for a shell command that
never ends. Once that command runs, the signal goes to `unified run`; it must end the run with a
`result` (`interrupted`), exit 130 (SIGINT) or 143 (SIGTERM), and leave none of the processes it
started behind (the agent binary, the command).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._binary.process import Process, process_table, still_running
from unified._cli.serve import FAKE_SERVERS, start_fake

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("binaries")]

FAKE = {"gemini-cli": "gemini", "claude-code": "anthropic", "codex": "openai"}


def _call(backend: str, command: str) -> dict[str, object]:
    """The model's call of the backend's shell tool (codex: waiting for the command, not yielding early)."""
    if backend == "claude-code":
        return {"name": "Bash", "args": {"command": command}}
    if backend == "codex":
        return {"name": "exec_command", "args": {"cmd": command, "yield_time_ms": 600_000}}
    return {"name": "run_shell_command", "args": {"command": command}}


@pytest.fixture
def served_env(request: pytest.FixtureRequest, isolated_home: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    """`unified serve SCRIPT --fake F` in this process, and the environment its printed lines make."""
    backend, log = request.param, tmp_path / "never-written.log"
    log.touch()
    script = tmp_path / "script.json"
    call = _call(backend, f"tail -f {log}")
    script.write_text(json.dumps({"turns": [{"kind": "model", "function_calls": [call]}]}))
    fake = FAKE_SERVERS[FAKE[backend]]
    served = start_fake(FAKE[backend], script, 0, tmp_path / "serve")
    env = {name: value for name, value in os.environ.items() if name not in fake.unset}
    try:
        yield env | served.exports() | {"UNIFIED_TEST_BACKEND": backend, "UNIFIED_TEST_LOG": str(log)}
    finally:
        served.close()


def _descendants(root: int) -> list[Process]:
    """Every live process under `root`, with its start time (a later process with the same pid is not it)."""
    table = process_table()
    found: list[Process] = []
    todo = [root]
    while todo:
        parent = todo.pop()
        for pid, (ppid, started) in table.items():
            if ppid == parent:
                found.append((pid, started))
                todo.append(pid)
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.parametrize("served_env", list(FAKE), indirect=True)
@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_a_tool_call_ends_the_run_with_its_result_and_no_process_left(
    served_env: dict[str, str], sent: signal.Signals, code: int, tmp_path: Path
) -> None:
    backend, log = served_env["UNIFIED_TEST_BACKEND"], served_env["UNIFIED_TEST_LOG"]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = subprocess.Popen(
        [sys.executable, "-m", "unified._cli", "run", "run it", "--backend", backend, "--json", "--approve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=served_env,
        cwd=workspace,
    )
    try:
        assert run.stdout is not None
        lines: list[str] = []
        for line in run.stdout:
            lines.append(line)
            if json.loads(line)["type"] == "permission_decision":
                break
        deadline = time.monotonic() + HANG_GUARD_S
        while not any(log in _cmdline(pid) for pid, _ in _descendants(run.pid)):  # the command runs
            assert time.monotonic() < deadline, "the tool command never started"
            time.sleep(0.05)
        started = _descendants(run.pid)
        run.send_signal(sent)
        out, err = run.communicate(timeout=HANG_GUARD_S)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    events = [json.loads(line) for line in [*lines, *out.splitlines()]]  # every line is JSON
    assert run.returncode == code, err
    assert events[-1]["type"] == "result"
    assert events[-1]["status"] == "interrupted"
    assert "Traceback" not in err
    assert still_running(started) == [], [_cmdline(pid) for pid, _ in still_running(started)]  # none outlives it
