"""`unified.testing.FakeAgentProcess`: one handler from lines sent to lines answered, behaving like the real process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unified.backends import AgentProcess, MalformedLine
from unified.testing import FakeAgentProcess

pytestmark = pytest.mark.anyio


async def test_each_line_sent_gets_the_handlers_lines_back() -> None:
    process = FakeAgentProcess(lambda line: [line.upper(), "done"])
    assert isinstance(process, AgentProcess)
    await process.send("hi")
    assert [await process.receive(), await process.receive()] == ["HI", "done"]
    assert process.received == ["hi"]
    assert (process.pid, process.returncode) == (None, None)


async def test_unsolicited_output_stderr_and_exit() -> None:
    process = FakeAgentProcess()
    process.emit(json.dumps({"method": "hello"}))
    process.write_stderr("dying\n")
    process.exit(3)
    process.emit("after the end")  # a dead process writes nothing more
    assert await process.receive() == '{"method": "hello"}'
    assert await process.receive() is None
    assert (await process.wait(1.0), process.stderr_tail(), process.closed) == (3, "dying\n", True)
    with pytest.raises(ConnectionError):
        await process.send("late")


async def test_bad_lines_are_malformed_like_the_real_process() -> None:
    process = FakeAgentProcess(line_limit=10)
    process.emit(b"x" * 11, b"\xff", "fine")
    with pytest.raises(MalformedLine) as long_line:
        await process.receive()
    assert long_line.value.size == 11
    with pytest.raises(MalformedLine):
        await process.receive()
    assert await process.receive() == "fine"


async def test_close_and_kill_end_it() -> None:
    closed, killed = FakeAgentProcess(), FakeAgentProcess()
    await closed.close()
    killed.kill()
    assert (closed.returncode, killed.returncode) == (-15, -9)


def test_a_starter_gives_each_process_its_handler(tmp_path: Path) -> None:
    start = FakeAgentProcess.starter(lambda process: lambda line: [f"{process.argv[0]}: {line}"])
    process = start(["agent", "--flag"], tmp_path, {"K": "v"})
    assert (process.argv, process.env) == (["agent", "--flag"], {"K": "v"})
    assert process.handler is not None
    assert list(process.handler("x") or []) == ["agent: x"]
