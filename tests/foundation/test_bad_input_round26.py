"""Bad input round 26, the unit tier: a conversation larger than any provider takes in a request, NaN where a number
of seconds goes, empty text parts sent as they were, and a third-party backend's options the run shared with its
caller. Each case says what happened before.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Any, NamedTuple, SupportsIndex

import pytest
from pydantic import ValidationError

from tests.foundation.test_bad_input_round24 import RAN, probe  # noqa: F401 -- the fixture
from tests.foundation.test_cli_errors import EXIT_BAD_INPUT, _assert_one_error_line
from tests.harness.cli_main import in_process
from unified import ExecuteParams, execute
from unified import _limits as limits
from unified.conversations import Conversation, ModelTurn, TextPart, UserTurn
from unified.errors import ConfigurationError
from unified.types import Fallback

# --- a conversation larger than a provider takes ---------------------------------------------------------------------

_OVER = limits.MAX_CONVERSATION_BYTES + 1024 * 1024
"""Characters of one text a little over the bound: 33 MiB, a third of the 100 MB the round's report named."""


def _large() -> Conversation:
    return Conversation(turns=[UserTurn(parts=[TextPart(text="x" * _OVER)]), ModelTurn(parts=[TextPart(text="seen")])])


def test_the_bound_is_what_the_providers_take_in_a_request() -> None:
    """FAILED before: 256 MiB (a 100 MB history was taken, written and sent to fail at the provider, whose
    requests stop at 32 MB). The stored records' own bound stays where it was: an agent CLI's files of a long
    session still resume on their own backend."""
    assert limits.MAX_CONVERSATION_BYTES == 32 * 1024 * 1024
    assert limits.MAX_SESSION_RECORD_BYTES == 512 * 1024 * 1024


def test_a_history_file_over_the_bound_names_its_size_and_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """FAILED before: the 33 MiB file ran (exit 0 on the scripted backend)."""
    path = tmp_path / "big.json"
    path.write_text(_large().to_json(), encoding="utf-8")
    size = path.stat().st_size
    done = in_process(capsys, "run", "go on", "--backend", "scripted", "--cwd", str(tmp_path), "--history", str(path))
    _assert_one_error_line(
        done, EXIT_BAD_INPUT, f"is {size:,} bytes of JSON", "more than a run takes (33,554,432, 32 MiB", "oldest turns"
    )


def test_the_library_refuses_the_same_history_naming_its_size_and_the_limit(tmp_path: Path) -> None:
    """FAILED before: `execute()` took it (no error)."""
    history = _large()
    size = len(history.to_json())
    with pytest.raises(ConfigurationError) as caught:
        execute(ExecuteParams(prompt="go on", backend="scripted", cwd=tmp_path, history=history))
    assert f"it is {size:,} bytes of JSON" in caught.value.message
    assert "more than a run takes (33,554,432, 32 MiB" in caught.value.message


def test_a_history_under_the_bound_is_taken(tmp_path: Path) -> None:
    """Pin: 31 MiB is taken."""
    history = Conversation(
        turns=[UserTurn(parts=[TextPart(text="x" * (31 * 1024 * 1024))]), ModelTurn(parts=[TextPart(text="seen")])]
    )
    execute(ExecuteParams(prompt="go on", backend="scripted", cwd=tmp_path, history=history))


