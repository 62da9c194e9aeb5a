"""Bad input round 19: `record_run` (`unified record`) given a cassette path it cannot write. A folder of that name,
a folder nothing can be made in (`/proc/self/...`) or a folder in the way of its scratch file ran the whole run,
spending the model's tokens, and then raised a bare IsADirectoryError or FileNotFoundError (`unified record`:
"unexpected ... a bug in unified", exit 70). Now the first three are a `RecordError` before the model is asked
(exit 2), and a cassette that cannot be put in place after the run is a `RecordError` carrying the run's events
(exit 1, as a failed run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified import ExecuteParams
from unified.events import Result, UnifiedEvent
from unified.testing import FakeGemini, ModelTurn
from unified.testing._record import RecordError, record_run
from unified.testing._wiring import backend_options_for

pytestmark = pytest.mark.anyio


def _params(server: FakeGemini, cwd: Path) -> ExecuteParams:
    return ExecuteParams(
        prompt="hi",
        backend="generate-content",
        model="gemini-2.5-flash",
        cwd=cwd,
        backend_options=backend_options_for(server, "generate-content"),
    )


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "out.yaml"
    folder.mkdir()
    return folder


def _scratch_taken(tmp_path: Path) -> Path:
    (tmp_path / ".taken.recording.yaml").mkdir()
    return tmp_path / "taken.yaml"


@pytest.mark.parametrize(
    ("where", "words"),
    [
        (_folder, "out.yaml: is a folder; name the cassette file to write"),
        (lambda _: Path("/proc/self/unified-round19/out.yaml"), "cannot be written (No such file or directory: "),
        (_scratch_taken, "cannot be written (Is a directory: "),
    ],
    ids=["a-folder", "under-proc", "scratch-taken"],
)
async def test_a_cassette_that_cannot_be_written_is_refused_before_the_run(
    where: object, words: str, tmp_path: Path
) -> None:
    assert callable(where)
    cassette = where(tmp_path)
    async with FakeGemini([ModelTurn(text="Done.")]) as server:
        with pytest.raises(RecordError) as raised:
            await record_run(_params(server, tmp_path), cassette, source="FakeGemini")
        assert server.requests == []  # the model was never asked
    assert words in str(raised.value), str(raised.value)
    assert raised.value.events == []  # `unified record`: exit 2, bad input


async def test_a_cassette_that_cannot_be_put_in_place_after_the_run_keeps_its_events(tmp_path: Path) -> None:
    cassette = tmp_path / "cassettes" / "late.yaml"

    def in_the_way(event: UnifiedEvent) -> None:  # a folder of the cassette's name appears while the run goes on
        if isinstance(event, Result):
            cassette.mkdir()

    async with FakeGemini([ModelTurn(text="Done.")]) as server:
        with pytest.raises(RecordError) as raised:
            await record_run(_params(server, tmp_path), cassette, source="FakeGemini", on_event=in_the_way)
    assert "late.yaml: cannot be written (" in str(raised.value), str(raised.value)
    last = raised.value.events[-1]
    assert isinstance(last, Result)
    assert last.final_text == "Done."
    assert [p.name for p in cassette.parent.iterdir()] == ["late.yaml"]  # no scratch file left behind
