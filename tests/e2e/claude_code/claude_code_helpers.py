"""Shared helpers of the claude-code e2e tests: one run of the real binary against a FakeAnthropic."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from tests.hang_guard import HANG_GUARD_S
from unified._adapters.claude_code._launch import start_claude
from unified._execute import EventStream
from unified.backends import AgentProcess
from unified.events import UnifiedEvent, UserInputRequest, UserInputResponse
from unified.testing import FakeAnthropic
from unified.testing._wiring import backend_options_for
from unified.types import ExecuteParams

LOCAL_BINARY = Path(__file__).resolve().parents[3] / ".claude-code" / "node_modules" / ".bin" / "claude"


class Processes:
    """A `start_process` that starts the real binary and remembers each process (for pid checks)."""

    def __init__(self) -> None:
        self.started: list[AgentProcess] = []

    def __call__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentProcess:
        # With `start_process` the adapter does not look the binary up: name the pinned one here.
        process = start_claude([os.environ.get("UNIFIED_CLAUDE_BIN") or str(LOCAL_BINARY), *argv[1:]], cwd, env)
        self.started.append(process)
        return process

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.started if p.pid is not None]


def alive(pid: int) -> bool:
    """Whether a process with this pid still runs (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"


async def run_claude(
    server: FakeAnthropic,
    workspace: Path,
    prompt: str = "Please do the task.",
    *,
    answer: Callable[[UserInputRequest], Awaitable[UserInputResponse]] | None = None,
    options: Mapping[str, object] | None = None,
    on_event: Callable[[UnifiedEvent, EventStream], Awaitable[None]] | None = None,
    strict: bool = True,
    **fields: Any,
) -> list[UnifiedEvent]:
    """One claude-code run, strict (a protocol slip by the adapter fails the test)."""
    backend = str(fields.pop("backend", "claude-code"))
    params = ExecuteParams(
        prompt=prompt,
        backend=backend,
        cwd=workspace,
        on_user_input=answer,
        backend_options={**backend_options_for(server, "claude-code"), **(options or {})},
        **fields,
    )
    events: list[UnifiedEvent] = []
    with anyio.fail_after(HANG_GUARD_S):
        async with EventStream(params, strict=strict) as stream:
            async for event in stream:
                events.append(event)
                if on_event is not None:
                    await on_event(event, stream)
    return events


def kinds(events: Sequence[UnifiedEvent]) -> list[str]:
    return [e.type for e in events]


def model_bodies(server: FakeAnthropic) -> list[str]:
    import json

    return [json.dumps(body) for body in server.model_bodies()]


def claude_home() -> Path:
    """The backend's CLI home in the test's isolated data folder."""
    return Path(os.environ["XDG_DATA_HOME"]) / "unified" / "claude-code" / "home"


async def entry_written(pid: int) -> Path:
    """The CLI's live-process entry of `pid` (`sessions/<pid>.json`), once it has written it (at some point
    of its start)."""
    entry = claude_home() / ".claude" / "sessions" / f"{pid}.json"
    with anyio.fail_after(HANG_GUARD_S):
        while not entry.is_file():  # noqa: ASYNC110 -- a file another process writes: no event to wait on
            await anyio.sleep(0.02)
    return entry
