"""Secrets of the environment reach no tool's environment, no event, no error, no session file, no cassette.

Hostile inputs, as a model (or a prompt injected into what it reads) would try them: shell commands
that print the environment, MCP servers that read theirs, server errors and model text that quote
the key. Where the key could be seen, the test checks the raw source too (what the shell really
printed, what the MCP server really had), so a redacted output cannot hide a leaky environment.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import BackendError, ExecuteParams, UnifiedError, execute
from unified._execute import EventStream
from unified._redaction import REDACTED, is_secret, redact, redactor, secret_values
from unified.events import (
    ErrorEvent,
    PermissionDecision,
    Question,
    Result,
    SessionStarted,
    SubagentCompleted,
    SubagentProgress,
    SubagentStarted,
    TextDelta,
    Thinking,
    ToolProgress,
    ToolResult,
    ToolUse,
    UnifiedEvent,
    UserInputRequest,
    WarningEvent,
)
from unified.testing._cassettes import RECORD_ENV, cassette_endpoint, scrub_text, use_cassette
from unified.testing._fake_gemini import FakeGemini
from unified.testing._scenario import (
    Fault,
    FunctionCall,
    FunctionCallStep,
    InteractionTurn,
    ModelTurn,
    TextStep,
)
from unified.testing._scripted import Fail, ScriptedBackend, Step
from unified.testing._yaml import load_yaml
from unified.tools import ToolCall, ToolOutcome, ToolRuntime
from unified.types import StdioMcpServer

KEY = "AIzaSyD-security-suite-key-0123456789abc"
GOOGLE_KEY = "google-api-key-of-the-security-suite"
TOKEN = "svc-token-0123456789"
SECRETS = (KEY, GOOGLE_KEY, TOKEN)
HOOK_HANG_GUARD_S = 60.0
"""Far above the second or so a background `env` needs: only a hang trips it."""


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GOOGLE_API_KEY", GOOGLE_KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)  # a guessed secret: its name says so
    monkeypatch.setenv("VISIBLE_SETTING", "visible-value")
    monkeypatch.setenv("CALLBACK_URL", f"https://example.test/cb?key={KEY}")  # an innocent name, a key inside


def assert_clean(text: str | bytes) -> None:
    data = text.encode() if isinstance(text, str) else text
    for secret in SECRETS:
        assert secret.encode() not in data


async def shell(ws: Path, command: str, **runtime: Any) -> ToolOutcome:
    async with ToolRuntime(ws, approval_mode="yolo", **runtime) as rt:
        [outcome] = await rt.run_batch([ToolCall("s", "run_shell_command", {"command": command})])
    return outcome


# --- the shell's environment --------------------------------------------------------------------

LEAKY_COMMANDS = [
    "env",
    "printenv",
    "printenv GEMINI_API_KEY",
    "echo $GOOGLE_API_KEY",
    "echo ${MY_SERVICE_TOKEN:-unset}",
    "cat /proc/self/environ",
    "cat /proc/$$/environ",
    "set",
    "export -p",
    "declare -p",
    'compgen -e | while read -r v; do printf \'%s=%s\\n\' "$v" "${!v}"; done',
    "bash -lc env",
    "sh -c 'env'",
    "python3 -c 'import os; print(dict(os.environ))'",
    "env | base64",
    "printenv GEMINI_API_KEY | rev",
    "echo $CALLBACK_URL",
]


@pytest.mark.anyio
@pytest.mark.parametrize("command", LEAKY_COMMANDS)
@pytest.mark.e2e  # runs a real subprocess
async def test_no_shell_command_sees_a_secret(ws: Path, secret_env: None, command: str) -> None:
    outcome = await shell(ws, f"({command}) > seen.txt 2>&1; echo ran >> seen.txt; cat seen.txt")
    raw = (ws / "seen.txt").read_bytes()  # what the command really printed, before any redaction
    assert raw.endswith(b"ran\n")
    assert_clean(raw)
    assert_clean(json.dumps(outcome.response))


@pytest.mark.anyio
@pytest.mark.e2e  # runs a real subprocess
async def test_the_allowlist_passes_what_commands_need(ws: Path, secret_env: None, isolated_home: Path) -> None:
    outcome = await shell(ws, "env")
    lines = str(outcome.response["output"]).removeprefix("Output: ").splitlines()
    seen = dict(line.split("=", 1) for line in lines if "=" in line)
    assert seen["HOME"] == str(isolated_home)
    assert seen["PATH"]
    assert (seen["PAGER"], seen["GIT_PAGER"], seen["GIT_TERMINAL_PROMPT"]) == ("cat", "cat", "0")
    assert "VISIBLE_SETTING" not in seen  # not on the list: dropped


@pytest.mark.anyio
@pytest.mark.e2e  # runs a real subprocess
async def test_the_caller_extends_the_allowlist_but_never_with_a_secret(
    ws: Path, secret_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VISIBLE_COPY", f"copy:{GOOGLE_KEY}")  # an allowed name holding another's secret
    outcome = await shell(
        ws,
        "env > seen.txt",
        shell_env_allowlist=["VISIBLE_*", "MY_SERVICE_TOKEN", "CALLBACK_URL", "GEMINI_API_KEY"],
        shell_env={"BUILD_MODE": "release"},
    )
    assert not outcome.is_error
    seen = (ws / "seen.txt").read_text()
    assert "VISIBLE_SETTING=visible-value\n" in seen
    assert "BUILD_MODE=release\n" in seen
    assert_clean(seen)  # allowlisted by name, still dropped: their values are secrets
    assert "MY_SERVICE_TOKEN" not in seen
    assert "VISIBLE_COPY" not in seen


@pytest.mark.anyio
@pytest.mark.e2e  # runs a real subprocess
async def test_a_credential_handed_over_on_purpose_is_set_but_not_shown(ws: Path, secret_env: None) -> None:
    outcome = await shell(
        ws,
        'test "$DEPLOY_TOKEN" = "$EXPECTED" && echo same; echo "$DEPLOY_TOKEN"',
        shell_env={
            "DEPLOY_TOKEN": TOKEN,
            "EXPECTED": TOKEN,
        },
    )
    output = str(outcome.response["output"])
    assert output.startswith("Output: same\n")
    assert TOKEN not in output  # the model still never reads it: it is a secret of the environment
    assert REDACTED in output


@pytest.mark.anyio
@pytest.mark.e2e  # runs a real subprocess
async def test_a_background_command_sees_no_secret(ws: Path, secret_env: None) -> None:
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        args = {"command": "env > seen.txt; cat /proc/self/environ; env", "is_background": True, "delay_ms": 0}
        [started] = await rt.run_batch([ToolCall("b", "run_shell_command", args)])
        pid = int(str(started.response["output"]).split("PID ")[1].split(",")[0])
        with anyio.fail_after(HOOK_HANG_GUARD_S):
            while True:
                [listed] = await rt.run_batch([ToolCall("l", "list_background_processes", {})])
                if "EXITED (0)" in str(listed.response["output"]):
                    break
                await anyio.sleep(0.05)
        [tail] = await rt.run_batch([ToolCall("r", "read_background_output", {"pid": pid, "lines": 500})])
    raw = (ws / "seen.txt").read_text()
    assert "PATH=" in raw
    assert_clean(raw)
    assert "PATH=" in str(tail.response["output"])
    assert_clean(json.dumps([started.response, tail.response]))


HOST = """
import json, sys
import anyio
from unified.tools import ToolCall, ToolRuntime

