"""The file session store under hostile conditions: racing processes, killed holders, damaged files.

Hostile cases tried (each asserted below):
- lease races: 30 trials of 4 processes racing for one session over a stale lock file (10 naming a
  dead pid, 10 a live unrelated pid, 10 garbage), plus 4 processes x 5 contended handovers each;
- a holder killed with SIGKILL; a lock file naming a live unrelated pid (2 cases);
- 10 damaged or foreign session files, each through load, resolve, list, save and the CLI;
  one with a damaged state (header intact) through load and save;
- resuming a format-999 and a corrupt session through `execute()` on both API backends (4 cases).
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from multiprocessing.synchronize import Barrier
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from tests.harness.lease_holder import lease_held_elsewhere
from unified._cli import main as cli
from unified._sessions.stores import FileSessionStore
from unified.errors import CorruptSession, SessionError, SessionInUse, UnsupportedSessionFormat
from unified.sessions import StoredSession

BACKEND = "generate-content"
HANG_GUARD_S = 120.0
"""Only a hang guard for barrier waits: a normal step takes milliseconds."""
CONTENDERS = 4
TRIALS = 30


def _append(log: Path, line: str) -> None:
    """One line appended with one write(2) on an O_APPEND descriptor: lines never tear."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _record(root: Path, session_id: str) -> Path:
    """Where the store saves this session (its shard directory)."""
    return FileSessionStore(root).path_of(BACKEND, session_id)


def _saved(root: Path, first_prompt: str = "hi") -> StoredSession:
    session = StoredSession.new(BACKEND, model="m", cwd="/w", first_prompt=first_prompt)
    anyio.run(FileSessionStore(root).save, session)
    return session


# --- racing takeover -----------------------------------------------------------------------------


def _contender(root: str, session_id: str, log: str, start: Barrier, attempted: Barrier, released: Barrier) -> None:
    """One racing process: per trial, try the lease once, hold it until everyone has tried."""
    store = FileSessionStore(Path(root))
    me = os.getpid()

    async def attempt() -> None:
        try:
            async with store.lease(BACKEND, session_id):
                _append(Path(log), f"begin {me}")
                await anyio.to_thread.run_sync(attempted.wait, HANG_GUARD_S)
                _append(Path(log), f"end {me}")
        except SessionInUse as exc:
            _append(Path(log), f"refused {me} {json.dumps(exc.message)}")
            await anyio.to_thread.run_sync(attempted.wait, HANG_GUARD_S)

    for _ in range(TRIALS):
        start.wait(HANG_GUARD_S)
        anyio.run(attempt)
        released.wait(HANG_GUARD_S)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.e2e  # runs a real subprocess
def test_racing_processes_over_a_stale_lock_never_both_hold(tmp_path: Path) -> None:
    session = _saved(tmp_path)
    lock = _record(tmp_path, session.session_id).with_suffix(".lock")
    log = tmp_path / "holders.log"
    context = multiprocessing.get_context("spawn")
    start, attempted, released = (context.Barrier(CONTENDERS + 1) for _ in range(3))
    workers = [
        context.Process(
            target=_contender, args=(str(tmp_path), session.session_id, str(log), start, attempted, released)
        )
        for _ in range(CONTENDERS)
    ]
    for worker in workers:
        worker.start()
    live_unrelated = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    stale_records = [
        json.dumps({"pid": _dead_pid(), "host": socket.gethostname(), "since": "2026-01-01T00:00:00+00:00"}),
        json.dumps({"pid": live_unrelated.pid, "host": socket.gethostname()}),
        "garbage \x00 not json",
    ]
    try:
        for trial in range(TRIALS):
            lock.write_text(stale_records[trial % 3])  # what a crash (or main's lock format) leaves behind
            _append(log, f"trial {trial}")
            start.wait(HANG_GUARD_S)
            attempted.wait(HANG_GUARD_S)
            released.wait(HANG_GUARD_S)
    finally:
        for worker in workers:
            worker.join(HANG_GUARD_S)
        assert live_unrelated.stdin is not None
        live_unrelated.stdin.close()
        live_unrelated.wait()
    assert [w.exitcode for w in workers] == [0] * CONTENDERS

    trials = log.read_text().split("trial ")[1:]
    assert len(trials) == TRIALS
    holders_per_trial = []
    for block in trials:
        lines = block.splitlines()[1:]
        begins = [line.split()[1] for line in lines if line.startswith("begin ")]
        ends = [line.split()[1] for line in lines if line.startswith("end ")]
        refusals = [line for line in lines if line.startswith("refused ")]
        holders_per_trial.append(len(begins))
        assert begins == ends
        assert len(refusals) == CONTENDERS - len(begins)
        for refusal in refusals:
            message = json.loads(refusal.split(" ", 2)[2])
            assert "is in use by another run" in message
            assert "wait for it to finish" in message
            assert f"pid {begins[0]} on host {socket.gethostname()}" in message  # never a stale record's pid
    assert holders_per_trial == [1] * TRIALS  # every trial: exactly one holder, never two, never none


