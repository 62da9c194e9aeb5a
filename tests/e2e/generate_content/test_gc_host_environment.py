"""The API backends' `hide_host_environment` option reaches the tool runtime (docs/tools.md, "The host's own
environment"): by default the process is made undumpable before the first shell command, and a caller who needs
core dumps or a debugger can say no. The flag itself is process-wide and never set back, so what is checked is
the call to `_shell.hide_host_environment`, recorded (round 17's e2e test checks what the flag does)."""

from __future__ import annotations

import pytest

from tests.e2e.generate_content.gc_harness import Harness, result_of
from unified.testing._scenario import FunctionCall, ModelTurn
from unified.tools import _shell

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(("given", "hidden"), [({}, 1), ({"hide_host_environment": False}, 0)])
async def test_the_option_decides_whether_the_host_is_made_undumpable(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, given: dict[str, bool], hidden: int
) -> None:
    calls: list[None] = []

    def hide() -> bool:
        calls.append(None)
        return True

    monkeypatch.setattr(_shell, "hide_host_environment", hide)
    call = FunctionCall(name="run_shell_command", args={"command": "echo hi"})
    harness.server.add(ModelTurn(function_calls=[call]), ModelTurn(text="done"))
    events = await harness.run(approval_mode="yolo", backend_options=given)
    assert result_of(events).status == "success"
    assert len(calls) == hidden
