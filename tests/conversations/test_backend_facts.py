"""Two facts each backend declares in its block of the capability matrix (capabilities.toml), which the code reads
from there and nowhere else: `provider` (the model provider behind it) and `tool_results_last` (what it does with
a history whose last turn is tool results: `sent` as it is, or `continue_prompt`, the tool round then
`CONTINUE_PROMPT` as the user's turn, for a backend that takes only a user's message last).

The checks change the data, not the names: a test backend's block (or an edited block of a real one) changes
what `provider_of_backend`, a caller's `retry` and a failover do.
"""

from __future__ import annotations

import tomllib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from unified import ExecuteParams, backends, capabilities, execute
from unified.backends import RunContext, RunOutcome, UnsupportedOption
from unified.capabilities import load_matrix
from unified.conversations import (
    CONTINUE_PROMPT,
    Conversation,
    ModelTurn,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UserTurn,
    provider_of_backend,
)
from unified.errors import RateLimited
from unified.events import Failover, Result, SessionStarted, TextDelta, UnifiedEvent, Usage
from unified.sessions import short_id_of
from unified.types import Fallback

pytestmark = pytest.mark.anyio

PACKAGED = (Path(capabilities.__file__).parent / "capabilities.toml").read_text(encoding="utf-8")


def _with_block(name: str, provider: str, tool_results_last: str, text: str = PACKAGED) -> str:
    """The matrix `text` with a block for a test backend `name` (the scripted backend's cells, whose notes
    fit any backend that runs nothing)."""
    start = text.index("[backends.scripted]")
    block = text[start:].replace("[backends.scripted", f"[backends.{name}")
    block = block.replace('provider = "none"', f'provider = "{provider}"', 1)
    block = block.replace('tool_results_last = "sent"', f'tool_results_last = "{tool_results_last}"', 1)
    assert f'provider = "{provider}"' in block
    assert f'tool_results_last = "{tool_results_last}"' in block
    return text.rstrip("\n") + "\n\n" + block


