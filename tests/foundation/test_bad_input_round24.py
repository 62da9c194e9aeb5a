"""Bad input round 24, the unit tier: a caller changing its `ExecuteParams` after `execute()` returned (the run
used what was never checked), and a fallback that `backend="auto"` picked to run first. Each case says what happened
before.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError

from tests.foundation.test_bad_input_round21 import BAD_KEY, QUOTA, _answers, _events, _flash, _options
from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.harness.cli_main import in_process
from unified import ExecuteParams, backends, execute
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.conversations import Conversation, ModelTurn, TextPart, ToolCallPart, ToolResultPart, UserTurn
from unified.events import ErrorEvent, Failover, Result, SessionStarted, WarningEvent
from unified.sessions import short_id_of
from unified.types import Fallback, StdioMcpServer

# --- params changed after `execute()` returned ----------------------------------------------------------------------

RAN: list[ExecuteParams] = []
"""The parameters each run of the `probe` backend was given."""


class _Probe:
    """A backend that keeps the parameters its run was given, and ends at once."""

    name = "probe"

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []

    async def run(self, ctx: RunContext) -> RunOutcome:
        RAN.append(ctx.params)
        session_id = str(uuid.uuid4())
        await ctx.emit(
            SessionStarted(backend=self.name, session_id=session_id, short_id=short_id_of(session_id), cwd="/")
        )
        return RunOutcome(short_id=short_id_of(session_id))


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(backends, "_registered", {})
    backends.register_backend("probe", _Probe)
    RAN.clear()
    yield
    RAN.clear()


_CALL = ToolCallPart(id="c1", name="read_file", arguments={"file_path": "notes.md", "lines": [1, 2]})
_HISTORY = [
    UserTurn(parts=[TextPart(text="read the notes")]),
    ModelTurn(provider="google", parts=[_CALL]),
    UserTurn(parts=[ToolResultPart(call_id="c1", name="read_file", output="heron")]),
]


def _given(tmp_path: Path) -> ExecuteParams:
    return ExecuteParams(
        prompt="hi",
        backend="probe",
        cwd=tmp_path,
        backend_options={"env": {"LEVEL": "1"}, "flags": ["a"]},
        mcp_servers=(StdioMcpServer(name="docs", command="docs-server", env={"TOKEN_FILE": "/run/t"}),),
        fallback=(Fallback(backend="probe", model="next", backend_options={"env": {"LEVEL": "2"}}),),
        history=Conversation(turns=list(_HISTORY)),
    )


def _env_of(server: object) -> dict[str, str]:
    assert isinstance(server, StdioMcpServer)
    return server.env


@pytest.mark.anyio
@pytest.mark.usefixtures("probe")
async def test_params_changed_after_execute_returned_change_nothing_of_the_run(tmp_path: Path) -> None:
    """FAILED before: the run read the caller's object as it was when the first event was asked for: a cwd that does
    not exist, an empty prompt, a model name no API takes, a fallback that is the backend itself (each refused by
    `check_params` at the call) ran, and the changed options, MCP environment and history reached the backend."""
    params = _given(tmp_path)
    before = params.model_dump()
    stream = execute(params)
    params.cwd = tmp_path / "gone"
    params.prompt = ""
    params.model = "bad model?"
    params.backend_options["env"]["LEVEL"] = "9"  # type: ignore[index]
    params.backend_options["flags"].append("b")  # type: ignore[index, union-attr]
    _env_of(params.mcp_servers[0])["LD_PRELOAD"] = "/tmp/evil.so"
    params.fallback[0].backend_options["env"]["LEVEL"] = "3"  # type: ignore[union-attr, index]
    assert params.history is not None
    params.history.turns.append(UserTurn(parts=[TextPart(text="added later")]))
    _CALL.arguments["file_path"] = "/etc/shadow"
    try:
        async with stream:
            events = [event async for event in stream]
    finally:
        _CALL.arguments["file_path"] = "notes.md"
    assert isinstance(events[-1], Result)
    assert events[-1].status == "success", events[-1].error
    [ran] = RAN
    assert ran.model_dump() == {**before, "history": ran.model_dump()["history"]}
    assert ran.history is not None
    assert len(ran.history.turns) == 3
    assert ran.history.turns[1].parts[0] == ToolCallPart(
        id="c1", name="read_file", arguments={"file_path": "notes.md", "lines": [1, 2]}
    )
    assert _env_of(ran.mcp_servers[0]) == {"TOKEN_FILE": "/run/t"}


@pytest.mark.anyio
@pytest.mark.usefixtures("probe")
async def test_a_fallback_set_after_execute_returned_is_not_the_runs(tmp_path: Path) -> None:
    """FAILED before: `params.fallback = ("probe",)` after the call (the backend itself, refused at the call) was the
    failover chain the run read."""
    params = ExecuteParams(prompt="hi", backend="probe", cwd=tmp_path)
    stream = execute(params)
    params.fallback = ("probe",)
    async with stream:
        [event async for event in stream]
    assert RAN[0].fallback == ()
    assert type(stream._stream.guard.backend) is _Probe  # no failover wrapper: the run was given no fallback


@pytest.mark.usefixtures("probe")
def test_the_snapshot_keeps_the_fields_the_caller_set_and_the_objects_it_shares(tmp_path: Path) -> None:
    """Pin: the run's copy is equal to the caller's, says the same fields were given (`model_fields_set`, which
    `backend_options_dict` and `execute(params, **fields)` read), and shares the objects that are not data."""
    from unified._execute import _snapshot
    from unified.sessions import MemorySessionStore

    store = MemorySessionStore()
    params = _given(tmp_path).model_copy(update={"session_store": store})
    kept = _snapshot(params)
    assert kept == params
    assert kept.model_fields_set == params.model_fields_set
    assert [f.model_fields_set for f in kept.fallback if isinstance(f, Fallback)] == [
        {"backend", "model", "backend_options"}
    ]
    assert kept.session_store is store
    assert kept.backend_options is not params.backend_options
    assert kept.backend_options["env"] is not params.backend_options["env"]  # type: ignore[index]


# --- a fallback that `auto` picked to run first ---------------------------------------------------------------------


def _auto(tmp_path: Path, server: Any, fallback: tuple[str | Fallback, ...]) -> ExecuteParams:
    """`auto` with a key and base URL in the options: it routes to generate-content, the first of the preference."""
    return _flash(tmp_path, "auto", _options(server), fallback=fallback)


@pytest.mark.anyio
async def test_a_fallback_that_auto_chose_to_run_first_is_left_out_with_a_warning(tmp_path: Path) -> None:
    """FAILED before: auto chose generate-content, and after its rate limit the run failed over to generate-content
    (a `failover` event, a second request that changed nothing). Now it is left out, said in a warning before the
    run starts, and the run ends with the backend's own error (named fallbacks are refused; see
    `_without_the_chosen` for why auto's are dropped instead)."""
    with _answers([QUOTA]) as server:
        events = await _events(_auto(tmp_path, server, ("generate-content",)))
    assert len(server.asked) == 1
    assert not [e for e in events if isinstance(e, Failover)]
    [warning] = [e for e in events if isinstance(e, WarningEvent)]
    assert warning.message.startswith("fallback: generate-content is left out: auto chose generate-content")
    assert [e.code for e in events if isinstance(e, ErrorEvent)] == ["rate_limited"]


