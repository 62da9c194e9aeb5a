"""Bad input for the gemini-cli backend, as an outside suite would feed it: a binary that cannot run or
prints garbage, a CLI killed mid-stream, a provider whose every answer is empty, a damaged chat file, a run
left early, bad parameters. Each ends as a typed error (or a clean `cancelled`) saying what happened, with no
process left behind and no chat file deleted or rewritten. The real pinned `gemini` runs against FakeGemini;
a shell script stands in for it only for what it cannot be made to do (tests/e2e/bad_binaries.py). The API's
HTTP errors, a crash mid-tool, an unknown short id and a missing Node are test_gemini_cli_auth_and_errors.py's,
test_gemini_cli_options.py's and test_gemini_cli_resume.py's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.bad_binaries import (
    BROKEN,
    GARBAGE_LINES,
    SLOW,
    Started,
    broken_binary,
    killed_at_first_text,
    leave_at_first_text,
    script_binary,
    the_error,
)
from tests.hang_guard import HANG_GUARD_S
from tests.harness.warm_cli import WarmCli
from unified import ExecuteParams, execute, execute_sync
from unified._adapters.gemini_cli._chat_files import session_files
from unified._adapters.gemini_cli._launch import start_gemini
from unified.errors import ConfigurationError
from unified.events import Result, SessionStarted, TextDelta, UnifiedEvent
from unified.testing import FakeGemini, Fault, ModelTurn
from unified.testing._fake_gemini import CLI_MODEL

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


def gemini_started() -> Started:
    """`start_gemini` on the pinned binary (the adapter starts each process in a process group of its own)."""
    return Started(start_gemini, os.environ["UNIFIED_GEMINI_BIN"])


def params(server: FakeGemini, workspace: Path, prompt: str = "hi", **options: Any) -> ExecuteParams:
    resume = options.pop("resume", None)
    return ExecuteParams(
        prompt=prompt,
        backend="gemini-cli",
        model=CLI_MODEL,
        cwd=workspace,
        resume=resume,
        backend_options={"env": server.cli_env, "pool_size": 0, **options},
    )


async def run(server: FakeGemini, workspace: Path, prompt: str = "hi", **options: Any) -> list[UnifiedEvent]:
    """A run in a process of its own, or on the module's warm ones where `options` name their `pool` (`server` is then
    the warm host's, whose launch it is)."""
    with anyio.fail_after(HANG_GUARD_S):
        async with execute(params(server, workspace, prompt, **options)) as stream:
            return [event async for event in stream]


@pytest.mark.parametrize("kind", list(BROKEN))
async def test_a_binary_that_cannot_run_is_backend_unavailable_saying_what_is_wrong(
    workspace: Path, tmp_path: Path, kind: str
) -> None:
    """Was broken for a directory and a file without its `x` bit: "could not run ... --version: Permission
    denied", which names neither."""
    binary = broken_binary(tmp_path / "bin", "gemini", kind)
    async with FakeGemini([ModelTurn(text="never")]) as server:
        events = await run(server, workspace, gemini_binary=binary)
        assert server.requests == []
    error = the_error(events)
    assert (error.code, error.fatal) == ("backend_unavailable", True)
    assert str(binary) in error.message
    assert BROKEN[kind] in error.message
    assert "unified install-gemini" in error.message  # what to do


@pytest.mark.parametrize("body", [GARBAGE_LINES + "exit 0\n", "exit 0\n"], ids=["garbage", "silent"])
async def test_a_binary_that_exits_0_without_answering_is_a_backend_error(
    workspace: Path, tmp_path: Path, body: str
) -> None:
    binary = script_binary(tmp_path / "bin", "gemini", "0.61.0", body)
    async with FakeGemini([ModelTurn(text="never")]) as server:
        events = await run(server, workspace, gemini_binary=binary)
    error = the_error(events)
    assert error.code == "backend_error"
    assert "gemini --acp exited before it answered initialize" in error.message
    assert "exit code 0" in error.message


