"""`record_run` / `unified record`: a real run written as a cassette, then replayed to the same answer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams
from unified.events import Result, ToolResult, ToolUse, UnifiedEvent
from unified.testing import FakeAcp, FakeGemini, FunctionCall, ModelTurn
from unified.testing._fake_acp import Finish, text, tool_call, tool_done
from unified.testing._record import RecordError, place_chat_records, record_run
from unified.testing._replay import describe, replay_events
from unified.testing._wiring import backend_options_for

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
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # a gemini cold start; gemini on trio: tests/e2e/gemini_cli
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
    assert any('"dir": "chat"' in line for line in cassette.read_text().splitlines())
    assert _tool_results(replayed) == _tool_results(recorded)
    assert _tool_results(recorded)[0][1:] == ("alpha\n", {"file_path": "notes.txt"})
    assert not [e for e in replayed if e.type == "warning"]


@pytest.mark.anyio
async def test_a_gemini_cli_recording_keeps_the_chat_records_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret in a tool's output is scrubbed from the chat record, and the replay shows the scrubbed output."""
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    call_id = "read_file__read_file_1_0"
    fake = FakeAcp(
        [
            tool_call(call_id, title="notes.txt"),
            tool_done(call_id, f"the key is {SECRET}", args={"file_path": "notes.txt"}),
            text("Read."),
            Finish(),
        ]
    )
    cassette = tmp_path / "fake.jsonl"
    params = ExecuteParams(
        prompt="read", backend="gemini-cli", cwd=_workspace(tmp_path), backend_options={"start_process": fake}
    )
    recorded = await record_run(params, cassette, source="unified.testing.FakeAcp, not the CLI")
    text_of_file = cassette.read_text()
    assert SECRET not in text_of_file
    entries = [json.loads(line) for line in text_of_file.splitlines()[1:]]
    kinds = [(e["dir"], e.get("msg", {}).get("params", {}).get("update", {}).get("status")) for e in entries]
    record_at = next(i for i, e in enumerate(entries) if e["dir"] == "chat" and "toolCalls" in e["record"])
    assert record_at < kinds.index(("recv", "completed"))  # there before the update that needs it
    assert "the key is <redacted>" in json.dumps(entries[record_at])
    replayed = [event async for event in replay_events(cassette)]
    assert _tool_results(replayed) == [(call_id, "the key is <redacted>", {"file_path": "notes.txt"})]
    assert [r[0] for r in _tool_results(recorded)] == [call_id]
    assert not [e for e in replayed if e.type == "warning"]


def _tool_results(events: list[UnifiedEvent]) -> list[tuple[str, object, object]]:
    """(id, output, the model's arguments) of each call: the arguments from its tool_use, or from its
    tool_result when the tool_use had to go out before them (a call that asked permission)."""
    inputs = {e.tool_use_id: e.input for e in events if isinstance(e, ToolUse)}
    return [
        (e.tool_use_id, e.output, inputs.get(e.tool_use_id) or e.input) for e in events if isinstance(e, ToolResult)
    ]


def _acp_update(call_id: str, status: str) -> dict[str, Any]:
    update = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}
    return {"dir": "recv", "msg": {"method": "session/update", "params": {"update": update}}}


def _chat(file: str, call_id: str | None, status: str = "success") -> dict[str, Any]:
    record: dict[str, object] = {"type": "user", "content": "x"}
    if call_id is not None:
        record = {"type": "gemini", "toolCalls": [{"id": call_id, "status": status}]}
    return {"dir": "chat", "file": file, "record": record}


def test_a_chat_record_goes_before_the_acp_update_that_needs_it() -> None:
    session, child = "tmp/p/chats/session-a.jsonl", "tmp/p/chats/sid/agent.jsonl"
    prompt: dict[str, Any] = {"dir": "send", "msg": {"method": "session/prompt"}}
    entries = [
        prompt,
        _chat(session, None),  # written before anything needs it: stays
        _acp_update("c1", "in_progress"),
        _acp_update("c1", "completed"),
        _chat(child, "k1"),  # another file, not needed by ACP: stays
        _chat(session, None),  # before c1's record in its file: moves up with it
        _chat(session, "c1"),  # written after the update that needs it: moves before it
        _acp_update("c2", "failed"),
        _chat(session, "c2", "error"),
    ]
    placed = place_chat_records(entries)
    assert placed == [
        prompt,
        entries[1],
        entries[2],
        entries[5],
        entries[6],
        entries[3],
        entries[4],
        entries[8],
        entries[7],
    ]
    assert place_chat_records(entries[:5]) == entries[:5]


def test_the_record_command_refuses_a_blank_prompt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the console script's entry point in this process, as tests/foundation/test_cli_errors.py sends bad
    arguments: refused before anything runs, a Python process of its own would show nothing more."""
    from unified._cli.main import main

    code = main(["record", str(tmp_path / "x.yaml"), "  "])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.strip().splitlines() == ["error: the prompt is empty (say what the agent should do)"]
    assert not (tmp_path / "x.yaml").exists()
