"""The claude-code translator, pure: stream-json lines (in the shapes Claude Code 2.1.332 prints) → items."""

from __future__ import annotations

from typing import Any

from unified._adapters.claude_code._translate import (
    EndMessage,
    EndTurn,
    Item,
    Retry,
    Started,
    StreamTranslator,
    TurnResult,
    tool_result_text,
    usage_from_anthropic,
    usage_from_model_usage,
)
from unified.events import (
    PermissionDecision,
    SubagentCompleted,
    SubagentProgress,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolProgress,
    ToolResult,
    ToolUse,
    WarningEvent,
)


def event(inner: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "stream_event", "event": inner, "parent_tool_use_id": None, "session_id": "s", **extra}


def start(message_id: str = "msg_1") -> dict[str, Any]:
    return event({"type": "message_start", "message": {"id": message_id, "usage": {"input_tokens": 1}}})


def block(index: int, kind: str) -> dict[str, Any]:
    return event({"type": "content_block_start", "index": index, "content_block": {"type": kind}})


def delta(index: int, kind: str, text: str) -> dict[str, Any]:
    field = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}[kind]
    return event({"type": "content_block_delta", "index": index, "delta": {"type": kind, field: text}})


def stop(index: int) -> dict[str, Any]:
    return event({"type": "content_block_stop", "index": index})


def message_delta(**usage: int) -> dict[str, Any]:
    return event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage})


def message_stop(abandoned_from: int | None = None) -> dict[str, Any]:
    if abandoned_from is None:
        return event({"type": "message_stop"})
    return event(
        {"type": "message_stop"}, abandoned_blocks={"api_message_id": "msg_1", "from_block_index": abandoned_from}
    )


def play(translator: StreamTranslator, *lines: dict[str, Any]) -> list[Item]:
    return [item for line in lines for item in translator.line(line)]


def texts(items: list[Item]) -> str:
    return "".join(i.text for i in items if isinstance(i, TextDelta))


def thoughts(items: list[Item]) -> str:
    return "".join(i.text for i in items if isinstance(i, Thinking))


def test_deltas_append_and_a_message_stop_ends_the_model_turn_with_its_usage() -> None:
    items = play(
        StreamTranslator(),
        start(),
        block(0, "thinking"),
        delta(0, "thinking_delta", "Think"),
        delta(0, "thinking_delta", "ing."),
        delta(0, "signature_delta", "SIG"),
        stop(0),
        block(1, "text"),
        delta(1, "text_delta", "Hel"),
        delta(1, "text_delta", "lo."),
        stop(1),
        message_delta(input_tokens=10, cache_read_input_tokens=20, cache_creation_input_tokens=5, output_tokens=9),
        message_stop(),
    )
    assert [type(i).__name__ for i in items] == [
        "Thinking",
        "Thinking",
        "Thinking",
        "TextDelta",
        "TextDelta",
        "EndTurn",
    ]
    assert all(isinstance(i, Thinking) and not i.replace for i in items[:3])
    assert [i.signature for i in items[:3] if isinstance(i, Thinking)] == [None, None, "SIG"]
    end = items[-1]
    assert isinstance(end, EndTurn)
    assert (end.usage.input_tokens, end.usage.cached_tokens, end.usage.cache_creation_tokens) == (35, 20, 5)


