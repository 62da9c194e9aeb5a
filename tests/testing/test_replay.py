"""`unified.testing._replay`: every cassette in cassettes/ plays through the real adapters, offline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from unified._adapters.gemini_cli._chat_records import tool_calls_of, tool_response
from unified.events import (
    PermissionDecision,
    Result,
    SessionStarted,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    WarningEvent,
    tool_output_text,
)
from unified.testing._replay import ReplayDiverged, ReplayError, describe, replay_events
from unified.testing._yaml import load_yaml

pytestmark = pytest.mark.anyio

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
ALL = sorted(p for p in CASSETTES.glob("*/*") if p.suffix in (".yaml", ".jsonl"))
GEMINI_CLI = sorted((CASSETTES / "gemini-cli").glob("*.jsonl"))


async def play(path: Path, *, include_native: bool = False, cwd: Path | None = None) -> list[UnifiedEvent]:
    return [event async for event in replay_events(path, include_native=include_native, cwd=cwd)]


def result_of(events: list[UnifiedEvent]) -> Result:
    assert isinstance(events[-1], Result), [e.type for e in events]
    return events[-1]


def test_there_are_cassettes_of_every_backend() -> None:
    assert {p.parent.name for p in ALL} == {"gemini-cli", "claude-code", "generate-content", "interactions", "codex"}


@pytest.mark.parametrize("path", ALL, ids=[f"{p.parent.name}/{p.name}" for p in ALL])
async def test_every_cassette_replays(path: Path) -> None:
    events = await play(path)
    started = next(e for e in events if e.type != "warning")
    assert isinstance(started, SessionStarted)
    assert started.backend == path.parent.name == describe(path).backend
    assert result_of(events).status == "success", [e.type for e in events]


async def test_transcript_replay_runs_the_acp_adapter(tmp_path: Path) -> None:
    events = await play(CASSETTES / "gemini-cli" / "text-thoughts.jsonl")
    assert [e.type for e in events] == ["session_started", "thinking", "text_delta", "assistant_message", "result"]
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.transport == "acp"
    assert result_of(events).final_text == "Hello there."


async def test_transcript_permission_gets_the_recorded_answer(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    events = await play(CASSETTES / "gemini-cli" / "tools-permission.jsonl", cwd=tmp_path)
    decisions = [(e.tool_name, e.decision, e.decided_by) for e in events if isinstance(e, PermissionDecision)]
    # read_file ran unasked, as unified's read-only rule allows; write_file asked, and the recorded answer allowed it
    assert decisions == [("read_file", "allow", "policy"), ("write_file", "allow", "user")]


async def test_a_diverging_adapter_fails_the_run_with_the_reason(tmp_path: Path) -> None:
    source = CASSETTES / "gemini-cli" / "text-thoughts.jsonl"
    lines = source.read_text().splitlines()
    meta = {**json.loads(lines[0]), "approval_mode": "plan"}  # the adapter will send set_mode; the recording did not
    copy = tmp_path / "diverged.jsonl"
    copy.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    with pytest.raises(
        ReplayDiverged, match="differs from the recording: the adapter sent session/set_mode where the recording sent"
    ):
        await play(copy)


async def test_http_replay_never_reaches_a_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Record mode `none` even under UNIFIED_RECORD=1: a request the cassette lacks fails, and the file is untouched."""
    monkeypatch.setenv("UNIFIED_RECORD", "1")
    data = load_yaml((CASSETTES / "generate-content" / "tool-call.yaml").read_text())
    data["interactions"] = data["interactions"][:1]  # the answer to the tool result is missing
    copy = tmp_path / "truncated.yaml"
    copy.write_text(yaml.safe_dump(data))
    before = copy.read_bytes()
    with pytest.raises(ReplayDiverged, match=r"request 2 \(POST .*\) differs from the recording: it sends back 1 tool"):
        await play(copy)  # the cassette's `unified: workspace:` came along: read_file reads what it read
    assert copy.read_bytes() == before


async def test_include_native_keeps_raw_events() -> None:
    events = await play(CASSETTES / "interactions" / "text-turn.yaml", include_native=True)
    assert any(e.native is not None for e in events)


def test_describe_reads_what_to_run() -> None:
    info = describe(CASSETTES / "generate-content" / "text-turn.yaml")
    assert (info.backend, info.model, info.prompt) == (
        "generate-content",
        "gemini-3-flash-preview",
        "what is in a.txt?",
    )
    assert "FakeGemini" in info.source
    plan = describe(CASSETTES / "gemini-cli" / "plan-denied.jsonl")
    assert (plan.backend, plan.approval_mode, plan.prompt) == ("gemini-cli", "plan", "go")


def test_describe_rejects_other_files(tmp_path: Path) -> None:
    with pytest.raises(ReplayError):
        describe(tmp_path / "notes.txt")
    bare = tmp_path / "bare.jsonl"
    shutil.copy(CASSETTES / "gemini-cli" / "text-thoughts.jsonl", bare)
    bare.write_text("\n".join(bare.read_text().splitlines()[1:]))  # no metadata line
    with pytest.raises(ReplayError):
        describe(bare)


# --- gemini-cli cassettes carry the chat-file side channel ---------------------------------------------


