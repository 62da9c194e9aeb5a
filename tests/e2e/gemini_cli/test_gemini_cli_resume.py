"""Resume by short id with the real binary; the conversation survives the CLI's resume bugs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from gemini_cli_helpers import Run, stream_line, text

from unified.adapters.gemini_cli.sessions import GeminiSessionLocator, conversation_size, session_files
from unified.events import Result, SessionStarted

pytestmark = pytest.mark.anyio


async def test_resume_by_short_id_keeps_the_conversation(
    run_gemini: Run, responses: Callable[..., Path], isolated_home: Path, workspace: Path
) -> None:
    first = await run_gemini(responses(stream_line(text("first answer"))), prompt="remember 42")
    started = first[0]
    assert isinstance(started, SessionStarted)
    assert started.short_id is not None
    home = isolated_home / ".gemini"
    [original] = session_files(home, started.session_id or "")
    size_before = conversation_size(original)

    # Same minute as the creation, and a short prefix the CLI itself would reject (exit 42).
    second = await run_gemini(
        responses(stream_line(text("still 42"))), prompt="what was it?", resume=started.short_id[:6]
    )
    resumed = next(e for e in second if isinstance(e, SessionStarted))
    assert resumed.session_id == started.session_id
    assert resumed.resumed
    result = second[-1]
    assert isinstance(result, Result)
    assert result.status == "success"
    assert result.final_text == "still 42"

    # One file, holding both exchanges: no empty duplicate left for the CLI's cleanup to trip on.
    assert session_files(home, started.session_id or "") == [original]
    assert conversation_size(original) == size_before + 2
    listed = GeminiSessionLocator().resolve(started.short_id, str(workspace))
    assert listed.first_prompt == "remember 42"