def test_a_subagents_partials_are_ignored_and_its_whole_blocks_shown() -> None:
    translator = StreamTranslator()
    started = play(
        translator,
        {
            "type": "assistant",
            "message": {"id": "m0", "content": [{"type": "tool_use", "id": "toolu_a", "name": "Agent", "input": {}}]},
        },
        {
            "type": "system",
            "subtype": "task_started",
            "task_id": "agent1",
            "tool_use_id": "toolu_a",
            "task_type": "local_agent",
            "subagent_type": "general-purpose",
            "description": "Do it",
        },
    )
    assert isinstance(started[-1], SubagentStarted)
    assert started[-1].parent_tool_use_id == "toolu_a"
    inner = play(
        translator,
        event({"type": "message_start", "message": {"id": "x"}}, parent_tool_use_id="toolu_a"),
        {
            "type": "assistant",
            "agent_id": "agent1",
            "parent_tool_use_id": "toolu_a",
            "message": {
                "id": "m1",
                "content": [
                    {"type": "thinking", "thinking": "Sub thinks.", "signature": "SS"},
                    {"type": "text", "text": "Sub text."},
                    {"type": "tool_use", "id": "toolu_s", "name": "Bash", "input": {"command": "ls"}},
                ],
            },
        },
        {
            "type": "system",
            "subtype": "task_progress",
            "task_id": "agent1",
            "description": "Running",
            "last_tool_name": "Bash",
        },
        {
            "type": "system",
            "subtype": "task_notification",
            "task_id": "agent1",
            "status": "completed",
            "summary": "Done.",
        },
    )
    assert [type(i).__name__ for i in inner] == [
        "Thinking",
        "TextDelta",
        "ToolUse",
        "SubagentProgress",
        "EndMessage",
        "SubagentCompleted",
    ]
    assert all(isinstance(i, Thinking | TextDelta | ToolUse) and i.subagent_task_id == "agent1" for i in inner[:3])
    progress = inner[3]
    assert isinstance(progress, SubagentProgress)
    assert progress.message == "Running (last tool: Bash)"
    completed = inner[-1]
    assert isinstance(completed, SubagentCompleted)
    assert (completed.result, completed.status) == ("Done.", "completed")
    assert not translator.agents_running()


def test_a_background_task_keeps_the_run_open_until_it_is_done() -> None:
    translator = StreamTranslator()
    play(
        translator,
        {
            "type": "system",
            "subtype": "task_started",
            "task_id": "bg",
            "task_type": "local_agent",
            "is_backgrounded": True,
        },
    )
    assert translator.agents_running()
    assert play(translator, {"type": "result", "subtype": "success"})[0] == TurnResult(
        {"type": "result", "subtype": "success"}
    )
    play(translator, {"type": "system", "subtype": "task_updated", "task_id": "bg", "patch": {"status": "completed"}})
    assert translator.agents_running(), "done only once it has reported (its notification)"
    play(translator, {"type": "system", "subtype": "task_notification", "task_id": "bg", "status": "completed"})
    assert not translator.agents_running()


def test_a_task_still_open_at_the_end_is_reported_cancelled() -> None:
    translator = StreamTranslator()
    play(translator, {"type": "system", "subtype": "task_started", "task_id": "t", "task_type": "local_agent"})
    play(translator, {"type": "system", "subtype": "task_updated", "task_id": "t", "patch": {"status": "killed"}})
    [done] = translator.unfinished_tasks()
    assert (done.task_id, done.status) == ("t", "cancelled")
    assert translator.unfinished_tasks() == []


def test_a_local_bash_task_is_no_subagent() -> None:
    items = play(
        StreamTranslator(), {"type": "system", "subtype": "task_started", "task_id": "b", "task_type": "local_bash"}
    )
    assert items == []


# --- cut streams ------------------------------------------------------------------------------------


def cut_then(*retry: dict[str, Any], abandoned_from: int = 0) -> list[Item]:
    translator = StreamTranslator()
    return play(
        translator,
        start(),
        block(0, "thinking"),
        delta(0, "thinking_delta", "Plan it."),
        delta(0, "signature_delta", "S1"),
        stop(0),
        block(1, "text"),
        delta(1, "text_delta", "Hello t"),
        stop(1),
        message_stop(abandoned_from),
        start("msg_2"),
        *retry,
    )


def test_the_repeated_prefix_of_the_answer_after_a_cut_is_not_shown_twice() -> None:
    items = cut_then(
        block(0, "thinking"),
        delta(0, "thinking_delta", "Plan it."),
        delta(0, "signature_delta", "S1"),
        stop(0),
        block(1, "text"),
        delta(1, "text_delta", "Hel"),
        delta(1, "text_delta", "lo there"),
        delta(1, "text_delta", "!"),
        stop(1),
        message_stop(),
        abandoned_from=1,
    )
    assert texts(items) == "Hello there!"
    assert thoughts(items) == "Plan it."
    assert [i.signature for i in items if isinstance(i, Thinking) and i.signature] == ["S1"]
    assert not [i for i in items if isinstance(i, WarningEvent)]
    assert sum(isinstance(i, EndTurn) for i in items) == 1