def _handover(root: str, session_id: str, log: str, rounds: int, start: Barrier) -> None:
    """Takes the lease `rounds` times, retrying at once when it is held; writes 5 lines while holding."""
    store = FileSessionStore(Path(root))
    me = os.getpid()

    async def hold_once() -> bool:
        try:
            async with store.lease(BACKEND, session_id):
                for step in range(5):
                    _append(Path(log), f"{me} {step}")
                return True
        except SessionInUse:
            return False

    start.wait(HANG_GUARD_S)
    taken = 0
    while taken < rounds:
        taken += anyio.run(hold_once)


@pytest.mark.e2e  # runs real subprocesses
def test_contended_handovers_never_interleave(tmp_path: Path) -> None:
    """Release unlinks the lock file while holding it: a taker that locked the unlinked file retries."""
    session = _saved(tmp_path)
    log = tmp_path / "holds.log"
    rounds = 5
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(CONTENDERS)
    workers = [
        context.Process(target=_handover, args=(str(tmp_path), session.session_id, str(log), rounds, start))
        for _ in range(CONTENDERS)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(HANG_GUARD_S)
    assert [w.exitcode for w in workers] == [0] * CONTENDERS
    lines = [line.split() for line in log.read_text().splitlines()]
    assert len(lines) == CONTENDERS * rounds * 5
    for block in range(0, len(lines), 5):
        holds = lines[block : block + 5]
        assert [step for _, step in holds] == ["0", "1", "2", "3", "4"]
        assert len({pid for pid, _ in holds}) == 1, f"two holders interleaved: {holds}"
    assert not list((tmp_path / BACKEND).rglob("*.lock"))  # released leases leave no lock file


def test_a_taker_that_locks_an_unlinked_lock_file_tries_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The narrow race the handovers above can only sometimes hit, made certain.

    The taker opens the lock file; before it calls flock, the holder releases (unlinks the file,
    then closes it). The taker's flock then succeeds on a file no longer at the path: unless it
    notices, a third taker creates a new file there and two runs hold the session.
    """
    session = _saved(tmp_path)
    store = FileSessionStore(tmp_path)
    first = store._hold(BACKEND, session.session_id)
    first.__enter__()
    real_flock = fcntl.flock
    calls = 0

    def flock_after_the_holder_left(fd: int, operation: int) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            first.__exit__(None, None, None)
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock_after_the_holder_left)
    with store._hold(BACKEND, session.session_id):
        assert calls == 2  # locked the orphan, saw it was not the file at the path, took the new one
        monkeypatch.setattr(fcntl, "flock", real_flock)
        with pytest.raises(SessionInUse), store._hold(BACKEND, session.session_id):
            pass


# --- a killed holder, an unrelated pid ---------------------------------------------------------------


@pytest.mark.e2e  # runs a real subprocess
def test_a_holder_killed_with_sigkill_releases_the_lease_at_once(tmp_path: Path) -> None:
    session = _saved(tmp_path)
    store = FileSessionStore(tmp_path)
    with lease_held_elsewhere(tmp_path, session.session_id) as holder:
        with pytest.raises(SessionInUse) as caught:
            anyio.run(store.delete, BACKEND, session.session_id)
        assert f"pid {holder.pid} on host {socket.gethostname()}" in caught.value.message
    lock = _record(tmp_path, session.session_id).with_suffix(".lock")
    assert json.loads(lock.read_text())["pid"] == holder.pid  # the dead holder's record is still there

    async def take() -> None:
        async with store.lease(BACKEND, session.session_id):
            pass

    anyio.run(take)  # no timer, no liveness guess: the kernel dropped the dead holder's lock
    anyio.run(store.delete, BACKEND, session.session_id)
    assert not _record(tmp_path, session.session_id).exists()


@pytest.mark.parametrize("pid", ["init", "sibling"])
@pytest.mark.e2e  # runs a real subprocess
def test_a_lock_file_naming_a_live_unrelated_pid_does_not_block(tmp_path: Path, pid: str) -> None:
    session = _saved(tmp_path)
    sibling = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        named = 1 if pid == "init" else sibling.pid
        lock = _record(tmp_path, session.session_id).with_suffix(".lock")
        lock.write_text(json.dumps({"pid": named, "host": socket.gethostname(), "since": "2026-01-01T00:00:00"}))
        store = FileSessionStore(tmp_path)

        async def take() -> int:
            async with store.lease(BACKEND, session.session_id):
                return int(json.loads(lock.read_text())["pid"])

        assert anyio.run(take) == os.getpid()  # taken at once, and the record now names its real holder
    finally:
        assert sibling.stdin is not None
        sibling.stdin.close()
        sibling.wait()


# --- damaged and foreign files ----------------------------------------------------------------------


def _valid(root: Path) -> tuple[StoredSession, Path]:
    session = _saved(root, "a prompt")
    return session, _record(root, session.session_id)


def _header_edit(change: Callable[[dict[str, object]], None]) -> Callable[[bytes, str], bytes]:
    def damage(data: bytes, session_id: str) -> bytes:
        document = json.loads(data)
        change(document["header"])
        return json.dumps(document).encode() + b"\n"

    return damage


def _set(key: str, value: object) -> Callable[[dict[str, object]], None]:
    def change(header: dict[str, object]) -> None:
        header[key] = value

    return change


def _drop(key: str) -> Callable[[dict[str, object]], None]:
    def change(header: dict[str, object]) -> None:
        del header[key]

    return change


DAMAGE: dict[str, tuple[Callable[[bytes, str], bytes], type[SessionError]]] = {
    "invalid JSON": (lambda data, sid: b"{not json at all\n", CorruptSession),
    "truncated in the state": (lambda data, sid: data[: len(data) * 2 // 3], CorruptSession),
    "truncated after the header line": (lambda data, sid: data.split(b"\n")[0] + b"\n", CorruptSession),
    "empty file": (lambda data, sid: b"", CorruptSession),
    "not UTF-8": (lambda data, sid: b"\xff\xfe\x00garbage}\n", CorruptSession),
    "wrong type: created_at is a number": (_header_edit(_set("created_at", 5)), CorruptSession),
    "wrong type: usage is a string": (_header_edit(_set("usage", "lots")), CorruptSession),
    "format missing": (_header_edit(_drop("format")), CorruptSession),
    "format 999 (a newer unified)": (_header_edit(_set("format", 999)), UnsupportedSessionFormat),
    "another session's record under this name": (
        lambda data, sid: data.replace(sid.encode(), b"0ther000-0000-0000-0000-000000000000"),
        CorruptSession,
    ),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_file_is_reported_everywhere_and_never_rewritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    root = tmp_path / "sessions"
    damage, error = DAMAGE[case]
    session, path = _valid(root)
    healthy, _ = _valid(root)
    path.write_bytes(damage(path.read_bytes(), session.session_id))
    before = path.read_bytes()
    store = FileSessionStore(root)

    with pytest.raises(error) as loaded:
        anyio.run(store.load, BACKEND, session.session_id)
    assert str(path) in loaded.value.message
    assert "left unchanged" in str(loaded.value.hint)
    if error is UnsupportedSessionFormat:
        assert "newer unified" in loaded.value.message
        assert "upgrade" in str(loaded.value.hint)
    with pytest.raises(error):
        anyio.run(store.resolve, BACKEND, session.short_id)
    listed = anyio.run(store.list_sessions, BACKEND)
    assert [s.session_id for s in listed if s.problem is None] == [healthy.session_id]
    (reported,) = [s for s in listed if s.problem is not None]
    assert reported.session_id == session.session_id
    assert reported.problem is not None
    assert reported.problem.kind == ("newer_format" if error is UnsupportedSessionFormat else "corrupt")
    with pytest.raises(error):
        anyio.run(store.save, session)  # a record it could not read is never replaced
    with pytest.raises(error):
        anyio.run(store.resolve, BACKEND, session.session_id)

    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", BACKEND])
    assert result.exit_code == 0, result.output
    listing, _, unreadable = result.output.partition("unreadable session(s), left unchanged:")
    assert healthy.short_id in listing
    assert session.short_id in unreadable
    assert str(path) in unreadable.replace("\n", "")
    lines = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", BACKEND, "--json"]).output
    as_json = [json.loads(line) for line in lines.splitlines()]  # JSON Lines: one session per line
    assert [s["problem"]["kind"] for s in as_json if s["session_id"] == session.session_id] == [reported.problem.kind]
    assert path.read_bytes() == before  # no read, list, save or CLI call changed a byte


def test_a_damaged_state_behind_a_sound_header_fails_load_and_save(tmp_path: Path) -> None:
    """Listing reads headers only (docs/sessions.md); loading and saving read the whole record."""
    session, path = _valid(tmp_path)
    path.write_bytes(path.read_bytes().replace(b'"state": {}', b'"state": 5'))
    before = path.read_bytes()
    store = FileSessionStore(tmp_path)
    with pytest.raises(CorruptSession, match="state is not a JSON object"):
        anyio.run(store.load, BACKEND, session.session_id)
    with pytest.raises(CorruptSession):
        anyio.run(store.save, session)
    assert path.read_bytes() == before


def test_a_leased_record_damaged_behind_the_store_s_back_is_refused_even_at_the_same_size(tmp_path: Path) -> None:
    """Under its lease the store skips the parse only when the record holds exactly what it wrote:
    a damage of the same length, in place (same inode, maybe the same timestamp), is still caught."""
    store = FileSessionStore(tmp_path)
    session = StoredSession.new(BACKEND, model="m", cwd="/w", first_prompt="hi")
    path = store.path_of(BACKEND, session.session_id)
    with store._hold(BACKEND, session.session_id):
        store._save(session)
        raw = path.read_bytes()
        with path.open("r+b") as handle:  # one byte of the header, in place
            handle.write(b"[")
        assert len(path.read_bytes()) == len(raw)
        with pytest.raises(CorruptSession):
            store._save(session)
    assert path.read_bytes()[:1] == b"["  # left as it was


def test_a_leased_record_that_holds_what_the_store_wrote_is_not_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path)
    parsed: list[Path] = []
    parse = store._parse_session

    def counted(path: Path, raw: bytes) -> StoredSession:
        parsed.append(path)
        return parse(path, raw)

    monkeypatch.setattr(store, "_parse_session", counted)
    session = _saved(tmp_path)  # written by another store: parsed once when this one replaces it
    with store._hold(BACKEND, session.session_id):
        for turn in range(3):
            session.state["turn"] = turn
            store._save(session)
    assert len(parsed) == 1
    session.state["turn"] = 3
    store._save(session)  # no lease any more: read and parsed again
    assert len(parsed) == 2
    assert store._read_session(store.path_of(BACKEND, session.session_id)).state == {"turn": 3}


def test_saved_documents_hold_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "AIzaSyD-very-secret-key-0123456789"
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    session = StoredSession.new(BACKEND, model="m", cwd="/w", first_prompt=f"use {secret}")
    session.state["contents"] = [{"role": "user", "parts": [{"text": f"env says GEMINI_API_KEY={secret}"}]}]
    store = FileSessionStore(tmp_path)
    anyio.run(store.save, session)
    text = _record(tmp_path, session.session_id).read_text()
    assert secret not in text
    assert "[REDACTED]" in text
    loaded = anyio.run(store.load, BACKEND, session.session_id)
    assert secret not in json.dumps(loaded.state)


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
@pytest.mark.parametrize(
    ("case", "code"),
    [("format 999 (a newer unified)", "unsupported_session_format"), ("invalid JSON", "corrupt_session")],
)
async def test_resuming_an_unreadable_session_fails_and_leaves_it_unchanged(
    tmp_path: Path, backend: str, case: str, code: str
) -> None:
    from unified import execute
    from unified.events import ErrorEvent, Result
    from unified.testing._fake_gemini import FakeGemini
    from unified.types import ExecuteParams

    store = FileSessionStore()  # the default store a run uses
    session = StoredSession.new(backend, model="gemini-2.5-flash", cwd=str(tmp_path), first_prompt="before")
    await store.save(session)
    path = store.path_of(backend, session.session_id)
    path.write_bytes(DAMAGE[case][0](path.read_bytes(), session.session_id))
    before = path.read_bytes()
    with FakeGemini() as server:
        params = ExecuteParams(
            prompt="after",
            backend=backend,
            cwd=tmp_path,
            resume=session.short_id,
            backend_options={"api_key": "test-key", "base_url": server.base_url},
        )
        async with execute(params) as stream:
            events = [event async for event in stream]
        assert server.requests == []  # nothing was sent: the run stopped at the session
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == [code]
    assert str(path) in errors[0].message
    result = events[-1]
    assert isinstance(result, Result)
    assert result.status == "error"
    assert path.read_bytes() == before  # not resumed, not rewritten as format 1
