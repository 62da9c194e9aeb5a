"""Fixtures for the tool runtime tests: a workspace directory and a one-call helper."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from unified.tools import ToolCall, ToolOutcome, ToolRuntime

Call = Callable[..., Awaitable[ToolOutcome]]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def runtime(ws: Path) -> ToolRuntime:
    """Everything allowed, so a test sees the tool and not the policy."""
    return ToolRuntime(ws, approval_mode="yolo")


@pytest.fixture
def call(runtime: ToolRuntime) -> Call:
    async def run(name: str, **args: Any) -> ToolOutcome:
        [outcome] = await runtime.run_batch([ToolCall("c1", name, args)])
        return outcome

    return run


def output(outcome: ToolOutcome) -> str:
    assert not outcome.is_error, outcome.response
    return str(outcome.response["output"])


def error(outcome: ToolOutcome) -> str:
    assert outcome.is_error, outcome.response
    return str(outcome.response["error"])


@pytest.fixture
def ok() -> Callable[[ToolOutcome], str]:
    return output


@pytest.fixture
def err() -> Callable[[ToolOutcome], str]:
    return error
