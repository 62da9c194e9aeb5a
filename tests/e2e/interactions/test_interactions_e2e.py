"""The interactions backend end to end: unified.execute → google-genai → HTTP → FakeGemini."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

import unified
from tests.e2e.interactions.interactions_harness import MODEL, Params, collect, of_type
from tests.hang_guard import HANG_GUARD_S
from unified._adapters.interactions import create_session_locator
from unified.events import UserInputRequest, UserInputResponse
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import (
    CodeExecutionCall,
    CodeExecutionResult,
    Fault,
    FunctionCallStep,
    GoogleSearchCall,
    GoogleSearchResult,
    InteractionTurn,
    TextStep,
    ThoughtStep,
    Usage,
)

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def text_turn(text: str, **fields: object) -> InteractionTurn:
    return InteractionTurn.model_validate({"steps": [TextStep(text=text, chunks=2)], **fields})


def call_turn(*calls: FunctionCallStep) -> InteractionTurn:
    return InteractionTurn(steps=list(calls), usage=Usage(input_tokens=20, output_tokens=4))


async def test_text(fake: FakeGemini, params: Params) -> None:
    fake.add(text_turn("Hello there", usage=Usage(input_tokens=5, output_tokens=3, cached_tokens=2)))
    events = await collect(params("hi"))
    kinds = [e.type for e in events]
    assert kinds == ["session_started", "text_delta", "text_delta", "assistant_message", "result"]
    started, result = events[0], events[-1]
    assert started.backend == "interactions"
    assert started.model == MODEL
    assert started.transport == "http"
    assert result.status == "success"
    assert result.final_text == "Hello there"
    assert result.usage.input_tokens == 5
    assert result.usage.output_tokens == 3
    assert result.usage.cached_tokens == 2
    assert not result.usage.estimated
    assert result.turns == 1
    assert result.short_id == started.short_id
    body = fake.requests_for("interactions.create")[0].body
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["input"] == [{"type": "user_input", "content": [{"type": "text", "text": "hi"}]}]
    assert any(tool["name"] == "read_file" for tool in body["tools"])
    fake.assert_done()


async def test_thinking(fake: FakeGemini, params: Params) -> None:
    fake.add(InteractionTurn(steps=[ThoughtStep(summary=["Plan. ", "Check."], signature="sig"), TextStep(text="ok")]))
    events = await collect(params(thinking=unified.ThinkingConfig(level="high")))
    thoughts = of_type(events, "thinking")
    assert [(t.text, t.replace) for t in thoughts] == [("Plan. ", False), ("Check.", False), ("", False)]
    assert thoughts[-1].signature == "c2ln"
    assert fake.requests_for("interactions.create")[0].body["generation_config"] == {
        "thinking_summaries": "auto",
        "thinking_level": "high",
    }


async def test_one_tool_call(fake: FakeGemini, params: Params) -> None:
    fake.add(
        call_turn(FunctionCallStep(name="read_file", arguments={"file_path": "notes.txt"}, id="c1")),
        text_turn("It says alpha."),
    )
    events = await collect(params("read notes"))
    use, result = of_type(events, "tool_use")[0], of_type(events, "tool_result")[0]
    assert (use.tool_use_id, use.name, use.input, use.server_side) == (
        "c1",
        "read_file",
        {"file_path": "notes.txt"},
        False,
    )
    assert result.tool_use_id == "c1"
    assert not result.is_error
    assert "alpha" in str(result.output)
    assert events[-1].status == "success"
    assert events[-1].turns == 2
    first, second = (r.body for r in fake.requests_for("interactions.create"))
    iid = fake.requests_for("interactions.create")[0]
    assert "previous_interaction_id" not in first
    assert second["previous_interaction_id"] == "fake-interaction-1", iid
    assert second["input"][0]["type"] == "function_result"
    assert second["input"][0]["call_id"] == "c1"
    assert "alpha" in str(second["input"][0]["result"])


async def test_parallel_calls_with_streamed_arguments(fake: FakeGemini, params: Params) -> None:
    fake.add(
        call_turn(
            FunctionCallStep(name="read_file", arguments={"file_path": "notes.txt"}, id="a"),
            FunctionCallStep(name="list_dir", arguments={"dir_path": "."}, id="b", arguments_delta=True),
        ),
        text_turn("done"),
    )
    events = await collect(params())
    assert [u.input for u in of_type(events, "tool_use")] == [{"file_path": "notes.txt"}, {"dir_path": "."}]
    assert [r.tool_use_id for r in of_type(events, "tool_result")] == ["a", "b"]
    results = fake.requests_for("interactions.create")[1].body["input"]
    assert [r["call_id"] for r in results] == ["a", "b"]


async def test_failing_tool(fake: FakeGemini, params: Params) -> None:
    fake.add(
        call_turn(FunctionCallStep(name="read_file", arguments={"file_path": "missing.txt"}, id="c1")), text_turn("no")
    )
    events = await collect(params())
    result = of_type(events, "tool_result")[0]
    assert result.is_error
    sent = fake.requests_for("interactions.create")[1].body["input"][0]
    assert sent["is_error"] is True
    assert "error" in sent["result"]
    assert events[-1].status == "success"


@pytest.mark.parametrize("answer", ["allow", "deny"])
async def test_permission(fake: FakeGemini, params: Params, workspace: Path, answer: str) -> None:
    fake.add(
        call_turn(FunctionCallStep(name="write_file", arguments={"file_path": "out.txt", "content": "x"}, id="w")),
        text_turn("written?"),
    )
    asked: list[UserInputRequest] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse.allow() if answer == "allow" else UserInputResponse.deny()

    events = await collect(params(on_user_input=on_user_input))
    assert [r.source for r in asked] == ["permission"]
    assert asked[0].tool_use_id == "w"
    decision = of_type(events, "permission_decision")[0]
    assert (decision.decision, decision.decided_by) == (answer, "user")
    assert (workspace / "out.txt").exists() == (answer == "allow")
    assert of_type(events, "tool_result")[0].is_error == (answer == "deny")


async def test_ask_user_tool(fake: FakeGemini, params: Params) -> None:
    question = {"questions": [{"question": "Which port?", "options": [{"label": "8080"}, {"label": "9090"}]}]}
    fake.add(call_turn(FunctionCallStep(name="ask_user", arguments=question, id="q")), text_turn("Using 8080."))
    asked: list[UserInputRequest] = []

    async def on_user_input(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        return UserInputResponse(answers={"q1": "option-1"})

    events = await collect(params(on_user_input=on_user_input))
    assert [r.source for r in asked] == ["model-tool"]
    assert of_type(events, "tool_result")[0].data == {"answers": {"Which port?": "8080"}}  # protocol 2.0
    sent = [r.body for r in fake.requests_for("interactions.create")][1]["input"]
    assert any(item.get("call_id") == "q" and "8080" in str(item.get("result")) for item in sent)


async def test_plan_mode_refuses_a_write(fake: FakeGemini, params: Params, workspace: Path) -> None:
    fake.add(
        call_turn(FunctionCallStep(name="write_file", arguments={"file_path": "out.txt", "content": "x"}, id="w")),
        text_turn("I may not write."),
    )
    events = await collect(params(approval_mode="plan"))
    decision = of_type(events, "permission_decision")[0]
    assert decision.decision == "deny"
    assert not (workspace / "out.txt").exists()
    assert of_type(events, "user_input_request") == []


async def test_max_turns_answers_the_last_calls_as_not_run(fake: FakeGemini, params: Params) -> None:
    fake.add(call_turn(FunctionCallStep(name="list_dir", arguments={}, id="c1")))
    events = await collect(params(max_turns=1))
    assert events[-1].status == "max_turns"
    (result,) = of_type(events, "tool_result")
    assert result.is_error
    assert result.output == "not run: the run reached max_turns=1"
    assert of_type(events, "permission_decision") == []  # the tool never reached the runtime


async def test_resume_by_short_id(fake: FakeGemini, params: Params) -> None:
    fake.add(text_turn("first"), text_turn("second"))
    first = await collect(params("one"))
    short_id = first[-1].short_id
    assert short_id
    second = await collect(params("two", resume=short_id[:6]))
    started = second[0]
    assert started.resumed
    assert started.short_id == short_id
    assert second[-1].final_text == "second"
    body = fake.requests_for("interactions.create")[1].body
    assert body["previous_interaction_id"] == "fake-interaction-1"
    locator = create_session_locator()
    shown = await locator.show(short_id)
    assert shown["interactions"] == ["fake-interaction-1", "fake-interaction-2"]
    assert shown["turns"] == 2


async def test_store_false_resends_the_conversation(fake: FakeGemini, params: Params) -> None:
    fake.add(
        InteractionTurn(
            steps=[
                ThoughtStep(summary=["t"], signature="sig"),
                FunctionCallStep(name="list_dir", arguments={}, id="c1"),
            ]
        ),
        text_turn("done"),
    )
    events = await collect(params(backend_options={"store": False}))
    assert events[-1].status == "success"
    first, second = (r.body for r in fake.requests_for("interactions.create"))
    assert first["store"] is False
    assert "previous_interaction_id" not in second
    kinds = [step["type"] for step in second["input"]]
    assert kinds == ["user_input", "thought", "function_call", "function_result"]
    assert second["input"][1]["signature"] == "c2ln"


async def test_api_error(fake: FakeGemini, params: Params) -> None:
    fake.add(text_turn("never", fault=Fault(kind="server_error")))
    events = await collect(params(backend_options={"max_retries": 0}))
    error = of_type(events, "error")[0]
    assert error.fatal
    assert error.code == "backend_error"
    assert (error.details["http_status"], error.details["status"]) == (500, "INTERNAL")
    assert events[-1].status == "error"


async def test_mid_stream_error_event(fake: FakeGemini, params: Params) -> None:
    fake.add(text_turn("partial answer", fault=Fault(kind="mid_stream_error", after=4, message="model crashed")))
    events = await collect(params())
    assert "model crashed" in of_type(events, "error")[0].message
    assert events[-1].status == "error"


@pytest.mark.parametrize(("carries", "after"), [("rate_limit", 0), ("rate_limit", 1), ("unavailable", 1)])
async def test_an_error_event_before_any_output_is_retried_as_its_http_status_is(
    fake: FakeGemini, params: Params, carries: str, after: int
) -> None:
    """A 429 or 503 met in the stream before the turn showed anything (after its `interaction.start`, or as its
    first event) is asked again under the retry policy, as the same status answered over HTTP is: it ended the run
    at once (one request, no `retrying` warning)."""
    fake.add(text_turn("never", fault=Fault(kind="mid_stream_error", after=after, carries=carries)))
    fake.add(text_turn("after the retry"))
    events = await collect(params())
    [warning] = of_type(events, "warning")
    assert warning.code == "retrying"
    said = (
        "the Gemini API rate limit was hit: " if carries == "rate_limit" else "the Gemini API failed (503 UNAVAILABLE)"
    )
    assert warning.message.startswith(said), warning.message
    assert "; retry 1/3 in " in warning.message
    assert not of_type(events, "error")
    assert events[-1].status == "success"
    assert events[-1].final_text == "after the retry"
    assert "".join(t.text for t in of_type(events, "text_delta")) == "after the retry"
    assert len(fake.requests_for("interactions.create")) == 2


async def test_an_error_event_before_output_gives_up_as_an_http_status_does(fake: FakeGemini, params: Params) -> None:
    for _ in range(2):
        fake.add(text_turn("never", fault=Fault(kind="mid_stream_error", after=1, carries="rate_limit")))
    events = await collect(params(backend_options={"max_retries": 1}))
    assert [w.code for w in of_type(events, "warning")] == ["retrying"]
    [error] = of_type(events, "error")
    assert (error.code, error.retryable) == ("rate_limited", True)
    assert "gave up after 2 attempts" in error.message
    assert events[-1].status == "error"
    assert len(fake.requests_for("interactions.create")) == 2


async def test_an_error_event_after_output_is_not_retried(fake: FakeGemini, params: Params) -> None:
    """Once text was shown, asking again would show it twice: the run ends with the error, asked once."""
    fake.add(text_turn("partial answer", fault=Fault(kind="mid_stream_error", after=4, carries="rate_limit")))
    fake.add(text_turn("never"))
    events = await collect(params())
    assert not of_type(events, "warning")
    [error] = of_type(events, "error")
    assert error.code == "rate_limited"
    shown = "".join(t.text for t in of_type(events, "text_delta"))
    assert shown  # output came before the error
    assert "partial answer".startswith(shown)  # and never twice
    assert events[-1].status == "error"
    assert len(fake.requests_for("interactions.create")) == 1


async def test_rate_limit_is_retried_with_the_servers_delay(fake: FakeGemini, params: Params) -> None:
    fake.add(text_turn("after waiting", fault=Fault(kind="rate_limit", retry_delay="2s")))
    events = await collect(params())
    warnings = of_type(events, "warning")
    assert len(warnings) == 1
    assert warnings[0].code == "retrying"
    assert "in 0.02s (the server asked 2s; retry_delay_scale=0.01)" in warnings[0].message
    assert events[-1].status == "success"
    assert events[-1].final_text == "after waiting"
    assert len(fake.requests_for("interactions.create")) == 2


async def test_rate_limit_exhausted(fake: FakeGemini, params: Params) -> None:
    for index in range(2):
        fake.inject(Fault(kind="rate_limit", retry_delay="1s"), at_request=index)
    fake.add(text_turn("never"))
    events = await collect(params(backend_options={"max_retries": 1}))
    assert of_type(events, "error")[0].code == "rate_limited"


@pytest.mark.parametrize("kind", ["rate_limit", "server_error", "bad_request"])
async def test_an_http_error_says_the_server_s_words_not_the_sdk_s_dump_of_the_body(
    fake: FakeGemini, params: Params, kind: str
) -> None:
    """The SDK's message is "Error code: 429 - " and the repr of the whole body (its `details` list and all): the
    error, each `retrying` warning and a failed subagent's tool result carried that; now the server's message."""
    fake.inject(Fault(kind=kind, message="the server's own words"), at_request=0)
    fake.add(text_turn("never"))
    events = await collect(params(backend_options={"max_retries": 0}))
    error = of_type(events, "error")[0]
    assert "the server's own words" in error.message
    assert "Error code" not in error.message, error.message
    assert "'details'" not in error.message


async def test_stream_resume_after_a_cut(fake: FakeGemini, params: Params) -> None:
    fake.add(
        InteractionTurn(
            steps=[ThoughtStep(summary=["hm"]), TextStep(text="one two three four", chunks=4)],
            fault=Fault(kind="cut_stream", after=6),
        )
    )
    events = await collect(params())
    assert "".join(t.text for t in of_type(events, "text_delta")) == "one two three four"
    assert [w.code for w in of_type(events, "warning")] == ["stream_resumed"]
    assert events[-1].status == "success"
    assert events[-1].final_text == "one two three four"
    resume = fake.requests_for("interactions.get")[0]
    assert resume.query["stream"] == "true"
    assert resume.query["last_event_id"] == "fake-interaction-1.5"


async def test_server_side_tools(fake: FakeGemini, params: Params) -> None:
    fake.add(
        InteractionTurn(
            steps=[
                GoogleSearchCall(id="s1", queries=["weather paris"]),
                GoogleSearchResult(call_id="s1", search_suggestions="<div/>"),
                CodeExecutionCall(id="x1", code="print(2+2)"),
                CodeExecutionResult(call_id="x1", result="4\n"),
                TextStep(text="Sunny, and 4."),
            ]
        )
    )
    events = await collect(params(backend_options={"google_search": True, "code_execution": True}))
    uses, results = of_type(events, "tool_use"), of_type(events, "tool_result")
    assert [(u.name, u.server_side) for u in uses] == [("google_search", True), ("code_execution", True)]
    assert uses[0].input == {"queries": ["weather paris"]}
    # protocol 2.0: output is text; a structured payload is also in `data`
    assert [r.output for r in results] == ['[{"search_suggestions": "<div/>"}]', "4\n"]
    assert results[0].data == {"value": [{"search_suggestions": "<div/>"}]}
    assert all(r.server_side for r in results)
    tools = fake.requests_for("interactions.create")[0].body["tools"]
    assert {"type": "google_search"} in tools
    assert {"type": "code_execution"} in tools
    assert events[-1].status == "success"


@pytest.mark.parametrize("stream", [False, True])
async def test_background_agent(fake: FakeGemini, params: Params, stream: bool) -> None:
    fake.add(
        InteractionTurn(
            steps=[ThoughtStep(summary=["Researching"]), TextStep(text="Report: done.")],
            usage=Usage(input_tokens=100, output_tokens=50),
            background_polls=2,
        )
    )
    agent = "deep-research-pro-preview-12-2025"
    options = {"agent": agent, "background": True, "stream": stream}
    events = await collect(params("research X", model=None, backend_options=options))
    kinds = [e.type for e in events]
    assert kinds[1] == "subagent_started"
    assert "subagent_completed" in kinds
    assert of_type(events, "subagent_started")[0].agent_name == agent
    assert of_type(events, "subagent_completed")[0].status == "completed"
    assert of_type(events, "subagent_progress")
    assert events[-1].final_text == "Report: done."
    assert events[-1].usage.output_tokens == 50
    body = fake.requests_for("interactions.create")[0].body
    assert body["agent"] == agent
    assert body["background"] is True
    assert "model" not in body
    assert fake.requests_for("interactions.get")


async def test_cancellation_cancels_the_interaction(fake: FakeGemini, params: Params) -> None:
    fake.add(InteractionTurn(steps=[TextStep(text="slow")], background_polls=10_000))
    options = {"agent": "deep-research-pro-preview-12-2025", "background": True, "stream": False}
    seen: list[str] = []
    async with unified.execute(params(model=None, backend_options=options)) as events:
        async for event in events:
            seen.append(event.type)
            if event.type == "subagent_progress" and seen.count("subagent_progress") == 2:
                events.cancel()
    assert seen[-1] == "result"
    assert len(fake.requests_for("interactions.cancel")) == 1
    stored = fake.interaction("fake-interaction-1")
    assert stored is not None
    assert stored["status"] == "cancelled"


async def test_a_run_finishes_well_under_the_timeout(fake: FakeGemini, params: Params) -> None:
    fake.add(text_turn("quick"))
    with anyio.fail_after(HANG_GUARD_S):
        events = await collect(params(total_timeout_s=10))
    assert events[-1].status == "success"


@pytest.mark.parametrize(
    ("kind", "message", "code", "hint"),
    [
        ("bad_request", "API key not valid. Please pass a valid API key.", "auth_error", "GEMINI_API_KEY"),
        ("unauthenticated", None, "auth_error", "GEMINI_API_KEY"),
        ("permission_denied", None, "auth_error", "Vertex AI permissions"),
        ("not_found", None, "model_not_found", "check the model name"),
        ("bad_request", "Invalid value at 'generation_config'", "bad_request", "fix the request"),
    ],
)
async def test_client_errors_are_not_retried_and_say_what_to_fix(
    fake: FakeGemini, params: Params, kind: str, message: str | None, code: str, hint: str
) -> None:
    fake.add(
        InteractionTurn(steps=[TextStep(text="never")], fault=Fault.model_validate({"kind": kind, "message": message}))
    )
    events = await collect(params())
    error = of_type(events, "error")[0]
    assert (error.code, error.fatal, error.retryable) == (code, True, False)
    assert hint in error.message
    assert not [w for w in of_type(events, "warning") if w.code == "retrying"]
    assert len(fake.requests_for("interactions.create")) == 1  # asked once, not retried
    assert events[-1].status == "error"


async def test_a_stored_session_holding_an_image_the_api_refuses_resumes_with_a_note(
    fake: FakeGemini, params: Params, tmp_path: Path
) -> None:
    """A session stored before the check (or by another tool) holding an `image` item of a type the Interactions
    API refuses (`image/svg+xml`) sent it again on every turn; now the note a carried history gets, and a warning."""
    from unified._sessions.stores import FileSessionStore
    from unified.sessions import StoredSession

    store = FileSessionStore(tmp_path / "store")
    session = StoredSession.new("interactions", model=MODEL, cwd=str(tmp_path), first_prompt="hi")
    svg = {"type": "image", "mime_type": "image/svg+xml", "data": "PHN2Zy8+"}
    session.state = {
        "store": False,
        "steps": [
            {"type": "user_input", "content": [{"type": "text", "text": "hi"}, svg]},
            {"type": "model_output", "content": [{"type": "text", "text": "an svg"}]},
        ],
    }
    await store.save(session)
    fake.add(text_turn("ok"))
    events = await collect(params("go on", resume=session.short_id, session_store=store))
    assert events[-1].status == "success"
    sent = str(fake.requests_for("interactions.create")[0].body)
    assert "image/svg+xml" in sent
    assert "'type': 'image'" not in sent
    (warning,) = of_type(events, "warning")
    assert (warning.code, "step 0: image/svg+xml" in warning.message) == ("unsupported_option", True)
    stored = (await store.load("interactions", session.session_id)).state["steps"]
    assert stored[0]["content"][1]["type"] == "text"  # kept as the note
