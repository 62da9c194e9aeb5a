"""Retries, typed errors, cancellation and resume against FakeGemini's fault injection."""

from __future__ import annotations

import base64
import gc
import os

import anyio
import pytest

from tests.e2e.generate_content.gc_harness import Harness, result_of
from tests.hang_guard import HANG_GUARD_S
from unified import execute
from unified._binary.proctable import descendants
from unified.events import ErrorEvent, SessionStarted, TextDelta, UnifiedEvent, WarningEvent
from unified.sessions import short_id_of
from unified.testing._scenario import Fault, FunctionCall, ModelTurn, Thought

pytestmark = pytest.mark.anyio


async def test_rate_limit_honours_retry_info_with_a_warning_per_retry(harness: Harness) -> None:
    harness.server.add(ModelTurn(text="finally"))
    harness.server.inject(Fault(kind="rate_limit", retry_delay="7s"), at_request=0)
    harness.server.inject(Fault(kind="rate_limit", retry_delay="2.5s"), at_request=1)
    events = await harness.run()
    warnings = [e for e in events if isinstance(e, WarningEvent) and e.code == "retrying"]
    assert len(warnings) == 2
    assert "in 0.007s (the server asked 7s; retry_delay_scale=0.001)" in warnings[0].message
    assert "in 0.0025s (the server asked 2.5s; retry_delay_scale=0.001)" in warnings[1].message
    assert result_of(events).status == "success"
    assert len(harness.server.requests_for("generateContentStream")) == 3


async def test_rate_limit_retries_run_out(harness: Harness) -> None:
    for index in range(3):
        harness.server.inject(Fault(kind="rate_limit", retry_delay="1s"), at_request=index)
    events = await harness.run(backend_options={"max_retries": 2})
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "rate_limited"
    assert error.retryable
    assert result_of(events).status == "error"


async def test_rate_limit_longer_than_allowed_stops_at_once(harness: Harness) -> None:
    harness.server.inject(Fault(kind="rate_limit", retry_delay="600s"), at_request=0)
    events = await harness.run()
    assert not any(isinstance(e, WarningEvent) and e.code == "retrying" for e in events)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert "wait 600s" in error.message


async def test_server_error_before_output_is_retried(harness: Harness) -> None:
    harness.server.add(ModelTurn(text="recovered", fault=Fault(kind="unavailable")))
    events = await harness.run()
    assert any(isinstance(e, WarningEvent) and e.code == "retrying" for e in events)
    assert result_of(events).final_text == "recovered"


async def test_mid_stream_error_after_output_is_a_typed_error(harness: Harness) -> None:
    harness.server.add(
        ModelTurn(text="partial answer here", text_chunks=3, fault=Fault(kind="mid_stream_error", after=2))
    )
    events = await harness.run()
    assert "".join(e.text for e in events if isinstance(e, TextDelta))
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "backend_error"
    assert error.fatal
    assert result_of(events).status == "error"
    assert len(harness.server.requests_for("generateContentStream")) == 1  # shown output is never replayed


async def test_mid_stream_error_before_output_is_retried(harness: Harness) -> None:
    harness.server.add(
        ModelTurn(text="first", fault=Fault(kind="mid_stream_error", after=0)),
        ModelTurn(text="second try"),
    )
    result = result_of(await harness.run())
    assert result.status == "success"
    assert result.final_text == "second try"


async def test_dropped_stream_after_output_is_a_typed_error(harness: Harness) -> None:
    harness.server.add(ModelTurn(text="abcdef", text_chunks=3, fault=Fault(kind="cut_stream", after=1)))
    events = await harness.run()
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "stream_interrupted"
    assert result_of(events).status == "error"


async def test_dropped_stream_before_output_is_retried(harness: Harness) -> None:
    harness.server.add(
        ModelTurn(text="lost", fault=Fault(kind="cut_stream", after=0)),
        ModelTurn(text="whole"),
    )
    result = result_of(await harness.run())
    assert result.final_text == "whole"


async def test_cancellation_ends_with_cancelled(harness: Harness) -> None:
    harness.server.add(ModelTurn(text="slow " * 20, text_chunks=20, chunk_delay=0.05))
    events: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with execute(harness.params()) as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, TextDelta):
                    stream.cancel()
    result = result_of(events)
    assert result.status == "cancelled"
    assert len([e for e in events if isinstance(e, TextDelta)]) < 20


