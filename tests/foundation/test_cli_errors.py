"""Bad input through the real `unified` command: one `error:` line, a documented exit code, no traceback.

The bad files and arguments go through `main()` in this process, as the console script calls it (a subprocess
each cost ~0.4 s of CPU starting Python and importing unified); one of each, the help, and a reader that leaves
(`| head -1`, a real pipe whose read end is closed) run `python -m unified._cli` as a user's shell would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.harness.cli_main import in_process

ROOT = Path(__file__).parents[2]
TOOL_CALL = ROOT / "cassettes" / "interactions" / "tool-call.yaml"
EXIT_BAD_INPUT = 2
EXIT_BROKEN_PIPE = 141


def _unified(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unified._cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=dict(os.environ),
        timeout=HANG_GUARD_S,  # a hang guard only: each case takes a second or two
        check=False,
    )


def _assert_one_error_line(done: subprocess.CompletedProcess[str], code: int, *phrases: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    for phrase in phrases:
        assert phrase in lines[0]
    assert done.stdout == ""


@pytest.fixture
def bad_files(tmp_path: Path) -> Path:
    text = TOOL_CALL.read_text()
    (tmp_path / "broken.yaml").write_text("interactions: [\n  - {request: 1\n")
    (tmp_path / "truncated.yaml").write_text(text[: len(text) // 2])
    (tmp_path / "headless.yaml").write_text(text[: text.index("interactions:") + len("interactions:\n- ")])
    (tmp_path / "other.yaml").write_text("name: not a cassette\n")
    (tmp_path / "broken.jsonl").write_text('{"recorded_from": "x"}\n{not json\n')
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe\x00\x01")
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "folder.yaml").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("name", "phrase"),
    [
        ("broken.yaml", "broken.yaml:2: malformed YAML: did not find expected node content (column 3)"),
        ("truncated.yaml", "truncated.yaml:138: malformed YAML: found unexpected end of stream"),
        ("headless.yaml", "lacks a request uri or a response"),
        ("other.yaml", "without vcrpy interactions"),
        ("broken.jsonl", "broken.jsonl:2: not JSON: a key is not a double-quoted string, at column 2"),
        ("binary.jsonl", "not a text file"),
        ("notes.txt", "not a cassette"),
        ("folder.yaml", "is a directory"),
        ("missing.yaml", "no such file"),
    ],
)
def test_replay_of_a_bad_file(bad_files: Path, name: str, phrase: str, capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_error_line(in_process(capsys, "replay", str(bad_files / name)), EXIT_BAD_INPUT, phrase)


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (("run",), "Missing argument"),
        (("run", ""), "the prompt is empty"),
        (("run", " \n\t"), "the prompt is empty"),
        (("run", "hi", "--cwd", "/nonexistent/dir"), "does not exist"),
        (("run", "hi", "--cwd", str(TOOL_CALL)), "is not a directory"),
        (("run", "hi", "--resume", ""), "the session reference (resume) is empty"),
        (("run", "hi", "--resume", " ", "--backend", "scripted"), "the session reference (resume) is empty"),
        (("run", "hi", "--backend", "claude"), "'claude' is not one of"),
        (("run", "hi", "--max-turns", "0"), "--max-turns"),
        (("run", "hi", "--bogus"), "No such option"),
        (("nonsense",), "No such command"),
        (("replay", str(TOOL_CALL), "--cwd", "/nonexistent/dir"), "does not exist"),
        (("replay", str(TOOL_CALL), "--cwd", str(TOOL_CALL)), "is not a directory"),
    ],
)
def test_bad_arguments(args: tuple[str, ...], phrase: str, capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_error_line(in_process(capsys, *args), EXIT_BAD_INPUT, phrase)


@pytest.mark.e2e  # runs real subprocesses
def test_a_bad_file_and_a_bad_argument_through_the_real_command(bad_files: Path) -> None:
    """The two tests above, one case each, as a user's shell starts the command."""
    _assert_one_error_line(_unified("replay", str(bad_files / "broken.yaml")), EXIT_BAD_INPUT, "malformed YAML")
    _assert_one_error_line(_unified("run", "hi", "--bogus"), EXIT_BAD_INPUT, "No such option")


