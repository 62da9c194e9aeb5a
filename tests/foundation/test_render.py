"""The terminal rendering of events, from events built by hand."""

from __future__ import annotations

from unified._cli.render import INDENT, Renderer, format_usage
from unified.events import (
    AssistantMessage,
    ErrorEvent,
    ImageOutput,
    PermissionDecision,
    Question,
    QuestionOption,
    Result,
    SessionStarted,
    SubagentCompleted,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    Usage,
    UserInputRequest,
    WarningEvent,
)

SECRET = "AIzaSy-a-fake-secret-value-1234567890"


def _plain(events: list[UnifiedEvent], env: dict[str, str] | None = None) -> str:
    renderer = Renderer(env=env or {})
    return "".join(shown.plain for e in events if (shown := renderer.render(e)) is not None)


def test_a_whole_run_reads_well() -> None:
    text = _plain(
        [
            SessionStarted(backend="gemini-cli", model="gemini-2.5-flash", short_id="abcd1234", transport="acp"),
            Thinking(text="Look at the files", replace=True),
            ToolUse(tool_use_id="1", name="read_file", input={"path": "a.py"}),
            ToolResult(tool_use_id="1", output="print(1)"),
            TextDelta(text="Hello "),
            TextDelta(text="world"),
            AssistantMessage(text="Hello world"),
            Result(status="success", turns=2, duration_ms=1500, short_id="abcd1234", usage=Usage(input_tokens=10)),
        ]
    )
    assert text == (
        "● session abcd1234 (gemini-cli · gemini-2.5-flash · acp)\n"
        "✻ Look at the files\n"
        '→ read_file {"path": "a.py"}\n'
        "← print(1)\n"
        "Hello world\n"
        "✔ success · 2 turns · 1.5 s · session abcd1234\n"
        "usage: input 10 · output 0 · total 10\n"
    )


def test_styles_set_thinking_tools_and_errors_apart() -> None:
    renderer = Renderer(env={})
    shown = [
        renderer.render(e)
        for e in (
            Thinking(text="hmm", replace=True),
            ToolUse(tool_use_id="1", name="shell", input={}),
            ToolResult(tool_use_id="1", output="boom", is_error=True),
            ErrorEvent(code="backend_error", message="bad", fatal=True),
        )
    ]
    thought, tool, failed, error = (t for t in shown if t is not None)
    styles = {str(span.style) for t in (thought, tool, failed, error) for span in t.spans}
    assert {"dim italic", "bold yellow", "red", "bold red"} <= styles
    assert "✗ error boom" in failed.plain
    assert "error [backend_error, fatal]: bad" in error.plain


def test_appended_thinking_streams_and_breaks_before_the_answer() -> None:
    text = _plain(
        [
            Thinking(text="first ", replace=False),
            Thinking(text="second", replace=False),
            TextDelta(text="answer"),
            WarningEvent(code="w", message="careful"),
        ]
    )
    assert text == "✻ first second\nanswer\nwarning [w]: careful\n"


def test_subagent_events_are_indented() -> None:
    text = _plain(
        [
            SubagentStarted(task_id="t1", agent_name="generalist", description="look around"),
            TextDelta(text="inner\nlines", subagent_task_id="t1"),
            ToolUse(tool_use_id="2", name="ls", subagent_task_id="t1"),
            SubagentCompleted(task_id="t1", agent_name="generalist", usage=Usage(output_tokens=3, estimated=True)),
            TextDelta(text="outer"),
        ]
    )
    lines = text.split("\n")
    assert lines[0] == "▶ subagent generalist [t1]: look around"
    assert lines[1] == f"{INDENT}inner"
    assert lines[2] == f"{INDENT}lines"
    assert lines[3] == f"{INDENT}→ ls {{}}"
    assert lines[4].startswith("■ subagent generalist completed · usage:")
    assert lines[4].endswith("(estimated)")
    assert lines[5] == "outer"


