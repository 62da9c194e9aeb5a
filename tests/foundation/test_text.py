"""`unified._text`: text that UTF-8 can carry, made so where it comes in."""

from __future__ import annotations

import os

from unified._limits import MAX_JSON_DEPTH
from unified._text import escapes_surrogates, well_formed, well_formed_json


def test_lone_surrogates_and_escaped_bytes_become_u_fffd_and_the_rest_stays() -> None:
    assert well_formed("plain ascii") == "plain ascii"
    assert well_formed("café \U0001f600") == "café \U0001f600"
    assert well_formed("a\ud83db") == "a\ufffdb"
    assert well_formed(os.fsdecode(b"bad-\xff\xfe.txt")) == "bad-\ufffd\ufffd.txt"
    for text in ("a\ud83db", os.fsdecode(b"\xff")):
        well_formed(text).encode()  # UTF-8 carries it now


def test_json_is_walked_keys_included_and_deep_nesting_is_left_to_the_depth_check() -> None:
    assert well_formed_json({"\udc80": ["x\ud800", 3, None, ("\udfff",)]}) == {
        "\ufffd": ["x\ufffd", 3, None, ["\ufffd"]]
    }
    deep: object = "\ud800"
    for _ in range(MAX_JSON_DEPTH + 50):
        deep = [deep]
    well_formed_json(deep)  # no RecursionError: past the bound it is left as it is (and refused elsewhere)


def test_only_a_surrogate_escape_asks_for_the_walk() -> None:
    assert escapes_surrogates('{"t": "\\ud83d"}')
    assert escapes_surrogates('{"t": "\\uDC80"}')
    assert not escapes_surrogates('{"t": "\\u00e9 plain"}')
