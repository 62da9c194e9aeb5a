"""Bad input round 21, the unit tier: names that are almost right, a store root given as the str most callers pass,
a fallback chain where every backend gives out, and an answer that measured nothing. Each case says what happened
before.

- `FileSessionStore("/some/dir")` (a str, what most callers pass) was kept as it was: its first save or listing
  failed deep inside with "TypeError: unsupported operand type(s) for /: 'str' and 'str'"; `""` was `.`;
- an unknown backend (`claude`, `generate-contnet`, `codx` in `fallback`) listed every backend: now the nearest is
  named first, on the command line (`--backend`, `--fallback`, `sessions list --backend`, `demo --backend`,
  `scripts/demo`) and in the library's `configuration_error`;
- a run whose every backend gave out ended with the last error alone (the first backend's reason only in the
  `failover` event) and `result.backend` naming the first backend, which had not finished the run;
- a generate-content answer without `usageMetadata` (an empty 200, a proxy's answer) ended with usage 0 that was
  not flagged `estimated`, read as a measurement of nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.harness.cli_main import in_process
from tests.harness.raw_http import Answer, Answering
from tests.sessions.records import BACKEND, stored_session
from unified import ExecuteParams
from unified._execute import EventStream
from unified.errors import ConfigurationError
from unified.events import ErrorEvent, Failover, Result, UnifiedEvent
from unified.types import Fallback

API_KEY = "test-key-round21"

# --- FileSessionStore's root -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_store_root_given_as_str_saves_lists_and_loads(tmp_path: Path) -> None:
    """FAILED before: the save raised TypeError ('str' / 'str') deep in `path_of`."""
    from unified.sessions import FileSessionStore

    store = FileSessionStore(str(tmp_path / "store"))
    session = stored_session("abcd1234-0000-4000-8000-000000000001")
    await store.save(session)
    assert [info.session_id for info in await store.list_sessions(BACKEND)] == [session.session_id]
    assert (await store.load(BACKEND, session.session_id)).state == session.state
    assert (tmp_path / "store" / BACKEND / "ab" / f"{session.session_id}.json").is_file()


def test_a_store_root_with_a_tilde_is_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FAILED before: the root stayed the str '~/sessions' (a folder named `~` wherever the process ran)."""
    from unified.sessions import FileSessionStore

    monkeypatch.setenv("HOME", str(tmp_path))
    assert FileSessionStore("~/sessions").root == tmp_path / "sessions"


@pytest.mark.parametrize(
    ("root", "said"),
    [("", "root is empty, which names no directory"), (b"/tmp/s", "root is bytes, not a path"), (5, "is int")],
    ids=["empty", "bytes", "int"],
)
def test_a_store_root_that_names_no_directory_is_refused(root: Any, said: str) -> None:
    """FAILED before: each was taken; `""` would have kept sessions in whatever directory the process ran."""
    from unified.sessions import FileSessionStore

    with pytest.raises(ConfigurationError) as caught:
        FileSessionStore(root)
    assert said in caught.value.message
    assert "pass the store's directory" in str(caught.value)


# --- an unknown backend names the nearest ------------------------------------------------------------------------

NEAR = [("claude", "claude-code"), ("generate-contnet", "generate-content"), ("Gemini-CLI", "gemini-cli")]


