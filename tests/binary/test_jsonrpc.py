"""The JSON-RPC connection over a `FakeAgentProcess`: ids, routing, the agent's requests, errors, bounds."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.harness.loop_turns import counting_turns
from unified._binary.jsonrpc import (
    UNROUTED_LIMIT,
    ConnectionClosed,
    Inbox,
    JsonRpcConnection,
    LineProblem,
    Message,
    RpcError,
    as_dict,
)
from unified.testing import FakeAgentProcess

pytestmark = pytest.mark.anyio


def by_session(message: Message) -> str | None:
    session = as_dict(message.get("params")).get("sessionId")
    return session if isinstance(session, str) else None


def echo_agent(line: str) -> list[str]:
    """Answers every request with its params; `fail` with an error; notifications get nothing."""
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        return []
    if message["method"] == "fail":
        return [json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": 429, "message": "slow down"}})]
    return [json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": message.get("params")})]


def note(session: str, n: int) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": "update", "params": {"sessionId": session, "n": n}})


async def test_a_request_gets_its_answer_and_the_wire_carries_jsonrpc_2() -> None:
    process = FakeAgentProcess(echo_agent)
    connection = JsonRpcConnection(process)
    assert await connection.request("ping", {"x": 1}) == {"x": 1}
    assert json.loads(process.received[0]) == {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": 1}}


async def test_an_error_answer_is_a_typed_exception() -> None:
    connection = JsonRpcConnection(FakeAgentProcess(echo_agent))
    with pytest.raises(RpcError) as caught:
        await connection.request("fail", {})
    assert (caught.value.method, caught.value.code, caught.value.message) == ("fail", 429, "slow down")


async def test_without_the_jsonrpc_field_as_codex_app_server_speaks() -> None:
    process = FakeAgentProcess(lambda line: [json.dumps({"id": json.loads(line)["id"], "result": {"ok": True}})])
    connection = JsonRpcConnection(process, jsonrpc_field=False)
    assert await connection.request("initialize", {}) == {"ok": True}
    assert "jsonrpc" not in json.loads(process.received[0])


async def test_notifications_go_to_their_session_and_others_to_unrouted() -> None:
    process = FakeAgentProcess(echo_agent)
    connection = JsonRpcConnection(process, route=by_session)
    inbox = connection.open_inbox("s1")
    process.emit(note("elsewhere", 0), note("s1", 1))
    message = await connection.receive(inbox)
    assert isinstance(message, dict)
    assert message["params"]["n"] == 1
    assert [m["params"]["sessionId"] for m in connection.unrouted if isinstance(m, dict)] == ["elsewhere"]


async def test_two_waiters_each_get_their_own_messages_whoever_reads() -> None:
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, route=by_session)
    inboxes = {name: connection.open_inbox(name) for name in ("a", "b")}
    got: dict[str, list[int]] = {"a": [], "b": []}

    async def reader(name: str) -> None:
        while len(got[name]) < 3:
            message = await connection.receive(inboxes[name])
            assert isinstance(message, dict)
            got[name].append(message["params"]["n"])

    process.emit(*(note(name, n) for n in range(3) for name in ("b", "a")))
    async with anyio.create_task_group() as tg:
        tg.start_soon(reader, "a")
        tg.start_soon(reader, "b")
    assert got == {"a": [0, 1, 2], "b": [0, 1, 2]}


async def test_a_routed_request_from_the_agent_is_its_sessions_to_answer() -> None:
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, route=by_session)
    inbox = connection.open_inbox("s1")
    ask = {"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission", "params": {"sessionId": "s1"}}
    process.emit(json.dumps(ask))
    message = await connection.receive(inbox)
    assert message == ask
    await connection.respond("p1", {"outcome": "ok"})
    assert json.loads(process.received[-1]) == {"jsonrpc": "2.0", "id": "p1", "result": {"outcome": "ok"}}


async def test_a_request_nobody_takes_is_answered_method_not_found_by_default() -> None:
    process = FakeAgentProcess(echo_agent)
    connection = JsonRpcConnection(process, route=by_session)
    orphan = {"jsonrpc": "2.0", "id": 7, "method": "fs/read", "params": {"sessionId": "gone"}}
    process.emit(json.dumps(orphan))
    assert await connection.request("ping", {}) == {}  # reading for it answered the orphan on the way
    answers = [json.loads(line) for line in process.received if "error" in line]
    assert answers == [{"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "fs/read is not supported"}}]
    assert not connection.unrouted


async def test_a_request_nobody_takes_goes_to_on_request() -> None:
    seen: list[Message] = []

    async def handle(connection: JsonRpcConnection, message: Message) -> None:
        seen.append(message)
        await connection.respond(message["id"], {"handled": True})

    process = FakeAgentProcess(echo_agent)
    connection = JsonRpcConnection(process, on_request=handle)
    process.emit(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "item/requestApproval", "params": {}}))
    await connection.request("ping", {})
    assert [m["id"] for m in seen] == [3]
    assert json.loads(process.received[-1])["result"] == {"handled": True}


async def test_unrouted_messages_are_bounded_and_counted() -> None:
    process = FakeAgentProcess(echo_agent)
    connection = JsonRpcConnection(process, route=by_session)
    process.emit(*(note("nobody", n) for n in range(UNROUTED_LIMIT + 25)))
    late = await connection.start_request("late", {}, Inbox())
    connection.forget(late)  # its answer (the echo) comes for nobody
    await connection.request("ping", {})
    assert len(connection.unrouted) == UNROUTED_LIMIT
    assert connection.unrouted_dropped == 26
    last = connection.unrouted[-1]
    assert isinstance(last, dict)
    assert last["id"] == late  # the newest are kept


async def test_bad_lines_are_problems_for_every_open_session() -> None:
    process = FakeAgentProcess(line_limit=90)
    connection = JsonRpcConnection(process, name="agent", route=by_session)
    inboxes = [connection.open_inbox("a"), connection.open_inbox("b")]
    process.emit("not json", b"x" * 100, b"\xff\n", note("a", 1))
    for inbox in inboxes:
        problems = [await connection.receive(inbox) for _ in range(3)]
        assert all(isinstance(p, LineProblem) for p in problems)
        texts = [p.text for p in problems if isinstance(p, LineProblem)]
        assert "not JSON" in texts[0]
        assert "100-byte line from agent: over the 90-byte cap" in texts[1]
        assert "not UTF-8" in texts[2]
    assert await connection.receive(inboxes[0]) == json.loads(note("a", 1))


async def test_the_process_ending_closes_the_connection_for_every_waiter() -> None:
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, route=by_session)
    inbox = connection.open_inbox("s")
    request = anyio.Event()

    async def wait_for_answer() -> None:
        with pytest.raises(ConnectionClosed):
            await connection.request("never", {})

    def received(line: str) -> list[str]:
        request.set()
        return []

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait_for_answer)
        process.handler = received
        await request.wait()
        process.exit(1)
        with pytest.raises(ConnectionClosed):
            await connection.receive(inbox)
    assert not connection.alive
    with pytest.raises(ConnectionClosed):
        await connection.notify("late", {})


async def test_the_observer_sees_both_directions_and_close_ends_the_process() -> None:
    seen: list[tuple[str, Any]] = []
    process = FakeAgentProcess(echo_agent, pid=42)
    connection = JsonRpcConnection(process)
    connection.observer = lambda direction, message: seen.append((direction, message.get("method", "answer")))
    await connection.request("ping", {})
    assert seen == [("send", "ping"), ("recv", "answer")]
    assert (connection.pid, connection.alive) == (42, True)
    await connection.close()
    assert process.returncode == -15
    assert not connection.alive


async def test_lines_already_read_are_received_and_sent_without_yielding_to_the_loop() -> None:
    """The read and write locks are taken without a yield when nobody holds them: a yield each was a loop
    iteration per message, the bulk of the loop's work in a codex run. Another task never gets to run
    while ten buffered messages are received and one is sent."""
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, route=by_session)
    inbox = connection.open_inbox("s")
    process.emit(*(note("s", n) for n in range(10)))
    async with counting_turns() as turns:
        received = [await connection.receive(inbox) for _ in range(10)]
        await connection.notify("done", {})
        assert turns.count == 0
    assert [m["params"]["n"] for m in received if isinstance(m, dict)] == list(range(10))


async def test_a_cancelled_reader_still_stops_at_the_lock() -> None:
    """Without the yield, a cancelled caller is still stopped where it takes the lock."""
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, route=by_session)
    inbox = connection.open_inbox("s")
    process.emit(note("s", 1))
    with anyio.CancelScope() as scope:
        scope.cancel()
        await connection.receive(inbox)
        pytest.fail("a cancelled receive returned")
    assert scope.cancelled_caught


def test_an_inbox_is_first_in_first_out() -> None:
    inbox = Inbox()
    inbox.put({"n": 1})
    inbox.put(LineProblem("bad"))
    assert inbox.pop() == {"n": 1}
    assert inbox.pop() == LineProblem("bad")
    assert inbox.pop() is None


async def test_an_answer_whose_id_is_true_does_not_answer_request_1() -> None:
    """JSON's `true` is Python's True, which equals 1: by its value alone it would be the answer to
    request 1 (a binary's slip, or a line a model steered). Only an int or a string id routes: an answer to
    an id never sent, with one request waiting, fails that request (bad input round 10), never answers it."""

    def agent(line: str) -> list[str]:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            return []
        forged = json.dumps({"id": True, "result": {"forged": True}})
        return [forged, json.dumps({"id": message["id"], "result": {"real": True}})]

    connection = JsonRpcConnection(FakeAgentProcess(agent))
    with pytest.raises(RpcError) as failed:
        await connection.request("ping", {})
    assert "answered a request unified never sent (id True; unified's requests are numbered 1 to 1)" in str(
        failed.value
    )
    assert "forged" not in str(failed.value)


def error_with_id(request_id: object, message: str = "Parse error") -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32700, "message": message}})


async def test_an_error_answer_with_id_null_fails_the_one_waiting_request_now() -> None:
    """JSON-RPC gives the id null to the error about a request the agent could not read: with one request
    waiting, that is its answer, and waiting on (for the run's timeouts) would only hang the run."""

    def agent(line: str) -> list[str]:
        return [error_with_id(None)] if "method" in json.loads(line) else []

    process = FakeAgentProcess(agent)
    connection = JsonRpcConnection(process, name="agent", route=by_session)
    inbox = connection.open_inbox("a")
    with pytest.raises(RpcError) as caught:
        await connection.request("session/prompt", {"sessionId": "a"})
    assert caught.value.code == -32700
    assert "agent answered with an error for no request unified sent (id None): Parse error" in caught.value.message
    warning = await connection.receive(inbox)
    assert isinstance(warning, LineProblem)
    assert "Parse error" in warning.text


async def test_an_error_for_an_id_never_sent_warns_and_leaves_every_waiting_request_waiting() -> None:
    """With two requests waiting, an id-null error cannot be told apart: both keep waiting for their own
    answers (which come), every session hears of it. An error with an id we never issued is a warning too."""
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, name="agent", route=by_session)
    inbox = connection.open_inbox("a")
    first = await connection.start_request("one", {}, Inbox())
    second_inbox = Inbox()
    second = await connection.start_request("two", {}, second_inbox)
    process.emit(error_with_id(None), error_with_id("7", "no such request"), error_with_id(9.0), error_with_id(99))
    process.emit(json.dumps({"id": second, "result": {"ok": True}}))
    assert await connection.receive(second_inbox) == {"id": second, "result": {"ok": True}}
    warnings = [await connection.receive(inbox) for _ in range(4)]
    texts = [w.text for w in warnings if isinstance(w, LineProblem)]
    assert [t.split("(id ")[1].split(")")[0] for t in texts] == ["None", "'7'", "9.0", "99"]
    assert "no such request" in texts[1]
    connection.forget(first)


async def test_a_late_error_for_a_forgotten_request_is_kept_unrouted_not_warned() -> None:
    """A request we gave up on (cancelled, timed out) may still be answered, with an error too: that is
    no slip of the agent's, so no session is warned and no other request is failed."""
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, name="agent", route=by_session)
    inbox = connection.open_inbox("a")
    gone = await connection.start_request("slow", {}, Inbox())
    connection.forget(gone)
    waiting = Inbox()
    live = await connection.start_request("live", {}, waiting)
    process.emit(error_with_id(gone, "too late"), json.dumps({"id": live, "result": {}}))
    assert await connection.receive(waiting) == {"id": live, "result": {}}
    assert inbox.pop() is None
    assert json.loads(error_with_id(gone, "too late")) in list(connection.unrouted)


