"""`unified` given bad input as a user gives it, round 5, in a subprocess: an empty `--cwd` (`--cwd "$DIR"` with DIR
unset). A Path of "" is ".", so the run went on in the shell's own directory (its writes and its shell there,
in yolo unasked) and `sessions list --cwd ""` listed that directory's sessions; now one `error:` line, exit 2,
before anything starts. The library refuses `cwd=""` and an empty `include_directories` entry the same way."""

from __future__ import annotations

import json
import os
import resource
from functools import partial
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from tests.e2e.cli.conftest import run_unified
from unified import ExecuteParams
from unified.testing import FakeAnthropic, FakeGemini, FakeOpenAI, ModelTurn

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(
    "args",
    [
        ["run", "write the file", "--backend", "generate-content", "--approval-mode", "yolo", "--cwd", ""],
        ["sessions", "list", "--cwd", ""],
    ],
    ids=["run", "sessions-list"],
)
def test_an_empty_cwd_is_one_error_line_and_exit_2(args: list[str], isolated_home: Path, tmp_path: Path) -> None:
    done = run_unified(args, isolated_home, tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.startswith("error: Invalid value for '--cwd': the directory's name is empty"), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (isolated_home / "unified-data").exists()  # no session stored, nothing started


@pytest.mark.parametrize("field", ["cwd", "include_directories"])
def test_an_empty_directory_name_is_refused_where_it_is_given(field: str) -> None:
    value = "" if field == "cwd" else (Path.cwd(), "")
    with pytest.raises(ValidationError, match="the directory's name is empty"):
        ExecuteParams.model_validate({"prompt": "hi", field: value})


def _on_a_full_disk(limit: int) -> None:
    """In the child before it runs: no file it writes may grow past `limit` bytes (RLIMIT_FSIZE), as on a disk
    that fills up there; Python ignores SIGXFSZ, so such a write fails with EFBIG."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.parametrize("backend", ["gemini-cli", "claude-code", "codex"])
def test_a_conversation_that_does_not_fit_on_the_disk_is_backend_unavailable(
    backend: str, isolated_home: Path, tmp_path: Path
) -> None:
    """`--history` on an agent CLI writes the conversation into the CLI's home as a session file before the CLI
    starts. On a full disk that write's OSError reached the run as `internal_error`, "This is a bug in unified's
    ... adapter; please report it"; now `backend_unavailable` (so `--fallback` moves on) saying what to free."""
    turns = [
        {"role": "user", "parts": [{"type": "text", "text": "remember this: " + "x" * 20_000}]},
        {"role": "model", "parts": [{"type": "text", "text": "remembered"}]},
    ]
    history = tmp_path / "conversation.json"
    history.write_text(json.dumps({"format": "unified.conversation", "version": 1, "turns": turns}))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {
        **os.environ,
        "GEMINI_API_KEY": "not-a-key",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",  # never reached: the run ends before its agent starts
        "ANTHROPIC_API_KEY": "not-a-key",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "OPENAI_API_KEY": "not-a-key",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        "UNIFIED_DATA_DIR": str(isolated_home / "unified-data"),
    }
    args = ["run", "go on", "--history", str(history), "--backend", backend, "--json"]
    done = run_unified(args, isolated_home, workspace, env, partial(_on_a_full_disk, 8_000))
    assert done.returncode == 1, (done.stdout, done.stderr)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [error] = [event for event in events if event["type"] == "error"]
    assert error["code"] == "backend_unavailable", error["message"]
    assert f"the {backend} backend cannot write its files here" in error["message"]
    assert "File too large" in error["message"]
    assert events[-1]["type"] == "result"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("backend", ["gemini-cli", "claude-code", "codex"])
async def test_an_agent_binary_killed_by_the_file_size_limit_is_told_so(
    backend: str, isolated_home: Path, tmp_path: Path
) -> None:
    """The binary itself writes past the limit (its session file, its logs): Node and Codex do not ignore SIGXFSZ,
    and the run said "killed by signal 25" (codex: "exit status -25"), which tells nobody what happened. Now the
    error names SIGXFSZ and the file size limit to raise, as `backend_unavailable` (round 19), where it runs."""
    fakes = {"gemini-cli": FakeGemini, "claude-code": FakeAnthropic, "codex": FakeOpenAI}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with fakes[backend]([ModelTurn(text="An answer of some length. " * 40)]) as server:
        wiring = server.env if isinstance(server, FakeOpenAI) else server.cli_env
        env = {**os.environ, **wiring, "UNIFIED_DATA_DIR": str(isolated_home / "unified-data")}
        args = ["run", "hi", "--backend", backend, "--json"]
        full = partial(_on_a_full_disk, 3_000)
        done = await anyio.to_thread.run_sync(lambda: run_unified(args, isolated_home, workspace, env, full))
    assert done.returncode == 1, (done.stdout, done.stderr)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [error] = [event for event in events if event["type"] == "error"]
    assert error["code"] == "backend_unavailable", error["message"]  # the machine's limit (round 19; backend_error)
    assert "killed by signal 25 (SIGXFSZ: a file it wrote passed the file size limit" in error["message"]