# --- NaN where a number of seconds goes ------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["nan", "NaN", "-nan"])
def test_timeout_nan_says_it_is_not_a_number(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    """FAILED before: "Invalid value for '--timeout': Input should be greater than or equal to 0.001", the wording
    of a number out of range."""
    done = in_process(capsys, "run", "hi", "--backend", "scripted", "--timeout", given)
    assert done.returncode == EXIT_BAD_INPUT
    assert "nan is not a number" in done.stderr
    assert "greater than" not in done.stderr


@pytest.mark.parametrize(("given", "said"), [("0", "0 s is shorter than any run"), ("-1", "-1 s is shorter")])
def test_timeout_out_of_range_is_still_refused(given: str, said: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Pin: a number under 0.001 s is refused, now with the least it takes."""
    done = in_process(capsys, "run", "hi", "--backend", "scripted", "--timeout", given)
    assert done.returncode == EXIT_BAD_INPUT
    assert said in done.stderr
    assert "give at least 0.001 s" in done.stderr


@pytest.mark.parametrize("field", ["total_timeout_s", "idle_timeout_s", "user_input_timeout_s"])
@pytest.mark.parametrize("given", [float("nan"), "nan", " NaN "])
def test_the_library_says_nan_is_not_a_number(field: str, given: object, tmp_path: Path) -> None:
    """FAILED before: "Input should be greater than 0", as if a number had been given."""
    with pytest.raises(ValidationError) as caught:
        ExecuteParams.model_validate({"prompt": "hi", "cwd": tmp_path, field: given})
    assert "NaN is not a number" in str(caught.value)
    assert "greater than" not in str(caught.value)


def test_numbers_of_seconds_are_taken_as_before(tmp_path: Path) -> None:
    """Pin: a number, a number in a string, and None where it is allowed."""
    params = ExecuteParams(prompt="hi", cwd=tmp_path, total_timeout_s="2.5", idle_timeout_s=None)
    assert (params.total_timeout_s, params.idle_timeout_s) == (2.5, None)


# --- a third-party backend's options after `execute()` returned -----------------------------------------------------


class _Pair(NamedTuple):
    host: str
    ports: list[int]


@pytest.mark.anyio
@pytest.mark.usefixtures("probe")
async def test_a_third_party_backends_options_changed_after_execute_change_nothing(tmp_path: Path) -> None:
    """FAILED before: a third-party backend's option named as a built-in's sink (`transcript`, `acp_transcript`) was
    left the caller's, so a caller changing it after `execute()` changed the run; a `defaultdict` option reached the
    backend as a plain dict (its first missing key a KeyError) and a `NamedTuple` as a tuple without its fields."""
    table: defaultdict[str, list[str]] = defaultdict(list, {"a": ["1"]})
    options: dict[str, object] = {
        "transcript": [{"keep": "this"}],
        "acp_transcript": {"mode": "full"},
        "table": table,
        "pair": _Pair("h", [1]),
        "order": OrderedDict(b=[2]),
    }
    params = ExecuteParams(prompt="hi", backend="probe", cwd=tmp_path, backend_options=options)
    stream = execute(params)
    given = params.backend_options
    assert isinstance(given, dict)
    given["transcript"].append({"added": "later"})  # type: ignore[attr-defined]
    given["acp_transcript"]["mode"] = "none"  # type: ignore[index]
    table["a"].append("2")
    given["pair"].ports.append(2)  # type: ignore[attr-defined]
    given["order"]["b"].append(3)  # type: ignore[index]
    async with stream:
        [event async for event in stream]
    [ran] = RAN
    seen = ran.backend_options
    assert isinstance(seen, dict)
    assert seen["transcript"] == [{"keep": "this"}]
    assert seen["acp_transcript"] == {"mode": "full"}
    assert isinstance(seen["table"], defaultdict)
    assert seen["table"]["missing"] == []
    assert seen["table"]["a"] == ["1"]
    assert isinstance(seen["pair"], _Pair)
    assert seen["pair"].ports == [1]
    assert type(seen["order"]) is OrderedDict
    assert seen["order"] == {"b": [2]}


def test_a_built_in_backends_sinks_are_still_the_callers(tmp_path: Path) -> None:
    """The transcript list of a built-in backend (and of `auto`, which picks one) is the caller's own, by design: the
    run appends to it (pin). A fallback's options are judged by the fallback's backend (FAILED before: a third-party
    fallback's `transcript` was shared)."""
    from unified._execute import _snapshot

    for backend in ("claude-code", "auto"):
        transcript: list[dict[str, object]] = []
        params = ExecuteParams(prompt="hi", backend=backend, cwd=tmp_path, backend_options={"transcript": transcript})
        assert _snapshot(params).backend_options["transcript"] is transcript  # type: ignore[index]
    mine: list[dict[str, object]] = []
    third = Fallback(backend="probe", backend_options={"transcript": mine})
    params = ExecuteParams(prompt="hi", backend="codex", cwd=tmp_path, fallback=(third,))
    [kept] = _snapshot(params).fallback
    assert isinstance(kept, Fallback)
    assert kept.backend_options["transcript"] is not mine  # type: ignore[index]


def test_a_container_of_a_class_that_cannot_be_copied_is_copied_as_its_base_class(tmp_path: Path) -> None:
    """Pin: a list of the caller's own class whose copy fails is copied as a list, as before (its data is the run's
    own), never a failed `execute()`."""
    from unified._execute import _snapshot

    class Stubborn(list[int]):
        def __reduce_ex__(self, protocol: SupportsIndex) -> Any:
            raise TypeError("not copied")

    value = Stubborn([1])
    params = ExecuteParams(prompt="hi", backend="probe", cwd=tmp_path, backend_options={"v": value})
    kept = _snapshot(params).backend_options["v"]  # type: ignore[index]
    assert kept == [1]
    assert kept is not value
