"""Bad input round 22: `unified doctor`'s probes share one deadline (`doctor.DEADLINE_S`), and a probe that has not
answered by then is named. Before, each binary's `--version` had its own 30 s and what came before it (finding the
binary: a file system that does not answer) had none, so doctor could wait without end, saying nothing of which
probe it waited on."""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.binary.test_process import gone
from tests.foundation.test_doctor_bad_input_round20 import _env, _script
from unified._binary import install
from unified._cli import doctor
from unified._cli.doctor import doctor_report
from unified.errors import BackendUnavailable

_HANG_GUARD_S = 120.0
"""How long a stuck probe of these tests waits at most: never reached with one deadline; before, what doctor waited."""


def test_a_probe_still_finding_its_binary_is_named_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gemini probe's lookup does not return (a PATH folder on a file system that does not answer): doctor
    answers at its deadline, gemini-cli not ready, saying the probe was still finding the binary. FAILED before:
    doctor waited for the lookup (here the hang guard's 120 s), and then reported its error with no word of a
    deadline."""
    release = threading.Event()

    def find_binary(spec: Any, explicit: Any, env: Any) -> Path:
        if spec.name.startswith("gemini"):
            release.wait(_HANG_GUARD_S)
        raise BackendUnavailable(f"no {spec.name} here (round 22)")

    monkeypatch.setattr(install, "find_binary", find_binary)
    monkeypatch.setattr(doctor, "DEADLINE_S", 0.2, raising=False)
    monkeypatch.setattr(doctor, "_GRACE_S", 0.0, raising=False)
    try:
        report = doctor_report({"PATH": "/nonexistent"})
    finally:
        release.set()
    problem = str(report["gemini"]["problem"])
    assert problem.startswith("its probe did not answer within doctor's deadline (0.2 s, for all probes at once)")
    assert "it was still finding it" in problem
    assert report["gemini"]["path"] is None
    assert "here (round 22)" in report["claude"]["problem"]  # the others answered in time
    [status] = [b for b in report["backends"] if b["backend"] == "gemini-cli"]
    assert not status["ready"]


@pytest.mark.e2e  # a process
def test_a_hanging_version_is_stopped_at_the_one_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A binary's `--version` gets what is left of doctor's deadline, not a deadline of its own, and is stopped then
    with its process group. FAILED before: it got `PROBE_TIMEOUT_S` (here the hang guard's 120 s) and was said to
    hang "within 120 s"."""
    monkeypatch.setattr(install, "PROBE_TIMEOUT_S", _HANG_GUARD_S)
    monkeypatch.setattr(doctor, "DEADLINE_S", 1.0, raising=False)
    pids = tmp_path / "pids"
    hanging = _script(tmp_path / "codex", f"sleep 300 &\necho $$ $! > {pids}\nwait")
    report = doctor_report(_env(tmp_path, {"codex": hanging}))
    problem = str(report["codex"]["problem"])
    assert re.search(
        rf"{re.escape(str(hanging))} --version did not answer within (0\.\d+|1) s, so it was stopped", problem
    )
    assert problem.endswith("(doctor gives all its probes one deadline, 1 s)"), problem
    for pid in map(int, pids.read_text().split()):
        assert gone(pid), f"process {pid} of the hanging probe is still running"


def test_a_probe_that_raises_is_its_problem_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """The binary went between being found and being read (`stat` raises): the report says so and calls the backend
    not ready. FAILED before: the pool's `result()` raised the FileNotFoundError out of doctor (a traceback)."""

    def find_binary(spec: Any, explicit: Any, env: Any) -> Path:
        raise FileNotFoundError(2, "No such file or directory", f"/gone/{spec.name}")

    monkeypatch.setattr(install, "find_binary", find_binary)
    report = doctor_report({"PATH": "/nonexistent"})
    assert report["codex"]["problem"].startswith("its probe failed (FileNotFoundError: [Errno 2] No such file")
    assert report["codex"]["problem"].endswith("run `unified doctor` again")
