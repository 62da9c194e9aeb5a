"""`unified ARGS` through the console script's entry point, `main()`, in the test's own process.

A `python -m unified._cli` of its own costs ~0.35 s of CPU starting Python and up to a second more importing
unified and its SDKs, where `main()` here shows the same exit code and the same lines: a refusal, a replay, a run
against a fake. What only a process of its own shows (a signal, a pipe whose reader left, stdin, what a shell or
a second machine sees, a fresh interpreter's environment) keeps its subprocess in the tests that check it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping

import pytest

__all__ = ["environ_of", "in_process"]


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess[str]:
    """`unified ARGS` run by `main()` here: its exit code and what it wrote. The environment is the test's own, put
    back as it was after the command (`replay` points UNIFIED_DATA_DIR at its temporary directory, as a process of
    its own keeps to itself)."""
    from unified._cli.main import main

    environment = dict(os.environ)
    capsys.readouterr()
    try:
        code = main(list(args))
    finally:
        os.environ.clear()
        os.environ.update(environment)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["unified", *args], code, out, err)


def environ_of(env: Mapping[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's environment made `env`, as a subprocess given `env=env` would start with (`monkeypatch` puts
    it back)."""
    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