@pytest.mark.parametrize(("given", "meant"), NEAR)
def test_run_with_an_unknown_backend_names_the_nearest(
    given: str, meant: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: the line listed the backends, naming none."""
    done = in_process(capsys, "run", "hi", "--backend", given)
    _assert_one_error_line(done, EXIT_BAD_INPUT, f"{given!r} is not one of:", f"(did you mean {meant!r}?)")


@pytest.mark.parametrize(
    "args",
    [("run", "hi", "--fallback", "generate-content,codx"), ("sessions", "list", "--backend", "codx")],
    ids=["fallback", "sessions-list"],
)
def test_other_backend_options_name_the_nearest(args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    """FAILED before: no suggestion."""
    _assert_one_error_line(in_process(capsys, *args), EXIT_BAD_INPUT, "'codx' is not one of:", "did you mean 'codex'?")


def test_a_name_near_none_lists_them_without_a_guess(capsys: pytest.CaptureFixture[str]) -> None:
    """Pin: nothing is guessed for a name like no backend."""
    done = in_process(capsys, "run", "hi", "--backend", "xyz")
    _assert_one_error_line(done, EXIT_BAD_INPUT, "'xyz' is not one of: auto, gemini-cli")
    assert "did you mean" not in done.stderr


def test_scripts_demo_check_names_the_nearest() -> None:
    """FAILED before: `scripts/demo --backend intractions` (this check, run by the system Python before setup)."""
    from unified._cli.demo_backends import check_arguments

    said = check_arguments(["--backend", "intractions"])
    assert said is not None
    assert said.endswith("(did you mean 'interactions'?)")
    assert check_arguments(["--backend=codex"]) is None


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"backend": "claude"}, "unknown backend 'claude' (did you mean 'claude-code'? choose one of:"),
        (
            {"backend": "generate-content", "fallback": ("codx",)},
            "fallback names an unknown backend 'codx' (did you mean 'codex'? choose one of:",
        ),
    ],
    ids=["backend", "fallback"],
)
async def test_the_library_names_the_nearest_backend(tmp_path: Path, params: dict[str, Any], said: str) -> None:
    """FAILED before: the hint was the list alone."""
    events = await _events(ExecuteParams(prompt="hi", cwd=tmp_path, **params))
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["configuration_error"]
    assert said in errors[0].message


# --- a fallback chain where every backend gives out ---------------------------------------------------------------


def _answers(answers: list[tuple[int, dict[str, Any] | bytes]]) -> Answering:
    """A loopback server answering each POST with the next (status, body) of `answers`, then a 500: an object as an
    SSE event (a success) or a JSON error, bytes as they are."""
    return Answering([_answer(*given) for given in answers], _answer(500, _status(500, "INTERNAL", "none left")))


def _answer(status: int, body: dict[str, Any] | bytes) -> Answer:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    if status < 300 and not isinstance(body, bytes):
        data = b"data: " + data + b"\r\n\r\n"
    return Answer(status, data, "application/json" if status >= 300 else "text/event-stream")


def _status(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


QUOTA = (429, _status(429, "RESOURCE_EXHAUSTED", "quota exhausted round21"))
BAD_KEY = (401, _status(401, "UNAUTHENTICATED", "API key not valid round21"))


def _options(server: Answering) -> dict[str, Any]:
    return {"api_key": API_KEY, "base_url": server.base_url, "retry_delay_scale": 0.001, "max_retries": 0}


def _flash(
    tmp_path: Path, backend: str, options: dict[str, Any], *, prompt: str = "hi", **fields: Any
) -> ExecuteParams:
    """A run of gemini-2.5-flash on `backend` in `tmp_path`, with `options` (a fake server's, `_options`) and any other
    `fields`: the setup the cases of rounds 21, 24 and 25 share."""
    return ExecuteParams(
        prompt=prompt, backend=backend, model="gemini-2.5-flash", cwd=tmp_path, backend_options=options, **fields
    )


async def _events(params: ExecuteParams) -> list[UnifiedEvent]:
    async with EventStream(params) as stream:
        return [event async for event in stream]


@pytest.mark.anyio
async def test_a_chain_where_every_backend_gives_out_names_each(tmp_path: Path) -> None:
    """FAILED before: the error said the interactions backend's 401 alone, `result.backend` was generate-content."""
    with _answers([QUOTA, BAD_KEY]) as server:
        params = _flash(
            tmp_path,
            "generate-content",
            _options(server),
            fallback=(Fallback(backend="interactions", model="gemini-2.5-flash", backend_options=_options(server)),),
        )
        events = await _events(params)
    assert len(server.asked) == 2  # one request each: nothing retried or sent twice
    assert [(e.from_backend, e.to_backend, e.code) for e in events if isinstance(e, Failover)] == [
        ("generate-content", "interactions", "rate_limited")
    ]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["auth_error"]  # the last backend's code
    said = errors[0].message
    assert "API key not valid round21" in said
    assert "this backend ran as the fallback after generate-content gave out (rate_limited:" in said
    assert "quota exhausted round21" in said
    assert [(g["backend"], g["code"]) for g in errors[0].details["gave_out"]] == [("generate-content", "rate_limited")]
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    assert final.backend == "interactions"  # the backend that ran last, not the one that gave out first
    # round 22: and the backend of `short_id`'s session (interactions began one before its 401), which resumes it
    assert final.short_id is not None
    assert final.short_id != next(e for e in events if isinstance(e, Failover)).left_session
    assert final.error is not None
    assert "generate-content gave out" in final.error
    assert API_KEY not in json.dumps([e.model_dump(mode="json") for e in events])


@pytest.mark.anyio
async def test_a_fallback_that_cannot_start_is_the_backend_the_result_names(tmp_path: Path) -> None:
    """FAILED before: `result.backend` named generate-content, the backend that gave out first, though the error was
    interactions' (no key given to it: a `Fallback` by name sends no backend_options)."""
    with _answers([QUOTA]) as server:
        params = _flash(tmp_path, "generate-content", _options(server), fallback=("interactions",))
        with pytest.MonkeyPatch.context() as env:
            for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
                env.delenv(name, raising=False)
            events = await _events(params)
    final = events[-1]
    assert isinstance(final, Result)
    # Round 22: the backend of `short_id`'s session (interactions began none), so the two resume it; the error names
    # interactions, the fallback that failed.
    [switch] = [e for e in events if isinstance(e, Failover)]
    assert (final.backend, final.short_id) == ("generate-content", switch.left_session)
    assert final.error is not None
    assert final.error.startswith("the interactions backend cannot authenticate")
    assert "after generate-content gave out (rate_limited" in final.error


@pytest.mark.anyio
async def test_an_error_outside_failover_on_is_left_as_it_was(tmp_path: Path) -> None:
    """Pin: an error that does not fail over names no chain (there is none) and the backend that ran."""
    with _answers([BAD_KEY]) as server:
        params = _flash(
            tmp_path, "generate-content", _options(server), fallback=("interactions",), failover_on=("rate_limited",)
        )
        events = await _events(params)
    final = events[-1]
    assert isinstance(final, Result)
    assert final.backend == "generate-content"
    assert final.error is not None
    assert "gave out" not in final.error
    assert not [e for e in events if isinstance(e, Failover)]


# --- usage an answer did not report --------------------------------------------------------------------------------

_TEXT = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]}
_CALL = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [{"functionCall": {"name": "list_directory", "args": {"path": "."}}}],
            },
            "finishReason": "STOP",
        }
    ]
}


