"""Bad input round 19: cassettes edited by hand, given to `replay` (and so to `unified replay`).

- An `approval_mode` that is no mode in the metadata ("weird", 5): gemini-cli, claude-code and the HTTP backends
  ended as `internal_error`, pydantic's literal_error called "a bug in unified" (exit 70); codex replayed it as
  `default` without a word. Now refused before the run, naming the value and the modes.
- A metadata line naming a backend no transcript is of: read as gemini-cli, "the transcript never sends
  session/prompt". An empty file: "a gemini-cli transcript starts with a metadata line". Now each says what it is.
- A byte order mark (an editor's) before a transcript: "not JSON: unexpected utf-8 bom (decode using utf-8-sig)";
  now read past, as a YAML cassette's was.
- An agent's answer whose request line was removed: gemini-cli's stand-in played it before `initialize` was
  answered, the adapter failed the run, and the replay passed (exit 0, the recording's success not met); codex
  diverged at run time. Now refused before the run, naming the line and the id.
- An HTTP cassette's `unified: workspace:` naming "a" and "a/b", or a name with a NUL: `internal_error` ("File
  exists", "embedded null byte", exit 70) as the fresh workspace was written; a `unified:` block that is no mapping
  was read as none (its answers and files unplayed). Now each is refused before the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from unified.testing._replay import ReplayError, describe, replay_events

pytestmark = pytest.mark.anyio

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
TRANSCRIPTS = {
    "gemini-cli": CASSETTES / "gemini-cli" / "text-thoughts.jsonl",
    "claude-code": CASSETTES / "claude-code" / "text-thinking.jsonl",
    "codex": CASSETTES / "codex" / "text-reasoning.jsonl",
}
TEXT_TURN = CASSETTES / "generate-content" / "text-turn.yaml"


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _with_meta(source: Path, target: Path, **changes: object) -> Path:
    lines = _lines(source)
    meta = {**json.loads(lines[0]), **changes}
    target.write_text("\n".join([json.dumps(meta), *lines[1:]]) + "\n", encoding="utf-8")
    return target


async def _replayed(path: Path) -> list[object]:
    return [event async for event in replay_events(path)]


@pytest.mark.parametrize("mode", ["weird", 5])
@pytest.mark.parametrize("backend", list(TRANSCRIPTS))
async def test_an_approval_mode_that_is_no_mode_is_refused_naming_it(
    backend: str, mode: object, tmp_path: Path
) -> None:
    edited = _with_meta(TRANSCRIPTS[backend], tmp_path / "edited.jsonl", approval_mode=mode)
    with pytest.raises(ReplayError) as raised:
        await _replayed(edited)
    message = str(raised.value)
    assert f"{edited}: its approval_mode {json.dumps(mode)} is no approval mode" in message, message
    assert "(one of default, auto_edit, yolo, plan)" in message


async def test_an_http_cassette_s_approval_mode_that_is_no_mode_is_refused(tmp_path: Path) -> None:
    text = TEXT_TURN.read_text(encoding="utf-8")
    assert "\nunified:" not in text
    edited = tmp_path / "edited.yaml"
    edited.write_text(text + "unified:\n  approval_mode: yolo!\n", encoding="utf-8")  # the recorder's block
    with pytest.raises(ReplayError, match='its approval_mode "yolo!" is no approval mode'):
        await _replayed(edited)


def test_a_recorded_mode_still_reads() -> None:
    assert describe(CASSETTES / "gemini-cli" / "plan-denied.jsonl").approval_mode == "plan"


@pytest.mark.parametrize("backend", ["claude-code", "codex"])
def test_a_backend_no_transcript_is_of_is_named(backend: str, tmp_path: Path) -> None:
    edited = _with_meta(TRANSCRIPTS[backend], tmp_path / "edited.jsonl", backend="claude")
    with pytest.raises(ReplayError, match=r':1: the metadata line names the backend "claude"; a transcript is of '):
        describe(edited)


def test_an_empty_file_is_said_to_be_empty(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ReplayError, match="the file is empty"):
        describe(empty)


@pytest.mark.parametrize("backend", list(TRANSCRIPTS))
def test_a_byte_order_mark_is_read_past(backend: str, tmp_path: Path) -> None:
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(b"\xef\xbb\xbf" + TRANSCRIPTS[backend].read_bytes())
    info, recorded = describe(marked), describe(TRANSCRIPTS[backend])
    assert (info.backend, info.prompt, info.model) == (backend, recorded.prompt, recorded.model)


@pytest.mark.parametrize(("backend", "method"), [("gemini-cli", "session/new"), ("codex", "initialize")])
async def test_an_answer_whose_request_line_was_removed_is_refused(backend: str, method: str, tmp_path: Path) -> None:
    lines = _lines(TRANSCRIPTS[backend])
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("msg", {}).get("method") == method)
    request_id = json.loads(lines[at])["msg"]["id"]
    answer = next(
        i
        for i, line in enumerate(lines)
        if i > at and json.loads(line).get("dir") == "recv" and json.loads(line)["msg"].get("id") == request_id
    )
    edited = tmp_path / "edited.jsonl"
    edited.write_text("\n".join(lines[:at] + lines[at + 1 :]) + "\n", encoding="utf-8")
    with pytest.raises(ReplayError) as raised:
        await _replayed(edited)  # gemini-cli's replay passed: the run failed, nothing differed for the stand-in
    assert str(raised.value).startswith(f"{edited}:{answer}: an answer to request {request_id}, which no line before")
    assert "record the cassette again" in str(raised.value)


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({"a": "one", "a/b": "two"}, "the workspace names 'a' a file and a folder (of 'a/b')"),
        ({"./x/y": "one", "x/y/z": "two"}, "the workspace names 'x/y' a file and a folder (of 'x/y/z')"),
        ({"a\x00b": "one"}, "the workspace file 'a\\x00b' is not a relative path inside it"),
    ],
    ids=["file-and-folder", "dot-slash", "nul"],
)
async def test_workspace_files_that_cannot_be_written_are_refused_before_the_run(
    files: dict[str, str], words: str, tmp_path: Path
) -> None:
    """They ended the replay as `internal_error` ("File exists", "embedded null byte"; `unified replay` exit 70)."""
    block = "".join(f"    {json.dumps(name)}: {text}\n" for name, text in files.items())
    edited = tmp_path / "edited.yaml"
    edited.write_text(TEXT_TURN.read_text(encoding="utf-8") + "unified:\n  workspace:\n" + block, encoding="utf-8")
    with pytest.raises(ReplayError) as raised:
        await _replayed(edited)
    assert words in str(raised.value)


@pytest.mark.parametrize("block", ["[1]", "yes"])
def test_a_unified_block_that_is_no_mapping_is_refused(block: str, tmp_path: Path) -> None:
    """It was read as no block: the recorded answers, mode and workspace files silently not played."""
    edited = tmp_path / "edited.yaml"
    edited.write_text(TEXT_TURN.read_text(encoding="utf-8") + f"unified: {block}\n", encoding="utf-8")
    with pytest.raises(ReplayError, match=r"its `unified:` block is a (list|bool), not a mapping"):
        describe(edited)


def test_workspace_files_in_folders_of_their_own_still_read(tmp_path: Path) -> None:
    edited = tmp_path / "edited.yaml"
    edited.write_text(
        TEXT_TURN.read_text(encoding="utf-8") + "unified:\n  workspace:\n    a/b: one\n    ./a/c: two\n",
        encoding="utf-8",
    )
    assert describe(edited).workspace == {"a/b": "one", "a/c": "two"}
