"""`unified.testing.replay`: every cassette in cassettes/ plays through the real adapters, offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from unified.events import PermissionDecision, Result, SessionStarted, UnifiedEvent
from unified.testing.replay import ReplayError, describe, replay_events

pytestmark = pytest.mark.anyio

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
ALL = sorted(p for p in CASSETTES.glob("*/*") if p.suffix in (".yaml", ".jsonl"))


async def play(path: Path, *, include_native: bool = False, cwd: Path | None = None) -> list[UnifiedEvent]:
    return [event async for event in replay_events(path, include_native=include_native, cwd=cwd)]


def result_of(events: list[UnifiedEvent]) -> Result:
    assert isinstance(events[-1], Result), [e.type for e in events]
    return events[-1]


def test_there_are_cassettes_of_every_backend() -> None:
    assert {p.parent.name for p in ALL} == {"gemini-cli", "generate-content", "interactions"}


@pytest.mark.parametrize("path", ALL, ids=[f"{p.parent.name}/{p.name}" for p in ALL])
@pytest.mark.e2e  # runs a real subprocess
async def test_every_cassette_replays(path: Path) -> None:
    events = await play(path)
    started = next(e for e in events if e.type != "warning")
    assert isinstance(started, SessionStarted)
    assert started.backend == path.parent.name == describe(path).backend
    assert result_of(events).status == "success", [e.type for e in events]


@pytest.mark.e2e  # runs a real subprocess
async def test_transcript_replay_runs_the_acp_adapter(tmp_path: Path) -> None:
    events = await play(CASSETTES / "gemini-cli" / "text-thoughts.jsonl")
    assert [e.type for e in events] == ["session_started", "thinking", "text_delta", "assistant_message", "result"]
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.transport == "acp"
    assert result_of(events).final_text == "Hello there."


@pytest.mark.e2e  # runs a real subprocess
async def test_transcript_permission_gets_the_recorded_answer(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    events = await play(CASSETTES / "gemini-cli" / "tools-permission.jsonl", cwd=tmp_path)
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert (decision.decision, decision.decided_by) == ("allow", "user")


@pytest.mark.e2e  # runs a real subprocess
async def test_a_diverging_adapter_fails_the_run_with_the_reason(tmp_path: Path) -> None:
    source = CASSETTES / "gemini-cli" / "text-thoughts.jsonl"
    lines = source.read_text().splitlines()
    meta = {**json.loads(lines[0]), "approval_mode": "plan"}  # the adapter will send set_mode; the recording did not
    copy = tmp_path / "diverged.jsonl"
    copy.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n")
    result = result_of(await play(copy))
    assert result.status == "error"
    assert "replay: the adapter sent session/set_mode" in (result.error or "")


async def test_http_replay_never_reaches_a_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Record mode `none` even under UNIFIED_RECORD=1: a request the cassette lacks fails, and the file is untouched."""
    monkeypatch.setenv("UNIFIED_RECORD", "1")
    data = yaml.safe_load((CASSETTES / "generate-content" / "tool-call.yaml").read_text())
    data["interactions"] = data["interactions"][:1]  # the answer to the tool result is missing
    copy = tmp_path / "truncated.yaml"
    copy.write_text(yaml.safe_dump(data))
    before = copy.read_bytes()
    result = result_of(await play(copy))
    assert result.status == "error"
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
