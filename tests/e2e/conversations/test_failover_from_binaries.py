"""A backend driving an agent binary that gives out, or is cancelled, after a tool round keeps that round: the real
pinned `gemini` and `codex` against the fake model servers on 127.0.0.1.

Two promises broke there. The gemini CLI rolls its chat file back to where the prompt began when the prompt is
cancelled (unified cancels it on a cancel and once the CLI's retries are spent): a failover from gemini-cli
carried nothing of the turn (the next backend got the prompt again, so its model would run the tool again), and a
cancelled run's `short_id` resumed nothing ("No previous sessions found"). And a failover from codex named the
session it left by the head of its UUIDv7 id (its creation time, shared by every thread of that moment) instead
of codex's short id, so `left_session` resumed nothing, or another session.
"""

from __future__ import annotations

import pytest

from tests.e2e.conversations.test_backend_pairs import Lab, _result, lab  # noqa: F401 (a fixture)
from unified import execute, sessions
from unified.conversations import CONTINUE_PROMPT, Conversation, TextPart, ToolCallPart, ToolResultPart
from unified.events import Failover, SessionStarted, ToolResult, ToolUse
from unified.testing import Fault, FunctionCall
from unified.testing import ModelTurn as ScriptTurn
from unified.types import Fallback

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

FACT = "the code word is heron-4417"
PROMPT = "what is the code word?"
COMMAND = "echo ran >> ran.txt; cat notes.txt"
TARGET = {"gemini-cli": "codex", "codex": "generate-content"}
"""The backend each source fails over to: one on another model server, so the source's faults stay its own."""


def _exported_round(conversation: Conversation) -> tuple[list[ToolCallPart], list[ToolResultPart]]:
    parts = [part for turn in conversation.turns for part in turn.parts]
    return [p for p in parts if isinstance(p, ToolCallPart)], [p for p in parts if isinstance(p, ToolResultPart)]


@pytest.mark.parametrize("source", ["gemini-cli", "codex"])
async def test_a_binary_that_gives_out_after_a_tool_round_hands_the_round_on_and_names_its_session(
    lab: Lab,  # noqa: F811
    source: str,
) -> None:
    (lab.workspace / "notes.txt").write_text(FACT + "\n", encoding="utf-8")
    target = TARGET[source]
    server = lab.server(source)
    server.add(
        ScriptTurn(
            text="Let me look. ", function_calls=[FunctionCall(name="run_shell_command", args={"command": COMMAND})]
        )
    )
    for index in range(1, 6):  # the answer to the tool round, and every retry of it
        server.inject(Fault(kind="rate_limit", retry_delay="1s"), at_request=index)
    lab.server(target).add(ScriptTurn(text=f"heron-4417, said {target}."))
    fallback = Fallback(
        backend=target, model=lab.params(target, "").model, backend_options=lab.params(target, "").backend_options
    )
    options: dict[str, object] = {"max_retries": 0} if source == "gemini-cli" else {}
    before = len(lab.model_requests(target))
    events = await lab.run(lab.params(source, PROMPT, options, fallback=(fallback,)))

    [switch] = [e for e in events if isinstance(e, Failover)]
    assert (switch.from_backend, switch.to_backend, switch.code) == (source, target, "rate_limited")
    result = _result(events)
    assert (result.status, result.backend) == ("success", target), result.error
    assert (lab.workspace / "ran.txt").read_text() == "ran\n"  # the command ran once
    assert len([e for e in events if isinstance(e, ToolResult)]) == 1
    assert not [e for e in events[events.index(switch) :] if isinstance(e, ToolUse)]

    first = next(e for e in events if isinstance(e, SessionStarted))
    assert switch.left_session is not None
    assert switch.left_session == first.short_id  # the short id the backend announced, which resumes it
    left = await sessions.export(switch.left_session, cwd=str(lab.workspace))
    calls, results = _exported_round(left)
    assert len(calls) == 1
    assert len(results) == 1
    assert FACT in results[0].output

    sent = [body for body in lab.model_requests(target)[before:] if FACT in body]
    assert sent, "the next backend's model got the tool round"
    assert sent[0].count(PROMPT) == 1
    if target == "codex":  # an agent binary is sent a user's message after the round
        assert CONTINUE_PROMPT in sent[0]


async def test_a_gemini_cli_run_cancelled_after_a_tool_round_resumes_with_it(lab: Lab) -> None:  # noqa: F811
    (lab.workspace / "notes.txt").write_text(FACT + "\n", encoding="utf-8")
    lab.gemini.add(
        ScriptTurn(
            text="Let me look. ", function_calls=[FunctionCall(name="run_shell_command", args={"command": COMMAND})]
        )
    )
    lab.gemini.add(ScriptTurn(text="never shown", fault=Fault(kind="stall", after=0)))  # the answer to the round
    lab.gemini.add(ScriptTurn(text="heron-4417, after the cancel."))
    async with execute(lab.params("gemini-cli", PROMPT)) as stream:
        async for event in stream:
            if isinstance(event, ToolResult):
                stream.cancel()
    first = _result([event])
    assert first.status == "cancelled"
    assert first.short_id is not None

    calls, results = _exported_round(await sessions.export(first.short_id, cwd=str(lab.workspace)))
    assert (len(calls), len(results)) == (1, 1)
    before = len(lab.model_requests("gemini-cli"))
    events = await lab.run(lab.params("gemini-cli", "so?", resume=first.short_id))
    result = _result(events)
    assert (result.status, result.final_text) == ("success", "heron-4417, after the cancel."), result.error
    sent = [body for body in lab.model_requests("gemini-cli")[before:] if "so?" in body]
    assert sent
    assert FACT in sent[0]
    assert sent[0].count(PROMPT) == 1
    assert (lab.workspace / "ran.txt").read_text() == "ran\n"


async def test_a_gemini_cli_run_cancelled_before_its_prompt_was_recorded_resumes_with_the_prompt(
    lab: Lab,  # noqa: F811
) -> None:
    """Cancelled as it starts, the CLI has recorded no prompt (or its rollback took it): a session file with no
    prompt, which the CLI cannot load. The run's `short_id` resumed nothing ("session/load: No previous
    sessions found for this project"); it now holds the prompt, as `gemini -p` keeps a cancelled prompt."""
    for _ in range(2):  # whether or not the cancelled run's request reached the model, the resume gets one
        lab.gemini.add(ScriptTurn(text="heron-4417, resumed."))
    async with execute(lab.params("gemini-cli", PROMPT)) as stream:
        async for event in stream:
            if isinstance(event, SessionStarted):
                stream.cancel()
    first = _result([event])
    assert first.status == "cancelled"
    assert first.short_id is not None
    exported = await sessions.export(first.short_id, cwd=str(lab.workspace))
    assert [p.text for t in exported.turns for p in t.parts if isinstance(p, TextPart)] == [PROMPT]

    before = len(lab.model_requests("gemini-cli"))
    events = await lab.run(lab.params("gemini-cli", "so?", resume=first.short_id))
    result = _result(events)
    assert (result.status, result.final_text) == ("success", "heron-4417, resumed."), result.error
    [sent] = lab.model_requests("gemini-cli")[before:]
    assert (sent.count(PROMPT), sent.count("so?")) == (1, 1)
