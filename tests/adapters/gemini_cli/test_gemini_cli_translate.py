"""The ACP translator on transcripts recorded from the real 0.61 binary (no Node needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from unified._adapters.gemini_cli._translate import (
    AcpTranslator,
    Item,
    TurnBoundary,
    denial_text,
    request_args,
    usage_from_prompt_result,
)
from unified.events import (
    PermissionDecision,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
)

CASSETTES = Path(__file__).resolve().parents[3] / "cassettes" / "gemini-cli"


def replay(name: str, cwd: str = "/ws") -> tuple[list[Item], list[dict[str, Any]]]:
    """Feed a cassette's agent→client messages to the translator, as the adapter does."""
    lines = (CASSETTES / f"{name}.jsonl").read_text().splitlines()
    meta = json.loads(lines[0])
    assert "0.61.0" in meta["recorded_from"]
    assert "fake-responses" in meta["recorded_from"]
    translator = AcpTranslator()
    items: list[Item] = []
    results = []
    for line in lines[1:]:
        entry = json.loads(line)
        if entry["dir"] != "recv":  # the client's messages and the chat-file records are not translated
            continue
        message = entry["msg"]
        if message.get("method") == "session/update":
            items += translator.update(message["params"]["update"])
        elif message.get("method") == "session/request_permission":
            items += translator.permission_request(message["params"], cwd)
        elif isinstance(message.get("result"), dict) and "stopReason" in message["result"]:
            results.append(message["result"])
    return items, results


def events(items: list[Item]) -> list[Any]:
    return [i for i in items if not isinstance(i, TurnBoundary)]


def test_text_and_thoughts() -> None:
    items, results = replay("text-thoughts")
    evs = events(items)
    assert isinstance(items[0], TurnBoundary)
    thinking = next(e for e in evs if isinstance(e, Thinking))
    assert thinking.replace
    assert thinking.subject == "Planning"
    assert "".join(e.text for e in evs if isinstance(e, TextDelta)) == "Hello there."
    usage = usage_from_prompt_result(results[-1])
    assert usage is not None
    assert usage.input_tokens == 100


def test_mode_update_is_not_text() -> None:
    items, _ = replay("plan-denied")
    assert not any(isinstance(e, TextDelta) and "MODE_UPDATE" in e.text for e in items)


def test_policy_denial_synthesizes_use_decision_and_error_result() -> None:
    items, _ = replay("plan-denied")
    evs = events(items)
    use = next(e for e in evs if isinstance(e, ToolUse))
    decision = next(e for e in evs if isinstance(e, PermissionDecision))
    result = next(e for e in evs if isinstance(e, ToolResult))
    assert use.name == "write_file"
    assert (decision.decision, decision.decided_by) == ("deny", "policy")
    assert result.is_error
    assert evs.index(use) < evs.index(decision) < evs.index(result)


def test_permission_request_announces_the_call_once() -> None:
    items, _ = replay("tools-permission")
    uses = [e for e in events(items) if isinstance(e, ToolUse)]
    assert [u.name for u in uses] == ["read_file", "write_file"]
    results = [e for e in events(items) if isinstance(e, ToolResult)]
    assert {r.tool_use_id for r in results} == {u.tool_use_id for u in uses}
    assert not any(r.is_error for r in results)


def test_a_recorded_write_prompt_carries_the_models_arguments(tmp_path: Path) -> None:
    """The real 0.61 binary's write prompt (cassette) names the file by its absolute path and relative title."""
    lines = (CASSETTES / "tools-permission.jsonl").read_text().splitlines()
    request = next(
        json.loads(line)["msg"]["params"]
        for line in lines[1:]
        if json.loads(line).get("msg", {}).get("method") == "session/request_permission"
    )
    diff = request["toolCall"]["content"][0]
    cwd = str(Path(diff["path"]).parent)
    args = request_args("write_file", request["toolCall"], cwd)
    title = request["toolCall"]["title"].removeprefix("Writing to ")
    assert args == {"file_path": title, "content": diff["newText"]}


def _diff(path: str, old: str, new: str) -> dict[str, Any]:
    return {"type": "diff", "path": path, "oldText": old, "newText": new}