def _use(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setattr(capabilities, "MATRIX", load_matrix(text))


# --- the data ---------------------------------------------------------------------------------------------


def test_every_block_of_the_matrix_declares_both_facts_itself() -> None:
    """Declared in the file, block by block (no default stands in for a missing one), and read as declared."""
    raw = tomllib.loads(PACKAGED)["backends"]
    for name, block in raw.items():
        assert block.get("provider") in ("google", "anthropic", "openai", "none"), name
        assert block.get("tool_results_last") in capabilities.TOOL_RESULTS_LAST, name
        column = capabilities.MATRIX.backends[name]
        assert (column.provider or "none", column.tool_results_last) == (block["provider"], block["tool_results_last"])
    for name in backends.built_in_backends():  # every backend that ships has its block
        assert name in raw


@pytest.mark.parametrize("key", ["provider", "tool_results_last"])
def test_a_block_without_either_fact_is_refused_at_load(key: str) -> None:
    head = "[backends.codex]\n"
    start = PACKAGED.index(head)
    end = PACKAGED.index("\n\n", start)
    block = PACKAGED[start:end]
    line = next(line for line in block.splitlines() if line.startswith(f"{key} ="))
    broken = PACKAGED[:start] + block.replace(line + "\n", "").replace("\n" + line, "") + PACKAGED[end:]
    assert broken != PACKAGED
    with pytest.raises(ValueError, match=rf"\[backends\.codex\] needs a {key}"):
        load_matrix(broken)
    with pytest.raises(ValueError, match=r"needs a tool_results_last"):
        load_matrix(PACKAGED.replace('tool_results_last = "sent"', 'tool_results_last = "maybe"', 1))


def test_a_variant_has_the_provider_of_its_backend() -> None:
    variant = PACKAGED.index('[backends."gemini-cli/stream-json"]')
    edited = PACKAGED[:variant] + PACKAGED[variant:].replace('provider = "google"', 'provider = "openai"', 1)
    assert edited != PACKAGED
    with pytest.raises(ValueError, match="needs the provider of gemini-cli"):
        load_matrix(edited)


# --- provider_of_backend ------------------------------------------------------------------------------------


def test_the_provider_of_a_backend_is_what_its_block_declares(monkeypatch: pytest.MonkeyPatch) -> None:
    assert provider_of_backend("claude-code") == "anthropic"
    assert provider_of_backend("scripted") is None  # provider = "none"
    assert provider_of_backend("no-such-backend") is None
    edited = _with_block("echo", "anthropic", "sent", PACKAGED.replace('provider = "openai"', 'provider = "google"'))
    _use(monkeypatch, edited)
    assert provider_of_backend("echo") == "anthropic"
    assert provider_of_backend("codex") == "google"


# --- a retried history ending with tool results -------------------------------------------------------------


SEEN: list[ExecuteParams] = []
"""What each `Recording` backend was made with and what its run saw (`ctx.params`), in order."""


class Recording:
    """A backend that notes its parameters and answers at once."""

    name = "echo"

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params
        SEEN.append(params)

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []

    async def run(self, ctx: RunContext) -> RunOutcome:
        SEEN.append(ctx.params)
        session_id = str(uuid.uuid4())
        await ctx.emit(
            SessionStarted(
                backend=self.name, session_id=session_id, short_id=short_id_of(session_id), cwd=str(ctx.params.cwd)
            )
        )
        await ctx.emit(TextDelta(text="went on"))
        await ctx.end_turn(Usage())
        return RunOutcome(short_id=short_id_of(session_id))


class GivesOut:
    """A backend that gives out (rate limited) before it starts anything."""

    name = "gives-out"

    def __init__(self, params: ExecuteParams) -> None:
        self.params = params

    def unsupported_options(self, params: ExecuteParams) -> list[UnsupportedOption]:
        return []

    async def run(self, ctx: RunContext) -> RunOutcome:
        raise RateLimited("no more today")


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(backends, "_registered", {})
    backends.register_backend("echo", Recording)
    backends.register_backend("gives-out", GivesOut)
    SEEN.clear()
    yield
    SEEN.clear()


HISTORY = Conversation(
    turns=[
        UserTurn(parts=[TextPart(text="what is the code word?")]),
        ModelTurn(provider="google", parts=[ToolCallPart(id="c1", name="read_file", arguments={"file_path": "n"})]),
        UserTurn(parts=[ToolResultPart(call_id="c1", name="read_file", output="heron")]),
    ]
)


async def _run(params: ExecuteParams) -> list[UnifiedEvent]:
    async with execute(params) as stream:
        events = [event async for event in stream]
    last = events[-1]
    assert isinstance(last, Result)
    assert last.status == "success", last.error
    return events


@pytest.mark.usefixtures("registered")
@pytest.mark.parametrize("declared", ["continue_prompt", "sent"])
async def test_a_callers_retry_follows_the_blocks_tool_results_last(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, declared: str
) -> None:
    _use(monkeypatch, _with_block("echo", "google", declared))
    await _run(ExecuteParams(backend="echo", cwd=tmp_path, history=HISTORY, retry=True))
    made, ran = SEEN
    assert made == ran  # the backend and its run see the same parameters
    assert made.history == HISTORY  # the tool round is sent either way
    if declared == "continue_prompt":
        assert (made.retry, made.prompt) == (False, CONTINUE_PROMPT)
    else:
        assert (made.retry, made.prompt) == (True, "")


@pytest.mark.usefixtures("registered")
async def test_a_history_that_ends_otherwise_is_retried_as_it_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _use(monkeypatch, _with_block("echo", "google", "continue_prompt"))
    asked = Conversation(
        turns=[*HISTORY.turns, ModelTurn(parts=[TextPart(text="heron")]), UserTurn(parts=[TextPart(text="again?")])]
    )
    await _run(ExecuteParams(backend="echo", cwd=tmp_path, history=asked, retry=True))
    assert (SEEN[0].retry, SEEN[0].prompt) == (True, "")


@pytest.mark.usefixtures("registered")
@pytest.mark.parametrize("declared", ["continue_prompt", "sent"])
async def test_a_failover_between_tool_rounds_follows_the_blocks_tool_results_last(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, declared: str
) -> None:
    _use(monkeypatch, _with_block("echo", "google", declared))
    params = ExecuteParams(
        backend="gives-out", cwd=tmp_path, history=HISTORY, retry=True, fallback=(Fallback(backend="echo"),)
    )
    events = await _run(params)
    assert [(e.from_backend, e.to_backend) for e in events if isinstance(e, Failover)] == [("gives-out", "echo")]
    made, ran = SEEN
    assert made == ran
    assert made.history is not None
    assert made.history.turns == HISTORY.turns
    expected = (False, CONTINUE_PROMPT) if declared == "continue_prompt" else (True, "")
    assert (made.retry, made.prompt) == expected
