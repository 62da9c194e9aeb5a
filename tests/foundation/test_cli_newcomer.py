"""The command line as a newcomer meets it (issue 25), each case run as the user ran it.

`./scripts/demo` with Node.js hidden, `unified demo` at 80 columns and interrupted with Ctrl-C,
`unified record` without credentials, `unified serve` with `unified run` against it, JSON Lines
from every `--json`, one-line errors, `--version`, `-h` and completion. Each case has its own HOME, XDG
folders and data directory. What a process of its own shows (the demo, its signals, `serve`, a binary's run,
`--version`, `-h`, completion, `python -m unified`) runs the real command in a subprocess; a case whose whole
story is an exit code and the lines written (input refused before anything runs, a run that ends in error
before its first request, a replay, `--json` lines, an API backend's run against `serve`) goes through the
console script's entry point in this process (`_in_process`, tests/harness/cli_main.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.harness.cli_main import environ_of, in_process
from unified import capabilities as matrix
from unified._cli.demo_backends import DEMO_BACKENDS

pytestmark = pytest.mark.e2e  # every case runs the real command

ROOT = Path(__file__).parents[2]
NODE_TOOLS = {"node", "nodejs", "npm", "npx", "corepack", "gemini"}
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "GEMINI_CLI_HOME": str(home),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "UNIFIED_DATA_DIR": str(home / "unified-data"),
        "COLUMNS": "80",
    }
    env.pop("UNIFIED_DEBUG", None)
    return env | extra


def _unified(*args: str, home: Path, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unified._cli", *args],
        capture_output=True,
        text=True,
        env=_env(home, **extra),
        cwd=cwd,
        timeout=HANG_GUARD_S,
        check=False,
    )


def _in_process(
    *args: str,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cwd: Path | None = None,
    **extra: str,
) -> subprocess.CompletedProcess[str]:
    """`_unified` where a process of its own would show nothing more (tests/harness/cli_main.py): the console
    script's entry point in this process, with `_env`'s environment, in `cwd`."""
    environ_of(_env(home, **extra), monkeypatch)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    return in_process(capsys, *args)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _one_error_line(done: subprocess.CompletedProcess[str], code: int, *phrases: str) -> str:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), lines
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    return lines[0]


@pytest.fixture
def no_node(tmp_path: Path) -> str:
    """A PATH with every program of this one except Node.js, npm and gemini: Node hidden, as in the issue."""
    hidden = tmp_path / "path-without-node"
    hidden.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if Path(folder).is_dir() else ():
            target = hidden / program.name
            if program.name not in NODE_TOOLS and not target.exists() and os.access(program, os.X_OK):
                target.symlink_to(program)
    assert shutil.which("node", path=str(hidden)) is None
    return str(hidden)


# --- the demo -----------------------------------------------------------------------------------------


def test_scripts_demo_refuses_a_bad_backend_before_setup(isolated_home: Path) -> None:
    done = subprocess.run(
        [str(ROOT / "scripts" / "demo"), "--backend", "bogus"],
        capture_output=True,
        text=True,
        env=_env(isolated_home),
        timeout=HANG_GUARD_S,
        check=False,
    )
    _one_error_line(done, EXIT_BAD_INPUT, "'bogus' is not one of: all, " + ", ".join(DEMO_BACKENDS))
    assert "setup:" not in done.stderr  # nothing was set up (or checked) first


def test_scripts_demo_without_node_runs_the_api_backends_and_says_what_it_skipped(
    isolated_home: Path, no_node: str
) -> None:
    env = _env(isolated_home, PATH=no_node)
    env.pop("UNIFIED_GEMINI_BIN", None)
    done = subprocess.run(
        [str(ROOT / "scripts" / "demo"), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    skips = [line for line in done.stderr.splitlines() if line.startswith("skipped")]
    assert skips == [
        "skipped gemini-cli: Node.js was not found on PATH; the gemini CLI needs Node.js 20+ "
        "(install Node.js 20+, then run ./scripts/demo)"
    ]
    assert "npm" not in done.stderr.replace("and npm", "")  # no npm error, no npm notice
    events = [json.loads(line) for line in done.stdout.splitlines()]
    started = [e["backend"] for e in events if e["type"] == "session_started"]
    # claude and codex are native executables (npm installed them; Node never runs them): they run without Node
    assert started == ["generate-content", "interactions", "claude-code", "codex"]
    assert [e["status"] for e in events if e["type"] == "result"] == ["success"] * 4
    assert "The model is scripted" in done.stderr


def test_the_demo_at_80_columns_shows_turns_and_time_and_explains_the_differences(isolated_home: Path) -> None:
    before = _files(isolated_home)
    done = _unified("demo", "--backend", "generate-content", home=isolated_home)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("The model is scripted: FakeGemini on 127.0.0.1 plays the same 3 turns")
    summary = lines[next(i for i, line in enumerate(lines) if line.startswith("the same task")) :]
    assert summary[0].startswith("the same task, one backend"), summary[0]
    assert [line for line in [*lines[:3], *summary] if len(line) > 80] == []  # the events are the terminal's to wrap
    header = next(line for line in lines if "backend" in line and "result" in line)
    assert [cell.strip() for cell in header.strip("┃").split("┃")] == [
        "backend",
        "result",
        "turns",
        "events",
        "tools",
        "tokens",
        "time",
    ]
    row = next(line for line in lines if line.startswith("│ generate-content"))
    cells = [cell.strip() for cell in row.strip("│").split("│")]
    assert cells[1:6] == ["success", "3", cells[3], "2", "2674"]
    assert cells[6].endswith(" s")
    assert any(line.startswith("tools: list_directory, read_file") for line in lines)
    assert any(line.startswith("tokens: the script's own figures") for line in lines)
    assert _files(isolated_home) == before  # nothing written outside the demo's temporary directory


@pytest.mark.gemini_cli
def test_the_demo_of_every_backend_writes_nothing_outside_its_temporary_directory(isolated_home: Path) -> None:
    before = _files(isolated_home)
    done = _unified("demo", home=isolated_home)
    assert done.returncode == 0, done.stderr
    assert _files(isolated_home) == before  # no ~/.cache/unified/gemini-cli, no ~/.gemini, no sessions
    notes = done.stdout[done.stdout.index("the same task, 5 backends") :]
    assert "turns: gemini-cli counts 2 where the others count 3, as ACP marks no turn" in " ".join(notes.split())
    assert "events: thinking 1 on gemini-cli, 1 on generate-content, 2 on interactions" in " ".join(notes.split())


@pytest.mark.parametrize(
    ("sent", "code", "again"), [(signal.SIGINT, EXIT_INTERRUPTED, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")]
)
def test_ctrl_c_interrupts_the_demo_as_it_does_a_run(
    isolated_home: Path, sent: signal.Signals, code: int, again: str
) -> None:
    """SIGTERM too: its default action ended the demo at once, leaving its temporary directory behind."""
    temporary = isolated_home.parent / "tmp"
    temporary.mkdir()
    demo = subprocess.Popen(
        [sys.executable, "-m", "unified._cli", "demo", "--backend", "generate-content"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(isolated_home, TMPDIR=str(temporary)),
    )
    assert demo.stdout is not None
    for line in demo.stdout:  # the run has started: its session is shown
        if line.startswith("● session"):
            demo.send_signal(sent)
            break
    out, err = demo.communicate(timeout=HANG_GUARD_S)
    assert demo.returncode == code, err
    assert f"interrupting… ({again} again to stop waiting)" in err
    assert "Traceback" not in err
    finished = out.splitlines()
    # the run was interrupted, or had already ended when the signal came: either way it says so and exits 130
    assert any(line.startswith(("✘ interrupted", "✔ success")) for line in finished), out
    assert list(temporary.iterdir()) == []  # the demo's temporary directory is gone


# --- record, serve, run -------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
def test_record_without_credentials_is_one_error_line_and_writes_nothing(
    backend: str,
    isolated_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In this process: the run ends in error before any request, an exit code and a line are all there is."""

    def unified(*args: str) -> subprocess.CompletedProcess[str]:
        return _in_process(*args, home=isolated_home, monkeypatch=monkeypatch, capsys=capsys, cwd=tmp_path)

    done = unified("record", "rec/z.yaml", "hi", "--backend", backend)
    line = _one_error_line(done, 1, "rec/z.yaml not written: the run ended in error", "no API key")
    assert "unexpected" not in line
    assert not (tmp_path / "rec").exists()
    run = unified("run", "hi", "--backend", backend)
    assert run.returncode == done.returncode == 1  # as `unified run` exits


