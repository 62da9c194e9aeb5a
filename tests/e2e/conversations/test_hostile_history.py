"""A valid but hostile conversation continued on each of the five backends (the real pinned binaries against
FakeGemini, FakeAnthropic and FakeOpenAI on 127.0.0.1, every home isolated): texts holding the characters that
split lines (U+2028, U+2029, NEL, CR LF), a path as a tool argument, a thought signed by another provider, an
unknown server tool of another provider. Each run succeeds; the target's model reads every text whole and once,
no foreign signature; nothing is written beside the backend's own home (not into the project).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conversations.test_backend_pairs import Lab, _result, lab  # noqa: F401 (a fixture)
from unified import sessions
from unified.conversations import (
    Conversation,
    ModelTurn,
    Provider,
    ServerToolCallPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
    provider_of_backend,
)
from unified.testing import ModelTurn as ScriptTurn

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

TARGETS = ("gemini-cli", "generate-content", "interactions", "claude-code", "codex")
SPLITTERS = "line\u2028sep\u2029para\x85nel\r\ncrlf"
FOREIGN_SIGNATURE = "sig-from-elsewhere-9"


def _hostile(signer: Provider) -> Conversation:
    return Conversation(
        turns=[
            UserTurn(parts=[TextPart(text=f"remember: kestrel-42 {SPLITTERS}")]),
            ModelTurn(
                parts=[
                    ThinkingPart(text="a thought", signature=FOREIGN_SIGNATURE),
                    ServerToolCallPart(id="srv-1", name="some_future_tool", arguments={"q": SPLITTERS}),
                    ToolCallPart(id="call_a1", name="read_file", arguments={"path": "../../../etc/passwd"}),
                ],
                provider=signer,
                model="someone-elses-model",
            ),
            UserTurn(parts=[ToolResultPart(call_id="call_a1", name="read_file", output=f"refused {SPLITTERS}")]),
            ModelTurn(parts=[TextPart(text=f"noted {SPLITTERS}")], provider="anthropic"),
        ]
    )


def _home_files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


LOST_CALL = [
    UserTurn(parts=[TextPart(text="read a, then tell me the word: wren-5")]),
    ModelTurn(parts=[ToolCallPart(id="call_lost1", name="read_file", arguments={"path": "a"})]),
    UserTurn(parts=[TextPart(text="never mind the file")]),
    ModelTurn(parts=[TextPart(text="fine.")]),
]
"""A call whose result never came: every provider's API refuses a history whose call is not answered in the next
turn (HTTP 400: Anthropic's "tool_use ids were found without tool_result blocks", OpenAI's "No tool output found
for function call"): such a call gets an error result, as failover gives one, and the run goes on."""


@pytest.mark.parametrize("target", TARGETS)
async def test_a_hostile_but_valid_history_continues(lab: Lab, target: str) -> None:  # noqa: F811 (the fixture)
    """Three histories one after another, one run a target, each one's assertions its own: the hostile one, a
    call whose result never came (LOST_CALL), and one in no provider's order or shapes (_no_providers_order:
    each target's model server gets it in its provider's order and shapes, docs/conversations.md, "Order, ids
    and names": no name with `/` or of 130 characters, no Anthropic id outside its pattern, no OpenAI call id
    over 64 characters; every message kept)."""
    outside = {p for p in lab.workspace.parent.iterdir() if p != lab.home and p != lab.workspace}
    question = "what was the word?"
    before = len(lab.model_requests(target))
    lab.server(target).add(ScriptTurn(text=f"kestrel, said {target}."))
    signer: Provider = "anthropic" if provider_of_backend(target) != "anthropic" else "openai"
    history = Conversation(turns=[*_hostile(signer).turns, *LOST_CALL, *_no_providers_order().turns])
    second = _result(await lab.run(lab.params(target, question, history=history)))
    assert (second.status, second.backend, second.final_text) == ("success", target, f"kestrel, said {target}."), (
        second.error
    )
    sent = next(body for body in lab.model_requests(target)[before:] if question in body)
    # the hostile history
    escaped = json.dumps(SPLITTERS)[1:-1]
    assert "kestrel-42" in sent
    assert escaped in sent, sent  # the text whole: not cut at a line separator
    assert sent.count("kestrel-42") == 1
    assert FOREIGN_SIGNATURE not in sent
    assert {p for p in lab.workspace.parent.iterdir() if p != lab.home and p != lab.workspace} == outside
    assert _home_files(lab.workspace) == set()  # nothing written into the project either
    # the call whose result never came
    assert "wren-5" in sent
    assert sent.count("call_lost1") >= 2 or target in ("gemini-cli", "generate-content", "interactions"), sent
    assert "not run" in sent, sent
    # no provider's order or shapes
    for said in ("M0 the model", "U1 remember stork-31", "M1 noted", "R1 read", "R2 long", "R3 ran"):
        assert said in sent, said
    assert '"fs/read"' not in sent
    assert "n" * 130 not in sent
    if target in ("claude-code", "codex"):
        assert "x" * 300 not in sent
    if target == "claude-code":
        assert '"fc/abc.def"' not in sent
        assert '"toolu:9"' not in sent


@pytest.mark.parametrize("target", TARGETS)
async def test_a_hostile_history_ending_with_the_users_turn_is_retried(lab: Lab, target: str) -> None:  # noqa: F811
    """The user's last turn, retried, is also a prompt after a call whose result never came (the case of its own
    before): one run a target, each case's assertions its own."""
    last = f"never mind, the word is finch-3? answer this again: merlin-7 {SPLITTERS}"
    history = _hostile("google" if provider_of_backend(target) != "google" else "openai")
    lost = [
        UserTurn(parts=[TextPart(text="read a")]),
        ModelTurn(parts=[ToolCallPart(id="call_lost2", name="read_file", arguments={"path": "a"})]),
    ]
    history = history.model_copy(update={"turns": [*history.turns, *lost, UserTurn(parts=[TextPart(text=last)])]})
    before = len(lab.model_requests(target))
    lab.server(target).add(ScriptTurn(text=f"merlin, said {target}."))
    result = _result(await lab.run(lab.params(target, "", history=history, retry=True)))
    assert (result.status, result.final_text) == ("success", f"merlin, said {target}."), result.error
    sent = next(body for body in lab.model_requests(target)[before:] if "merlin-7" in body)
    # the hostile history ending with the user's turn
    assert sent.count("merlin-7") == 1
    assert json.dumps(last)[1:-1] in sent
    assert "kestrel-42" in sent
    # the prompt after a call whose result never came
    assert sent.count("finch-3") == 1
    assert "not run" in sent, sent


ODD_ORDERS = {
    "starts with the model, turns repeated": [
        ModelTurn(parts=[TextPart(text="hello first")]),
        ModelTurn(parts=[TextPart(text="and again")]),
        UserTurn(parts=[TextPart(text="remember heron-11")]),
        UserTurn(parts=[TextPart(text="twice")]),
    ],
    "empty turns": [
        UserTurn(parts=[]),
        UserTurn(parts=[TextPart(text="remember heron-12")]),
        ModelTurn(parts=[]),
        ModelTurn(parts=[TextPart(text="", signature=None)]),
    ],
    "a result named otherwise than its call": [
        UserTurn(parts=[TextPart(text="remember heron-13")]),
        ModelTurn(parts=[ToolCallPart(id="call_n1", name="read_file", arguments={"path": "a"})]),
        UserTurn(parts=[ToolResultPart(call_id="call_n1", name="something_else", output="text")]),
        ModelTurn(parts=[TextPart(text="ok")]),
    ],
}
"""Each odd order with the word it asks to remember; a run's history is all three, one after another (the first
starts it, so it starts with the model): one run a target, each case's word asserted on its own."""


@pytest.mark.parametrize("target", TARGETS)
async def test_turns_in_an_odd_order_still_continue(lab: Lab, target: str) -> None:  # noqa: F811
    before = len(lab.model_requests(target))
    lab.server(target).add(ScriptTurn(text="heron."))
    history = Conversation(turns=[turn for turns in ODD_ORDERS.values() for turn in turns])
    result = _result(await lab.run(lab.params(target, "the word?", history=history)))
    assert (result.status, result.final_text) == ("success", "heron."), result.error
    sent = next(body for body in lab.model_requests(target)[before:] if "the word?" in body)
    for number, case in enumerate(ODD_ORDERS, start=11):
        assert f"heron-{number}" in sent, case


@pytest.mark.parametrize("target", ["gemini-cli", "claude-code", "codex"])
async def test_a_history_whose_origin_is_a_live_session_never_touches_it(lab: Lab, target: str) -> None:  # noqa: F811
    lab.server(target).add(ScriptTurn(text="first answer"))
    first = _result(await lab.run(lab.params(target, "remember plover-8")))
    assert first.status == "success", first.error
    assert first.short_id is not None
    files = {p: p.read_bytes() for p in _home_files(lab.home) if p.suffix == ".jsonl"}
    assert files
    exported = await sessions.export(first.short_id, cwd=str(lab.workspace))
    assert exported.origin is not None
    lab.server(target).add(ScriptTurn(text="plover."))
    second = _result(await lab.run(lab.params(target, "the word?", history=exported)))
    assert second.status == "success", second.error
    assert second.short_id not in (None, first.short_id)
    for path, content in files.items():
        assert path.read_bytes() == content, path


def _no_providers_order() -> Conversation:
    """Another provider's ids and names, results far from and batched across their calls, two model turns in a
    row, the model first: valid for no provider's API as it is."""
    return Conversation(
        turns=[
            ModelTurn(provider="openai", parts=[TextPart(text="M0 the model speaks first")]),
            ModelTurn(
                provider="openai",
                parts=[
                    ToolCallPart(id="fc/abc.def", name="fs/read", arguments={"path": "a"}),
                    ToolCallPart(id="call/" + "x" * 300, name="n" * 130, arguments={}),
                ],
            ),
            UserTurn(parts=[TextPart(text="U1 remember stork-31 while they run")]),
            ModelTurn(provider="openai", parts=[TextPart(text="M1 noted")]),
            ModelTurn(provider="anthropic", parts=[ToolCallPart(id="toolu:9", name="api:run", arguments={})]),
            UserTurn(
                parts=[
                    ToolResultPart(call_id="toolu:9", name="api:run", output="R3 ran"),
                    ToolResultPart(call_id="call/" + "x" * 300, name="n" * 130, output="R2 long"),
                    ToolResultPart(call_id="fc/abc.def", name="fs/read", output="R1 read"),
                ]
            ),
        ]
    )
