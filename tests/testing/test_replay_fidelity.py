"""A replay reproduces its recording, or fails saying how it differs (docs/testing.md, "Replaying cassettes").

Tried as an orchestrator testing its own code would: record a run whose tool call needed a
permission answer, then replay it with no callback (the recorded answer), with the caller's own
callback and params (its code under test), and with an answer that changes what the tool did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from unified import ExecuteParams
from unified.events import (
    PermissionDecision,
    Result,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    UserInputResponse,
)
from unified.testing import FakeAcp, FakeGemini, FunctionCall, ModelTurn, script_from_transcript
from unified.testing._record import record_run
from unified.testing._replay import ReplayDiverged, describe, replay_events
from unified.testing._wiring import backend_options_for

pytestmark = pytest.mark.anyio

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
WRITE = [
    ModelTurn(function_calls=[FunctionCall(name="write_file", args={"file_path": "out.txt", "content": "hi\n"})]),
    ModelTurn(text="Written."),
]


async def approve(request: UserInputRequest) -> UserInputResponse:
    return UserInputResponse.allow()


async def deny(request: UserInputRequest) -> UserInputResponse:
    return UserInputResponse.deny()


def decisions(events: list[UnifiedEvent]) -> list[tuple[str, str, str]]:
    return [(e.tool_name, e.decision, e.decided_by) for e in events if isinstance(e, PermissionDecision)]


def result_of(events: list[UnifiedEvent]) -> Result:
    assert isinstance(events[-1], Result)
    return events[-1]


async def collect(path: Path, **kwargs: object) -> list[UnifiedEvent]:
    return [event async for event in replay_events(path, **kwargs)]  # type: ignore[arg-type]


async def record_a_write(backend: str, tmp_path: Path) -> Path:
    workspace = tmp_path / "recorded-workspace"
    workspace.mkdir()
    cassette = tmp_path / f"{backend}.yaml"
    async with FakeGemini(WRITE) as server:
        params = ExecuteParams(
            prompt="write out.txt",
            backend=backend,
            model="gemini-2.5-flash",
            cwd=workspace,
            on_user_input=approve,
            backend_options=backend_options_for(server, backend),
        )
        recorded = await record_run(params, cassette, source="unified.testing.FakeGemini on 127.0.0.1")
    assert decisions(recorded) == [("write_file", "allow", "user")]
    return cassette


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_an_api_cassette_gives_back_the_recorded_permission_answers(backend: str, tmp_path: Path) -> None:
    cassette = await record_a_write(backend, tmp_path)
    info = describe(cassette)
    assert [(a.source, a.tool_name, a.response.permission()) for a in info.answers] == [
        ("permission", "write_file", "allow_once")
    ]
    replayed = await collect(cassette)  # nobody to ask: the recording's answer
    assert decisions(replayed) == [("write_file", "allow", "user")]
    assert result_of(replayed).final_text == "Written."


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_the_callers_own_callback_and_params_run_against_an_api_cassette(backend: str, tmp_path: Path) -> None:
    cassette = await record_a_write(backend, tmp_path)
    mine = ExecuteParams(prompt="write out.txt", backend=backend, model="gemini-2.5-flash", on_user_input=approve)
    events = await collect(cassette, params=mine)
    assert decisions(events) == [("write_file", "allow", "user")]
    assert result_of(events).status == "success"
    with pytest.raises(ReplayDiverged, match=r"the output of write_file \(.*\) is .* where the recording has"):
        await collect(cassette, on_user_input=deny)  # a denial sends another tool output back: loud, not success
    other = mine.model_copy(update={"prompt": "write two files"})
    with pytest.raises(ReplayDiverged, match=r"prompt 'write two files' instead of the recorded 'write out\.txt'"):
        await collect(cassette, params=other)


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_tool_outputs_that_differ_from_the_recording_fail_the_replay(backend: str, tmp_path: Path) -> None:
    shipped = CASSETTES / backend / "tool-call.yaml"
    assert result_of(await collect(shipped)).status == "success"  # its `unified: workspace:` is the fresh cwd
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(
        ReplayDiverged, match=r"the output of read_file \(c1\) is .*File not found.* where the recording"
    ):
        await collect(shipped, cwd=elsewhere)


@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_diverging_api_replay_shows_no_internal_error_before_the_difference(
    backend: str, tmp_path: Path
) -> None:
    """vcrpy's refusal of the unmatched request reached the stream first, as `internal_error` "This is a bug in
    unified's adapter; please report it" with vcrpy's advice on record modes, before `ReplayDiverged` said what
    differed (`unified replay` printed both)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    seen: list[UnifiedEvent] = []

    async def play() -> None:
        async for event in replay_events(CASSETTES / backend / "tool-call.yaml", cwd=elsewhere):
            seen.append(event)

    with pytest.raises(ReplayDiverged, match=r"the output of read_file \(c1\) is .*File not found"):
        await play()
    assert [e.type for e in seen][:1] == ["session_started"]
    assert [e for e in seen if e.type == "error"] == []


