"""The ask_user MCP server of gemini-cli runs (`_ask_server.py`), over real sockets on 127.0.0.1, on asyncio and trio.

It is reachable by every local process (the model's own shell commands too): each attack below is one a
naive server (no token, no limits, no timeout, one connection at a time, a crash on bad input) fails.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import httpx
import pytest
import sniffio

from tests.hang_guard import HANG_GUARD_S
from unified._adapters.gemini_cli import _ask_server
from unified._adapters.gemini_cli._ask_server import (
    MAX_BODY_BYTES,
    MAX_HEADERS,
    PROTOCOL_VERSIONS,
    TOOL_NAME,
    AskUserServer,
    serve_ask_user,
)
from unified.events import UserInputRequest, UserInputResponse
from unified.tools._ask_user import ask_user_tool
from unified.tools._base import params_schema

pytestmark = pytest.mark.anyio

QUESTION = {"question": "Which colour?", "header": "Colour", "options": [{"label": "red"}, {"label": "blue"}]}


@pytest.fixture(autouse=True)
def _quick_ties(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call no ACP `tool_call` named waits for one briefly (the CLI announces before it calls): not 2 s here."""
    monkeypatch.setattr(_ask_server, "CALL_ID_WAIT_S", 0.05)


class Asker:
    """The run's side: records each question and answers the first option (or what `answer` says)."""

    def __init__(self, answer: UserInputResponse | None = None) -> None:
        self.asked: list[UserInputRequest] = []
        self.answer = answer or UserInputResponse(answers={"q1": "option-1"})

    async def __call__(self, request: UserInputRequest) -> UserInputResponse:
        self.asked.append(request)
        return self.answer


@asynccontextmanager
async def served(asker: Any = None) -> AsyncIterator[tuple[AskUserServer, httpx.AsyncClient]]:
    counter = iter(range(1, 100))
    async with serve_ask_user(asker or Asker(), lambda: f"question-{next(counter)}") as server:
        headers = {"Authorization": f"Bearer {server.token}"}
        async with httpx.AsyncClient(headers=headers, timeout=10) as client:
            yield server, client


