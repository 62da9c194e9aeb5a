"""The ask_user tool and the user-input bridge: questions and permission prompts reach the caller."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified.events import UserInputRequest, UserInputResponse
from unified.tools import ToolCall, ToolRuntime
from unified.types import ApprovalMode

pytestmark = pytest.mark.anyio

QUESTIONS = {
    "questions": [
        {"question": "Which database?", "header": "DB", "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
        {
            "question": "Which features?",
            "options": [{"label": "auth"}, {"label": "search"}, {"label": "export"}],
            "multi_select": True,
        },
        {"question": "Project name?"},
    ]
}


class Bridge:
    def __init__(self, answer: UserInputResponse) -> None:
        self.answer = answer
        self.requests: list[UserInputRequest] = []

    async def __call__(self, request: UserInputRequest) -> UserInputResponse:
        self.requests.append(request)
        return self.answer


async def test_no_one_to_ask_means_no_ask_user_tool(ws: Path) -> None:
    runtime = ToolRuntime(ws)
    assert "ask_user" not in runtime.tool_names()
    [outcome] = await runtime.run_batch([ToolCall("a", "ask_user", QUESTIONS)])
    assert outcome.is_error
    assert "ask_user" in outcome.response["error"]


@pytest.mark.parametrize("mode", ["default", "plan", "yolo"])
async def test_questions_reach_the_caller_and_answers_the_model(ws: Path, mode: ApprovalMode) -> None:
    bridge = Bridge(UserInputResponse(answers={"q1": "option-2", "q2": ["option-1", "option-3"], "q3": "unified"}))
    runtime = ToolRuntime(ws, approval_mode=mode, user_input=bridge)
    declared = {d["name"]: d for d in runtime.declarations()}
    assert "questions" in declared["ask_user"]["parameters"]["properties"]
    [outcome] = await runtime.run_batch([ToolCall("a", "ask_user", QUESTIONS)])
    assert not outcome.is_error, outcome.response
    assert outcome.response == {
        "output": {
            "answers": {"Which database?": "SQLite", "Which features?": ["auth", "export"], "Project name?": "unified"}
        }
    }
    [request] = bridge.requests
    assert request.source == "model-tool"
    assert (request.request_id, request.tool_use_id, request.tool_name) == ("question-1", "a", "ask_user")
    assert [q.prompt for q in request.questions] == ["Which database?", "Which features?", "Project name?"]
    assert [o.label for o in request.questions[0].options] == ["Postgres", "SQLite"]
    assert request.questions[0].header == "DB"
    assert request.questions[1].multi_select
    assert request.questions[2].options == []
    assert outcome.decision is not None
    assert outcome.decision.decision == "allow"  # asking the person is allowed in every mode, plan included


async def test_no_answer_is_an_error_the_model_can_act_on(ws: Path) -> None:
    runtime = ToolRuntime(ws, user_input=Bridge(UserInputResponse(cancelled=True)))
    [outcome] = await runtime.run_batch([ToolCall("a", "ask_user", QUESTIONS)])
    assert outcome.is_error
    assert "did not answer" in outcome.response["error"]
    runtime = ToolRuntime(ws, user_input=Bridge(UserInputResponse(answers={"q9": "x"})))
    [outcome] = await runtime.run_batch([ToolCall("a", "ask_user", QUESTIONS)])
    assert "answered none of the questions" in outcome.response["error"]


async def test_bad_questions_are_rejected_before_anyone_is_asked(ws: Path) -> None:
    bridge = Bridge(UserInputResponse.allow())
    runtime = ToolRuntime(ws, user_input=bridge)
    [outcome] = await runtime.run_batch([ToolCall("a", "ask_user", {"questions": []})])
    assert outcome.is_error
    assert bridge.requests == []


async def test_permission_prompts_go_through_the_same_bridge(ws: Path) -> None:
    bridge = Bridge(UserInputResponse.allow())
    runtime = ToolRuntime(ws, user_input=bridge)
    [outcome] = await runtime.run_batch([ToolCall("w1", "write_file", {"file_path": "a.txt", "content": "hi"})])
    assert not outcome.is_error, outcome.response
    assert (ws / "a.txt").read_text() == "hi"
    [request] = bridge.requests
    assert (request.source, request.request_id, request.tool_use_id) == ("permission", "permission-w1", "w1")
    bridge.answer = UserInputResponse.deny()
    [outcome] = await runtime.run_batch([ToolCall("w2", "write_file", {"file_path": "b.txt", "content": "no"})])
    assert outcome.is_error
    assert not (ws / "b.txt").exists()