@pytest.mark.gemini_cli
def test_a_failed_gemini_cli_recording_leaves_no_cassette(isolated_home: Path, tmp_path: Path) -> None:
    done = _unified("record", "rec/z.jsonl", "hi", "--backend", "gemini-cli", home=isolated_home, cwd=tmp_path)
    _one_error_line(done, 1, "rec/z.jsonl not written: the run ended in error")
    assert "recorded" not in done.stderr
    assert not (tmp_path / "rec").exists()


@pytest.fixture
def served(isolated_home: Path) -> Iterator[dict[str, str]]:
    """`unified serve` running, and the environment its printed lines make (`unset`, then each `export`)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "unified._cli", "serve"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(isolated_home, GOOGLE_API_KEY="AIzaSy-a-real-looking-key-to-be-unset-123"),
    )
    assert server.stdout is not None
    env = _env(isolated_home, GOOGLE_API_KEY="AIzaSy-a-real-looking-key-to-be-unset-123")
    try:
        first = server.stdout.readline().split()
        assert first[0] == "unset"
        for name in first[1:]:
            env.pop(name, None)
        for _ in range(5):
            word, _, assignment = server.stdout.readline().strip().partition(" ")
            assert word == "export"
            name, _, value = assignment.partition("=")
            env[name] = value
        yield env
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=HANG_GUARD_S)
        assert server.returncode == 0, err
        assert err.strip().endswith("stopped")
        assert "streamGenerateContent → 200" in err  # each request served was said


def _run_against(env: dict[str, str], backend: str, workspace: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        [sys.executable, "-m", "unified._cli", "run", "what is here?", "--backend", backend, "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=workspace,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.gemini_cli
def test_serve_points_every_api_backend_and_the_gemini_cli_at_the_fake(
    served: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One `unified serve` for the API backends and the gemini CLI (one start of the server, not one for each). The
    API backends' runs go through `main()` in this process, given the printed lines' environment alone (what a
    process of its own would add is a Python start); the gemini CLI's is the command a shell starts."""
    assert set(served) >= {"GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", "GEMINI_MODEL", "UNIFIED_DATA_DIR"}
    assert "GOOGLE_API_KEY" not in served
    (tmp_path / "notes.txt").write_text("Ship on Friday.\n")
    with monkeypatch.context() as environ:
        environ_of(served, environ)
        environ.chdir(tmp_path)
        for backend in ("generate-content", "interactions", "generate-content"):  # the script starts over
            done = in_process(capsys, "run", "what is here?", "--backend", backend, "--json")
            assert done.returncode == 0, done.stderr
            events = [json.loads(line) for line in done.stdout.splitlines()]
            assert [e["name"] for e in events if e["type"] == "tool_use"] == ["list_directory", "read_file"]
            assert "ship the adapter layer on Friday" in str(events[-1]["final_text"])
    served["UNIFIED_GEMINI_BIN"] = os.environ.get(
        "UNIFIED_GEMINI_BIN", str(ROOT / ".gemini-cli" / "node_modules" / ".bin" / "gemini")
    )
    events = _run_against(served, "gemini-cli", tmp_path)
    assert events[-1]["status"] == "success"
    assert not (Path(served["HOME"]) / ".gemini").exists()  # the CLI wrote under the exported GEMINI_CLI_HOME


