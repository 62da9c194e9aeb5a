"""The real `gemini` binary against FakeGemini without a model: the CLI's router never eats a scripted turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified import ExecuteParams, execute
from unified.events import Result
from unified.testing import FakeGemini, ModelTurn
from unified.testing._fake_gemini import CLI_MODEL
from unified.testing._wiring import backend_options_for


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the same on either loop; trio: test_gemini_cli_acp.py
async def test_a_run_without_a_model_uses_only_the_scripted_turn(workspace: Path, tmp_path: Path) -> None:
    async with FakeGemini([ModelTurn(text="pinned answer")]) as server:
        options = backend_options_for(server, "gemini-cli", cli_home=tmp_path / "cli-home")
        params = ExecuteParams(prompt="hi", backend="gemini-cli", cwd=workspace, backend_options=options)
        async with execute(params) as stream:
            events = [event async for event in stream]
        result = events[-1]
        assert isinstance(result, Result)
        assert result.status == "success", result.error
        assert result.final_text == "pinned answer"
        assert [(r.api_method, r.model) for r in server.requests] == [("generateContentStream", CLI_MODEL)]
