"""Red team, round 7: the shell's resource bounds, the permission answers unified gives to the agent
binaries' own tools, search's time budget inside one file, and what a tool's environment and output
may carry (the file tools and the parser had rounds 1-6).

Holes (each test marked SUCCEEDED before fails on the code before its fix):

- a shell command could write a file of any size: `yes > f` filled the disk at about a gigabyte a
  second for the hour a command may run (`SHELL_MAX_RUN_S`).

Attacks that held are kept below their section as pins.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.security.test_red_team_round5 import _capability
from unified._internal import limits
from unified.tools import ToolCall, ToolRuntime

pytestmark = [pytest.mark.anyio]

PYTHON = shlex.quote(sys.executable)
CAN_RAISE_LIMITS = _capability(24)
MiB = 1024 * 1024


async def _shell(ws: Path, command: str) -> str:
    async with ToolRuntime(ws, approval_mode="yolo", shell_timeout_s=60) as rt:
        [outcome] = await rt.run_batch([ToolCall("1", "run_shell_command", {"command": command})])
    assert not outcome.is_error, outcome.response
    return str(outcome.response["output"])


# --- the shell's bounds ---------------------------------------------------------------------------------------


@pytest.mark.e2e  # runs bash
async def test_e2e_a_file_written_past_the_bound_stops_there_and_the_result_says_why(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SUCCEEDED before: `yes > f` (here 8 MiB of zeros) wrote all it was given, to the disk's end."""
    monkeypatch.setattr(limits, "SHELL_MAX_FILE_BYTES", 1 * MiB, raising=False)
    output = await _shell(ws, "head -c 8388608 /dev/zero > big")
    assert (ws / "big").stat().st_size <= 1 * MiB
    assert "File size limit exceeded" in output
    assert "write files up to 1 MiB" in output
    assert "Limits:" in output


@pytest.mark.e2e  # runs bash and python
@pytest.mark.parametrize(
    "command",
    [
        pytest.param(
            "ulimit -f unlimited; ulimit -HSf unlimited; prlimit --pid $$ --fsize=unlimited 2>/dev/null; "
            "head -c 8388608 /dev/zero > big",
            id="lifted",
            marks=pytest.mark.skipif(CAN_RAISE_LIMITS, reason="a process with CAP_SYS_RESOURCE may raise a hard limit"),
        ),
        # python ignores SIGXFSZ: its write fails with EFBIG ("File too large") instead
        pytest.param(f'{PYTHON} -c \'open("big", "wb").write(bytes(8 << 20))\'', id="python"),
        pytest.param("exec 3>big; head -c 8388608 /dev/zero >&3", id="descriptor"),
        pytest.param("head -c 8388608 /dev/zero | dd of=big bs=64k 2>&1", id="dd"),
    ],
)
async def test_e2e_no_writer_passes_the_file_bound(ws: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """SUCCEEDED before: there was no bound to pass."""
    monkeypatch.setattr(limits, "SHELL_MAX_FILE_BYTES", 1 * MiB, raising=False)
    output = await _shell(ws, command)
    assert (ws / "big").stat().st_size <= 1 * MiB, output
    assert "Limits:" in output, output
