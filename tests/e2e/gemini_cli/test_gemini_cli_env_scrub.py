"""The run's GEMINI_API_KEY / GOOGLE_API_KEY never reach a command the model runs (real `gemini`, offline).

The scripted model runs `env` and `printenv` through the CLI's run_shell_command; the assertion is on
what the model received: the function response the CLI sent back in its next request to FakeGemini
(not unified's events, whose redaction would hide a leak). unified turns on the CLI's own
`security.environmentVariableRedaction` in the system settings it writes. The CLI still authenticated
with the key (`saw_credential`). What remains (`/proc/$PPID/environ` of the CLI's own process) is
pinned by the second test (docs/backends/gemini-cli.md, "Keys and the model's commands")."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.e2e.environ_attack import pieces
from tests.hang_guard import HANG_GUARD_S
from unified._execute import EventStream
from unified.events import UnifiedEvent
from unified.testing import FakeGemini, FunctionCall, ModelTurn
from unified.testing._wiring import backend_options_for
from unified.types import ExecuteParams

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

GEMINI_KEY = "AIzaSyC-q7Wm2Xt9Lb4Kc1Vd6Hf3Gj8Sp5Ya0Ue"
GOOGLE_KEY = "gk-Tz8Rq3Wn6Lm1Xb5Vc9Hd2Jf7Gs4Pa0Ye"  # not AIza-shaped: out by its name, not its value
ENV_COMMAND = (
    "env | grep -a -i -E 'key|token|cred|gemini|google|^home='; echo '--- printenv'; "
    "printenv GEMINI_API_KEY; printenv GOOGLE_API_KEY; printenv GOOGLE_APPLICATION_CREDENTIALS; echo '--- end'"
)
PARENT_COMMAND = "tr '\\0' '\\n' < /proc/$PPID/environ | grep -a -i -E 'api_key'; echo '--- end'"


async def _shell_run(command: str, tmp_path: Path, workspace: Path) -> tuple[str, bool]:
    """(the request carrying the command's result, as the model received it; whether the CLI sent the key)."""
    credentials = tmp_path / "adc.json"
    credentials.write_text('{"type": "authorized_user"}')
    call = FunctionCall(name="run_shell_command", args={"command": command})
    async with FakeGemini([ModelTurn(function_calls=[call]), ModelTurn(text="ok")]) as server:
        options = backend_options_for(server, "gemini-cli", cli_home=tmp_path / "cli-home")
        env = dict(options["env"])  # type: ignore[call-overload]
        env |= {"GEMINI_API_KEY": GEMINI_KEY, "GOOGLE_API_KEY": GOOGLE_KEY}
        env["GOOGLE_APPLICATION_CREDENTIALS"] = str(credentials)
        params = ExecuteParams(
            prompt="show me the environment",
            backend="gemini-cli",
            cwd=workspace,
            approval_mode="yolo",
            backend_options={**options, "env": env},
        )
        with anyio.fail_after(HANG_GUARD_S):
            async with EventStream(params) as stream:
                events: list[UnifiedEvent] = [event async for event in stream]
        bodies = [request.body for request in server.requests]
        assert len(bodies) >= 2, events
        answer = bodies[1]["contents"][-1]  # the function response the model was sent
        assert "functionResponse" in str(answer), answer
        return str(answer), server.saw_credential(GEMINI_KEY)


@pytest.fixture
def secure_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """unified's cache (where it writes the system settings it gives the CLI) in a folder the CLI
    accepts system settings from: root's, no ancestor writable by group or others (never /tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="unified-scrub-", dir="/run"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.access("/run", os.W_OK),
    reason="the CLI reads unified's system settings only when root owns them and every folder above them",
)
async def test_the_model_reads_no_piece_of_a_key_in_the_environment_of_its_shell_command(
    tmp_path: Path, workspace: Path, secure_cache: Path
) -> None:
    sent, authenticated = await _shell_run(ENV_COMMAND, tmp_path, workspace)
    assert authenticated  # the CLI sent the run's key to the model server
    assert "--- printenv" in sent, sent
    assert "--- end" in sent, sent  # the command ran to its end
    assert "GEMINI_CLI" in sent, sent  # it printed the environment
    assert pieces(GEMINI_KEY, sent) == [], sent
    assert pieces(GOOGLE_KEY, sent) == [], sent
    assert "adc.json" not in sent, sent  # GOOGLE_APPLICATION_CREDENTIALS is out too


async def test_what_remains_the_environ_of_the_cli_process_itself_still_holds_the_key(
    tmp_path: Path, workspace: Path
) -> None:
    """Documents a limit, not a wish: the shell's parent is the CLI's node process, whose environment
    (same user) holds the key it authenticates with. If this starts failing, the CLI closed the gap."""
    sent, authenticated = await _shell_run(PARENT_COMMAND, tmp_path, workspace)
    assert authenticated
    assert "--- end" in sent, sent
    assert pieces(GEMINI_KEY, sent) != [], sent
