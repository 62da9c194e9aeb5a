"""Bad input round 8: a model that sends `null` for an optional parameter (JSON's "nothing given") gets the
parameter's default, as if it had left it out; it was refused ("is_background: Input should be a valid boolean").
A null for a required parameter, or for an argument no tool has, is still refused; a null the parameter's own
type takes is kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from unified.tools import ToolCall, ToolRuntime

pytestmark = pytest.mark.anyio


async def test_a_null_for_an_optional_parameter_is_its_default(ws: Path) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    rt = ToolRuntime(ws, approval_mode="yolo")
    [read] = await rt.run_batch([ToolCall("1", "read_file", {"file_path": "a.txt", "offset": None, "limit": None})])
    assert "error" not in read.response, read.response
    assert "one" in str(read.response)
    edit = {"file_path": "a.txt", "old_string": "two", "new_string": "2", "allow_multiple": None}
    [edited] = await rt.run_batch([ToolCall("2", "edit_file", edit)])
    assert "error" not in edited.response, edited.response
    assert (ws / "a.txt").read_text() == "one\n2\n"
    # a null for a required parameter, or for an argument the tool does not have, is still refused
    [required, unknown] = await rt.run_batch(
        [ToolCall("3", "read_file", {"file_path": None}), ToolCall("4", "read_file", {"file_path": "a", "bogus": None})]
    )
    assert required.response["error"].startswith("Invalid parameters provided to read_file. Reason: file_path:")
    assert unknown.response["error"] == (
        "Invalid parameters provided to read_file. Reason: bogus: Extra inputs are not permitted"
    )


async def test_a_null_the_parameter_takes_is_kept(ws: Path) -> None:
    seen: list[object] = []

    def note(text: str, tag: str | None = "general", count: int = 1) -> str:
        seen.append((tag, count))
        return "noted"

    rt = ToolRuntime(ws, approval_mode="yolo")
    rt.register(note, name="note", description="Take a note.")
    [outcome] = await rt.run_batch([ToolCall("1", "note", {"text": "x", "tag": None, "count": None})])
    assert outcome.response == {"output": "noted"}, outcome.response
    assert seen == [(None, 1)]


async def test_arguments_that_fail_with_no_null_to_leave_out_are_validated_once(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bad input round 10: a call whose arguments fail for another reason than an optional null was validated a
    second time with the very same arguments (the same failure, twice the work on a large call)."""
    rt = ToolRuntime(ws, approval_mode="yolo")
    spec = rt._available("read_file")
    assert spec is not None
    assert spec.params is not None
    model = spec.params
    validate = model.model_validate
    calls: list[object] = []

    def counted(obj: object, *args: object, **kwargs: object) -> object:
        calls.append(obj)
        return validate(obj, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(model, "model_validate", counted)
    [refused] = await rt.run_batch([ToolCall("1", "read_file", {"file_path": 7, "limit": "many"})])
    assert refused.response["error"].startswith("Invalid parameters provided to read_file. Reason: ")
    assert len(calls) == 1, calls
