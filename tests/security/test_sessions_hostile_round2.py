"""Sessions and conversations under bad input, round 2: hostile sizes and text that no earlier test tried.

Hostile cases tried (each asserted below):
- a session record whose first line is 32 MB (no newline at all; and a record not in the one-line layout, as
  large): listed as unreadable with its path, the others listed, nothing read past the bound, the file kept;
- a session record larger than a record may be, and one of more JSON values than a record may hold (a
  resume read and parsed both whole: 30 MB of `[],` held 870 MB), in the file and the memory store;
- a first prompt of 100,000 characters: the header (read by every listing) keeps 4,096 of them;
- a gemini-cli chat file named for the session whose first line is 32 MB without a newline (read whole by
  the search for the session's files a resume makes), and one larger than the CLI can load (a listing reads
  its edges, then a resume or an export read it whole);
- a working directory whose name is not UTF-8: a `configuration_error`, where it was `internal_error`;
- a session reference of 100,000 characters: the error quotes 80 of them, not all;
- a store whose backend directory is a file, a full or read-only disk under a save, a directory that cannot
  be listed: `SessionStoreUnavailable` naming the path (a run ended with `internal_error`, an OSError), the
  record kept;
- a session's lock file planted as a symbolic link (to a file, dangling) or a FIFO: a lease truncated and
  overwrote the link's target with its holder record; now `SessionError` naming it, nothing written;
- `UNIFIED_SESSION_STORE_URL=file://` (or `file://dir`): sessions went to each run's own directory, where a
  run started elsewhere never found them; now a `ConfigurationError` saying to use `file:///absolute/dir`.
"""

from __future__ import annotations

import errno
import json
import os
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from unified import ExecuteParams
from unified import _limits as limits
from unified._cli import main as cli
from unified._execute import EventStream
from unified._sessions.stores import FileSessionStore, MemorySessionStore, serialize
from unified.errors import (
    ConfigurationError,
    CorruptSession,
    SessionError,
    SessionNotFound,
    SessionStoreUnavailable,
)
from unified.events import ErrorEvent
from unified.sessions import StoredSession

BACKEND = "generate-content"
HOSTILE_BYTES = 32 * 1024 * 1024
"""How large each hostile line or file is: what an unbounded read would hold, well above the bounds set here."""
SMALL_BOUND = 64 * 1024
"""The bound these tests set (`limits` exists so a test can lower one to try it cheaply)."""
PEAK_BOUND = 4 * 1024 * 1024
"""The most Python memory a bounded read may take here: the bound, its copies, the store's own objects."""