async def test_a_cli_killed_mid_stream_is_a_backend_error_and_its_session_resumes(
    workspace: Path, warm_cli: WarmCli
) -> None:
    """The killed run in a process of its own (the test kills it), the resume on the module's warm one."""
    started = gemini_started()
    server = warm_cli.play([SLOW, ModelTurn(text="Resumed.")])
    events = await killed_at_first_text(params(server, workspace, start_process=started), started, os.killpg)
    error = the_error(events)
    session = next(e for e in events if isinstance(e, SessionStarted))
    again = await run(server, workspace, "Go on.", resume=session.short_id, pool=warm_cli.pool)
    assert error.code == "backend_error"
    assert "killed by signal 9" in error.message
    assert not started.still_running()
    last = again[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Resumed.")


async def test_a_provider_whose_every_answer_is_empty_is_a_retryable_stream_error(
    workspace: Path, warm_cli: WarmCli
) -> None:
    """Was broken over ACP: `success` with no text at all (the CLI ends the turn as answered after its own
    retries), where `gemini -p` fails it."""
    empty = ModelTurn(text="never", fault=Fault(kind="empty_stream"))
    server = warm_cli.play([empty] * 4)
    events = await run(server, workspace, pool=warm_cli.pool)
    assert len(server.requests) == 4, "the CLI asked 4 times"
    error = the_error(events)
    assert (error.code, error.retryable, error.fatal) == ("stream_interrupted", True, True), error.message
    assert "answered with nothing" in error.message
    assert "run again" in error.message  # the hint


async def test_a_stream_cut_on_every_attempt_is_a_retryable_stream_error(workspace: Path, warm_cli: WarmCli) -> None:
    """Was `backend_error` "the Gemini API failed (500): terminated": the CLI's JSON-RPC code 500 taken for an
    HTTP status, though the connection dropped mid-answer and no 500 came."""
    cut = ModelTurn(text="A cut answer, again.", text_chunks=4, fault=Fault(kind="cut_stream", after=2))
    server = warm_cli.play([cut] * 4)
    events = await run(server, workspace, pool=warm_cli.pool)
    assert all(request.status == 200 for request in server.requests)
    error = the_error(events)
    assert (error.code, error.retryable, error.fatal) == ("stream_interrupted", True, True), error.message
    assert "broke off" in error.message
    assert "(500)" not in error.message


@pytest.mark.parametrize("damage", ["binary", "empty", "cut_in_the_prompt"])
async def test_a_damaged_chat_file_is_corrupt_session_and_kept_as_it_is(
    workspace: Path, warm_cli: WarmCli, damage: str
) -> None:
    """The file cut inside its prompt's line was broken: `session_not_found` "no gemini-cli session matches ..."
    (it was hidden as a session with no prompt yet)."""
    server = warm_cli.play([ModelTurn(text="First."), ModelTurn(text="never")])
    first = await run(server, workspace, "One.", pool=warm_cli.pool)
    session = next(e for e in first if isinstance(e, SessionStarted))
    assert session.session_id is not None
    [path] = session_files(warm_cli.home / ".gemini", session.session_id)  # in this test's own project's folder
    data = path.read_bytes()
    if damage == "cut_in_the_prompt":
        prompt_at = data.index(b'"text":"One."')
        content = data[:prompt_at]
    else:
        content = bytes(range(256)) * 40 if damage == "binary" else b""
    path.write_bytes(content)
    events = await run(server, workspace, "Two.", resume=session.short_id, pool=warm_cli.pool)
    assert len(server.requests) == 1, "the resume reached no model"
    error = the_error(events)
    assert error.code == "corrupt_session"
    assert str(path) in error.message
    assert "left unchanged" in error.message
    assert path.read_bytes() == content
    assert list(path.parent.iterdir()) == [path]


@pytest.mark.parametrize("how", ["break", "cancel_scope"])
async def test_leaving_a_run_early_leaves_no_process(workspace: Path, how: str) -> None:
    started = gemini_started()
    async with FakeGemini([SLOW]) as server:
        await leave_at_first_text(params(server, workspace, start_process=started), how)
    assert started.processes
    assert not started.still_running()


async def test_closing_execute_sync_early_leaves_no_process(workspace: Path) -> None:
    """`execute_sync`'s promise: closing its iterator early ends the run's processes before `close()` returns. (An
    `async def` only for the module's `anyio_backend` mark: `execute_sync` runs in a worker thread, off this loop.)"""
    started = gemini_started()

    def run_and_close() -> None:
        with FakeGemini([SLOW]) as server:
            events = execute_sync(params(server, workspace, start_process=started))
            next(event for event in events if isinstance(event, TextDelta))
            events.close()

    await anyio.to_thread.run_sync(run_and_close)
    assert started.processes
    assert not started.still_running()


@pytest.mark.parametrize(
    "options",
    [{"no_such_option": 1}, {"max_retries": 99}, {"transport": "carrier-pigeon"}],
    ids=["unknown", "range", "value"],
)
async def test_a_bad_backend_option_is_a_configuration_error_naming_it(
    workspace: Path, options: dict[str, Any]
) -> None:
    async with FakeGemini() as server:
        events = await run(server, workspace, **options)
        assert server.requests == []
    error = the_error(events)
    assert error.code == "configuration_error"
    assert next(iter(options)) in error.message


@pytest.mark.parametrize("prompt", ["", "  \n"])
async def test_an_empty_prompt_is_refused_before_anything_starts(workspace: Path, prompt: str) -> None:
    with pytest.raises(ConfigurationError, match="the prompt is empty"):
        execute(ExecuteParams(prompt=prompt, backend="gemini-cli", cwd=workspace))