def test_serve_plays_a_recording_and_refuses_what_it_cannot_play(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with monkeypatch.context() as env:
        refused = [
            _in_process("serve", str(bad), home=isolated_home, monkeypatch=env, capsys=capsys),
            _in_process("serve", str(tmp_path / "none.json"), home=isolated_home, monkeypatch=env, capsys=capsys),
            _in_process("serve", "--fake", "nope", home=isolated_home, monkeypatch=env, capsys=capsys),
        ]
    _one_error_line(refused[0], EXIT_BAD_INPUT, "not a script this fake can play")
    _one_error_line(refused[1], EXIT_BAD_INPUT, "no such file")
    _one_error_line(refused[2], EXIT_BAD_INPUT, "'nope' is not one of")
    recording = ROOT / "tests" / "recordings" / "json-output.france.responses"
    server = subprocess.Popen(
        [sys.executable, "-m", "unified._cli", "serve", str(recording)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(isolated_home),
    )
    assert server.stdout is not None
    server.stdout.readline()  # unset ...: printed once Ctrl-C is listened for
    server.send_signal(signal.SIGINT)
    _, err = server.communicate(timeout=HANG_GUARD_S)
    assert server.returncode == 0
    assert f"playing {recording} (" in err


# --- JSON Lines, errors, basics ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("capabilities", "--json"), ("capabilities", "--json", "--backend", "interactions"), ("doctor", "--json")],
)
def test_every_json_output_is_json_lines(
    args: tuple[str, ...], isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _in_process(*args, home=isolated_home, monkeypatch=monkeypatch, capsys=capsys, UNIFIED_GEMINI_BIN="")
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout[:300]
    assert isinstance(json.loads(lines[0]), dict)


def test_sessions_list_and_show_json_are_json_lines(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In this process: what is tested is the lines written, which a process of its own would not change."""

    def unified(*args: str) -> subprocess.CompletedProcess[str]:
        return _in_process(*args, home=isolated_home, monkeypatch=monkeypatch, capsys=capsys, cwd=tmp_path)

    for prompt in ("first", "second"):
        run = unified("run", prompt, "--backend", "scripted")
        assert run.returncode == 0, run.stderr
    (isolated_home / ".gemini" / "tmp").mkdir(parents=True)
    listed = unified("sessions", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    assert all(isinstance(row, dict) for row in rows)
    empty = unified("sessions", "list", "--json", "--backend", "generate-content")
    assert (empty.returncode, empty.stdout) == (0, "")


def test_session_errors_are_one_line_with_documented_codes(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unified(*args: str) -> subprocess.CompletedProcess[str]:
        return _in_process(*args, home=isolated_home, monkeypatch=monkeypatch, capsys=capsys)

    _one_error_line(
        unified("sessions", "show", "deadbeef"),
        1,
        "no session matches 'deadbeef' (searched gemini-cli, generate-content, interactions",
    )
    _one_error_line(unified("sessions", "show", ""), EXIT_BAD_INPUT, "reference is empty")
    _one_error_line(unified("sessions", "delete", " ", "--yes"), EXIT_BAD_INPUT, "is empty")


def test_a_replay_error_says_file_line_and_what_is_wrong(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (ROOT / "cassettes" / "gemini-cli" / "text-thoughts.jsonl").read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join([*lines[:6], lines[6][:352], *lines[7:]]) + "\n")
    refused = _in_process("replay", str(cut), home=isolated_home, monkeypatch=monkeypatch, capsys=capsys)
    line = _one_error_line(refused, EXIT_BAD_INPUT)
    assert (
        line
        == f"error: {cut}:7: not JSON: a string is never closed (the line may have been cut short), at column "
        + (line.rsplit("column ", 1)[1])
    )


def test_a_replay_answered_otherwise_than_recorded_says_how_it_differs(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In this process: an exit code and a line (a replay in a process of its own: test_cli_errors.py)."""

    def unified(*args: str) -> subprocess.CompletedProcess[str]:
        return _in_process(*args, home=isolated_home, monkeypatch=monkeypatch, capsys=capsys)

    cassette = ROOT / "cassettes" / "gemini-cli" / "tools-permission.jsonl"
    assert unified("replay", str(cassette), "--approve").returncode == 0  # as recorded
    line = _one_error_line(unified("replay", str(cassette), "--deny"), 1)
    assert "the replay differs from the recording: the answer to the permission request for" in line


def test_version_short_help_and_completion(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-h` through `main()` in this process (its text is what is checked; the help in a process of its own:
    test_cli_errors.py); `--version` and completion, what a shell runs, in subprocesses."""
    from unified import __version__
    from unified.events import PROTOCOL_VERSION

    version = _unified("--version", home=isolated_home)
    assert (version.returncode, version.stdout.strip()) == (
        0,
        f"unified {__version__} (event protocol {PROTOCOL_VERSION})",
    )
    for args in (("-h",), ("run", "-h"), ("sessions", "show", "-h")):
        shown = _in_process(*args, home=isolated_home, monkeypatch=monkeypatch, capsys=capsys)
        assert shown.returncode == 0, shown.stderr
        assert "Usage: unified" in shown.stdout
    completion = _unified("--show-completion", "bash", home=isolated_home)
    assert completion.returncode == 0, completion.stderr
    assert "_UNIFIED_COMPLETE" in completion.stdout
    words = subprocess.run(
        [sys.executable, "-m", "unified._cli"],
        capture_output=True,
        text=True,
        env=_env(isolated_home, _UNIFIED_COMPLETE="complete_bash", COMP_WORDS="unified ses", COMP_CWORD="1"),
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert "sessions" in words.stdout.split()


def test_python_m_unified_exits_as_the_command_does(isolated_home: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "unified", "run", " "],
        capture_output=True,
        text=True,
        env=_env(isolated_home),
        timeout=HANG_GUARD_S,
        check=False,
    )
    _one_error_line(done, EXIT_BAD_INPUT, "the prompt is empty")


def test_capabilities_fit_80_columns_without_splitting_a_name(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done = _in_process("capabilities", home=isolated_home, monkeypatch=monkeypatch, capsys=capsys)  # COLUMNS=80
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    headers = " ".join(line for line in lines if line.startswith("┃"))
    for backend in matrix.BACKENDS:
        assert f" {backend} " in headers, backend  # whole, on one line
    for capability in matrix.CAPABILITIES:
        assert any(line.startswith(f"│ {capability} ") for line in lines), capability


@pytest.mark.parametrize(
    ("fake", "backend", "binary"), [("anthropic", "claude-code", "claude"), ("openai", "codex", "codex")]
)
def test_serve_points_the_other_agent_clis_at_their_fakes(
    fake: str, backend: str, binary: str, isolated_home: Path, tmp_path: Path
) -> None:
    """`unified serve --fake anthropic|openai`: the printed lines alone make the backend's run work, twice."""
    server = subprocess.Popen(
        [sys.executable, "-m", "unified._cli", "serve", "--fake", fake],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(isolated_home),
    )
    assert server.stdout is not None
    env = _env(isolated_home, ANTHROPIC_AUTH_TOKEN="sk-ant-a-token-to-be-unset-123")
    try:
        while True:
            line = server.stdout.readline().strip()
            word, _, rest = line.partition(" ")
            if word == "unset":
                for name in rest.split():
                    env.pop(name, None)
                continue
            assert word == "export", line
            name, _, value = rest.partition("=")
            env[name] = value
            if name in ("ANTHROPIC_MODEL", "UNIFIED_DATA_DIR"):
                break
        variable = {"claude": "UNIFIED_CLAUDE_BIN", "codex": "UNIFIED_CODEX_BIN"}[binary]
        local = {"claude": ".claude-code", "codex": ".codex-cli"}[binary]
        env[variable] = os.environ.get(variable) or str(ROOT / local / "node_modules" / ".bin" / binary)
        (tmp_path / "notes.txt").write_text("Ship on Friday.\n")
        (tmp_path / "README.md").write_text("# demo\n")
        for _ in range(2):  # the script starts over
            events = _run_against(env, backend, tmp_path)
            assert events[-1]["status"] == "success"
            assert "ship the adapter layer on Friday" in str(events[-1]["final_text"])
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=HANG_GUARD_S)
    assert server.returncode == 0, err
    assert err.strip().endswith("stopped")