def _note(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


@pytest.mark.parametrize(
    ("name", "call", "args"),
    [
        pytest.param(
            "run_shell_command",
            {"title": "echo hi > out.txt", "kind": "execute", "content": [_note("[current working directory /x]")]},
            {"command": "echo hi > out.txt"},
            id="shell: the title is the command; the CLI process's cwd is not an argument",
        ),
        pytest.param(
            "run_shell_command",
            {"title": "make", "kind": "execute", "content": [_note("[in sub] (build it) [background]")]},
            {"command": "make", "dir_path": "sub", "description": "build it", "is_background": True},
            id="shell: dir_path, description and background from the explanation",
        ),
        pytest.param(
            "write_file",
            {"title": "Writing to new.txt", "kind": "edit", "content": [_diff("/ws/new.txt", "", "x\n")]},
            {"file_path": "new.txt", "content": "x\n"},
            id="write_file: the title's relative path when it is the diff's file",
        ),
        pytest.param(
            "write_file",
            {
                "title": "Writing to a/very/long/pa...hat/is/cut.txt",
                "kind": "edit",
                "content": [_diff("/ws/f.txt", "", "x")],
            },
            {"file_path": "/ws/f.txt", "content": "x"},
            id="write_file: a cut title gives way to the absolute path",
        ),
        pytest.param(
            "replace",
            {
                "title": "notes.txt: alpha => beta",
                "kind": "edit",
                "content": [_diff("/ws/notes.txt", "alpha\ngamma\n", "beta\ngamma\n")],
            },
            {"file_path": "notes.txt", "old_string": "alpha", "new_string": "beta"},
            id="replace: the title's snippets when they are whole and reproduce the diff",
        ),
        pytest.param(
            "replace",
            {
                "title": "notes.txt: def a(x):... => def a(y):...",
                "kind": "edit",
                "content": [
                    _diff(
                        "/ws/notes.txt",
                        "head\ndef a(x): return x + 1000000000000000\ntail\n",
                        "head\ndef a(y): return y + 1000000000000000\ntail\n",
                    )
                ],
            },
            {
                "file_path": "notes.txt",
                "old_string": "def a(x): return x + 1000000000000000",
                "new_string": "def a(y): return y + 1000000000000000",
            },
            id="replace: cut snippets give way to the changed lines",
        ),
        pytest.param(
            "replace",
            {"title": "Create fresh.txt", "kind": "edit", "content": [_diff("/ws/fresh.txt", "", "new\n")]},
            {"file_path": "fresh.txt", "old_string": "", "new_string": "new\n"},
            id="replace: creating a file",
        ),
        pytest.param(
            "mcp_echo_echo",
            {"title": "echo", "kind": "other", "content": [_note('{"text":"hi"}')]},
            {"text": "hi"},
            id="MCP: the explanation is the JSON of the arguments",
        ),
        pytest.param(
            "web_fetch", {"title": "Fetching https://x", "kind": "fetch", "content": []}, {}, id="other tools: unknown"
        ),
        pytest.param(
            "write_file",
            {"title": "t", "kind": "edit", "rawInput": {"file_path": "r"}},
            {"file_path": "r"},
            id="rawInput wins",
        ),
    ],
)
def test_a_permission_request_gives_the_models_arguments_per_tool(
    name: str, call: dict[str, Any], args: dict[str, Any]
) -> None:
    assert request_args(name, call, "/ws") == args


def test_a_rejected_call_reads_as_the_cli_tells_the_model() -> None:
    translator = AcpTranslator()
    translator.permission_request({"toolCall": {"toolCallId": "write_file__w_1", "title": "t", "kind": "edit"}}, "/ws")
    (result,) = [i for i in translator.denied("write_file__w_1") if isinstance(i, ToolResult)]
    assert result.output == denial_text("write_file") == 'Tool "write_file" was canceled by the user.'
    assert result.is_error


def test_invoke_agent_brackets_a_subagent() -> None:
    items, _ = replay("subagent")
    evs = events(items)
    started = next(e for e in evs if isinstance(e, SubagentStarted))
    completed = next(e for e in evs if isinstance(e, SubagentCompleted))
    assert started.agent_name == "generalist"
    assert completed.task_id == started.task_id
    assert completed.status == "completed"


def test_usage_missing_is_none() -> None:
    assert usage_from_prompt_result({"stopReason": "end_turn"}) is None
