"""Bad input round 20, the binary layer: bytes that are no UTF-8 in the middle of a JSON-RPC line, and a line of
100 MB.

A line that is no UTF-8 was dropped without its head (`MalformedLine.head`), which an over-the-cap line and a cut
line keep: so an answer to one of our requests could not be told apart from any other bad line, and the request
waited for an answer that never came (until the run's idle timeout, or for ever); an agent's request on such a line
was never refused, and the agent waited for ever. Now the head is kept (decoded with U+FFFD), and both fail at once
as a cut or oversized line does.
"""

from __future__ import annotations

import json
import tracemalloc

import pytest

from unified._binary.framing import HEAD_CHARS, LineFramer
from unified._binary.jsonrpc import JsonRpcConnection, LineProblem, RpcError
from unified.backends import MalformedLine
from unified.testing import FakeAgentProcess

pytestmark = pytest.mark.anyio

BAD_ANSWER = b'{"jsonrpc": "2.0", "id": 1, "result": {"text": "caf\xe9 \xff"}}'
"""An answer to request 1 with Latin-1 bytes in the middle of its text."""


def test_a_line_that_is_no_utf8_keeps_its_head() -> None:
    """FAILED before: the head was empty."""
    [bad] = LineFramer().feed(BAD_ANSWER + b"\n")
    assert isinstance(bad, MalformedLine)
    assert bad.reason == "not UTF-8 (invalid continuation byte at byte 51)"
    assert bad.head.startswith('{"jsonrpc": "2.0", "id": 1, "result": {"text": "caf\ufffd')
    [long] = LineFramer().feed(b"\xff" * (2 * HEAD_CHARS) + b"\n")
    assert isinstance(long, MalformedLine)
    assert long.head == "\ufffd" * HEAD_CHARS  # bounded as the other heads are


async def test_an_answer_that_is_no_utf8_fails_its_request_at_once() -> None:
    """The agent answers request 1 with that line, then (as an agent retrying would) with a good one. The request
    fails with the first, saying why. FAILED before: the first was not known to answer it, and the request took the
    second (with none, it waited for ever)."""
    good = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"text": "late"}})
    connection = JsonRpcConnection(FakeAgentProcess(lambda line: [BAD_ANSWER, good]), name="agent")
    with pytest.raises(RpcError) as caught:
        await connection.request("ping", {})
    assert "dropped a 57-byte line from agent: not UTF-8 (invalid continuation byte at byte 51)" in caught.value.message


async def test_an_agent_request_that_is_no_utf8_is_refused_at_once() -> None:
    """An agent asks for a permission on a line with such bytes: it is answered with an error now (and every open
    session is told), not left waiting for an answer. FAILED before (nothing answered it)."""
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, name="agent", route=lambda message: "s")
    inbox = connection.open_inbox("s")
    asked = b'{"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": {"path": "\xff"}}'
    process.emit(asked, json.dumps({"jsonrpc": "2.0", "method": "update", "params": {}}))
    problem = await connection.receive(inbox)
    assert isinstance(problem, LineProblem)
    assert "its session/request_permission request was refused unread" in problem.text
    [answer] = [json.loads(line) for line in process.received]
    assert (answer["id"], answer["error"]["code"]) == (7, -32600)
    assert "not UTF-8" in answer["error"]["message"]


def test_a_line_of_100_mb_is_dropped_holding_at_most_the_cap() -> None:
    """Pin: a 100 MB JSON-RPC frame, fed as a pipe gives it (64 KiB reads), is one `MalformedLine` with its whole size,
    and the framer never holds much more than its cap (8 MiB); the next line is read."""
    framer = LineFramer()
    chunk = b"x" * 65536
    tracemalloc.start()
    try:
        out = list(framer.feed(b'{"jsonrpc": "2.0", "id": 3, "result": "'))
        for _ in range((100 << 20) // len(chunk)):
            out += framer.feed(chunk)
        out += framer.feed(b'"}\n{"ok": 1}\n')
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    bad, after = out
    assert isinstance(bad, MalformedLine)
    assert bad.size == len('{"jsonrpc": "2.0", "id": 3, "result": "') + (100 << 20) + 2
    assert bad.head.startswith('{"jsonrpc": "2.0", "id": 3')
    assert after == '{"ok": 1}'
    assert peak < framer.limit * 5 // 4  # the cap, and what a bytearray grows by: never the 100 MB
