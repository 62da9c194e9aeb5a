"""A runtime in another pid namespace never takes a live runtime's cgroup for an orphan.

A runtime reaps the cgroups of runtimes whose host has died, judged by the host's pid in the cgroup's
name. Seen from another pid namespace (a container's, a test's: `tests.harness.pidns`) that pid is
absent, and every live runtime of the machine looked dead: a runtime started there killed all their
processes. The name now carries the host's pid namespace, and only those of one's own are judged."""

from __future__ import annotations

import subprocess

import pytest

from tests.harness.pidns import needs_pid_namespace, run_in_pid_namespace
from unified.tools import _watchdog

pytestmark = pytest.mark.e2e  # real processes and cgroups

INNER = """
from unified.tools import _watchdog

inner = _watchdog.Containment.create("inner")  # reaps the orphans it sees on the way
print(inner is not None)
if inner is not None:
    _watchdog.kill_cgroup(inner.path)
"""


def test_a_runtime_of_another_pid_namespace_leaves_a_live_runtimes_cgroup() -> None:
    needs_pid_namespace()
    outer = _watchdog.Containment.create("outer")
    if outer is None:
        pytest.skip("no writable cgroup v2 here")
    call = outer.call_cgroup()
    assert call is not None
    member = subprocess.Popen(["sleep", "615"], start_new_session=True)
    try:
        (call / "cgroup.procs").write_text(str(member.pid))
        assert run_in_pid_namespace(INNER) == ["True"]  # the inner runtime ran, and looked
        assert member.poll() is None  # the outer runtime's process lives on
        assert _watchdog.cgroup_members(outer.path) == [member.pid]
    finally:
        _watchdog.kill_cgroup(outer.path)
        member.kill()  # our child: `kill` signals it only while it is not reaped
        member.wait()
