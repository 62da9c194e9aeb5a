"""Bad input round 13, session stores: a record's header edited by hand to hold a field of the wrong type (`"model":
5`, `"cwd": 5`) was listed with pydantic's whole text ("1 validation error for SessionInfo\\nmodel\\n  Input should
be a valid string [type=string_type, input_value=5, input_type=int]\\n    For further information visit
https://errors.pydantic.dev/..."): several lines, a URL that is no help, and the value itself. It names the field
and what is wrong with it, on one line, as a stored state that cannot be read already did.

And a record whose header names another backend than the folder it is in (`"backend": "interactions"` in
generate-content's): listed as that backend's, `show` looked for it there ("no interactions session matches ...",
none listed), and a resume ran and saved a second copy in interactions' folder. It is corrupt, saying so, as a
record naming another session id already was."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.sessions.records import BACKEND, stored_session
from unified._sessions.stores import FileSessionStore
from unified.errors import CorruptSession


@pytest.mark.parametrize("field", ["model", "cwd"])
def test_a_header_field_of_the_wrong_type_is_named_on_one_line(field: str, tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    bad = stored_session()
    anyio.run(store.save, bad)
    path = store.path_of(BACKEND, bad.session_id)
    before = path.read_text()
    edited = before.replace(f'"{field}":"{"m" if field == "model" else "/w"}"', f'"{field}":5', 1)
    assert edited != before
    path.write_text(edited)

    (info,) = anyio.run(store.list_sessions, BACKEND)
    assert info.problem is not None
    assert info.problem.message.endswith(
        f"its header has a wrong or missing field ({field}: Input should be a valid string)"
    )
    with pytest.raises(CorruptSession) as raised:
        anyio.run(store.load, BACKEND, bad.session_id)
    assert "pydantic" not in raised.value.message
    assert "\n" not in raised.value.message
    assert path.read_text() == edited  # left as it was


def test_a_record_naming_another_backend_is_corrupt_and_never_copied_there(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    moved = stored_session()
    anyio.run(store.save, moved)
    path = store.path_of(BACKEND, moved.session_id)
    edited = path.read_text().replace(f'"backend":"{BACKEND}"', '"backend":"interactions"', 1)
    path.write_text(edited)

    (info,) = anyio.run(store.list_sessions, BACKEND)
    assert info.backend == BACKEND
    assert info.problem is not None
    assert f"it names backend 'interactions', not '{BACKEND}'" in info.problem.message
    with pytest.raises(CorruptSession):
        anyio.run(store.load, BACKEND, moved.session_id)
    assert path.read_text() == edited
    assert not (tmp_path / "interactions").exists()
