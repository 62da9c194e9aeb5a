"""Bad input round 15, the gemini CLI's JSON-RPC errors: an event cut in the middle of a model stream (not at its end)
fails node's `JSON.parse` in its own words, which 0.61 passes on as error 500. It was `backend_error` "the Gemini API
failed (500) ... a server-side problem" (no 500 came); now `stream_interrupted`, retryable, saying the answer is not
the API's JSON. And a session whose first prompt failed so: the CLI takes the prompt out of its history, leaving a
file it cannot load ("No previous sessions found"): the run's `short_id` resumed nothing (`session_not_found`). The
prompt is now kept as the session's one turn, as a cancelled one's is (e2e with the real binary:
tests/e2e/gemini_cli/test_gemini_cli_bad_input_round15.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adapters.gemini_cli.test_gemini_cli_history_repair import PREAMBLE, RAN, SESSION, _write
from unified._adapters.gemini_cli._chat_files import read_chat
from unified._adapters.gemini_cli._conversation import FAILED_TURN, keep_failed_prompt, open_retry
from unified._adapters.gemini_cli._outcome import error_from_acp
from unified._binary.jsonrpc import RpcError


@pytest.mark.parametrize(
    "said",
    [
        "Unterminated string in JSON at position 62 (line 1 column 63)",
        "Expected ',' or '}' after property value in JSON at position 9",
        "Expected property name or '}' in JSON at position 1",
        "Unexpected non-whitespace character after JSON at position 2",
        "Bad control character in string literal in JSON at position 20",
    ],
)
def test_node_s_words_for_an_event_cut_in_the_middle_are_a_stream_error(said: str) -> None:
    error = error_from_acp(RpcError("session/prompt", {"code": 500, "message": said}))
    assert (error.code, error.retryable) == ("stream_interrupted", True), error.message
    assert "is not its JSON" in error.message
    assert said in error.message
    assert "(500)" not in error.message


def test_an_api_error_body_that_speaks_of_json_is_still_the_api_s_error() -> None:
    """The API's own 400 for a malformed request body stays `bad_request`: its message is a JSON body."""
    body = {"error": {"code": 400, "message": "Invalid JSON payload received. Unknown name", "status": "BAD"}}
    error = error_from_acp(RpcError("session/prompt", {"code": 400, "message": json.dumps(body)}))
    assert error.code == "bad_request", error.message


def test_a_failed_first_prompt_stays_as_the_session_s_turn_and_is_what_a_retry_sends(isolated_home: Path) -> None:
    path = _write(isolated_home, [])  # the preamble alone: what the CLI left of a failed first prompt
    blocks = [{"type": "text", "text": "first"}]
    keep_failed_prompt(isolated_home / ".gemini", SESSION, blocks)
    chat = read_chat(path)
    preamble, prompt = chat.messages
    assert preamble == PREAMBLE
    assert (prompt["type"], prompt["content"]) == ("user", [{"text": "first"}])
    assert chat.meta[FAILED_TURN] == {"prompt": blocks, "after": None}
    opening = open_retry(path, SESSION)
    assert (opening.load, opening.prompt) == (SESSION, blocks)


def test_a_failed_later_prompt_leaves_the_messages_as_the_cli_wrote_them(isolated_home: Path) -> None:
    path = _write(isolated_home, [{"$set": {"messages": [PREAMBLE, *RAN]}}])
    before = read_chat(path).messages
    keep_failed_prompt(isolated_home / ".gemini", SESSION, [{"type": "text", "text": "second"}])
    assert read_chat(path).messages == before
