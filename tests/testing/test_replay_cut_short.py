"""Bad input round 12: a transcript cassette cut at a line's end (a recording stopped early, lines deleted by hand)
replayed until its stand-in had played every line, then waited for ever (codex, gemini-cli; `unified replay` never
returned) or until claude-code's 90 s stall bound ("the model's answer stalled", blamed on the model). Now reading
it names the line the run would wait at and what never comes, before anything runs. So for a line the adapter
sends, repeated by an edit: the stand-in waited for a repeat that never comes."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.hang_guard import HANG_GUARD_S
from unified.testing._replay import ReplayError, describe, replay_events

pytestmark = pytest.mark.anyio

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
TRANSCRIPTS = sorted(CASSETTES.glob("*/*.jsonl"))


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _cut(source: Path, tmp_path: Path, keep: int) -> Path:
    cut = tmp_path / source.name
    cut.write_text("\n".join(_lines(source)[:keep]) + "\n", encoding="utf-8")
    return cut


@pytest.mark.parametrize("source", TRANSCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_transcript_without_its_last_line_is_refused_naming_what_never_comes(source: Path, tmp_path: Path) -> None:
    """The last line of every shipped transcript is what ends its run (the last answer, `turn/completed`,
    `result`): without it the replay waited."""
    with pytest.raises(ReplayError) as raised:
        describe(_cut(source, tmp_path, len(_lines(source)) - 1))
    message = str(raised.value)
    assert "which the transcript never gives" in message
    assert "record the cassette again" in message


@pytest.mark.parametrize(
    ("source", "line", "what"),
    [
        ("codex/text-reasoning.jsonl", 7, "the `turn/completed` of turn/start's turn"),
        ("gemini-cli/plan-denied.jsonl", 14, "the answer to session/prompt"),
        ("claude-code/question.jsonl", 4, "the `result` line after the user message"),
    ],
)
def test_the_error_names_the_line_the_run_waits_at(source: str, line: int, what: str, tmp_path: Path) -> None:
    path = CASSETTES / source
    cut = _cut(path, tmp_path, len(_lines(path)) - 1)
    with pytest.raises(ReplayError, match=f"^{cut}:{line}: the run waits here for {what}, which"):
        describe(cut)


def test_an_answer_removed_from_the_middle_is_refused(tmp_path: Path) -> None:
    source = CASSETTES / "gemini-cli" / "plan-denied.jsonl"
    lines = _lines(source)
    answer = next(
        i for i, line in enumerate(lines) if '"recv"' in line and '"result"' in line and '"id":' in line and i > 1
    )
    assert "method" not in json.loads(lines[answer])["msg"]  # an answer, not a notification
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join(lines[:answer] + lines[answer + 1 :]) + "\n", encoding="utf-8")
    with pytest.raises(ReplayError, match="which the transcript never gives"):
        describe(edited)


async def test_the_replay_of_a_cut_transcript_fails_at_once(tmp_path: Path) -> None:
    cut = _cut(CASSETTES / "codex" / "text-reasoning.jsonl", tmp_path, 13)
    with anyio.fail_after(HANG_GUARD_S), pytest.raises(ReplayError, match="turn/completed"):
        [event async for event in replay_events(cut)]


def test_every_shipped_transcript_is_whole() -> None:
    for path in TRANSCRIPTS:
        assert describe(path).backend == path.parent.name


@pytest.mark.parametrize("source", TRANSCRIPTS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_sent_line_repeated_is_refused_naming_both_lines(source: Path, tmp_path: Path) -> None:
    """A line the adapter sends, repeated by an edit: the stand-in waited for a repeat the adapter never sends, while
    the adapter waited for the answer (the replay of every shipped transcript so edited hung)."""
    lines = _lines(source)
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("dir") == "send")
    edited = tmp_path / source.name
    edited.write_text("\n".join([*lines[: at + 1], lines[at], *lines[at + 1 :]]) + "\n", encoding="utf-8")
    with pytest.raises(ReplayError, match=f"^{edited}:{at + 2}: this line repeats the message of line {at + 1}, "):
        describe(edited)