@pytest.mark.anyio
async def test_the_other_fallbacks_of_auto_are_kept(tmp_path: Path) -> None:
    """A fallback of the chosen backend on another model still runs after the one left out. FAILED before: the run
    failed over twice, to generate-content again and then to the other model."""
    with _answers([QUOTA]) as server:
        pro = Fallback(backend="generate-content", model="gemini-2.5-pro", backend_options=_options(server))
        events = await _events(_auto(tmp_path, server, ("generate-content", pro)))
    assert [(e.from_backend, e.to_backend) for e in events if isinstance(e, Failover)] == [
        ("generate-content", "generate-content")
    ]
    assert len(server.asked) == 2
    assert sum(isinstance(e, WarningEvent) and e.message.startswith("fallback: ") for e in events) == 1


def test_the_cli_says_the_fallback_auto_chose_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAILED before: `unified run --backend auto --fallback generate-content` with a Gemini key that the API refuses
    sent generate-content's request twice, a `failover` between. Now the warning is on stderr and one request is
    sent."""
    with _answers([BAD_KEY]) as server:
        monkeypatch.setenv("GEMINI_API_KEY", "test-key-round24")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.base_url)
        done = in_process(
            capsys, "run", "hi", "--backend", "auto", "--fallback", "generate-content", "--cwd", str(tmp_path)
        )
    assert len(server.asked) == 1
    assert "generate-content is left out: auto chose generate-content to run first" in done.stdout
    assert "failover" not in done.stdout
    assert done.returncode == 1


def test_a_named_backend_repeated_as_its_fallback_is_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """Pin (round 22): a backend named by the caller and again as its fallback is refused before anything runs."""
    done = in_process(capsys, "run", "hi", "--backend", "codex", "--fallback", "codex")
    _assert_one_error_line(done, EXIT_BAD_INPUT, "fallback names codex, the backend itself")


def test_every_option_a_run_writes_to_is_kept_by_the_snapshot() -> None:
    """Pin: the options a run appends to (a transcript list, kept by identity by the options' own parse) are the
    ones the snapshot leaves the caller's: a copy of one recorded nothing (`unified record` wrote an empty cassette,
    tests/security/test_secrets_round2.py)."""
    from unified._adapters.claude_code._options import ClaudeCodeOptions
    from unified._adapters.codex._options import CodexOptions
    from unified._adapters.gemini_cli._options import GeminiCliOptions
    from unified._adapters.generate_content._options import GenerateContentOptions
    from unified._adapters.interactions._options import InteractionsOptions
    from unified._binary.options import TranscriptOption
    from unified._execute import _SINK_OPTIONS, _snapshot

    [same_list] = get_args(TranscriptOption)[1:]
    models = (ClaudeCodeOptions, CodexOptions, GeminiCliOptions, GenerateContentOptions, InteractionsOptions)
    sinks = {name for model in models for name, field in model.model_fields.items() if same_list in field.metadata}
    assert sinks == _SINK_OPTIONS
    transcript: list[dict[str, Any]] = []
    params = ExecuteParams(prompt="hi", backend_options={"transcript": transcript, "env": {"A": "1"}})
    assert _snapshot(params).backend_options["transcript"] is transcript  # type: ignore[index]


# --- a flag where a number goes, and a wait without end -------------------------------------------------------------

FLAGS: dict[str, tuple[dict[str, Any], str]] = {
    "max_turns": ({"max_turns": True}, "max_turns"),
    "idle_timeout_s": ({"idle_timeout_s": True}, "idle_timeout_s"),
    "total_timeout_s": ({"total_timeout_s": False}, "total_timeout_s"),
    "user_input_timeout_s": ({"user_input_timeout_s": True}, "user_input_timeout_s"),
    "thinking.budget": ({"thinking": {"budget": False}}, "thinking.budget"),
    "mcp timeout_s": (
        {"mcp_servers": [{"type": "stdio", "name": "s", "command": "x", "timeout_s": True}]},
        "mcp_servers.0.stdio.timeout_s",
    ),
}


@pytest.mark.parametrize("case", list(FLAGS))
def test_a_bool_where_a_number_goes_is_refused(case: str, tmp_path: Path) -> None:
    """FAILED before: pydantic read True as 1 and False as 0: `max_turns=True` ran one turn, `idle_timeout_s=True`
    timed the run out after a second of silence, `thinking={"budget": False}` turned thinking off, an MCP server's
    `timeout_s=True` gave it a second. A flag of the caller's own passed by mistake now says so."""
    fields, where = FLAGS[case]
    with pytest.raises(ValidationError) as caught:
        ExecuteParams(prompt="hi", cwd=tmp_path, **fields)
    [error] = caught.value.errors()
    assert ".".join(str(part) for part in error["loc"]) == where
    assert "is a flag (a bool), not a number: give the number itself" in error["msg"]


