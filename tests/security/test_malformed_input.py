"""Malformed backend input gives a typed error, never `internal_error` (issue 24, "Malformed input").

A hostile or broken server (or model) sends function-call arguments nested hundreds or thousands of
levels, a call named with a number, arguments that are an array or a string, a million parts in
one chunk, a single event of 100 MB, and, to the gemini-cli adapter, ACP lines nested 10,000 levels
or larger than the line cap. Each must end in a typed error (`backend_error`) or a warning naming
what was wrong, the stream must still end with one `result`, and what the client holds while the
bad input arrives stays bounded (tracemalloc's Python peak: the buffers at stake are Python's).
"""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.raw_http import Answer, Answering
from unified import ExecuteParams
from unified import _limits as limits
from unified._adapters.interactions._translate import UNPARSED_ARGUMENTS, InteractionsTranslator
from unified._binary.framing import MAX_LINE_BYTES, LineFramer
from unified._binary.jsonrpc import JsonRpcConnection, RpcError
from unified._execute import EventStream
from unified.backends import MalformedLine
from unified.events import ErrorEvent, Result, TextDelta, UnifiedEvent, WarningEvent
from unified.testing import FakeAgentProcess
from unified.testing._fake_acp import FakeAcp, Finish, RawLine, RawUpdate, text

pytestmark = pytest.mark.anyio
MiB = 1024 * 1024

Body = Iterable[bytes]


def raw_server(bodies: list[Body]) -> Answering:
    """A loopback HTTP server answering each POST with the next body of `bodies` as SSE, streamed from its iterator
    (so a 100 MB answer is never built whole on the server side either), then with no candidates."""
    sse = "text/event-stream"
    return Answering([Answer(200, body, sse) for body in bodies], Answer(200, [_sse({"candidates": []})], sse))


def _sse(chunk: Any) -> bytes:
    return b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"


