"""The real CLI's errors get the API backends' codes, and the auth doctor and routing announce is the one the run has.

FakeGemini plays the API's HTTP errors; the CLI turns them into JSON-RPC errors (tests/adapters/gemini_cli/
test_gemini_cli_errors.py has their shapes), which the adapter maps as the API backends map the API's.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.harness.warm_cli import WarmCli
from unified import ExecuteParams, execute
from unified._auth import detect_auth
from unified._binary.proctable import descendants
from unified._routing import select_backend
from unified.events import ErrorEvent, Result, UnifiedEvent, WarningEvent
from unified.testing import FakeGemini, Fault, ModelTurn
from unified.testing._fake_gemini import CLI_MODEL

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def _run(workspace: Path, env: dict[str, str], model: str = CLI_MODEL, **options: object) -> list[UnifiedEvent]:
    """A run in a process of its own, or on the module's warm ones where `options` name their `pool` (a run whose
    environment is the warm launch's, that counts no process)."""
    params = ExecuteParams(
        prompt="hi",
        backend="gemini-cli",
        model=model,
        cwd=workspace,
        backend_options={"env": env, "pool_size": 0, **options},
    )
    async with execute(params) as stream:
        return [event async for event in stream]


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        ("bad_request", "bad_request"),
        ("not_found", "model_not_found"),
        ("unauthenticated", "auth_error"),
        ("permission_denied", "auth_error"),
    ],
)
async def test_the_apis_http_errors_get_the_api_backends_codes(
    workspace: Path, warm_cli: WarmCli, fault: str, code: str
) -> None:
    server = warm_cli.play([ModelTurn(text="never", fault=Fault(kind=fault))])
    events = await _run(workspace, server.cli_env, pool=warm_cli.pool)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert (error.code, error.fatal) == (code, True)
    assert error.details["cli_message"]  # the CLI's own words travel with it
    assert "stderr_tail" in error.details


@pytest.mark.parametrize(("fault", "code"), [("unavailable", "backend_error"), ("rate_limit", "rate_limited")])
async def test_a_failure_past_max_retries_ends_the_run_with_its_typed_error(
    workspace: Path, fault: str, code: str
) -> None:
    """The CLI would ask again for ~3.5 min (its own retries, silent over ACP); past the run's `max_retries` the
    prompt ends with the error the API backends give for the same answer, retryable, and the process is gone."""
    before = descendants(os.getpid())
    async with FakeGemini([ModelTurn(text="never", fault=Fault(kind=fault))]) as server:
        with anyio.fail_after(HANG_GUARD_S):
            events = await _run(workspace, server.cli_env, max_retries=0)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert (error.code, error.retryable, error.fatal) == (code, True, True), error.message
    assert "attempt 1 failed" in error.message
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert not {pid for pid, _ in descendants(os.getpid()) - before}, "the CLI's process is gone"


async def test_with_retries_left_the_cli_s_retry_answers_and_the_run_succeeds(
    workspace: Path, warm_cli: WarmCli
) -> None:
    server = warm_cli.play([ModelTurn(text="answered", fault=Fault(kind="unavailable"))])
    with anyio.fail_after(HANG_GUARD_S):
        events = await _run(workspace, server.cli_env, max_retries=1, pool=warm_cli.pool)
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "answered"), result.error
    assert [e.code for e in events if isinstance(e, WarningEvent)].count("retrying") == 1


async def test_no_key_is_an_auth_error_naming_what_to_set(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, gemini_setup: Path
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    async with FakeGemini([ModelTurn(text="never")]) as server:
        env = {k: v for k, v in server.cli_env.items() if k != "GEMINI_API_KEY"}
        (mode,) = detect_auth({**os.environ, **env}).modes_for("gemini-cli")
        assert not mode.usable  # doctor and routing say so first
        events = await _run(workspace, env)
    error = next(e for e in events if isinstance(e, ErrorEvent))
    assert error.code == "auth_error"
    assert "GEMINI_API_KEY" in str(error.model_dump())


async def test_google_api_key_alone_runs_as_doctor_and_routing_say(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "fake-google-api-key")
    auth = detect_auth()
    assert "gemini-cli" in (select_backend(auth).backend, *select_backend(auth).alternatives)
    async with FakeGemini([ModelTurn(text="the key arrived")]) as server:
        env = {"GOOGLE_GEMINI_BASE_URL": server.base_url}
        events = await _run(workspace, env)
        (request,) = server.requests
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "the key arrived"), result.error
    assert request.headers["x-goog-api-key"] == "<redacted>"  # a key was sent (FakeGemini refuses none)


async def test_unified_run_without_node_says_what_to_install_and_exits_2(
    workspace: Path, gemini_setup: Path, tmp_path: Path
) -> None:
    """docs/cli.md: Node.js missing is bad input, nothing ran (exit 2), not a raw `env: 'node'` failure."""
    bin_dir = tmp_path / "bin-without-node"
    bin_dir.mkdir()
    for tool in ("sh", "bash", "env"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {**os.environ, "PATH": str(bin_dir), "HOME": str(gemini_setup), "GEMINI_CLI_HOME": str(gemini_setup)}
    argv = [sys.executable, "-m", "unified", "run", "hi", "--backend", "gemini-cli", "--cwd", str(workspace), "--json"]
    with anyio.fail_after(HANG_GUARD_S):
        done = await anyio.run_process(argv, env=env, check=False)
    assert done.returncode == 2, done.stderr.decode()
    events = [json.loads(line) for line in done.stdout.decode().splitlines()]
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "backend_unavailable"
    assert "Node.js was not found on PATH" in error["message"]
    assert "install Node.js 20 or newer" in error["message"]
