"""Fixtures of the hostile file-tool tests: a workspace, a secret outside it, and a one-call helper.

A module of its own (not a conftest) so the security tests of other areas keep their own fixtures.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from unified.tools import ToolCall, ToolOutcome, ToolRuntime

SECRET = "TOPSECRET-4f1c9a"
"""Content of the file outside the workspace; it must never reach a tool's output."""

Call = Callable[..., Awaitable[ToolOutcome]]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding `secret.txt`."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text(f"root:{SECRET}\n")
    return directory


@pytest.fixture
def call(ws: Path) -> Call:
    """One call through a yolo-mode runtime, so a test sees the tool and not the policy."""
    runtime = ToolRuntime(ws, approval_mode="yolo")

    async def run(name: str, **args: Any) -> ToolOutcome:
        [outcome] = await runtime.run_batch([ToolCall("c1", name, args)])
        return outcome

    return run


def text_of(outcome: ToolOutcome) -> str:
    """Whatever the model would read: the output or the error, and any attached bytes."""
    parts = [str(outcome.response.get("output", "")), str(outcome.response.get("error", ""))]
    parts += [d.data.decode("utf-8", errors="replace") for d in outcome.inline_data]
    return "\n".join(parts)


def output(outcome: ToolOutcome) -> str:
    assert not outcome.is_error, outcome.response
    return str(outcome.response["output"])


def error(outcome: ToolOutcome) -> str:
    assert outcome.is_error, outcome.response
    return str(outcome.response["error"])
