"""Bad input round 12, session stores: `UNIFIED_SESSION_STORE_URL=file:///etc/passwd` (a file store URL naming a
file) said "/etc/passwd is a file, where the store needs a folder" and, for what to do, "move or remove that file";
the setting that names it is what to change, as `UNIFIED_DATA_DIR` naming a file already said."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from unified._sessions.config import configured_store
from unified.errors import SessionStoreUnavailable


@pytest.mark.parametrize("form", ["file://{}", "file://localhost{}", "file://{}/"])
def test_a_store_url_naming_a_file_says_to_point_the_url_at_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine")
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", form.format(blocker))
    store = configured_store()
    assert store is not None
    with pytest.raises(SessionStoreUnavailable) as raised:
        anyio.run(store.list_sessions, "generate-content")
    assert f"{blocker} is a file, where the store needs a folder" in raised.value.message
    assert raised.value.hint is not None
    assert "UNIFIED_SESSION_STORE_URL names that file: point UNIFIED_SESSION_STORE_URL at a folder" in (
        raised.value.hint
    )
    assert "move or remove that file" not in raised.value.hint
    assert blocker.read_text() == "mine"