async def test_the_warning_about_a_stray_error_keeps_an_environment_secret_out(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "AIzaSyD-stray-error-secret-0123456789abcd"
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, name="agent", route=by_session)
    inbox = connection.open_inbox("a")
    process.emit(error_with_id(None, f"bad key {secret} " + "x" * 400))
    problem = await connection.receive(inbox)
    assert isinstance(problem, LineProblem)
    assert secret not in problem.text
    assert secret[:12] not in problem.text
    assert len(problem.text) < 450


@pytest.mark.parametrize("stray", [2, 0, -1, "1", 1.0, [1], {"id": 1}])
async def test_an_answer_to_an_id_never_sent_fails_the_one_waiting_request_at_once(stray: object) -> None:
    """Bad input round 10: a result under an id unified never numbered (Codex answering a request with a wrong
    id) was kept for nobody, and the waiting request waited out its timeout (60 s for Codex) before a typed error
    said anything; now it fails at once, saying what came and what to do. Every session is warned."""
    answered: list[str] = []

    def agent(line: str) -> list[str]:
        message = json.loads(line)
        if "method" not in message:
            return []
        answered.append(message["method"])
        return [json.dumps({"id": stray, "result": {"ok": True}})]

    connection = JsonRpcConnection(FakeAgentProcess(agent), name="codex app-server", jsonrpc_field=False)
    inbox = connection.open_inbox("a")
    with pytest.raises(RpcError) as failed:
        await connection.request("thread/start", {})
    assert failed.value.method == "thread/start"
    said = failed.value.message
    assert f"codex app-server answered a request unified never sent (id {stray!r}; " in said, said
    assert "taken as the failure of request 1, the one waiting" in said
    assert "update the agent CLI or report it" in said
    warning = inbox.pop()
    assert isinstance(warning, LineProblem)
    assert "never sent" in warning.text
    assert answered == ["thread/start"]