def test_an_answer_that_differs_after_a_cut_replaces_the_shown_one_and_warns() -> None:
    items = cut_then(
        block(0, "thinking"),
        delta(0, "thinking_delta", "Another plan."),
        stop(0),
        block(1, "text"),
        delta(1, "text_delta", "Hi!"),
        stop(1),
        message_stop(),
    )
    warning = next(i for i in items if isinstance(i, WarningEvent))
    assert warning.code == "stream_resumed"
    at = items.index(warning)
    assert isinstance(items[at - 1], EndMessage)
    after = items[at + 1 :]
    restart = next(i for i in after if isinstance(i, Thinking))
    assert restart.replace
    assert restart.text == "Another plan."
    assert texts(after) == "Hi!"


def test_an_answer_shorter_than_the_shown_text_replaces_it() -> None:
    items = cut_then(
        block(0, "thinking"),
        delta(0, "thinking_delta", "Plan it."),
        stop(0),
        block(1, "text"),
        delta(1, "text_delta", "Hello"),
        stop(1),
        message_stop(),
    )
    warning = next(i for i in items if isinstance(i, WarningEvent))
    assert texts(items[items.index(warning) :]) == "Hello"


def test_two_cuts_in_a_row_still_show_the_text_once() -> None:
    translator = StreamTranslator()
    items = play(
        translator,
        start(),
        block(0, "text"),
        delta(0, "text_delta", "Hello"),
        message_stop(0),
        start("m2"),
        block(0, "text"),
        delta(0, "text_delta", "Hel"),
        message_stop(0),
        start("m3"),
        block(0, "text"),
        delta(0, "text_delta", "Hello, world."),
        stop(0),
        message_stop(),
    )
    assert texts(items) == "Hello, world."
    assert not [i for i in items if isinstance(i, WarningEvent)]


# --- tools, results, decisions -----------------------------------------------------------------------


