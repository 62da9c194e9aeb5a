"""AppServerTranslator and its helpers, notification by notification (pure: no process)."""

from __future__ import annotations

import random
import shlex
from pathlib import PurePosixPath
from typing import Any

import pytest

from unified._adapters.codex._translate import (
    AppServerTranslator,
    ModelResponse,
    Retrying,
    TurnEnded,
    tool_call_of,
    tool_result_of,
    unwrap_shell,
    usage_from_breakdown,
)
from unified.events import (
    PermissionDecision,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolProgress,
    ToolResult,
    ToolUse,
    Usage,
    WarningEvent,
)
from unified.tools._shell_syntax import otherwise_read

MAIN = "01a23294-50ab-7e70-b9b8-89066707762a"
CHILD = "01a23294-51aa-7e70-b9b8-000000000002"
TURN = "01a23294-50c7-7173-a6d6-58715a56c0e8"
CWD = "/work/project"


def translator() -> AppServerTranslator:
    t = AppServerTranslator(main_thread=MAIN, cwd=CWD)
    t.start_turn(TURN)
    return t


def note(t: AppServerTranslator, method: str, thread: str = MAIN, **params: Any) -> list[Any]:
    return t.notification(method, {"threadId": thread, "turnId": TURN, **params})


def command(status: str = "inProgress", **extra: Any) -> dict[str, Any]:
    return {
        "type": "commandExecution",
        "id": "call_1",
        "command": "/bin/bash -lc 'cat notes.txt'",
        "cwd": CWD,
        "status": status,
        "commandActions": [{"type": "read", "command": "cat notes.txt"}],
        **extra,
    }


def breakdown(inputs: int, cached: int, output: int, reasoning: int) -> dict[str, int]:
    return {
        "inputTokens": inputs,
        "cachedInputTokens": cached,
        "outputTokens": output,
        "reasoningOutputTokens": reasoning,
        "totalTokens": inputs + output,
    }


def test_message_deltas_append_and_the_completed_text_fills_what_was_not_streamed() -> None:
    t = translator()
    (delta,) = note(t, "item/agentMessage/delta", itemId="msg_1", delta="Hel")
    assert isinstance(delta, TextDelta)
    assert delta.text == "Hel"
    (rest,) = note(t, "item/completed", item={"type": "agentMessage", "id": "msg_1", "text": "Hello"})
    assert isinstance(rest, TextDelta)
    assert rest.text == "lo"
    assert note(t, "item/completed", item={"type": "agentMessage", "id": "msg_2", "text": ""}) == []


def test_reasoning_parts_extend_the_thought_each_on_a_new_paragraph() -> None:
    t = translator()
    note(t, "item/reasoning/summaryPartAdded", itemId="rs_1", summaryIndex=0)
    first = note(t, "item/reasoning/summaryTextDelta", itemId="rs_1", delta="One.", summaryIndex=0)
    note(t, "item/reasoning/summaryPartAdded", itemId="rs_1", summaryIndex=1)
    second = note(t, "item/reasoning/summaryTextDelta", itemId="rs_1", delta="Two.", summaryIndex=1)
    third = note(t, "item/reasoning/summaryTextDelta", itemId="rs_1", delta=" More.", summaryIndex=1)
    texts = [e.text for e in [*first, *second, *third]]
    assert texts == ["One.", "\n\nTwo.", " More."]
    assert all(isinstance(e, Thinking) and not e.replace for e in [*first, *second, *third])
    assert note(t, "item/completed", item={"type": "reasoning", "id": "rs_1", "summary": ["One.", "Two. More."]}) == []
    (unstreamed,) = note(t, "item/completed", item={"type": "reasoning", "id": "rs_2", "summary": ["Whole."]})
    assert isinstance(unstreamed, Thinking)
    assert unstreamed.text == "Whole."


def test_a_command_is_a_tool_use_then_a_decision_by_the_backend_and_its_result() -> None:
    t = translator()
    (use,) = note(t, "item/started", item=command())
    assert isinstance(use, ToolUse)
    assert (use.tool_use_id, use.name, use.input, use.server_side) == (
        "call_1",
        "exec_command",
        {"cmd": "cat notes.txt"},
        False,
    )
    (progress,) = note(t, "item/commandExecution/outputDelta", itemId="call_1", delta="alp")
    assert isinstance(progress, ToolProgress)
    decision, result = note(t, "item/completed", item=command("completed", aggregatedOutput="alpha\n", exitCode=0))
    assert isinstance(decision, PermissionDecision)
    assert (decision.decision, decision.decided_by) == ("allow", "backend")
    assert isinstance(result, ToolResult)
    assert (result.output, result.is_error, result.data) == ("alpha\n", False, {"exit_code": 0, "status": "completed"})
    assert note(t, "item/completed", item=command("completed")) == [], "a late second completion is dropped"


