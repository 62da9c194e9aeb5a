"""A stdio MCP server's process group is never killed by a number the system may have given to a stranger.

On asyncio the loop's child watcher reaps the server the moment it exits (closed stdin); its group was
then killed by number, a moment later. In a pid namespace of its own (`tests.harness.pidns`) a stranger
is made to take that number right after the reap: the old stop killed it every time."""

from __future__ import annotations

import pytest

from tests.harness.pidns import run_in_pid_namespace

pytestmark = pytest.mark.e2e  # real child processes

SCRIPT = """
import sys
from typing import Any

import anyio

from unified.tools import _mcp_transport
from unified.types import StdioMcpServer

strangers: list[subprocess.Popen[bytes]] = []


class Planting:
    \"\"\"The server's process as the transport sees it; once it has been reaped, a stranger takes its pid.\"\"\"

    def __init__(self, process: Any) -> None:
        self._process = process

    def __getattr__(self, name: str) -> Any:
        return getattr(self._process, name)

    async def wait(self) -> int:
        code = await self._process.wait()
        if not strangers:
            strangers.append(take(self._process.pid))
            print(strangers[0].pid == self._process.pid)  # the construction works: the number was free
        return code


real_open = anyio.open_process


async def planting_open(*args: Any, **kwargs: Any) -> Planting:
    return Planting(await real_open(*args, **kwargs))


async def main() -> None:
    _mcp_transport.anyio.open_process = planting_open  # type: ignore[attr-defined]
    server = StdioMcpServer(name="s", command="sh", args=("-c", "exec cat > /dev/null"))
    async with _mcp_transport.capped_stdio(server) as (read, write):
        pass  # stopped at once: stdin closed, the server ends, is reaped, then its group is killed


anyio.run(main, backend=BACKEND)
[stranger] = strangers
print(running(stranger.pid))
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_stranger_given_an_exited_servers_number_survives_the_stop(backend: str) -> None:
    took_it, alive = run_in_pid_namespace(SCRIPT.replace("BACKEND", repr(backend)))
    assert alive == "True"
    assert took_it == "True"