def _with_reader_gone(*args: str) -> tuple[int, str]:
    """Run `unified ARGS` with stdout a pipe whose reader has already left."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "unified._cli", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=HANG_GUARD_S,  # a hang guard only
            check=False,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("replay", str(TOOL_CALL), "--json"),
        ("replay", str(TOOL_CALL)),
        ("run", "hi", "--backend", "scripted", "--json"),
        ("run", "hi", "--backend", "scripted"),
        ("capabilities", "--json"),
        ("capabilities",),
        ("schema",),
        ("demo", "--backend", "generate-content", "--json"),
        ("demo", "--backend", "interactions"),
    ],
)
@pytest.mark.e2e  # runs real subprocesses
def test_a_reader_that_left_ends_the_command_quietly(args: tuple[str, ...]) -> None:
    code, stderr = _with_reader_gone(*args)
    if args[0] == "demo" and "--json" in args:  # said before anything reaches stdout: the model is scripted
        stderr = stderr[: stderr.index("The model is scripted")] + stderr[stderr.index("are real.") + 10 :]
    assert stderr == ""
    assert code == EXIT_BROKEN_PIPE


@pytest.mark.e2e  # runs real subprocesses
def test_replay_piped_into_head_in_a_shell() -> None:
    command = f'{sys.executable} -m unified._cli replay {TOOL_CALL} --json | head -1; echo "rc=${{PIPESTATUS[0]}}" >&2'
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=HANG_GUARD_S, check=False)
    assert len(done.stdout.splitlines()) == 1
    assert '"type":"session_started"' in done.stdout
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() in ("rc=0", f"rc={EXIT_BROKEN_PIPE}")  # 0 when every event fit in the pipe first


@pytest.mark.e2e  # runs real subprocesses
def test_help_reads_as_usage() -> None:
    done = _unified("run", "--help")
    assert done.returncode == 0
    assert "unified run [OPTIONS] [PROMPT]" in done.stdout  # no PROMPT with --retry
    assert "<bool>" not in done.stdout
    assert "{prompt}" not in done.stdout
    shown = _unified("sessions", "show", "--help")
    assert "REF: a short id" in shown.stdout


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (("run", "hi", "--json", "--history", "missing.json"), "cannot read --history"),
        (("run", "hi", "--json", "--history", "notes.txt"), "is not a conversation"),
        (("run", "hi", "--json", "--bogus"), "No such option: --bogus"),
        (("run", "hi", "--json", "--max-turns", "x"), "Invalid value for '--max-turns'"),
        (("run", "hi", "--json", "--model"), "Option '--model' requires an argument"),
        (("run", "--json"), "Missing argument 'PROMPT'"),
        (("run", "hi", "--json", "--backend", "claude"), "'claude' is not one of"),
        (("demo", "--json", "--bogus"), "No such option: --bogus"),
        (("replay", "--json", "missing.jsonl"), "missing.jsonl"),
        (("record", "--json"), "Missing argument"),
    ],
)
def test_a_usage_error_of_run_json_is_one_error_event_on_stdout(
    args: tuple[str, ...],
    phrase: str,
    bad_files: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A caller parsing `run --json` reads why nothing ran from stdout, as the `error` event a failing run gives;
    the `error:` line and exit 2 stay."""
    monkeypatch.chdir(bad_files)
    done = in_process(capsys, *args)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    (said,) = done.stderr.strip().splitlines()
    assert said.startswith("error: ")
    assert phrase in said
    (line,) = done.stdout.splitlines()
    event = json.loads(line)
    assert (event["type"], event["code"], event["fatal"]) == ("error", "configuration_error", True)
    assert event["message"] == said.removeprefix("error: ")


def test_only_run_json_puts_its_usage_errors_on_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json, or with `--json` as the prompt after `--`, stdout stays empty."""
    _assert_one_error_line(in_process(capsys, "run", "hi", "--bogus"), EXIT_BAD_INPUT, "No such option")
    _assert_one_error_line(in_process(capsys, "run", "--bogus", "--", "--json"), EXIT_BAD_INPUT, "No such option")
