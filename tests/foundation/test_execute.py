"""The public entry points: execute(), execute_sync(), lazy backends, and errors as events."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import unified
from unified import ConfigurationError, ExecuteParams, execute, execute_sync
from unified.events import ErrorEvent, Result, SessionStarted, TextDelta
from unified.testing._scripted import EndMessage, ScriptedBackend
from unified.types import Fallback


@pytest.mark.anyio
async def test_execute_runs_the_scripted_backend_through_the_registry(tmp_path: Path) -> None:
    events = [e async for e in execute(prompt="hello", backend="scripted", cwd=tmp_path)]
    assert isinstance(events[0], SessionStarted)
    assert events[0].cwd == str(tmp_path)
    assert events[0].capabilities["streaming_text"] == "full"  # filled from the capability matrix
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert "hello" in result.final_text
    assert result.usage.output_tokens == 17


@pytest.mark.anyio
async def test_a_script_passed_in_backend_options_is_played() -> None:
    script = ScriptedBackend([SessionStarted(backend="scripted", session_id="s"), TextDelta(text="hi"), EndMessage()])
    events = [e async for e in execute(prompt="x", backend="scripted", backend_options={"script": script})]
    assert [e.type for e in events] == ["session_started", "text_delta", "assistant_message", "result"]


@pytest.mark.anyio
async def test_an_unknown_backend_is_an_error_event_not_an_exception() -> None:
    params = ExecuteParams.model_construct(**{**ExecuteParams(prompt="x").__dict__, "backend": "telepathy"})
    events = [e async for e in unified.EventStream(params)]
    assert [e.type for e in events] == ["error", "result"]
    error = events[0]
    assert isinstance(error, ErrorEvent)
    assert "unknown backend 'telepathy'" in error.message
    assert "gemini-cli" in error.message  # says what to choose instead


@pytest.mark.anyio
@pytest.mark.parametrize("fallback", [("telepathy",), (Fallback(backend="telepathy"),)])
async def test_an_unknown_fallback_backend_is_an_error_before_the_run_not_after_it_gave_out(
    fallback: tuple[str | Fallback, ...], tmp_path: Path
) -> None:
    params = ExecuteParams(prompt="x", backend="scripted", cwd=tmp_path, fallback=fallback)
    events = [e async for e in unified.EventStream(params)]
    assert [e.type for e in events] == ["error", "result"]  # the scripted backend never ran
    error = events[0]
    assert isinstance(error, ErrorEvent)
    assert error.code == "configuration_error"
    assert "fallback names an unknown backend 'telepathy'" in error.message
    assert "gemini-cli" in error.message  # says what to choose instead


def test_execute_sync_streams_events_in_order() -> None:
    events = list(execute_sync(prompt="sync please", backend="scripted"))
    assert [e.seq for e in events] == list(range(len(events)))
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"


def test_execute_sync_can_stop_early() -> None:
    stream = execute_sync(prompt="x", backend="scripted")
    first = next(stream)
    stream.close()
    assert first.type == "session_started"


@pytest.mark.anyio
async def test_execute_sync_inside_a_running_event_loop_says_so_instead_of_blocking_it() -> None:
    with pytest.raises(ConfigurationError) as caught:
        next(execute_sync(prompt="x", backend="scripted"))
    assert "inside a running" in caught.value.message
    assert "async with execute(params)" in (caught.value.hint or "")
    # a worker thread of that loop runs no loop: there it works
    events = await anyio.to_thread.run_sync(lambda: list(execute_sync(prompt="x", backend="scripted")))
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"


def test_execute_sync_refuses_bad_input_when_called_not_at_the_first_event(tmp_path: Path) -> None:
    """As `execute()` does, and as its docstring says: the body of a generator ran only at `next()`."""
    with pytest.raises(ConfigurationError, match="the prompt is empty"):
        execute_sync(prompt="  ", backend="scripted")
    with pytest.raises(ConfigurationError, match="does not exist"):
        execute_sync(prompt="hi", backend="scripted", cwd=tmp_path / "missing")


@pytest.mark.anyio
async def test_execute_sync_called_inside_a_running_loop_raises_at_the_call() -> None:
    with pytest.raises(ConfigurationError, match="inside a running"):
        execute_sync(prompt="x", backend="scripted")


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"max_turns": 0}, "greater than or equal to 1"),
        ({"approval_mode": "sometimes"}, "'default', 'auto_edit', 'yolo' or 'plan'"),
        ({"bogus": 1}, "Extra inputs are not permitted"),
    ],
)
def test_fields_given_beside_params_are_validated_as_params_are(fields: dict[str, object], problem: str) -> None:
    """`execute(params, **fields)` ran `max_turns=0` and unknown fields as given (model_copy validates nothing)."""
    from pydantic import ValidationError

    params = ExecuteParams(prompt="hi", backend="scripted")
    with pytest.raises(ValidationError, match=problem):
        execute(params, **fields)
    with pytest.raises(ValidationError, match=problem):
        execute_sync(params, **fields)


def test_fields_given_beside_params_replace_them_in_both_entry_points(tmp_path: Path) -> None:
    """`execute_sync(params, prompt=...)` ran `params` alone; `execute(params, cwd="dir")` failed as an
    AttributeError ('str' object has no attribute 'expanduser') where a `Path` was expected."""
    params = ExecuteParams(prompt="first", backend="scripted")
    events = list(execute_sync(params, prompt="second", cwd=str(tmp_path)))
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert started.cwd == str(tmp_path)
    assert isinstance(events[-1], Result)
    assert "You asked: 'second'" in events[-1].final_text

    async def run() -> tuple[str, str]:
        async with execute(params, cwd=str(tmp_path)) as stream:
            done = [event async for event in stream]
        first, last = done[0], done[-1]
        assert isinstance(first, SessionStarted)
        assert isinstance(last, Result)
        return str(first.cwd), last.final_text

    cwd, text = anyio.run(run)
    assert (cwd, "You asked: 'first'" in text) == (str(tmp_path), True)


@pytest.mark.e2e  # runs a real subprocess
def test_import_unified_stays_light() -> None:
    code = (
        "import sys, json, unified, unified.events, unified.types;"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('google', 'acp', 'mcp', 'httpx', 'rich', 'typer'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


BACKENDS = ["gemini-cli", "generate-content", "interactions", "claude-code", "codex", "scripted", "auto"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"cwd": Path("/nonexistent/unified-cwd")}, "cwd /nonexistent/unified-cwd does not exist"),
        ({"cwd": Path(__file__)}, "is not a directory"),
        ({"include_directories": (Path("/nonexistent/unified-inc"),)}, "entry /nonexistent/unified-inc does not exist"),
        ({"include_directories": (Path(__file__),)}, "include_directories entry .* is not a directory"),
        (
            {"prompt": "hi \ud800 there"},
            r"the prompt is not text: it holds a lone surrogate \(U\+D800\) at character 3",
        ),
        ({"system_instruction": "\udcff"}, "the system instruction is not text"),
        ({"model": "../../etc/passwd"}, "is not a model name"),
        ({"model": "gemini-2.5-flash?alt=sse"}, "is not a model name"),
        ({"model": "gemini 2.5"}, "is not a model name"),
        ({"model": " "}, "is not a model name"),
        ({"prompt": ""}, "the prompt is empty"),
        ({"prompt": "  \n\t"}, "the prompt is empty"),
        ({"resume": ""}, "the session reference \\(resume\\) is empty"),
        ({"resume": " "}, "the session reference \\(resume\\) is empty"),
        ({"images": (unified.ImageInput(mime_type="image/png", data=b""),)}, r"image 1 is empty \(0 bytes\)"),
        (
            {"images": (unified.ImageInput(mime_type="image/png", data=b"GIF89a\x01\x00\x01\x00"),)},
            "image 1 says it is image/png but its bytes are image/gif",
        ),
    ],
)
def test_every_backend_rejects_what_no_backend_can_run_before_it_starts(
    backend: str, fields: dict[str, object], message: str, tmp_path: Path
) -> None:
    params = ExecuteParams(**{"prompt": "hi", "cwd": tmp_path, "backend": backend, **fields})
    with pytest.raises(unified.ConfigurationError, match=message) as caught:
        execute(params)
    assert caught.value.hint  # says what to do
    with pytest.raises(unified.ConfigurationError, match=message):
        list(execute_sync(params))


def test_a_prompt_of_images_only_is_allowed(tmp_path: Path) -> None:
    image = unified.ImageInput(mime_type="image/png", data=b"\x89PNG\r\n\x1a\n")
    stream = execute(ExecuteParams(prompt="", images=(image,), backend="scripted", cwd=tmp_path))
    assert stream.params.images == (image,)


@pytest.mark.e2e  # runs a real subprocess
def test_the_command_line_loads_no_pydantic_to_build_its_help() -> None:
    """`unified --help` builds the whole command line; the run machinery, the protocol, the matrix and
    the registry (and so pydantic, ~110 ms) load only in the commands that use them, and rich (its
    console ~40 ms, its help renderer ~70 ms) only in the commands that print with it."""
    code = (
        "import sys, json, contextlib, io\n"
        "from unified._cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    code = main(['--help'])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'google', 'httpx', 'rich'))\n"
        "print(json.dumps([code, heavy]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == [0, []]


def test_the_approval_choices_of_the_command_line_are_the_types() -> None:
    from typing import get_args

    from unified._cli.main import APPROVAL_CHOICES
    from unified.types import ApprovalMode

    assert get_args(ApprovalMode) == APPROVAL_CHOICES
