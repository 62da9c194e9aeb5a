"""The differential tests' `run_bash` (tests/harness/bash.py) never kills a stranger's process group.

It killed the shell's group after reaping the shell: with the shell gone and no `&` job left, the number
was free, and among the thousands of shells those tests start, a stranger's group that got it in that
moment (a test running beside them) was killed. In a pid namespace of its own (`tests.harness.pidns`) a
stranger is made to take the number right after the reap: the old order killed it every time."""

from __future__ import annotations

import pytest

from tests.harness.pidns import run_in_pid_namespace

pytestmark = pytest.mark.e2e  # real child processes

SCRIPT = """
import select
import tempfile

from tests.harness.bash import run_bash

strangers: list[subprocess.Popen[bytes]] = []
real_wait = subprocess.Popen.wait


def planting_wait(self: subprocess.Popen[bytes], timeout: float | None = None) -> int:
    \"\"\"`Popen.wait`, and once it has reaped the shell a stranger takes its number.\"\"\"
    code = real_wait(self, timeout)
    if not strangers and self.args[0] == "bash":
        strangers.append(take(self.pid))
        print(strangers[0].pid == self.pid)  # the construction works: the number was free
    return code


work = Path(tempfile.mkdtemp())
subprocess.Popen.wait = planting_wait  # type: ignore[method-assign]
run_bash("exit 0", work)  # no job: the group is empty, its number free, once the shell is reaped
subprocess.Popen.wait = real_wait  # type: ignore[method-assign]
print(running(strangers[0].pid))
run_bash("sleep 600 & echo $! > job", work)
job = os.pidfd_open(int((work / "job").read_text()))  # not reaped: pid 1 of the namespace reaps no orphan
select.select([job], [], [])  # it ends (killed: it would sleep 600 s; the caller's hang guard stops a hang)
print("ended")
"""


def test_a_stranger_given_the_number_of_a_reaped_shell_survives_and_the_job_does_not() -> None:
    took_it, stranger_alive, job = run_in_pid_namespace(SCRIPT)
    assert stranger_alive == "True"
    assert took_it == "True"
    assert job == "ended"  # the `&` job was killed with the group