async def main() -> None:
    async with ToolRuntime(sys.argv[1], approval_mode="yolo") as rt:
        [outcome] = await rt.run_batch([ToolCall("s", "run_shell_command", {"command": sys.argv[2]})])
    print(json.dumps(outcome.response))

anyio.run(main)
"""


@pytest.mark.e2e  # runs a real subprocess
def test_the_host_environment_read_through_proc_is_redacted(ws: Path, secret_env: None) -> None:
    """Any process of the same user can read the host's /proc/<pid>/environ, as the host started (the
    shell is its child): the second layer, redaction of every tool output, keeps the values from the model.
    (An encoded copy, `| base64`, it cannot catch: docs/tools.md says so.)"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = "tr '\\0' '\\n' < /proc/$PPID/environ"
    host = subprocess.run(
        [sys.executable, "-c", HOST, str(ws), command], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert host.returncode == 0, host.stderr
    output = json.loads(host.stdout)["output"]
    assert "GEMINI_API_KEY=" + REDACTED in output  # the host's variable is there, its value is not
    assert_clean(output)


@pytest.mark.anyio
async def test_a_file_holding_the_key_is_redacted_for_the_model(ws: Path, secret_env: None) -> None:
    (ws / ".env").write_text(f"GEMINI_API_KEY={KEY}\nTOKEN={TOKEN}\n")
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        outcomes = await rt.run_batch(
            [
                ToolCall("r", "read_file", {"file_path": ".env"}),
                ToolCall("s", "search", {"pattern": "TOKEN"}),
                ToolCall("e", "read_file", {"file_path": f"missing-{KEY}"}),
            ]
        )
    for outcome in outcomes:
        assert_clean(json.dumps(outcome.response))
    assert REDACTED in str(outcomes[0].response["output"])


MCP_ENV_SERVER = """
import json
import logging
import os
import sys

from mcp.server.mcpserver import MCPServer

with open(sys.argv[1], "w") as out:
    json.dump(dict(os.environ), out)
server = MCPServer("envdump")


@server.tool()
def environment() -> str:
    \"\"\"The server's environment.\"\"\"
    return json.dumps(dict(os.environ))


server.run()
"""


@pytest.mark.anyio
@pytest.mark.e2e  # runs a real subprocess
async def test_an_mcp_stdio_server_gets_a_safe_environment(ws: Path, tmp_path: Path, secret_env: None) -> None:
    script = tmp_path / "envdump.py"
    script.write_text(MCP_ENV_SERVER)
    dump = tmp_path / "env.json"
    server = StdioMcpServer(
        name="envdump", command=sys.executable, args=(str(script), str(dump)), env={"SERVER_MODE": "on"}, timeout_s=30
    )
    async with ToolRuntime(ws, approval_mode="yolo") as rt:
        assert await rt.connect_mcp([server]) == []
        [outcome] = await rt.run_batch([ToolCall("m", "mcp__envdump__environment", {})])
    seen = json.loads(dump.read_text())  # what the server process really had
    assert_clean(json.dumps(seen))
    assert seen["SERVER_MODE"] == "on"  # its own env, given in the server's config
    assert "VISIBLE_SETTING" not in seen  # nothing else of ours
    assert "PATH" in seen
    assert_clean(json.dumps(outcome.response))


# --- end to end: events, session files, the model's context ---------------------------------------


def files_holding(root: Path, secret: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


async def run(params: ExecuteParams) -> list[UnifiedEvent]:
    async with execute(params) as stream:
        return [event async for event in stream]


def gc_params(server: FakeGemini, ws: Path, prompt: str = "go", **fields: Any) -> ExecuteParams:
    options = {"api_key": KEY, "base_url": server.base_url, "retry_delay_scale": 0.001}
    return ExecuteParams(
        prompt=prompt,
        backend="generate-content",
        model="gemini-2.5-flash",
        cwd=ws,
        approval_mode="yolo",
        backend_options=options,
        **fields,
    )


def interactions_params(server: FakeGemini, ws: Path, prompt: str = "go") -> ExecuteParams:
    options = {"api_key": KEY, "base_url": server.base_url, "retry_delay_scale": 0.01, "poll_interval_s": 0.01}
    return ExecuteParams(
        prompt=prompt,
        backend="interactions",
        model="gemini-3-flash-preview",
        cwd=ws,
        approval_mode="yolo",
        backend_options=options,
    )


def assert_events_clean(events: list[UnifiedEvent]) -> None:
    assert isinstance(events[-1], Result)
    for event in events:
        assert_clean(event.model_dump_json())


def call_then_text(backend: str, command: str, text: str) -> list[ModelTurn] | list[InteractionTurn]:
    if backend == "generate-content":
        return [
            ModelTurn(function_calls=[FunctionCall(name="run_shell_command", args={"command": command}, id="c1")]),
            ModelTurn(text=text),
        ]
    return [
        InteractionTurn(steps=[FunctionCallStep(name="run_shell_command", arguments={"command": command}, id="c1")]),
        InteractionTurn(steps=[TextStep(text=text)]),
    ]


@pytest.mark.anyio
@pytest.mark.e2e
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_model_run_env_leaks_nowhere(ws: Path, isolated_home: Path, secret_env: None, backend: str) -> None:
    turns = call_then_text(backend, "env; printenv GEMINI_API_KEY; echo $GOOGLE_API_KEY", "Done.")
    async with FakeGemini(turns) as server:
        params = gc_params(server, ws) if backend == "generate-content" else interactions_params(server, ws)
        events = await run(params)
        bodies = json.dumps([r.body for r in server.requests])
    assert_events_clean(events)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result
    [tool_result] = [e for e in events if isinstance(e, ToolResult)]
    assert "PATH=" in str(tool_result.output)  # the command ran and its output came back
    assert_clean(bodies)  # the model's context: the function response it was sent
    assert "PATH=" in bodies
    assert files_holding(isolated_home, "first_prompt"), "no session file was written: the case proves nothing"
    if backend == "generate-content":  # it keeps the history, tool output included (interactions: the server)
        assert files_holding(isolated_home, "PATH=")
    for secret in SECRETS:
        assert files_holding(isolated_home, secret) == []
        assert files_holding(ws, secret) == []


@pytest.mark.anyio
@pytest.mark.e2e
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_model_echoing_a_key_shows_no_key_in_events_or_session_files(
    ws: Path, isolated_home: Path, secret_env: None, backend: str
) -> None:
    turns = call_then_text(backend, "echo hi", f"I will not repeat {KEY}, nor {TOKEN}.")
    async with FakeGemini(turns) as server:
        params = gc_params(server, ws) if backend == "generate-content" else interactions_params(server, ws)
        events = await run(params)
    assert_events_clean(events)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.final_text == f"I will not repeat {REDACTED}, nor {REDACTED}."
    if backend == "generate-content":  # it stores the model's answer in its history (interactions: the server)
        assert files_holding(isolated_home, "I will not repeat"), "the answer was not stored: the case proves nothing"
    for secret in SECRETS:
        assert files_holding(isolated_home, secret) == []


@pytest.mark.anyio
@pytest.mark.e2e
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
@pytest.mark.parametrize("fault", ["bad_request", "unauthenticated", "server_error", "mid_stream_error"])
async def test_server_error_text_quoting_the_key_is_redacted(
    ws: Path, secret_env: None, backend: str, fault: str
) -> None:
    message = f"API key not valid: {KEY} (GOOGLE_API_KEY={GOOGLE_KEY}, see https://x.test/?key={KEY})"
    # server_error is retried (a warning says why) and then answered; the others fail the run
    broken = Fault.model_validate({"kind": fault, "message": message, "after": 0})
    turn: ModelTurn | InteractionTurn = (
        ModelTurn(text="never", fault=broken)
        if backend == "generate-content"
        else InteractionTurn(steps=[TextStep(text="never")], fault=broken)
    )
    async with FakeGemini([turn] * 5) as server:
        params = gc_params(server, ws) if backend == "generate-content" else interactions_params(server, ws)
        events = await run(params)
    assert_events_clean(events)
    reports = [e.message for e in events if isinstance(e, (ErrorEvent, WarningEvent))]
    assert any(f"API key not valid: {REDACTED}" in text for text in reports), reports  # the text got through


FAILING_GEMINI = """#!/bin/sh
if [ "$1" = "--version" ]; then echo 0.61.0; exit 0; fi
how="from its environment"
if [ -n "$UNIFIED_GEMINI_ENV_FD" ]; then  # as key_loader.cjs gets it for the real CLI: from the pipe
  line=$(head -n 1 "/dev/fd/$UNIFIED_GEMINI_ENV_FD")
  GEMINI_API_KEY=$(printf '%s' "$line" | sed -n 's/.*"GEMINI_API_KEY":"\\([^"]*\\)".*/\\1/p')
  how="by pipe"
fi
echo "Error: API key $GEMINI_API_KEY rejected by https://x.test/?key=$GEMINI_API_KEY (the key came $how)" >&2
exit 1
"""


@pytest.mark.anyio
@pytest.mark.e2e  # runs a real subprocess
async def test_gemini_cli_stderr_quoting_the_key_is_redacted(
    ws: Path, tmp_path: Path, secret_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = tmp_path / "gemini"
    binary.write_text(FAILING_GEMINI)
    binary.chmod(0o755)
    monkeypatch.setenv("UNIFIED_GEMINI_BIN", str(binary))
    events = await run(ExecuteParams(prompt="go", backend="gemini-cli", cwd=ws, backend_options={"pool_size": 0}))
    assert_events_clean(events)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert any(f"API key {REDACTED} rejected" in e.message for e in errors), errors  # the stderr got through
    assert any("the key came by pipe" in e.message for e in errors), errors  # never in the CLI's environment


# --- the stream guard, one event kind at a time -------------------------------------------------


@pytest.mark.anyio
async def test_the_stream_guard_redacts_every_event_kind(secret_env: None) -> None:
    tool_input: dict[str, Any] = {"command": f"curl -H 'x-goog-api-key: {KEY}' https://x.test"}
    steps: list[Step] = [
        SessionStarted(backend="scripted", session_id="s1", short_id="s1", cwd=f"/tmp/{TOKEN}"),
        WarningEvent(code="w", message=f"stderr: {GOOGLE_KEY}"),
        TextDelta(text=f"key={KEY}"),
        ToolUse(tool_use_id="c1", name="run_shell_command", input=tool_input),
        ToolResult(tool_use_id="c1", output={"lines": [f"GEMINI_API_KEY={KEY}"], KEY: "as a key"}),
        UserInputRequest(request_id="q1", source="model-tool", questions=[Question(id="a", prompt=f"use {TOKEN}?")]),
        ErrorEvent(code="e", message="x", details={"response": {"body": f"bad key {KEY}"}}),
        Fail(BackendError(f"gemini exited: {KEY}", hint=f"check {GOOGLE_KEY}")),
    ]
    backend = ScriptedBackend(steps)
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=backend) as stream:
        events = [event async for event in stream]
    assert_events_clean(events)
    assert {e.type for e in events} >= {"warning", "text_delta", "tool_use", "tool_result", "user_input_request"}
    assert sum(REDACTED in e.model_dump_json() for e in events) >= 9
    assert tool_input["command"].count(KEY) == 1  # what the adapter holds (and runs) is left alone


@pytest.mark.anyio
async def test_the_stream_guard_redacts_every_text_field_not_just_the_main_one(secret_env: None) -> None:
    """A secret in a thought's subject, a decision's reason, a subagent's name or result, a tool's
    progress or a model-made tool name is replaced as in any other text (the guard looks at every
    field that can hold text, on the streamed fast path too)."""
    steps: list[Step] = [
        SessionStarted(backend="scripted", session_id="s1", short_id="s1"),
        Thinking(text="body", replace=True, subject=f"**Using {KEY}**"),
        ToolUse(tool_use_id="c1", name=f"tool_{KEY}", input={"nested": [{KEY: [f"x{TOKEN}"]}]}),
        PermissionDecision(tool_use_id="c1", tool_name="t", decision="deny", decided_by="user", reason=f"no {KEY}"),
        ToolProgress(tool_use_id="c1", status=f"running {GOOGLE_KEY}"),
        ToolResult(tool_use_id="c1", output="done", input={"changed": KEY}),
        SubagentStarted(task_id="t1", agent_name=f"agent {TOKEN}", description=f"about {KEY}"),
        SubagentProgress(task_id="t1", message=f"progress {KEY}"),
        SubagentCompleted(task_id="t1", result=f"found {KEY}"),
    ]
    backend = ScriptedBackend(steps)
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=backend) as stream:
        events = [event async for event in stream]
    assert_events_clean(events)
    by_type = {e.type: e.model_dump_json() for e in events}
    for kind in ("thinking", "tool_use", "permission_decision", "tool_progress", "tool_result", "subagent_started"):
        assert REDACTED in by_type[kind], kind
    assert REDACTED in by_type["subagent_progress"]
    assert REDACTED in by_type["subagent_completed"]


class _NotedToolUse(ToolUse):
    """An event class of a backend's own, extending a protocol kind with a field of its own."""

    note: str = ""


@pytest.mark.anyio
async def test_a_field_of_an_event_subclass_is_redacted_and_the_kind_keeps_its_rules(secret_env: None) -> None:
    steps: list[Step] = [
        SessionStarted(backend="scripted", session_id="s1", short_id="s1"),
        _NotedToolUse(tool_use_id="c1", name="t", note=f"saw {KEY}"),
        _NotedToolUse(tool_use_id="c1", name="t"),  # the id again: a tool_use's rule still applies
    ]
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=ScriptedBackend(steps)) as stream:
        events = [event async for event in stream]
    assert_events_clean(events)
    noted = next(e for e in events if isinstance(e, _NotedToolUse))
    assert noted.note == f"saw {REDACTED}"
    assert any(isinstance(e, ErrorEvent) and e.code == "protocol_violation" for e in events)