def test_a_decided_call_gets_no_second_decision_and_a_failed_one_is_an_error() -> None:
    t = translator()
    note(t, "item/started", item=command())
    t.decided.add("call_1")
    (result,) = note(t, "item/completed", item=command("failed", aggregatedOutput="boom", exitCode=3))
    assert isinstance(result, ToolResult)
    assert result.is_error
    assert result.data == {"exit_code": 3, "status": "failed"}


def test_tool_items_carry_the_models_arguments() -> None:
    patch = {
        "type": "fileChange",
        "id": "call_p",
        "changes": [
            {"path": f"{CWD}/new.txt", "kind": {"type": "add"}, "diff": "hi\n"},
            {"path": "/elsewhere/x", "kind": {"type": "update", "move_path": f"{CWD}/y"}, "diff": "@@"},
        ],
    }
    assert tool_call_of(patch, CWD) == (
        "apply_patch",
        {
            "changes": [
                {"path": "new.txt", "kind": "add", "diff": "hi\n"},
                {"path": "/elsewhere/x", "kind": "update", "diff": "@@", "move_path": "y"},
            ]
        },
    )
    mcp = {"type": "mcpToolCall", "id": "c", "server": "echo", "tool": "echo", "arguments": {"text": "hi"}}
    assert tool_call_of(mcp, CWD) == ("mcp__echo__echo", {"text": "hi"})
    spawn = {"type": "collabAgentToolCall", "id": "s", "tool": "spawnAgent", "prompt": "Do it", "receiverThreadIds": []}
    assert tool_call_of(spawn, CWD) == ("spawn_agent", {"message": "Do it"})
    elsewhere = command(cwd="/tmp")
    assert tool_call_of(elsewhere, CWD) == ("exec_command", {"cmd": "cat notes.txt", "workdir": "/tmp"})
    assert tool_call_of({"type": "webSearch", "query": "q"}, CWD) == ("web_search", {"query": "q"})


def test_tool_results_are_what_the_model_read() -> None:
    patch = {"type": "fileChange", "status": "completed", "changes": [{"path": f"{CWD}/a", "kind": {"type": "add"}}]}
    assert tool_result_of(patch, CWD)[0] == "Success. Updated the following files:\nA a"
    assert tool_result_of({**patch, "status": "declined"}, CWD)[:2] == ("patch rejected by the user", True)
    mcp = {"type": "mcpToolCall", "status": "completed", "result": {"content": [{"type": "text", "text": "hi"}]}}
    assert tool_result_of(mcp) == ("hi", False, None)
    failed = {"type": "mcpToolCall", "status": "failed", "error": {"message": "user rejected MCP tool call"}}
    assert tool_result_of(failed)[:2] == ("user rejected MCP tool call", True)
    assert tool_result_of(command("declined"))[:2] == ("rejected by the user", True)


@pytest.mark.parametrize(
    ("display", "command"),
    [
        ("/bin/bash -lc 'cat notes.txt'", "cat notes.txt"),
        ("/bin/bash -lc \"printf 'a\\\\n'; exit 3\"", "printf 'a\\n'; exit 3"),
        ("/bin/zsh -c ls", "ls"),
        ("python3 -c 'print(1)'", "python3 -c 'print(1)'"),
        ("unbalanced 'quote", "unbalanced 'quote"),
    ],
)
def test_the_shell_wrapper_is_taken_off(display: str, command: str) -> None:
    assert unwrap_shell(display) == command


def _by_shlex(display: str) -> str:
    """What `unwrap_shell` read before its regular expression: three `shlex` words, a shell, `-c`/`-lc`, the command
    (unless that shell may read it otherwise than bash: `otherwise_read`, round 34)."""
    try:
        parts = shlex.split(display)
    except ValueError:
        return display
    if (
        len(parts) == 3
        and PurePosixPath(parts[0]).name in {"bash", "sh", "zsh", "dash"}
        and parts[1] in ("-c", "-lc", "-l -c")
        and otherwise_read(PurePosixPath(parts[0]).name, parts[2]) is None
    ):
        return parts[2]
    return display


