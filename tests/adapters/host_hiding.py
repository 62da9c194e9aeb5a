"""The binary backends' `hide_host_environment` option, as a run on a stand-in sees it: whether (and when) the
adapter makes the host undumpable. The flag itself is process-wide and never set back, so here the call is recorded;
what it does, with each real binary, is tests/e2e/host_environ.py's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

import pytest

from unified._binary.process import ProcessStarter
from unified.backends import AgentProcess

__all__ = ["HIDING_CASES", "record_hiding"]

HIDING_CASES = pytest.mark.parametrize(
    ("given", "order"),
    [
        ({}, ["hide", "start"]),
        ({"hide_host_environment": True}, ["hide", "start"]),
        ({"hide_host_environment": False}, ["start"]),
    ],
    ids=["default", "true", "false"],
)
"""The option not given, true, false: the host hidden before the process starts, or never."""


def record_hiding(
    monkeypatch: pytest.MonkeyPatch, module: ModuleType, start: ProcessStarter
) -> tuple[list[str], ProcessStarter]:
    """`module`'s `hide_host_environment` replaced by a recorder, and `start` wrapped to record each start: both
    into the list returned (`"hide"`, `"start"`, in the order they happened)."""
    seen: list[str] = []

    def hide() -> bool:
        seen.append("hide")
        return True

    def starting(argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> AgentProcess:
        seen.append("start")
        return start(argv, cwd, env)

    # Not `raising`: a module that never imported the call (the code before) fails on the order, not here.
    monkeypatch.setattr(module, "hide_host_environment", hide, raising=False)
    return seen, starting
