"""A conversation continued on gemini-cli (`ExecuteParams.history`) and a turn retried (`retry`), with the real
pinned `gemini` binary against FakeGemini.

The history is written as a new session's chat file into the CLI's isolated home and loaded with
`session/load`: what FakeGemini receives is the CLI's own request, whose `contents` carry the earlier turns
(never a summary in the prompt). A Google signature reaches Gemini; another provider's never does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.harness.warm_cli import WarmCli
from unified import ExecuteParams, execute, sessions
from unified.conversations import (
    Conversation,
    ModelTurn,
    Origin,
    Provider,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.events import Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.testing import FakeGemini, Fault
from unified.testing import ModelTurn as ScriptTurn

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

FACT = "the code word is heron-7731"
MODEL = "gemini-2.5-flash"


def _history(provider: Provider = "google", signature: str = "sig-google") -> Conversation:
    model = MODEL if provider == "google" else "claude-opus-4"
    return Conversation(
        origin=Origin(backend="generate-content", session_id="a1b2c3d4-0000", short_id="a1b2c3d4"),
        turns=[
            UserTurn(parts=[TextPart(text="read the notes")]),
            ModelTurn(
                provider=provider,
                model=model,
                parts=[
                    ThinkingPart(text="look in the notes", signature=signature),
                    ToolCallPart(
                        id="call-1", name="read_file", arguments={"file_path": "notes.txt"}, signature=signature
                    ),
                ],
            ),
            UserTurn(parts=[ToolResultPart(call_id="call-1", name="read_file", output=FACT)]),
            ModelTurn(provider=provider, model=model, parts=[TextPart(text="I read the notes.")]),
        ],
    )


async def _run(warm: WarmCli, workspace: Path, **fields: Any) -> list[UnifiedEvent]:
    """A run on the module's warm CLI process, against the script its server plays (the history is written into
    the test's own project under the shared HOME)."""
    fields.setdefault("model", MODEL)
    params = ExecuteParams(backend="gemini-cli", cwd=workspace, backend_options=warm.backend_options, **fields)
    async with execute(params) as stream:
        events = [event async for event in stream]
    assert isinstance(events[-1], Result), events[-1]
    return events


def _sent(server: FakeGemini) -> str:
    body = server.requests[-1].body or {}
    return json.dumps(body.get("contents"))


def _result(events: list[UnifiedEvent]) -> Result:
    result = events[-1]
    assert isinstance(result, Result)
    return result


async def test_history_reaches_the_model_as_earlier_turns(workspace: Path, warm_cli: WarmCli) -> None:
    server = warm_cli.play([ScriptTurn(text="The code word is heron-7731."), ScriptTurn(text="Still heron.")])
    events = await _run(warm_cli, workspace, prompt="what is the code word?", history=_history())
    result = _result(events)
    assert (result.status, result.final_text) == ("success", "The code word is heron-7731."), result.error
    started = next(e for e in events if isinstance(e, SessionStarted))
    assert started.resumed is False
    assert started.short_id is not None
    # The CLI's empty duplicate of the session unified wrote a minute back is removed unsaid: every continued
    # conversation has one, and a `session_repaired` warning on each asked nothing of anyone.
    assert not [e.message for e in events if isinstance(e, WarningEvent) and e.code == "session_repaired"]
    [request] = [r for r in server.requests if r.api_method == "generateContentStream"]
    contents = request.body["contents"]
    roles = [c["role"] for c in contents]
    sent = json.dumps(contents)
    # The earlier turns, in Gemini's own form, before the new prompt (the last user turn).
    assert FACT in sent
    assert "read the notes" in sent
    assert "I read the notes." in sent
    assert '"functionCall"' in sent
    assert '"functionResponse"' in sent
    assert "sig-google" in sent  # a Google signature kept for a Google model
    assert roles[-1] == "user"
    assert "what is the code word?" in json.dumps(contents[-1])
    assert sent.count("what is the code word?") == 1
    assert sent.count(FACT) == 1  # each call answered once

    shown = await sessions.show(started.short_id, cwd=str(workspace))
    assert shown["continued_from"]["short_id"] == "a1b2c3d4"
    exported = await sessions.export(started.short_id, cwd=str(workspace))
    assert exported.origin is not None
    assert exported.origin.backend == "gemini-cli"
    texts = json.dumps(exported.model_dump(mode="json"))
    assert FACT in texts
    assert "what is the code word?" in texts
    assert "I read the notes." in texts
    assert "The code word is heron-7731." in texts

    # The continued session resumes by its own short id, the history still in the request.
    again = await _run(warm_cli, workspace, prompt="and again?", resume=started.short_id)
    assert _result(again).final_text == "Still heron."
    assert FACT in _sent(server)
    server.assert_done()