def test_the_wrapper_is_read_as_shlex_reads_it() -> None:
    """Codex's usual form is read by a regular expression (shlex took 0.15 s for a 100,000-character display): the
    same command as `shlex` on 10,000 seeded displays of quotes, escapes, odd spaces and other programs."""
    rng = random.Random(29)
    pieces = ["a", " ", "'", '"', "\\", "\n", "\t", "$", "\x0b", "-", "c"]
    heads = [
        "/bin/bash -lc ",
        "/bin/bash -c ",
        "/bin/zsh -c ",
        "sh  -c ",
        "'bash' -c ",
        "python3 -c ",
        "/bin/sh -lc",
        "",
    ]
    for _ in range(10_000):
        quote = rng.choice(["'", '"', ""])
        body = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        display = rng.choice(heads) + quote + body + (quote if rng.random() < 0.9 else "")
        assert unwrap_shell(display) == _by_shlex(display), display


def test_a_long_display_is_read_without_shlex() -> None:
    command = "echo " + "x" * 100_000
    assert unwrap_shell(f"/bin/bash -lc '{command}'") == command
    assert unwrap_shell(f'/bin/bash -lc "{command} \\"q\\""') == f'{command} "q"'
    hostile = "ab'cd " * 20_000  # no wrapper and no closing quote: judged as displayed, not split
    assert unwrap_shell(hostile) == hostile


def test_usage_is_what_the_threads_total_grew_by() -> None:
    t = translator()
    old = {
        "turnId": "an-earlier-turn",
        "tokenUsage": {"total": breakdown(1000, 0, 100, 0), "last": breakdown(1000, 0, 100, 0)},
    }
    assert t.notification("thread/tokenUsage/updated", {"threadId": MAIN, **old}) == []  # a resumed thread's baseline
    first = {"total": breakdown(1010, 4, 105, 2), "last": breakdown(10, 4, 5, 2)}
    (response,) = note(t, "thread/tokenUsage/updated", tokenUsage=first)
    assert response == ModelResponse(Usage(input_tokens=10, cached_tokens=4, output_tokens=3, thinking_tokens=2), None)
    # a response that reported nothing: Codex repeats the previous `last`; the total did not move
    (empty,) = note(t, "thread/tokenUsage/updated", tokenUsage={**first, "last": first["last"]})
    assert empty.usage == Usage(estimated=True)  # its zeros are no measurement (round 19)
    assert usage_from_breakdown({"outputTokens": 5, "reasoningOutputTokens": 7}).output_tokens == 0


def test_a_responses_cache_writes_are_what_the_threads_total_of_them_grew_by() -> None:
    """The breakdown's `cacheWriteInputTokens` (the shape Codex 0.171 sends) is read, less a resumed thread's
    baseline; before, it was not read at all (0)."""
    t = translator()
    old = {**breakdown(500, 0, 10, 0), "cacheWriteInputTokens": 200}
    assert (
        t.notification("thread/tokenUsage/updated", {"threadId": MAIN, "turnId": "t0", "tokenUsage": {"total": old}})
        == []
    )
    total = {**breakdown(600, 30, 15, 0), "cacheWriteInputTokens": 240}
    (response,) = note(t, "thread/tokenUsage/updated", tokenUsage={"total": total, "last": total})
    assert response.usage == Usage(input_tokens=100, cached_tokens=30, cache_creation_tokens=40, output_tokens=5)


def test_a_rate_limit_notice_alone_is_a_response_that_reported_no_usage() -> None:
    """Round 12: Codex sends `account/rateLimits/updated` after every response's token count, after
    `thread/tokenUsage/updated` when there was usage; alone, it is the only sign of a response without usage."""
    t = translator()
    limits: dict[str, Any] = {"rateLimits": {"limitId": "codex"}}
    assert t.notification("account/rateLimits/updated", limits) == []  # no item of the model's yet
    note(t, "item/started", item={"type": "userMessage", "id": "u"})
    assert t.notification("account/rateLimits/updated", limits) == []  # the prompt is not the model's
    note(t, "item/started", item=command())
    assert t.notification("account/rateLimits/updated", limits) == [ModelResponse(Usage(estimated=True), None)]
    assert t.notification("account/rateLimits/updated", limits) == []  # no new output since
    note(t, "item/started", item={"type": "agentMessage", "id": "m"})
    usage = {"total": breakdown(7, 0, 2, 0), "last": breakdown(7, 0, 2, 0)}
    (counted,) = note(t, "thread/tokenUsage/updated", tokenUsage=usage)
    assert counted == ModelResponse(Usage(input_tokens=7, output_tokens=2), None, answered=True)
    assert t.notification("account/rateLimits/updated", limits) == []  # that response was counted by its usage
    note(t, "item/started", item={"type": "agentMessage", "id": "m2"})
    assert t.notification("account/rateLimits/updated", limits) == []  # with usage seen, every response has its own


