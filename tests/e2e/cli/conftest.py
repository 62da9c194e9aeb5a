"""What the CLI's signal tests share: the fake model `unified serve` starts, its script asking for a shell
command that never ends, and the processes under a command's pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified._binary.proctable import Process, process_table
from unified._cli.serve import FAKE_SERVERS, start_fake

FAKE = {"gemini-cli": "gemini", "claude-code": "anthropic", "codex": "openai"}

STOPS = [
    pytest.param("gemini-cli", signal.SIGTERM, 143, id="15-143-gemini-cli"),
    pytest.param("claude-code", signal.SIGINT, 130, id="2-130-claude-code"),
    pytest.param("codex", signal.SIGINT, 130, id="2-130-codex"),
    pytest.param("codex", signal.SIGTERM, 143, id="15-143-codex"),
]
"""(`served_env` backend, signal, exit code) for the signal tests: every backend stopped, each signal on a slow-starting
binary. The CLI handles both signals alike for every backend (`_cli.main._STOP_SIGNALS`, only the exit code differs),
and a backend's cleanup is the same whatever the signal; codex, the cheapest start, takes both."""


def shell_call(backend: str, command: str) -> dict[str, object]:
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
    call = shell_call(backend, f"tail -f {log}")
    script.write_text(json.dumps({"turns": [{"kind": "model", "function_calls": [call]}]}))
    fake = FAKE_SERVERS[FAKE[backend]]
    served = start_fake(FAKE[backend], script, 0, tmp_path / "serve")
    env = {name: value for name, value in os.environ.items() if name not in fake.unset}
    try:
        yield env | served.exports() | {"UNIFIED_TEST_BACKEND": backend, "UNIFIED_TEST_LOG": str(log)}
    finally:
        served.close()


def descendants(root: int) -> list[Process]:
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


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Stoppable:
    """A CLI command started as a user starts it, read until the model's never-ending command runs."""

    process: subprocess.Popen[str]
    lines: list[str]
    """What it printed up to then (one JSON event a line)."""
    started: list[Process]
    """Every process under it then: none may outlive it."""


def start_until_the_command_runs(argv: list[str], env: dict[str, str], cwd: Path) -> Stoppable:
    """Start `python -m unified._cli ARGV` and read its events until the tool command (`tail -f LOG`) runs."""
    log = env["UNIFIED_TEST_LOG"]
    process = subprocess.Popen(
        [sys.executable, "-m", "unified._cli", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    try:
        assert process.stdout is not None
        lines: list[str] = []
        for line in process.stdout:
            lines.append(line)
            if json.loads(line)["type"] == "permission_decision":
                break
        deadline = time.monotonic() + HANG_GUARD_S
        while not any(log in cmdline(pid) for pid, _ in descendants(process.pid)):  # the command runs
            assert time.monotonic() < deadline, "the tool command never started"
            time.sleep(0.05)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return Stoppable(process, lines, descendants(process.pid))


def run_unified(
    args: Sequence[str | bytes],
    home: Path,
    cwd: Path | bytes,
    env: dict[str, str] | None = None,
    before: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`unified ARGS` in a child Python, its output read as UTF-8 (a byte that is not, as U+FFFD: the bad-input
    tests give names that are not UTF-8). Its environment: a dummy Gemini key that reaches nothing and a data
    folder under `home`, else `env`; `before` runs in the child before it starts (a resource limit of its own)."""
    if env is None:
        env = {
            **os.environ,
            "GEMINI_API_KEY": "not-a-key",
            "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",  # never reached: refused before
            "UNIFIED_DATA_DIR": str(home / "unified-data"),
        }
    return subprocess.run(
        [sys.executable, "-m", "unified", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        timeout=HANG_GUARD_S,
        check=False,
        preexec_fn=before,
    )
