"""The real bash, for the shell policy's differential tests: what a command line really does."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tests.hang_guard import HANG_GUARD_S

__all__ = ["run_bash"]


def run_bash(command: str, cwd: Path, env: Mapping[str, str] | None = None) -> None:
    """`bash -c command` in `cwd`, in a session of its own, its output dropped; whatever it left
    running in its process group (a `&` job) is killed once it ends, and the whole group if it
    outlives the hang guard (a generated form that loops must neither hang the suite nor leave
    processes behind)."""
    child = subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        child.wait(timeout=HANG_GUARD_S)  # hang guard: each form ends in milliseconds
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