@pytest.mark.parametrize(
    ("backend", "answer", "difference"),
    [
        (
            "claude-code",
            deny,
            "the answer to the permission request for 'Write' is deny where the recording answered allow",
        ),
        (
            "codex",
            deny,
            "the answer to the approval request for .*echo alpha >> log.txt.* is 'decline' where the recording "
            "answered 'accept'",
        ),
        (
            "codex",
            approve,
            "the answer to the approval request for 'call_write' is 'accept' where the recording answered 'decline'",
        ),
    ],
)
async def test_a_permission_answered_otherwise_fails_a_transcript_replay(
    backend: str, answer: Any, difference: str
) -> None:
    """The stand-in `claude` and `codex app-server` played the recorded lines whatever the answer: a denied Write
    still said "File created successfully", a denied command still ran, and the replay succeeded (exit 0 with
    `unified replay --deny`), as gemini-cli's replay never did."""
    with pytest.raises(ReplayDiverged, match=difference):
        await collect(CASSETTES / backend / "tools-permission.jsonl", on_user_input=answer)
    assert result_of(await collect(CASSETTES / backend / "tools-permission.jsonl")).status == "success"


async def test_a_claude_code_replay_reads_the_recorded_paths_as_its_own_workspace() -> None:
    """The CLI's permission requests carry the recorded run's absolute paths: the replay's policy judged them
    outside its workspace and asked about a Read the recording's policy allowed unasked ('It reads outside the
    workspace: /tmp/tmp_76f9_0q/tools-permission/notes.txt')."""
    events = await collect(CASSETTES / "claude-code" / "tools-permission.jsonl")
    assert decisions(events) == [("Read", "allow", "policy"), ("Write", "allow", "user")]
    asked = [e for e in events if isinstance(e, UserInputRequest)]
    assert [e.tool_name for e in asked] == ["Write"]
    assert "tmp_76f9_0q" not in json.dumps([e.model_dump(mode="json") for e in events])


async def test_the_callers_callback_runs_against_a_gemini_cli_cassette() -> None:
    cassette = CASSETTES / "gemini-cli" / "tools-permission.jsonl"
    events = await collect(cassette, on_user_input=approve)  # the recording allowed write_file once
    # read_file runs unasked by unified's read-only rule (the CLI's --policy file), as on the API backends
    assert decisions(events) == [("read_file", "allow", "policy"), ("write_file", "allow", "user")]
    with pytest.raises(ReplayDiverged, match=r"the answer to the permission request for .* is .* where the recording"):
        await collect(cassette, on_user_input=deny)
    model = describe(cassette).model
    mine = ExecuteParams(prompt="something else", backend="gemini-cli", model=model, on_user_input=approve)
    with pytest.raises(ReplayDiverged, match="the prompt is 'something else' where the recording has"):
        await collect(cassette, params=mine)


GEMINI_CLI_WITH_TOOLS = ["tools-permission", "plan-denied"]


@pytest.mark.parametrize("name", GEMINI_CLI_WITH_TOOLS)
async def test_fake_acp_from_a_transcript_has_the_calls_real_input_and_output(name: str, tmp_path: Path) -> None:
    cassette = CASSETTES / "gemini-cli" / f"{name}.jsonl"
    replayed = await collect(cassette)
    mode = describe(cassette).approval_mode
    params = ExecuteParams(
        prompt=describe(cassette).prompt,
        backend="gemini-cli",
        cwd=tmp_path,
        approval_mode=mode,
        on_user_input=approve,
        backend_options={"start_process": FakeAcp(script_from_transcript(cassette)), "pool_size": 0},
    )
    from unified import execute

    async with execute(params) as stream:
        played = [event async for event in stream]

    def calls(events: list[UnifiedEvent]) -> list[tuple[str, str, str | None]]:
        inputs = {e.tool_use_id: e.input for e in events if isinstance(e, ToolUse)}
        return [
            (e.tool_use_id, json.dumps(inputs[e.tool_use_id] or e.input, sort_keys=True), e.output)
            for e in events
            if isinstance(e, ToolResult) and e.subagent_task_id is None
        ]

    assert calls(played) == calls(replayed)
    assert all(arguments != "{}" and output for _, arguments, output in calls(played))
    assert '{"output": null}' not in json.dumps([e.model_dump(mode="json") for e in played])