def test_a_response_says_whether_it_gave_an_answer_which_ends_codexs_turn() -> None:
    """`max_turns` interrupts the turn at a response that gave no answer (a call of a tool Codex lacks shows nothing
    at all); a message marked `commentary` comes before calls, so it is no answer."""
    t = translator()
    usage = {"total": breakdown(7, 0, 2, 0), "last": breakdown(7, 0, 2, 0)}
    (silent,) = note(t, "thread/tokenUsage/updated", tokenUsage=usage)
    note(t, "item/started", item={"type": "agentMessage", "id": "c", "phase": "commentary"})
    usage = {"total": breakdown(14, 0, 4, 0), "last": breakdown(7, 0, 2, 0)}
    (commentary,) = note(t, "thread/tokenUsage/updated", tokenUsage=usage)
    note(t, "item/started", item={"type": "agentMessage", "id": "f", "phase": None})
    usage = {"total": breakdown(21, 0, 6, 0), "last": breakdown(7, 0, 2, 0)}
    (final,) = note(t, "thread/tokenUsage/updated", tokenUsage=usage)
    assert [silent.answered, commentary.answered, final.answered] == [False, False, True]


def test_a_rate_limit_notice_is_not_counted_once_a_subagent_may_have_sent_it() -> None:
    t = translator()
    spawn = {"type": "collabAgentToolCall", "id": "call_s", "tool": "spawnAgent", "prompt": "Read it"}
    note(t, "item/started", item={**spawn, "status": "inProgress", "receiverThreadIds": []})
    note(t, "item/completed", item={**spawn, "status": "completed", "receiverThreadIds": [CHILD]})
    assert t.spawned
    assert t.notification("account/rateLimits/updated", {"rateLimits": {}}) == []


def test_a_subagent_is_a_task_whose_events_carry_its_id() -> None:
    t = translator()
    spawn = {
        "type": "collabAgentToolCall",
        "id": "call_s",
        "tool": "spawnAgent",
        "prompt": "Read it",
        "model": "gpt-5.5",
    }
    note(t, "item/started", item={**spawn, "status": "inProgress", "receiverThreadIds": []})
    done = note(t, "item/completed", item={**spawn, "status": "completed", "receiverThreadIds": [CHILD]})
    assert [type(e) for e in done] == [PermissionDecision, ToolResult, SubagentStarted]
    started = done[-1]
    assert (started.task_id, started.agent_name, started.parent_tool_use_id) == (CHILD, "gpt-5.5", "call_s")
    assert t.children_running() == [CHILD]
    note(t, "turn/started", thread=CHILD, turn={"id": "child-turn"})
    (delta,) = t.notification("item/agentMessage/delta", {"threadId": CHILD, "itemId": "m", "delta": "hi"})
    assert isinstance(delta, TextDelta)
    assert delta.subagent_task_id == CHILD
    t.notification("item/completed", {"threadId": CHILD, "item": {"type": "agentMessage", "id": "m", "text": "hi"}})
    usage = {"total": breakdown(7, 0, 2, 0), "last": breakdown(7, 0, 2, 0)}
    (child_usage,) = t.notification(
        "thread/tokenUsage/updated", {"threadId": CHILD, "turnId": "child-turn", "tokenUsage": usage}
    )
    assert isinstance(child_usage, ModelResponse)
    assert child_usage.task_id == CHILD
    completed, ended = t.notification(
        "turn/completed", {"threadId": CHILD, "turn": {"id": "child-turn", "status": "completed"}}
    )
    assert isinstance(completed, SubagentCompleted)
    assert (completed.status, completed.result, completed.usage) == (
        "completed",
        "hi",
        Usage(input_tokens=7, output_tokens=2),
    )
    assert ended == TurnEnded(CHILD, "completed", None, "child-turn")
    assert t.children_running() == []


