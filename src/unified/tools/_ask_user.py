"""The `ask_user` tool: the model asks the person behind the run a question and waits for the answer.

Offered only when the run has someone to ask (an `on_user_input` handler), as the Gemini CLI
excludes its own `ask_user` without an interactive user. The question reaches the caller as a
`user_input_request` with source `model-tool`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar

from pydantic import Field

from unified.events import Question, QuestionOption, UserInputRequest, UserInputResponse
from unified.tools._base import Params, Progress, ToolError, ToolOutput, ToolSpec
from unified.tools._paths import shown_prompt

__all__ = [
    "CURRENT_CALL_ID",
    "AskOption",
    "AskQuestion",
    "AskUserParams",
    "UserInputBridge",
    "ask_user_tool",
    "shown_question",
]

CURRENT_CALL_ID: ContextVar[str | None] = ContextVar("unified_tool_call_id", default=None)
"""The id of the call being run, set by the runtime, so a question can name the tool_use it belongs to."""

UserInputBridge = Callable[[UserInputRequest], Awaitable[UserInputResponse]]
"""Emits a `user_input_request` and returns the caller's answer (an adapter passes `ctx.ask_user`)."""


class AskOption(Params):
    label: str = Field(description="A short answer the user can pick.")
    description: str | None = Field(default=None, description="What picking it means.")


class AskQuestion(Params):
    question: str = Field(description="The question, complete and self-contained.")
    header: str | None = Field(default=None, description="A very short label for the question (a few words).")
    options: list[AskOption] = Field(default_factory=list, description="Choices; leave empty for a free-text answer.")
    multi_select: bool = Field(default=False, description="Whether several options may be picked.")


class AskUserParams(Params):
    questions: list[AskQuestion] = Field(min_length=1, max_length=4, description="One to four questions.")


def shown_question(question: Question) -> Question:
    """`question` as the caller shows it to a person: its prompt, header and each option's label and description
    escaped as a permission prompt is (`_paths.shown_prompt`). A model's question is text the model wrote, perhaps
    after reading a prompt injection: a U+202E in it turned the rest of the line around, and an option
    `Yes<U+2066>, delete it` read as `Yes` (round 40: every backend's question reached the caller as written). The
    ids are left as they are: the answer names them, and the backend maps them back."""
    return question.model_copy(
        update={
            "prompt": shown_prompt(question.prompt),
            "header": None if question.header is None else shown_prompt(question.header),
            "options": [
                option.model_copy(
                    update={
                        "label": shown_prompt(option.label),
                        "description": None if option.description is None else shown_prompt(option.description),
                    }
                )
                for option in question.options
            ],
        }
    )


def _option_id(index: int) -> str:
    return f"option-{index + 1}"


def ask_user_tool(bridge: UserInputBridge, request_ids: Callable[[], str]) -> ToolSpec:
    """The `ask_user` spec, answering through `bridge`; `request_ids` makes each request's id."""

    async def run(params: AskUserParams, progress: Progress) -> ToolOutput:
        questions = [
            Question(
                id=f"q{i + 1}",
                prompt=q.question,
                header=q.header,
                options=[
                    QuestionOption(id=_option_id(j), label=o.label, description=o.description)
                    for j, o in enumerate(q.options)
                ],
                multi_select=q.multi_select,
            )
            for i, q in enumerate(params.questions)
        ]
        request = UserInputRequest(
            request_id=request_ids(),
            source="model-tool",
            questions=[shown_question(question) for question in questions],
            tool_use_id=CURRENT_CALL_ID.get(),
            tool_name="ask_user",
        )
        response = await bridge(request)
        if response.cancelled:
            raise ToolError("The user did not answer. Continue with your best judgement or stop and explain why.")
        answers: dict[str, str | list[str]] = {}
        for question, asked in zip(questions, params.questions, strict=True):
            labels = {_option_id(j): o.label for j, o in enumerate(asked.options)}
            given = response.answers.get(question.id)
            if given is None:
                continue
            picked = given if isinstance(given, list) else [given]
            named = [labels.get(choice, choice) for choice in picked]
            answers[asked.question] = named if asked.multi_select else named[0]
        if not answers:
            raise ToolError("The user answered none of the questions. Ask again more simply, or go on without.")
        return ToolOutput({"answers": answers})

    return ToolSpec(
        "ask_user",
        "other",
        AskUserParams,
        run,
        "Asks the user one to four questions and waits for the answers. Use it only when you cannot proceed "
        "safely without a decision or a fact that only the user has; give options when the answer is a choice.",
    )
