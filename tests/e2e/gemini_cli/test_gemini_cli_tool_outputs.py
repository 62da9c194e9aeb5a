"""Tool outputs ACP leaves out, read back from the session's chat file (real `gemini` 0.61, offline)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import Run, call, kinds, stream_line, text
from unified import ExecuteParams
from unified._adapters.gemini_cli import AcpPool
from unified._execute import EventStream
from unified.events import ToolResult, ToolUse, UnifiedEvent, WarningEvent

pytestmark = pytest.mark.anyio
ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])
"""As the conftest's `anyio_backend` (asyncio only): the loop changes nothing the CLI does here."""
Responses = Callable[..., Path]


def results(events: list[UnifiedEvent]) -> dict[str, ToolResult]:
    return {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}


def uses(events: list[UnifiedEvent]) -> list[ToolUse]:
    return [e for e in events if isinstance(e, ToolUse)]


async def test_a_read_a_listing_and_a_failing_read_get_their_own_outputs(
    warm_gemini: Run, responses: Responses, workspace: Path
) -> None:
    """One call after the other in one run: each output is read back from the chat file."""
    (workspace / "second.md").write_text("x")
    fake = responses(
        stream_line(call("read_file", file_path="notes.txt")),
        stream_line(call("list_directory", dir_path=".")),
        stream_line(call("read_file", file_path="missing.txt")),
        stream_line(text("Done.")),
    )
    events = await warm_gemini(fake)
    read, listed, failed = uses(events)
    done = results(events)[read.tool_use_id]
    assert done.output == "alpha\nbeta\n"
    assert not done.is_error
    # Normal form: the tool_use waited for the chat file's record, so it carries the model's arguments.
    assert read.input == {"file_path": "notes.txt"}
    assert done.input is None
    assert "warning" not in kinds(events)

    listing = results(events)[listed.tool_use_id].output
    assert isinstance(listing, str)
    assert "notes.txt" in listing
    assert "second.md" in listing

    missing = results(events)[failed.tool_use_id]
    assert missing.is_error
    assert isinstance(missing.output, str)
    assert "missing.txt" in missing.output


@ASYNCIO_ONLY
async def test_parallel_calls_get_their_own_outputs(warm_gemini: Run, responses: Responses, workspace: Path) -> None:
    (workspace / "two.txt").write_text("second file\n")
    fake = responses(
        stream_line(
            call("read_file", file_path="notes.txt"),
            call("read_file", file_path="two.txt"),
            call("read_file", file_path="absent.txt"),
        ),
        stream_line(text("Done.")),
    )
    events = await warm_gemini(fake)
    first, second, third = uses(events)
    done = results(events)
    assert done[first.tool_use_id].output == "alpha\nbeta\n"
    assert done[second.tool_use_id].output == "second file\n"
    assert done[third.tool_use_id].is_error
    assert "absent.txt" in str(done[third.tool_use_id].output)
    # ACP's order is kept: every result follows its own tool_use, none overtakes another event.
    order = [(e.type, getattr(e, "tool_use_id", None)) for e in events if isinstance(e, ToolUse | ToolResult)]
    assert order == [(kind, use.tool_use_id) for use in (first, second, third) for kind in ("tool_use", "tool_result")]


@ASYNCIO_ONLY
async def test_sequential_turns_in_a_resumed_session(warm_gemini: Run, responses: Responses) -> None:
    first = await warm_gemini(
        responses(stream_line(call("read_file", file_path="notes.txt")), stream_line(text("One.")))
    )
    short = first[0].model_dump()["short_id"]
    events = await warm_gemini(
        responses(stream_line(call("list_directory", dir_path=".")), stream_line(text("Two."))),
        resume=short,
    )
    (use,) = uses(events)
    assert use.name == "list_directory"
    output = results(events)[use.tool_use_id].output
    assert isinstance(output, str)
    assert "notes.txt" in output


@ASYNCIO_ONLY
async def test_each_session_of_a_warm_process_reads_its_own_file(
    responses: Responses, workspace: Path, tmp_path: Path
) -> None:
    # The CLI replays the recorded responses from the top for every session: both sessions read
    # notes.txt, each in its own project (so its own chat file), with different contents.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("other project\n")
    fake = responses(stream_line(call("read_file", file_path="notes.txt")), stream_line(text("Read.")))
    pool = AcpPool(size=1)
    try:
        outputs = []
        for cwd in (workspace, other, workspace):
            params = ExecuteParams(
                prompt="go", backend="gemini-cli", cwd=cwd, backend_options={"fake_responses": str(fake), "pool": pool}
            )
            async with EventStream(params, strict=True) as stream:
                events = [e async for e in stream]
            (use,) = uses(events)
            outputs.append(results(events)[use.tool_use_id].output)
        assert pool.spawned == 1
        assert outputs == ["alpha\nbeta\n", "other project\n", "alpha\nbeta\n"]
    finally:
        await pool.aclose()


@ASYNCIO_ONLY
async def test_without_a_chat_file_results_fall_back_with_one_warning(
    warm_gemini: Run, responses: Responses, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("unified._adapters.gemini_cli._chat_records.session_files", lambda home, session_id: [])
    fake = responses(
        stream_line(call("read_file", file_path="notes.txt"), call("list_directory", dir_path=".")),
        stream_line(text("Done.")),
    )
    events = await warm_gemini(fake)
    assert [r.output for r in results(events).values()] == [None, None]
    warnings = [e for e in events if isinstance(e, WarningEvent)]
    assert [w.code for w in warnings] == ["tool_output_unavailable"]
    assert events[-1].model_dump()["status"] == "success"
