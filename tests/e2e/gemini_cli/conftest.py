"""Runs of the real pinned `gemini` binary, offline, against recorded model responses.

Every test gets the isolated HOME/GEMINI_CLI_HOME of tests/conftest.py, a deterministic
settings.json in it (FIELD-NOTES §1), `GEMINI_API_KEY=dummy`, and a workspace directory.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import LOCAL_BINARY
from tests.harness.warm_cli import WarmCli
from unified import ExecuteParams
from unified._execute import EventStream
from unified.events import UnifiedEvent
from unified.testing._wiring import prepare_cli_home


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.gemini_cli)
            item.add_marker(pytest.mark.e2e)


@pytest.fixture(params=["asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Each real-binary run costs a cold start (a second or more of CPU): asyncio only, unless a test parametrizes
    `anyio_backend` itself to cover trio too: per transport a plain run, a permission asked and answered, a resume
    and a cancel or kill that leaves no process; and where the loop's own I/O is what the test is about (two runs
    sharing a warm process, a binary that closes its stdout and runs on, a run cancelled while a person is asked)."""
    return str(request.param)


@pytest.fixture(autouse=True)
def gemini_setup(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    binary = os.environ.get("UNIFIED_GEMINI_BIN") or str(LOCAL_BINARY)
    if not Path(binary).exists():
        pytest.fail(f"the pinned gemini binary is not at {binary}: run .ci/install-gemini-cli.sh (scripts/test does)")
    monkeypatch.setenv("UNIFIED_GEMINI_BIN", binary)
    monkeypatch.setenv("GEMINI_API_KEY", "dummy")
    return prepare_cli_home(isolated_home)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "notes.txt").write_text("alpha\nbeta\n")
    return path


@pytest.fixture
def responses(tmp_path: Path) -> Callable[..., Path]:
    """Write a `--fake-responses` file from `stream_line(...)` strings."""
    counter = iter(range(1000))

    def write(*lines: str) -> Path:
        path = tmp_path / f"model-{next(counter)}.responses"
        path.write_text("\n".join(lines) + "\n")
        return path

    return write


async def _run(workspace: Path, options: dict[str, Any], prompt: str, fields: dict[str, Any]) -> list[UnifiedEvent]:
    """One prompt through `unified`'s stream guard (strict: a protocol slip fails the test), the test's own
    `backend_options` over `options`, in `workspace` unless the test names its `cwd`."""
    options |= fields.pop("backend_options", {})
    fields.setdefault("cwd", workspace)
    params = ExecuteParams(prompt=prompt, backend="gemini-cli", backend_options=options, **fields)
    async with EventStream(params, strict=True) as stream:
        return [event async for event in stream]


@pytest.fixture
def run_gemini(workspace: Path) -> Callable[..., Awaitable[list[UnifiedEvent]]]:
    """Run one prompt on recorded responses, in a cold process of its own."""

    async def run(fake: Path, prompt: str = "go", **fields: Any) -> list[UnifiedEvent]:
        return await _run(workspace, {"fake_responses": str(fake), "pool_size": 0}, prompt, fields)

    return run


@pytest.fixture
def warm_gemini(workspace: Path, warm_cli: WarmCli) -> Callable[..., Awaitable[list[UnifiedEvent]]]:
    """`run_gemini` on the module's warm CLI process (`tests.harness.warm_cli`, where its HOME is): the test's
    recorded responses copied to the one file the warm launch names. For a test that looks at nothing in HOME
    but its own project's files, and counts no process: most runs of a stream's shape, a permission, a tool."""

    async def run(fake: Path, prompt: str = "go", **fields: Any) -> list[UnifiedEvent]:
        warm_cli.responses.write_bytes(fake.read_bytes())  # noqa: ASYNC240 -- a small file, before the run starts
        return await _run(workspace, {"fake_responses": str(warm_cli.responses), "pool": warm_cli.pool}, prompt, fields)

    return run


@pytest.fixture
def short_opening_slack(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session opening held by an MCP server is given up 5 s after the server's `timeout_s`, not 30 s: the tests
    that wait for that bound (a server that stops answering) need not wait for a loaded machine's worst case."""
    from unified._adapters.gemini_cli import _session_setup

    monkeypatch.setattr(_session_setup, "MCP_OPENING_SLACK_S", 5.0)
