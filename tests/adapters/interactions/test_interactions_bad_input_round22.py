"""Bad input round 22, the Interactions API: an interaction that ends `failed`, and answers whose fields are of
another kind (negative or text counts, an index as text, a delta before its step began)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.foundation.test_bad_input_round21 import _answers, _events, _options
from unified import ExecuteParams
from unified.events import ErrorEvent, Result, UnifiedEvent

pytestmark = pytest.mark.anyio

CREATED = {"event_type": "interaction.created", "interaction": {"id": "i-round22", "status": "in_progress"}}
START = {"event_type": "step.start", "index": 0, "step": {"type": "model_output"}}
DELTA = {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "hi"}}
STOP = {"event_type": "step.stop", "index": 0}


def _completed(status: str = "completed", **interaction: Any) -> dict[str, Any]:
    return {"event_type": "interaction.completed", "interaction": {"id": "i-round22", "status": status, **interaction}}


async def _run(tmp_path: Path, *events: dict[str, Any]) -> list[UnifiedEvent]:
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
    with _answers([(200, body)]) as server:
        params = ExecuteParams(
            prompt="hi",
            backend="interactions",
            model="gemini-2.5-flash",
            cwd=tmp_path,
            backend_options=_options(server),
        )
        return await _events(params)


async def test_an_interaction_that_ends_failed_says_what_to_do(tmp_path: Path) -> None:
    """FAILED before: only "the interaction ended with status 'failed'", saying neither that no reason came
    nor what to do."""
    events = await _run(tmp_path, CREATED, START, DELTA, STOP, _completed("failed"))
    [error] = [e for e in events if isinstance(e, ErrorEvent)]
    assert error.code == "backend_error"
    assert "the interaction ended with status 'failed', giving no answer and no reason" in error.message
    assert "run it again; if it ends so again, try another model" in error.message
    assert error.details["interaction_id"] == "i-round22"


@pytest.mark.parametrize(
    "events",
    [
        (CREATED, START, DELTA, STOP, _completed(usage={"total_input_tokens": -3, "total_output_tokens": "2"})),
        (CREATED, {**START, "index": "0"}, {**DELTA, "index": "0"}, {**STOP, "index": "0"}, _completed()),
        (CREATED, DELTA, STOP, _completed()),
    ],
    ids=["counts-negative-and-text", "index-as-text", "delta-before-its-step"],
)
async def test_answers_of_fields_of_another_kind_keep_their_text(
    tmp_path: Path, events: tuple[dict[str, Any], ...]
) -> None:
    """Pins: the text is kept, the run succeeds, and usage no count measured is flagged `estimated`."""
    result = (await _run(tmp_path, *events))[-1]
    assert isinstance(result, Result)
    assert (result.status, result.final_text) == ("success", "hi")
    assert result.usage.estimated
