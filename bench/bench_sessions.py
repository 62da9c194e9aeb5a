"""Sessions at scale: 10,000 sessions on disk, in the Gemini CLI's layout and in our own store;
100,000 in the PostgreSQL store on a throwaway local server.

Sizes are skewed as real histories are: most a few KB, some tens of KB, a few of about a megabyte.
For each layout: time to resolve one short id, time to list every session, and bytes read per call
(from /proc/self/io `rchar`, so every read the code makes is counted). The baseline is the floor for
a lookup: find the one file by the short id in its name where the layout puts it, and read its first
line. Both layouts put the id in the file name: the Gemini CLI's in one of its project directories
(the floor globs them all), our store in the shard directory named by the id's first two characters
(`<backend>/<shard>/<id>.json`, built through `FileSessionStore.path_of`, so the floor globs that one
directory). Target: resolve under 20 ms.

PostgreSQL (`PostgresSessionStore`): resolve by short id and save (a whole 4 KB session, one
transaction), each as a ratio to the engine's floor measured in the same run, a bare
`SELECT document ... WHERE backend = $1 AND session_id = $2` on an open connection. The rows are
bulk-loaded with COPY in the store's own format (states of about 500 bytes: resolve reads headers
only, so state size does not change it).
"""

from __future__ import annotations

import json
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

import anyio

from bench._env import isolated_home
from bench.harness import Figure, Outcome, spread
from unified._adapters.gemini_cli._chat_files import ChatFiles
from unified._sessions.postgres import TABLE, PostgresSessionStore
from unified._sessions.stores import FileSessionStore, header_text, serialize
from unified.sessions import StoredSession

PROJECTS = 20
_WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "reads",
    "a",
    "file",
    "and",
    "answers",
    "with",
    "a",
    "long",
    "explanation",
    "of",
    "what",
    "it",
    "found",
]


def _size(rng: random.Random) -> int:
    """Bytes of conversation: 90% about 4 KB, 9.5% about 40 KB, 0.5% about 1 MB."""
    roll = rng.random()
    base = 1_000_000 if roll < 0.005 else 40_000 if roll < 0.1 else 4_000
    return int(base * rng.uniform(0.5, 1.5))