@pytest.mark.anyio
async def test_a_crash_quoting_the_key_is_redacted(secret_env: None) -> None:
    backend = ScriptedBackend([Fail(RuntimeError(f"unexpected reply for key {KEY}"))])
    async with EventStream(ExecuteParams(prompt="p", backend="scripted"), backend=backend) as stream:
        events = [event async for event in stream]
    assert_events_clean(events)
    assert any(isinstance(e, ErrorEvent) and e.code == "internal_error" and REDACTED in e.message for e in events)


@pytest.mark.anyio
async def test_keys_given_in_code_are_redacted_too() -> None:
    """No environment at all: the key passed as a backend option, an MCP header and an MCP env value."""
    steps = [TextDelta(text=f"{KEY} {TOKEN} {GOOGLE_KEY}")]
    params = ExecuteParams(
        prompt="p",
        backend="scripted",
        backend_options={"api_key": KEY},
        mcp_servers=(StdioMcpServer(name="m", command="srv", env={"SERVICE_TOKEN": TOKEN}),),
    )
    async with EventStream(params, backend=ScriptedBackend(steps)) as stream:
        events = [event async for event in stream]
    text = " ".join(e.model_dump_json() for e in events)
    assert KEY not in text
    assert TOKEN not in text
    assert GOOGLE_KEY in text  # given nowhere: not a secret of this run