@pytest.mark.anyio
async def test_a_turn_without_usage_metadata_flags_the_runs_usage(tmp_path: Path) -> None:
    """FAILED before: the first turn (a call, no text to estimate from) added 0 input tokens unflagged, and the run's
    usage, the second turn's measurement alone, read as measured."""
    measured = {**_TEXT, "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 1}}
    with _answers([(200, _CALL), (200, measured)]) as server:
        params = _flash(tmp_path, "generate-content", _options(server), approval_mode="yolo")
        events = await _events(params)
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success", final.error
    assert final.usage.input_tokens == 7
    assert final.usage.estimated


@pytest.mark.anyio
async def test_a_turn_with_usage_metadata_is_measured(tmp_path: Path) -> None:
    """Pin: every turn reporting its usage keeps the run's usage unflagged."""
    measured = {**_TEXT, "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 1}}
    with _answers([(200, measured)]) as server:
        params = _flash(tmp_path, "generate-content", _options(server))
        events = await _events(params)
    final = events[-1]
    assert isinstance(final, Result)
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.estimated) == (7, 1, False)


@pytest.mark.anyio
async def test_empty_answers_end_with_usage_flagged(tmp_path: Path) -> None:
    """FAILED before: an empty 200 answer ended with usage 0 read as measured, and the error said "the model's turn
    was malformed 1 times", nothing about what to do."""
    with _answers([(200, b"")] * 2) as server:
        params = _flash(tmp_path, "generate-content", _options(server))
        events = await _events(params)
    assert len(server.asked) == 1  # max_retries=0: not asked again
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"
    assert final.error is not None
    assert "the model's answer was empty" in final.error
    assert "the model's turn was malformed once, more than backend_options['max_retries'] asks again" in final.error
    assert "(run again, or raise max_retries" in final.error
    assert final.usage.estimated


# --- a reference that matches several sessions, on one line ---------------------------------------------------------


def _two_sessions_and_an_empty_record() -> Path:
    """Two readable generate-content sessions and a zero-byte record, all starting `ab`, in the default store."""
    import anyio

    from unified.sessions import FileSessionStore

    store = FileSessionStore()
    for n in (1, 2):
        anyio.run(store.save, stored_session(f"ab{n}d1234-0000-4000-8000-00000000000{n}", first_prompt=f"task {n}"))
    empty = store.root / BACKEND / "ab" / "ab3d1234-0000-4000-8000-000000000003.json"
    empty.touch()
    return empty


def test_an_ambiguous_one_character_reference_lists_the_sessions_on_one_readable_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """FAILED before: "sessions:; ab2d..." (a `;` after the colon) and the hint five blanks after the empty record's
    row; the zero-byte record is listed (by its id) and left as it was."""
    empty = _two_sessions_and_an_empty_record()
    done = in_process(capsys, "sessions", "show", "a")
    _assert_one_error_line(done, 1, "'a' matches 3 generate-content sessions: ab")
    line = done.stderr.strip()
    assert ":;" not in line
    assert "  task 2; ab1d1234-0000-4000-8000-000000000001  " in line  # newest first, each row whole
    assert "  task 1; ab3d1234-0000-4000-8000-000000000003" in line
    assert "ab3d1234-0000-4000-8000-000000000003 (give more characters of the id" in line
    assert empty.stat().st_size == 0


@pytest.mark.parametrize("ref", ["ab/..", "../ab", "..", "ab1d1234/x"])
def test_a_reference_with_a_path_in_it_matches_nothing_and_reads_no_file(
    ref: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pin: a reference is never a path: `..` or `/` in it matches no session (exit 1), whatever files are near."""
    _two_sessions_and_an_empty_record()
    done = in_process(capsys, "sessions", "show", ref)
    _assert_one_error_line(done, 1, f"no session matches {ref!r}")
