"""A gemini-cli session resumed from another process, without `model`: it continues on its own model, the CLI's
router never runs, and the resumed request passes a FakeGemini that refuses malformed history (issue 23).

The first run is a separate `python -m unified run` (its own Python, its own gemini process); it reads a file
(the CLI records the response twice) and is refused a write (the CLI records a response without its call).
The CLI 0.61 would send both on a resume, and the real API answers such a history with HTTP 400.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified import ExecuteParams, execute
from unified import sessions as unified_sessions
from unified._adapters.gemini_cli import _backend
from unified.events import ErrorEvent, Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn, Usage
from unified.testing._wire import CALL_COUNT_MISMATCH

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

SESSION_MODEL = "gemini-2.5-pro"
"""Not the default: a resume that used the default (or the router's pick) would show."""


def _child_env(server: FakeGemini, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GEMINI_MODEL", "GOOGLE_API_KEY", "GEMINI_API_KEY")}
    return {
        **env,
        "HOME": str(home),
        "GEMINI_CLI_HOME": str(home),
        "UNIFIED_DATA_DIR": str(home / "unified-data"),
        "GOOGLE_GEMINI_BASE_URL": server.base_url,
        "GEMINI_API_KEY": "fake-gemini-key",
    }


async def _first_run_elsewhere(server: FakeGemini, workspace: Path, home: Path) -> dict[str, Any]:
    """`unified run` in its own Python process; returns its session_started event."""
    argv = [sys.executable, "-m", "unified", "run", "read the notes, then write", "--backend", "gemini-cli"]
    argv += ["--model", SESSION_MODEL, "--cwd", str(workspace), "--json", "--deny"]
    with anyio.fail_after(HANG_GUARD_S):
        done = await anyio.run_process(argv, env=_child_env(server, home), check=False)
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert lines[-1]["type"] == "result", done.stderr.decode()
    assert lines[-1]["status"] == "success", lines[-1]
    started: dict[str, Any] = next(line for line in lines if line["type"] == "session_started")
    return started


def _turns() -> list[ModelTurn]:
    return [
        ModelTurn(function_calls=[FunctionCall(name="read_file", args={"file_path": "notes.txt"})]),
        ModelTurn(function_calls=[FunctionCall(name="write_file", args={"file_path": "new.txt", "content": "x"})]),
        ModelTurn(text="Read it; the write was refused.", usage=Usage(input_tokens=30, output_tokens=6)),
    ]


async def _resume(workspace: Path, short_id: str, server: FakeGemini) -> list[UnifiedEvent]:
    env = {"GOOGLE_GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "fake-gemini-key"}
    params = ExecuteParams(
        prompt="and now?",
        backend="gemini-cli",
        cwd=workspace,
        resume=short_id,  # no model
        backend_options={"env": env, "pool_size": 0},
    )
    async with execute(params) as stream:
        return [event async for event in stream]


async def test_a_resume_from_another_process_keeps_its_model_and_sends_a_valid_history(
    workspace: Path, gemini_setup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_MODEL", raising=False)
    last = ModelTurn(text="Still here.", usage=Usage(input_tokens=50, output_tokens=3))
    async with FakeGemini([*_turns(), last, ModelTurn(text="Once more.")]) as server:
        first = await _first_run_elsewhere(server, workspace, gemini_setup)
        assert first["model"] == SESSION_MODEL
        events = await _resume(workspace, first["short_id"], server)
        result = events[-1]
        assert isinstance(result, Result)
        assert (result.status, result.final_text) == ("success", "Still here."), result.error
        started = next(e for e in events if isinstance(e, SessionStarted))
        assert (started.resumed, started.model, started.short_id) == (True, SESSION_MODEL, first["short_id"])
        repairs = [e.message for e in events if isinstance(e, WarningEvent) and e.code == "session_repaired"]
        assert any("function response(s)" in m for m in repairs), repairs
        # Every request was the session's model's streamed turn: no router call, no refused history.
        assert [(r.api_method, r.model, r.status) for r in server.requests] == [
            ("generateContentStream", SESSION_MODEL, 200)
        ] * 4
        # Stored usage: what the chat file recorded for the session's model calls.
        listing = await unified_sessions.list_sessions(backend="gemini-cli", cwd=str(workspace))
        (info,) = listing.sessions
        assert info.extra["usage"]["input_tokens"] == 80
        assert info.extra["usage"]["output_tokens"] == 9
        assert info.extra["turns"] == 4
        # `unified run --resume` with backend auto: the routing line names the backend that runs it.
        argv = [
            sys.executable,
            "-m",
            "unified",
            "run",
            "once more",
            "--resume",
            first["short_id"],
            "--cwd",
            str(workspace),
        ]
        with anyio.fail_after(HANG_GUARD_S):
            done = await anyio.run_process(argv, env=_child_env(server, gemini_setup), check=False)
        assert done.returncode == 0, (done.stdout.decode(), done.stderr.decode())
        routing = next(line for line in done.stderr.decode().splitlines() if line.startswith("auto → "))
        assert routing.startswith("auto → gemini-cli: "), routing
        assert routing.endswith(f"(session {first['short_id']} is gemini-cli's)")
        server.assert_done()


async def test_without_the_repair_fakegemini_refuses_the_resumed_history_as_the_api_would(
    workspace: Path, gemini_setup: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check bites: the CLI's own resumed request is refused (400) and the run ends `bad_request`."""
    monkeypatch.delenv("GEMINI_MODEL", raising=False)
    monkeypatch.setattr(_backend, "repair_session", lambda home, session_id: [])
    async with FakeGemini([*_turns(), ModelTurn(text="never sent")]) as server:
        first = await _first_run_elsewhere(server, workspace, gemini_setup)
        events = await _resume(workspace, first["short_id"], server)
        error = next(e for e in events if isinstance(e, ErrorEvent))
        assert error.code == "bad_request"
        assert CALL_COUNT_MISMATCH in error.message or "function response turn" in error.message
        assert any("refused the request's history" in p for p in server.problems)
