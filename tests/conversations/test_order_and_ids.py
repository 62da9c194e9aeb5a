"""A portable conversation as each backend's writer sends it: every tool result right after its call (Anthropic
wants the `tool_result` blocks first in the very next message, Gemini the `functionResponse` parts in the turn
after the `functionCall`), and ids and names in the shape the target provider's API takes (Anthropic's
`tool_use.id` is `^[a-zA-Z0-9_-]+$`, OpenAI's `call_id` at most 64 characters, Gemini's function names
`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`), the same stand-in for a call and its result, on every run. No part is lost.
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from unified._adapters.claude_code._conversation import lines_from_conversation
from unified._adapters.codex._conversation import rollout_from_conversation
from unified._adapters.gemini_cli._conversation import chat_records_from_conversation
from unified._adapters.generate_content._conversation import contents_from_conversation
from unified._adapters.interactions._conversation import steps_from_conversation
from unified.conversations import Conversation, ModelTurn, TextPart, ToolCallPart, ToolResultPart, UserTurn

ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]+")
GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}")
TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _far() -> Conversation:
    """A result three turns after its call, a user's text and a model's answer between them."""
    return Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="read a")]),
            ModelTurn(provider="openai", parts=[ToolCallPart(id="call_a", name="read_file", arguments={"p": "a"})]),
            UserTurn(parts=[TextPart(text="meanwhile, hello")]),
            ModelTurn(provider="openai", parts=[TextPart(text="hello to you")]),
            UserTurn(parts=[ToolResultPart(call_id="call_a", name="read_file", output="AAA")]),
        ]
    )


def _claude(conversation: Conversation) -> list[dict[str, Any]]:
    return [line["message"] for line in lines_from_conversation(conversation, session_id="s", cwd="/w", model=None)]


def _codex(conversation: Conversation) -> list[dict[str, Any]]:
    text = rollout_from_conversation(conversation, thread_id="t", cwd="/w", provider="openai")
    records = [json.loads(line) for line in text.splitlines()]
    return [r["payload"] for r in records if r["type"] == "response_item"]


def _gemini_cli(conversation: Conversation) -> list[dict[str, Any]]:
    return chat_records_from_conversation(conversation, session_id="s", project_root=Path("/w"), model="m")[1:]


def test_a_result_far_from_its_call_moves_right_after_it_and_no_part_is_lost() -> None:
    moved = _far().with_results_after_calls()
    shapes = [
        (t.role, [getattr(p, "text", None) or getattr(p, "output", None) or p.type for p in t.parts])
        for t in moved.turns
    ]
    assert shapes == [
        ("user", ["read a"]),
        ("model", ["tool_call"]),
        ("user", ["AAA"]),
        ("user", ["meanwhile, hello"]),
        ("model", ["hello to you"]),
    ]
    assert moved.problem() is None
    assert moved.with_results_after_calls() is moved  # in order already: itself


def test_anthropic_gets_each_tool_result_first_in_the_message_after_its_tool_use() -> None:
    messages = _claude(_far())
    index = next(i for i, m in enumerate(messages) if any(b["type"] == "tool_use" for b in m["content"]))
    after = messages[index + 1]
    assert after["role"] == "user"
    assert after["content"][0] == {"type": "tool_result", "tool_use_id": "call_a", "content": "AAA", "is_error": False}
    texts = json.dumps(messages)
    assert "meanwhile, hello" in texts
    assert "hello to you" in texts


def test_gemini_gets_each_function_response_in_the_turn_after_its_call() -> None:
    contents = contents_from_conversation(_far())
    index = next(i for i, c in enumerate(contents) if any("function_call" in p for p in c["parts"]))
    assert contents[index + 1]["role"] == "user"
    assert contents[index + 1]["parts"] == [
        {"function_response": {"name": "read_file", "response": {"output": "AAA"}, "id": "call_a"}}
    ]
    assert "meanwhile, hello" in json.dumps(contents[index + 2 :])


def test_interactions_get_each_function_result_step_right_after_its_call() -> None:
    steps = steps_from_conversation(_far())
    kinds = [s["type"] for s in steps]
    assert kinds[kinds.index("function_call") + 1] == "function_result"
    assert "meanwhile, hello" in json.dumps(steps)


def test_codex_gets_each_call_output_right_after_its_call() -> None:
    items = _codex(_far())
    kinds = [i["type"] for i in items]
    assert kinds[kinds.index("function_call") + 1] == "function_call_output"
    assert "meanwhile, hello" in json.dumps(items)
    assert "hello to you" in json.dumps(items)


def test_gemini_never_gets_a_call_right_after_a_model_turn() -> None:
    """Gemini refuses a function call turn that does not follow a user turn or a function response turn."""
    conversation = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="go")]),
            ModelTurn(provider="google", model="g", parts=[TextPart(text="let me look")]),
            ModelTurn(provider="google", model="g", parts=[ToolCallPart(id="c", name="read_file")]),
            UserTurn(parts=[ToolResultPart(call_id="c", name="read_file", output="x")]),
        ]
    )
    contents = contents_from_conversation(conversation)
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert [list(p) for p in contents[1]["parts"]] == [["text"], ["function_call"]]


FOREIGN_IDS = (
    "fc/abc.def",
    "toolu:01ABC",
    "appel-n°1",
    "x" * 300,
    "call 1",
    "",
)


def _foreign() -> Conversation:
    turns: list[UserTurn | ModelTurn] = [UserTurn(parts=[TextPart(text="go")])]
    for number, call_id in enumerate(FOREIGN_IDS):
        turns.append(ModelTurn(provider="openai", parts=[ToolCallPart(id=call_id, name="read_file")]))
        turns.append(UserTurn(parts=[ToolResultPart(call_id=call_id, name="read_file", output=f"out{number}")]))
    return Conversation(turns=turns)


def _claude_pairs(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    uses = [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"]
    results = {b["tool_use_id"]: b["content"] for m in messages for b in m["content"] if b["type"] == "tool_result"}
    return [(use, results[use]) for use in uses]


def test_ids_of_other_providers_reach_anthropic_in_its_shape_each_paired_with_its_result() -> None:
    messages = _claude(_foreign())
    pairs = _claude_pairs(messages)
    assert [output for _, output in pairs] == [f"out{n}" for n in range(len(FOREIGN_IDS))]
    ids = [use for use, _ in pairs]
    assert all(ANTHROPIC_ID.fullmatch(i) and len(i) <= 64 for i in ids), ids
    assert len(set(ids)) == len(ids)
    assert ids == [use for use, _ in _claude_pairs(_claude(_foreign()))]  # the same on every run


def test_ids_longer_than_openai_takes_are_mapped_for_codex_each_paired_with_its_result() -> None:
    items = _codex(_foreign())
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    outputs = {i["call_id"]: i["output"] for i in items if i["type"] == "function_call_output"}
    assert [outputs[c] for c in calls] == [f"out{n}" for n in range(len(FOREIGN_IDS))]
    assert all(0 < len(c) <= 64 for c in calls)
    assert len(set(calls)) == len(calls)
    assert "fc/abc.def" in calls  # an id OpenAI takes is kept


def test_ids_that_differ_only_by_case_or_unicode_normalisation_stay_distinct() -> None:
    base = "call/" + "x" * 70
    ids = [base + "A", base + "a", base + unicodedata.normalize("NFC", "é"), base + unicodedata.normalize("NFD", "é")]
    turns: list[UserTurn | ModelTurn] = [UserTurn(parts=[TextPart(text="go")])]
    turns.append(ModelTurn(provider="google", parts=[ToolCallPart(id=i, name="n") for i in ids]))
    turns.append(UserTurn(parts=[ToolResultPart(call_id=i, name="n", output=str(k)) for k, i in enumerate(ids)]))
    conversation = Conversation(turns=turns)
    assert conversation.problem() is None
    pairs = _claude_pairs(_claude(conversation))
    assert [output for _, output in pairs] == ["0", "1", "2", "3"]
    assert len({use for use, _ in pairs}) == 4
    assert all(ANTHROPIC_ID.fullmatch(use) for use, _ in pairs)
    items = _codex(conversation)
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    outputs = {i["call_id"]: i["output"] for i in items if i["type"] == "function_call_output"}
    assert [outputs[c] for c in calls] == ["0", "1", "2", "3"]
    assert all(len(c) <= 64 for c in calls)


def test_a_stand_in_never_takes_an_id_already_in_use() -> None:
    first = Conversation(
        turns=[UserTurn(parts=[TextPart(text="go")]), ModelTurn(parts=[ToolCallPart(id="a.b", name="n")])]
    ).for_provider("anthropic")
    stand_in = next(first.tool_calls()).id
    both = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="go")]),
            ModelTurn(parts=[ToolCallPart(id=stand_in, name="n"), ToolCallPart(id="a.b", name="n")]),
        ]
    ).for_provider("anthropic")
    ids = [call.id for call in both.tool_calls()]
    assert ids[0] == stand_in
    assert ids[1] != stand_in
    assert ANTHROPIC_ID.fullmatch(ids[1])


ODD_NAMES = ("fs/read", "default_api:read_file", "n" * 130, "", "9lives", "lire_é")


def _named() -> Conversation:
    turns: list[UserTurn | ModelTurn] = [UserTurn(parts=[TextPart(text="go")])]
    for number, name in enumerate(ODD_NAMES):
        turns.append(ModelTurn(provider="anthropic", parts=[ToolCallPart(id=f"c{number}", name=name)]))
        turns.append(UserTurn(parts=[ToolResultPart(call_id=f"c{number}", name=name, output=str(number))]))
    return Conversation(turns=turns)


def test_tool_names_reach_each_provider_in_the_shape_its_api_takes() -> None:
    contents = contents_from_conversation(_named())
    calls = [p["function_call"]["name"] for c in contents for p in c["parts"] if "function_call" in p]
    responses = [p["function_response"]["name"] for c in contents for p in c["parts"] if "function_response" in p]
    assert all(GEMINI_NAME.fullmatch(n) for n in calls), calls
    assert calls == responses
    assert len(set(calls)) == len(ODD_NAMES)
    assert "default_api:read_file" in calls  # a name Gemini takes is kept
    steps = steps_from_conversation(_named())
    assert [s["name"] for s in steps if s["type"] == "function_call"] == calls
    records = _gemini_cli(_named())
    assert [c["name"] for r in records for c in r.get("toolCalls", [])] == calls
    uses = [b["name"] for m in _claude(_named()) for b in m["content"] if b["type"] == "tool_use"]
    assert all(TOOL_NAME.fullmatch(n) for n in uses), uses
    assert len(set(uses)) == len(ODD_NAMES)
    codex = [i["name"] for i in _codex(_named()) if i["type"] == "function_call"]
    assert all(TOOL_NAME.fullmatch(n) for n in codex), codex
    assert len(set(codex)) == len(ODD_NAMES)


def test_a_result_named_unlike_its_call_is_sent_under_its_calls_name() -> None:
    """Gemini pairs a response with its call by name: a result that names another tool answers the wrong one."""
    conversation = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="go")]),
            ModelTurn(provider="google", parts=[ToolCallPart(id="gc-1-0", name="read_file")]),
            UserTurn(parts=[ToolResultPart(call_id="gc-1-0", name="write_file", output="x")]),
        ]
    )
    contents = contents_from_conversation(conversation)
    assert contents[-1]["parts"][0]["function_response"]["name"] == "read_file"


def test_a_conversation_that_starts_with_the_model_reaches_every_backend_after_a_user_turn() -> None:
    conversation = Conversation(
        turns=[
            ModelTurn(provider="google", parts=[ToolCallPart(id="c", name="read_file")]),
            UserTurn(parts=[ToolResultPart(call_id="c", name="read_file", output="x")]),
        ]
    )
    assert contents_from_conversation(conversation)[0]["role"] == "user"
    assert steps_from_conversation(conversation)[0]["type"] == "user_input"
    assert _claude(conversation)[0]["role"] == "user"
    assert _codex(conversation)[0]["type"] == "message"
    assert _codex(conversation)[0]["role"] == "user"
    assert _gemini_cli(conversation)[0]["type"] == "user"
    assert "function_call" in json.dumps(contents_from_conversation(conversation))  # the call is kept


@pytest.mark.parametrize("provider", ["anthropic", "openai", "google"])
def test_calls_without_ids_get_distinct_ones_and_their_results_follow_by_order_and_name(provider: str) -> None:
    conversation = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="go")]),
            ModelTurn(parts=[ToolCallPart(id="", name="a"), ToolCallPart(id="", name="b")]),
            UserTurn(
                parts=[
                    ToolResultPart(call_id="", name="b", output="B"),
                    ToolResultPart(call_id="", name="a", output="A"),
                ]
            ),
        ]
    )
    done = conversation.for_provider(provider)  # type: ignore[arg-type]
    calls = list(done.tool_calls())
    assert len({c.id for c in calls}) == 2
    assert all(c.id for c in calls)
    results = [p for p in done.turns[2].parts if isinstance(p, ToolResultPart)]
    assert [(r.call_id, r.output) for r in results] == [(calls[0].id, "A"), (calls[1].id, "B")]


def test_an_id_given_to_a_call_without_one_never_takes_an_id_in_use() -> None:
    """A call without an id gets `gc-<turn>-<part>`: a hostile conversation that already uses that id for
    another call keeps both apart, each with its own result."""
    conversation = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="go")]),
            ModelTurn(parts=[ToolCallPart(id="gc-1-1", name="a"), ToolCallPart(id="", name="b")]),
            UserTurn(
                parts=[
                    ToolResultPart(call_id="", name="b", output="B"),
                    ToolResultPart(call_id="gc-1-1", name="a", output="A"),
                ]
            ),
        ]
    )
    assert conversation.problem() is None
    pairs = _claude_pairs(_claude(conversation))
    assert [output for _, output in pairs] == ["A", "B"]
    assert len({use for use, _ in pairs}) == 2
    assert all(ANTHROPIC_ID.fullmatch(use) for use, _ in pairs)


def test_gemini_never_gets_a_call_right_after_another_providers_model_turn() -> None:
    conversation = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="go")]),
            ModelTurn(provider="anthropic", parts=[TextPart(text="Claude looked")]),
            ModelTurn(provider="google", parts=[ToolCallPart(id="c", name="read_file", signature="g-sig")]),
            UserTurn(parts=[ToolResultPart(call_id="c", name="read_file", output="x")]),
        ]
    )
    contents = contents_from_conversation(conversation)
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"][1]["thought_signature"] == "g-sig"  # Google's call keeps Google's signature


def test_gemini_gets_no_call_id_with_control_characters_or_of_thousands_of_characters() -> None:
    odd = ("a\x00b", "line\nbreak", "y" * 5000)
    turns: list[UserTurn | ModelTurn] = [UserTurn(parts=[TextPart(text="go")])]
    turns.append(ModelTurn(provider="openai", parts=[ToolCallPart(id=i, name="n") for i in odd]))
    turns.append(UserTurn(parts=[ToolResultPart(call_id=i, name="n", output=str(k)) for k, i in enumerate(odd)]))
    contents = contents_from_conversation(Conversation(turns=turns))
    calls = [p["function_call"]["id"] for c in contents for p in c["parts"] if "function_call" in p]
    responses = [p["function_response"]["id"] for c in contents for p in c["parts"] if "function_response" in p]
    assert calls == responses
    assert len(set(calls)) == 3
    assert all(re.fullmatch(r"[ -~]{1,256}", i) for i in calls), calls
    steps = steps_from_conversation(Conversation(turns=turns))
    assert [s["id"] for s in steps if s["type"] == "function_call"] == calls


def test_a_codex_retry_never_leaves_out_the_turns_after_the_last_prompt(tmp_path: Path) -> None:
    """Retry on codex took the last user text from further back and left out every turn after it (a tool
    round that ran, which the model then asked for again): now only a conversation ending with the user's
    text or images is retried."""
    from unified._adapters.codex._conversation import open_history
    from unified._adapters.codex._rollouts import Rollouts
    from unified.errors import ConfigurationError
    from unified.types import ExecuteParams

    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="read a")]),
            ModelTurn(provider="openai", parts=[ToolCallPart(id="call_1", name="read_file")]),
            UserTurn(parts=[ToolResultPart(call_id="call_1", name="read_file", output="AAA")]),
        ]
    )
    params = ExecuteParams(prompt="", backend="codex", cwd=tmp_path, history=history, retry=True)
    with pytest.raises(ConfigurationError, match="ends with tool results"):
        open_history(Rollouts(tmp_path / "home"), params, "openai")
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.jsonl"))


def test_the_interactions_model_turn_count_is_the_conversations() -> None:
    """`model_turn_count` counts the model turns `conversation_from_steps` builds (the session's turns are numbered
    by it after every model turn, without building the conversation): the same on every sequence of the step kinds
    up to five steps long, an unknown or missing kind included."""
    import itertools

    from unified._adapters.interactions._conversation import conversation_from_steps, model_turn_count

    kinds = ["user_input", "function_result", "thought", "function_call", "", "novel"]
    for size in range(6):
        for sequence in itertools.product(kinds, repeat=size):
            steps = [{"type": kind} if kind else {} for kind in sequence]
            built = conversation_from_steps(steps, model=None).turns
            assert model_turn_count(steps) == sum(isinstance(turn, ModelTurn) for turn in built), sequence
