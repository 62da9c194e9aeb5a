"""Bad input for the codex backend, as an outside suite would feed it: a binary that cannot run or prints
garbage, an app-server killed mid-stream, provider failures test_codex_run.py leaves out (400, 403, 404, an
empty or unfinished stream, an error chunk), a damaged rollout, a run left early, bad parameters. Each ends
as a typed error (or a clean `cancelled`) saying what happened, with no process left behind and no rollout
deleted or rewritten. The real pinned `codex` runs against FakeOpenAI; a shell script stands in for it only
for what it cannot be made to do (tests/e2e/bad_binaries.py), started by the backend's own `start_codex`."""

from __future__ import annotations

import os
from pathlib import Path

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
from tests.e2e.codex.conftest import codex_params, run_codex
from unified import execute, execute_sync
from unified._adapters.codex._launch import codex_home, native_binary, start_codex
from unified._adapters.codex._options import CodexOptions
from unified.errors import ConfigurationError
from unified.events import Result, SessionStarted, TextDelta, WarningEvent
from unified.testing import FakeOpenAI, Fault, ModelTurn
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


def codex_started(binary: Path | None = None) -> Started:
    """`start_codex` on `binary` (default: the pinned one's native binary)."""
    return Started(start_codex, binary or native_binary(Path(os.environ["UNIFIED_CODEX_BIN"])))


def rollout(session_id: str | None) -> Path:
    assert session_id is not None
    [path] = [
        p
        for p in codex_home(CodexOptions(), dict(os.environ)).glob("sessions/*/*/*/rollout-*.jsonl")
        if session_id in p.name
    ]
    return path


@pytest.mark.parametrize("kind", list(BROKEN))
async def test_a_binary_that_cannot_run_is_backend_unavailable_saying_what_is_wrong(
    workspace: Path, tmp_path: Path, kind: str
) -> None:
    """Was broken for a directory and a file without its `x` bit: "could not run ... --version: Permission
    denied", which names neither."""
    binary = broken_binary(tmp_path / "bin", "codex", kind)
    async with FakeOpenAI([ModelTurn(text="never")]) as server:
        events = await run_codex(server, workspace, options={"codex_binary": binary, "pool_size": 0})
        assert server.requests == []
    error = the_error(events)
    assert (error.code, error.fatal) == ("backend_unavailable", True)
    assert str(binary) in error.message
    assert BROKEN[kind] in error.message
    assert "unified install codex" in error.message  # what to do


@pytest.mark.parametrize(
    ("body", "said"),
    [(GARBAGE_LINES + "exit 0\n", "exit status 0"), ("exit 0\n", "exit status 0")],
    ids=["garbage", "silent"],
)
async def test_an_app_server_that_exits_0_without_answering_is_a_backend_error(
    workspace: Path, tmp_path: Path, body: str, said: str
) -> None:
    """Was "codex app-server exited during the run (...)" with no hint, for a process that never answered
    `initialize`, and its garbage lines were never warned of (read while the run waited for that answer)."""
    started = codex_started(script_binary(tmp_path / "bin", "codex", "codex-cli 0.171.0", body))
    async with FakeOpenAI([ModelTurn(text="never")]) as server:
        events = await run_codex(server, workspace, options={"start_process": started, "pool_size": 0})
        assert server.requests == []
    malformed = [e for e in events if isinstance(e, WarningEvent) and e.code == "malformed_line"]
    if body.startswith("exit"):
        assert malformed == []
    else:  # no JSON, not UTF-8, no object, over the cap; the wrong-shape object is read past
        assert len(malformed) == 4, [w.message for w in malformed]
    error = the_error(events)
    assert error.code == "backend_error"
    assert "codex app-server exited before it answered initialize" in error.message
    assert said in error.message
    assert "unified doctor" in error.message  # what to do
    assert not started.still_running()


