"""Bad input round 25, the unit tier: a fallback that `backend="auto"` with `resume` runs first (the backend that owns
the session), and conversations carried to another backend whose history that backend cannot take as it is. Each
case says what happened before.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.foundation.test_bad_input_round21 import _TEXT, QUOTA, _answers, _events, _flash, _options
from tests.harness.cli_main import in_process
from tests.harness.raw_http import Answering
from unified import ExecuteParams, sessions
from unified.conversations import (
    Conversation,
    ImagePart,
    ModelTurn,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
)
from unified.events import ErrorEvent, Failover, Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.sessions import FileSessionStore
from unified.testing import FakeGemini, Fault
from unified.testing import ModelTurn as ScriptTurn
from unified.types import Fallback

# --- a fallback that auto with resume runs first ---------------------------------------------------------------------


async def _stored_session(tmp_path: Path, store: FileSessionStore) -> str:
    """The short id of a generate-content session stored in `store`, one turn long."""
    with _answers([(200, _TEXT)]) as server:
        events = await _events(_flash(tmp_path, "generate-content", _options(server), session_store=store))
    [started] = [e for e in events if isinstance(e, SessionStarted)]
    assert started.short_id is not None
    return started.short_id


def _resuming(
    tmp_path: Path, server: Answering, store: FileSessionStore, short: str, *fallback: str | Fallback
) -> ExecuteParams:
    """`auto` resuming session `short` of `store` (it routes to generate-content, which owns it), with `fallback`."""
    return _flash(
        tmp_path, "auto", _options(server), prompt="again", resume=short, session_store=store, fallback=fallback
    )


@pytest.mark.anyio
async def test_auto_resuming_leaves_out_a_fallback_that_owns_the_session(tmp_path: Path) -> None:
    """FAILED before: `auto` resuming a generate-content session with `fallback=("generate-content",)` failed over to
    generate-content after its rate limit (a `failover` event, a second request that changed nothing), where `auto`
    without resume leaves it out (round 24). Now it is left out with the same kind of warning, and the run ends with
    the backend's own error."""
    store = FileSessionStore(tmp_path / "store")
    short = await _stored_session(tmp_path, store)
    with _answers([QUOTA]) as server:
        events = await _events(_resuming(tmp_path, server, store, short, "generate-content"))
    assert len(server.asked) == 1
    assert not [e for e in events if isinstance(e, Failover)]
    [warning] = [e for e in events if isinstance(e, WarningEvent) and e.message.startswith("fallback: ")]
    assert f"session {short} belongs to generate-content" in warning.message
    assert [e.code for e in events if isinstance(e, ErrorEvent)] == ["rate_limited"]


@pytest.mark.anyio
async def test_auto_resuming_keeps_a_fallback_on_another_model(tmp_path: Path) -> None:
    """The owner on another model is a fallback, still run after the one left out. FAILED before: two failovers,
    to generate-content again and then to the other model."""
    store = FileSessionStore(tmp_path / "store")
    short = await _stored_session(tmp_path, store)
    with _answers([QUOTA, (200, _TEXT)]) as server:
        pro = Fallback(backend="generate-content", model="gemini-2.5-pro", backend_options=_options(server))
        events = await _events(_resuming(tmp_path, server, store, short, "generate-content", pro))
    assert [(e.from_backend, e.to_backend) for e in events if isinstance(e, Failover)] == [
        ("generate-content", "generate-content")
    ]
    assert len(server.asked) == 2
    assert not [e for e in events if isinstance(e, ErrorEvent)]


# --- a failover after text was shown --------------------------------------------------------------------------------


