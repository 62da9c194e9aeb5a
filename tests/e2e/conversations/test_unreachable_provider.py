"""The provider cannot be reached at all: one outcome on all five backends, and the run fails over.

Each backend's model server is a port on 127.0.0.1 where nothing listens (`tests.harness.closed_port`: bound,
never listening, so every connection is refused): the API backends through httpx, the real pinned `gemini`,
`claude` and `codex` binaries through their own HTTP stacks. What must hold, on every backend: once its own
quick retries are over, the run ends with one `error` of code `backend_unavailable`, retryable, naming the URL
(never the key), and no process of the run is left; with a fallback, the default `failover_on` moves the run to
it (a `failover` event, then the fallback's own successful `result`). docs/protocol.md, "Codes".
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from tests.harness.closed_port import closed_port
from unified import ExecuteParams, execute
from unified._binary.proctable import descendants
from unified.events import ErrorEvent, Failover, Result, SessionStarted, UnifiedEvent
from unified.testing import CODEX_MODEL, FakeAnthropic, FakeGemini, FakeOpenAI, backend_options_for
from unified.testing import ModelTurn as ScriptTurn
from unified.testing._wiring import prepare_cli_home
from unified.types import Fallback

pytestmark = [pytest.mark.e2e, pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

GEMINI_MODEL = "gemini-2.5-flash"
BACKENDS = ["generate-content", "interactions", "gemini-cli", "claude-code", "codex"]


def _moved(value: Any, old: str, new: str) -> Any:
    """`value` (options: dicts, lists, strings, paths) with every string's `old` replaced by `new`."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _moved(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, old, new) for v in value]
    return value


@dataclass
class Lab:
    gemini: FakeGemini
    anthropic: FakeAnthropic
    openai: FakeOpenAI
    home: Path
    workspace: Path
    closed: str
    """`http://127.0.0.1:<port>` of a port where nothing listens."""

    def server(self, backend: str) -> FakeGemini | FakeAnthropic | FakeOpenAI:
        if backend == "claude-code":
            return self.anthropic
        return self.openai if backend == "codex" else self.gemini

    def options(self, backend: str, *, reachable: bool) -> dict[str, Any]:
        """The fake's wiring for `backend` (the gemini CLI in the test's home, no warm processes); when not
        `reachable`, every URL of it moved to the closed port."""
        server = self.server(backend)
        cli_home = self.home if backend == "gemini-cli" else None
        options: dict[str, Any] = dict(backend_options_for(server, backend, cli_home=cli_home))
        if backend in ("generate-content", "interactions"):
            options["retry_delay_scale"] = 0.001
        if backend in ("gemini-cli", "codex"):
            options["pool_size"] = 0
        if reachable:
            return options
        root = server.base_url.removesuffix("/v1")
        moved: dict[str, Any] = _moved(options, root, self.closed)
        return moved

    def params(self, backend: str, *fallback: str, transport: str = "") -> ExecuteParams:
        options = self.options(backend, reachable=False)
        if transport:  # gemini-cli's fallback transport, `gemini -p ... --output-format stream-json`
            options["transport"] = transport
        return ExecuteParams(
            prompt="say hello",
            backend=backend,
            model=_model(backend),
            cwd=self.workspace,
            backend_options=options,
            approval_mode="yolo",
            fallback=tuple(
                Fallback(backend=b, model=_model(b), backend_options=self.options(b, reachable=True)) for b in fallback
            ),
        )

    async def run(self, params: ExecuteParams) -> list[UnifiedEvent]:
        with anyio.fail_after(HANG_GUARD_S):
            async with execute(params) as stream:
                events = [event async for event in stream]
        assert isinstance(events[-1], Result), events[-1]
        return events


def _model(backend: str) -> str | None:
    return {"codex": CODEX_MODEL, "claude-code": None}.get(backend, GEMINI_MODEL)


@pytest.fixture
def port() -> Iterator[int]:
    with closed_port() as held:
        yield held


@pytest.fixture
async def lab(
    tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, binaries: None, port: int
) -> AsyncIterator[Lab]:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    prepare_cli_home(isolated_home)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with FakeGemini() as gemini, FakeAnthropic() as anthropic, FakeOpenAI() as openai:
        yield Lab(gemini, anthropic, openai, isolated_home, workspace, f"http://127.0.0.1:{port}")


def _keys(options: Any) -> list[str]:
    """The keys a run's options hold (an API key, or the CLI's in its env)."""
    env = options.get("env") or {}
    found = [options.get("api_key"), *(v for k, v in env.items() if k.endswith(("_API_KEY", "_KEY")))]
    return [k for k in found if isinstance(k, str) and k]


STARTS_A_PROCESS = ("gemini-cli", "claude-code", "codex")
"""The backends whose run starts a process (and so could leave one)."""


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "(gone)"


@pytest.mark.parametrize("backend", [*BACKENDS, "gemini-cli/stream-json"])
async def test_an_unreachable_provider_is_backend_unavailable(lab: Lab, backend: str) -> None:
    before = descendants(os.getpid())
    name, _, transport = backend.partition("/")
    params = lab.params(name, transport=transport)
    events = await lab.run(params)
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1, [(e.type, getattr(e, "code", None)) for e in events]
    error = errors[0]
    assert (error.code, error.retryable) == ("backend_unavailable", True), error.message
    assert lab.closed in error.message, error.message
    keys = _keys(params.backend_options)
    assert keys, "the run had a key"
    for key in keys:
        assert key not in error.message
        assert key not in str(error.details)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    if name in STARTS_A_PROCESS:  # the API backends start no process: one that appears meanwhile is another test's
        left = {pid: _command_line(pid) for pid, _ in descendants(os.getpid()) - before}
        assert not left, f"processes of the run are still there: {left}"
    assert not list((lab.home / ".cache").rglob("gemini-debug/*")), "the CLI's debug log went with its process"


@pytest.mark.parametrize(
    ("backend", "fallback"),
    [("generate-content", "interactions"), ("claude-code", "generate-content"), ("gemini-cli", "generate-content")],
)
async def test_an_unreachable_provider_fails_over(lab: Lab, backend: str, fallback: str) -> None:
    lab.gemini.add(ScriptTurn(text=f"answered by {fallback}"))
    events = await lab.run(lab.params(backend, fallback))
    failovers = [e for e in events if isinstance(e, Failover)]
    assert len(failovers) == 1, [e.type for e in events]
    assert (failovers[0].from_backend, failovers[0].to_backend, failovers[0].code) == (
        backend,
        fallback,
        "backend_unavailable",
    )
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.backend, result.final_text) == ("success", fallback, f"answered by {fallback}")
    assert [s.backend for s in events if isinstance(s, SessionStarted)][-1] == fallback
