"""Answering `user_input_request`s from the command line: fixed answers from a flag, or a terminal prompt."""

from __future__ import annotations

import threading

import anyio
from rich.console import Console
from rich.text import Text

from unified._cli.render import visible
from unified._redaction import redact
from unified.events import Question, UserInputRequest, UserInputResponse
from unified.types import UserInputHandler

__all__ = ["ask_in_terminal", "make_user_input_handler"]


def make_user_input_handler(approve: bool | None, *, interactive: bool, console: Console) -> UserInputHandler | None:
    """The `on_user_input` for `unified run`.

    `approve` answers every permission request (True: allow once, False: deny); other questions go
    to the terminal when there is one and are left unanswered (cancelled) otherwise. With neither a
    flag nor a terminal there is no handler at all, so routing does not demand user-input support.
    """
    if approve is None and not interactive:
        return None

    async def handle(request: UserInputRequest) -> UserInputResponse:
        if request.source == "permission" and approve is not None:
            return UserInputResponse.allow() if approve else UserInputResponse.deny()
        if not interactive:
            return UserInputResponse(cancelled=True)
        return await _ask_in_background(request, console)

    return handle


async def _ask_in_background(request: UserInputRequest, console: Console) -> UserInputResponse:
    """Read the answer in a daemon thread: a cancelled run must not wait for someone to press Enter."""
    answer: list[UserInputResponse] = []
    done = threading.Event()

    def ask() -> None:
        answer.append(ask_in_terminal(request, console))
        done.set()

    threading.Thread(target=ask, name="unified-ask-user", daemon=True).start()
    while not done.is_set():  # noqa: ASYNC110 - set from the reading thread, outside any event loop
        await anyio.sleep(0.05)
    return answer[0]


def ask_in_terminal(request: UserInputRequest, console: Console) -> UserInputResponse:
    """Ask each question on `console`; end of input means no answer (cancelled). A subagent's question says
    whose it is first: the same prompt from the main agent and from a task it delegated read alike, and the
    person answering may trust the one whose reasoning they followed, not the other."""
    answers: dict[str, str | list[str]] = {}
    if request.subagent_task_id is not None:
        console.print(Text(_shown(f"(asked by subagent {request.subagent_task_id}, not the main agent)"), style="bold"))
    try:
        for question in request.questions:
            answers[question.id] = _ask_one(question, console)
    except EOFError:
        return UserInputResponse(cancelled=True)
    return UserInputResponse(answers=answers)


CONTINUED = "\n  ┆ "
"""What each line after a question's first begins with: a multi-line command is legitimate, but a line
of it must not pass for a prompt of ours (`rm -rf ~` then a line `? Allow running ls?`)."""


def _shown(text: str) -> str:
    """`text` as a prompt shows it: secrets replaced, and nothing that could rewrite what the terminal shows.
    A command the model wrote may carry `ESC[2K` (erase the line) and a harmless command after it: the
    user would approve what they did not see. Every line after the first is marked as a continuation."""
    return visible(redact(text).replace("\r\n", "\n"), unseen=True).replace("\n", CONTINUED)


def _ask_one(question: Question, console: Console) -> str | list[str]:
    header = f"{question.header}: " if question.header else ""
    console.print(Text(_shown(f"? {header}{question.prompt}"), style="bold yellow"))
    if not question.options:
        return console.input("> ")
    for number, option in enumerate(question.options, 1):
        about = f" ({option.description})" if option.description else ""
        console.print(Text(_shown(f"  {number}. {option.label}{about}")))
    hint = "numbers separated by commas" if question.multi_select else "a number"
    while True:
        picked = _pick(console.input(f"choose {hint}: "), question)
        if picked:
            return picked if question.multi_select else picked[0]
        console.print(Text(f"please answer with {hint} between 1 and {len(question.options)}", style="yellow"))


def _pick(raw: str, question: Question) -> list[str]:
    """Option ids for an answer given as numbers or labels; empty when any part is not an option."""
    picked: list[str] = []
    for part in (p.strip() for p in raw.split(",") if p.strip()):
        by_label = [o.id for o in question.options if part.lower() in (o.label.lower(), o.id.lower())]
        if part.isdigit() and 1 <= int(part) <= len(question.options):
            picked.append(question.options[int(part) - 1].id)
        elif by_label:
            picked.append(by_label[0])
        else:
            return []
    return picked
