"""Bad input round 22, the unit tier: values that read as the right one but are not (a version `"1"`, a count
`"5"`, a flag `"true"`, a count of -3), a fallback that is the backend itself, the result of a failover whose
fallback never began, and `unified doctor`'s one deadline. Each case says what happened before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from tests.foundation.test_bad_input_round21 import QUOTA, _answers, _events, _options
from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.harness.cli_main import in_process
from unified import ExecuteParams
from unified._execute import EventStream, check_params
from unified.conversations import Conversation
from unified.errors import ConfigurationError, CorruptSession
from unified.events import Failover, Result, Usage, parse_event
from unified.sessions import MemorySessionStore
from unified.types import Fallback

# --- a conversation's values, exactly of the kind the format defines -----------------------------------------------


def _conversation(**fields: Any) -> str:
    return json.dumps({"format": "unified.conversation", "version": 1, **fields})


def _model_turn(usage: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": [{"type": "text", "text": "hi"}], "usage": usage}


@pytest.mark.parametrize(
    ("version", "found"),
    [('"1"', "a string"), ("1.0", "1.0"), ("true", "true"), ("0", "0"), ("null", "null")],
    ids=["string", "float", "bool", "zero", "null"],
)
def test_a_version_that_reads_as_one_is_refused_saying_what_it_is(version: str, found: str) -> None:
    """FAILED before for string, float and bool (each taken for version 1) and for zero and null (pydantic's "Input
    should be greater than or equal to 1" / "a valid integer", neither saying what was found)."""
    text = _conversation().replace('"version": 1', f'"version": {version}')
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(text)
    said = str(caught.value)
    assert f"the conversation's version is {found}: a version is the integer 1" in said
    assert "as `unified sessions export` writes it" in said  # what to do


LOOSE = {
    "bool-as-string": (
        [
            {
                "role": "user",
                "parts": [{"type": "tool_result", "call_id": "c", "name": "n", "output": "o", "is_error": "true"}],
            }
        ],
        "is_error\n  found a string, where the format has true or false",
    ),
    "count-as-string": (
        [_model_turn({"input_tokens": "5"})],
        "input_tokens\n  found a string, where the format has an integer",
    ),
    "count-as-float": (
        [_model_turn({"input_tokens": 5.0})],
        "input_tokens\n  found 5.0, where the format has an integer",
    ),
    "negative-count": ([_model_turn({"output_tokens": -3})], "found -3, where the format has a number of at least 0"),
    "cost-as-string": ([_model_turn({"cost_usd": "0.1"})], "cost_usd\n  found a string, where the format has a number"),
    "negative-cost": ([_model_turn({"cost_usd": -1.5})], "found -1.5, where the format has a number of at least 0"),
    "text-as-number": (
        [{"role": "user", "parts": [{"type": "text", "text": 5}]}],
        "text\n  found 5, where the format has a string",
    ),
}


@pytest.mark.parametrize("case", list(LOOSE))
def test_a_value_of_another_kind_is_refused_saying_what_was_found(case: str) -> None:
    """FAILED before: each was taken (`"true"` as True, `"5"` and `5.0` as 5, -3 tokens and -1.5 dollars kept in the
    usage) but the number where text goes, refused in pydantic's words ("Input should be a valid string"), which
    said nothing of what was there."""
    turns, said = LOOSE[case]
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(_conversation(turns=turns))
    assert said in str(caught.value)


def test_a_string_found_is_never_quoted() -> None:
    """Pin: a value of the wrong kind may be a key pasted in the wrong place; only its kind is said."""
    secret = "AIzaSyround22-not-a-version-0123456789"
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(_conversation(turns=[_model_turn({"input_tokens": secret})]))
    assert secret not in str(caught.value)
    assert secret not in repr(caught.value.errors(include_input=False))


def test_a_conversation_of_the_right_kinds_still_reads() -> None:
    """Pin: an integer cost is a number (JSON has one kind of number), and what `to_json` writes reads back."""
    text = _conversation(
        turns=[{"role": "user", "parts": [{"type": "text", "text": "hi"}]}, _model_turn({"cost_usd": 2})]
    )
    conversation = Conversation.from_json(text)
    assert Conversation.from_json(conversation.to_json()) == conversation


def test_history_of_a_string_version_is_refused_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: the file was taken for a conversation and the run started."""
    path = tmp_path / "conv.json"
    path.write_text(
        _conversation(turns=[{"role": "user", "parts": [{"type": "text", "text": "hi"}]}]).replace(
            '"version": 1', '"version": "1"'
        )
    )
    done = in_process(capsys, "run", "go on", "--history", str(path), "--backend", "scripted")
    _assert_one_error_line(
        done, EXIT_BAD_INPUT, "is not a conversation", "version: the conversation's version is a string"
    )


def test_an_event_with_a_negative_count_is_refused() -> None:
    """FAILED before: `parse_event` (a consumer reading a stream) took -5 tokens; a count is never below 0."""
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        parse_event({"type": "result", "status": "success", "usage": {"input_tokens": -5}})
    with pytest.raises(ValidationError):
        Usage(cost_usd=float("nan"))


# --- a stored session's header ------------------------------------------------------------------------------------

_HEADER = {
    "format": 1,
    "backend": "generate-content",
    "id": "abcd1234-0000-4000-8000-000000000001",
    "created_at": "2026-01-01T00:00:00+00:00",
    "updated_at": "2026-01-01T00:00:00+00:00",
}


@pytest.mark.parametrize(
    ("field", "said"),
    [
        ({"turns": "3"}, "turns is a string, not a count"),
        ({"turns": True}, "turns is true, not a count"),
        ({"turns": 2.5}, "turns is 2.5, not a count"),
        ({"turns": -1}, "turns is -1, not a count"),
        ({"usage": {"input_tokens": "5"}}, "input_tokens: Input should be a valid integer"),
        ({"usage": {"estimated": "true"}}, "estimated: Input should be a valid boolean"),
        ({"usage": {"output_tokens": -2}}, "output_tokens: Input should be greater than or equal to 0"),
    ],
    ids=[
        "turns-string",
        "turns-bool",
        "turns-float",
        "turns-negative",
        "count-string",
        "flag-string",
        "count-negative",
    ],
)
def test_a_session_header_of_loose_values_is_corrupt_and_says_which(field: dict[str, Any], said: str) -> None:
    """FAILED before: each was read (`int("3")`, `int(True)`, `int(2.5)` = 2, -1 turns; the usage coerced)."""
    from unified._sessions.stores import parse_document

    with pytest.raises(CorruptSession) as caught:
        parse_document(json.dumps({"header": {**_HEADER, **field}, "state": {}}), "x.json")
    assert said in caught.value.message
    assert "it was left unchanged" in str(caught.value.hint)


# --- a fallback that is the backend itself, or named twice -----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--backend", "generate-content", "--fallback", "generate-content"), "fallback names generate-content, the "),
        (("--backend", "codex", "--fallback", "interactions,interactions"), "fallback names interactions twice"),
        (("--fallback", "codex,gemini-cli,codex"), "fallback names codex twice"),
    ],
    ids=["itself", "twice", "twice-after-auto"],
)
def test_run_refuses_a_fallback_that_repeats_a_backend(
    args: tuple[str, ...], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: each was taken, and the run went on on what had just given out."""
    _assert_one_error_line(in_process(capsys, "run", "hi", *args), EXIT_BAD_INPUT, said)


def _library_params(tmp_path: Path, **fields: Any) -> ExecuteParams:
    return ExecuteParams(prompt="hi", backend="generate-content", model="gemini-2.5-flash", cwd=tmp_path, **fields)


@pytest.mark.parametrize(
    ("fallback", "said"),
    [
        (("generate-content",), "the backend itself"),
        ((Fallback(backend="generate-content", model="gemini-2.5-flash"),), "the backend itself"),
        (("interactions", Fallback(backend="interactions")), None),
        ((Fallback(backend="codex", model="o3"), Fallback(backend="codex", model="o3")), "codex twice"),
    ],
    ids=["name", "same-model", "name-and-fallback", "fallback-twice"],
)
def test_the_library_refuses_a_fallback_that_repeats_a_backend(
    tmp_path: Path, fallback: tuple[str | Fallback, ...], said: str | None
) -> None:
    """FAILED before (but the pin): taken. A name and a `Fallback` of the same backend are two runs (the name sends
    no backend_options), so they are kept."""
    params = _library_params(tmp_path, fallback=fallback)
    if said is None:
        check_params(params)
        return
    with pytest.raises(ConfigurationError) as caught:
        EventStream(params)
    assert said in caught.value.message
    assert "name another backend" in str(caught.value.hint) or "once" in str(caught.value.hint)


def test_a_fallback_of_the_same_backend_on_another_model_is_kept(tmp_path: Path) -> None:
    """Pin: the next model of one backend is what a rate limit on a model calls for."""
    check_params(_library_params(tmp_path, fallback=(Fallback(backend="generate-content", model="gemini-2.5-pro"),)))


# --- the result of a failover whose fallback never began ------------------------------------------------------------

_ANSWER = (
    200,
    {"candidates": [{"content": {"role": "model", "parts": [{"text": "resumed r22"}]}, "finishReason": "STOP"}]},
)


@pytest.mark.anyio
async def test_the_result_of_a_fallback_that_never_began_resumes_the_session_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """generate-content gives out (429), interactions (no key: a `Fallback` by name sends no backend_options) fails
    before it begins a session. FAILED before: the result paired generate-content's short id with `backend`
    interactions, and resuming that pair answered session_not_found ("belongs to the generate-content backend")."""
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    store = MemorySessionStore()
    with _answers([QUOTA, _ANSWER]) as server:
        first = await _events(
            _library_params(tmp_path, backend_options=_options(server), fallback=("interactions",), session_store=store)
        )
        [switch] = [e for e in first if isinstance(e, Failover)]
        result = first[-1]
        assert isinstance(result, Result)
        assert (result.backend, result.short_id) == ("generate-content", switch.left_session)
        assert result.error is not None
        assert result.error.startswith("the interactions backend cannot authenticate")  # the fallback that failed
        assert "generate-content gave out (rate_limited: " in result.error
        assert f"its session {switch.left_session} left as it was" in result.error
        again = await _events(
            ExecuteParams(
                prompt="go on",
                backend=str(result.backend),
                model="gemini-2.5-flash",
                cwd=tmp_path,
                backend_options=_options(server),
                resume=result.short_id,
                session_store=store,
            )
        )
    resumed = again[-1]
    assert isinstance(resumed, Result)
    assert (resumed.status, resumed.final_text, resumed.short_id) == ("success", "resumed r22", result.short_id)
