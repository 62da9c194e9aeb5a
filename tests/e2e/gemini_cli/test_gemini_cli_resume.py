"""Resume by short id through ACP `session/load`, with the real binary; the conversation survives both CLI bugs.

Both bugs come from the fresh `session-<current minute>-<id8>.jsonl` record the CLI starts before
it looks a session up: in the session's own minute it overwrites the history (the load then fails
with "No previous sessions found"), in a later minute it is an empty duplicate that the next
start's cleanup answers by deleting the session. Each test reproduces one condition, then checks
every message is in the file and that a real later start, with cleanup on, deletes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import (
    LOCAL_BINARY,
    Run,
    kinds,
    later_start_with_cleanup,
    stream_line,
    text,
)
from unified._adapters.gemini_cli import AcpPool
from unified._adapters.gemini_cli._chat_files import ChatFiles, read_chat, session_files
from unified.events import Result, SessionStarted, UnifiedEvent, WarningEvent

pytestmark = pytest.mark.anyio
Responses = Callable[..., Path]


def conversation(path: Path) -> list[str]:
    """The prompts and answers in a chat file, in order (the CLI's preamble left out)."""
    found = []
    for message in read_chat(path).messages:
        content = message.get("content")
        value = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
        if not value.startswith("<session_context>"):
            found.append(value)
    return found


def result_of(events: list[UnifiedEvent]) -> Result:
    result = events[-1]
    assert isinstance(result, Result)
    return result


async def first_session(run_gemini: Run, responses: Responses) -> SessionStarted:
    events = await run_gemini(responses(stream_line(text("first answer"))), prompt="remember 42")
    started = events[0]
    assert isinstance(started, SessionStarted)
    return started


async def resume(
    run_gemini: Run, responses: Responses, ref: str, answer: str, prompt: str, **fields: object
) -> list[UnifiedEvent]:
    events: list[UnifiedEvent] = await run_gemini(
        responses(stream_line(text(answer))), prompt=prompt, resume=ref, **fields
    )
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", answer)
    return events


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the trio run is the test below
async def test_same_minute_load_keeps_every_message(
    run_gemini: Run, responses: Responses, isolated_home: Path, workspace: Path
) -> None:
    """Bug 1: `session/load` in the session's creation minute (twice, by a 6-character prefix)."""
    started = await first_session(run_gemini, responses)
    home = isolated_home / ".gemini"
    assert started.short_id is not None
    assert started.session_id is not None

    second = await resume(run_gemini, responses, started.short_id[:6], "still 42", "what was it?")
    resumed = next(e for e in second if isinstance(e, SessionStarted))
    assert (resumed.session_id, resumed.resumed, resumed.transport) == (started.session_id, True, "acp")
    # The replayed history is not re-emitted: only this run's answer.
    assert kinds(second)[-4:] == ["session_started", "text_delta", "assistant_message", "result"]
    # The duplicate the load made is removed unsaid (bad input round 16: every resume warned of it).
    assert [e.message for e in second if isinstance(e, WarningEvent) and e.code == "session_repaired"] == []
    await resume(run_gemini, responses, started.short_id, "yes, 42", "sure?")

    [path] = session_files(home, started.session_id)
    assert conversation(path) == ["remember 42", "first answer", "what was it?", "still 42", "sure?", "yes, 42"]
    await later_start_with_cleanup(home, workspace)
    assert session_files(home, started.session_id) == [path]
    assert ChatFiles().resolve(started.short_id, str(workspace)).first_prompt == "remember 42"


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_load_in_a_later_minute_leaves_no_empty_duplicate(
    run_gemini: Run, responses: Responses, isolated_home: Path, workspace: Path
) -> None:
    """Bug 2: the session is from an earlier minute, so the CLI writes an empty duplicate of it, on each
    transport's resume in turn (the file keeps its earlier minute: the second resume meets the bug again). One
    session and one later start serve both transports: each resume is the condition, not the session's start."""
    started = await first_session(run_gemini, responses)
    home = isolated_home / ".gemini"
    assert started.session_id is not None
    assert started.short_id is not None
    [path] = session_files(home, started.session_id)
    earlier = datetime.now(UTC) - timedelta(minutes=5)
    path = path.rename(path.with_name(f"session-{earlier:%Y-%m-%dT%H-%M}-{started.short_id}.jsonl"))

    said = ["remember 42", "first answer"]
    for transport in ("acp", "stream-json"):
        prompt, answer = f"what, over {transport}?", f"still 42 over {transport}"
        events = await resume(
            run_gemini, responses, started.short_id, answer, prompt, backend_options={"transport": transport}
        )
        assert next(e for e in events if isinstance(e, SessionStarted)).transport == transport
        assert [e.message for e in events if isinstance(e, WarningEvent) and e.code == "session_repaired"] == []
        assert session_files(home, started.session_id) == [path]
        said += [prompt, answer]
        assert conversation(path) == said
    await later_start_with_cleanup(home, workspace)
    assert conversation(path) == said


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_empty_duplicate_left_by_session_new_is_removed_by_the_next_load(
    run_gemini: Run, responses: Responses, isolated_home: Path, workspace: Path
) -> None:
    """`session/new` records a new session twice (the CLI's `config.initialize()` starts a chat, then `newSession`
    another, 3 ms apart here), each in the file of the minute it runs in, and the conversation goes to the first: a
    minute boundary between the two leaves the second recording (its header and checkpoint, no message) in the next
    minute (3 of 20 new sessions with the CLI's clock run 2000 times fast). The next load removes it: it used to
    outlive every resume (only the load's own duplicate was removed), as in the CI run that found two files after
    the third run of the same-minute test, and the CLI's next start with cleanup takes a session with an empty
    duplicate for a corrupt one."""
    started = await first_session(run_gemini, responses)
    home = isolated_home / ".gemini"
    assert started.session_id is not None
    assert started.short_id is not None
    [path] = session_files(home, started.session_id)
    second_recording = path.read_text().splitlines()[2:4]  # the header and checkpoint `newSession`'s chat wrote
    assert '"sessionId"' in second_recording[0]
    earlier = datetime.now(UTC) - timedelta(minutes=5)
    path = path.rename(path.with_name(f"session-{earlier:%Y-%m-%dT%H-%M}-{started.short_id}.jsonl"))
    duplicate = path.with_name(f"session-{earlier + timedelta(minutes=1):%Y-%m-%dT%H-%M}-{started.short_id}.jsonl")
    duplicate.write_text("\n".join(second_recording) + "\n")
    assert (sorted(session_files(home, started.session_id)), conversation(duplicate)) == (sorted([path, duplicate]), [])

    events = await resume(run_gemini, responses, started.short_id, "still 42", "what?")
    assert [e.message for e in events if isinstance(e, WarningEvent) and e.code == "session_repaired"] == []
    assert session_files(home, started.session_id) == [path]
    await later_start_with_cleanup(home, workspace)
    assert conversation(path) == ["remember 42", "first answer", "what?", "still 42"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_resume_in_the_warm_process_that_created_the_session(
    run_gemini: Run, responses: Responses, isolated_home: Path
) -> None:
    """`session/load` uses its `cwd` parameter, so one warm process (started elsewhere) serves both runs."""
    fake = responses(stream_line(text("same script")))  # every session plays the file from its start
    pool = AcpPool(size=1)
    try:
        options = {"pool": pool}
        first = await run_gemini(fake, prompt="remember 7", backend_options=options)
        started = first[0]
        assert isinstance(started, SessionStarted)
        assert started.session_id is not None
        events = await run_gemini(fake, prompt="and now?", resume=started.short_id, backend_options=options)
        assert next(e for e in events if isinstance(e, SessionStarted)).resumed
        assert result_of(events).final_text == "same script"
        assert pool.spawned == 1
    finally:
        await pool.aclose()
    [path] = session_files(isolated_home / ".gemini", started.session_id)
    assert conversation(path) == ["remember 7", "same script", "and now?", "same script"]


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])  # no process starts: both loops cost nothing
async def test_unknown_short_id_fails_before_any_process_starts(tmp_path: Path) -> None:
    from unified import ExecuteParams, execute

    pool = AcpPool(size=1)
    params = ExecuteParams(
        prompt="again",
        backend="gemini-cli",
        cwd=tmp_path,
        resume="zzzz9999",
        backend_options={"gemini_binary": str(LOCAL_BINARY), "pool": pool},
    )
    async with execute(params) as stream:
        events = [e async for e in stream]
    assert kinds(events) == ["error", "result"]
    error = events[0]
    assert error.type == "error"
    assert error.code == "session_not_found"
    assert "unified sessions list" in error.message
    assert pool.spawned == 0