def test_permission_decisions_and_questions_are_visible() -> None:
    text = _plain(
        [
            UserInputRequest(
                request_id="r",
                source="permission",
                tool_name="write_file",
                questions=[
                    Question(
                        id="permission",
                        prompt="Allow write_file?",
                        options=[
                            QuestionOption(id="allow_once", label="Allow"),
                            QuestionOption(id="deny", label="Deny"),
                        ],
                    )
                ],
            ),
            PermissionDecision(tool_use_id="1", tool_name="write_file", decision="deny", decided_by="user"),
            PermissionDecision(
                tool_use_id="2", tool_name="read_file", decision="allow", decided_by="policy", rule="read-only"
            ),
        ]
    )
    assert "? permission request for write_file\n  Allow write_file? [Allow / Deny]\n" in text
    assert "✗ denied write_file (user)\n" in text
    assert "✓ allowed read_file (policy: read-only)\n" in text


def test_decision_shows_a_changed_input_and_the_users_message() -> None:
    text = _plain(
        [
            PermissionDecision(
                tool_use_id="1",
                tool_name="write_file",
                decision="allow",
                decided_by="user",
                input={"file_path": "safe.txt"},
            ),
            PermissionDecision(
                tool_use_id="2", tool_name="run_shell_command", decision="deny", decided_by="user", message="not now"
            ),
        ]
    )
    assert '✓ allowed write_file (user)\n  with input {"file_path": "safe.txt"}\n' in text
    assert "✗ denied run_shell_command (user)\n  message: not now\n" in text


def test_result_usage_and_error_once() -> None:
    text = _plain(
        [
            ErrorEvent(code="auth_error", message="refused", fatal=True),
            Result(status="error", error="refused", usage=Usage(input_tokens=5, output_tokens=2, estimated=True)),
        ]
    )
    assert text.count("refused") == 1
    assert text.endswith("usage: input 5 · output 2 · total 7 (estimated)\n")
    assert format_usage(Usage(input_tokens=9, cached_tokens=4, thinking_tokens=3, tool_use_tokens=1)) == (
        "usage: input 9 (cached 4) · output 0 · thinking 3 · tool use 1 · total 13"
    )


def test_long_tool_output_is_cut() -> None:
    text = _plain([ToolResult(tool_use_id="1", output="x" * 1000)])
    assert "… (1000 chars)" in text
    assert len(text) < 500


def test_secrets_are_redacted_everywhere() -> None:
    env = {"GEMINI_API_KEY": SECRET}
    text = _plain(
        [
            TextDelta(text=f"your key is {SECRET}"),
            Thinking(text=SECRET, replace=True),
            ToolUse(tool_use_id="1", name="shell", input={"cmd": f"echo {SECRET}"}),
            ErrorEvent(code="x", message=f"400 for ?key={SECRET}"),
            Result(status="error", error=f"key {SECRET}"),
        ],
        env,
    )
    assert SECRET not in text
    assert "[REDACTED]" in text


def test_a_failed_gemini_cli_shows_its_stderr_tail_once_and_redacted() -> None:
    tail = "\n".join(f"noise {n}" for n in range(30)) + f"\nTrust this folder first (key {SECRET})"
    text = _plain(
        [ErrorEvent(code="backend_error", message="session/set_mode: Internal error", details={"stderr_tail": tail})],
        env={"GEMINI_API_KEY": SECRET},
    )
    assert "the agent CLI's stderr (last lines):" in text
    assert "  Trust this folder first" in text
    assert SECRET not in text
    assert "noise 9\n" not in text  # only the last lines
    assert "noise 29" in text
    already_in_message = _plain(
        [ErrorEvent(code="backend_error", message=f"gemini exited: 1\n{tail}", details={"stderr_tail": tail})]
    )
    assert "stderr (last lines)" not in already_in_message


def test_a_generated_image_is_one_line_with_its_type_and_size_between_the_texts() -> None:
    shown = _plain(
        [
            TextDelta(text="Here it is:"),
            ImageOutput(mime_type="image/png", data=b"\x89PNG" * 300, size_bytes=1200),
            ImageOutput(mime_type="image/jpeg", uri="gs://bucket/cat.jpg"),
            TextDelta(text="Done."),
        ]
    )
    assert "▣ image (image/png, 1,200 bytes)" in shown
    assert "▣ image (image/jpeg) at gs://bucket/cat.jpg" in shown
    assert "PNG" not in shown  # the bytes themselves are never printed
    assert shown.index("Here it is:") < shown.index("▣ image (image/png") < shown.index("Done.")