def assistant_call(call_id: str, name: str = "Read", **arguments: Any) -> dict[str, Any]:
    return {
        "type": "assistant",
        "parent_tool_use_id": None,
        "message": {"id": "m", "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]},
    }


def result_line(
    call_id: str, content: Any, *, is_error: bool | None = None, meta: Any = None, **extra: Any
) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    line: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": [block]}, **extra}
    if meta is not None:
        line["tool_result_meta"] = [{"id": call_id, "permission_decision": meta}]
    return line


def test_a_call_the_cli_settled_itself_gets_the_backends_decision_before_its_result() -> None:
    translator = StreamTranslator()
    items = play(
        translator,
        assistant_call("t1", "ToolSearch", query="x"),
        result_line("t1", "found", meta={"decision": "accept", "source": "config", "reason_type": "mode"}),
    )
    use, decision, result = items
    assert isinstance(use, ToolUse)
    assert use.input == {"query": "x"}
    assert isinstance(decision, PermissionDecision)
    assert (decision.decision, decision.decided_by) == ("allow", "backend")
    assert "config, mode" in (decision.reason or "")
    assert isinstance(result, ToolResult)
    assert result.output == "found"


def test_a_call_that_could_not_run_is_denied_by_the_backend() -> None:
    items = play(
        StreamTranslator(),
        assistant_call("t2", "NoSuchTool"),
        result_line("t2", "<tool_use_error>Error: No such tool available: NoSuchTool</tool_use_error>", is_error=True),
    )
    decision = items[1]
    assert isinstance(decision, PermissionDecision)
    assert (decision.decision, decision.decided_by) == ("deny", "backend")
    assert "No such tool" in (decision.reason or "")


def test_a_decided_call_gets_no_second_decision_and_a_changed_input_is_on_its_result() -> None:
    translator = StreamTranslator()
    play(translator, assistant_call("t3", "Write", file_path="a", content="x"))
    translator.decided.add("t3")
    translator.ran_with["t3"] = {"file_path": "b", "content": "y"}
    [result] = play(
        translator,
        result_line("t3", "ok", tool_use_result={"type": "create", "filePath": "b"}),
    )
    assert isinstance(result, ToolResult)
    assert result.input == {"file_path": "b", "content": "y"}
    assert result.data == {"type": "create", "filePath": "b"}


def test_the_result_of_a_stopped_call_is_not_shown() -> None:
    translator = StreamTranslator()
    play(translator, assistant_call("t4", "Bash", command="touch x"))
    translator.decided.add("t4")
    translator.stopped.add("t4")
    assert play(translator, result_line("t4", "The user doesn't want to proceed", is_error=True)) == []


def test_images_in_a_tool_result_are_named_without_their_bytes() -> None:
    text, images = tool_result_text(
        [
            {"type": "text", "text": "a picture"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        ]
    )
    assert text == "a picture"
    assert images == [{"type": "image", "media_type": "image/png", "bytes": 3}]


def test_the_clis_own_notes_are_not_model_text() -> None:
    synthetic = {
        "type": "assistant",
        "message": {"model": "<synthetic>", "content": [{"type": "text", "text": "API Error"}]},
    }
    assert play(StreamTranslator(), synthetic) == []


def test_a_tool_that_runs_long_reports_progress() -> None:
    translator = StreamTranslator()
    play(translator, assistant_call("t5", "Bash", command="make"))
    [progress] = play(translator, {"type": "tool_progress", "tool_use_id": "t5", "elapsed_time_seconds": 30})
    assert isinstance(progress, ToolProgress)
    assert progress.message == "running for 30 s"


# --- system lines, usage, hostile input ---------------------------------------------------------------


def test_init_starts_once_and_api_retry_is_a_retry() -> None:
    translator = StreamTranslator()
    init = {"type": "system", "subtype": "init", "session_id": "s", "model": "claude-x", "cwd": "/w"}
    assert play(translator, init) == [Started("s", "claude-x", "/w")]
    assert play(translator, init) == []
    [retry] = play(
        translator,
        {
            "type": "system",
            "subtype": "api_retry",
            "attempt": 1,
            "max_retries": 2,
            "retry_delay_ms": 1500,
            "error_status": 429,
            "error": "rate_limit",
        },
    )
    assert retry == Retry(attempt=1, max_retries=2, delay_s=1.5, status=429, error="rate_limit")


def test_init_s_mcp_servers_are_left_to_the_run() -> None:
    """The CLI's `init` lists each server and its state (measured with 2.1.332: a command that is not there and a
    URL nobody answers are both `failed`), with no reason: the run asks the CLI for it (`_run.ClaudeRun`), so the
    translator gives the session's start alone."""
    init = {
        "type": "system",
        "subtype": "init",
        "session_id": "s",
        "mcp_servers": [{"name": "gone", "status": "failed", "source": "dynamic"}, "not a server"],
    }
    [started] = play(StreamTranslator(), init)
    assert isinstance(started, Started)


def test_usage_counts_every_prompt_token_and_separates_thinking() -> None:
    usage = usage_from_anthropic(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 20,
            "output_tokens": 12,
            "output_tokens_details": {"thinking_tokens": 5},
        }
    )
    assert (usage.input_tokens, usage.cached_tokens, usage.cache_creation_tokens) == (60, 30, 20)
    assert (usage.output_tokens, usage.thinking_tokens) == (7, 5)
    total = usage_from_model_usage(
        {
            "claude-a": {"inputTokens": 10, "outputTokens": 4, "costUSD": 0.5},
            "claude-b": {"inputTokens": 1, "cacheReadInputTokens": 2, "outputTokens": 1, "costUSD": 0.25},
        }
    )
    assert (total.input_tokens, total.cached_tokens, total.output_tokens, total.cost_usd) == (13, 2, 5, 0.75)


def test_hostile_lines_are_skipped_not_raised() -> None:
    translator = StreamTranslator()
    hostile: list[dict[str, Any]] = [
        {"type": "stream_event", "event": "not an object"},
        {"type": "stream_event", "event": {"type": "content_block_delta", "index": "0", "delta": None}},
        {"type": "assistant", "message": {"content": "text, not blocks"}},
        {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": 7, "input": []}, "junk"]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "unknown"}]}},
        {"type": "user", "message": None, "tool_result_meta": "junk"},
        {"type": "system", "subtype": "task_started", "task_id": None, "task_type": "local_agent"},
        {"type": "system", "subtype": "task_notification", "task_id": "never-started"},
        {"type": "system", "subtype": "api_retry", "retry_delay_ms": "soon", "error_status": "429"},
        {"type": "system", "subtype": "background_tasks_changed", "tasks": [None, {"task_id": 3}]},
        {"type": "result"},
        {"type": "no_such_type"},
        {},
    ]
    items = play(translator, *hostile)
    assert [type(i).__name__ for i in items] == ["Retry", "TurnResult"]
    assert usage_from_anthropic("junk").is_empty()
    assert usage_from_model_usage({"m": "junk"}).is_empty()