async def test_an_answer_to_an_id_never_sent_leaves_two_waiting_requests_to_their_own_answers() -> None:
    """With two requests waiting, a stray answer cannot be told to be either's: both get their own answers."""
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, route=by_session)
    inbox = connection.open_inbox("a")
    one_inbox = Inbox()
    first = await connection.start_request("one", {}, one_inbox)
    second_inbox = Inbox()
    second = await connection.start_request("two", {}, second_inbox)
    process.emit(json.dumps({"id": 77, "result": {}}), json.dumps({"id": second, "result": {"ok": 2}}))
    process.emit(json.dumps({"id": first, "result": {"ok": 1}}))
    assert await connection.receive(second_inbox) == {"id": second, "result": {"ok": 2}}
    assert await connection.receive(one_inbox) == {"id": first, "result": {"ok": 1}}
    warning = await connection.receive(inbox)
    assert isinstance(warning, LineProblem)
    assert "(id 77; unified's requests are numbered 1 to 2)" in warning.text


async def test_a_batch_from_the_agent_is_filed_message_by_message() -> None:
    """Bad input round 10: an answer inside a JSON-RPC batch (an array of messages on one line) was refused as
    "JSON that is not an object", and its request waited for its timeout (the fake has none: it hung)."""

    def agent(line: str) -> list[str]:
        message = json.loads(line)
        if "method" not in message:
            return []
        return [json.dumps([json.loads(note("a", 1)), {"id": message["id"], "result": {"ok": True}}])]

    connection = JsonRpcConnection(FakeAgentProcess(agent), route=by_session)
    inbox = connection.open_inbox("a")
    assert await connection.request("ping", {}) == {"ok": True}
    update = inbox.pop()
    assert isinstance(update, dict)
    assert update["params"] == {"sessionId": "a", "n": 1}


