"""A gemini-cli session started in one directory, resumed by short id from another, with the real binary.

`unified run --resume <short id>` run in directory b continues a session the Gemini CLI filed under project
a: the model is sent the earlier turns (FakeGemini records each request's `contents`), the run says the
session moved (`session_moved`, naming both directories), `unified sessions list` shows it once (now b's),
a second resume from b continues the newest state, and one from a moves it back, with every turn.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.gemini_cli.gemini_cli_helpers import later_start_with_cleanup, stream_line, text
from tests.hang_guard import HANG_GUARD_S
from unified import ExecuteParams, execute
from unified._adapters.gemini_cli import AcpPool
from unified._adapters.gemini_cli._chat_files import session_files
from unified.events import Result, SessionStarted, UnifiedEvent, WarningEvent
from unified.testing import FakeGemini, ModelTurn

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


def _texts(request: Any) -> list[str]:
    """The text of every turn a model request carried (the CLI's `<session_context>` preamble left out)."""
    found = []
    for content in request.body["contents"]:
        parts = [p.get("text", "") for p in content["parts"] if not p.get("thought")]
        text = "".join(t for t in parts if not t.startswith("<session_context>"))
        if text:
            found.append(text)
    return found


def _env(server: FakeGemini) -> dict[str, str]:
    return {"GOOGLE_GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "fake-gemini-key"}


@pytest.fixture
async def warm_pool() -> AsyncIterator[AcpPool]:
    """A pool of the test's own: its ACP runs share one warm CLI process, in the test's own HOME."""
    pool = AcpPool(size=1)
    try:
        yield pool
    finally:
        await pool.aclose()


async def _run(server: FakeGemini, cwd: Path, prompt: str, **fields: Any) -> list[UnifiedEvent]:
    """A run in a process of its own, or on a warm one where `backend_options_extra` names its `pool`."""
    options = {"env": _env(server), "pool_size": 0, **fields.pop("backend_options_extra", {})}
    params = ExecuteParams(prompt=prompt, backend="gemini-cli", cwd=cwd, backend_options=options, **fields)
    async with execute(params) as stream:
        return [event async for event in stream]


async def _cli(server: FakeGemini, cwd: Path, *args: str) -> list[dict[str, Any]]:
    """`python -m unified <args> --json`, run in `cwd` (no --cwd: where the user runs it); its JSON lines."""
    env = {**os.environ, **_env(server)}
    with anyio.fail_after(HANG_GUARD_S):
        done = await anyio.run_process(
            [sys.executable, "-m", "unified", *args, "--json"], cwd=cwd, env=env, check=False
        )
    assert done.returncode == 0, (done.stdout.decode(), done.stderr.decode())
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def _moved(events: list[dict[str, Any]]) -> list[str]:
    return [e["message"] for e in events if e["type"] == "warning" and e["code"] == "session_moved"]


async def test_resume_by_short_id_from_another_directory_continues_the_session_there(
    tmp_path: Path, isolated_home: Path, warm_pool: AcpPool
) -> None:
    """Over ACP (b, b again, then a), then over the headless transport: `gemini -p --resume <id>` looks the session
    up in its process's cwd's project, so moved first (back to b), it is found; the CLI's own session cleanup in
    b (retention on) then keeps the moved session, header and all. This process's ACP runs (a, b again, a) share one
    warm CLI process: its loads find the session where another process moved it, not where it last saw it."""
    warm = {"pool": warm_pool}
    home = isolated_home / ".gemini"
    a, b = (tmp_path / "a").resolve(), (tmp_path / "b").resolve()
    a.mkdir()
    b.mkdir()
    turns = [ModelTurn(text=t) for t in ("noted", "it was 42", "still 42", "42 again", "42 from b")]
    async with FakeGemini(turns) as server:
        first = await _run(server, a, "remember 42", model="gemini-2.5-flash", backend_options_extra=warm)
        started = first[0]
        assert isinstance(started, SessionStarted)
        assert started.short_id is not None
        assert started.session_id is not None
        [in_a] = session_files(home, started.session_id)

        # From b, as a user would type it there.
        second = await _cli(server, b, "run", "what was the number?", "--resume", started.short_id)
        assert second[-1]["type"] == "result"
        assert (second[-1]["status"], second[-1]["final_text"]) == ("success", "it was 42"), second[-1]
        [moved] = _moved(second)
        assert str(a) in moved
        assert str(b) in moved
        resumed = next(e for e in second if e["type"] == "session_started")
        assert (resumed["session_id"], resumed["resumed"], resumed["cwd"]) == (started.session_id, True, str(b))
        assert _texts(server.requests[-1]) == ["remember 42", "noted", "what was the number?"]
        [in_b] = session_files(home, started.session_id)
        assert in_b.parent != in_a.parent
        assert not in_a.exists()

        listed = await _cli(server, b, "sessions", "list", "--backend", "gemini-cli")
        mine = [s for s in listed if s.get("short_id") == started.short_id]
        assert len(mine) == 1, listed
        assert mine[0]["cwd"] == str(b)

        # From b again: the newest state, no move.
        third = await _run(server, b, "sure?", resume=started.short_id, backend_options_extra=warm)
        result = third[-1]
        assert isinstance(result, Result)
        assert (result.status, result.final_text) == ("success", "still 42"), result.error
        assert not [e for e in third if isinstance(e, WarningEvent) and e.code == "session_moved"]
        assert _texts(server.requests[-1]) == ["remember 42", "noted", "what was the number?", "it was 42", "sure?"]

        # From a: not a stale copy, the whole conversation, and the session moves back.
        fourth = await _run(server, a, "and in a?", resume=started.short_id, backend_options_extra=warm)
        result = fourth[-1]
        assert isinstance(result, Result)
        assert (result.status, result.final_text) == ("success", "42 again"), result.error
        assert any(isinstance(e, WarningEvent) and e.code == "session_moved" for e in fourth)
        assert _texts(server.requests[-1])[-3:] == ["sure?", "still 42", "and in a?"]
        [back] = session_files(home, started.session_id)
        assert back.parent == in_a.parent

        # From b over the headless transport: moved first, then found by `gemini -p --resume`.
        fifth = await _run(
            server, b, "over -p?", resume=started.short_id, backend_options_extra={"transport": "stream-json"}
        )
        result = fifth[-1]
        assert isinstance(result, Result)
        assert (result.status, result.final_text) == ("success", "42 from b"), result.error
        assert next(e for e in fifth if isinstance(e, SessionStarted)).transport == "stream-json"
        assert any(isinstance(e, WarningEvent) and e.code == "session_moved" for e in fifth)
        assert _texts(server.requests[-1]) == [
            *("remember 42", "noted", "what was the number?", "it was 42", "sure?", "still 42"),
            *("and in a?", "42 again", "over -p?"),
        ]
        [path] = session_files(home, started.session_id)
        assert (path.parent.parent / ".project_root").read_text() == str(b)
        server.assert_done()
        assert warm_pool.spawned == 1
    content = path.read_bytes()
    await later_start_with_cleanup(home, b, path.parent)
    assert path.read_bytes() == content


@pytest.mark.parametrize("transport", ["acp", "stream-json"])
async def test_a_new_session_holds_its_lease_whatever_the_transport(
    run_gemini: Any, responses: Any, isolated_home: Path, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    """Whatever the transport, a new session's run holds its lease (so a resume from elsewhere cannot move it
    meanwhile: session_in_use) while it runs (taken before `session_started` is emitted, by the code's order)."""
    import contextlib

    from unified._adapters.gemini_cli import _relocate
    from unified.errors import SessionInUse

    held: list[tuple[str, bool]] = []
    real = _relocate.session_lease

    @contextlib.asynccontextmanager
    async def watched(home: Path, session_id: str) -> AsyncIterator[None]:
        async with real(home, session_id):
            try:
                async with real(home, session_id):  # what a resume from another directory would take
                    held.append((session_id, False))
            except SessionInUse:
                held.append((session_id, True))
            yield

    module = "_run" if transport == "acp" else "_stream_json"
    monkeypatch.setattr(f"unified._adapters.gemini_cli.{module}.session_lease", watched)
    fake = responses(stream_line(text("hello")))
    events = await run_gemini(fake, prompt="hi", backend_options={"transport": transport})
    started = events[0]
    assert isinstance(started, SessionStarted)
    assert held == [(started.session_id, True)]
