"""Bad input round 8: a vcrpy cassette edited by hand, with a field of its response of the wrong type, given to
`replay`. A `status` that is no mapping ended the replay as `internal_error` ("'int' object is not subscriptable
... a bug in unified's generate-content adapter"), a `status.code` that is no number as a `backend_error` blaming
the request ("google-genai refused to send the request (TypeError: '<=' not supported ...)"). Now the cassette is
refused before the run, naming the interaction, the field and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified.testing import ReplayError, replay_events

pytestmark = pytest.mark.anyio

TEXT_TURN = Path(__file__).parents[2] / "cassettes" / "generate-content" / "text-turn.yaml"

EDITS = {
    "status_number": (("    status:\n      code: 200\n      message: OK\n", "    status: 5\n"), "no `status` mapping"),
    "code_text": (("      code: 200\n", '      code: "abc"\n'), "`status.code` 'abc', not an HTTP status"),
    "code_out_of_range": (("      code: 200\n", "      code: 2000\n"), "`status.code` 2000, not an HTTP status"),
    "body_number": (
        ("    body:\n      string: 'data:", "    body:\n      string: 7\n      x: 'data:"),
        "`body.string`",
    ),
    "headers_number": (
        ("    headers:\n      content-type:", "    headers: 5\n    x:\n      content-type:"),
        "`headers`",
    ),
}


@pytest.mark.parametrize("case", list(EDITS))
async def test_a_response_field_of_the_wrong_type_is_refused_naming_it(tmp_path: Path, case: str) -> None:
    (old, new), words = EDITS[case]
    text = TEXT_TURN.read_text()
    assert old in text
    cassette = tmp_path / "edited.yaml"
    cassette.write_text(text.replace(old, new))
    with pytest.raises(ReplayError) as raised:
        async for _ in replay_events(cassette):
            pass
    message = str(raised.value)
    assert "interaction 1's response" in message, message
    assert words in message, message
    assert "re-record it" in message