def _call(name: Any, args: Any) -> bytes:
    part = {"functionCall": {"name": name, "args": args}}
    return _sse({"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]})


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _raw_call(args_json: str) -> bytes:
    prefix = '{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": '
    return b"data: " + (prefix + args_json + '}}]}, "finishReason": "STOP"}]}').encode() + b"\r\n\r\n"


async def _run(server: Answering, tmp_path: Path, backend: str = "generate-content") -> list[UnifiedEvent]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    params = ExecuteParams(
        prompt="go",
        backend=backend,
        model="gemini-2.5-flash",
        cwd=ws,
        approval_mode="yolo",
        backend_options={"api_key": "test-key-12345", "base_url": server.base_url, "retry_delay_scale": 0.001},
    )
    async with EventStream(params) as stream:
        return [event async for event in stream]


def _typed_failure(events: list[UnifiedEvent], words: str) -> ErrorEvent:
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["backend_error"], [e.message for e in errors]
    assert words in errors[0].message
    assert isinstance(events[-1], Result)
    assert events[-1].status == "error"
    return errors[0]


def _deep_args(depth: int) -> dict[str, Any]:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return {"file_path": value}


@pytest.mark.parametrize("depth", [65, 900])
async def test_arguments_nested_deeply_are_a_typed_error(tmp_path: Path, depth: int) -> None:
    with raw_server([[_call("read_file", _deep_args(depth))]]) as server:
        events = await _run(server, tmp_path)
    _typed_failure(events, "nested deeper than 64 levels")


@pytest.mark.parametrize("depth", [2_000, 10_000])
async def test_arguments_too_deep_for_the_sdk_to_parse_are_a_typed_error(tmp_path: Path, depth: int) -> None:
    with raw_server([[_raw_call('{"x": ' + _nested(depth) + "}")]]) as server:
        events = await _run(server, tmp_path)
    _typed_failure(events, "the Gemini API sent a response that does not fit its schema")


@pytest.mark.parametrize(("name", "args"), [(123, {}), (["read_file"], {}), ({"n": 1}, {}), ("read_file", [1, 2])])
async def test_calls_of_the_wrong_shape_are_a_typed_error(tmp_path: Path, name: Any, args: Any) -> None:
    with raw_server([[_call(name, args)]]) as server:
        events = await _run(server, tmp_path)
    _typed_failure(events, "does not fit its schema")


@pytest.mark.parametrize("args", ["a string", 7, True])
async def test_scalar_arguments_are_a_typed_error(tmp_path: Path, args: Any) -> None:
    with raw_server([[_call("read_file", args)]]) as server:
        events = await _run(server, tmp_path)
    _typed_failure(events, "does not fit its schema")


@pytest.mark.parametrize("name", ["123", None, "", "a" * 10_000])
async def test_a_call_named_oddly_is_answered_as_unknown(tmp_path: Path, name: Any) -> None:
    """ "123" as a string (or no name) is a well-formed call to a tool that does not exist: the model is told."""
    final = _sse({"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}]})
    with raw_server([[_call(name, {})], [final]]) as server:
        events = await _run(server, tmp_path)
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success"


def _million_parts() -> Iterator[bytes]:
    yield b'data: {"candidates": [{"content": {"role": "model", "parts": ['
    part = b'{"text": "a"},'
    for _ in range(1_000):
        yield part * 1_000
    yield b'{"text": "a"}]}}]}\r\n\r\n'


def _huge_event(size: int) -> Iterator[bytes]:
    yield b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "'
    for _ in range(size // MiB):
        yield b"b" * MiB
    yield b'"}]}}]}\r\n\r\n'


async def _peak(coroutine: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = await coroutine
        return result, tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (_million_parts, "more than 100,000 JSON objects and arrays"),
        (lambda: _huge_event(100 * MiB), "an event over 8 MiB"),
    ],
    ids=["a-million-parts", "a-100-MB-event"],
)
async def test_a_huge_chunk_is_refused_as_it_arrives(tmp_path: Path, body: Any, words: str) -> None:
    with raw_server([body()]) as server:
        events, peak = await _peak(_run(server, tmp_path))
    _typed_failure(events, words)
    assert peak < 48 * MiB  # the refusal comes at 8 MiB (or 100,000 objects), never after the whole


async def test_too_many_parts_over_several_chunks_are_refused(tmp_path: Path) -> None:
    chunk = _sse({"candidates": [{"content": {"role": "model", "parts": [{"text": "p"}] * 2_000}}]})
    with raw_server([[chunk] * 6]) as server:
        events = await _run(server, tmp_path)
    _typed_failure(events, f"more than {limits.MAX_PARTS_PER_TURN:,} parts")


async def test_too_much_text_over_several_chunks_is_refused(tmp_path: Path) -> None:
    chunk = _sse({"candidates": [{"content": {"role": "model", "parts": [{"text": "t" * (MiB // 2)}]}}]})
    with raw_server([[chunk] * 10]) as server:
        events = await _run(server, tmp_path)
    error = _typed_failure(events, "characters of text")
    assert error.fatal
    assert sum(len(e.text) for e in events if isinstance(e, TextDelta)) <= limits.MAX_TURN_TEXT_CHARS


# --- the Interactions API's events --------------------------------------------------------------------


def _function_step(**step: Any) -> list[dict[str, Any]]:
    return [
        {"event_type": "interaction.created", "interaction": {"id": "i1", "status": "in_progress"}},
        {"event_type": "step.start", "index": 0, "step": {"type": "function_call", "id": "c1", **step}},
        {"event_type": "step.stop", "index": 0},
    ]


def _feed(events: list[dict[str, Any]]) -> list[Any]:
    translator = InteractionsTranslator()
    translator.begin_interaction()
    return [signal for event in events for signal in translator.feed(event)]


@pytest.mark.parametrize("depth", [65, 900])
def test_interactions_deep_arguments_are_a_typed_error(depth: int) -> None:
    from unified.errors import BackendError

    with pytest.raises(BackendError, match="nested deeper than 64 levels"):
        _feed(_function_step(name="read_file", arguments=_deep_args(depth)))


@pytest.mark.parametrize("arguments", [[1, 2], "text", 42])
def test_interactions_arguments_that_are_no_object_reach_the_tool_as_unparsed(arguments: Any) -> None:
    signals = _feed(_function_step(name="read_file", arguments=arguments))
    [use] = [s for s in signals if getattr(s, "type", None) == "tool_use"]
    assert UNPARSED_ARGUMENTS in use.input


def test_interactions_streamed_arguments_too_deep_to_parse_are_unparsed() -> None:
    events = _function_step(name="read_file")
    delta = {"event_type": "step.delta", "index": 0, "delta": {"type": "arguments_delta", "arguments": _nested(10_000)}}
    signals = _feed([events[0], events[1], delta, events[2]])
    [use] = [s for s in signals if getattr(s, "type", None) == "tool_use"]
    assert UNPARSED_ARGUMENTS in use.input


def test_interactions_a_call_named_with_a_number_is_a_string() -> None:
    signals = _feed(_function_step(name=123, arguments={}))
    [use] = [s for s in signals if getattr(s, "type", None) == "tool_use"]
    assert use.name == "123"


@pytest.mark.parametrize("kind", [[1], {"a": 1}, 7, None])
def test_interactions_a_step_type_of_any_shape_still_takes_its_text(kind: Any) -> None:
    start = {"event_type": "step.start", "index": 0, "step": {"type": kind}}
    piece = {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "hi"}}
    signals = _feed([start, piece])
    assert [s.text for s in signals if getattr(s, "type", None) == "text_delta"] == ["hi"]


@pytest.mark.parametrize(
    ("event", "words"),
    [
        ({"event_type": "step.delta", "index": "x", "delta": {"type": "text", "text": "a"}}, "`index` is a string"),
        ({"event_type": "step.stop", "index": None}, "`index` is null, not an integer"),
        ({"event_type": "step.start", "index": 0, "step": [1]}, "`step` is an array, not an object"),
        ({"event_type": "interaction.created", "interaction": "i1"}, "`interaction` is a string, not an object"),
        ({"event_type": "step.delta", "index": 0, "delta": 7}, "`delta` is a number, not an object"),
    ],
)
def test_interactions_an_event_field_of_the_wrong_shape_is_a_typed_error_naming_it(
    event: dict[str, Any], words: str
) -> None:
    """Found by the type-confusion fuzz (test_translator_type_confusion.py): once `internal_error`."""
    from unified.errors import BackendError

    with pytest.raises(BackendError, match="does not fit its schema") as raised:
        _feed([event])
    assert words in raised.value.message


def test_interactions_text_past_the_turn_limit_is_refused() -> None:
    from unified.errors import BackendError

    start = {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}}
    piece = {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "t" * MiB}}
    with pytest.raises(BackendError, match="characters of text"):
        _feed([start, *[piece] * 5])


# --- gemini-cli: ACP lines ------------------------------------------------------------------------


async def _acp(tmp_path: Path, fake: FakeAcp) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="go", backend="gemini-cli", cwd=tmp_path, backend_options={"start_process": fake, "pool_size": 0}
    )
    async with EventStream(params) as stream:
        return [event async for event in stream]


@pytest.mark.parametrize("depth", [65, 1_000, 10_000, 100_000])
async def test_acp_lines_nested_deeply_are_warnings_and_the_run_goes_on(tmp_path: Path, depth: int) -> None:
    line = b'{"jsonrpc":"2.0","method":"session/update","params":{"x":' + _nested(depth).encode() + b"}}\n"
    events = await _acp(tmp_path, FakeAcp([RawLine(line), text("still here"), Finish()]))
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["malformed_line"]
    assert "nested" in warnings[0].message
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert isinstance(events[-1], Result)
    assert events[-1].final_text == "still here"


@pytest.mark.parametrize("update", [[1, 2], "text", 7])
async def test_an_acp_update_that_is_no_object_is_a_warning_and_the_run_goes_on(tmp_path: Path, update: Any) -> None:
    """Found by the type-confusion fuzz (test_translator_type_confusion.py): once `internal_error`."""
    events = await _acp(tmp_path, FakeAcp([RawUpdate(update), text("after"), Finish()]))
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["malformed_line"]
    assert f"is {type(update).__name__}, not an object" in warnings[0].message
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert isinstance(events[-1], Result)
    assert events[-1].final_text == "after"


async def test_an_acp_line_over_the_cap_is_dropped_and_the_run_goes_on(tmp_path: Path) -> None:
    line = b'{"jsonrpc":"2.0","method":"session/update","params":{"x":"' + b"y" * (MAX_LINE_BYTES + MiB) + b'"}}\n'
    events = await _acp(tmp_path, FakeAcp([RawLine(line), text("after"), Finish()]))
    assert [e.code for e in events if isinstance(e, WarningEvent)] == ["malformed_line"]
    assert isinstance(events[-1], Result)
    assert events[-1].final_text == "after"


def test_the_acp_framer_holds_at_most_the_cap_of_a_100_mb_line() -> None:
    framer = LineFramer()
    chunk = b"q" * 65536
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        dropped = [out for _ in range(100 * 16) for out in framer.feed(chunk)]
        dropped += list(framer.feed(b"\n"))
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert [m.size for m in dropped if isinstance(m, MalformedLine)] == [100 * MiB]
    assert len(dropped) == 1
    assert peak < MAX_LINE_BYTES + 4 * MiB


def _answering_with(bad: Callable[[int], bytes]) -> FakeAgentProcess:
    """An agent that answers every request with the unusable line `bad(its id)`."""

    def agent(sent: str) -> list[bytes]:
        return [bad(json.loads(sent)["id"])]

    return FakeAgentProcess(agent)


@pytest.mark.parametrize(
    "bad",
    [
        lambda i: b'{"jsonrpc":"2.0","id":%d,"result":{"x":' % i + _nested(10_000).encode() + b"}}",
        lambda i: b'{"id": %d, "result": {"x":' % i + _nested(70).encode() + b"}}",
        lambda i: b'{"jsonrpc":"2.0","id":%d,"result":{"text":"' % i + b"z" * (MAX_LINE_BYTES + 10) + b'"}}',
        lambda i: b'{"id":%d,"jsonrpc":"2.0","result":{"text":"' % i + b"z" * (MAX_LINE_BYTES + 10) + b'"}}',
    ],
    ids=["too-deep-to-parse", "deeper-than-the-limit", "over-the-line-cap", "over-the-cap-id-first"],
)
async def test_an_unusable_answer_fails_its_request_at_once(bad: Callable[[int], bytes]) -> None:
    """The request the line answered gets an error now, instead of waiting for an answer forever."""
    connection = JsonRpcConnection(_answering_with(bad), name="gemini")
    with pytest.raises(RpcError) as failed:
        await connection.request("session/new", {})
    assert "nested" in failed.value.message or "over the" in failed.value.message