def test_the_cli_says_where_a_failover_cut_the_shown_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: `unified run` printed the cut turn's text and the next backend's answer on one line, nothing
    between ("Partial answer that neverWhole answer."): the `failover` event rendered as nothing, so the reader could
    not tell the first words were abandoned and answered again. Now the cut line is closed and a line says which
    backend gave out, why, and that its text was answered again by the next."""
    with FakeGemini() as server:
        server.add(
            ScriptTurn(text="Partial answer that never finishes", text_chunks=3), ScriptTurn(text="Whole answer.")
        )
        server.inject(Fault(kind="mid_stream_error", after=1, carries="rate_limit"), at_request=0)
        monkeypatch.setenv("GEMINI_API_KEY", "test-key-round25")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        done = in_process(
            capsys,
            "run",
            "hi",
            "--backend",
            "generate-content",
            "--fallback",
            "interactions",
            "--cwd",
            str(tmp_path),
        )
    assert done.returncode == 0, done.stdout + done.stderr
    shown = done.stdout.splitlines()
    cut = next(n for n, line in enumerate(shown) if line.startswith("Partial"))
    said = shown[cut + 1]
    assert said.startswith("↷ failover [rate_limited]: generate-content gave out (")
    assert "the run goes on on interactions, which answers what was cut off again" in said
    assert re.search(r"its session [0-9a-f]{8} stays there", said)
    assert shown.count("Whole answer.") == 1


# --- a history whose images no provider takes -----------------------------------------------------------------------


async def _continued(tmp_path: Path, server: FakeGemini, backend: str, history: Conversation) -> list[UnifiedEvent]:
    """A run on the API `backend` against `server` (no retries), continuing `history`."""
    options = {"api_key": "k", "base_url": server.base_url, "max_retries": 0}
    return await _events(_flash(tmp_path, backend, options, prompt="go on", history=history))


PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452") + bytes(48)
"""The opening of a PNG: `image_type` reads it as one."""


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("image", "said"),
    [
        (ImagePart(mime_type="image/jpeg", data=PNG), "turn 0: image/jpeg (its bytes are image/png)"),
        (ImagePart(mime_type="image/png", data=b""), "turn 0: image/png (empty)"),
    ],
    ids=["a PNG saying JPEG", "no bytes"],
)
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_history_image_no_provider_takes_is_told_as_a_note(
    tmp_path: Path, image: ImagePart, said: str, backend: str
) -> None:
    """FAILED before: a history's image with no bytes, or whose bytes are another type than it says, was sent as it
    was (generate-content: `{"inlineData": {"data": "", ...}}`, a PNG as `image/jpeg`), a request the APIs refuse
    (HTTP 400) where the prompt's own such image is refused before the run (`check_params`). Now it is told as a text
    note, as an image of a type the target does not take is, and the run warns first naming the turn and why."""
    history = Conversation(
        turns=[UserTurn(parts=[image, TextPart(text="look")]), ModelTurn(parts=[TextPart(text="ok")])]
    )
    async with FakeGemini([ScriptTurn(text="seen")]) as server:
        events = await _continued(tmp_path, server, backend, history)
        sent = json.dumps(server.requests[-1].body)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    [warning] = [e for e in events if isinstance(e, WarningEvent) and e.message.startswith("history: ")]
    assert said in warning.message
    assert "cannot take as an image: not carried over" in sent
    assert "iVBORw0KGgo" not in sent
    assert '"data": ""' not in sent


# --- a failover whose fallback's binary is missing ------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("backend", "variable"), [("claude-code", "UNIFIED_CLAUDE_BIN"), ("gemini-cli", "UNIFIED_GEMINI_BIN")]
)
async def test_a_fallback_whose_binary_is_missing_ends_typed_and_the_session_left_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: str, variable: str
) -> None:
    """Pin (measured: right on the old code): generate-content gives out, the run fails over to a binary backend whose
    binary is not there; the run ends with `backend_unavailable` saying which binary, that it ran as the fallback and
    why the first gave out, and the result names the session left on generate-content, which still exports whole."""
    monkeypatch.setenv(variable, str(tmp_path / "missing" / "agent"))
    async with FakeGemini([ScriptTurn(text="never")]) as server:
        for index in range(4):  # the first try and the three retries
            server.inject(Fault(kind="rate_limit", retry_delay="1s"), at_request=index)
        options = {"api_key": "k", "base_url": server.base_url, "retry_delay_scale": 0.001}
        events = await _events(_flash(tmp_path, "generate-content", options, fallback=(Fallback(backend=backend),)))
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_unavailable"
    assert str(tmp_path / "missing" / "agent") in error.message
    assert "ran as the fallback after generate-content gave out (rate_limited" in error.message
    result = events[-1]
    assert isinstance(result, Result)
    assert (result.status, result.backend) == ("error", "generate-content")
    assert result.short_id is not None
    kept = await sessions.export(result.short_id)
    assert [turn.role for turn in kept.turns] == ["user"]


# --- histories the target's API may refuse or outgrow ---------------------------------------------------------------

API_BACKENDS = ("generate-content", "interactions")


@pytest.mark.anyio
@pytest.mark.parametrize("backend", API_BACKENDS)
async def test_a_ten_megabyte_tool_result_the_model_cannot_hold_ends_typed_and_the_session_stays(
    tmp_path: Path, backend: str
) -> None:
    """Pin (measured: right on the old code, ~1 s): a 10 MB tool result from another provider's session (an
    Anthropic call id) is carried whole; the API's "input token count exceeds" 400 ends the run as `bad_request`
    with the API's words (not `internal_error`), and the session begun with it is named and exports whole."""
    big = "x" * 10_000_000
    history = Conversation(
        turns=[
            UserTurn(parts=[TextPart(text="read it")]),
            ModelTurn(parts=[ToolCallPart(id="toolu_01ABC", name="read_file")], provider="anthropic"),
            UserTurn(parts=[ToolResultPart(call_id="toolu_01ABC", name="read_file", output=big)]),
            ModelTurn(parts=[TextPart(text="read.")], provider="anthropic"),
        ]
    )
    too_many = "The input token count (2621456) exceeds the maximum number of tokens allowed (1048576)."
    async with FakeGemini([ScriptTurn(text="never")]) as server:
        server.inject(Fault(kind="bad_request", message=too_many), at_request=0)
        events = await _continued(tmp_path, server, backend, history)
        assert len(server.requests) == 1
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "bad_request"
    assert too_many in error.message
    result = events[-1]
    assert isinstance(result, Result)
    assert result.short_id is not None
    kept = await sessions.export(result.short_id)
    assert big in kept.to_json()


