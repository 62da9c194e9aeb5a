"""Stand-ins for an agent binary that is broken in a way the real one cannot be made to be, shared by the
bad-input tests of the binary backends (tests/e2e/*/test_*_bad_input.py): a path that is missing, a
directory, a file without its `x` bit, and tiny `/bin/sh` scripts that answer `--version` as the pinned
binary does and then print garbage or exit. Everything the real binary can be made to do (a provider's
429, a dropped stream, a kill mid-run) the tests do with the real binary against a fake model server.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import execute
from unified._binary import framing
from unified._binary.process import AgentSubprocess
from unified._binary.proctable import Process, alive, start_time
from unified.events import ErrorEvent, Result, TextDelta, UnifiedEvent
from unified.testing import ModelTurn
from unified.types import ExecuteParams

__all__ = [
    "BANNERS",
    "BROKEN",
    "GARBAGE_LINES",
    "SLOW",
    "Started",
    "broken_binary",
    "killed_at_first_text",
    "leave_at_first_text",
    "script_binary",
    "shim",
    "the_error",
    "unmakeable_folder_error",
]

SLOW = ModelTurn(text="A slow answer that takes its time.", text_chunks=6, chunk_delay=0.5)
"""An answer in six pieces half a second apart: the run is still going when its first text arrives."""


class Started:
    """A `start_process` that starts `binary` with the backend's own starter (`start_codex`, `start_gemini`),
    keeping each process as (pid, start time): a later process that reuses a pid is not taken for it."""

    def __init__(
        self, start: Callable[[Sequence[str], Path, Mapping[str, str]], AgentSubprocess], binary: Path | str
    ) -> None:
        self.start = start
        self.binary = str(binary)
        self.processes: list[Process] = []

    def __call__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentSubprocess:
        process = self.start([self.binary, *argv[1:]], cwd, env)
        started_at = start_time(process.pid) if process.pid is not None else None
        if process.pid is not None and started_at is not None:  # None: it has already ended
            self.processes.append((process.pid, started_at))
        return process

    def still_running(self) -> list[Process]:
        return [process for process in self.processes if alive(process)]


async def leave_at_first_text(params: ExecuteParams, how: str) -> None:
    """Run `params` and leave it at its first text: by `break` out of the stream (`how="break"`), or by
    cancelling an enclosing cancel scope (`"cancel_scope"`)."""
    with anyio.fail_after(HANG_GUARD_S):
        if how == "break":
            async with execute(params) as stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        break
        else:
            with anyio.CancelScope() as scope:
                async with execute(params) as stream:
                    async for event in stream:
                        if isinstance(event, TextDelta):
                            scope.cancel()
            assert scope.cancelled_caught


GARBAGE_LINES = (
    "echo 'Welcome! this line is no JSON'\n"
    "printf '\\377\\376 not utf-8\\n'\n"
    "echo '[1, 2, 3]'\n"
    'echo \'{"type": 5, "id": [], "method": {}, "result": 5}\'\n'
    "head -c 9000000 /dev/zero | tr '\\0' x; echo\n"  # one line of 9 MB: over the 8 MB line cap
)
"""Shell lines printing, to stdout, a line that is no JSON, one that is not UTF-8, JSON that is no object, an
object of the wrong shape and a line over the cap."""


def script_binary(folder: Path, name: str, version: str, body: str) -> Path:
    """An executable `/bin/sh` script `folder/name` that prints `version` for `--version` and runs `body`
    otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{version}"; exit 0; fi\n{body}')
    path.chmod(0o755)
    return path


