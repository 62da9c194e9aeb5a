"""Line framing: a byte stream split into lines under a cap; a bad line is a value, never an exception."""

from __future__ import annotations

import json

import pytest

from unified import _limits as limits
from unified._binary.framing import LineFramer, json_line, parse_object
from unified.backends import MalformedLine


def lines(framer: LineFramer, *chunks: bytes) -> list[str | tuple[str, int]]:
    out: list[str | tuple[str, int]] = []
    for chunk in chunks:
        for line in framer.feed(chunk):
            out.append((line.reason, line.size) if isinstance(line, MalformedLine) else line)
    return out


def test_lines_are_split_across_chunks_and_blank_lines_skipped() -> None:
    framer = LineFramer()
    assert lines(framer, b'{"a":1}\n{"b"', b":2}\r\n\n  \n", b'{"c":3}') == ['{"a":1}', '{"b":2}']
    assert lines(framer, b"\n") == ['{"c":3}']  # the unfinished line waited for its newline


@pytest.mark.parametrize(
    ("chunks", "expected"),
    [
        ([b"x" * 20 + b"\n", b'{"ok":1}\n'], [("over the 16-byte cap", 20), '{"ok":1}']),
        ([b"x" * 12, b"x" * 12 + b"\n{}\n"], [("over the 16-byte cap", 24), "{}"]),
        ([b"x" * 16 + b"\n"], ["x" * 16]),
    ],
)
def test_a_line_over_the_cap_is_dropped_unbuffered(chunks: list[bytes], expected: list[object]) -> None:
    framer = LineFramer(limit=16)
    assert lines(framer, *chunks) == expected
    assert len(framer._buffer) == 0  # nothing of the oversized line is kept


def test_a_line_that_is_not_utf8_is_malformed_and_the_next_one_reads() -> None:
    framer = LineFramer()
    found = lines(framer, b"\xff\xfe oops\n", "ünïcode ok\n".encode())
    assert found[1] == "ünïcode ok"
    assert found[0] == ("not UTF-8 (invalid start byte at byte 0)", 7)


def test_json_lines_round_trip_and_parse_objects_only() -> None:
    message = {"text": "two\nlines", "n": [1, 2]}
    line = json_line(message)
    assert "\n" not in line
    assert parse_object(line) == message
    assert parse_object("not json") == "not JSON: 'not json'"
    assert str(parse_object("[1, 2]")).startswith("JSON that is not an object")
    assert json.loads(line) == message


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_parse_object_refuses_exactly_the_lines_nested_deeper_than_the_limit(opening: str) -> None:
    """The walk is skipped for lines with too few brackets to be that deep; the bound is still exact."""
    closing = "]" if opening == "[" else "}"

    def nested(depth: int) -> str:  # an object holding `depth - 1` more levels
        inner = opening * (depth - 1) + "1" + closing * (depth - 1)
        return '{"x":' + inner + "}"

    assert isinstance(parse_object(nested(limits.MAX_JSON_DEPTH)), dict)
    assert parse_object(nested(limits.MAX_JSON_DEPTH + 1)) == f"nested deeper than {limits.MAX_JSON_DEPTH} levels"
    brackets_in_text = json_line({"text": "[{" * limits.MAX_JSON_DEPTH})
    assert parse_object(brackets_in_text) == {"text": "[{" * limits.MAX_JSON_DEPTH}


def test_a_lone_surrogate_escape_parses_into_u_fffd_and_a_pair_into_its_character() -> None:
    """Half an emoji cut by a CLI's `slice` comes as `"\\ud83d"` (node's JSON.stringify escapes it): a Python
    str can hold it, no UTF-8 can (the session file, the next request, `model_dump_json` failed)."""
    from unified._binary.framing import parse_object

    assert parse_object('{"text": "half \\ud83d", "keys": {"\\udfff": ["\\uDC80"]}}') == {
        "text": "half \ufffd",
        "keys": {"\ufffd": ["\ufffd"]},
    }
    assert parse_object('{"text": "whole \\ud83d\\ude00"}') == {"text": "whole \U0001f600"}