def recorded_calls(path: Path) -> dict[str, dict[str, Any]]:
    """The finished tool calls in a cassette's chat records, by id (the last record of a call wins)."""
    calls: dict[str, dict[str, Any]] = {}
    for line in path.read_text().splitlines()[1:]:
        entry = json.loads(line)
        if entry["dir"] == "chat":
            calls.update({c["id"]: c for c in tool_calls_of(entry["record"]) if tool_response(c) is not None})
    return calls


def without_chat_records(source: Path, target: Path) -> Path:
    """`source` as cassettes were before they carried the side channel: metadata and ACP messages only."""
    lines = [line for line in source.read_text().splitlines() if json.loads(line).get("dir") != "chat"]
    target.write_text("\n".join(lines) + "\n")
    return target


@pytest.mark.parametrize("path", GEMINI_CLI, ids=[p.stem for p in GEMINI_CLI])
async def test_a_gemini_cli_replay_has_the_recorded_tool_inputs_and_outputs(path: Path) -> None:
    calls = recorded_calls(path)
    events = await play(path)
    assert not [e for e in events if isinstance(e, WarningEvent)], "no tool_output_unavailable (nor any) warning"
    delegations = {e.tool_use_id for e in events if isinstance(e, ToolUse) and e.name == "invoke_agent"}
    results = [e for e in events if isinstance(e, ToolResult) and e.tool_use_id not in delegations]
    inputs = {e.tool_use_id: e.input for e in events if isinstance(e, ToolUse)}
    assert len(results) == len([c for c in calls.values() if c["name"] != "invoke_agent"])
    for result in results:
        call = calls[result.tool_use_id]
        response = call["result"][0]["functionResponse"]["response"]
        if result.subagent_task_id is None:  # a main-session call: the response as the model saw it
            # the model's arguments are on the tool_use, or on the result when the tool_use went out
            # before them (a call that asked permission: protocol 2.0, docs/protocol.md)
            arguments = inputs[result.tool_use_id] or result.input
            assert (result.output, arguments, result.is_error) == (
                tool_output_text(response)[0],
                call["args"],
                call["status"] != "success",
            )
        else:  # a subagent's call, from its own chat file
            assert result.output == response.get("output", response.get("error"))
        assert result.output
    assert result_of(events).status == "success"


def test_the_shipped_gemini_cli_cassettes_carry_tool_outputs() -> None:
    with_tools = {p.stem: recorded_calls(p) for p in GEMINI_CLI}
    assert {name for name, calls in with_tools.items() if calls} == {"plan-denied", "subagent", "tools-permission"}
    read = next(c for c in with_tools["tools-permission"].values() if c["name"] == "read_file")
    assert read["args"] == {"file_path": "notes.txt"}
    assert tool_response(read) == ({"output": "alpha\n"}, False)


@pytest.mark.e2e  # runs `unified replay` as a subprocess
def test_replay_command_shows_the_recorded_tool_outputs() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "unified._cli",
            "replay",
            str(CASSETTES / "gemini-cli" / "tools-permission.jsonl"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard, 10x+ a normal replay
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    inputs = {e["tool_use_id"]: e["input"] for e in events if e["type"] == "tool_use"}
    outputs = {
        e["tool_use_id"].split("__")[0]: (inputs[e["tool_use_id"]] or e["input"], e["output"])
        for e in events
        if e["type"] == "tool_result"
    }
    assert outputs["read_file"] == ({"file_path": "notes.txt"}, "alpha\n")
    assert outputs["write_file"][0] == {"file_path": "b.txt", "content": "x"}
    assert "Successfully created and wrote to new file" in outputs["write_file"][1]
    assert "tool_output_unavailable" not in done.stdout + done.stderr


async def test_a_cassette_without_chat_records_replays_with_the_warning(tmp_path: Path) -> None:
    old = without_chat_records(CASSETTES / "gemini-cli" / "tools-permission.jsonl", tmp_path / "old.jsonl")
    events = await play(old)
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["tool_output_unavailable"]
    read = next(e for e in events if isinstance(e, ToolResult) and e.tool_use_id.startswith("read_file"))
    assert (read.output, read.input) == (None, None)  # only what ACP reports
    assert result_of(events).final_text == "Done."


@pytest.mark.parametrize(
    "chat",
    [
        {"dir": "chat", "file": "tmp/p/chats/../../../../.bashrc.jsonl", "record": {}},
        {"dir": "chat", "file": "/etc/tmp/p/chats/x.jsonl", "record": {}},
        {"dir": "chat", "file": "settings.json", "record": {}},
        {"dir": "chat", "file": "tmp/p/chats/x.txt", "record": {}},
        {"dir": "chat", "file": "tmp/p/chats/x.jsonl", "record": "not an object"},
        {"dir": "chat", "record": {}},
    ],
    ids=["parent-dirs", "absolute", "not-a-chat-file", "not-jsonl", "record-not-object", "no-file"],
)
def test_a_chat_record_that_would_write_elsewhere_is_refused(chat: dict[str, Any], tmp_path: Path) -> None:
    lines = (CASSETTES / "gemini-cli" / "text-thoughts.jsonl").read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps(chat), *lines[1:]]) + "\n")
    with pytest.raises(ReplayError, match=":2: a chat record"):
        describe(bad)