async def test_another_providers_signatures_never_reach_gemini(workspace: Path, warm_cli: WarmCli) -> None:
    server = warm_cli.play([ScriptTurn(text="ok")])
    history = _history(provider="anthropic", signature="anthropic-signature")
    result = _result(await _run(warm_cli, workspace, prompt="go on", history=history))
    assert result.status == "success", result.error
    sent = _sent(server)
    assert "anthropic-signature" not in sent
    assert FACT in sent
    assert "I read the notes." in sent
    assert "skip_thought_signature_validator" in sent  # the CLI's sentinel for a call Gemini did not make


async def test_retry_answers_the_last_user_turn_of_a_history_once(workspace: Path, warm_cli: WarmCli) -> None:
    history = _history()
    history.turns.append(UserTurn(parts=[TextPart(text="what is the code word?")]))
    server = warm_cli.play([ScriptTurn(text="heron-7731")])
    result = _result(await _run(warm_cli, workspace, history=history, retry=True))
    assert (result.status, result.final_text) == ("success", "heron-7731"), result.error
    sent = _sent(server)
    assert sent.count("what is the code word?") == 1
    assert FACT in sent


async def test_retry_of_a_resumed_session_sends_its_failed_prompt_once(workspace: Path, warm_cli: WarmCli) -> None:
    server = warm_cli.play([ScriptTurn(text="first answer"), ScriptTurn(text="42, again")])
    server.inject(Fault(kind="bad_request"), at_request=1)  # the CLI does not retry a 400
    first = _result(await _run(warm_cli, workspace, prompt="remember 42"))
    assert first.status == "success", first.error
    assert first.short_id is not None
    failed = _result(await _run(warm_cli, workspace, prompt="what was it?", resume=first.short_id))
    assert failed.status == "error"

    retried = _result(await _run(warm_cli, workspace, resume=first.short_id, retry=True))
    assert (retried.status, retried.final_text) == ("success", "42, again"), retried.error
    sent = _sent(server)
    assert sent.count("what was it?") == 1
    assert "remember 42" in sent
    assert "first answer" in sent

    nothing = _result(await _run(warm_cli, workspace, resume=first.short_id, retry=True))
    assert nothing.status == "error"
    assert "no failed turn to retry" in (nothing.error or "")
    server.assert_done()


async def test_another_providers_tool_names_and_a_far_result_reach_gemini_in_its_shape(
    workspace: Path, warm_cli: WarmCli
) -> None:
    """Gemini takes function names ^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$ and a function response in the turn right
    after its call: another provider's names (`fs/read`, 100 characters) get stand-ins, the same for the call
    and its response, and a result further on is moved after its call; every message reaches the model."""
    long_name = "mcp__" + "t" * 95
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="read the notes")]),
            ModelTurn(
                provider="anthropic",
                model="claude-opus-4",
                parts=[
                    ToolCallPart(id="toolu_01", name="fs/read", arguments={"file_path": "notes.txt"}),
                    ToolCallPart(id="toolu_02", name=long_name, arguments={}),
                ],
            ),
            UserTurn(parts=[TextPart(text="a note while it ran")]),
            ModelTurn(provider="anthropic", model="claude-opus-4", parts=[TextPart(text="Still reading.")]),
            UserTurn(
                parts=[
                    ToolResultPart(call_id="toolu_02", name=long_name, output="nothing there"),
                    ToolResultPart(call_id="toolu_01", name="fs/read", output=FACT),
                ]
            ),
        ]
    )
    server = warm_cli.play([ScriptTurn(text="heron-7731.")])
    result = _result(await _run(warm_cli, workspace, prompt="what is the code word?", history=history))
    assert result.status == "success", result.error
    [request] = [r for r in server.requests if r.api_method == "generateContentStream"]
    contents = request.body["contents"]
    sent = json.dumps(contents)
    for said in ("read the notes", "a note while it ran", "Still reading.", FACT, "what is the code word?"):
        assert said in sent
    index = next(n for n, c in enumerate(contents) if any("functionCall" in p for p in c["parts"]))
    names = [p["functionCall"]["name"] for p in contents[index]["parts"] if "functionCall" in p]
    assert len(names) == 2
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}", n) for n in names), names
    after = contents[index + 1]
    assert after["role"] == "user"
    responses = [p["functionResponse"] for p in after["parts"] if "functionResponse" in p]
    assert [r["name"] for r in responses] == names
    assert FACT in json.dumps(responses[0])
