"""Text, thinking, tool calls, permissions and limits: the real SDK over real HTTP to FakeGemini."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.e2e.generate_content.gc_harness import Harness, result_of
from unified.events import (
    PermissionDecision,
    SessionStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UserInputRequest,
    UserInputResponse,
)
from unified.testing._scenario import FunctionCall, ModelTurn, Thought, Usage

pytestmark = pytest.mark.anyio


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


async def test_text_turn(harness: Harness) -> None:
    harness.server.add(
        ModelTurn(text="Hello there, friend.", text_chunks=3, usage=Usage(input_tokens=5, output_tokens=4))
    )
    events = await harness.run("say hello")
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.backend == "generate-content"
    assert started.short_id == started.session_id[:8] if started.session_id else False
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, friend."
    result = result_of(events)
    assert result.status == "success"
    assert result.final_text == "Hello there, friend."
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.estimated) == (5, 4, False)
    assert result.turns == 1
    body = harness.bodies()[0]
    assert body["contents"][0]["parts"][0]["text"] == "say hello"
    assert "automaticFunctionCalling" not in body  # SDK-side loops are configuration, never sent
    harness.server.assert_done()


async def test_missing_output_count_is_estimated(harness: Harness) -> None:
    harness.server.add(ModelTurn(text="x" * 40, usage=Usage(input_tokens=3, output_tokens=0)))
    result = result_of(await harness.run())
    assert result.usage.output_tokens == 10
    assert result.usage.estimated


async def test_thinking_tool_call_and_signature_echo(harness: Harness) -> None:
    (harness.workspace / "a.txt").write_text("alpha\n")
    harness.server.add(
        ModelTurn(
            thoughts=[Thought(text="**Reading the file**\n\nI should read a.txt.", signature="sig-thought")],
            function_calls=[FunctionCall(name="read_file", args={"file_path": "a.txt"}, id="c1", signature="sig-call")],
            usage=Usage(input_tokens=10, output_tokens=5, thinking_tokens=7),
        ),
        ModelTurn(text="It says alpha.", text_signature="sig-text", usage=Usage(input_tokens=20, output_tokens=4)),
    )
    events = await harness.run("what is in a.txt?", model="gemini-3-flash-preview")
    thinking = [e for e in events if isinstance(e, Thinking)]
    assert len(thinking) == 1
    assert thinking[0].replace is True
    assert thinking[0].subject == "Reading the file"
    assert thinking[0].signature == b64("sig-thought")
    use = next(e for e in events if isinstance(e, ToolUse))
    assert (use.tool_use_id, use.name, use.input) == ("c1", "read_file", {"file_path": "a.txt"})
    done = next(e for e in events if isinstance(e, ToolResult))
    assert done.tool_use_id == "c1"
    assert not done.is_error
    assert "alpha" in str(done.output)
    result = result_of(events)
    assert result.status == "success"
    assert result.turns == 2
    assert result.usage.thinking_tokens == 7
    second = harness.bodies()[1]["contents"]
    assert [c["role"] for c in second] == ["user", "model", "user"]
    model_parts = second[1]["parts"]
    assert model_parts[0] == {
        "text": "**Reading the file**\n\nI should read a.txt.",
        "thought": True,
        "thoughtSignature": b64("sig-thought"),
    }
    assert model_parts[1]["thoughtSignature"] == b64("sig-call")
    assert model_parts[1]["functionCall"] == {"id": "c1", "name": "read_file", "args": {"file_path": "a.txt"}}
    response = second[2]["parts"][0]["functionResponse"]
    assert (response["id"], response["name"]) == ("c1", "read_file")
    assert "alpha" in str(response["response"]["output"])
    thinking_config = harness.bodies()[0]["generationConfig"]["thinkingConfig"]
    assert thinking_config.get("includeThoughts", thinking_config.get("include_thoughts")) is True
    declaration = harness.bodies()[0]["tools"][0]["functionDeclarations"][0]
    assert {"parametersJsonSchema", "parameters_json_schema"} & set(declaration)  # the JSON Schema, verbatim


async def test_parallel_calls_without_ids(harness: Harness, tmp_path: Path) -> None:
    for name in ("one.txt", "two.txt"):
        (harness.workspace / name).write_text(name)
    harness.server.add(
        ModelTurn(
            function_calls=[
                FunctionCall(name="read_file", args={"file_path": "one.txt"}),
                FunctionCall(name="read_file", args={"file_path": "two.txt"}),
            ]
        ),
        ModelTurn(text="both read"),
    )
    events = await harness.run()
    uses = [e for e in events if isinstance(e, ToolUse)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len({u.tool_use_id for u in uses}) == 2
    assert [r.tool_use_id for r in results] == [u.tool_use_id for u in uses]
    parts = harness.bodies()[1]["contents"][2]["parts"]
    assert [p["functionResponse"]["name"] for p in parts] == ["read_file", "read_file"]
    assert all("id" not in p["functionResponse"] for p in parts)  # the model gave none: matched by order
    assert "one.txt" in str(parts[0]["functionResponse"]["response"])
    assert result_of(events).status == "success"


async def test_failing_tool_goes_back_as_error(harness: Harness) -> None:
    harness.server.add(
        ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "missing.txt"}, id="x")]),
        ModelTurn(text="no such file"),
    )
    events = await harness.run()
    done = next(e for e in events if isinstance(e, ToolResult))
    assert done.is_error
    response = harness.bodies()[1]["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert set(response) == {"error"}
    assert result_of(events).status == "success"


@pytest.mark.parametrize("answer", ["allow", "deny"])
async def test_permission_through_on_user_input(harness: Harness, answer: str) -> None:
    harness.server.add(
        ModelTurn(function_calls=[FunctionCall(name="write_file", args={"file_path": "w.txt", "content": "hey"})]),
        ModelTurn(text="ok"),
    )
    asked: list[UserInputRequest] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow() if answer == "allow" else UserInputResponse.deny()

    events = await harness.run(on_user_input=on_user_input)
    assert len(asked) == 1
    assert asked[0].source == "permission"
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert decision.decided_by == "user"
    assert decision.decision == answer
    assert (harness.workspace / "w.txt").exists() is (answer == "allow")
    done = next(e for e in events if isinstance(e, ToolResult))
    assert done.is_error is (answer == "deny")


async def test_plan_mode_refuses_a_write(harness: Harness) -> None:
    harness.server.add(
        ModelTurn(function_calls=[FunctionCall(name="write_file", args={"file_path": "w.txt", "content": "x"})]),
        ModelTurn(text="could not write"),
    )
    events = await harness.run(approval_mode="plan")
    decision = next(e for e in events if isinstance(e, PermissionDecision))
    assert decision.decision == "deny"
    assert not (harness.workspace / "w.txt").exists()
    assert not any(isinstance(e, UserInputRequest) for e in events)
    assert result_of(events).status == "success"


async def test_max_turns(harness: Harness) -> None:
    harness.server.add(ModelTurn(function_calls=[FunctionCall(name="list_dir", args={"dir_path": "."})]))
    events = await harness.run(max_turns=1)
    result = result_of(events)
    assert result.status == "max_turns"
    assert result.turns == 1
    (answer,) = [e for e in events if isinstance(e, ToolResult)]
    assert answer.is_error  # the last turn's calls are answered "not run", not run
    assert answer.output == "not run: the run reached max_turns=1"


async def test_runaway_loop_is_stopped(harness: Harness) -> None:
    call = FunctionCall(name="list_dir", args={"dir_path": "."})
    harness.server.add(*[ModelTurn(function_calls=[call]) for _ in range(3)])
    events = await harness.run(backend_options={"loop_threshold": 3})
    result = result_of(events)
    assert result.status == "error"
    assert result.error is not None
    assert "runaway loop" in result.error
    assert result.turns == 3
    uses = {e.tool_use_id for e in events if isinstance(e, ToolUse)}
    assert uses == {e.tool_use_id for e in events if isinstance(e, ToolResult)}
    harness.server.assert_done()


async def test_ask_user_tool_reaches_on_user_input_and_the_answer_reaches_the_model(harness: Harness) -> None:
    question = {"questions": [{"question": "Which port?", "options": [{"label": "8080"}, {"label": "9090"}]}]}
    harness.server.add(
        ModelTurn(function_calls=[FunctionCall(name="ask_user", args=question)]),
        ModelTurn(text="Using 9090."),
    )
    asked: list[UserInputRequest] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={"q1": "option-2"})

    events = await harness.run(on_user_input=on_user_input)
    assert [r.source for r in asked] == ["model-tool"]
    assert [o.label for o in asked[0].questions[0].options] == ["8080", "9090"]
    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.data == {"answers": {"Which port?": "9090"}}  # protocol 2.0: structure in `data`
    sent = harness.bodies()[1]["contents"][-1]["parts"][0]["functionResponse"]
    assert sent["name"] == "ask_user"
    assert sent["response"] == {"output": {"answers": {"Which port?": "9090"}}}
    assert result_of(events).final_text == "Using 9090."
