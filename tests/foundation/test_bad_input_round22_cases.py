"""Bad input round 22, inputs of this round's own: an SSE answer whose lines end in a lone CR, a conversation of
10**6 tiny turns, a cost of NaN, an image whose data is no base64, a stored state's usage of another kind, odd
Retry-After values, a model or a session reference with a control character, a data folder that is a file, and tool
arguments past a file's end or through a file. Each case says whether it failed before (and how) or is a pin."""

from __future__ import annotations

import json
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.foundation.test_bad_input_round21 import _answers, _events, _options
from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.harness.cli_main import in_process
from tests.sessions.records import stored_session
from unified import ExecuteParams
from unified import _limits as limits
from unified._internal.api_errors import retry_after_header
from unified._internal.http import EventMeter, EventTooLarge
from unified.conversations import Conversation, _values
from unified.errors import CorruptSession
from unified.events import Result
from unified.tools import ToolCall, ToolRuntime

# --- 1. SSE whose lines end in a lone CR -----------------------------------------------------------------------------


def _sse(events: list[dict[str, Any]], end: bytes) -> bytes:
    return b"".join(b"data: " + json.dumps(event).encode() + end for event in events)


def _chunk(text: str, last: bool = False) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
    return {"candidates": [{**candidate, "finishReason": "STOP"} if last else candidate]}


@pytest.mark.parametrize("end", [b"\r\r", b"\n\r\n", b"\r\n\n"], ids=["cr", "lf-crlf", "crlf-lf"])
def test_an_event_meter_ends_an_event_at_any_blank_line(end: bytes) -> None:
    """SSE ends a line with CRLF, LF or a lone CR. FAILED before for `cr` (and `lf-crlf`): the meter saw no blank line,
    counted the whole stream as one event, and refused a stream of small events as "an event over" the limit."""
    meter = EventMeter("a server", 1000, 1000)
    for number in range(100):
        meter.feed(b'data: {"n": %d, "text": "%s"}' % (number, b"x" * 40) + end)
    assert meter.size < 100


def test_one_event_over_the_limit_is_still_refused_with_lone_crs() -> None:
    """Pin: a lone CR within an event's own data is no blank line."""
    meter = EventMeter("a server", 1000, 1000)
    with pytest.raises(EventTooLarge, match="a server sent an event over"):
        meter.feed(b"data: " + b"x\r" * 600)


@pytest.mark.anyio
async def test_a_long_answer_of_lone_cr_lines_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A generate-content answer of 200 small chunks, lines ended by a lone CR, under an event limit of 4 KiB. FAILED
    before: `backend_error` "sent an event over 0 MiB; it was refused unread", no text."""
    monkeypatch.setattr(limits, "MAX_EVENT_BYTES", 4096)
    body = _sse([_chunk(f"w{n} ") for n in range(199)] + [_chunk("end", last=True)], b"\r\r")
    with _answers([(200, body)]) as server:
        params = ExecuteParams(
            prompt="hi",
            backend="generate-content",
            model="gemini-2.5-flash",
            cwd=tmp_path,
            backend_options=_options(server),
        )
        result = (await _events(params))[-1]
    assert isinstance(result, Result)
    assert (result.status, result.error) == ("success", None)
    assert result.final_text.startswith("w0 w1 w2")
    assert result.final_text.endswith("w198 end")


# --- 2. a conversation of 10**6 tiny turns --------------------------------------------------------------------------


def test_counting_the_values_of_many_tiny_strings_holds_no_copy() -> None:
    """20,000 tiny turns (1.3 MB): counting its values outside strings allocates next to nothing. FAILED before: the
    text without its strings (`re2.sub`) was built, and a list of a piece between every two strings; 10**6 such turns
    (53 MB) took 77 s and 1.4 GB to be refused (now 7 s, and 133 MB with the text itself)."""
    turn = b'{"role":"user","parts":[{"type":"text","text":"a, b [c] {d}"}]}'
    text = b'{"format":"unified.conversation","version":1,"turns":[' + b",".join([turn] * 20_000) + b"]}"
    tracemalloc.start()
    try:
        count = _values(text, bound=0)  # 0: past the bound, so the strings are left out of the count
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the record's {, two commas and [; each turn's {, [, { and two commas; the 19,999 commas between the turns
    assert count == 4 + 20_000 * 5 + 19_999
    assert peak < 64 * 1024, f"{peak:,} bytes"


# --- 3, 4. a conversation's cost of NaN, an image whose data is no base64 --------------------------------------------


@pytest.mark.parametrize(("cost", "found"), [("NaN", "NaN"), ("Infinity", "Infinity")])
def test_a_cost_that_is_no_number_is_refused(cost: str, found: str) -> None:
    """FAILED before: taken (JSON5's NaN, which Python's json writes and pydantic reads), and summed into usage."""
    turn = {"role": "model", "parts": [], "usage": {"cost_usd": float(cost.lower().replace("infinity", "inf"))}}
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(json.dumps({"version": 1, "turns": [turn]}))
    assert f"cost_usd\n  found {found}, where the format has a finite number" in str(caught.value)


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ('"!!not base64"', "the image's data is not base64 (Only base64 data is allowed): an image holds its bytes as"),
        ('"AAA"', "the image's data is not base64 (Incorrect padding): an image holds its bytes as base64 text"),
        ("5", "the image's data is 5, not base64 text"),
    ],
    ids=["not-base64", "unpadded", "number"],
)
def test_an_image_whose_data_is_no_base64_says_what_to_give(data: str, said: str) -> None:
    """FAILED before: binascii's words alone ("Incorrect padding"), or "expected base64 text or bytes"."""
    part = {"type": "image", "mime_type": "image/png", "data": json.loads(data)}
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(json.dumps({"version": 1, "turns": [{"role": "user", "parts": [part]}]}))
    assert said in str(caught.value)