def rpc(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(arguments: Any, name: str = TOOL_NAME, request_id: int = 1) -> dict[str, Any]:
    return rpc("tools/call", {"name": name, "arguments": arguments}, request_id)


async def raw_request(port: int, data: bytes) -> bytes:
    """Send `data` on a fresh connection and read everything the server answers until it closes."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(data)
        answer = b""
        with anyio.fail_after(10):
            while True:
                try:
                    answer += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return answer


# --- the protocol -------------------------------------------------------------------------------------


@pytest.mark.parametrize("asked", [*PROTOCOL_VERSIONS, "1999-01-01"])
async def test_initialize_answers_the_clients_version_when_supported(asked: str) -> None:
    async with served() as (server, client):
        reply = await client.post(server.url, json=rpc("initialize", {"protocolVersion": asked}))
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "application/json"
        result = reply.json()["result"]
        assert result["protocolVersion"] == (asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0])
        assert result["capabilities"] == {"tools": {"listChanged": False}}


async def test_tools_list_offers_exactly_the_one_ask_user_tool() -> None:
    spec = ask_user_tool(Asker(), lambda: "x")
    assert spec.params is not None
    async with served() as (server, client):
        tools = (await client.post(server.url, json=rpc("tools/list"))).json()["result"]["tools"]
    assert [t["name"] for t in tools] == [TOOL_NAME]
    # the API backends' ask_user: the same description and schema, not a second copy
    assert tools[0]["description"] == spec.description
    assert tools[0]["inputSchema"] == params_schema(spec.params)


async def test_a_call_asks_the_person_and_returns_the_api_backends_answer() -> None:
    asker = Asker()
    async with served(asker) as (server, client):
        server.note_call("mcp_x_ask__call_1", {"questions": [QUESTION]})
        reply = await client.post(server.url, json=call({"questions": [QUESTION]}))
    result = reply.json()["result"]
    assert result["isError"] is False
    assert json.loads(result["content"][0]["text"]) == {"answers": {"Which colour?": "red"}}
    [request] = asker.asked
    assert (request.source, request.tool_name, request.tool_use_id) == ("model-tool", "ask_user", "mcp_x_ask__call_1")
    assert [o.label for o in request.questions[0].options] == ["red", "blue"]


async def test_each_question_names_the_announced_call_with_its_arguments() -> None:
    """A call the CLI announced but never made (denied) does not lend its id to the next; a call ACP showed
    without arguments (an explanation over 500 characters) is tied in order."""
    asker = Asker()
    async with served(asker) as (server, client):
        server.note_call("denied", {"questions": [{"question": "Something else?"}]})
        server.note_call("real", {"questions": [QUESTION]})
        await client.post(server.url, json=call({"questions": [QUESTION]}))
        server.note_call("long", {})
        await client.post(server.url, json=call({"questions": [{"question": "x" * 600}]}))
        await client.post(server.url, json=call({"questions": [QUESTION]}))  # announced by nobody
    assert [r.tool_use_id for r in asker.asked] == ["real", "long", None]


async def test_no_answer_is_a_tool_error_the_model_reads() -> None:
    async with served(Asker(UserInputResponse(cancelled=True))) as (server, client):
        result = (await client.post(server.url, json=call({"questions": [QUESTION]}))).json()["result"]
    assert result["isError"] is True
    assert "did not answer" in result["content"][0]["text"]


async def test_notifications_get_202_and_get_or_delete_405() -> None:
    async with served() as (server, client):
        note = await client.post(server.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert (note.status_code, note.content) == (202, b"")
        for method in ("GET", "DELETE"):
            reply = await client.request(method, server.url)
            assert reply.status_code == 405
            assert reply.headers["allow"] == "POST"


async def test_the_token_travels_only_in_the_acp_entrys_headers() -> None:
    async with served() as (server, _):
        entry = server.acp_entry()
        assert server.token not in entry["url"]
        assert server.token not in entry["name"]
        assert entry["headers"] == [{"name": "Authorization", "value": f"Bearer {server.token}"}]
        assert (entry["type"], entry["url"]) == ("http", server.url)
        assert "_" not in server.name  # the CLI splits mcp_<server>_<tool> at the first underscore
        assert server.cli_tool_name == f"mcp_{server.name}_{TOOL_NAME}"


async def test_each_run_has_its_own_name_and_token() -> None:
    async with served() as (one, _), served() as (two, _):
        assert (one.name, one.token, one.port) != (two.name, two.token, two.port)
        assert one.name != two.name
        assert one.token != two.token


# --- attacks ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", "Bearer", "Basic {token}", "Bearer {token}x", "{token}", "Bearer {prefix}"],
)
async def test_a_request_without_the_token_gets_401_and_nothing_else(authorization: str | None) -> None:
    asker = Asker()
    async with served(asker) as (server, _):
        headers = {}
        if authorization is not None:
            headers["Authorization"] = authorization.format(token=server.token, prefix=server.token[:10])
        async with httpx.AsyncClient(timeout=10) as stranger:
            for body in (call({"questions": [QUESTION]}), rpc("tools/list"), rpc("initialize")):
                reply = await stranger.post(server.url, json=body, headers=headers)
                assert (reply.status_code, reply.content) == (401, b"")
            assert (await stranger.get(server.url, headers=headers)).status_code == 401
            assert (await stranger.get(f"http://127.0.0.1:{server.port}/other", headers=headers)).status_code == 401
    assert not asker.asked


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("Host", "evil.example:{port}"),
        ("Host", "127.0.0.1:1"),
        ("Origin", "http://evil.example"),
        ("Origin", "http://127.0.0.1:1"),
        ("Origin", "null"),
    ],
)
async def test_a_foreign_host_or_origin_is_refused(header: str, value: str) -> None:
    """DNS rebinding: a page of another site that resolves to 127.0.0.1 carries its own Host or Origin."""
    asker = Asker()
    async with served(asker) as (server, client):
        reply = await client.post(
            server.url, json=call({"questions": [QUESTION]}), headers={header: value.format(port=server.port)}
        )
        assert reply.status_code == 403
        own = await client.post(server.url, json=rpc("ping"), headers={"Origin": f"http://127.0.0.1:{server.port}"})
        assert own.status_code == 200
    assert not asker.asked


async def test_a_huge_body_is_refused_unread() -> None:
    asker = Asker()
    async with served(asker) as (server, client):
        padded = json.dumps(call({"questions": [QUESTION]})) + " " * MAX_BODY_BYTES
        assert (await client.post(server.url, content=padded, headers=_json())).status_code == 413

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
            yield json.dumps(call({"questions": [QUESTION]})).encode()
            for _ in range(MAX_BODY_BYTES // 1024 + 2):
                yield b" " * 1024

        try:
            reply = await client.post(server.url, content=chunks(), headers=_json())
            assert reply.status_code == 413
        except httpx.TransportError:
            pass  # the server answered and closed while the client was still sending: refused either way
        # a declared length over the limit is refused before any body byte
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {server.token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {10**9}\r\n\r\n"
        ).encode()
        assert (await raw_request(server.port, head)).startswith(b"HTTP/1.1 413 ")
    assert not asker.asked


async def test_too_many_or_too_large_headers_are_refused() -> None:
    async with served() as (server, client):
        many = {f"X-Filler-{i}": "x" for i in range(MAX_HEADERS + 1)}
        assert (await client.post(server.url, json=rpc("ping"), headers=many)).status_code == 431
        huge = {"X-Filler": "x" * (_ask_server.MAX_HEADER_BYTES + 1)}
        assert (await client.post(server.url, json=rpc("ping"), headers=huge)).status_code == 431
        assert (await client.post(server.url, json=rpc("ping"))).status_code == 200


async def test_a_slowloris_sender_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request trickled in one byte at a time is dropped at READ_TIMEOUT_S (0.5 s here): without that
    timeout the head's size cap (16 KiB) would keep it for half an hour at this pace, well past the guard."""
    monkeypatch.setattr(_ask_server, "READ_TIMEOUT_S", 0.5)
    async with served() as (server, client):
        async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
            await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            with anyio.fail_after(HANG_GUARD_S / 10):  # 60 s: 120x the timeout; a server without one: 27 min
                closed = False
                while not closed:
                    await anyio.sleep(0.1)
                    try:
                        await stream.send(b"y")  # one more byte of a header line that never ends
                    except (anyio.BrokenResourceError, OSError):
                        closed = True
                    else:
                        with anyio.move_on_after(0.01):
                            try:
                                closed = await stream.receive() == b""
                            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                                closed = True
        # a slow body is dropped the same way
        async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
            await stream.send(
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {server.token}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
            )
            with anyio.fail_after(HANG_GUARD_S / 10):
                with suppress(anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    assert await stream.receive() == b""
        assert (await client.post(server.url, json=rpc("ping"))).status_code == 200


async def test_the_read_timeout_does_not_cut_the_wait_for_the_person() -> None:
    """The person is asked outside the read's deadline: their answer may take as long as they need. Checked as the
    deadline the wait runs under (none), not by outwaiting a shortened timeout: that also timed how soon the request
    arrived, which a busy machine made later than 0.3 s (a failure seen under load with 2 workers)."""
    deadlines: list[float] = []

    async def slow(request: UserInputRequest) -> UserInputResponse:
        deadlines.append(anyio.current_effective_deadline())
        return UserInputResponse(answers={"q1": "option-2"})

    async with served(slow) as (server, client):
        result = (await client.post(server.url, json=call({"questions": [QUESTION]}))).json()["result"]
    assert json.loads(result["content"][0]["text"]) == {"answers": {"Which colour?": "blue"}}
    assert deadlines == [math.inf]


async def test_connections_beyond_the_cap_are_closed_unanswered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Idle connections hold at most MAX_CONNECTIONS slots (each for READ_TIMEOUT_S at most); one more is
    closed at once, and the server serves again once they are gone."""
    monkeypatch.setattr(_ask_server, "MAX_CONNECTIONS", 4)
    async with served() as (server, client):
        idle = [await anyio.connect_tcp("127.0.0.1", server.port) for _ in range(4)]
        await _until(lambda: server._connections == 4)  # all four accepted and reading
        extra = await raw_request(server.port, _ping_request(server))
        assert extra == b""
        for stream in idle:
            await stream.aclose()
        await _until(lambda: server._connections == 0)
        assert (await client.post(server.url, json=rpc("ping"))).status_code == 200


async def _until(condition: Callable[[], bool]) -> None:
    """Wait for the server's state to be `condition` (looked at every few ms; bounded only by the hang guard)."""
    with anyio.fail_after(HANG_GUARD_S):
        while not condition():  # noqa: ASYNC110 -- the server keeps a count, not an event, of its connections
            await anyio.sleep(0.005)


def _ping_request(server: AskUserServer) -> bytes:
    body = json.dumps(rpc("ping")).encode()
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {server.token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"[1, 2", b"\xff\xfe", b"[" * 100_00, b'"just a string"', b"[]", b'[{"jsonrpc": "2.0"}]', b"{}"],
)
async def test_malformed_json_is_a_jsonrpc_error_and_the_server_goes_on(body: bytes) -> None:
    async with served() as (server, client):
        reply = await client.post(server.url, content=body, headers=_json())
        assert reply.status_code == 400
        assert reply.json()["error"]["code"] in (-32700, -32600)
        assert (await client.post(server.url, json=rpc("ping"))).status_code == 200


async def test_a_request_that_is_not_json_or_breaks_http_is_refused() -> None:
    async with served() as (server, client):
        reply = await client.post(server.url, content=b"{}", headers={"Content-Type": "text/plain"})
        assert reply.status_code == 415
        garbage = await raw_request(server.port, b"\x00\x01 not http at all\r\n\r\n")
        assert garbage == b"" or garbage.startswith(b"HTTP/1.1 4")
        smuggle = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {server.token}\r\n"
            "Content-Length: 5\r\nContent-Length: 6\r\n\r\n{}{}{}"
        ).encode()
        assert (await raw_request(server.port, smuggle)).startswith(b"HTTP/1.1 400 ")
        version = await client.post(server.url, json=rpc("ping"), headers={"MCP-Protocol-Version": "1999-01-01"})
        assert version.status_code == 400