@pytest.mark.anyio
@pytest.mark.parametrize("backend", API_BACKENDS)
async def test_turns_with_no_parts_are_left_out_and_a_model_first_history_gets_a_user_turn(
    tmp_path: Path, backend: str
) -> None:
    """Pin (measured: right on the old code): a turn with no parts (the APIs refuse an empty `parts`/`content`) is
    left out, a model turn's neighbours merged, and a history opening with the model's turn is sent after a user turn
    saying the conversation continues (the APIs want the user first); every message is sent once."""
    history = Conversation(
        turns=[
            ModelTurn(parts=[TextPart(text="first-words-1")]),
            UserTurn(parts=[]),
            ModelTurn(parts=[TextPart(text="second-words-2")]),
            UserTurn(parts=[TextPart(text="then-3")]),
            ModelTurn(parts=[]),
        ]
    )
    async with FakeGemini([ScriptTurn(text="ok")]) as server:
        events = await _continued(tmp_path, server, backend, history)
        body = server.requests[-1].body or {}
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    sent = body.get("contents") or body.get("input")
    assert isinstance(sent, list)
    assert all(turn.get("parts", turn.get("content")) for turn in sent)
    assert "[a conversation continued from here]" in json.dumps(sent[0])
    assert [json.dumps(sent).count(word) for word in ("first-words-1", "second-words-2", "then-3")] == [1, 1, 1]
