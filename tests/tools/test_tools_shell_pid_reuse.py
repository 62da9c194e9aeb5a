"""A shell call's process group is never killed by a number the system may have given to a stranger.

A cancel that lands after the shell has exited and been reaped (asyncio's child watcher reaps at the
exit; here while a `setsid` child still holds the output pipe, so the call waits to drain it) killed
the group by number. In a pid namespace of its own (`tests.harness.pidns`) a stranger is made to take
that number right after the reap: the old cancel killed it every time."""

from __future__ import annotations

import pytest

from tests.harness.pidns import run_in_pid_namespace

pytestmark = pytest.mark.e2e  # real child processes

SCRIPT = """
import tempfile
from typing import Any

import anyio

from unified.tools import ToolCall, ToolRuntime, _shell, _watchdog

strangers: list[subprocess.Popen[bytes]] = []
scopes: list[anyio.CancelScope] = []


class Planting:
    \"\"\"The shell as the call sees it; once it has been reaped, a stranger takes its pid, and the call is
    cancelled (the shell's `setsid` child still holds the output pipe: the call is draining it).\"\"\"

    def __init__(self, process: Any) -> None:
        self._process = process

    def __getattr__(self, name: str) -> Any:
        return getattr(self._process, name)

    async def wait(self) -> int:
        code = await self._process.wait()
        if not strangers:
            strangers.append(take(self._process.pid))
            print(strangers[0].pid == self._process.pid)  # the construction works: the number was free
            scopes[0].cancel()
        return code


real_open = anyio.open_process
# A child that leaves the group (`setsid`) holding the output pipe; the shell exits once it has left, so
# the group is empty and its number free the moment the shell is reaped.
LEAVES = "mkfifo left; setsid sh -c 'echo > left; exec sleep 600' & read _ < left"


async def planting_open(*args: Any, **kwargs: Any) -> Planting:
    return Planting(await real_open(*args, **kwargs))


async def main() -> None:
    _shell.anyio.open_process = planting_open  # type: ignore[attr-defined]
    # no cgroup: a runtime in this namespace would take the cgroups of every runtime of the machine's
    # (their hosts' pids are not in it) for orphans and kill them (`Containment.reap_orphans`)
    _watchdog.Containment.create = classmethod(lambda cls, token: None)  # type: ignore[assignment]
    async with ToolRuntime(Path(tempfile.mkdtemp()), approval_mode="yolo") as rt:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            await rt.run_batch([ToolCall("s", "run_shell_command", {"command": LEAVES})])
        print(scope.cancelled_caught)
        print(running(strangers[0].pid))


anyio.run(main, backend=BACKEND)
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_stranger_given_an_exited_shells_number_survives_a_late_cancel(backend: str) -> None:
    took_it, cancelled, alive = run_in_pid_namespace(SCRIPT.replace("BACKEND", repr(backend)))
    assert alive == "True"
    assert took_it == "True"
    assert cancelled == "True"
