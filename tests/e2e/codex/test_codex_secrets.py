"""Red team (secrets) on the real `codex` binary: what a command the model runs can read of the
environment of Codex's process, and of unified's own, and what of it reaches the events.

The attack: `env`, then `/proc/$PPID/environ` (the process that started the shell: Codex, holding the
run's OPENAI_API_KEY), then `/proc/<unified's pid>/environ`. The Gemini and Anthropic keys of
unified's environment never reach Codex's process (so no command reads them there); the run's own key,
which Codex must hold, is replaced in every event."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.e2e.environ_attack import check_no_key_out, environ_command, pieces
from tests.hang_guard import HANG_GUARD_S
from unified._execute import EventStream
from unified.events import ErrorEvent, UnifiedEvent
from unified.testing import CODEX_MODEL, FakeOpenAI, Fault, FunctionCall, ModelTurn
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

RUN_KEY = "sk-proj-cRt7Qx2Lm9Vb4Nz8Kp3Wd6Hs1Jf5Gy0Ua7Ei2Ol9Tc4Xr8Mq3Bn6Zv1Sk5Dh0Fw7Pg2Yj9T3BlbkFJaQ4eR7tY1uI"
GEMINI_KEY = "AIzaSyC-k3Vn8Qz1Wx5Rt9Lp2Mb6Hj0Df4Gs7Ya3Ue"
ANTHROPIC_KEY = "sk-ant-api03-Hq4Zm8Xc2Vb6Nl1Kj5Gf9Ds3Ap7Oi0Uy4Tr8Ew2Qw6Er1Ty5Ui9Op3As7Df0AA"


async def test_a_command_reading_the_environ_of_codex_and_of_unified_gets_no_key_out(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", GEMINI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    call = FunctionCall(name="run_shell_command", args={"command": environ_command()})
    async with FakeOpenAI([ModelTurn(function_calls=[call]), ModelTurn(text="ok")], api_key=RUN_KEY) as server:
        params = ExecuteParams(
            prompt="show me the environment",
            backend="codex",
            model=CODEX_MODEL,
            cwd=workspace,
            approval_mode="yolo",
            backend_options={"base_url": server.base_url, "api_key": RUN_KEY, "pool_size": 0},
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        sent = "\n".join(str(request.body) for request in server.requests)
    # What the model was sent (the command's output): never another provider's key. (unified's own
    # /proc/<pid>/environ is the environment this test process started with, not the monkeypatched one.)
    check_no_key_out(events, (RUN_KEY, GEMINI_KEY, ANTHROPIC_KEY), (GEMINI_KEY, ANTHROPIC_KEY), sent)


@pytest.mark.parametrize("kind", ["unauthenticated", "permission_denied", "bad_request"])
async def test_a_provider_error_that_echoes_the_key_shows_none_of_it(workspace: Path, kind: str) -> None:
    """The provider's 401/403/400 quotes the key, whole, in a URL's query, and cut at the provider's end
    (a long message): Codex passes the text on; the run's error events show no piece of the key."""
    long = "x" * 400
    message = f"Incorrect API key provided: {RUN_KEY}. See https://p.test/keys?key={RUN_KEY}&v=1 {long}{RUN_KEY}"
    fault = Fault(kind=kind, message=message)
    async with FakeOpenAI([ModelTurn(text="never", fault=fault)], api_key=RUN_KEY) as server:
        params = ExecuteParams(
            prompt="hello",
            backend="codex",
            model=CODEX_MODEL,
            cwd=workspace,
            backend_options={"base_url": server.base_url, "api_key": RUN_KEY, "pool_size": 0},
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert errors, [e.type for e in events]
    shown = "\n".join(e.model_dump_json() for e in events)
    assert pieces(RUN_KEY, shown) == []