async def test_resume_by_short_id_resends_the_history(harness: Harness) -> None:
    harness.server.add(
        ModelTurn(
            thoughts=[Thought(text="**Plan**\n\nlist it", signature="sig-1")],
            function_calls=[FunctionCall(name="list_dir", args={"dir_path": "."}, id="c1", signature="sig-2")],
        ),
        ModelTurn(text="The directory is empty.", text_signature="sig-3"),
        ModelTurn(text="You asked about the directory."),
    )
    first = await harness.run("what is here?", model="gemini-3-flash-preview")
    started = first[0]
    assert isinstance(started, SessionStarted)
    assert started.session_id is not None
    short = short_id_of(started.session_id)
    assert result_of(first).short_id == short
    second = await harness.run("what did I ask?", resume=short, model=None)
    again = second[0]
    assert isinstance(again, SessionStarted)
    assert again.resumed
    assert again.session_id == started.session_id
    assert again.model == "gemini-3-flash-preview"  # the session's model, when none is given
    first_history = harness.bodies()[1]["contents"]
    resumed = harness.bodies()[2]["contents"]
    assert resumed[: len(first_history)] == first_history
    assert resumed[len(first_history)]["parts"][0]["thoughtSignature"] == base64.b64encode(b"sig-3").decode()
    assert resumed[-1] == {"role": "user", "parts": [{"text": "what did I ask?"}]}
    assert result_of(second).final_text == "You asked about the directory."


async def test_resume_of_unknown_session_is_a_typed_error(harness: Harness) -> None:
    events = await harness.run(resume="deadbeef")
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "session_not_found"


@pytest.mark.parametrize(
    ("kind", "message", "code", "hint"),
    [
        ("bad_request", "API key not valid. Please pass a valid API key.", "auth_error", "GEMINI_API_KEY"),
        ("unauthenticated", None, "auth_error", "GEMINI_API_KEY"),
        ("permission_denied", None, "auth_error", "Vertex AI permissions"),
        ("not_found", None, "model_not_found", "check the model name"),
        (
            "bad_request",
            "Function call is missing a thought_signature in functionCall parts.",
            "missing_thought_signature",
            "thought signature",
        ),
        ("bad_request", "Invalid value at 'generation_config.temperature'", "bad_request", "fix the request"),
    ],
)
async def test_client_errors_are_not_retried_and_say_what_to_fix(
    harness: Harness, kind: str, message: str | None, code: str, hint: str
) -> None:
    harness.server.add(ModelTurn(text="never", fault=Fault.model_validate({"kind": kind, "message": message})))
    events = await harness.run()
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert (error.code, error.fatal, error.retryable) == (code, True, False)
    assert hint in error.message
    assert not any(isinstance(e, WarningEvent) and e.code == "retrying" for e in events)
    assert len(harness.server.requests_for("generateContentStream")) == 1  # asked once, not retried
    assert result_of(events).status == "error"


async def test_vertex_express_mode_with_an_api_key(harness: Harness) -> None:
    harness.server.add(ModelTurn(text="from vertex"))
    events = await harness.run(backend_options={"vertexai": True})
    assert result_of(events).final_text == "from vertex"
    [request] = harness.server.requests_for("generateContentStream")
    assert "/publishers/google/models/gemini-2.5-flash:streamGenerateContent" in request.path


async def test_vertex_without_credentials_says_how_to_get_them(harness: Harness, anyio_backend: str) -> None:
    events = await harness.run(backend_options={"vertexai": True, "api_key": "", "project": "p"})
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.fatal
    # On either loop the missing credentials are said first (on trio they would also need asyncio).
    assert error.code == "auth_error"
    assert "Application Default Credentials" in error.message
    assert "gcloud auth application-default login" in error.message
    assert harness.server.requests == []  # nothing was sent without credentials


async def test_a_bare_async_for_left_during_a_shell_call_and_dropped_ends_the_shell(harness: Harness) -> None:
    pid_file = harness.workspace / "pid"
    command = f"echo $$ > {pid_file}; exec sleep 60"
    harness.server.add(ModelTurn(function_calls=[FunctionCall(name="run_shell_command", args={"command": command})]))
    with anyio.fail_after(HANG_GUARD_S):
        with anyio.CancelScope():  # the caller's own scope, left after the break
            stream = execute(harness.params(approval_mode="yolo"))
            async for event in stream:  # no `async with`, no aclose()
                if event.type == "tool_use":
                    break
        while not pid_file.exists() or not pid_file.read_text().strip():  # noqa: ASYNC110 -- the shell's own file
            await anyio.sleep(0.01)
        pid = int(pid_file.read_text())
        assert pid in {p for p, _ in descendants(os.getpid())}  # the run goes on while the caller holds it
        del stream
        gc.collect()
        while pid in {p for p, _ in descendants(os.getpid())}:  # noqa: ASYNC110 -- polling /proc: dropped, the run ends its shell
            await anyio.sleep(0.01)
