"""Bad input round 17, the real gemini CLI behind FakeGemini, over the stream-json transport. An answer over the line
cap (limits.MAX_EVENT_BYTES), its `message` line dropped unread: the run ended `success` with an empty final text;
now `backend_error` saying the answer was larger than unified reads, as over ACP, on claude-code and codex
(tests/e2e/gemini_cli/test_gemini_cli_bad_input_round16.py), and the session resumes. The cap is lowered to 32 KiB
here, not 1 MiB as there: `gemini -p` (0.61) exits before a pipe has taken what it wrote past 64 KiB, so a longer
line never comes whole. That is the second case: an answer of 200 kB in one chunk, cut at 64 KiB by the CLI's exit
(exit 0, no `result`), said only "ended without a result: exit code 0: unexpected exit"; now it says the answer was
cut off and to use the ACP transport.

And a write the CLI refuses before running it or asking anyone (a path outside the workspace): said `allow`, by
unified's rule auto-edit or yolo over ACP, by the CLI itself headless, though nothing was written; now `deny` by the
backend with the CLI's reason (unit cases: tests/adapters/gemini_cli/test_gemini_cli_bad_input_round17.py)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import string
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.bad_binaries import SLOW, the_error
from tests.e2e.gemini_cli.test_gemini_cli_bad_input import gemini_started, params, run
from tests.hang_guard import HANG_GUARD_S
from tests.harness.warm_cli import WarmCli
from unified import execute
from unified._binary import framing
from unified.events import ErrorEvent, PermissionDecision, Result, SessionStarted, TextDelta, ToolResult
from unified.testing import FakeGemini, FunctionCall, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


def _long_answer(cap: int) -> str:
    """Words (not one letter repeated, which the CLI stops itself) filling one and a half times `cap` bytes."""
    words = random.Random(17)
    vocabulary = ["".join(words.choices(string.ascii_lowercase, k=words.randint(2, 9))) for _ in range(5000)]
    return " ".join(words.choice(vocabulary) for _ in range(cap * 3 // 2 // 6))


async def _error_then_resume(workspace: Path, answer: str) -> ErrorEvent:
    """A stream-json run whose model answers `answer`, then a resume of its session, asserted to continue that
    session: the first run's error."""
    async with FakeGemini([ModelTurn(text=answer), ModelTurn(text="Shorter.")]) as server:
        events = await run(server, workspace, transport="stream-json")
        session = next(e for e in events if isinstance(e, SessionStarted))
        again = await run(server, workspace, "Shorter, please.", resume=session.short_id, transport="stream-json")
    resumed = next(e for e in again if isinstance(e, SessionStarted))
    assert (resumed.resumed, resumed.session_id) == (True, session.session_id)
    assert isinstance(again[-1], Result)
    return the_error(events)


async def test_a_stream_json_answer_over_the_line_cap_is_an_error_and_the_session_resumes(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(framing, "MAX_LINE_BYTES", 32 * 1024)
    error = await _error_then_resume(workspace, _long_answer(32 * 1024))
    assert error.code == "backend_error", error.message
    assert "larger than unified reads" in error.message
    assert "limits.MAX_EVENT_BYTES" in error.message


async def test_a_stream_json_answer_cut_off_by_the_cli_s_exit_says_so_and_the_session_resumes(workspace: Path) -> None:
    error = await _error_then_resume(workspace, _long_answer(200_000))
    assert error.code == "backend_error", error.message
    assert "ended (exit code 0) in the middle of its answer" in error.message
    assert "use the acp transport" in error.message


@pytest.mark.parametrize(
    ("transport", "mode"), [("acp", "auto_edit"), ("acp", "yolo"), ("acp", "default"), ("stream-json", "yolo")]
)
async def test_a_write_the_cli_refuses_before_running_it_is_denied_not_allowed(
    workspace: Path, tmp_path: Path, warm_cli: WarmCli, transport: str, mode: str
) -> None:
    """Over ACP on the module's warm CLI process (`gemini -p` starts its own)."""
    outside = tmp_path / "outside.txt"
    write = FunctionCall(name="write_file", args={"file_path": str(outside), "content": "written"})
    server = warm_cli.play([ModelTurn(function_calls=[write]), ModelTurn(text="Done.")])
    asked = params(server, workspace, transport=transport, pool=warm_cli.pool)
    asked = asked.model_copy(update={"approval_mode": mode})
    with anyio.fail_after(HANG_GUARD_S):
        async with execute(asked) as stream:
            events = [event async for event in stream]
    [decision] = [e for e in events if isinstance(e, PermissionDecision)]
    [result] = [e for e in events if isinstance(e, ToolResult)]
    assert (decision.decision, decision.decided_by, decision.rule) == ("deny", "backend", None), decision
    assert (decision.reason or "").startswith("the Gemini CLI refused it before running it: Path not in workspace")
    assert result.is_error
    assert not outside.exists()
    last = events[-1]
    assert isinstance(last, Result)
    assert last.status == "success", last.error


def _in(workspace: Path) -> set[int]:
    """The live processes working in `workspace` (the CLI and what it started there): a /proc scan."""
    found = set()
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and Path(os.readlink(entry / "cwd")) == workspace.resolve():
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                found |= set() if state == "Z" else {int(entry.name)}
    return found


@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_leaving_a_run_whose_cli_was_stopped_leaves_no_process(workspace: Path, transport: str) -> None:
    """A CLI stopped (SIGSTOP, as a debugger or a `kill -STOP` leaves it) mid-answer takes no SIGTERM until it goes
    on: leaving the run must still end it, and soon (the hang guard bounds the wait). The ACP agent is found by
    `start_process` (it works in a folder of its own), `gemini -p` by its working directory."""
    started = gemini_started()
    stopped: set[int] = set()
    async with FakeGemini([SLOW]) as server:
        options: dict[str, Any] = {"start_process": started} if transport == "acp" else {}
        asked = params(server, workspace, transport=transport, **options)
        with anyio.fail_after(HANG_GUARD_S):
            async with execute(asked) as stream:
                async for event in stream:
                    if isinstance(event, TextDelta):
                        stopped = {pid for pid, _ in started.processes} | _in(workspace)
                        for pid in stopped:
                            os.kill(pid, signal.SIGSTOP)
                        break
    assert stopped
    assert not started.still_running()
    assert not _in(workspace) & stopped