def test_warnings_and_retries_and_strangers() -> None:
    t = translator()
    assert t.notification("configWarning", {"summary": "Codex could not find bubblewrap on PATH."}) == []
    (warning,) = t.notification("warning", {"threadId": MAIN, "message": "Model metadata for `x` not found."})
    assert isinstance(warning, WarningEvent)
    assert warning.code == "codex_warning"
    assert t.notification("warning", {"threadId": "someone-else", "message": "not ours"}) == []
    assert note(t, "item/agentMessage/delta", thread="someone-else", itemId="m", delta="x") == []
    (retry,) = note(
        t, "error", error={"message": "Reconnecting... 1/5", "additionalDetails": "refused"}, willRetry=True
    )
    assert retry == Retrying("Reconnecting... 1/5", "refused")
    assert note(t, "error", error={"message": "final"}, willRetry=False) == []
    assert note(t, "item/started", item="not an object") == []
    assert note(t, "item/completed", item={"type": "commandExecution"}) == []


def test_the_main_turns_end_is_reported_once_and_a_late_one_is_dropped() -> None:
    t = translator()
    assert note(t, "turn/completed", turn={"id": "an-earlier-turn", "status": "interrupted"}) == []
    (ended,) = note(t, "turn/completed", turn={"id": TURN, "status": "failed", "error": {"message": "x"}})
    assert ended == TurnEnded(None, "failed", {"message": "x"}, TURN)


def test_a_call_is_numbered_by_the_request_that_made_it_when_its_item_starts() -> None:
    """`max_turns` refuses a call of request `max_turns` at its approval, which may come after that response's token
    count: the number is taken when Codex starts the item, not when it asks."""
    t = translator()
    note(t, "item/started", item=command())
    assert t.request_of("call_1") == 1
    note(t, "thread/tokenUsage/updated", tokenUsage={"total": breakdown(10, 0, 1, 0), "last": breakdown(10, 0, 1, 0)})
    assert t.request_of("call_1") == 1  # its response was counted since: still the first request's
    note(t, "item/started", item=command(id="call_2"))
    assert t.request_of("call_2") == 2
    assert t.request_of("call_unseen") == 2  # asked about before it started: the request not yet counted
    note(t, "item/started", thread="a-child-thread", item=command(id="call_3"))
    assert t.main_responses == 1


def test_a_main_token_count_read_ahead_is_foreseen_as_one_more_response() -> None:
    """The run reads ahead while a slow check runs (`CodexRun._reading_ahead`) and numbers a call there by the token
    counts `notification` will count: the main thread's of its turn, not a subagent's, another turn's or another
    notification."""
    t = translator()
    usage = {"tokenUsage": {"total": breakdown(10, 0, 1, 0), "last": breakdown(10, 0, 1, 0)}}
    ahead: list[tuple[str, dict[str, Any]]] = [
        ("thread/tokenUsage/updated", {"threadId": MAIN, "turnId": TURN, **usage}),
        ("thread/tokenUsage/updated", {"threadId": CHILD, "turnId": TURN, **usage}),
        ("thread/tokenUsage/updated", {"threadId": MAIN, "turnId": "an-earlier-turn", **usage}),
        ("account/rateLimits/updated", {"threadId": MAIN, "turnId": TURN}),
        ("item/started", {"threadId": MAIN, "turnId": TURN, "item": command()}),
    ]
    foreseen = [t.ends_main_response(method, params) for method, params in ahead]
    assert foreseen == [True, False, False, False, False]
    counted = [t.notification(method, params) for method, params in ahead[:3]]
    assert [len(items) for items in counted] == [1, 0, 0]  # the child is not known yet: not counted either
    assert t.main_responses == 1


def test_resumed_at_is_where_a_resumed_threads_responses_count_from() -> None:
    """A thread unified wrote from a history gets no baseline from Codex: its previous run's 7 tokens counted again."""
    t = translator()
    t.resumed_at(Usage(input_tokens=7, output_tokens=3))
    (response,) = note(t, "thread/tokenUsage/updated", tokenUsage={"total": breakdown(18, 0, 5, 0)})
    assert response.usage == Usage(input_tokens=11, output_tokens=2)
