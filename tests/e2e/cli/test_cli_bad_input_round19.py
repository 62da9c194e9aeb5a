"""Bad input round 19: a data folder this user may read but not write (`UNIFIED_DATA_DIR` on a folder of another
user's, mode 0555), with real permissions: the test runs `unified run` as a user that is not root (as root every
folder is writable, so the unit tests of EACCES simulate it). Held before this round, kept as the one guard of the
real path: the run ends typed before the model is asked, naming the folder and what to do, with no traceback; the
session store's refusal is `session_store_unavailable`, the codex home's `backend_unavailable` (a fallback may
take the run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

import unified
from tests.hang_guard import HANG_GUARD_S
from tests.harness.another_user import not_root_prefix
from unified.testing import FakeGemini, FakeOpenAI, ModelTurn

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.fixture
def another_users_place() -> Iterator[Path]:
    """A folder outside pytest's (which is root's alone, 0700) with a home and a workspace the other user may write
    and a data folder it may only read."""
    place = Path(tempfile.mkdtemp(prefix="unified-round19-"))
    try:
        place.chmod(0o755)
        for name, mode in (("home", 0o777), ("ws", 0o777), ("data", 0o555)):
            (place / name).mkdir()
            (place / name).chmod(mode)
        yield place
    finally:
        shutil.rmtree(place, ignore_errors=True)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize(
    ("backend", "code", "words"),
    [
        ("generate-content", "session_store_unavailable", "/sessions cannot be written: Permission denied"),
        ("codex", "backend_unavailable", "the codex backend cannot write its files here"),
    ],
)
async def test_a_data_folder_this_user_cannot_write_is_a_typed_error_before_the_model(
    backend: str, code: str, words: str, another_users_place: Path
) -> None:
    home, workspace, data = (another_users_place / name for name in ("home", "ws", "data"))
    fake = FakeOpenAI if backend == "codex" else FakeGemini
    async with fake([ModelTurn(text="Done.")]) as server:
        wiring = server.env if isinstance(server, FakeOpenAI) else server.cli_env
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "UNIFIED_DATA_DIR": str(data),
            "PYTHONPATH": str(Path(unified.__file__).parents[1]),
            **{name: value for name, value in os.environ.items() if name == "UNIFIED_CODEX_BIN"},
            **wiring,
        }
        argv = [*not_root_prefix(), sys.executable, "-m", "unified", "run", "hi", "--backend", backend, "--json"]
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                argv, env=env, cwd=workspace, capture_output=True, text=True, timeout=HANG_GUARD_S, check=False
            )
        )
        assert server.requests == []  # the model was never asked: nothing of its answer could be lost
    assert done.returncode == 1, (done.stdout, done.stderr)
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [error] = [event for event in events if event["type"] == "error"]
    assert error["code"] == code, error["message"]
    assert words in error["message"]
    assert str(data) in error["message"]
    assert events[-1]["type"] == "result"
    assert "Traceback" not in done.stderr
