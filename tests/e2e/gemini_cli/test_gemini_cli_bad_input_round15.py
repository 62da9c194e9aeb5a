"""Bad input round 15, the real gemini CLI behind FakeGemini: a model stream with one event's JSON cut in half (the
`garbled_event` fault) in the middle of the answer. 0.61 fails the prompt with node's `JSON.parse` words as error 500
("Unterminated string in JSON at position 62"), which the run passed on as `backend_error` "the Gemini API failed
(500) ... a server-side problem": now `stream_interrupted`, retryable, saying the answer is not the API's JSON; no
process is left and the session resumes (unit cases: tests/adapters/gemini_cli/test_gemini_cli_bad_input_round15.py).
And a CLI that crashes (SIGSEGV) in the middle of a resumed run: a typed error naming the signal, no process left,
the session resumes again (a guard: it did before too).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from tests.e2e.bad_binaries import SLOW, killed_at_first_text, the_error
from tests.e2e.gemini_cli.test_gemini_cli_bad_input import gemini_started, params, run
from tests.hang_guard import HANG_GUARD_S
from tests.harness.warm_cli import WarmCli
from unified import execute
from unified.events import Result, SessionStarted
from unified.testing import FakeGemini, Fault, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def test_an_event_cut_in_half_is_a_stream_error_and_the_session_resumes(
    workspace: Path, warm_cli: WarmCli
) -> None:
    """The failed run in a process of its own (the test checks it is gone), the resume on the module's warm one."""
    garbled = ModelTurn(text="one two three", text_chunks=3, fault=Fault(kind="garbled_event", after=1))
    started = gemini_started()
    server = warm_cli.play([garbled, ModelTurn(text="Resumed.")])
    with anyio.fail_after(HANG_GUARD_S):
        async with execute(params(server, workspace, start_process=started)) as stream:
            events = [event async for event in stream]
    error = the_error(events)
    assert (error.code, error.retryable) == ("stream_interrupted", True), error.message
    assert "is not its JSON" in error.message
    assert "in JSON at position" in error.message
    assert "(500)" not in error.message
    assert not started.still_running()
    session = next(e for e in events if isinstance(e, SessionStarted))
    again = await run(server, workspace, "Go on.", resume=session.short_id, pool=warm_cli.pool)
    last = again[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Resumed."), again


async def test_a_crash_in_the_middle_of_a_resumed_run_is_typed_and_the_session_resumes_again(
    workspace: Path, warm_cli: WarmCli
) -> None:
    """The crashed run in a process of its own (the test crashes it), the others on the module's warm one."""
    started = gemini_started()
    server = warm_cli.play([ModelTurn(text="First."), SLOW, ModelTurn(text="Again.")])
    first = await run(server, workspace, "One.", pool=warm_cli.pool)
    done = first[-1]
    assert isinstance(done, Result)
    short_id = done.short_id
    crashed = await killed_at_first_text(
        params(server, workspace, "Two.", start_process=started, resume=short_id),
        started,
        lambda pid, _: os.killpg(pid, signal.SIGSEGV),
    )
    error = the_error(crashed)
    assert error.code == "backend_error"
    assert "killed by signal 11 (SIGSEGV" in error.message, error.message
    assert not started.still_running()
    again = await run(server, workspace, "Three.", resume=short_id, pool=warm_cli.pool)
    last = again[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text, last.short_id) == ("success", "Again.", short_id)


@pytest.mark.parametrize("setting", ["HOME", "GEMINI_CLI_HOME"])
async def test_a_home_that_is_a_file_is_backend_unavailable_naming_it(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    """The CLI died at its start: `backend_error` "exit code 1: general failure (see the error message)", its reason
    (ENOTDIR on `<HOME>/.gemini/projects.json`) deep in a stderr tail under other warnings."""
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    monkeypatch.delenv("GEMINI_CLI_HOME")
    monkeypatch.setenv(setting, str(home))
    started = gemini_started()
    async with FakeGemini([ModelTurn(text="never")]) as server:
        with anyio.fail_after(HANG_GUARD_S):
            async with execute(params(server, workspace, start_process=started)) as stream:
                events = [event async for event in stream]
        assert server.requests == []
    error = the_error(events)
    assert error.code == "backend_unavailable", error.message
    assert f"cannot make its folder {home}/.gemini: {home} is a file, not a folder" in error.message
    assert f"{setting} names that file: point {setting} at a folder" in error.message
    assert not started.still_running()
    assert home.read_text() == "not a folder"