def test_errors_raised_outside_a_run_carry_no_secret(secret_env: None) -> None:
    error = UnifiedError(f"cannot reach https://x.test/?key={KEY}", hint=f"unset {TOKEN}", details={"k": KEY})
    for text in (str(error), repr(error), error.message, str(error.hint), json.dumps(error.details)):
        assert_clean(text)
    assert error.message == f"cannot reach https://x.test/?key={REDACTED}"


# --- redact() itself ---------------------------------------------------------------------------


def test_a_short_value_is_never_a_secret() -> None:
    env = {"GEMINI_API_KEY": "test", "MY_TOKEN": "1234567", "OTHER_TOKEN": "12345678"}
    assert redact("latest test: 1234567 and 12345678", env) == f"latest test: 1234567 and {REDACTED}"
    assert secret_values(env) == ["12345678"]


def test_a_value_is_replaced_whole_not_inside_a_word() -> None:
    env = {"DB_PASSWORD": "password", "GEMINI_API_KEY": "stest-key"}
    assert redact("passwords password apassword stest-key teststest-key", env) == (
        f"passwords {REDACTED} apassword {REDACTED} teststest-key"
    )


@pytest.mark.parametrize(
    "template",
    [
        "https://h.test/v1/models?key={}&alt=sse",
        "https://h.test/v1/models?key={}",
        "x-goog-api-key: {}",
        "Authorization: Bearer {}",
        '{{"error": "bad key\\n{}"}}',  # a JSON string with an escaped newline before the key
        '{{"k": "\\u00e9{}"}}',
        "key%3D{}%26alt",  # percent-encoded
        "\x1b[01;31m\x1b[K{}\x1b[m",  # colored by grep --color
        "(GEMINI_API_KEY={})",
        "{}",
        "glued{}glued",  # a long key is the key, whatever surrounds it
    ],
)
@pytest.mark.parametrize("secret", [KEY, "shortkey9", "clé-секрет-ключ"])
def test_a_secret_is_found_wherever_it_stands_whole(template: str, secret: str) -> None:
    text = template.format(secret)
    redacted = redact(text, {"GEMINI_API_KEY": secret})
    if template.startswith("glued") and len(secret) < 20:
        assert redacted == text  # a short value inside a word is not that value
    else:
        assert secret not in redacted
        assert redacted == template.format(REDACTED)


