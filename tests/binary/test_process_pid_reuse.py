"""An agent's process group is never signalled by a number the system may have given to a stranger.

Run in a pid namespace of its own (`tests.harness.pidns`), where a stranger is made to get the group's
number the moment it is free: the old order (the leader reaped when its exit was looked at, the group
killed later by number) killed that stranger every time."""

from __future__ import annotations

import pytest

from tests.harness.pidns import run_in_pid_namespace

pytestmark = pytest.mark.e2e  # real child processes

SCRIPT = """
import select
import sys

import anyio

from unified._binary.process import AgentSubprocess

proc = AgentSubprocess(["sh", "-c", "exit 3"], cwd=Path("/"), env=dict(os.environ), stdin=False)
fd = os.pidfd_open(proc.pid)
select.select([fd], [], [])  # it has exited (readable at the exit, whether reaped or not)
print(proc.returncode)  # an adapter looks at how it ended
stranger = take(proc.pid)  # gets the number if it is free
print(stranger.pid == proc.pid)
if sys.argv[1] == "close":
    anyio.run(proc.close)
else:
    proc.kill()
print(running(stranger.pid))
again = take(proc.pid)  # closed: the leader is reaped, its number free
print(again.pid == proc.pid)
proc.kill()  # closed already: nothing is signalled
print(running(again.pid))
"""


@pytest.mark.parametrize("end", ["close", "kill"])
def test_a_stranger_given_the_number_of_an_exited_agents_group_survives_its_close(end: str) -> None:
    code, stranger_took_it, stranger_alive, later_took_it, later_alive = run_in_pid_namespace(
        SCRIPT.replace("sys.argv[1]", repr(end))
    )
    assert code == "3"
    assert stranger_alive == "True"
    assert stranger_took_it == "False"  # the exited leader is a zombie until the group was killed: its number held
    assert later_took_it == "True"  # the construction works: a free number does go to the stranger
    assert later_alive == "True"
