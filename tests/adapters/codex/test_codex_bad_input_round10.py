"""Bad input round 10, Codex's app-server on a stand-in (`FakeAgentProcess`): an answer under an id unified never
sent waited out the 60 s request timeout, then said only "did not open the thread in time"; now the run ends at
once with a typed error saying the app-server answered a request unified never sent."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.adapters.codex.test_codex_launch_and_run import THREAD, run
from unified.events import ErrorEvent, Result
from unified.testing import FakeAgentProcess

pytestmark = pytest.mark.anyio


def answering_thread_start_with(stray: object) -> Callable[[FakeAgentProcess], Callable[[str], list[str | bytes]]]:
    def make(process: FakeAgentProcess) -> Callable[[str], list[str | bytes]]:
        def answer(line: str) -> list[str | bytes]:
            message = json.loads(line)
            method, mid = message.get("method"), message.get("id")
            if method == "thread/start":
                return [json.dumps({"id": stray, "result": {"thread": {"id": THREAD}}})]
            return [json.dumps({"id": mid, "result": {}})] if mid is not None else []

        return answer

    return make


@pytest.mark.parametrize("stray", [999, "2", None])
async def test_a_thread_start_answered_under_a_wrong_id_ends_the_run_at_once(stray: object, tmp_path: Path) -> None:
    events = await run(tmp_path, FakeAgentProcess.starter(answering_thread_start_with(stray)))
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_error", error
    assert "codex app-server could not open the thread" in error.message
    assert f"answered a request unified never sent (id {stray!r}" in error.message, error.message
    assert "in time" not in error.message
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
