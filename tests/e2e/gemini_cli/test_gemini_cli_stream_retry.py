"""The real `gemini` binary asking the model again after a stream that failed mid-answer (FakeGemini's stream faults).

0.61 retries such a stream silently (`MID_STREAM_RETRY_OPTIONS`, 1 s, 2 s, 4 s apart) and its ACP agent passes on
every attempt's chunks with nothing between them; the chat file keeps only the answer the CLI kept. The caller sees
that answer once (`_replays`), as the other backends show a resumed stream.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import kinds
from tests.harness.warm_cli import WarmCli
from unified import ExecuteParams, execute
from unified.events import AssistantMessage, ErrorEvent, Result, TextDelta, UnifiedEvent, WarningEvent
from unified.testing import ModelTurn
from unified.testing._scenario import Fault, FunctionCall

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]

ANSWER = "Hello there, my friend."


def failing(kind: str, after: int) -> ModelTurn:
    return ModelTurn(text=ANSWER, text_chunks=3, fault=Fault(kind=kind, after=after))


@pytest.fixture(params=["acp", "stream-json"])
def transport(request: pytest.FixtureRequest) -> str:
    """Both transports pass on every attempt's text: the fallback's `gemini -p` ignores the retry event too."""
    return str(request.param)


async def run(turns: list[ModelTurn], workspace: Path, warm: WarmCli, transport: str) -> tuple[list[UnifiedEvent], int]:
    """A run against `turns`; over ACP on the module's warm CLI process (each run ends with its result: the CLI's
    retries are over by then), `gemini -p` starting its own as ever."""
    server = warm.play(turns)
    options = {**warm.backend_options, "transport": transport}
    params = ExecuteParams(prompt="hi", backend="gemini-cli", cwd=workspace, backend_options=options)
    async with execute(params) as stream:
        events = [event async for event in stream]
    return events, len(server.requests)


def shown(events: list[UnifiedEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def messages(events: list[UnifiedEvent]) -> list[str]:
    return [e.text for e in events if isinstance(e, AssistantMessage)]


def resumed(events: list[UnifiedEvent]) -> list[WarningEvent]:
    return [e for e in events if isinstance(e, WarningEvent) and e.code == "stream_resumed"]


@pytest.mark.parametrize(
    "failed",
    [
        pytest.param([failing("mid_stream_error", 2)], id="error-chunk"),
        pytest.param([failing("no_finish", 0)], id="no-finish-reason"),
        pytest.param([failing("mid_stream_error", 2), failing("mid_stream_error", 1)], id="cut-twice"),
    ],
)
async def test_a_retried_stream_shows_the_repeated_prefix_once(
    failed: list[ModelTurn], workspace: Path, warm_cli: WarmCli, transport: str
) -> None:
    turns = [*failed, ModelTurn(text=ANSWER, text_chunks=3)]
    events, requests = await run(turns, workspace, warm_cli, transport)
    assert requests == len(failed) + 1  # the CLI did ask again
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert shown(events) == ANSWER
    assert messages(events) == [ANSWER]
    assert result.final_text == ANSWER
    assert not resumed(events)


async def test_a_retry_that_answers_otherwise_replaces_what_was_shown(
    workspace: Path, warm_cli: WarmCli, transport: str
) -> None:
    other = "Goodbye now."
    turns = [failing("mid_stream_error", 2), ModelTurn(text=other, text_chunks=2)]
    events, _ = await run(turns, workspace, warm_cli, transport)
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert result.final_text == other
    assert messages(events)[-1] == other
    [warning] = resumed(events)
    after = events[events.index(warning) :]
    # the shown part is closed before the warning; the kept answer follows it, whole
    assert kinds(events[: events.index(warning)])[-1] == "assistant_message"
    assert shown(after) == other
    assert kinds(after) == ["warning", "text_delta", "assistant_message", "result"]


async def test_retries_that_get_no_answer_say_so(workspace: Path, warm_cli: WarmCli, transport: str) -> None:
    # the CLI takes an empty answer for a failed attempt too: after the fourth it gives up; `gemini -p` fails the turn,
    # its ACP agent ends it as if answered: the run fails it on both (it was `success` over ACP)
    empty = [ModelTurn(text="") for _ in range(3)]
    events, requests = await run([failing("mid_stream_error", 2), *empty], workspace, warm_cli, transport)
    assert requests == 4
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    if transport == "stream-json":
        return
    [warning] = resumed(events)
    assert "kept none" in warning.message
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert (error.code, error.retryable) == ("stream_interrupted", True)
    assert "retries got no answer" in error.message


async def test_a_retried_stream_before_a_tool_call_shows_its_text_once(
    workspace: Path, warm_cli: WarmCli, transport: str
) -> None:
    lead = "Let me read the notes file now."
    call = FunctionCall(name="read_file", args={"file_path": "notes.txt"})
    turns = [
        ModelTurn(text=lead, text_chunks=3, fault=Fault(kind="mid_stream_error", after=2)),
        ModelTurn(text=lead, text_chunks=3, function_calls=[call]),
        ModelTurn(text="It says alpha."),
    ]
    events, requests = await run(turns, workspace, warm_cli, transport)
    assert requests == 3
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "success", result.error
    assert messages(events) == [lead, "It says alpha."]
    assert shown(events[: kinds(events).index("tool_use")]) == lead
    assert result.final_text == "It says alpha."
    assert not resumed(events)
