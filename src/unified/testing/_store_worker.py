"""A store in a process of its own, for `unified.testing._store_conformance.StoreProcessConformance`.

The first line on stdin is a base64 pickle of (store factory, action, backend, session id), written
by the test process itself (never argv, which every user can read). It prints "ready", waits for
"go" on stdin, then:
- "lease": takes the lease, prints "held" (or "in use") and keeps it until stdin closes;
- "save-loop": saves versions 1, 2, ... of a large state, printing "saving N" before each, until killed.
"""

from __future__ import annotations

import base64
import pickle
import sys
from collections.abc import Callable

import anyio

from unified.errors import SessionInUse
from unified.sessions import SessionStore, StoredSession

__all__ = ["StoreFactory", "blob_of", "main"]

StoreFactory = Callable[[], SessionStore]
_BLOB_CHARS = 2_000_000


def blob_of(version: int) -> str:
    """The large state value of one version in the mid-save case (each version differs throughout)."""
    return (f"{version:08d}" * (_BLOB_CHARS // 8 + 1))[:_BLOB_CHARS]


def _say(line: str) -> None:
    print(line, flush=True)


async def _lease(factory: StoreFactory, backend: str, session_id: str) -> None:
    store = factory()
    try:
        async with store.lease(backend, session_id):
            _say("held")
            await anyio.to_thread.run_sync(sys.stdin.read)  # until the test closes stdin
    except SessionInUse:
        _say("in use")
        await anyio.to_thread.run_sync(sys.stdin.read)


async def _save_loop(factory: StoreFactory, backend: str, session_id: str) -> None:
    store = factory()
    session = StoredSession.new(backend, model="gemini-test", cwd="/work/project", first_prompt="big")
    session.session_id = session_id
    version = 0
    while True:
        version += 1
        session.state = {"version": version, "blob": blob_of(version)}
        _say(f"saving {version}")
        await store.save(session)


def main() -> None:
    factory, action, backend, session_id = pickle.loads(base64.b64decode(sys.stdin.readline()))
    _say("ready")
    if sys.stdin.readline().strip() != "go":
        return
    run = {"lease": _lease, "save-loop": _save_loop}[action]
    anyio.run(run, factory, backend, session_id)


if __name__ == "__main__":
    main()
