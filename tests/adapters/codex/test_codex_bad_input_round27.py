"""Bad input round 27, codex's app-server (a stand-in) at the end of a run on a process the pool keeps: a request of
the ending thread's that arrives while the run waits for `thread/closed`. It was read past without an answer; an
app-server that waits on it before it unloads the thread held the run to its hang guard (`END_RUN_TIMEOUT_S`), and
the warm process was given up."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import unified._adapters.codex._pool as pool_module
from tests.adapters.codex.test_codex_launch_and_run import EndsInput, run, threads_in_turn
from unified._adapters.codex._pool import CodexPool
from unified.events import Result
from unified.testing import FakeAgentProcess

pytestmark = pytest.mark.anyio

ASKED = {"id": "late-1", "method": "item/somethingNew/request", "params": {"threadId": "t1"}}


def asking_while_unloading(process: FakeAgentProcess) -> Callable[[str], list[str | bytes]]:
    """`threads_in_turn`, except that the unsubscribe is followed by a request Codex waits on: `thread/closed` comes
    only once it is answered."""
    usual = threads_in_turn(process)

    def answer(line: str) -> list[str | bytes]:
        message = json.loads(line)
        if message.get("method") == "thread/unsubscribe":
            return [json.dumps({"id": message["id"], "result": {"status": "unsubscribed"}}), json.dumps(ASKED)]
        if message.get("id") == ASKED["id"] and "method" not in message:
            return [json.dumps({"method": "thread/closed", "params": {"threadId": "t1"}})]
        return usual(line)

    return answer


async def test_a_request_while_the_thread_unloads_gets_an_error_and_the_process_stays_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: no answer to the request; the run's end waited out the hang guard (cut to 0.5 s here) and
    the pool lost its process."""
    monkeypatch.setattr(pool_module, "END_RUN_TIMEOUT_S", 0.5)
    EndsInput.steps = []
    pool = CodexPool(size=1)
    try:
        events = await run(tmp_path, EndsInput.starter(asking_while_unloading), {"pool": pool})
        assert isinstance(events[-1], Result)
        assert events[-1].status == "success"
        (entry,) = pool._entries
        process = entry.resource.process
        assert isinstance(process, EndsInput)
        [answered] = [json.loads(line) for line in process.received if json.loads(line).get("id") == ASKED["id"]]
        assert answered["error"] == {"code": -32601, "message": "item/somethingNew/request is not supported"}
        assert EndsInput.steps == []  # kept warm: neither closed nor told to exit
    finally:
        await pool.aclose()