async def test_a_call_of_another_tool_is_an_error_and_asks_nobody() -> None:
    asker = Asker()
    async with served(asker) as (server, client):
        for name in ("run_shell_command", "ask_user", f"mcp_{server.name}_{TOOL_NAME}", "", None):
            reply = await client.post(server.url, json=call({"questions": [QUESTION]}, name=name))  # type: ignore[arg-type]
            assert reply.json()["error"]["code"] == -32602
        for method in ("resources/list", "prompts/get", "sampling/createMessage"):
            assert (await client.post(server.url, json=rpc(method))).json()["error"]["code"] == -32601
    assert not asker.asked


@pytest.mark.parametrize(
    "arguments",
    [
        None,
        "questions",
        [],
        {},
        {"questions": []},
        {"questions": [QUESTION] * 5},
        {"questions": [{"question": 42}]},
        {"questions": [{"header": "no question"}]},
        {"questions": [QUESTION], "extra": True},
        {"questions": [{**QUESTION, "options": "red"}]},
        {"questions": [{"question": "x" * 10, "multi_select": "maybe"}]},
    ],
)
async def test_bad_arguments_are_a_tool_error_the_model_reads(arguments: Any) -> None:
    asker = Asker()
    async with served(asker) as (server, client):
        reply = await client.post(server.url, json=call(arguments))
        assert reply.status_code == 200
        result = reply.json()["result"]
        assert result["isError"] is True
        assert result["content"][0]["text"].startswith("Invalid parameters provided to")
        good = (await client.post(server.url, json=call({"questions": [QUESTION]}))).json()["result"]
        assert good["isError"] is False
    assert len(asker.asked) == 1


