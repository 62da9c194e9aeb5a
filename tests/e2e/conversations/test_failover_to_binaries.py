"""A run that gives out between tool rounds on an API backend goes on on a backend driving an agent binary (the
real pinned `gemini`, `claude` and `codex` against the fake model servers on 127.0.0.1).

The turn that gave out was the model's answer to tool results: an API backend sends such a history as it is,
but an agent binary is only ever sent a user's message. `gemini-cli` and `claude-code` refused the failover
("the last turn holds tool results"), and `codex` took the run's prompt from before the tool round and left the
round out (the model asked for the call again). Now the next backend gets the whole tool round and a short
message to go on from it; the prompt is sent once and the call never runs again.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conversations.test_backend_pairs import Lab, _result, lab  # noqa: F401 (a fixture)
from unified.conversations import CONTINUE_PROMPT
from unified.events import Failover, ToolResult, ToolUse
from unified.testing import Fault, FunctionCall
from unified.testing import ModelTurn as ScriptTurn
from unified.types import Fallback

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

FACT = "the code word is heron-4417"
PROMPT = "what is the code word?"


@pytest.mark.parametrize("target", ["gemini-cli", "claude-code", "codex"])
async def test_a_run_that_gives_out_between_tool_rounds_goes_on_on_an_agent_binary(lab: Lab, target: str) -> None:  # noqa: F811
    (lab.workspace / "notes.txt").write_text(FACT + "\n", encoding="utf-8")
    lab.gemini.add(ScriptTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]))
    for index in range(1, 5):  # the answer to the tool round, its first try and three retries
        lab.gemini.inject(Fault(kind="rate_limit", retry_delay="1s"), at_request=index)
    lab.server(target).add(ScriptTurn(text=f"heron-4417, said {target}."))
    fallback = Fallback(
        backend=target, model=lab.params(target, "").model, backend_options=lab.params(target, "").backend_options
    )
    params = lab.params("generate-content", PROMPT, {"retry_delay_scale": 0.001}, fallback=(fallback,))
    before = len(lab.model_requests(target))
    events = await lab.run(params)
    [switch] = [e for e in events if isinstance(e, Failover)]
    assert (switch.from_backend, switch.to_backend) == ("generate-content", target)
    result = _result(events)
    assert (result.status, result.backend, result.final_text) == ("success", target, f"heron-4417, said {target}."), (
        result.error
    )
    assert len([e for e in events if isinstance(e, ToolResult)]) == 1  # the read ran once, before the switch
    assert not [e for e in events[events.index(switch) :] if isinstance(e, ToolUse)]
    sent = [body for body in lab.model_requests(target)[before:] if CONTINUE_PROMPT in body]
    assert sent, "the next backend is told to go on from the tool round"
    assert FACT in sent[0]  # the tool's output, carried
    assert "read_file" in sent[0]  # with its call
    assert sent[0].count(PROMPT) == 1
    assert json.dumps(PROMPT) in sent[0] or PROMPT in sent[0]
