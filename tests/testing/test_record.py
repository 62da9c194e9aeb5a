"""`record_run` / `unified record`: a real run written as a cassette, then replayed to the same answer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import ExecuteParams
from unified.events import Result, UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.testing.record import RecordError, record_run
from unified.testing.replay import describe, replay_events
from unified.testing.wiring import backend_options_for

SECRET = "AIzaSy-record-test-secret-0123456789"
TURNS = [
    ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]),
    ModelTurn(text="The notes say alpha."),
]


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    return workspace


def _pinned_gemini() -> str:
    binary = os.environ.get("UNIFIED_GEMINI_BIN") or str(
        Path(__file__).parents[2] / ".gemini-cli/node_modules/.bin/gemini"
    )
    if not Path(binary).exists():
        pytest.fail(f"the pinned gemini binary is not at {binary}: run .ci/install-gemini-cli.sh (scripts/test does)")
    return binary


def _result(events: list[UnifiedEvent]) -> Result:
    result = events[-1]
    assert isinstance(result, Result)
    return result


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_an_api_run_records_and_replays(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    workspace = _workspace(tmp_path)
    cassette = tmp_path / "out" / f"{backend}.yaml"
    async with FakeGemini(TURNS) as server:
        options = {**backend_options_for(server, backend), "api_key": SECRET}
        params = ExecuteParams(
            prompt="What do the notes say?",
            backend=backend,
            model="gemini-2.5-flash",
            cwd=workspace,
            backend_options=options,
        )
        recorded = await record_run(params, cassette, source="unified.testing.FakeGemini on 127.0.0.1")
    assert _result(recorded).final_text == "The notes say alpha."
    text = cassette.read_text()
    assert SECRET not in text
    assert "# Recorded" in text
    assert "FakeGemini" in text
    info = describe(cassette)
    assert (info.backend, info.prompt, info.model) == (backend, "What do the notes say?", "gemini-2.5-flash")
    replayed = [event async for event in replay_events(cassette, cwd=workspace)]
    assert _result(replayed).final_text == "The notes say alpha."
    outputs = [e.output for e in replayed if e.type == "tool_result"]
    assert outputs
    assert "alpha" in str(outputs[0])  # the workspace given to the replay was read


@pytest.mark.anyio
async def test_a_cassette_suffix_that_does_not_fit_the_backend(tmp_path: Path) -> None:
    params = ExecuteParams(prompt="x", backend="gemini-cli", cwd=tmp_path)
    with pytest.raises(RecordError, match=r"a gemini-cli cassette is a \.jsonl file"):
        await record_run(params, tmp_path / "x.yaml", source="nothing")
    with pytest.raises(RecordError, match="cannot record the 'scripted' backend"):
        await record_run(params.model_copy(update={"backend": "scripted"}), tmp_path / "x.yaml", source="nothing")


@pytest.mark.e2e
@pytest.mark.gemini_cli
@pytest.mark.anyio
async def test_a_gemini_cli_run_records_and_replays(tmp_path: Path) -> None:
    binary = _pinned_gemini()
    workspace = _workspace(tmp_path)
    cassette = tmp_path / "gemini-cli.jsonl"
    async with FakeGemini(TURNS) as server:
        options = {**backend_options_for(server, "gemini-cli", cli_home=tmp_path / "home"), "gemini_binary": binary}
        params = ExecuteParams(
            prompt="What do the notes say?", backend="gemini-cli", cwd=workspace, backend_options=options
        )
        recorded = await record_run(params, cassette, source="real gemini binary against FakeGemini")
    assert _result(recorded).final_text == "The notes say alpha."
    info = describe(cassette)
    assert (info.backend, info.prompt) == ("gemini-cli", "What do the notes say?")
    replayed = [event async for event in replay_events(cassette, cwd=workspace)]
    assert _result(replayed).final_text == "The notes say alpha."


@pytest.mark.e2e  # runs a real subprocess
def test_the_record_command_refuses_a_blank_prompt(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "unified.cli", "record", str(tmp_path / "x.yaml"), "  "],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["error: the prompt is empty (say what the agent should do)"]