# --- 5. a stored state's usage of another kind ----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("usage", "said"),
    [
        ({"1": {"input_tokens": "5"}}, "input_tokens: Input should be a valid integer"),
        ({"1": {"output_tokens": -4}}, "output_tokens: Input should be greater than or equal to 0"),
    ],
    ids=["count-string", "count-negative"],
)
async def test_a_stored_states_usage_of_another_kind_is_corrupt_not_coerced(
    tmp_path: Path, usage: dict[str, Any], said: str
) -> None:
    """A generate-content session whose per-turn usage a hand or another tool wrote. FAILED before: exported with
    5 read from "5" and -4 output tokens."""
    from unified import sessions
    from unified.sessions import FileSessionStore

    store = FileSessionStore(tmp_path)
    session = stored_session("abcd1234-0000-4000-8000-0000000000aa")
    session.state["contents"].append({"role": "model", "parts": [{"text": "ok"}]})
    session.state["usage"] = usage
    await store.save(session)
    with pytest.raises(CorruptSession) as caught:
        await sessions.export(session.short_id, store=store)
    assert said in caught.value.message
    assert "it was left unchanged" in str(caught.value.hint)
    assert (await store.load(session.backend, session.session_id)).state["usage"] == usage  # kept as it was


# --- 6, 7. Retry-After values no server should send ------------------------------------------------------------------


class _Answered(Exception):
    def __init__(self, value: str) -> None:
        self.response = type("Response", (), {"headers": {"retry-after": value}})()


NOW = datetime(2026, 12, 6, 7, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("Sun, 06 Dec 9999 07:00:30 GMT", 251_603_539_230.0),  # the year 9999: a wait the policy refuses to make
        ("Sun, 06 Dec 2026 07:00:30", 30.0),  # a date without its zone is GMT, as HTTP dates are
        ("5, 10", None),  # two headers joined: which one?
        ("Sun, 06 Dec 2026 07:00:30 +2400", None),  # no zone is 24 hours off
        ("0x10", None),
    ],
    ids=["year-9999", "no-zone", "two-values", "bad-zone", "hex"],
)
def test_retry_after_values_no_server_should_send(value: str, seconds: float | None) -> None:
    """Pins: each is a wait unified can make sense of, or none (then its own backoff)."""
    assert retry_after_header(_Answered(value), NOW) == seconds


# --- 8, 9, 10. the command line: a control character in a model or a reference, a data folder that is a file -----


def test_a_model_with_a_control_character_is_refused_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Pin: `\\x01` (a paste from a terminal) would be part of the request's URL."""
    done = in_process(capsys, "run", "hi", "--backend", "scripted", "--model", "gemini\x01flash")
    _assert_one_error_line(done, EXIT_BAD_INPUT, "model 'gemini\\x01flash' is not a model name")


def test_a_session_reference_with_a_control_character_is_quoted_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pin: the reference is shown escaped, never written raw to the terminal."""
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path))
    done = in_process(capsys, "sessions", "show", "ab\x1b[2Jcd", "--backend", "generate-content")
    assert done.returncode == 1
    assert "'ab\\x1b[2Jcd'" in done.stderr
    assert "\x1b" not in done.stderr


def test_a_data_folder_that_is_a_file_is_said_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pin: `UNIFIED_DATA_DIR` naming a file says so and what to do; no session is changed."""
    data = tmp_path / "data"
    data.write_text("not a folder")
    monkeypatch.setenv("UNIFIED_DATA_DIR", str(data))
    done = in_process(capsys, "sessions", "list", "--backend", "generate-content")
    assert done.returncode == 1
    assert f"{data} is a file, where the store needs a folder" in done.stderr
    assert "point UNIFIED_DATA_DIR at a folder" in done.stderr
    assert data.read_text() == "not a folder"


# --- 11, 12. the tool runtime ---------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("name", "args", "said"),
    [
        (
            "read_file",
            {"file_path": "f.txt", "offset": 10**30},
            "offset 1000000000000000000000000000000 is past the end",
        ),
        (
            "write_file",
            {"file_path": "f.txt/inside.txt", "content": "x"},
            "part of its path is a file, not a directory",
        ),
        ("list_dir", {"dir_path": "f.txt"}, "is not a directory"),
    ],
    ids=["offset-of-31-digits", "write-through-a-file", "list-a-file"],
)
async def test_tool_arguments_that_name_nothing_there(
    tmp_path: Path, name: str, args: dict[str, Any], said: str
) -> None:
    """Pins: each is the tool's error in words the model can act on, the file left as it was."""
    (tmp_path / "f.txt").write_text("hello\n")
    [outcome] = await ToolRuntime(tmp_path, approval_mode="yolo").run_batch([ToolCall("c1", name, args)])
    assert outcome.is_error
    assert said in str(outcome.response["error"])
    assert (tmp_path / "f.txt").read_text() == "hello\n"
