"""A request larger than the model's context window, on the pinned binary over ACP: the CLI counts its tokens
(`countTokens`: FakeGemini answers an estimate, a quarter of the body's bytes), finds it over the window
(gemini-2.5-flash: 1,048,576) and never sends it; its ACP agent ends the turn `max_tokens`, the one thing 0.61
says it for. It read "the answer was cut at the model's output token limit", a success with no answer; it is
a `bad_request` error saying what happened and what to do. Fails on the code before."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified import execute
from unified.events import ErrorEvent, Result
from unified.testing import FakeGemini, ModelTurn
from unified.testing._wiring import backend_options_for
from unified.types import ImageInput

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 5_000_000  # 6.7 MB of base64: ~1.7 million estimated tokens


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_request_over_the_context_window_is_a_clear_error_not_a_cut_answer(
    workspace: Path, isolated_home: Path
) -> None:
    async with FakeGemini([ModelTurn(text="never sent")]) as server:
        options = {**backend_options_for(server, "gemini-cli", cli_home=isolated_home), "pool_size": 0}
        images = (ImageInput(mime_type="image/png", data=PNG),)
        events = [
            e
            async for e in execute(
                prompt="go", backend="gemini-cli", cwd=workspace, images=images, backend_options=options
            )
        ]
        sent = [request.path for request in server.requests]
    assert not any("generateContent" in path for path in sent), sent  # counted, never sent
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "bad_request", error
    assert "larger than the model's context window" in error.message
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