@pytest.mark.parametrize("line", ["[]", "[1, 2]", '[{"id": 1}, 3]', "[" * 200 + "]" * 200])
async def test_an_array_that_is_no_batch_is_still_a_line_problem(line: str) -> None:
    process = FakeAgentProcess()
    connection = JsonRpcConnection(process, route=by_session)
    inbox = connection.open_inbox("a")
    process.emit(line)
    problem = await connection.receive(inbox)
    assert isinstance(problem, LineProblem)
    assert "ignored a line from the agent" in problem.text


async def test_an_answer_with_neither_result_nor_error_is_an_error_not_an_empty_success() -> None:
    """Bad input round 27. FAILED before: `{"id": 1}` was read as the result `{}`: a request the agent did not
    answer (Codex's `initialize`, ACP's `session/set_mode`) passed for one that succeeded and said nothing."""
    connection = JsonRpcConnection(
        FakeAgentProcess(lambda line: [json.dumps({"id": json.loads(line)["id"]})]), jsonrpc_field=False
    )
    with pytest.raises(RpcError) as failed:
        await connection.request("initialize", {})
    assert str(failed.value) == (
        "initialize failed (0): an answer with neither a result nor an error (a JSON-RPC protocol error)"
    )


async def test_an_answer_with_a_null_result_is_still_an_empty_success() -> None:
    """Pin: `result: null` is a result (JSON-RPC's answer to a method that returns nothing)."""
    connection = JsonRpcConnection(FakeAgentProcess(lambda line: [json.dumps({"id": 1, "result": None})]))
    assert await connection.request("session/cancel", {}) == {}