def test_leading_fields_are_read_from_the_start_of_a_line_too_long_to_parse() -> None:
    from unified._internal.json_head import leading_fields, request_in_head

    names = ("jsonrpc", "id", "method", "type", "request_id", "n", "ok")
    head = '{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"content":"xxxx'
    opening = {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission"}
    assert leading_fields(head, names) == (opening, "params")
    assert request_in_head(head) == (7, "session/request_permission")
    assert request_in_head('{"method":"item/fileChange/requestApproval","id":"a1","params":{') == (
        "a1",
        "item/fileChange/requestApproval",
    )
    assert request_in_head('{"method":"item/started","params":{"item":{"id":3') is None  # a notification
    assert request_in_head('{"jsonrpc":"2.0","id":true,"method":"x",') is None  # an id is a number or a string
    assert request_in_head("not json at all") is None
    fields = leading_fields(' {"n": -1.5e3, "ok": true, "x": 1, "type": "later"', names)
    assert fields == ({"n": -1500.0, "ok": True}, "x")
    quoted = '{"type": "a \\" quote", "request_id": "r", "request": {'
    assert leading_fields(quoted, names) == ({"type": 'a " quote', "request_id": "r"}, "request")
    assert leading_fields('{"type": "cut off here', names) == ({}, "type")  # a value the head cuts is not read


@pytest.mark.parametrize(
    ("head", "answers"),
    [
        ('{"jsonrpc":"2.0","id":3,"result":{"text":"zzz', 3),
        ('{"id":3,"jsonrpc":"2.0","error":{"code":1', 3),  # any order of the leading fields
        ('{"id":"a1","result":[', "a1"),
        ('{"jsonrpc":"2.0","result":{"content":[{"id":5,"text":"', None),  # an id inside the result is not its own
        ('{"jsonrpc":"2.0","id":5,"method":"x","params":{', None),  # a request, not an answer
        ('{"jsonrpc":"2.0","id":true,"result":{', None),
        ('{"jsonrpc":"2.0","id":5,"params":{', None),
        ("[1, 2", None),
    ],
)
def test_an_answer_is_told_from_its_leading_fields_only(head: str, answers: int | str | None) -> None:
    from unified._internal.json_head import answer_in_head

    assert answer_in_head(head) == answers


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('\ufeff{"id": 1, "result": {}}', {"id": 1, "result": {}}),
        ('Loading...\r{"id": 1, "result": {}}', {"id": 1, "result": {}}),
        ('50%\r100%\r\ufeff{"id": 1}', {"id": 1}),
        ('{"text": "a\\rb"}', {"text": "a\rb"}),  # an escaped CR in a string is the string's
    ],
)
def test_a_line_is_read_as_a_terminal_shows_it(line: str, expected: dict[str, object]) -> None:
    """Bad input round 10: a byte order mark, or a launcher's progress text ended by a carriage return, before
    a binary's first line made it no JSON: the answer to initialize was lost, and the run waited 60 s."""
    assert parse_object(line) == expected


@pytest.mark.parametrize("line", ["Loading...\r", "\ufeff", "a\rb\rnot json", '{"id": 1}\rtrailing'])
def test_what_a_terminal_shows_of_a_line_must_still_be_a_json_object(line: str) -> None:
    assert isinstance(parse_object(line), str)


def test_many_lines_in_one_read_come_out_whole_and_in_order() -> None:
    """A 64 KiB read of short lines, split across two feeds mid-line (the framer reads by position since round 10:
    cutting off each line's rest copied it)."""
    lines = [f'{{"n": {n}}}' for n in range(7000)]
    data = ("\n".join(lines) + "\n").encode()
    framer = LineFramer()
    cut = len(data) // 2 + 3
    assert [*framer.feed(data[:cut]), *framer.feed(data[cut:])] == lines


@pytest.mark.parametrize(
    "blank", [b"\xef\xbb\xbf", b"\xef\xbb\xbf\r", b" \xef\xbb\xbf \t\r"], ids=["bom", "bom-cr", "padded"]
)
def test_a_line_of_a_byte_order_mark_alone_is_blank(blank: bytes) -> None:
    """Bad input round 27. FAILED before: such a line came out as the text "\\ufeff", which no parse reads, so the run
    warned `malformed_line` "not JSON: '\\ufeff'"; at the end of the stream it was a `MalformedLine` "cut off". A
    line with a mark before its JSON is kept as it is (`parse_object` reads past the mark)."""
    framer = LineFramer()
    assert lines(framer, blank + b"\n" + b'\xef\xbb\xbf{"a":1}\r\n' + blank) == ['\ufeff{"a":1}']
    assert framer.end() is None
