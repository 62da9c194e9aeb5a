"""Bad input round 20: `unified doctor` with agent binaries that hang on `--version`.

Each probe of a binary has a deadline (`PROBE_TIMEOUT_S`, 30 s). Before: the three binaries were probed one after
another (92 s with three hanging ones), the probe killed the binary alone and then read its stdout to the end (a
wrapper script's child holding the pipe kept doctor waiting for as long as that child lived, and left it running),
and the message was Python's `Command '[...]' timed out after 30 seconds`, saying neither that the binary hangs nor
what to do.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.binary.test_process import gone
from unified._binary import install
from unified._cli.doctor import doctor_report

pytestmark = pytest.mark.e2e  # the fake binaries are processes

_VARIABLES = {"gemini": "UNIFIED_GEMINI_BIN", "claude": "UNIFIED_CLAUDE_BIN", "codex": "UNIFIED_CODEX_BIN"}


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _env(tmp_path: Path, binaries: dict[str, Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIFIED_")}
    return env | {"HOME": str(tmp_path)} | {_VARIABLES[key]: str(path) for key, path in binaries.items()}


def test_a_binary_that_hangs_on_version_is_stopped_with_its_group_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wrapper that starts a child holding stdout and waits for it: doctor says which binary hangs and what to do,
    and neither the wrapper nor its child is left running. FAILED before: the message was Python's "timed out after
    1 seconds" (and doctor waited for the child's `sleep` to end, leaving it running until then)."""
    monkeypatch.setattr(install, "PROBE_TIMEOUT_S", 1.0)
    pids = tmp_path / "pids"
    hanging = _script(tmp_path / "gemini", f"sleep 300 &\necho $$ $! > {pids}\nwait")
    report = doctor_report(_env(tmp_path, {"gemini": hanging}))
    problem = str(report["gemini"]["problem"])
    assert f"{hanging} --version did not answer within 1 s" in problem, problem
    assert "hangs" in problem
    assert f"run `{hanging} --version` alone" in problem  # what to do
    assert report["gemini"]["version"] is None
    [status] = [b for b in report["backends"] if b["backend"] == "gemini-cli"]
    assert not status["ready"]
    assert any("did not answer" in p for p in status["problems"])
    for pid in map(int, pids.read_text().split()):
        assert gone(pid), f"process {pid} of the hanging probe is still running"


def test_the_three_binaries_are_probed_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each fake binary answers `--version` only once all three have started: probed one after another the first
    waits for the others forever (its deadline), probed at once all three answer. FAILED before (doctor probed them
    in turn: the first hit its deadline, "timed out")."""
    monkeypatch.setattr(install, "PROBE_TIMEOUT_S", 120.0)  # a hang guard here: met only when not at once
    started = tmp_path / "started"
    started.mkdir()
    wait_all = f'while [ "$(ls {started} | wc -l)" -lt 3 ]; do sleep 0.05; done'
    binaries = {
        key: _script(tmp_path / key, f"touch {started}/{key}\n{wait_all}\necho {version}")
        for key, version in (("gemini", "0.61.0"), ("claude", "2.1.150"), ("codex", "codex-cli 0.171.0"))
    }
    report = doctor_report(_env(tmp_path, binaries))
    assert [report[key]["version"] for key in ("gemini", "claude", "codex")] == ["0.61.0", "2.1.150", "0.171.0"]


def test_a_node_that_hangs_on_version_is_stopped_with_its_group_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `unified install` and `unified demo` ask first. FAILED before: "... --version failed: Command '[...]'
    timed out after 1 seconds" (and the wait lasted as long as the shim's child, left running until then)."""
    from unified._adapters.gemini_cli._launch import GEMINI_CLI
    from unified._binary.install import NodeUnavailable, node_version

    monkeypatch.setattr(install, "PROBE_TIMEOUT_S", 1.0)
    pids = tmp_path / "pids"
    node = _script(tmp_path / "node", f"sleep 300 &\necho $$ $! > {pids}\nwait")
    with pytest.raises(NodeUnavailable) as caught:
        node_version(GEMINI_CLI, {"PATH": f"{tmp_path}:{os.defpath}"})  # its `sleep` from the system
    assert f"{node} --version did not answer within 1 s, so it was stopped: that node hangs" in caught.value.message
    assert f"run `{node} --version` alone" in str(caught.value.hint)
    for pid in map(int, pids.read_text().split()):
        assert gone(pid), f"process {pid} of the hanging probe is still running"
