"""`unified` given bad input as a user gives it, round 2: in a subprocess, with argv bytes no test runner
can pass as text.

Hostile cases tried (each asserted below):
- a prompt whose bytes are not UTF-8 (`$'\\xff'` in a shell), on the API backends: the run ended with
  `internal_error` ("This is a bug in unified's generate-content adapter", a UnicodeEncodeError); now one
  `error:` line saying what is wrong, exit 2, before anything starts or is stored;
- a working directory whose name is not UTF-8 (`--cwd`, or the directory `unified run` runs in):
  `internal_error` (UnicodeEncodeError) on generate-content, and the gemini CLI looked for another directory
  ("Directory does not exist", a `backend_error`); now one `error:` line, exit 2;
- a session reference of 50,000 characters to `unified sessions show|delete|export`: the error line
  quoted all of it; now 80 characters of it;
- stdout on a full disk (`> /dev/full`) or closed (`>&-`): "error: unexpected ExceptionGroup ... (a bug in
  unified)" or "unexpected AttributeError", exit 70; now one line saying stdout cannot be written, exit 74
  (a run is cancelled first);
- stdin closed (`<&-`): `unified run` failed with "unexpected AttributeError: 'NoneType' object has no
  attribute 'isatty'", exit 70; now it reads as /dev/null (no input, not a terminal).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli.conftest import run_unified
from tests.hang_guard import HANG_GUARD_S

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
def test_a_prompt_whose_bytes_are_not_utf8_is_one_error_line_and_exit_2(
    backend: str, isolated_home: Path, tmp_path: Path
) -> None:
    done = run_unified(["run", b"caf\xc3 \xff", "--backend", backend], isolated_home, tmp_path)
    err = done.stderr
    assert done.returncode == 2, err
    assert err.startswith("error: the prompt is not text: it holds a lone surrogate (U+DCC3) at character 3"), err
    assert "internal_error" not in err
    assert "Traceback" not in err
    assert not (isolated_home / "unified-data" / "sessions").exists()  # nothing was stored


@pytest.mark.parametrize("command", [["sessions", "show"], ["sessions", "delete", "--yes"], ["sessions", "export"]])
def test_a_session_reference_of_50000_characters_is_quoted_clipped(
    command: list[str], isolated_home: Path, tmp_path: Path
) -> None:
    ref = "a" * 50_000
    done = run_unified([*command, ref], isolated_home, tmp_path)  # every backend searched
    out = done.stdout + done.stderr
    assert done.returncode in (1, 2), out
    assert "no session matches" in out
    assert "a" * 79 + "…" in out
    assert len(out) < 5_000, f"{len(out):,} characters of output for one error"


@pytest.mark.usefixtures("binaries")
@pytest.mark.parametrize("backend", ["generate-content", "gemini-cli"])
def test_a_cwd_whose_name_is_not_utf8_is_one_error_line_and_exit_2(
    backend: str, isolated_home: Path, tmp_path: Path
) -> None:
    workspace = os.fsencode(tmp_path) + b"/caf\xc3 \xff"
    os.mkdir(workspace)
    named: list[str | bytes] = ["--cwd", workspace]
    for args in (named, []):  # named, or the directory it runs in
        where = Path(os.fsdecode(workspace)) if not args else tmp_path
        done = run_unified(["run", "hi", "--backend", backend, *args], isolated_home, where)
        err = done.stderr
        assert done.returncode == 2, err
        assert err.startswith("error: cwd b'"), err
        assert "is not valid UTF-8" in err
        assert "internal_error" not in err
        assert "Traceback" not in err


FULL_DISK = Path("/dev/full")
"""Every write fails with ENOSPC: a full disk under a redirected stdout, without filling one."""


@pytest.mark.skipif(not FULL_DISK.exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize(
    ("args", "running"),
    [
        (["run", "hi", "--backend", "scripted"], True),
        (["run", "hi", "--backend", "scripted", "--json"], True),
        (["capabilities"], False),
        (["capabilities", "--json"], False),
        (["schema"], False),
        (["sessions", "list"], False),
    ],
)
def test_stdout_on_a_full_disk_is_one_error_line_and_exit_74(
    args: list[str], running: bool, isolated_home: Path, tmp_path: Path
) -> None:
    with FULL_DISK.open("w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "unified", *args],
            cwd=tmp_path,
            env={**os.environ, "UNIFIED_DATA_DIR": str(isolated_home / "unified-data")},
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=HANG_GUARD_S,
            check=False,
        )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 74, err
    assert err.startswith("error: cannot write the output to stdout: No space left on device"), err
    assert ("the run was cancelled" in err) == running
    assert "unexpected" not in err
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err


def test_a_closed_stdout_is_one_error_line_and_exit_74(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "unified", "run", "hi", "--backend", "scripted"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=HANG_GUARD_S,
        check=False,
        preexec_fn=lambda: os.close(1),  # as `unified run ... >&-` starts it
    )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 74, err
    assert err.startswith("error: stdout is closed"), err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["run", "hi", "--backend", "scripted"], 0, ""),
        (["run", "hi", "--backend", "scripted", "--history", "-"], 2, "error: --history - is not a conversation"),
    ],
)
def test_a_closed_stdin_reads_as_empty(args: list[str], code: int, said: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "unified", *args],
        cwd=tmp_path,
        capture_output=True,
        timeout=HANG_GUARD_S,
        check=False,
        preexec_fn=lambda: os.close(0),  # as `unified run ... <&-` starts it
    )
    err = done.stderr.decode(errors="replace")
    assert done.returncode == code, err
    assert err.startswith(said), err
    assert "unexpected" not in err
