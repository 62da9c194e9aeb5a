"""Bad input round 23, the unit tier: the CLI's less-used commands (`replay` of a cut claude-code transcript,
`install` into a folder that cannot be made or with an npm that installs nothing, `serve` on a busy port) and the
library's `ExecuteParams` given a directory with `~`. Each case says what happened before, or that it is a pin.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.hang_guard import HANG_GUARD_S
from tests.harness.cli_main import in_process
from unified import ExecuteParams
from unified.testing._replay import ReplayError, describe

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"

# --- `unified replay` of a claude-code transcript cut before its user message -----------------------------------


def test_a_claude_transcript_cut_before_its_user_message_is_refused_before_it_runs(tmp_path: Path) -> None:
    """FAILED before: a transcript cut after the answer to initialize (metadata naming the prompt, so nothing looked
    for a user message) passed the check; the stand-in then answered the adapter's user message with nothing and
    `unified replay` waited out the 90 s stall bound (measured: killed at 30 s, "replay interrupted"). Now it is
    refused before anything runs, saying it was cut short."""
    cut = tmp_path / "question.jsonl"
    lines = (CASSETTES / "claude-code" / "question.jsonl").read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[:3]))  # metadata, initialize, its answer
    with pytest.raises(ReplayError) as caught:
        describe(cut)
    assert str(caught.value) == (
        f"{cut}: the transcript never sends a user message (it was cut short?); record it again"
    )


def test_a_whole_claude_transcript_still_reads() -> None:
    """Pin: the recorded cassette whose prefix the case above cuts is described with its metadata's prompt."""
    assert describe(CASSETTES / "claude-code" / "question.jsonl").prompt == "go"


def test_a_file_of_no_cassette_kind_names_every_transcript_backend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: "expected a .yaml vcrpy cassette or a .jsonl gemini-cli or claude-code transcript", leaving out
    codex, whose transcripts `unified replay` plays too (its `--help` names all three)."""
    done = in_process(capsys, "replay", str(tmp_path))
    _assert_one_error_line(
        done,
        EXIT_BAD_INPUT,
        f"{tmp_path}: not a cassette (expected a .yaml vcrpy cassette or a .jsonl transcript of gemini-cli, "
        "claude-code or codex)",
    )


# --- `unified install` ---------------------------------------------------------------------------------------------


def _tools(directory: Path, npm: str) -> Path:
    """A `node` of the right version and an `npm` running `npm` (a shell body), both stand-ins: npm cannot run
    offline."""
    directory.mkdir()
    for name, body in (("node", "echo v22.1.0\n"), ("npm", npm)):
        (directory / name).write_text("#!/bin/sh\n" + body)
        (directory / name).chmod(0o755)
    return directory


def _install(path: Path, prefix: Path) -> subprocess.CompletedProcess[str]:
    """`unified install codex --prefix PREFIX` in a process of its own (npm's output goes to its stderr's fd), with
    the stand-ins of `path` first on PATH."""
    return subprocess.run(
        [sys.executable, "-m", "unified._cli", "install", "codex", "--prefix", str(prefix)],
        env={**os.environ, "PATH": f"{path}{os.pathsep}/usr/bin{os.pathsep}/bin"},
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,  # a hang guard only
        check=False,
    )


@pytest.mark.e2e  # runs unified and the stand-ins in processes of their own
@pytest.mark.skipif(sys.platform == "win32", reason="stand-in tools are shell scripts")
def test_an_install_prefix_under_a_file_is_bad_input_naming_it(tmp_path: Path) -> None:
    """FAILED before: `unified install codex --prefix FILE/x` ended with "unexpected NotADirectoryError ... (a bug in
    unified ...)", exit 70 (and `--prefix /proc/self/x` with a FileNotFoundError). Now one line, exit 2, npm not
    run."""
    bin_dir = _tools(tmp_path / "bin", f"touch {tmp_path / 'npm-ran'}\n")
    (tmp_path / "notes.txt").write_text("x")
    prefix = tmp_path / "notes.txt" / "x"
    done = _install(bin_dir, prefix)
    _assert_one_error_line(
        done, EXIT_BAD_INPUT, f"the install folder {prefix} cannot be made: Not a directory", "pass --prefix a folder"
    )
    assert not (tmp_path / "npm-ran").exists()


@pytest.mark.e2e  # runs unified and the stand-ins in processes of their own
@pytest.mark.skipif(sys.platform == "win32", reason="stand-in tools are shell scripts")
def test_an_npm_that_exits_0_and_installs_nothing_is_said_so(tmp_path: Path) -> None:
    """FAILED before: an npm that exits 0 and leaves no binary (a wrapper, a config that skips installs) was
    "`npm install ...` failed (exit 0)", which reads as a contradiction. Now it names the binary it did not leave."""
    prefix = tmp_path / "prefix"
    done = _install(_tools(tmp_path / "bin", "exit 0\n"), prefix)
    assert done.returncode == 1, done.stderr
    assert f"failed (it exited 0 but left no {prefix / 'node_modules' / '.bin' / 'codex'})" in done.stderr
    assert "(exit 0)" not in done.stderr


# --- `unified serve` -----------------------------------------------------------------------------------------------


def test_serve_on_a_port_in_use_is_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Pin: a port another process listens on is bad input, exit 2, naming the port and the system's reason."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = in_process(capsys, "serve", "--port", str(port))
    _assert_one_error_line(done, EXIT_BAD_INPUT, f"cannot listen on 127.0.0.1:{port}", "in use")


def test_serve_of_a_binary_file_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Pin: bytes that are no text, named as a script, are refused in one line before anything listens."""
    script = tmp_path / "script.yaml"
    script.write_bytes(b"\x00\x01\xff\xfe")
    done = in_process(capsys, "serve", str(script))
    _assert_one_error_line(done, EXIT_BAD_INPUT, f"{script}: not a script this fake can play", "utf-8")


# --- `ExecuteParams` given `~` ---------------------------------------------------------------------------------------


def test_a_cwd_with_a_tilde_is_the_home_directory_a_shell_would_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: `cwd="~/work"` passed the check (which expanded it) but stayed `~/work`: the API backends' tools
    ran in, and the session was filed under, a folder named `~` in the process's own directory. Now `~` is expanded
    where it is given, for `include_directories` too."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "work").mkdir()
    params = ExecuteParams(prompt="hi", backend="generate-content", cwd="~/work", include_directories=["~"])
    assert params.cwd == tmp_path / "work"
    assert params.include_directories == (tmp_path,)


def test_a_cwd_of_an_unknown_users_home_is_refused_where_it_is_given() -> None:
    """FAILED before: `cwd="~nobody-unified-23/x"` was taken, and the run raised pathlib's bare "RuntimeError: Could
    not determine home directory." out of `execute()` (a traceback from deep inside). Now a ValidationError naming
    it."""
    with pytest.raises(ValidationError) as caught:
        ExecuteParams(prompt="hi", backend="generate-content", cwd="~nobody-unified-23/x")
    said = str(caught.value)
    assert "the home directory of '~nobody-unified-23' is not known here" in said
    assert "name the directory without `~`" in said