def test_overlapping_secrets() -> None:
    short, long = "abcdefgh12345678", "abcdefgh12345678-and-more"
    env = {"A_TOKEN": short, "B_TOKEN": long, "C_TOKEN": "x" * 10, "D_TOKEN": "x" * 12}
    assert redact(f"{long} {short} {short}{long}", env) == f"{REDACTED} {REDACTED} {REDACTED}{REDACTED}"
    assert redact(f"{'x' * 12} {'x' * 10} {'x' * 11}", env) == f"{REDACTED} {REDACTED} {'x' * 11}"
    assert secret_values(env)[:2] == [long, short]


def test_unicode_secrets_and_text() -> None:
    secret = "пароль-ключ-42"
    env = {"APP_PASSWORD": secret, "EMOJI_TOKEN": "🔑🔑🔑🔑-secret"}
    text = f"ключ: {secret}. 🙂{secret}🙂 «{secret}» ж{secret} 🔑🔑🔑🔑-secret"
    assert redact(text, env) == f"ключ: {REDACTED}. 🙂{REDACTED}🙂 «{REDACTED}» ж{secret} {REDACTED}"


def test_credential_shaped_values_are_secrets_whatever_their_name() -> None:
    assert is_secret("CALLBACK_URL", f"https://x.test/?key={KEY}")
    assert is_secret("HTTP_HEADER", "ya29.a0AfH6SMBxxxxxxxxxxxxxx")
    assert not is_secret("PATH", "/usr/local/bin:/usr/bin")
    assert not is_secret("GOOGLE_APPLICATION_CREDENTIALS", "/home/me/creds.json")