async def test_an_app_server_killed_mid_stream_is_a_backend_error_and_its_thread_resumes(workspace: Path) -> None:
    started = codex_started()
    async with FakeOpenAI([SLOW, ModelTurn(text="Resumed.")]) as server:
        params = codex_params(server, workspace, options={"start_process": started, "pool_size": 0})
        events = await killed_at_first_text(params, started)
        error = the_error(events)
        thread = next(e for e in events if isinstance(e, SessionStarted))
        again = await run_codex(server, workspace, "Go on.", resume=thread.short_id)
    assert error.code == "backend_error"
    assert "killed by signal 9 (SIGKILL" in error.message
    assert not started.still_running()
    last = again[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Resumed.")


@pytest.mark.parametrize(
    ("fault", "code", "retryable", "said"),
    [
        (Fault(kind="bad_request"), "bad_request", False, "refused the request: Invalid request."),
        (Fault(kind="not_found"), "model_not_found", False, "does not exist"),
        (Fault(kind="permission_denied"), "auth_error", False, "refused the credentials"),
        (Fault(kind="empty_stream"), "stream_interrupted", True, "stream closed before response.completed"),
        (Fault(kind="no_finish"), "stream_interrupted", True, "stream closed before response.completed"),
        (Fault(kind="mid_stream_error", after=2), "stream_interrupted", True, "had an error"),
    ],
    ids=["400", "404", "403", "empty-stream", "no-finish", "error-chunk"],
)
async def test_a_provider_failure_is_typed_and_says_what_happened(
    workspace: Path, fault: Fault, code: str, retryable: bool, said: str
) -> None:
    """400 and 404 were broken: `backend_error` "codex: {"error": {"message": "Invalid request.", ...}}" (the
    provider's body verbatim) and "codex: The model does not exist ...": Codex 0.171 reports them as
    `codexErrorInfo` `other` and `modelNotFound`, with no HTTP status."""
    async with FakeOpenAI([ModelTurn(text="Never seen in full.", text_chunks=4, fault=fault)]) as server:
        events = await run_codex(server, workspace)
    error = the_error(events)
    assert (error.code, error.retryable, error.fatal) == (code, retryable, True), error.message
    assert said in error.message
    assert '{"error"' not in error.message


async def test_a_truncated_rollout_resumes_from_what_is_left_and_keeps_its_bytes(workspace: Path) -> None:
    async with FakeOpenAI([ModelTurn(text="First."), ModelTurn(text="Second.")]) as server:
        thread = next(e for e in await run_codex(server, workspace, "One.") if isinstance(e, SessionStarted))
        path = rollout(thread.session_id)
        data = path.read_bytes()
        first = data.index(b"\n") + 1  # the thread's meta line, with Codex's whole base prompt, stays whole
        cut = data[: first + (len(data) - first) * 2 // 3]
        assert not cut.endswith(b"\n")
        path.write_bytes(cut)
        events = await run_codex(server, workspace, "Two.", resume=thread.short_id)
    last = events[-1]
    assert isinstance(last, Result)
    assert (last.status, last.final_text) == ("success", "Second."), last.error
    assert path.read_bytes().startswith(cut), "Codex appends; nothing before is rewritten"


async def test_a_rollout_of_garbage_is_corrupt_session_and_kept_as_it_is(workspace: Path) -> None:
    """One thread (one app-server start), its rollout replaced by each garbage in turn."""
    garbage = {"binary": bytes(range(256)) * 40, "empty": b""}
    async with FakeOpenAI([ModelTurn(text="First."), ModelTurn(text="never")]) as server:
        thread = next(e for e in await run_codex(server, workspace, "One.") if isinstance(e, SessionStarted))
        path = rollout(thread.session_id)
        for name, content in garbage.items():
            path.write_bytes(content)
            events = await run_codex(server, workspace, "Two.", resume=thread.short_id)
            assert len(server.model_requests()) == 1, f"{name}: the resume reached no model"
            error = the_error(events)
            assert error.code == "corrupt_session", (name, error.message)
            assert str(path) in error.message, name
            assert "left unchanged" in error.message, name
            assert path.read_bytes() == content, name


@pytest.mark.parametrize("pool_size", [0, 1])
@pytest.mark.parametrize("how", ["break", "cancel_scope"])
async def test_leaving_a_run_early_leaves_no_process(workspace: Path, how: str, pool_size: int) -> None:
    """With a pool too: a process whose run was left early is retired, never kept warm."""
    started = codex_started()
    async with FakeOpenAI([SLOW]) as server:
        options = {"start_process": started, "pool_size": pool_size}
        await leave_at_first_text(codex_params(server, workspace, options=options), how)
    assert started.processes
    assert not started.still_running()


def test_closing_execute_sync_early_leaves_no_process(workspace: Path) -> None:
    """`execute_sync`'s promise: closing its iterator early ends the run's processes before `close()` returns (a
    process whose run was left early is never kept warm)."""
    started = codex_started()
    with FakeOpenAI([SLOW]) as server:
        events = execute_sync(codex_params(server, workspace, options={"start_process": started, "pool_size": 1}))
        next(event for event in events if isinstance(event, TextDelta))
        events.close()
    assert started.processes
    assert not started.still_running()


@pytest.mark.parametrize(
    "options",
    [{"no_such_option": 1}, {"pool_size": "two"}, {"web_search": "always"}],
    ids=["unknown", "type", "value"],
)
async def test_a_bad_backend_option_is_a_configuration_error_naming_it(workspace: Path, options: dict) -> None:  # type: ignore[type-arg]
    async with FakeOpenAI() as server:
        events = await run_codex(server, workspace, options=options)
        assert server.requests == []
    error = the_error(events)
    assert error.code == "configuration_error"
    assert next(iter(options)) in error.message


@pytest.mark.parametrize("prompt", ["", "  \n"])
def test_an_empty_prompt_is_refused_before_anything_starts(workspace: Path, prompt: str) -> None:
    with pytest.raises(ConfigurationError, match="the prompt is empty"):
        execute(ExecuteParams(prompt=prompt, backend="codex", cwd=workspace))


def noise_png(width: int, height: int) -> bytes:
    """A valid RGB PNG of random pixels (incompressible: about width x height x 3 bytes)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + os.urandom(width * 3) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows, 0)) + chunk(b"IEND", b"")


async def test_a_large_image_reaches_the_model_without_a_warning_about_codex_echoing_it(workspace: Path) -> None:
    """Codex echoes the run's own user message (`item/started`, `item/completed`) with each image inlined again
    as its data URL: a 10 MB image made both lines longer than the framing's cap, and the run warned twice of
    `malformed_line`s it never needed. The model still gets the image."""
    from unified.types import ImageInput

    png = noise_png(1800, 1800)
    assert len(png) > 9_000_000
    async with FakeOpenAI([ModelTurn(text="seen")]) as server:
        images = (ImageInput(mime_type="image/png", data=png),)
        events = await run_codex(server, workspace, "what is this?", images=images)
        sent = "".join(str(request.body) for request in server.requests)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert [e.message for e in events if isinstance(e, WarningEvent)] == []
    assert "'type': 'input_image'" in sent  # the image went to the model
    assert "could not be processed" not in sent


async def test_an_image_codex_cannot_decode_is_a_warning_naming_it(workspace: Path) -> None:
    """Codex sends the model "image content omitted because it could not be processed" in place of an image it
    cannot decode, and tells the client nothing: the caller saw a plain success. Now `image_omitted` names it;
    the whole image beside it went to the model, and the run goes on."""
    from unified.types import ImageInput

    broken = ImageInput(mime_type="image/png", data=b"\x89PNG\r\n\x1a\n" + b"not the rest of a png" * 4)
    whole = ImageInput(mime_type="image/png", data=noise_png(4, 4))
    async with FakeOpenAI([ModelTurn(text="seen")]) as server:
        events = await run_codex(server, workspace, "what are these?", images=(whole, broken))
        sent = "".join(str(request.body) for request in server.requests)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["image_omitted"]
    assert "image 2 of 2: image content omitted because it could not be processed" in warnings[0].message
    assert "could not be processed" in sent  # what the model got in its place
    assert sent.count("'type': 'input_image'") == 1
    assert events.index(warnings[0]) < len(events) - 1