def test_numbers_and_none_are_taken_as_before(tmp_path: Path) -> None:
    """Pin: a number, a number in a string (a config file's) and None still read as they did."""
    params = ExecuteParams(prompt="hi", cwd=tmp_path, max_turns="5", idle_timeout_s=None, total_timeout_s=2)
    assert (params.max_turns, params.idle_timeout_s, params.total_timeout_s) == (5, None, 2.0)


@pytest.mark.parametrize(
    ("value", "said"),
    [(float("inf"), "Input should be a finite number"), (float("nan"), "Value error, NaN is not a number")],
    ids=["inf", "nan"],
)
def test_a_user_input_timeout_without_end_is_refused(value: float, said: str, tmp_path: Path) -> None:
    """FAILED before: infinity was taken (the run's other bounds refuse it), and a handler that never answers held the
    run for good; NaN was refused as "Input should be greater than 0", which says nothing of what was wrong (round 26:
    said to be no number, as for every other number of seconds)."""
    with pytest.raises(ValidationError, match=f"user_input_timeout_s\n  {said}"):
        ExecuteParams(prompt="hi", cwd=tmp_path, user_input_timeout_s=value)


# --- a conversation of a newer unified ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("turn", "said"),
    [
        (
            {"role": "user", "parts": [{"type": "video", "url": "x"}]},
            "turns.0.user.parts.0\n  a type this unified does not read (not shown: it may hold a key); it reads "
            "'text', 'image', 'tool_result'. A newer unified may have written it: upgrade unified",
        ),
        ({"role": "AIzaSyround24-a-key-in-a-role-0123456789", "parts": []}, "a role this unified does not read"),
    ],
    ids=["part-type", "role"],
)
def test_a_part_or_role_this_unified_does_not_read_says_what_to_do(turn: dict[str, Any], said: str) -> None:
    """FAILED before: pydantic's "Input tag '...' found using 'type' does not match any of the expected tags", which
    said neither that a newer unified may have written the file nor what to do. The tag is still never shown."""
    text = json.dumps({"format": "unified.conversation", "version": 1, "turns": [turn]})
    with pytest.raises(ValidationError) as caught:
        Conversation.from_json(text)
    assert said in str(caught.value)
    assert "AIzaSyround24" not in str(caught.value)