async def test_concurrent_calls_are_asked_at_once_and_each_gets_its_own_answer() -> None:
    both_asked = anyio.Event()
    asked: list[UserInputRequest] = []

    async def ask(request: UserInputRequest) -> UserInputResponse:
        asked.append(request)
        if len(asked) == 2:
            both_asked.set()
        await both_asked.wait()  # a server serving one connection at a time never gets here
        return UserInputResponse(answers={"q1": request.questions[0].prompt.upper()})

    answers: dict[str, Any] = {}
    async with served(ask) as (server, client):
        server.note_call("call-b", {"questions": [{"question": "right"}]})  # announced in the other order
        server.note_call("call-a", {"questions": [{"question": "left"}]})

        async def one(word: str) -> None:
            reply = await client.post(server.url, json=call({"questions": [{"question": word}]}))
            answers[word] = json.loads(reply.json()["result"]["content"][0]["text"])

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(one, "left")
                tg.start_soon(one, "right")
    assert answers == {"left": {"answers": {"left": "LEFT"}}, "right": {"answers": {"right": "RIGHT"}}}
    assert {r.questions[0].prompt: r.tool_use_id for r in asked} == {"left": "call-a", "right": "call-b"}
    assert len({r.request_id for r in asked}) == 2


async def test_a_call_after_the_run_ended_is_refused_by_the_closed_port() -> None:
    before = live_tasks()
    async with served() as (server, client):
        assert (await client.post(server.url, json=rpc("ping"))).status_code == 200
        port, url, token = server.port, server.url, server.token
    assert live_tasks() == before
    async with httpx.AsyncClient(timeout=5) as late:
        with pytest.raises(httpx.ConnectError):
            await late.post(url, json=call({"questions": [QUESTION]}), headers={"Authorization": f"Bearer {token}"})
    with pytest.raises(OSError, match="connection attempts failed"):
        await anyio.connect_tcp("127.0.0.1", port)