def test_a_url_with_a_password_is_a_secret_and_so_is_its_password(monkeypatch: pytest.MonkeyPatch) -> None:
    url = "postgresql://unified:hunter2-store-password@db.internal:5432/sessions"
    assert is_secret("UNIFIED_SESSION_STORE_URL", url)
    assert not is_secret("UNIFIED_SESSION_STORE_URL", "postgresql://unified@db.internal:5432/sessions")
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", url)
    text = redact(f"connecting to {url} failed: password 'hunter2-store-password' rejected")
    assert "hunter2-store-password" not in text
    assert "db.internal" not in text.replace(REDACTED, "")  # the whole URL is replaced where it stands


def test_the_redactor_is_cached_until_the_environment_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    first = redactor()
    assert redactor() is first
    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)
    second = redactor()
    assert second is not first
    assert TOKEN in second.values
    assert KEY in second.values
    clean = {"a": ["b", {"c": "d"}]}
    assert second.json(clean) is clean  # nothing to replace: nothing copied


def test_redacting_a_clean_text_is_cheap_enough_for_every_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports the cost (run with -s to see it); asserts only that the cheap path is the one taken."""
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("GOOGLE_API_KEY", GOOGLE_KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)
    text = ("The latest model output with ordinary words, paths /usr/bin and numbers 12345. " * 60)[:4096]
    clean = redactor()
    assert clean(text) is text
    rounds = 2000
    started = time.perf_counter()
    for _ in range(rounds):
        redactor()(text)
    per_call_us = (time.perf_counter() - started) / rounds * 1e6
    print(f"\nredacting 4 KB with no secret in it, {len(clean.values)} secrets: {per_call_us:.2f} µs a call")


# --- cassettes --------------------------------------------------------------------------------


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(RECORD_ENV, "1")
    yield
    monkeypatch.delenv(RECORD_ENV)


@pytest.mark.anyio
@pytest.mark.e2e
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_recorded_cassettes_hold_no_secret_in_any_body(
    tmp_path: Path, ws: Path, secret_env: None, recording: None, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="vcr")
    oauth = "ya29.a0-an-oauth-token-nobody-declared-0123"
    answer = f'Your key is {KEY}, the token {oauth}, and {{"refresh_token": "1//0refresh-token-value-xyz"}}'
    prompt = f"my key is {KEY} and my token {TOKEN}"  # in the request body
    turns: list[ModelTurn] | list[InteractionTurn] = (
        [ModelTurn(text=answer)] if backend == "generate-content" else [InteractionTurn(steps=[TextStep(text=answer)])]
    )
    with use_cassette(tmp_path, "leaky") as cassette:
        async with cassette_endpoint(turns) as base_url:
            options: dict[str, object] = {"api_key": KEY, "base_url": base_url, "retry_delay_scale": 0.01}
            if backend == "interactions":
                options["poll_interval_s"] = 0.01  # an interactions option: generate-content refuses it
            params = ExecuteParams(prompt=prompt, backend=backend, cwd=ws, backend_options=options)
            events = await run(params)
        bodies = [str(r.body) for r in cassette.requests]
    assert any("my key is" in body for body in bodies)
    written = (tmp_path / "leaky.yaml").read_text()
    for needle in (*SECRETS, oauth, "1//0refresh-token-value-xyz"):
        assert needle not in written
    data = load_yaml(written)
    assert "my key is <redacted>" in json.dumps(data)  # the request body is there, scrubbed
    assert "Your key is <redacted>" in json.dumps(data)  # and the response body
    assert_events_clean(events)
    assert "Appending request" in caplog.text  # vcrpy logs what it records...
    assert_clean(caplog.text)  # ...scrubbed
    assert oauth not in caplog.text


def test_transcript_lines_are_scrubbed(secret_env: None) -> None:
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "text": f"GEMINI_API_KEY={KEY}",
            "headers": {"Authorization": "Bearer abcdefghijklmnop.qrs"},
            "auth": {"access_token": "ya29.zzzzzzzzzzzzzzzz", "refresh_token": "1//refresh-zzzzzzzzzzzzzzzzzzzz"},
            "url": f"https://x.test/?key={KEY}&alt=sse",
            "plain": "nothing secret here: latest test",
        },
    }
    line = scrub_text(json.dumps(message))
    scrubbed = json.loads(line)  # still valid JSON
    assert_clean(line)
    for needle in ("abcdefghijklmnop", "ya29.zzzz", "1//refresh"):
        assert needle not in line
    assert scrubbed["params"]["plain"] == "nothing secret here: latest test"
    assert scrubbed["params"]["auth"]["refresh_token"] == "<redacted>"
