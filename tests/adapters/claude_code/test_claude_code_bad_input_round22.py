"""Bad input round 22, claude-code (the stream-json protocol played by a fake CLI): a CLI that prints half a line and
exits 0, and counts in a `result` that are no counts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.adapters.claude_code.test_claude_code_run import FakeClaude, Line, init, result, run, text_turn
from unified._execute import EventStream
from unified.events import ErrorEvent, Result, UnifiedEvent, WarningEvent
from unified.testing import FakeAgentProcess
from unified.types import ExecuteParams

pytestmark = pytest.mark.anyio


class _ExitsZero(FakeClaude):
    """A CLI that, at `EXIT0` in its script, prints what came before and exits 0: no `result`, no stderr."""

    def _out(self, lines: list[Line]) -> list[str | bytes]:
        if lines and lines[-1] == "EXIT0":
            self.process.emit(*super()._out(lines[:-1]))
            self.process.exit(0)
            return []
        return super()._out(lines)


def _starter(turns: Sequence[Sequence[Line]]) -> Callable[..., FakeAgentProcess]:
    def start(argv: Sequence[str], cwd: Path, env: Any) -> FakeAgentProcess:
        process = FakeAgentProcess(argv=argv, env=env)
        process.handler = _ExitsZero(process, turns)
        return process

    return start


async def _run_exiting_zero(tmp_path: Path, turn: list[Line]) -> list[UnifiedEvent]:
    params = ExecuteParams(
        prompt="go", backend="claude-code", cwd=tmp_path, backend_options={"start_process": _starter([turn])}
    )
    with anyio.fail_after(30):  # a hang guard: the run ends at the exit
        async with EventStream(params, strict=True) as stream:
            return [event async for event in stream]


HALF = b'{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","te'


async def test_half_a_line_then_exit_0_is_a_typed_error_not_a_success(tmp_path: Path) -> None:
    """The CLI wrote half a JSON line (its pipe cut, a crash its exit code hides) and exited 0 without a `result`."""
    events = await _run_exiting_zero(tmp_path, [*text_turn("Hel")[:4], HALF, "EXIT0"])
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["malformed_line"]
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_error"
    assert "exited with code 0" in error.message
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "error"


async def test_counts_of_a_result_that_are_no_counts_are_left_out(tmp_path: Path) -> None:
    """Pin: a `result` whose per-model counts are -5, "7" and a cost of "0.5" adds nothing, and the run's usage is
    the stream's own measurement."""
    broken = {"claude-test": {"inputTokens": -5, "outputTokens": "7", "costUSD": "0.5", "thinkingTokens": 1e400}}
    events, _ = await run(tmp_path, [[*text_turn("hi")[:-1], result(model_usage_since_last_result=broken)]])
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert final.usage.model_dump(exclude_defaults=True) == {"input_tokens": 3, "output_tokens": 2}


async def test_a_second_result_after_the_turns_end_is_read_past(tmp_path: Path) -> None:
    """Pin: a `result` no turn asked for (a CLI that repeats its last) ends nothing twice: one result, success."""
    events, _ = await run(tmp_path, [[*text_turn("hi"), result()]])
    assert [e.type for e in events].count("result") == 1
    final = events[-1]
    assert isinstance(final, Result)
    assert (final.status, final.final_text) == ("success", "hi")


async def test_an_init_whose_session_id_is_no_text_still_names_a_session(tmp_path: Path) -> None:
    """Pin: `session_id` 12345 (a number) is no id to resume by; the run keeps the one unified gave the CLI."""
    events, _ = await run(tmp_path, [[{**init(), "session_id": 12345}, *text_turn("hi")[1:]]])
    final = events[-1]
    assert isinstance(final, Result)
    assert final.status == "success"
    assert final.short_id is not None
    assert "12345" not in final.short_id