def shim(folder: Path, name: str, real: Path | str, banner: str) -> Path:
    """A `/bin/sh` launcher `folder/name` that runs the shell command `banner` (which prints to stdout; not for
    `--version`), then becomes `real`: a version manager's shim saying which Node it picked."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\nif [ "$1" != --version ]; then {banner}; fi\nexec "{real}" "$@"\n')
    path.chmod(0o755)
    return path


BANNERS = {
    "banner": "echo 'Now using node v22.11.0 (npm v10.9.0)'",
    "bom": "printf '\\357\\273\\277'",
    "carriage-return": "printf 'Loading...\\r'",
}
"""What a launcher prints before the binary's first line: a line of its own, a byte order mark, a progress text
ended by a carriage return alone (the last two ran into that first line)."""


def broken_binary(folder: Path, name: str, kind: str) -> Path:
    """A path that names no runnable binary: `missing`, a `directory`, a file `not_executable`, a script
    whose `--version` prints no version (`no_version`), or one whose `#!` line cannot start it (`_SCRIPTS`)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if kind == "directory":
        path.mkdir()
    elif kind == "not_executable":
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o644)
    elif kind == "no_version":
        path.write_text("#!/bin/sh\necho 'Segmentation fault? no, just garbage'\n")
        path.chmod(0o755)
    elif kind in _SCRIPTS:
        path.write_bytes(_SCRIPTS[kind])
        path.chmod(0o755)
    elif kind != "missing":
        raise ValueError(f"unknown kind {kind!r}")
    return path


_SCRIPTS = {
    "bad_interpreter": b"#!/nonexistent/sh\necho 0.61.0\n",
    "windows_line_ends": b"#!/bin/sh\r\necho 0.61.0\r\n",
    "interpreter_not_on_path": b"#!/usr/bin/env no-such-interpreter-r5\necho 0.61.0\n",
}
"""Scripts whose `#!` line cannot start them (each would print a supported version if it ran)."""

BROKEN = {
    "missing": "which does not exist",
    "directory": "which is a directory, not the executable",
    "not_executable": "which is not executable",
    "no_version": "did not report a version",
    "bad_interpreter": "whose interpreter '/nonexistent/sh' (its `#!` line) is not there",
    "windows_line_ends": "Windows line endings",
    "interpreter_not_on_path": "no 'no-such-interpreter-r5' is on the PATH",
}
"""What the error's message says for each `broken_binary` kind."""


async def killed_at_first_text(
    params: ExecuteParams, started: Started, kill: Callable[[int, int], None] = os.kill
) -> list[UnifiedEvent]:
    """Every event of a run of `params` whose process `kill` sends SIGKILL at its first text (`os.killpg` for a
    backend that starts it in a process group of its own)."""
    events: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with execute(params) as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, TextDelta) and started.still_running():
                    kill(started.processes[-1][0], signal.SIGKILL)
    return events


def the_error(events: list[UnifiedEvent]) -> ErrorEvent:
    """The run's one error, after which it ended `error`."""
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    last = events[-1]
    assert isinstance(last, Result)
    assert last.status == "error"
    return error


def unmakeable_folder_error(events: list[UnifiedEvent], backend: str, folder: str, setting: str) -> None:
    """The run ended on one `backend_unavailable`: `backend` cannot make its folder under /proc (`folder`, the end
    of its path, named) and says to point `setting` elsewhere (bad input round 18, claude-code and codex)."""
    error = the_error(events)
    assert error.code == "backend_unavailable", error.message
    assert f"the {backend} backend cannot make its folder /proc/" in error.message
    assert folder in error.message
    assert f"point {setting} at a folder that exists or can be made" in error.message


SMALL_LINE_CAP = 1024 * 1024
"""The line cap an over-the-cap answer is tested at (`small_line_cap`): the binaries write and unified skips a
1.5 MiB answer in a fraction of the time of a 9 MiB one past the real cap (`limits.MAX_EVENT_BYTES`, 8 MiB: 36-50 s a
test on a loaded machine), through the same code."""


def small_line_cap(monkeypatch: pytest.MonkeyPatch) -> int:
    """Lower the binaries' line cap for this test (`framing.MAX_LINE_BYTES`, read as each process starts); the cap."""
    monkeypatch.setattr(framing, "MAX_LINE_BYTES", SMALL_LINE_CAP)
    return SMALL_LINE_CAP
