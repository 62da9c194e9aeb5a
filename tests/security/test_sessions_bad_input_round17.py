"""Bad input round 17, a session store whose folder cannot be made: `UNIFIED_DATA_DIR=/proc/self/nope` (a folder no
`mkdir` can make; as a parent removed while a run starts). A run's lease took its lock file there and met the bare
FileNotFoundError of `os.makedirs`: `internal_error`, "a bug in unified's generate-content adapter" (measured with
`unified run --backend generate-content` and `interactions` against `unified serve`); now `session_store_unavailable`
naming the folder and saying to point UNIFIED_DATA_DIR at one that can be made. (A folder that is a file, a full or
read-only disk were typed already: tests/security/test_sessions_hostile_round2.py.) And a save refused with EFBIG,
the file size limit (RLIMIT_FSIZE, `ulimit -f`) of the process: typed, but its hint said to make the directory
writable (measured: `unified run` under a 500-byte limit); now it says to raise the limit."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import anyio
import pytest

from unified import ExecuteParams
from unified._execute import EventStream
from unified._sessions import stores
from unified._sessions.stores import FileSessionStore
from unified.errors import SessionStoreUnavailable
from unified.events import ErrorEvent
from unified.sessions import StoredSession

UNMAKEABLE = Path("/proc/self/unified-round17/sessions")
"""A folder no `mkdir` makes, whoever runs the test (root too)."""


def test_a_lease_in_a_store_whose_folder_cannot_be_made_is_session_store_unavailable() -> None:
    store = FileSessionStore(UNMAKEABLE)
    session = StoredSession.new("generate-content", model="m", cwd="/w", first_prompt="hi")

    async def lease() -> None:
        async with store.lease("generate-content", session.session_id):
            raise AssertionError("a lease in a store that cannot be made")

    with pytest.raises(SessionStoreUnavailable) as caught:
        anyio.run(lease)
    assert caught.value.code == "session_store_unavailable"
    assert f"the session store at {UNMAKEABLE} cannot be written: No such file or directory" in caught.value.message
    assert "at a folder that exists or can be made" in str(caught.value.hint)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_run_on_a_store_whose_folder_cannot_be_made_ends_with_session_store_unavailable(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "not-a-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")  # the lease fails first
    params = ExecuteParams(prompt="hi", backend=backend, cwd=tmp_path, session_store=FileSessionStore(UNMAKEABLE))
    events = [e async for e in EventStream(params)]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["session_store_unavailable"], [e.message for e in errors]
    assert str(UNMAKEABLE) in errors[0].message


def test_a_save_over_the_file_size_limit_says_to_raise_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path)
    session = StoredSession.new("generate-content", model="m", cwd="/w", first_prompt="hi")

    def too_large(target: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG), str(target))

    monkeypatch.setattr(stores, "write_atomically", too_large)
    with pytest.raises(SessionStoreUnavailable) as caught:
        anyio.run(store.save, session)
    assert "File too large" in caught.value.message
    assert "raise the file size limit this process runs under (`ulimit -f`)" in str(caught.value.hint)
    assert "writable" not in str(caught.value.hint)
