"""`unified demo` (the README's main command) and `unified replay`, run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.harness.cli_main import in_process
from unified.events import Result, parse_event

ROOT = Path(__file__).parents[2]


def _unified(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home), "GEMINI_CLI_HOME": str(home), "XDG_DATA_HOME": str(home / "data")}
    return subprocess.run(
        [sys.executable, "-m", "unified._cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
        check=False,
    )


@pytest.mark.e2e
@pytest.mark.gemini_cli
@pytest.mark.claude_code
def test_demo_runs_the_same_task_on_every_backend(isolated_home: Path) -> None:
    done = _unified("demo", "--json", home=isolated_home)
    assert done.returncode == 0, done.stderr
    events = [parse_event(line) for line in done.stdout.splitlines()]
    results = [e for e in events if isinstance(e, Result)]
    assert [r.status for r in results] == ["success"] * 5
    started = [e.backend for e in events if e.type == "session_started"]
    assert started == ["gemini-cli", "generate-content", "interactions", "claude-code", "codex"]
    tools = [e.name for e in events if e.type == "tool_use"]
    assert tools == ["list_directory", "read_file"] * 3 + ["Read", "Read"] + ["exec_command"] * 2  # codex: its own tool
    assert all("ship the adapter layer on Friday" in r.final_text for r in results)
    assert not (isolated_home / "data" / "unified").exists()  # the demo's sessions stayed in its temp dir


@pytest.mark.parametrize(
    "cassette",
    [
        "cassettes/gemini-cli/tools-permission.jsonl",
        "cassettes/claude-code/tools-permission.jsonl",
        "cassettes/generate-content/tool-call.yaml",
        "cassettes/interactions/tool-call.yaml",
    ],
)
@pytest.mark.e2e  # the binaries' cassettes play through their stand-in processes
def test_replay_command(cassette: str, isolated_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through `main()` in this process (tests/harness/cli_main.py), in `isolated_home`: a replay in a process of its
    own, as a shell starts it, is tests/foundation/test_cli_errors.py's (piped into `head`, its reader gone)."""
    done = in_process(capsys, "replay", str(ROOT / cassette), "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-1]["type"] == "result"
    assert events[-1]["status"] == "success"
    assert any(e["type"] == "tool_use" for e in events)  # every cassette in tests/testing/test_replay.py plays


def test_replay_of_something_that_is_not_a_cassette(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the console script's entry point in this process, as tests/foundation/test_cli_errors.py sends bad
    files: refused before anything plays, a Python process of its own would show nothing more."""
    from unified._cli.main import main

    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello")
    code = main(["replay", str(bogus)])
    assert code == 2
    assert "cassette" in capsys.readouterr().err.lower()


@pytest.mark.anyio
async def test_sessions_commands_on_real_stores(isolated_home: Path, tmp_path: Path) -> None:
    """`unified sessions` over the real locators: a generate-content run's store and a Gemini CLI chat file."""
    from typer.testing import CliRunner

    from tests.adapters.gemini_cli.test_gemini_cli_sessions import write_session
    from unified import execute
    from unified._cli import main as cli
    from unified.testing import FakeGemini, ModelTurn

    with FakeGemini([ModelTurn(text="stored")]) as server:
        options = {"api_key": "k", "base_url": server.base_url}
        async with execute(
            prompt="remember me", backend="generate-content", cwd=tmp_path, backend_options=options
        ) as s:
            short_id = [e async for e in s][-1].short_id  # type: ignore[union-attr]
    write_session(isolated_home, "proj", "cafe1234-0000-4000-8000-000000000000", "from the cli", [])
    runner = CliRunner()  # the CLI runs its own event loop: invoked from a worker thread, as from a shell
    listed = await anyio.to_thread.run_sync(runner.invoke, cli.app, ["sessions", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {row["short_id"]: row for row in map(json.loads, listed.output.splitlines())}  # JSON Lines
    assert rows[str(short_id)]["first_prompt"] == "remember me"
    assert rows["cafe1234"]["backend"] == "gemini-cli"
    shown = await anyio.to_thread.run_sync(
        runner.invoke, cli.app, ["sessions", "show", str(short_id), "--backend", "generate-content"]
    )
    assert shown.exit_code == 0, shown.output
    assert "stored" in shown.output
    gone = await anyio.to_thread.run_sync(
        runner.invoke, cli.app, ["sessions", "delete", str(short_id), "--backend", "generate-content", "--yes"]
    )
    assert gone.exit_code == 0, gone.output
    again = await anyio.to_thread.run_sync(
        runner.invoke, cli.app, ["sessions", "list", "--backend", "generate-content", "--json"]
    )
    assert again.output == ""  # no session: no line


def test_the_demo_says_why_each_backend_with_more_thinking_events_has_them() -> None:
    """codex's two pieces of one thought went unexplained: the note named only the signature senders."""
    from unified._cli.demo import DemoRun, _event_differences
    from unified.events import Thinking, UnifiedEvent

    whole: list[UnifiedEvent] = [Thinking(text="**Plan** read it", replace=True)]
    signature = Thinking(text="", replace=False, signature="c2ln")
    signed: list[UnifiedEvent] = [Thinking(text="read it", replace=False), signature]
    pieces: list[UnifiedEvent] = [Thinking(text="**Plan**\n\nread", replace=False), Thinking(text=" it", replace=False)]
    runs = [DemoRun("generate-content", whole), DemoRun("interactions", signed), DemoRun("codex", pieces)]
    (note,) = _event_differences(runs)
    assert note == (
        "events: thinking 1 on generate-content, 2 on interactions, 2 on codex (interactions sends a thought's "
        "signature in a thinking event of its own, without text; codex sends a thought in pieces, each extending "
        "it (replace=false))."
    )