async def test_cancelled_while_asking_closes_the_port_and_leaves_no_task() -> None:
    asking = anyio.Event()

    async def ask(request: UserInputRequest) -> UserInputResponse:
        asking.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    port = 0
    failures: list[BaseException] = []
    before = live_tasks()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as outer:
            run_scope = anyio.CancelScope()

            async def the_run() -> None:
                nonlocal port
                with run_scope:
                    async with served(ask) as (server, client):
                        port = server.port
                        try:
                            await client.post(server.url, json=call({"questions": [QUESTION]}))
                        except BaseException as exc:  # the cancellation, as the run sees it
                            failures.append(exc)
                            raise

            outer.start_soon(the_run)
            await asking.wait()
            run_scope.cancel()
    assert run_scope.cancelled_caught
    assert live_tasks() == before  # the listener and the connection's handler ended with the run
    with pytest.raises(OSError, match="connection attempts failed"):
        await anyio.connect_tcp("127.0.0.1", port)


def live_tasks() -> int:
    """The tasks alive on this event loop (asyncio) or in this run's task tree (trio)."""
    if sniffio.current_async_library() == "asyncio":
        return len(asyncio.all_tasks())
    import trio

    def tree(task: trio.lowlevel.Task) -> int:
        return 1 + sum(tree(child) for nursery in task.child_nurseries for child in nursery.child_tasks)

    root = trio.lowlevel.current_root_task()
    assert root is not None
    return tree(root)


def _json() -> dict[str, str]:
    return {"Content-Type": "application/json"}
