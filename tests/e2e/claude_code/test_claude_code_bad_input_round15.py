"""Bad input round 15, the real claude CLI behind FakeAnthropic: a model stream with one event's JSON cut in half (the
`garbled_event` fault). The CLI asks again: the run succeeds with the second answer, shown once (a guard: it did
before too; gemini-cli's run did not, tests/e2e/gemini_cli/test_gemini_cli_bad_input_round15.py). And a CLI that
crashes (SIGSEGV) in the middle of a resumed run: a typed error naming the signal, no process left, the session
resumes again (a guard too)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.e2e.bad_binaries import SLOW, the_error
from tests.e2e.claude_code.claude_code_helpers import Processes, alive, run_claude
from unified._execute import EventStream
from unified.events import Result, TextDelta, UnifiedEvent
from unified.testing import FakeAnthropic, Fault, ModelTurn

pytestmark = pytest.mark.anyio


async def test_an_event_cut_in_half_is_read_around(workspace: Path) -> None:
    garbled = ModelTurn(text="one two three", text_chunks=3, fault=Fault(kind="garbled_event", after=2))
    async with FakeAnthropic([garbled, ModelTurn(text="Asked again.")]) as server:
        events = await run_claude(server, workspace)
        assert [request.fault for request in server.requests_for("messages")] == ["garbled_event", None]
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Asked again.")


async def test_a_crash_in_the_middle_of_a_resumed_run_is_typed_and_the_session_resumes_again(workspace: Path) -> None:
    processes = Processes()

    async def crash_at_first_text(event: UnifiedEvent, stream: EventStream) -> None:
        if isinstance(event, TextDelta) and alive(processes.pids[-1]):
            os.kill(processes.pids[-1], signal.SIGSEGV)

    async with FakeAnthropic([ModelTurn(text="First."), SLOW, ModelTurn(text="Again.")]) as server:
        first = await run_claude(server, workspace, "One.")
        done = first[-1]
        assert isinstance(done, Result)
        short_id = done.short_id
        crashed = await run_claude(
            server,
            workspace,
            "Two.",
            resume=short_id,
            options={"start_process": processes},
            on_event=crash_at_first_text,
        )
        error = the_error(crashed)
        assert error.code == "backend_error"
        assert "killed by signal 11 (SIGSEGV" in error.message, error.message
        assert not any(alive(pid) for pid in processes.pids)
        again = await run_claude(server, workspace, "Three.", resume=short_id)
    last = again[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text, last.short_id) == ("success", "Again.", short_id)