def _text(rng: random.Random, size: int) -> str:
    words = rng.choices(_WORDS, k=max(1, size // 6))
    return " ".join(words)[:size]


def _cli_file(directory: Path, session_id: str, start: datetime, size: int, rng: random.Random) -> None:
    stamp = start.strftime("%Y-%m-%dT%H-%M")
    lines = [
        {
            "sessionId": session_id,
            "projectHash": "0" * 64,
            "startTime": start.isoformat(),
            "kind": "main",
            "lastUpdated": start.isoformat(),
        },
        {"id": "u0", "timestamp": start.isoformat(), "type": "user", "content": [{"text": _text(rng, 80)}]},
    ]
    written, n = 0, 1
    while written < size:
        text = _text(rng, min(2_000, size - written) or 1)
        written += len(text) + 200
        kind = "gemini" if n % 2 else "user"
        record: dict[str, object] = {"id": f"m{n}", "timestamp": start.isoformat(), "type": kind, "content": text}
        if kind == "gemini":
            record |= {"model": "gemini-2.5-flash", "tokens": {"input": 900, "output": 120, "total": 1020}}
        lines.append(record)
        n += 1
    lines.append({"$set": {"lastUpdated": (start + timedelta(minutes=n)).isoformat()}})
    path = directory / f"session-{stamp}-{session_id[:8]}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def build_cli(home: Path, count: int, rng: random.Random) -> list[str]:
    projects = {str(home / f"proj-{p}"): f"proj-{p}" for p in range(PROJECTS)}
    (home / ".gemini" / "projects.json").write_text(json.dumps({"projects": projects}))
    ids: list[str] = []
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for n in range(count):
        directory = home / ".gemini" / "tmp" / f"proj-{n % PROJECTS}" / "chats"
        directory.mkdir(parents=True, exist_ok=True)
        session_id = str(uuid.UUID(int=rng.getrandbits(128)))
        _cli_file(directory, session_id, start + timedelta(minutes=7 * n), _size(rng), rng)
        ids.append(session_id)
    return ids


def _random_session(rng: random.Random, updated_at: datetime | None = None) -> StoredSession:
    """A generate-content session with a random id and first prompt (its history is the caller's)."""
    session = StoredSession(
        "generate-content",
        str(uuid.UUID(int=rng.getrandbits(128))),
        model="gemini-2.5-flash",
        cwd="/w",
        first_prompt=_text(rng, 80),
    )
    if updated_at is not None:
        session.updated_at = updated_at
    return session


def build_store(root: Path, count: int, rng: random.Random) -> list[str]:
    """Files in exactly the format and layout FileSessionStore.save writes (without its per-file fsync)."""
    store = FileSessionStore(root)
    (root / "generate-content").mkdir(parents=True)
    ids: list[str] = []
    for _ in range(count):
        session = _random_session(rng)
        size = _size(rng)
        contents = [
            {"role": "user" if i % 2 else "model", "parts": [{"text": _text(rng, 2_000)}]}
            for i in range(size // 2_000 + 1)
        ]
        session.state["contents"] = contents
        path = store.path_of("generate-content", session.session_id)
        path.parent.mkdir(exist_ok=True)  # the id's shard
        path.write_text(serialize(session))
        ids.append(session.session_id)
    return ids


def _rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def measure(fn: Callable[[], object]) -> tuple[float, int]:
    """(seconds, bytes read) of one call."""
    before = _rchar()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start, _rchar() - before


def _floor(pattern: str, root: Path) -> Callable[[], object]:
    def lookup() -> object:
        path = next(root.glob(pattern))
        with path.open("rb") as fh:
            return fh.readline()

    return lookup


def run(quick: bool) -> Outcome:
    count, runs = (200, 2) if quick else (10_000, 5)
    outcome = Outcome("sessions")
    rng = random.Random(8)
    with isolated_home() as home:
        cli_ids = build_cli(home, count, rng)
        store_root = home / "store"
        store_ids = build_store(store_root, count, rng)
        locator = ChatFiles({"GEMINI_CLI_HOME": str(home), "HOME": str(home)})
        store = FileSessionStore(store_root)

        def store_resolve(short: str) -> object:
            return anyio.run(store.resolve, "generate-content", short)

        def store_list() -> object:
            return anyio.run(store.list_sessions, "generate-content")

        layouts: list[
            tuple[str, list[str], Callable[[str], object], Callable[[], object], Callable[[str], Callable[[], object]]]
        ] = [
            (
                "gemini-cli",
                cli_ids,
                locator.resolve,
                locator.list_sessions,
                lambda short: _floor(f"*/chats/session-*-{short}.jsonl", home / ".gemini" / "tmp"),
            ),
            (
                "unified store",
                store_ids,
                store_resolve,
                store_list,
                lambda short: _floor(f"{short}*.json", store_root / "generate-content" / short[:2].lower()),
            ),
        ]
        for name, ids, resolve, list_all, floor in layouts:
            resolved: list[tuple[float, int]] = []
            floors: list[tuple[float, int]] = []
            listed: list[tuple[float, int]] = []
            for _ in range(runs):
                short = rng.choice(ids)[:8]
                floors.append(measure(floor(short)))
                resolved.append(measure(partial(resolve, short)))
                listed.append(measure(list_all))
            outcome.figures += [
                Figure(f"{name}: resolve short id", "s", [t for t, _ in resolved]),
                Figure(f"{name}: floor (glob by name + first line)", "s", [t for t, _ in floors]),
                Figure(f"{name}: list all", "s", [t for t, _ in listed]),
                Figure(f"{name}: bytes read per resolve", "bytes", [float(b) for _, b in resolved]),
                Figure(f"{name}: bytes read by the floor", "bytes", [float(b) for _, b in floors]),
            ]
            resolve_ms = spread([t * 1000 for t, _ in resolved])[1]
            outcome.ratio(f"{name}: resolve ms ({count} sessions)", resolve_ms, "< 20 ms", resolve_ms < 20)
            ratio = spread([r[0] / f[0] for r, f in zip(resolved, floors, strict=True)])[1]
            outcome.ratio(f"{name}: resolve / floor", ratio, "informational", True)
            read_ratio = spread([r[1] / max(f[1], 1) for r, f in zip(resolved, floors, strict=True)])[1]
            outcome.ratio(f"{name}: bytes read, resolve / floor", read_ratio, "informational", True)
    postgres(outcome, 1_000 if quick else 100_000, 20 if quick else 200, rng)
    return outcome


def postgres(outcome: Outcome, count: int, runs: int, rng: random.Random) -> None:
    """The PostgreSQL store's rows: resolve and save against a bare SELECT of one record."""
    from tests.harness.postgres_server import PostgresServer, postgres_bin_dir

    try:
        postgres_bin_dir()
        import psycopg
    except (RuntimeError, ImportError) as exc:
        outcome.notes.append(f"postgres rows skipped: {exc}")
        return
    with PostgresServer() as server:
        url = server.create_database()
        store = PostgresSessionStore(url)
        ids = _load_rows(store, url, count, rng)
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("ANALYZE")
            bare = f"SELECT document FROM {TABLE} WHERE backend = %s AND session_id = %s"

            def floor(session_id: str) -> float:
                start = time.perf_counter()
                connection.execute(bare, ("generate-content", session_id)).fetchone()
                return time.perf_counter() - start

            async def timed(call: Callable[[], Awaitable[object]]) -> float:
                start = time.perf_counter()
                await call()
                return time.perf_counter() - start

            async def series() -> tuple[list[float], list[float], list[float]]:
                floors, resolves, saves = [], [], []
                session = await store.load("generate-content", ids[0])
                session.state["contents"] = [{"role": "user", "parts": [{"text": _text(rng, 4_000)}]}]
                for _ in range(runs):
                    session_id = rng.choice(ids)
                    floors.append(floor(session_id))
                    resolves.append(await timed(partial(store.resolve, "generate-content", session_id[:8])))
                    saves.append(await timed(partial(store.save, session)))
                return floors, resolves, saves

            floors, resolves, saves = anyio.run(series)
        store.close()
    name = f"postgres store ({count} sessions)"
    outcome.figures += [
        Figure(f"{name}: resolve short id", "s", resolves),
        Figure(f"{name}: save 4 KB session", "s", saves),
        Figure(f"{name}: floor (bare SELECT of one record)", "s", floors),
    ]
    resolve_ms = spread([t * 1000 for t in resolves])[1]
    outcome.ratio(f"postgres: resolve ms ({count} sessions)", resolve_ms, "< 20 ms", resolve_ms < 20)
    outcome.ratio("postgres: resolve / bare SELECT", spread(resolves)[1] / spread(floors)[1], "informational", True)
    outcome.ratio("postgres: save ms", spread([t * 1000 for t in saves])[1], "informational", True)
    outcome.ratio("postgres: save / bare SELECT", spread(saves)[1] / spread(floors)[1], "informational", True)


def _load_rows(store: PostgresSessionStore, url: str, count: int, rng: random.Random) -> list[str]:
    """`count` sessions in the store's table, in its own format, by COPY (a save each would take minutes)."""
    import psycopg

    anyio.run(store.list_sessions, "generate-content")  # creates the schema
    ids: list[str] = []
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with psycopg.connect(url, autocommit=True) as connection, connection.cursor() as cursor:
        columns = "backend, session_id, format, updated_at, header, document"
        with cursor.copy(f"COPY {TABLE} ({columns}) FROM STDIN") as copy:
            for n in range(count):
                session = _random_session(rng, updated_at=start + timedelta(seconds=n))
                session.state["contents"] = [{"role": "user", "parts": [{"text": _text(rng, 400)}]}]
                document = serialize(session)
                copy.write_row(
                    ("generate-content", session.session_id, 1, session.updated_at, header_text(document), document)
                )
                ids.append(session.session_id)
    return ids