def _peak(work: Callable[[], object]) -> tuple[object, int]:
    """`work()`'s value, and the most memory Python held meanwhile beyond what it held before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        value = work()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return value, peak - base


def _raised(work: Callable[[], object]) -> Exception:
    """The exception `work()` raised (it must raise one)."""
    try:
        work()
    except Exception as exc:
        return exc
    raise AssertionError("it did not fail")


def _saved(store: FileSessionStore, prompt: str = "hi", state: dict[str, object] | None = None) -> StoredSession:
    session = StoredSession.new(BACKEND, model="m", cwd="/w", first_prompt=prompt)
    session.state = state or {}
    anyio.run(store.save, session)
    return session


HUGE_RECORDS: dict[str, Callable[[str], bytes]] = {
    "a first line without a newline": lambda head: b'{"header": ' + b"x" * HOSTILE_BYTES + b"}\n",
    "a header on a first line that never ends": lambda head: head.encode() + b"x" * HOSTILE_BYTES + b"}\n",
    "a record not in the one-line layout": lambda head: b'{\n"state": "' + b"x" * HOSTILE_BYTES + b'", "header": {}}\n',
}


@pytest.mark.parametrize("case", list(HUGE_RECORDS))
def test_a_record_whose_header_is_past_the_bound_is_listed_unreadable_without_reading_it(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_SESSION_HEADER_BYTES", SMALL_BOUND, raising=False)
    store = FileSessionStore(tmp_path / "sessions")
    healthy = _saved(store)
    hostile = _saved(store, "to be damaged")
    path = store.path_of(BACKEND, hostile.session_id)
    head = serialize(hostile).split("\n", 1)[0]
    path.write_bytes(HUGE_RECORDS[case](head))
    size = path.stat().st_size

    listed, peak = _peak(lambda: anyio.run(store.list_sessions, BACKEND))
    assert peak < PEAK_BOUND, f"listing held {peak:,} bytes for a {size:,}-byte record"
    assert isinstance(listed, list)
    assert [s.session_id for s in listed if s.problem is None] == [healthy.session_id]
    (reported,) = [s for s in listed if s.problem is not None]
    assert reported.session_id == hostile.session_id
    assert reported.problem is not None
    assert str(path) in reported.problem.message
    assert f"{SMALL_BOUND:,} bytes" in reported.problem.message  # says why: the bound it is past
    assert "move it away" in reported.problem.hint

    refused, peak = _peak(lambda: _raised(lambda: anyio.run(store.resolve, BACKEND, hostile.short_id)))
    assert isinstance(refused, CorruptSession)
    assert peak < PEAK_BOUND  # resolving its short id reads it the same way: refused, not read

    monkeypatch.setenv("UNIFIED_DATA_DIR", str(tmp_path))
    result = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", BACKEND])
    assert result.exit_code == 0, result.output
    listing, _, unreadable = result.output.partition("unreadable session(s), left unchanged:")
    assert healthy.short_id in listing
    assert hostile.short_id in unreadable
    assert path.stat().st_size == size  # kept, never deleted or rewritten


def test_a_record_larger_than_a_record_may_be_is_refused_unread_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_SESSION_RECORD_BYTES", SMALL_BOUND, raising=False)
    store = FileSessionStore(tmp_path)
    session = _saved(store, state={"contents": "y" * (4 * SMALL_BOUND)})  # a save writes it: a read refuses it
    path = store.path_of(BACKEND, session.session_id)
    before = path.read_bytes()
    path.write_bytes(before.replace(b"y" * 100, b"z" * 100 + b"y" * (HOSTILE_BYTES // 4096), 1))
    grown = path.read_bytes()

    caught, peak = _peak(lambda: _raised(lambda: anyio.run(store.load, BACKEND, session.session_id)))
    assert peak < PEAK_BOUND, f"a load held {peak:,} bytes of a {len(grown):,}-byte record past the bound"
    assert isinstance(caught, CorruptSession), caught
    assert str(path) in caught.message
    assert f"more than a session record may be ({SMALL_BOUND:,})" in caught.message
    assert "left unchanged" in str(caught.hint)
    with pytest.raises(CorruptSession):
        anyio.run(store.save, session)  # a record it cannot read is never replaced
    assert path.read_bytes() == grown


def test_a_record_of_more_values_than_a_record_may_hold_is_refused_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_SESSION_VALUES", 1_000, raising=False)
    file_store, memory_store = FileSessionStore(tmp_path), MemorySessionStore()
    prose = {"contents": [{"text": "a, b, c, " * 1_000}]}  # commas in a text are no values
    for store in (file_store, memory_store):
        session = StoredSession.new(BACKEND, model="m", cwd="/w", first_prompt="hi")
        session.state = prose
        anyio.run(store.save, session)
        assert anyio.run(store.load, BACKEND, session.session_id).state == prose

    session = _saved(file_store)
    path = file_store.path_of(BACKEND, session.session_id)
    many = ",".join(["[]"] * 5_000)
    path.write_bytes(path.read_bytes().replace(b'"state": {}', f'"state": {{"contents": [{many}]}}'.encode()))
    before = path.read_bytes()
    with pytest.raises(CorruptSession, match=r"holds 10,0\d\d JSON values, more than a session record may \(1,000\)"):
        anyio.run(file_store.load, BACKEND, session.session_id)
    with pytest.raises(CorruptSession):
        anyio.run(file_store.save, session)
    assert path.read_bytes() == before

    memory_store._documents[(BACKEND, session.session_id)] = before.decode()  # only a test puts one there
    with pytest.raises(CorruptSession, match="JSON values"):
        anyio.run(memory_store.load, BACKEND, session.session_id)
    (listed,) = [s for s in anyio.run(memory_store.list_sessions, BACKEND) if s.session_id == session.session_id]
    assert listed.problem is not None


def test_a_long_first_prompt_is_clipped_in_the_header_every_listing_reads(tmp_path: Path) -> None:
    store = FileSessionStore(tmp_path)
    prompt = "p" * 100_000
    session = _saved(store, prompt, state={"contents": [{"text": prompt}]})
    path = store.path_of(BACKEND, session.session_id)
    header = path.read_bytes().split(b"\n", 1)[0]
    assert len(header) < 2 * limits.MAX_SESSION_PROMPT_CHARS
    (listed,) = anyio.run(store.list_sessions, BACKEND)
    assert listed.first_prompt is not None
    assert len(listed.first_prompt) == limits.MAX_SESSION_PROMPT_CHARS
    assert listed.first_prompt.endswith("…")
    loaded = anyio.run(store.load, BACKEND, session.session_id)
    assert loaded.state == {"contents": [{"text": prompt}]}  # the prompt itself is kept whole


def test_a_gemini_cli_chat_file_whose_first_line_never_ends_is_not_read_whole(isolated_home: Path) -> None:
    from unified._adapters.gemini_cli._chat_files import session_files

    session_id = "9e9e9e9e-0000-4000-8000-000000000001"
    chats = isolated_home / ".gemini" / "tmp" / "project" / "chats"
    chats.mkdir(parents=True)
    good = chats / "session-2026-01-01T00-01-9e9e9e9e.jsonl"
    good.write_text(json.dumps({"sessionId": session_id, "projectHash": "h"}) + "\n")
    hostile = chats / "session-2026-01-01T00-00-9e9e9e9e.jsonl"
    hostile.write_bytes(b'{"sessionId": "' + b"9" * HOSTILE_BYTES)  # no newline, no end
    found, peak = _peak(lambda: session_files(isolated_home / ".gemini", session_id))
    assert peak < PEAK_BOUND, f"the search held {peak:,} bytes of a {HOSTILE_BYTES:,}-byte first line"
    assert found == [good]
    assert hostile.stat().st_size == len(b'{"sessionId": "') + HOSTILE_BYTES


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_cwd_whose_name_is_not_utf8_is_a_configuration_error(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "not-a-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")  # never reached: refused before
    workspace = os.fsencode(tmp_path) + b"/caf\xc3 \xff"
    os.mkdir(workspace)
    params = ExecuteParams(prompt="hi", backend=backend, cwd=Path(os.fsdecode(workspace)))
    with pytest.raises(ConfigurationError, match="is not valid UTF-8") as caught:
        [e async for e in EventStream(params)]
    assert "rename the directory" in str(caught.value.hint)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_session_reference_of_any_length_is_quoted_clipped(tmp_path: Path) -> None:
    from unified import sessions

    ref = "a" * 100_000
    with pytest.raises(SessionNotFound) as caught:
        await sessions.resolve(ref, store=MemorySessionStore(), cwd=str(tmp_path))
    assert len(str(caught.value)) < 10_000
    assert "a" * 79 + "…" in caught.value.message


# --- a store that cannot be written --------------------------------------------------------------


def test_a_store_whose_directory_is_a_file_is_a_typed_error_that_names_it(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    (root / BACKEND).write_text("not a directory")  # as a read-only or full disk, but possible as root too
    store = FileSessionStore(root)
    session = StoredSession.new(BACKEND, model="m", cwd="/w", first_prompt="hi")

    async def lease() -> None:
        async with store.lease(BACKEND, session.session_id):
            raise AssertionError("a lease in a store that cannot be written")

    attempts: list[Callable[[], object]] = [lambda: anyio.run(lease), lambda: anyio.run(store.save, session)]
    for attempt in attempts:
        with pytest.raises(SessionStoreUnavailable) as caught:
            attempt()
        assert caught.value.code == "session_store_unavailable"
        blocker = root / BACKEND
        assert f"the session store at {root} cannot be written: {blocker} is a file" in caught.value.message
        assert "move or remove that file" in str(caught.value.hint)
    with pytest.raises(SessionStoreUnavailable, match=r"cannot be read: .* is a file, where the store needs a folder"):
        anyio.run(store.load, BACKEND, session.session_id)
    assert (root / BACKEND).read_text() == "not a directory"


@pytest.mark.parametrize(("errno_", "what"), [(errno.ENOSPC, "No space left"), (errno.EROFS, "Read-only")])
def test_a_full_or_read_only_disk_fails_a_save_with_a_typed_error_and_keeps_the_record(
    errno_: int, what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified._sessions import stores

    store = FileSessionStore(tmp_path)
    session = _saved(store, state={"turn": 1})
    path = store.path_of(BACKEND, session.session_id)
    before = path.read_bytes()

    def fail(target: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno_, os.strerror(errno_), str(target))

    monkeypatch.setattr(stores, "write_atomically", fail)
    session.state = {"turn": 2}
    with pytest.raises(SessionStoreUnavailable, match=what) as caught:
        anyio.run(store.save, session)
    assert str(path) in caught.value.message
    assert path.read_bytes() == before


def test_a_backend_directory_that_cannot_be_listed_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileSessionStore(tmp_path)
    session = _saved(store)
    real = os.scandir

    def denied(path: str | Path) -> object:
        if Path(path) == tmp_path / BACKEND:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", denied)  # the module the store calls it through
    with pytest.raises(SessionStoreUnavailable, match="cannot be listed: Permission denied"):
        anyio.run(store.list_sessions, BACKEND)
    with pytest.raises(SessionStoreUnavailable):
        anyio.run(store.resolve, BACKEND, session.short_id)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("backend", ["generate-content", "interactions"])
async def test_a_run_on_a_store_that_cannot_be_written_ends_with_session_store_unavailable(
    backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    (root / backend).write_text("not a directory")
    monkeypatch.setenv("GEMINI_API_KEY", "not-a-key")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9")  # the lease fails first
    params = ExecuteParams(prompt="hi", backend=backend, cwd=tmp_path, session_store=FileSessionStore(root))
    events = [e async for e in EventStream(params)]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.code for e in errors] == ["session_store_unavailable"], [e.message for e in errors]
    assert f"{root / backend} is a file, where the store needs a folder" in errors[0].message
    assert (root / backend).read_text() == "not a directory"


@pytest.mark.parametrize("url", ["file://", "file://sessions", "file://rel/dir", "file://localhost"])
def test_a_file_store_url_without_an_absolute_directory_is_refused(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified._sessions.config import default_store, store_from_url

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # where such a store put its sessions: each run's own directory
    with pytest.raises(ConfigurationError, match="names no absolute directory") as caught:
        store_from_url(url)
    assert "file:///absolute/directory" in str(caught.value.hint)
    monkeypatch.setenv("UNIFIED_SESSION_STORE_URL", url)
    with pytest.raises(ConfigurationError):
        default_store()
    result = CliRunner().invoke(cli.app, ["sessions", "list", "--backend", BACKEND])
    assert result.exit_code != 0
    assert "names no absolute directory" in result.output
    assert list(work.iterdir()) == []


def test_a_file_store_url_names_its_absolute_directory_with_or_without_localhost(tmp_path: Path) -> None:
    from unified._sessions.config import store_from_url

    for url in (f"file://{tmp_path}", f"file://localhost{tmp_path}"):
        store = store_from_url(url)
        assert isinstance(store, FileSessionStore)
        assert store.root == tmp_path


def test_a_gemini_cli_chat_file_larger_than_the_cli_loads_is_refused_unread(
    isolated_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified import sessions
    from unified._adapters.gemini_cli import _chat_files
    from unified._adapters.gemini_cli._conversation import open_history
    from unified.conversations import Conversation, ModelTurn, TextPart, UserTurn

    monkeypatch.setattr(_chat_files, "MAX_CHAT_FILE_BYTES", SMALL_BOUND, raising=False)
    answer = "x" * (HOSTILE_BYTES // 4)  # listed from its edges, so it resolves; read whole, it is refused
    conversation = Conversation(turns=[UserTurn(parts=[TextPart(text="hi")]), ModelTurn(parts=[TextPart(text=answer)])])
    opening = open_history({"GEMINI_CLI_HOME": str(isolated_home)}, tmp_path, conversation, model="m")
    [chat] = list((isolated_home / ".gemini" / "tmp").glob("*/chats/*.jsonl"))
    size = chat.stat().st_size

    async def export() -> object:
        return await sessions.export(opening.load, backend="gemini-cli", cwd=str(tmp_path))

    refused, peak = _peak(lambda: _raised(lambda: anyio.run(export)))
    assert isinstance(refused, CorruptSession), refused
    assert peak < PEAK_BOUND, f"the export held {peak:,} bytes of a {size:,}-byte chat file"
    assert str(chat) in refused.message
    assert f"more than unified reads ({SMALL_BOUND})" in refused.message
    assert "left unchanged" in str(refused.hint)
    listing = anyio.run(lambda: sessions.list_sessions(backend="gemini-cli"))
    assert [(s.path, s.problem is not None) for s in listing.unreadable] == [(str(chat), True)]
    assert listing.sessions == []
    assert chat.stat().st_size == size


@pytest.mark.parametrize("planted", ["a link to a file", "a dangling link", "a FIFO"])
def test_a_lock_file_that_is_no_regular_file_is_refused_and_nothing_is_written_through_it(
    planted: str, tmp_path: Path
) -> None:
    store = FileSessionStore(tmp_path / "sessions")
    session = _saved(store)
    lock = store.path_of(BACKEND, session.session_id).with_suffix(".lock")
    precious = tmp_path / "precious.txt"
    precious.write_text("the user's own file")
    if planted == "a link to a file":
        lock.symlink_to(precious)
    elif planted == "a dangling link":
        lock.symlink_to(tmp_path / "created-through-the-link")
    else:
        os.mkfifo(lock)

    async def lease() -> None:
        async with store.lease(BACKEND, session.session_id):
            raise AssertionError("a lease through a planted lock file")

    attempts: list[Callable[[], object]] = [
        lambda: anyio.run(lease),
        lambda: anyio.run(store.delete, BACKEND, session.session_id),
    ]
    for attempt in attempts:
        with pytest.raises(SessionError) as caught:
            attempt()
        assert str(lock) in caught.value.message
        assert "move it away" in str(caught.value.hint)
    assert precious.read_text() == "the user's own file"  # a lease wrote its holder record through the link
    assert not (tmp_path / "created-through-the-link").exists()
    assert os.path.lexists(lock)  # left as it was
    assert anyio.run(store.load, BACKEND, session.session_id).session_id == session.session_id  # not deleted
