"""A caller's `retry` of a conversation that ends with tool results, on a backend driving an agent binary (the
real pinned `gemini`, `claude` and `codex` against the fake model servers on 127.0.0.1).

An API backend sends such a history as it is and the model answers the results; an agent binary is only ever
sent a user's message. A failover in that situation already went on with the tool round and `CONTINUE_PROMPT`;
a caller's own `retry` was refused ("the last turn holds tool results") on a history, and on a resumed session
claude-code and codex cut the session back to its last prompt (the tool round was lost and the model asked for
the call again) while gemini-cli sent the failed prompt again after the round. Now a caller's retry goes on the
way failover does: the tool round is sent, then the continue message as the user's turn; the tool never runs
again and the prompt is sent once.
"""

from __future__ import annotations

import pytest

from tests.e2e.conversations.test_backend_pairs import Lab, _result, lab  # noqa: F401 (a fixture)
from unified.conversations import (
    CONTINUE_PROMPT,
    Conversation,
    ModelTurn,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.events import ToolUse
from unified.testing import Fault, FunctionCall
from unified.testing import ModelTurn as ScriptTurn

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

FACT = "the code word is heron-4417"
PROMPT = "what is the code word?"
BINARIES = ["gemini-cli", "claude-code", "codex"]
READ = {
    "gemini-cli": FunctionCall(name="read_file", args={"file_path": "notes.txt"}),
    "claude-code": FunctionCall(name="Read", args={"file_path": "notes.txt"}, id="toolu_read_notes"),
    "codex": FunctionCall(name="read_file", args={"file_path": "notes.txt"}),  # FakeOpenAI: exec_command cat
}
"""How each binary's model reads notes.txt."""


def _answering(servers: Lab, target: str, before: int) -> str:
    """The request (as JSON text of its history) that told `target`'s model to go on from the tool round."""
    sent = [body for body in servers.model_requests(target)[before:] if CONTINUE_PROMPT in body]
    assert sent, "the model is told to go on from the tool round"
    return sent[0]


@pytest.mark.parametrize("target", BINARIES)
async def test_a_retried_history_that_ends_with_tool_results_goes_on_from_them(lab: Lab, target: str) -> None:  # noqa: F811
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text=PROMPT)]),
            ModelTurn(
                provider="google",
                parts=[ToolCallPart(id="call-notes-1", name="read_file", arguments={"file_path": "notes.txt"})],
            ),
            UserTurn(parts=[ToolResultPart(call_id="call-notes-1", name="read_file", output=FACT)]),
        ]
    )
    lab.server(target).add(ScriptTurn(text=f"heron-4417, said {target}."))
    before = len(lab.model_requests(target))
    events = await lab.run(lab.params(target, "", history=history, retry=True))
    result = _result(events)
    assert (result.status, result.final_text) == ("success", f"heron-4417, said {target}."), result.error
    assert not [e for e in events if isinstance(e, ToolUse)]
    sent = _answering(lab, target, before)
    assert FACT in sent  # the tool's output
    assert "call-notes-1" in sent or "read_file" in sent  # with its call
    assert sent.count(PROMPT) == 1
    assert sent.index(FACT) < sent.index(CONTINUE_PROMPT)


@pytest.mark.parametrize("target", BINARIES)
async def test_a_retried_session_whose_last_turn_is_tool_results_goes_on_from_them(lab: Lab, target: str) -> None:  # noqa: F811
    (lab.workspace / "notes.txt").write_text(FACT + "\n", encoding="utf-8")
    server = lab.server(target)
    # The answer to the tool round fails, and stays queued for the retry: a 400, which gemini and codex do not
    # ask again; claude asks again after a 400 too, so a 429 that asks to wait longer than unified waits.
    fault = Fault(kind="rate_limit", retry_delay="3600s") if target == "claude-code" else Fault(kind="bad_request")
    server.add(ScriptTurn(function_calls=[READ[target]]), ScriptTurn(text=f"heron-4417, said {target}.", fault=fault))
    failed = await lab.run(lab.params(target, PROMPT))
    first = _result(failed)
    assert first.status == "error", first
    assert first.short_id is not None
    assert len([e for e in failed if isinstance(e, ToolUse)]) == 1  # the read ran

    before = len(lab.model_requests(target))
    events = await lab.run(lab.params(target, "", resume=first.short_id, retry=True))
    result = _result(events)
    assert (result.status, result.final_text) == ("success", f"heron-4417, said {target}."), result.error
    assert not [e for e in events if isinstance(e, ToolUse)], "the read is not asked for again"
    sent = _answering(lab, target, before)
    assert FACT in sent
    assert sent.count(PROMPT) == 1
    assert sent.index(FACT) < sent.index(CONTINUE_PROMPT)
